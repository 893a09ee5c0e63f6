// Python reward functions with verl's signature on the worker pool: numbers, dicts (extra keys as
// extras), exceptions (failures, traceback shown once), a function that hangs past the timeout, one
// that prints to stdout, reward_kwargs, batch mode, and the errors for a missing file or python3.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>

#include "core/error.h"
#include "reward/python_reward.h"
#include "temp_dir.h"

using namespace grpo;

namespace {

const char* kRewardPy = R"(import time
def compute_score(data_source, solution_str, ground_truth, extra_info=None, bonus=0.0):
    print("garbage on stdout that must not break the protocol")
    if solution_str == "raise":
        raise ValueError("bad sample " + str(extra_info))
    if solution_str == "hang":
        time.sleep(30)
    if solution_str == "dict":
        return {"score": -1.0, "acc": True, "pred": "text is not a metric", "len": 4}
    if solution_str == "nan":
        return float("nan")
    if data_source == "kw":
        return bonus
    if isinstance(ground_truth, dict):
        return float(len(ground_truth["target"]))
    return 1.0 if solution_str.strip() == ground_truth else 0.0

def batch_score(data_sources, solution_strs, ground_truths, extra_infos, scale=1.0):
    return [{"score": scale * (s == g), "n": len(data_sources)} for s, g in zip(solution_strs, ground_truths)]
)";

std::vector<RewardInput> inputs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<RewardInput> v;
  for (size_t i = 0; i < pairs.size(); ++i)
    v.push_back({std::to_string(i), "prompt", pairs[i].first, pairs[i].second, "src", {{"index", i}}});
  return v;
}

}  // namespace

TEST(PythonReward, NumbersDictsExceptionsAndTimeouts) {
  test::TempDir dir;
  PythonRewardOptions o;
  o.path = dir.write("my_reward.py", kRewardPy);
  o.workers = 2;
  o.timeout_s = 3;
  auto f = make_python_reward(o);
  EXPECT_EQ(f->name(), "python");
  auto batch = inputs({{"42", "42"}, {"41", "42"}, {"dict", "x"}, {"raise", "x"}, {"raise", "y"}, {"hang", "x"},
                       {"nan", "x"}, {" 7 ", "7"}});
  batch.push_back({"8", "", "t", R"({"target": ["a", "b", "c"]})", "src", nullptr});
  std::vector<float> out(batch.size(), -5.0f);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f->score(batch, out), 4) << "two exceptions, a timeout, a NaN";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  EXPECT_EQ(out, (std::vector<float>{1, 0, -1, 0, 0, 0, 0, 1, 3}));
  ASSERT_EQ(f->extras().size(), 2u);  // acc and len; the text "pred" is not a metric
  for (const auto& e : f->extras()) {
    EXPECT_TRUE(e.key == "acc" || e.key == "len") << e.key;
    EXPECT_EQ(e.values[2], e.key == "acc" ? 1.0f : 4.0f);
    EXPECT_TRUE(std::isnan(e.values[0]));
  }
  EXPECT_NE(f->last_failure().find("my_reward.py:compute_score"), std::string::npos) << f->last_failure();
  // The pool survives: the hung worker was replaced.
  auto again = inputs({{"1", "1"}, {"2", "3"}});
  std::vector<float> out2(2);
  EXPECT_EQ(f->score(again, out2), 0);
  EXPECT_EQ(out2, (std::vector<float>{1, 0}));
}

TEST(PythonReward, ExceptionTracebackIsShownOnceAndNamesTheError) {
  test::TempDir dir;
  PythonRewardOptions o;
  o.path = dir.write("r.py", kRewardPy);
  o.workers = 1;
  auto f = make_python_reward(o);
  auto batch = inputs({{"raise", "x"}, {"raise", "x"}, {"raise", "x"}});
  std::vector<float> out(batch.size());
  testing::internal::CaptureStderr();
  EXPECT_EQ(f->score(batch, out), 3);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(f->last_failure().find("ValueError: bad sample"), std::string::npos) << f->last_failure();
  const size_t first = err.find("Traceback");
  ASSERT_NE(first, std::string::npos) << err;
  // The three tracebacks differ only in their message ({'index': 0}, 1, 2): shown once, with its last lines.
  EXPECT_EQ(err.find("Traceback", first + 1), std::string::npos) << err;
  EXPECT_NE(err.find("raise ValueError"), std::string::npos) << err;
  EXPECT_NE(err.find("error on request \"2\": ValueError: bad sample {'index': 2}"), std::string::npos) << err;
  EXPECT_NE(err.find("garbage on stdout"), std::string::npos) << "the function's prints go to stderr";
}

TEST(PythonReward, KwargsAndBatchMode) {
  test::TempDir dir;
  PythonRewardOptions o;
  o.path = dir.write("r.py", kRewardPy);
  o.kwargs_json = R"({"bonus": 0.25})";
  auto f = make_python_reward(o);
  auto batch = inputs({{"a", "b"}});
  batch[0].data_source = "kw";
  std::vector<float> out(1);
  EXPECT_EQ(f->score(batch, out), 0);
  EXPECT_EQ(out[0], 0.25f);

  o.function = "batch_score";
  o.kwargs_json = R"({"scale": 2.0})";
  o.batch = true;
  o.workers = 2;
  auto b = make_python_reward(o);
  auto many = inputs({{"1", "1"}, {"2", "3"}, {"4", "4"}, {"5", "5"}, {"x", "y"}});
  std::vector<float> scores(many.size());
  EXPECT_EQ(b->score(many, scores), 0);
  EXPECT_EQ(scores, (std::vector<float>{2, 0, 2, 2, 0}));
  ASSERT_EQ(b->extras().size(), 1u);
  EXPECT_EQ(b->extras()[0].key, "n");
  // Two workers split the batch 2 + 3.
  EXPECT_EQ(b->extras()[0].values[0], 2.0f);
  EXPECT_EQ(b->extras()[0].values[4], 3.0f);
}

TEST(PythonReward, BadSetUpIsAClearError) {
  test::TempDir dir;
  PythonRewardOptions o;
  o.path = dir.path() + "/missing.py";
  EXPECT_THROW(make_python_reward(o), Error);
  o.path = dir.write("r.py", kRewardPy);
  o.kwargs_json = "[1]";
  EXPECT_THROW(make_python_reward(o), Error);
  o.kwargs_json = "{}";
  // A function name the file lacks: every sample fails with the AttributeError.
  o.function = "nope";
  auto f = make_python_reward(o);
  auto batch = inputs({{"a", "a"}});
  std::vector<float> out(1);
  EXPECT_EQ(f->score(batch, out), 1);
  EXPECT_NE(f->last_failure().find("nope"), std::string::npos) << f->last_failure();
  // No python3 on PATH.
  const std::string path = getenv("PATH");
  setenv("PATH", dir.path().c_str(), 1);
  o.function = "compute_score";
  std::string message;
  try {
    make_python_reward(o);
  } catch (const Error& e) {
    message = e.what();
  }
  setenv("PATH", path.c_str(), 1);
  EXPECT_NE(message.find("python3 is not on PATH"), std::string::npos) << message;
}
