// Runs an assistant turn's tool calls: parses its hermes <tool_call> blocks, checks each call against its
// tool's schema, runs the good ones concurrently on worker threads with a timeout and an output cap, and
// truncates each result as verl does (max_tool_response_length characters, tool_response_truncate_side).
// A malformed call, an unknown tool, bad arguments, a hang, a crash or a flood each give a ToolResult
// with its failure kind and verl's kind of error text: nothing a model writes or a tool does stops the run.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/names.h"
#include "tools/hermes.h"
#include "tools/tool_call.h"
#include "tools/tool_set.h"

namespace grpo::tools {

// Which part of a long tool result is kept (verl's multi_turn.tool_response_truncate_side).
enum class TruncateSide { Left, Middle, Right };
inline constexpr auto kTruncateSideNames = name_table<TruncateSide>(
    {{TruncateSide::Left, "left"}, {TruncateSide::Middle, "middle"}, {TruncateSide::Right, "right"}});

struct ToolRunnerOptions {
  int threads = 4;                                     // tools run concurrently on this many workers
  double timeout_s = 30;                               // a call running longer is cut off: failure Timeout
  int64_t max_tool_response_length = 256;              // verl's key (characters, as verl counts them)
  TruncateSide tool_response_truncate_side = TruncateSide::Middle;
  int64_t max_tool_output_bytes = 1 << 20;             // a tool writing more is cut off: OutputTooLong
};

// verl's truncation of a tool's text to max_length characters (UTF-8 code points): "left" keeps the
// start and appends "...(truncated)", "right" keeps the end after "(truncated)...", "middle" keeps half of
// each end around "...(truncated)...". A text within the length is returned as it is.
// `text` is made valid UTF-8 first (valid_utf8): what a model or a tool writes may be any bytes, and the
// tool turn is tokenized as text.
std::string truncate_tool_response(std::string_view text, int64_t max_length, TruncateSide side);
// `s` with every byte that starts no valid UTF-8 character replaced by U+FFFD (as a tokenizer's decode does).
std::string valid_utf8(std::string_view s);

class ToolRunner {
 public:
  ToolRunner(const ToolSet& tools, const ToolRunnerOptions& options);
  ~ToolRunner();  // waits for the calls in flight
  ToolRunner(const ToolRunner&) = delete;
  ToolRunner& operator=(const ToolRunner&) = delete;

  // Parses the turn's tool calls and runs them concurrently on the workers; the future holds one
  // ToolResult per <tool_call> block, in order (a malformed block gives a result with its failure and
  // verl's kind of error text, never an exception). Thread-safe; never blocks the caller.
  std::future<std::vector<ToolResult>> run_turn(std::string assistant_text);
  // One call (already parsed), run on the caller's thread, with the runner's checks, limits and truncation.
  ToolResult run_call(const ToolCall& call) const;

  const ToolSet& tools() const { return tools_; }
  const ToolRunnerOptions& options() const { return options_; }

 private:
  void work();

  ToolSet tools_;
  ToolRunnerOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace grpo::tools
