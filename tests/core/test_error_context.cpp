// Tests of error contexts (the scopes an exception left, for library errors whose message says nothing
// about what was being done) and of overflow-checked size arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>

#include "core/checked.h"
#include "core/error_context.h"

using namespace grpo;

namespace {

void allocate_kv(int64_t blocks) {
  ErrorContext what("allocating the KV cache: ", blocks, " blocks");
  throw std::bad_alloc();
}

void step(int64_t n) {
  ErrorContext what("step ", n, ": generation");
  allocate_kv(4096);
}

}  // namespace

TEST(ErrorContext, ScopesLeftByAnExceptionInnermostFirst) {
  take_error_context();
  try {
    ErrorContext outer("training from config.yaml");
    step(3);
  } catch (const std::bad_alloc&) {
  }
  EXPECT_EQ(take_error_context(), (std::vector<std::string>{"allocating the KV cache: 4096 blocks",
                                                           "step 3: generation", "training from config.yaml"}));
  EXPECT_TRUE(take_error_context().empty()) << "taking empties the record";
}

TEST(ErrorContext, HandledExceptionsDoNotLeakIntoTheNextReport) {
  take_error_context();
  ErrorContext outer("run");
  try {
    step(1);  // caught below and handled: its scopes must not show up later
  } catch (const std::bad_alloc&) {
  }
  try {
    ErrorContext other("saving checkpoint 2");
    throw std::runtime_error("disk full");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(take_error_context(), (std::vector<std::string>{"saving checkpoint 2"}));
  {
    ErrorContext quiet("nothing goes wrong here");
  }
  EXPECT_TRUE(take_error_context().empty());
  try {
    throw std::runtime_error("x");
  } catch (...) {
  }
  EXPECT_EQ(describe_failure("oneDNN failed"), "oneDNN failed");
}

TEST(Checked, OverflowIsAnErrorNamingTheQuantity) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20, "x"), int64_t{1} << 40);
  EXPECT_EQ(checked_add(-5, 7, "x"), 2);
  const int64_t big = std::numeric_limits<int64_t>::max();
  try {
    checked_mul(big, 2, "[config] KV cache bytes");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[config] KV cache bytes: 9223372036854775807 x 2 does not fit a 64-bit integer");
  }
  EXPECT_THROW(checked_add(big, 1, "tokens"), Error);
  EXPECT_THROW(checked_mul(std::numeric_limits<int64_t>::min(), -1, "tokens"), Error);
}
