// The tool runner (see tool_runner.h): a fixed set of worker threads over a queue of calls; each turn's
// results are collected in a shared state whose last finished call fulfils the turn's promise.
#include "tools/tool_runner.h"

#include <atomic>
#include <chrono>

#include "core/error.h"
#include "tools/tool_schema.h"

namespace grpo::tools {

namespace {

constexpr int kMaxRunnerThreads = 256;

// The byte offset of UTF-8 code point `n` of s (s.size() when it has fewer); continuation bytes
// (10xxxxxx) do not start a code point.
size_t code_point_offset(std::string_view s, int64_t n) {
  int64_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (seen == n) return i;
    ++seen;
  }
  return s.size();
}

// Bytes of the valid UTF-8 character at s[i] (0: none starts there).
size_t utf8_char_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return b(k) >= lo && b(k) <= hi; };
  const unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const bool second = c == 0xE0 ? cont(1, 0xA0) : c == 0xED ? cont(1, 0x80, 0x9F) : cont(1);
    return second && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const bool second = c == 0xF0 ? cont(1, 0x90) : c == 0xF4 ? cont(1, 0x80, 0x8F) : cont(1);
    return second && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

int64_t code_points(std::string_view s) {
  int64_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

struct TurnState {
  std::vector<ToolResult> results;
  std::atomic<size_t> left{0};
  std::promise<std::vector<ToolResult>> done;
  void finish_one() {
    if (--left == 0) done.set_value(std::move(results));
  }
};

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_char_at(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for a byte that starts no valid character
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string truncate_tool_response(std::string_view raw, int64_t max_length, TruncateSide side) {
  const std::string valid = valid_utf8(raw);
  const std::string_view text = valid;
  const int64_t n = code_points(text);
  if (n <= max_length) return std::string(text);
  if (side == TruncateSide::Left)
    return std::string(text.substr(0, code_point_offset(text, max_length))) + "...(truncated)";
  if (side == TruncateSide::Right)
    return "(truncated)..." + std::string(text.substr(code_point_offset(text, n - max_length)));
  const int64_t half = max_length / 2;
  return std::string(text.substr(0, code_point_offset(text, half))) + "...(truncated)..." +
         std::string(text.substr(code_point_offset(text, n - half)));
}

ToolRunner::ToolRunner(const ToolSet& tools, const ToolRunnerOptions& options) : tools_(tools), options_(options) {
  GRPO_CHECK(options.threads >= 1 && options.threads <= kMaxRunnerThreads, "[tools] threads must be in [1, ",
             kMaxRunnerThreads, "], got ", options.threads);
  GRPO_CHECK(options.timeout_s > 0, "[tools] the tool timeout must be > 0 seconds, got ", options.timeout_s);
  GRPO_CHECK(options.max_tool_response_length >= 1,
             "[tools] actor_rollout_ref.rollout.multi_turn.max_tool_response_length must be >= 1, got ",
             options.max_tool_response_length);
  GRPO_CHECK(options.max_tool_output_bytes >= 1, "[tools] the tool output cap must be >= 1 byte, got ",
             options.max_tool_output_bytes);
  for (int i = 0; i < options.threads; ++i) workers_.emplace_back([this] { work(); });
}

ToolRunner::~ToolRunner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ToolRunner::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued call has run
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

ToolResult ToolRunner::run_call(const ToolCall& call) const {
  const auto start = std::chrono::steady_clock::now();
  ToolResult r;
  const ToolEntry* entry = tools_.find(call.name);
  if (!entry) {
    r = tool_error(ToolFailure::UnknownTool,
                   cat("unknown tool '", call.name, "' (available: ", tools_.names(), ")"));
  } else if (const std::string bad = argument_error(entry->schema, call.arguments); !bad.empty()) {
    r = tool_error(ToolFailure::BadArguments, cat(call.name, ": ", bad));
  } else {
    try {
      r = entry->tool->run(call.arguments, ToolLimits{options_.timeout_s, options_.max_tool_output_bytes});
    } catch (const std::exception& e) {  // a tool that cannot run at all (python3 missing): the call fails
      r = tool_error(ToolFailure::ToolError, cat(call.name, ": ", e.what()));
    }
  }
  r.text = truncate_tool_response(r.text, options_.max_tool_response_length, options_.tool_response_truncate_side);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::future<std::vector<ToolResult>> ToolRunner::run_turn(std::string assistant_text) {
  std::vector<ParsedCall> calls = parse_tool_calls(assistant_text);
  auto state = std::make_shared<TurnState>();
  auto future = state->done.get_future();
  state->results.resize(calls.size());
  size_t to_run = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].failure != ToolFailure::None) {
      state->results[i] = tool_error(calls[i].failure, calls[i].error);
      state->results[i].text = truncate_tool_response(state->results[i].text, options_.max_tool_response_length,
                                                      options_.tool_response_truncate_side);
    } else {
      ++to_run;
    }
  }
  if (to_run == 0) {
    state->done.set_value(std::move(state->results));
    return future;
  }
  state->left = to_run;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].failure != ToolFailure::None) continue;
      queue_.push_back([this, state, i, call = std::move(calls[i].call)] {
        state->results[i] = run_call(call);
        state->finish_one();
      });
    }
  }
  wake_.notify_all();
  return future;
}

}  // namespace grpo::tools
