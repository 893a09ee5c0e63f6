// Expressions with Python semantics: literals and how values print, operators and precedence, comparisons,
// `in`, `is` tests, attribute/item access, slicing, and Jinja's default Undefined.
#include <gtest/gtest.h>

#include "tokenizer_jinja/render_util.h"

using grpo::jinja::testing::render;
using grpo::jinja::testing::render_error;

TEST(JinjaExpressions, LiteralsPrintAsPythonDoes) {
  EXPECT_EQ(render("{{ 1 }} {{ 1.0 }} {{ 2.50 }} {{ -3 }} {{ True }} {{ false }} {{ None }} {{ none }}"),
            "1 1.0 2.5 -3 True False None None");
  EXPECT_EQ(render("{{ 'single' }} {{ \"double\" }} {{ 'a' 'b' }}"), "single double ab");
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.5] }}"), "[1, 'a', None, True, 1.5]");
  EXPECT_EQ(render("{{ {'k': [1, {'x': none}], 2: 'two'} }}"), "{'k': [1, {'x': None}], 2: 'two'}");
  EXPECT_EQ(render("{{ (1,) }} {{ (1, 'a') }} {{ () }}"), "(1,) (1, 'a') ()");
  EXPECT_EQ(render("{{ [1, 2,] }} {{ {'a': 1,} }}"), "[1, 2] {'a': 1}");
}

TEST(JinjaExpressions, StringEscapesAndRepr) {
  EXPECT_EQ(render("{{ 'tab\\tend' }}|{{ 'l1\\nl2' }}|{{ '\\u00e9\\x41' }}|{{ 'it\\'s' }}|{{ 'x\\qy' }}"),
            "tab\tend|l1\nl2|\xC3\xA9" "A|it's|x\\qy");
  // repr picks double quotes when the string holds a single quote and no double quote.
  EXPECT_EQ(render("{{ ['it\\'s', 'say \"hi\"', 'a\\nb', '\\\\'] }}"), "[\"it's\", 'say \"hi\"', 'a\\nb', '\\\\']");
}

TEST(JinjaExpressions, FloatsPrintWithPythonRepr) {
  EXPECT_EQ(render("{{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 10 / 2 }} {{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} {{ 0.0001 }} {{ -0.0 }}"),
            "0.30000000000000004 0.3333333333333333 5.0 1e+16 1000000000000000.0 1e-05 0.0001 -0.0");
  EXPECT_EQ(render("{{ 1e100 }} {{ 123e-2 }} {{ 1.5e300 * 1e10 }}"), "1e+100 1.23 inf");
}

TEST(JinjaExpressions, IntegerLiterals) {
  EXPECT_EQ(render("{{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 123456789012345678 }}"),
            "1000 31 5 15 123456789012345678");
}

TEST(JinjaExpressions, ArithmeticFollowsPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}"), "3 -4 2 -2 1024 0.5");
  EXPECT_EQ(render("{{ 7.0 // 2 }} {{ 7.5 % 2 }} {{ -7.5 // 2 }} {{ 1 + 2.0 }} {{ true + 1 }}"), "3.0 1.5 -4.0 3.0 2");
  EXPECT_EQ(render("{{ 'ab' * 2 }} {{ [1] * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }}"), "abab [1, 1, 1] [1, 2] ab");
}

TEST(JinjaExpressions, Precedence) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 - 4 / 2 }} {{ 2 * (3 + 1) }} {{ 10 - 2 - 3 }}"), "5.0 8 5");
  // Jinja's ** is left-associative; unary minus binds tighter than **; ~ sits between + - and * /.
  EXPECT_EQ(render("{{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 2 * 3 ~ 4 }} {{ (1 + 2) ~ 3 }}"), "64 4 64 33");
  EXPECT_NE(render_error("{{ 1 ~ 2 + 3 }}").find("unsupported operand type(s) for +: 'str' and 'int'"), std::string::npos);
  // A filter applies to the operand next to it, before the arithmetic.
  EXPECT_EQ(render("{{ items|length - 1 }}", R"({"items": [1, 2, 3]})"), "2");
  EXPECT_EQ(render("{{ not true == false }}"), "True");
}

TEST(JinjaExpressions, ConcatenationStringifies) {
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ missing ~ 2.0 ~ [1] }}"), "a1None2.0[1]");
}

TEST(JinjaExpressions, LogicReturnsOperandsLikePython) {
  EXPECT_EQ(render("{{ true and 'yes' }} {{ none or 'fallback' }} {{ 0 or '' }}|{{ [] and 1 }}"), "yes fallback |[]");
  EXPECT_EQ(render("{{ not [] }} {{ not 'x' }} {{ not missing }}"), "True False True");
}

TEST(JinjaExpressions, ComparisonsChainAndCompareNumbersAcrossTypes) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}"),
            "True False True True True True");
  EXPECT_EQ(render("{{ (1, 2) == (1, 2) }} {{ [1, 2] == (1, 2) }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}"),
            "True False True");
  EXPECT_EQ(render("{{ none == none }} {{ 'x' != none }} {{ missing == missing }} {{ missing == 0 }}"),
            "True True True False");
}

TEST(JinjaExpressions, InOperator) {
  const std::string ctx = R"({"d": {"a": 1}, "l": [1, 2]})";
  EXPECT_EQ(render("{{ 'x' in 'xyz' }} {{ 1 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in l }} {{ 1 in missing }}", ctx),
            "True True True True True False");
  EXPECT_EQ(render("{{ not 'q' in 'abc' }}"), "True");
}

TEST(JinjaExpressions, ConditionalExpression) {
  EXPECT_EQ(render("{{ 1 if true else 2 }} {{ 1 if false else 2 }} [{{ 'x' if false }}]"), "1 2 []");
  EXPECT_EQ(render("{{ 'a' if false else 'b' if true else 'c' }}"), "b");
}

TEST(JinjaExpressions, IsTests) {
  const std::string ctx = R"({"n": 3, "f": 2.5, "s": "x", "d": {}, "l": [], "t": true, "nul": null})";
  EXPECT_EQ(render("{{ n is defined }} {{ q is defined }} {{ q is undefined }} {{ nul is none }} {{ n is not none }}", ctx),
            "True False True True True");
  EXPECT_EQ(render("{{ s is string }} {{ n is string }} {{ d is mapping }} {{ l is mapping }} {{ l is iterable }} "
                   "{{ s is iterable }} {{ l is sequence }} {{ d is sequence }} {{ n is sequence }}",
                   ctx),
            "True False True False True True True True False");
  EXPECT_EQ(render("{{ n is number }} {{ f is number }} {{ t is number }} {{ n is integer }} {{ t is integer }} "
                   "{{ f is float }} {{ t is boolean }} {{ n is boolean }}",
                   ctx),
            "True True True True False True True False");
  EXPECT_EQ(render("{{ t is true }} {{ t is false }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}", ctx),
            "True False False True False");
  EXPECT_EQ(render("{{ n is odd }} {{ n is even }} {{ n is divisibleby 3 }} {{ n is equalto 3 }} {{ n is eq(4) }} "
                   "{{ n is ne 3 }} {{ n is gt 2 }} {{ n is lt 2 }} {{ n is ge 3 }} {{ 'a' is in 'abc' }}",
                   ctx),
            "True False True True False False True False True True");
  EXPECT_EQ(render("{{ nul is sameas none }} {{ 'ABC' is upper }} {{ 'abc' is lower }} {{ 'upper' is filter }} "
                   "{{ 'odd' is test }} {{ 'zzz' is filter }}",
                   ctx),
            "True True True True True False");
}

TEST(JinjaExpressions, AttributeAndItemAccess) {
  const std::string ctx = R"({"nested": {"x": {"y": [1, {"z": "deep"}]}}, "d": {"a": 1, "items": 5}})";
  EXPECT_EQ(render("{{ nested.x.y[1].z }} {{ nested['x']['y'][0] }} {{ nested.x.y.0 }} {{ nested.x.y[-1]['z'] }}", ctx),
            "deep 1 1 deep");
  // `a.b` prefers the Python attribute (dict.items is a method), `a['b']` prefers the item.
  EXPECT_EQ(render("{{ d['items'] }} {{ d.items is defined }} {{ d.items() | list }}", ctx),
            "5 True [('a', 1), ('items', 5)]");
}

TEST(JinjaExpressions, MissingAttributesAndIndexesAreUndefined) {
  const std::string ctx = R"({"d": {"a": 1}, "l": [1]})";
  EXPECT_EQ(render("[{{ d.missing }}][{{ l[5] }}][{{ d.missing is defined }}][{{ l[5] is undefined }}]", ctx),
            "[][][False][True]");
}

TEST(JinjaExpressions, UndefinedBehavesLikeJinjaDefaultUndefined) {
  EXPECT_EQ(render("[{{ missing }}][{{ missing | length }}][{{ missing | join(',') }}][{{ missing | list }}]"), "[][0][][[]]");
  EXPECT_EQ(render("{% if missing %}t{% else %}f{% endif %}{% for x in missing %}x{% endfor %}"), "f");
  EXPECT_EQ(render("{{ missing | default('d') }} {{ missing | upper }}|{{ missing | string }}|"), "d ||");
  // Using an undefined value (attribute, item, arithmetic, call) is an error naming it.
  EXPECT_NE(render_error("{{ missing.attr }}").find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ missing['k'] }}").find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ missing + 1 }}").find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ missing() }}").find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ d.x.y }}", R"({"d": {}})").find("'dict object' has no attribute 'x'"), std::string::npos);
}

TEST(JinjaExpressions, Slicing) {
  const std::string ctx = R"({"s": "Hello World", "u": "你好世界", "l": [3, 1, 2]})";
  EXPECT_EQ(render("{{ s[0] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[::2] }} {{ s[:-6] }} {{ s[-5:-1] }} [{{ s[100:] }}]", ctx),
            "H d el dlroW olleH HloWrd Hello Worl []");
  EXPECT_EQ(render("{{ u[1] }} {{ u[::-1] }} {{ u[1:3] }} {{ u | length }}", ctx),
            "\xE5\xA5\xBD \xE7\x95\x8C\xE4\xB8\x96\xE5\xA5\xBD\xE4\xBD\xA0 \xE5\xA5\xBD\xE4\xB8\x96 4");
  EXPECT_EQ(render("{{ l[::-1] }} {{ l[-2:] }} {{ l[:1] }} {{ l[::-2] }} {{ l[-1:-3:-1] }} {{ l[1:] + l[:1] }}", ctx),
            "[2, 1, 3] [1, 2] [3] [2, 3] [2, 1] [1, 2, 3]");
  EXPECT_EQ(render("{{ 'abc'[-10:2] }}"), "ab");
}
