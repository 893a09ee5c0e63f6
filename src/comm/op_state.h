// Private to comm/: the completion state of one started operation, shared by the caller's Request and the
// backend that runs it (possibly on another thread).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace grpo::comm::detail {

struct OpState {
  uint64_t ordinal = 0;  // this operation's place among the communicator's operations (the same on every rank)
  std::string what;  // e.g. "reduce_scatter of 4194304 bytes (operation 17)", for errors
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;  // non-empty: the operation failed

  void finish(std::string err) {
    {
      std::lock_guard<std::mutex> lock(mu);
      error = std::move(err);
      done = true;
    }
    cv.notify_all();
  }
};

}  // namespace grpo::comm::detail
