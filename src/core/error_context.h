// What the program was doing when an exception went by, for failures whose own message says nothing about
// it (std::bad_alloc, a oneDNN error, a file system error): `grpo` prints the message followed by the
// scopes it left, innermost first, e.g.
//   error: std::bad_alloc
//     while allocating the KV cache: 4096 blocks of 16 tokens, 2.1 GB (bf16)
//     while setting up the run from examples/arith-grpo.yaml
// A scope costs one string build when entered; use it around phases, not inside kernels. Scopes are per
// thread; only the thread that reports errors (the main thread) needs them.
#pragma once
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"

namespace grpo {

class ErrorContext {
 public:
  template <typename... Args>
  explicit ErrorContext(Args&&... parts) : text_(cat(std::forward<Args>(parts)...)) {
    enter();
  }
  ~ErrorContext();
  ErrorContext(const ErrorContext&) = delete;
  ErrorContext& operator=(const ErrorContext&) = delete;

 private:
  void enter();
  std::string text_;
  int uncaught_ = 0;  // std::uncaught_exceptions() on entry: more on exit means an exception is leaving
  int depth_ = 0;
};

// The scopes the last exception on this thread left, innermost first; empties the record.
std::vector<std::string> take_error_context();

// "message\n  while a\n  while b": an exception's message with the scopes it left.
std::string describe_failure(const std::string& message);

}  // namespace grpo
