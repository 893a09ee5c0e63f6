// Tests of name tables (core/names.h): lookup both ways, synonyms, and the listing messages use.
#include <gtest/gtest.h>

#include "core/names.h"

using namespace grpo;

namespace {

enum class Colour { Red, Green, Blue };
constexpr auto kColourNames = name_table<Colour>(
    {{Colour::Red, "red"}, {Colour::Green, "green"}, {Colour::Green, "verde"}, {Colour::Blue, "blue"}});

}  // namespace

TEST(NameTable, LooksUpBothWays) {
  static_assert(kColourNames.find("verde") == Colour::Green);
  EXPECT_EQ(kColourNames.find("blue"), Colour::Blue);
  EXPECT_FALSE(kColourNames.find("Blue"));
  EXPECT_EQ(kColourNames.name(Colour::Green), "green");  // the first name of a value with synonyms
  EXPECT_EQ(kColourNames.names(), (std::vector<std::string>{"red", "green", "verde", "blue"}));
  EXPECT_EQ(kColourNames.listing(), "red, green, verde or blue");
  EXPECT_EQ(kColourNames.listing(", "), "red, green, verde, blue");
}
