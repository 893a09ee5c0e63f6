// Python rewards on the external worker pool (see python_reward.h).
#include "reward/python_reward.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "reward/external_reward.h"

namespace grpo {

namespace {

const char kDriver[] =
#include "reward/python_driver.inc"
    ;

// A word for /bin/sh: single-quoted, with ' written as '\''.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t b = 0; b <= dirs.size();) {
    size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    const std::string dir = e > b ? dirs.substr(b, e - b) : ".";
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    b = e + 1;
  }
  return false;
}

}  // namespace

const char* python_reward_driver() { return kDriver; }

std::unique_ptr<RewardFunction> make_python_reward(const PythonRewardOptions& o) {
  GRPO_CHECK(!o.path.empty(), "[reward] custom_reward_function.path is empty");
  std::error_code ec;
  GRPO_CHECK(std::filesystem::is_regular_file(o.path, ec), "[reward] custom_reward_function.path: ", o.path,
             " is not a file (expected a Python file defining ", o.function, ")");
  GRPO_CHECK(!o.function.empty(), "[reward] custom_reward_function.name is empty");
  const auto kwargs = nlohmann::json::parse(o.kwargs_json, nullptr, false);
  GRPO_CHECK(kwargs.is_object(), "[reward] reward_kwargs must be a mapping of keyword arguments, got ",
             o.kwargs_json);
  GRPO_CHECK(on_path("python3"), "[reward] custom_reward_function ", o.path,
             ": python3 is not on PATH; install Python 3 (Debian: apt-get install python3) to run Python rewards");
  const std::string absolute = std::filesystem::absolute(o.path).string();
  const std::string command = cat("exec python3 -u -c ", shell_quote(kDriver), " ", shell_quote(absolute), " ",
                                  shell_quote(o.function), " ", shell_quote(kwargs.dump()));
  return std::make_unique<ExternalReward>(
      command, o.workers, o.timeout_s,
      o.batch ? ExternalReward::Protocol::PythonBatch : ExternalReward::Protocol::Python, "python",
      cat(o.path, ":", o.function));
}

std::unique_ptr<ExternalReward> make_python_tool_pool(const std::string& path, const std::string& function,
                                                      int64_t workers, double timeout_s, const std::string& what) {
  std::error_code ec;
  GRPO_CHECK(std::filesystem::is_regular_file(path, ec), what, ": config.path: ", path,
             " is not a file (expected a Python file defining ", function, ")");
  GRPO_CHECK(!function.empty(), what, ": config.function is empty");
  GRPO_CHECK(on_path("python3"), what, ": python3 is not on PATH; install Python 3 (Debian: apt-get install python3) ",
             "to run Python tools");
  const std::string absolute = std::filesystem::absolute(path).string();
  const std::string command = cat("exec python3 -u -c ", shell_quote(kDriver), " ", shell_quote(absolute), " ",
                                  shell_quote(function), " '{}'");
  return std::make_unique<ExternalReward>(command, workers, timeout_s, ExternalReward::Protocol::PythonTool, "python",
                                          cat(path, ":", function));
}

}  // namespace grpo
