// The built-in calculator: exact values, precedence, and every kind of bad expression.
#include <gtest/gtest.h>

#include "tools/calculator.h"

namespace grpo::tools {
namespace {

std::string calc(const std::string& e) {
  std::string r, err;
  EXPECT_TRUE(calculate(e, &r, &err)) << e << ": " << err;
  return r;
}

std::string calc_error(const std::string& e) {
  std::string r, err;
  EXPECT_FALSE(calculate(e, &r, &err)) << e << " gave " << r;
  return err;
}

TEST(Calculator, ExactArithmetic) {
  EXPECT_EQ(calc("1234 * 5678"), "7006652");
  EXPECT_EQ(calc("98765*43210"), "4267635650");
  EXPECT_EQ(calc("2 + 3 * 4"), "14");
  EXPECT_EQ(calc("(2 + 3) * 4"), "20");
  EXPECT_EQ(calc("10 - 4 - 3"), "3");
  EXPECT_EQ(calc("100 / 10 / 5"), "2");
  EXPECT_EQ(calc("7 / 2"), "3.5");
  EXPECT_EQ(calc("1 / 8"), "0.125");
  EXPECT_EQ(calc("-7 / 4"), "-1.75");
  EXPECT_EQ(calc("0.1 + 0.2"), "0.3");  // exact, not binary floating point
  EXPECT_EQ(calc("1.5 * 1.5"), "2.25");
  EXPECT_EQ(calc(".5 + 1."), "1.5");
  EXPECT_EQ(calc("  3 *\t( -2 ) "), "-6");
  EXPECT_EQ(calc("123456789012345 * 1000000000000000"), "123456789012345000000000000000");
}

TEST(Calculator, PowersBindTighterThanUnaryMinusAndAssociateRight) {
  EXPECT_EQ(calc("2^10"), "1024");
  EXPECT_EQ(calc("2**10"), "1024");
  EXPECT_EQ(calc("-2^2"), "-4");
  EXPECT_EQ(calc("(-2)^2"), "4");
  EXPECT_EQ(calc("2^3^2"), "512");
  EXPECT_EQ(calc("2^-2"), "0.25");
  EXPECT_EQ(calc("3 * 2^3"), "24");
  EXPECT_EQ(calc("0^0"), "1");
  EXPECT_EQ(calc("(-1)^1001"), "-1");
  EXPECT_EQ(calc("1^100000000000"), "1");
}

TEST(Calculator, RepeatingDecimalsRoundToTwelvePlaces) {
  EXPECT_EQ(calc("1/3"), "0.333333333333");
  EXPECT_EQ(calc("2/3"), "0.666666666667");
  EXPECT_EQ(calc("-2/3"), "-0.666666666667");
  EXPECT_EQ(calc("1/7"), "0.142857142857");
  EXPECT_EQ(calc("(1/3) * 3"), "1");  // exact fractions underneath
  EXPECT_EQ(calc("0.9999999999999 + 1/3000000000000000"), "1");  // rounding carries into the integer part
}

TEST(Calculator, Errors) {
  EXPECT_EQ(calc_error("1/0"), "division by zero");
  EXPECT_EQ(calc_error("5 / (2 - 2)"), "division by zero");
  EXPECT_NE(calc_error("0^-1").find("division by zero"), std::string::npos);
  EXPECT_NE(calc_error("10^40").find("overflow"), std::string::npos);
  EXPECT_NE(calc_error("99999999999999999 * 99999999999999999").find("overflow"), std::string::npos);
  EXPECT_NE(calc_error("2^1000000000000").find("overflow"), std::string::npos);
  EXPECT_NE(calc_error("1234567890123456789012345678901").find("overflow"), std::string::npos);
  EXPECT_NE(calc_error("2^0.5").find("exponent must be an integer"), std::string::npos);
  EXPECT_EQ(calc_error(""), "empty expression");
  EXPECT_EQ(calc_error("   "), "empty expression");
  EXPECT_EQ(calc_error("2 +"), "unexpected end of expression");
  EXPECT_EQ(calc_error("(2 + 3"), "missing closing parenthesis");
  EXPECT_EQ(calc_error("2 + 3)"), "unexpected character ')' at position 6");
  EXPECT_EQ(calc_error("2 $ 3"), "unexpected character '$' at position 3");
  EXPECT_EQ(calc_error("import os"), "unexpected character 'i' at position 1");
  EXPECT_EQ(calc_error("1.2.3"), "unexpected character '.' at position 4");
  EXPECT_EQ(calc_error("2 ** * 3"), "unexpected character '*' at position 6");
  EXPECT_NE(calc_error(std::string(2000, '1')).find("longer than 1000"), std::string::npos);
  EXPECT_NE(calc_error(std::string(300, '(') + "1" + std::string(300, ')')).find("nested"), std::string::npos);
  EXPECT_NE(calc_error(std::string(300, '-') + "1").find("nested"), std::string::npos);
}

TEST(Calculator, SchemaIsTheFunctionCalculatorOfAnExpression) {
  const auto s = calculator_schema();
  EXPECT_EQ(s["type"], "function");
  EXPECT_EQ(s["function"]["name"], "calculator");
  EXPECT_EQ(s["function"]["parameters"]["required"], nlohmann::ordered_json::array({"expression"}));
  EXPECT_EQ(s["function"]["parameters"]["properties"]["expression"]["type"], "string");
}

TEST(Calculator, AsATool) {
  auto tool = make_calculator();
  const ToolResult ok = tool->run({{"expression", "6*7"}}, ToolLimits{});
  EXPECT_EQ(ok.failure, ToolFailure::None);
  EXPECT_EQ(ok.text, "42");
  const ToolResult bad = tool->run({{"expression", "6/0"}}, ToolLimits{});
  EXPECT_EQ(bad.failure, ToolFailure::ToolError);
  EXPECT_EQ(bad.text, "Error when executing tool: calculator: division by zero");
}

}  // namespace
}  // namespace grpo::tools
