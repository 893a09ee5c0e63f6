// Tests of validation's answer voting (loop/evaluate.h).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "loop/evaluate.h"

using namespace grpo;

// maj@n of validation: the answer given most often, equal values being one answer ("0.5" = "1/2"),
// responses without an answer not voting, ties to the earliest.
TEST(Validation, MajorityAnswerVotesByValue) {
  using A = std::vector<std::optional<std::string>>;
  EXPECT_EQ(majority_answer(A{"3", "0.5", "1/2", std::nullopt, "3", "\\frac{1}{2}"}), 1);
  EXPECT_EQ(majority_answer(A{"7", "8"}), 0);
  EXPECT_EQ(majority_answer(A{std::nullopt, "x", "y", "y"}), 2);
  EXPECT_EQ(majority_answer(A{std::nullopt, std::nullopt}), -1);
  EXPECT_EQ(majority_answer(A{}), -1);
}
