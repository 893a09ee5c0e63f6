// Scopes left by exceptions (see error_context.h). Each scope records itself when it is destroyed during
// stack unwinding. One unwinding records scopes at depths d, d-1, d-2, ... in turn; a record that does not
// continue the previous one (its depth is not one less) starts a new trail, so the scopes of an exception
// that was caught and handled earlier do not leak into the next report.
#include "core/error_context.h"

namespace grpo {

namespace {

struct Left {
  int depth;
  std::string text;
};

thread_local int t_depth = 0;
thread_local std::vector<Left> t_left;

}  // namespace

void ErrorContext::enter() {
  uncaught_ = std::uncaught_exceptions();
  depth_ = ++t_depth;
}

ErrorContext::~ErrorContext() {
  --t_depth;
  if (std::uncaught_exceptions() <= uncaught_) return;
  try {
    if (t_left.empty() || t_left.back().depth != depth_ + 1) t_left.clear();
    t_left.push_back({depth_, std::move(text_)});
  } catch (...) {  // out of memory while recording: the report just lacks this scope
  }
}

std::vector<std::string> take_error_context() {
  std::vector<std::string> out;
  for (Left& l : t_left) out.push_back(std::move(l.text));
  t_left.clear();
  return out;
}

std::string describe_failure(const std::string& message) {
  std::string s = message;
  for (const std::string& scope : take_error_context()) s += "\n  while " + scope;
  return s;
}

}  // namespace grpo
