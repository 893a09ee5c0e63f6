// Python tools on the reward worker pool (see python_tool.h). The pool is made at the first call, with
// that call's timeout; each call takes a free worker for its whole exchange.
#include "tools/python_tool.h"

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "reward/external_reward.h"
#include "reward/python_reward.h"

namespace grpo::tools {

namespace {

class PythonTool : public Tool {
 public:
  PythonTool(std::string name, std::string path, std::string function, int64_t workers, std::string where)
      : name_(std::move(name)), path_(std::move(path)), function_(std::move(function)), workers_(workers),
        where_(std::move(where)) {}

  ToolResult run(const nlohmann::json& arguments, const ToolLimits& limits) override {
    const size_t worker = take_worker(limits.timeout_s);
    const nlohmann::json request = {{"tool_arguments", arguments}, {"max_chars", limits.max_output_bytes}};
    ExternalReward::Io io = ExternalReward::Io::Ok;
    const auto reply = pool_->request(
        worker, request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", name_, &io);
    give_back(worker);
    if (!reply) {
      if (io == ExternalReward::Io::Timeout)
        return tool_error(ToolFailure::Timeout, cat(name_, " timed out after ", limits.timeout_s, " s"));
      return tool_error(ToolFailure::Crashed, cat(name_, ": the Python worker died"));
    }
    const auto j = nlohmann::json::parse(*reply, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("text") && j["text"].is_string())
      return ToolResult{j["text"].get<std::string>(), ToolFailure::None, 0.0};
    if (j.is_object() && j.contains("too_long"))
      return tool_error(ToolFailure::OutputTooLong,
                        cat(name_, " returned ", j["too_long"].dump(), " characters, more than ", limits.max_output_bytes));
    if (j.is_object() && j.contains("error") && j["error"].is_string()) {
      const std::string error = j["error"].get<std::string>();
      const size_t end = error.find_last_not_of('\n');
      const size_t begin = end == std::string::npos ? std::string::npos : error.rfind('\n', end);
      return tool_error(ToolFailure::ToolError, error.substr(begin == std::string::npos ? 0 : begin + 1));
    }
    return tool_error(ToolFailure::Crashed, cat(name_, ": the Python worker sent an invalid reply"));
  }

 private:
  size_t take_worker(double timeout_s) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!pool_) {
      pool_ = make_python_tool_pool(path_, function_, workers_, timeout_s, where_);
      for (size_t i = pool_->workers(); i-- > 0;) free_.push_back(i);
    }
    freed_.wait(lock, [&] { return !free_.empty(); });
    const size_t w = free_.back();
    free_.pop_back();
    return w;
  }
  void give_back(size_t worker) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(worker);
    }
    freed_.notify_one();
  }

  std::string name_, path_, function_;
  int64_t workers_;
  std::string where_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<size_t> free_;
  std::unique_ptr<ExternalReward> pool_;
};

}  // namespace

std::shared_ptr<Tool> make_python_tool(const std::string& name, const std::string& path, const std::string& function,
                                       int64_t workers, const std::string& where) {
  std::error_code ec;
  GRPO_CHECK(std::filesystem::is_regular_file(path, ec), where, ": config.path: ", path,
             " is not a file (expected a Python file defining ", function, ")");
  GRPO_CHECK(workers >= 1 && workers <= kMaxRewardWorkers, where, ": config.workers must be in [1, ",
             kMaxRewardWorkers, "], got ", workers);
  return std::make_shared<PythonTool>(name, path, function, workers, where);
}

}  // namespace grpo::tools
