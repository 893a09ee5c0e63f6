// Test helper: the message of the grpo::Error a callable throws ("" when it throws none).
#pragma once
#include <string>

#include "core/error.h"

namespace grpo::test {

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace grpo::test
