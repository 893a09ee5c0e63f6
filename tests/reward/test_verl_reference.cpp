// verl's built-in rules (reward/verl/) against shared/reference/verl_rewards/scored.jsonl: 2,000 verl
// dataset rows over 12 data sources (openai/gsm8k, the three MATH ones, math_dapo, math, aime2024, aime25,
// math_dapo_reasoning, searchR1_nq, _triviaqa, _hotpotqa), scored by verl 0.9's own default_compute_score
// (verl-project/verl at 1dda039). Every score must be equal; a failure names the first rows that differ
// (data_source, response, ground truth, both scores) and the count per data source.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "reward/verl/verl_reward.h"
#include "test_util.h"

using namespace grpo;

namespace {

const std::string kScored = std::string(GRPO_SHARED_DIR) + "/reference/verl_rewards/scored.jsonl";

// reward_model.ground_truth as the rules take it: a string as is, an object ({"target": ...}) as JSON.
std::string truth_argument(const nlohmann::json& gt) { return gt.is_string() ? gt.get<std::string>() : gt.dump(); }

}  // namespace

TEST(VerlReference, EveryScoredRowScoresAsVerl09) {
  const auto rows = test::read_jsonl(kScored);
  ASSERT_EQ(rows.size(), 2000u) << kScored;
  std::map<std::string, int> checked, wrong;
  int shown = 0;
  for (const auto& row : rows) {
    const std::string ds = row.at("data_source"), response = row.at("response");
    const nlohmann::json& gt = row.at("reward_model").at("ground_truth");
    const double expected = row.at("score").get<double>();
    const double got = verl::default_compute_score(ds, response, truth_argument(gt)).score;
    ++checked[ds];
    if (got == expected) continue;
    ++wrong[ds];
    if (shown++ < 20)
      ADD_FAILURE() << "index " << row.at("extra_info").at("index") << ", " << ds << ": response "
                    << nlohmann::json(response).dump() << ", ground truth " << gt.dump() << ": verl " << expected
                    << ", here " << got;
  }
  int total_wrong = 0;
  for (const auto& [ds, n] : checked) {
    EXPECT_EQ(wrong[ds], 0) << ds << ": " << wrong[ds] << " of " << n << " differ";
    total_wrong += wrong[ds];
  }
  EXPECT_EQ(total_wrong, 0) << total_wrong << " of " << rows.size() << " rows differ";
  EXPECT_EQ(checked.size(), 12u) << "data sources in " << kScored;
}
