// The one error type of grpo.cpp and the helpers that build its messages.
// Messages name where the problem is (file, field, line) and what was expected, e.g.
//   [safetensors] model.safetensors: tensor "lm_head.weight": data_offsets end 96 > data size 64
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace grpo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Concatenates any streamable values into a string: cat("expected ", 3, ", got ", x).
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(cat(std::forward<Args>(args)...));
}

}  // namespace grpo

// GRPO_CHECK(cond, parts...): throws grpo::Error with the concatenated parts when cond is false.
#define GRPO_CHECK(cond, ...)                   \
  do {                                          \
    if (!(cond)) ::grpo::fail(__VA_ARGS__);     \
  } while (0)
