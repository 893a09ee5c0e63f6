// Tests of the built-in rewards (answer extraction, numeric equivalence, exact, format regex, weighted
// sum) and of external reward workers that answer, crash, sleep past the timeout or reply garbage.
#include <gtest/gtest.h>

#include <chrono>

#include "core/error.h"
#include "core/rng.h"
#include "reward/external_reward.h"
#include "reward/math_answer.h"
#include "reward/rewards.h"
#include "temp_dir.h"

using namespace grpo;

TEST(MathReward, ExtractsBoxedOrLastNumber) {
  EXPECT_EQ(last_boxed("so \\boxed{3/4}."), "3/4");
  EXPECT_EQ(last_boxed("\\boxed{1} then \\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
  EXPECT_EQ(last_boxed("\\boxed{2"), std::nullopt);
  EXPECT_EQ(last_number("I got 12 apples and 1,000 pears"), "1,000");
  EXPECT_EQ(last_number("x = -7"), "-7");
  EXPECT_EQ(last_number("5-3=2"), "2");
  EXPECT_EQ(last_number("10-3"), "3");  // subtraction, not a negative number
  EXPECT_EQ(last_number("ratio 3/4"), "3/4");
  EXPECT_EQ(last_number("pi is 3.14."), "3.14");
  EXPECT_EQ(last_number("no digits here"), std::nullopt);
  EXPECT_EQ(extract_answer("12+1=13. \\boxed{13}"), "13");
}

TEST(MathReward, NumericEquivalence) {
  struct Case {
    const char* response;
    const char* answer;
    float expected;
  };
  for (const Case& c : std::vector<Case>{
           {"\\boxed{3/4}", "0.75", 1},
           {"\\boxed{\\frac{3}{4}}", "0.75", 1},
           {"\\boxed{\\dfrac{3}{4}}", "3/4", 1},
           {"\\boxed{0.75}", "3/4", 1},
           {"The total is 1,000.", "1000", 1},
           {"\\boxed{1,000}", "1000", 1},
           {"\\boxed{1{,}000}", "1000", 1},
           {"\\boxed{-5}", "-5", 1},
           {"the answer is -5", "-5", 1},
           {"the answer is 5", "-5", 0},
           {"\\boxed{-5}", "5", 0},
           {"\\boxed{2.0}", "2", 1},
           {"\\boxed{$42$}", "42", 1},
           {"\\boxed{x = 42}", "42", 1},
           {"First 3, then 4, finally 7", "7", 1},
           {"First 3, then 7, finally 4", "7", 0},
           {"no number at all", "7", 0},
           {"", "7", 0},
           {"\\boxed{}", "7", 0},
           {"\\boxed{1/0}", "7", 0},
           {"\\boxed{0.3333}", "1/3", 0},
           {"\\boxed{12,34}", "1234", 0},  // not a thousands separator
           {"\\boxed{Paris}", "paris", 0},
           {"\\boxed{Paris}", "Paris", 1},
       }) {
    EXPECT_EQ(math_reward(c.response, c.answer), c.expected) << c.response << " vs " << c.answer;
  }
  EXPECT_EQ(parse_number("1,234,567"), 1234567.0);
  EXPECT_EQ(parse_number("-3/4"), -0.75);
  EXPECT_EQ(parse_number("3/-4"), std::nullopt);
  EXPECT_EQ(parse_number("abc"), std::nullopt);
}

TEST(ExactAndFormatRewards, TextAndRegex) {
  EXPECT_EQ(exact_reward("\\boxed{ 42 }", "42"), 1.0f);
  EXPECT_EQ(exact_reward("  yes \n", "yes"), 1.0f);
  EXPECT_EQ(exact_reward("\\boxed{42.0}", "42"), 0.0f);  // text, not value
  auto format = make_format_reward("\\\\boxed\\{-?\\d+\\}$");
  std::vector<RewardInput> batch = {{"a", "", "1+1=2. \\boxed{2}", "2"}, {"b", "", "2", "2"}};
  std::vector<float> out(2);
  format->score(batch, out);
  EXPECT_EQ(out, (std::vector<float>{1.0f, 0.0f}));
  try {
    make_format_reward("(unclosed");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(unclosed"), std::string::npos) << e.what();
  }
}

TEST(WeightedRewards, SumWithWeightsAndKeepParts) {
  std::vector<RewardFunctionConfig> cfg(2);
  cfg[0].name = RewardKind::Math;
  cfg[0].weight = 1.0;
  cfg[1].name = RewardKind::Format;
  cfg[1].weight = 0.5;
  cfg[1].pattern = "\\\\boxed\\{";
  auto rewards = make_rewards(cfg);
  std::vector<RewardInput> batch = {
      {"1", "", "\\boxed{4}", "4"}, {"2", "", "4", "4"}, {"3", "", "\\boxed{5}", "4"}, {"4", "", "five", "4"}};
  RewardScores s = score_batch(rewards, batch);
  EXPECT_EQ(s.total, (std::vector<float>{1.5f, 1.0f, 0.5f, 0.0f}));
  EXPECT_EQ(s.names, (std::vector<std::string>{"math", "format"}));
  EXPECT_EQ(s.per_function[1], (std::vector<float>{1, 0, 1, 0}));
  cfg.push_back(cfg[1]);
  EXPECT_EQ(score_batch(rewards = make_rewards(cfg), batch).names,
            (std::vector<std::string>{"math", "format", "format_2"}));
}

TEST(MathReward, ArbitraryTextNeverBreaksIt) {
  Rng rng(9);
  const std::string alphabet = "0123456789-+/.,{}\\boxedfrac$= x";
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const size_t n = rng.below(24);
    for (size_t j = 0; j < n; ++j) text += alphabet[rng.below(alphabet.size())];
    if (i % 3 == 0) text = "\\boxed{" + text;
    const float r = math_reward(text, i % 2 ? "12" : "-3/4");
    EXPECT_TRUE(r == 0.0f || r == 1.0f) << text;
    exact_reward(text, text);
  }
}

namespace {

std::vector<RewardInput> requests(const std::vector<std::string>& responses) {
  std::vector<RewardInput> v;
  for (size_t i = 0; i < responses.size(); ++i) v.push_back({std::to_string(i), "p", responses[i], "a"});
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// A worker script in /bin/sh: one reply per request line, with misbehaviour triggered by the response.
const char* kWorker =
    "while IFS= read -r line; do\n"
    "  case \"$line\" in\n"
    "    *boom*) exit 3 ;;\n"
    "    *slow*) sleep 30 ;;\n"
    "    *garbage*) echo 'not json' ;;\n"
    "    *nan*) echo '{\"reward\": \"high\"}' ;;\n"
    "    *huge*) echo '{\"reward\": 1e308}' ;;\n"
    "    *overflow*) echo '{\"reward\": 1e999}' ;;\n"
    "    *source*) case \"$line\" in *'\"data_source\":\"gsm8k\",\"extra_info\":{\"index\":3}'*) echo 1 ;; *) echo 0 ;; esac ;;\n"
    "    *bare*) echo 0.5 ;;\n"
    "    *good*) echo '{\"reward\": 1.0}' ;;\n"
    "    *) echo '{\"reward\": 0.25}' ;;\n"
    "  esac\n"
    "done\n";

TEST(ExternalReward, AnswersAreScored) {
  test::TempDir dir;
  const std::string script = dir.write("worker.sh", kWorker);
  ExternalReward r("/bin/sh " + script, 3, 5.0);
  auto batch = requests({"good", "meh", "bare", "good", "x", "good", "y"});
  std::vector<float> out(batch.size());
  EXPECT_EQ(r.score(batch, out), 0);
  EXPECT_EQ(out, (std::vector<float>{1.0f, 0.25f, 0.5f, 1.0f, 0.25f, 1.0f, 0.25f}));
  EXPECT_EQ(r.stats().calls, 7);
  EXPECT_EQ(r.stats().crashes + r.stats().timeouts + r.stats().invalid, 0);
  r.score(batch, out);  // workers are reused
  EXPECT_EQ(r.stats().calls, 14);
}

TEST(ExternalReward, CrashesTimeoutsAndGarbageScoreZeroAndAreCounted) {
  test::TempDir dir;
  const std::string script = dir.write("worker.sh", kWorker);
  ExternalReward r("/bin/sh " + script, 2, 0.5);
  auto batch = requests({"good", "boom", "good", "slow", "garbage", "nan", "good", "boom", "good"});
  std::vector<float> out(batch.size(), -1.0f);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(r.score(batch, out), 5) << "failures: two crashes, a timeout, two invalid replies";
  EXPECT_LT(seconds_since(t0), 10.0) << "a sleeping worker must not hold the batch";
  EXPECT_EQ(out, (std::vector<float>{1, 0, 1, 0, 0, 0, 1, 0, 1}));
  const auto s = r.stats();
  EXPECT_EQ(s.calls, 9);
  EXPECT_EQ(s.crashes, 2);
  EXPECT_EQ(s.timeouts, 1);
  EXPECT_EQ(s.invalid, 2);
}

TEST(ExternalReward, CommandThatCannotRunScoresZero) {
  ExternalReward r("exec /nonexistent/reward-command", 1, 2.0);
  auto batch = requests({"a", "b"});
  std::vector<float> out(2, -1.0f);
  EXPECT_EQ(r.score(batch, out), 2);
  EXPECT_EQ(out, (std::vector<float>{0, 0}));
  EXPECT_EQ(r.stats().crashes, 2);
  EXPECT_NE(r.last_failure().find("exec /nonexistent/reward-command"), std::string::npos) << r.last_failure();
  EXPECT_NE(r.last_failure().find("command not found"), std::string::npos) << r.last_failure();
  EXPECT_THROW(ExternalReward("", 1, 1.0), Error);
  EXPECT_THROW(ExternalReward("cat", 0, 1.0), Error);
  EXPECT_THROW(ExternalReward("cat", 1, 0.0), Error);
}

// Values no float sum can hold (1e308, or a JSON number beyond double) are refused at the reward, named,
// and counted; verl's data_source and extra_info reach the command.
TEST(ExternalReward, OutOfRangeRepliesAreFailuresAndVerlFieldsArePassed) {
  test::TempDir dir;
  const std::string script = dir.write("worker.sh", kWorker);
  ExternalReward r("/bin/sh " + script, 1, 5.0);
  auto batch = requests({"overflow", "huge", "good", "source", "source"});
  batch[3].data_source = "gsm8k";
  batch[3].extra_info = {{"index", 3}};
  std::vector<float> out(batch.size(), -1.0f);
  EXPECT_EQ(r.score(batch, out), 2);
  EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 1, 0}));
  EXPECT_EQ(r.stats().invalid, 2);
  EXPECT_NE(r.last_failure().find("out of range"), std::string::npos) << r.last_failure();
}

// A step whose failures exceed reward.max_failure_fraction stops the run with an error naming the
// function and its last failure; at or below the fraction the step goes on.
TEST(WeightedRewards, FailuresBeyondTheFractionStopTheRun) {
  std::vector<RewardFunctionConfig> cfg(2);
  cfg[1].name = RewardKind::External;
  cfg[1].command = "exec /nonexistent/reward-command";
  cfg[1].workers = 1;
  auto rewards = make_rewards(cfg);
  const auto batch = requests({"a", "b", "c", "d"});
  RewardScores s = score_batch(rewards, batch);
  EXPECT_EQ(s.failures, (std::vector<int64_t>{0, 4}));
  std::string e;
  try {
    check_reward_failures(rewards, s.names, s.failures, 4, 0.5, "step 3");
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("[reward] external: failed on 4 of 4 samples in step 3"), std::string::npos) << e;
  EXPECT_NE(e.find("reward.max_failure_fraction = 0.5"), std::string::npos) << e;
  EXPECT_NE(e.find("command not found"), std::string::npos) << e;
  EXPECT_NO_THROW(check_reward_failures(rewards, s.names, {0, 2}, 4, 0.5, "step 3"));
  EXPECT_THROW(check_reward_failures(rewards, s.names, {0, 1}, 4, 0.0, "step 3"), Error);
}
