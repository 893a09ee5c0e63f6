// A user's Python reward function as verl takes it (custom_reward_function.path / .name): the function
// compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs) returns a number
// or a dict whose "score" is the reward and whose other numeric keys are extra results (metrics). In
// batch mode it takes lists (data_sources, solution_strs, ground_truths, extra_infos), as verl's batch
// reward manager passes them, and returns one result per item.
// It runs on ExternalReward's pool of persistent `python3` workers (timeouts, restarts and failure
// accounting as for external commands) with a driver embedded in the binary (python_driver.py). A
// Python exception scores the sample 0, counts as a failure, and its traceback's last lines are shown
// once. python3 missing from PATH, or a path that is not a file, is an error at construction.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "reward/rewards.h"

namespace grpo {

class ExternalReward;

struct PythonRewardOptions {
  std::string path;                      // the .py file
  std::string function = "compute_score";
  std::string kwargs_json = "{}";        // reward_kwargs as a JSON object
  bool batch = false;
  int64_t workers = 2;
  double timeout_s = 30;                 // per call (a whole share of the batch in batch mode)
};

std::unique_ptr<RewardFunction> make_python_reward(const PythonRewardOptions& options);

// The same pool for Python tools (tools/python_tool.h): `workers` python3 processes running FUNCTION of the
// file PATH on {"tool_arguments": ...} requests (ExternalReward::request, Protocol::PythonTool). Errors as
// make_python_reward's, naming `what` (the tool config and tool).
std::unique_ptr<ExternalReward> make_python_tool_pool(const std::string& path, const std::string& function,
                                                      int64_t workers, double timeout_s, const std::string& what);

// The driver's source (for tests and `grpo reward --help`).
const char* python_reward_driver();

}  // namespace grpo
