// verl's built-in rules (reward/verl/) against verl's own functions: tests/reward/data/verl_cases.jsonl
// holds 7,179 responses (hand-picked edge cases, random combinations of answer fragments, random strings
// of answer-like characters, geometry answers in many equivalent forms) with the score
// (and math_dapo's acc) that verl's default_compute_score gave them, run from verl-project/verl's
// verl/utils/reward_score/ and hiyouga/MathRuler with sympy 1.11 and pylatexenc 2.10; the math_dapo rows
// as verl 0.9 (1dda039) scores them, with its \boxed{} fallback (two rows changed from -1 to 1). Every
// case must match exactly. The data_source dispatch and its errors are checked too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "reward/rewards.h"
#include "reward/verl/verl_reward.h"
#include "test_util.h"

using namespace grpo;

namespace {

std::string truth_text(const nlohmann::json& gt) { return gt.is_string() ? gt.get<std::string>() : gt.dump(); }

}  // namespace

TEST(VerlRules, EveryCaseScoresAsVerl) {
  const auto cases = test::read_jsonl(std::string(GRPO_SOURCE_DIR) + "/tests/reward/data/verl_cases.jsonl");
  ASSERT_GT(cases.size(), 3000u);
  std::map<std::string, int> checked, wrong;
  int shown = 0;
  for (const auto& c : cases) {
    const std::string ds = c["data_source"], response = c["response"];
    const auto r = verl::default_compute_score(ds, response, truth_text(c["ground_truth"]));
    bool ok = r.score == c["score"].get<double>();
    if (c.contains("acc")) {
      ASSERT_EQ(r.extra.size(), 1u);
      EXPECT_EQ(r.extra[0].first, "acc");
      ok = ok && r.extra[0].second == (c["acc"].get<bool>() ? 1.0 : 0.0);
    }
    ++checked[ds];
    if (!ok) {
      ++wrong[ds];
      if (shown++ < 20)
        ADD_FAILURE() << ds << ": response " << nlohmann::json(response).dump() << " truth " << c["ground_truth"].dump()
                      << ": verl " << c["score"] << ", here " << r.score;
    }
  }
  for (const auto& [ds, n] : checked) EXPECT_EQ(wrong[ds], 0) << ds << ": " << wrong[ds] << " of " << n << " differ";
  for (const char* ds : {"openai/gsm8k", "lighteval/MATH", "math_dapo", "hiyouga/geometry3k", "searchR1_nq"})
    EXPECT_GT(checked[ds], 100) << ds;
}

TEST(VerlRules, QuirksKeptAsVerlHasThem) {
  // GSM8K: "#### " with its space, on the last 300 characters, compared as a string.
  EXPECT_EQ(verl::gsm8k_score("The answer is 72.", "72"), 0.0);
  EXPECT_EQ(verl::gsm8k_score("#### 72", "72"), 1.0);
  EXPECT_EQ(verl::gsm8k_score("####72", "72"), 0.0);
  EXPECT_EQ(verl::gsm8k_score("#### 72.0", "72"), 0.0);
  EXPECT_EQ(verl::gsm8k_score("#### 72" + std::string(294, 'x'), "72"), 0.0) << "the marker's first # is cut";
  EXPECT_EQ(verl::gsm8k_score("#### 72" + std::string(293, 'x'), "72"), 1.0);
  // 300 characters, not bytes: 293 two-byte characters keep the marker.
  std::string accents;
  for (int i = 0; i < 293; ++i) accents += "\xC3\xA9";
  EXPECT_EQ(verl::gsm8k_score("#### 72" + accents, "72"), 1.0);
  // DAPO: -1 / +1 and acc.
  const auto wrong = verl::dapo_score("no answer line", "5"), right = verl::dapo_score("Answer: $5$", "5");
  EXPECT_EQ(wrong.score, -1.0);
  EXPECT_EQ(wrong.extra[0].second, 0.0);
  EXPECT_EQ(right.score, 1.0);
  EXPECT_EQ(right.extra[0].second, 1.0);
  // DAPO without an "Answer:" line (verl 0.9): the last \boxed{} of the last 100 characters, compared with the
  // ground truth as it is (no normalisation), the innermost of nested boxes, an unclosed box none.
  const auto boxed = verl::dapo_score("So \\boxed{5}", "5");
  EXPECT_EQ(boxed.score, 1.0);
  EXPECT_EQ(boxed.extra[0].second, 1.0);
  EXPECT_EQ(verl::dapo_score("Answer: 4\n\\boxed{5}", "5").score, -1.0) << "an Answer: line wins over a box";
  EXPECT_EQ(verl::dapo_score("Answer: [INVALID]\n\\boxed{5}", "5").score, 1.0) << "a line that reads [INVALID]";
  EXPECT_EQ(verl::dapo_score("\\boxed{5}" + std::string(91, 'x'), "5").score, 1.0);
  EXPECT_EQ(verl::dapo_score("\\boxed{5}" + std::string(92, 'x'), "5").score, -1.0) << "the box's \\ is cut";
  EXPECT_EQ(verl::dapo_score("\\boxed{ 5}", "5").score, -1.0);
  EXPECT_EQ(verl::dapo_score("Answer:  5", "5").score, 1.0);
  EXPECT_EQ(verl::dapo_score("\\boxed{\\frac12}", "\\frac{1}{2}").score, -1.0);
  EXPECT_EQ(verl::dapo_score("\\boxed{\\boxed{5}}", "5").score, 1.0);
  EXPECT_EQ(verl::dapo_score("\\boxed{5", "5").score, -1.0);
  // MATH: string normalisation, not values.
  EXPECT_EQ(verl::math_score("\\boxed{\\dfrac12}", "\\frac{1}{2}"), 1.0);
  EXPECT_EQ(verl::math_score("\\boxed{0.50}", "\\frac{1}{2}"), 0.0);
  // geometry3k: 0.9 accuracy + 0.1 format.
  EXPECT_DOUBLE_EQ(verl::geo3k_score("<think>a</think> \\boxed{2\\sqrt{3}}", "2\\sqrt{3}"), 1.0);
  EXPECT_DOUBLE_EQ(verl::geo3k_score("\\boxed{\\sqrt{12}}", "2\\sqrt{3}"), 0.9);
  EXPECT_DOUBLE_EQ(verl::geo3k_score("<think>a</think> \\boxed{4}", "2\\sqrt{3}"), 0.1);
}

TEST(VerlRules, DispatchByDataSourceAndUnknownSourcesNamed) {
  EXPECT_TRUE(verl::has_rule("openai/gsm8k"));
  EXPECT_TRUE(verl::has_rule("aime2024"));
  EXPECT_TRUE(verl::has_rule("math"));
  EXPECT_FALSE(verl::has_rule("gsm8k"));
  EXPECT_NO_THROW(verl::check_verl_data_sources({"openai/gsm8k", "aime25"}, "train.jsonl"));
  try {
    verl::check_verl_data_sources({"openai/gsm8k", "my/source"}, "train.jsonl");
    FAIL() << "an unknown data_source must be refused";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("\"my/source\""), std::string::npos) << m;
    EXPECT_NE(m.find("openai/gsm8k"), std::string::npos) << m;
    EXPECT_NE(m.find("hiyouga/geometry3k"), std::string::npos) << m;
    EXPECT_NE(m.find("train.jsonl"), std::string::npos) << m;
  }
  // As a reward function: scores, metrics (acc), and failures for rows it cannot score.
  auto f = make_verl_reward();
  std::vector<RewardInput> batch = {
      {"1", "", "#### 72", "72", "openai/gsm8k"},
      {"2", "", "Answer: 3", "3", "math_dapo"},
      {"3", "", "x", "1", "nowhere"},
      {"4", "", "<answer>x</answer>", "not an object", "searchR1_nq"},
  };
  std::vector<float> out(batch.size(), -7.0f);
  EXPECT_EQ(f->score(batch, out), 2);
  EXPECT_EQ(out, (std::vector<float>{1, 1, 0, 0}));
  ASSERT_EQ(f->extras().size(), 1u);
  EXPECT_EQ(f->extras()[0].key, "acc");
  EXPECT_TRUE(std::isnan(f->extras()[0].values[0]));
  EXPECT_EQ(f->extras()[0].values[1], 1.0f);
  EXPECT_NE(f->last_failure().find("target"), std::string::npos) << f->last_failure();
}
