// Errors are grpo::Error naming the template and the line: syntax errors, unknown tags/filters/tests,
// runtime type errors, and raise_exception() with the template's own message.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer_jinja/render_util.h"

using grpo::jinja::testing::render;
using grpo::jinja::testing::render_error;

TEST(JinjaErrors, RaiseExceptionCarriesTheMessageAndLine) {
  EXPECT_EQ(render_error("line1\n{% if true %}\n{{ raise_exception('Conversation roles must alternate') }}\n{% endif %}"),
            "[jinja] test_template:3: raise_exception: Conversation roles must alternate");
}

TEST(JinjaErrors, ErrorsAreGrpoErrorsNamingTheTemplate) {
  const grpo::jinja::Template tpl("a\n\n{{ 1 / 0 }}", "my_template");
  try {
    tpl.render(grpo::jinja::Value::make_object());
    FAIL() << "expected an error";
  } catch (const grpo::Error& e) {
    EXPECT_EQ(std::string(e.what()), "[jinja] my_template:3: division by zero");
  }
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(render_error("ok\n{% if %}{% endif %}"), "[jinja] test_template:2: expected an expression, got end of statement block");
  EXPECT_EQ(render_error("a\nb\n{% for x in l %}\nbody"), "[jinja] test_template:4: unexpected end of template, expected 'endfor' or 'else'");
  EXPECT_EQ(render_error("{{ 1 + }}"), "[jinja] test_template:1: unexpected end of print statement");
  EXPECT_EQ(render_error("\n\n{{ x }"), "[jinja] test_template:3: unexpected '}'");
  EXPECT_EQ(render_error("{{ 'open }}"), "[jinja] test_template:1: unexpected end of template: unterminated string");
  EXPECT_EQ(render_error("x\n{# never closed"), "[jinja] test_template:2: Missing end of comment tag");
  EXPECT_EQ(render_error("{{ a\n+ 1"), "[jinja] test_template:1: unexpected end of template, expected end of print statement '}}'");
}

TEST(JinjaErrors, UnknownNamesAreReportedWhenParsing) {
  EXPECT_EQ(render_error("\n{% frobnicate %}"), "[jinja] test_template:2: Encountered unknown tag 'frobnicate'");
  EXPECT_EQ(render_error("{{ x | nosuchfilter }}"), "[jinja] test_template:1: No filter named 'nosuchfilter'.");
  EXPECT_EQ(render_error("{{ x is nosuchtest }}"), "[jinja] test_template:1: No test named 'nosuchtest'.");
  EXPECT_EQ(render_error("{% include 'other.jinja' %}"),
            "[jinja] test_template:1: the 'include' tag is not supported by this Jinja implementation");
  EXPECT_EQ(render_error("{% break %}"), "[jinja] test_template:1: 'break' is only allowed inside a for loop");
}

TEST(JinjaErrors, RuntimeErrorsNameTheInnermostLine) {
  const std::string tpl =
      "{%- for m in messages %}\n"
      "  {{- m.role }}\n"
      "  {{- m.content +\n"
      "      m.count }}\n"
      "{%- endfor %}";
  EXPECT_EQ(render_error(tpl, R"({"messages": [{"role": "user", "content": "x", "count": 1}]})"),
            "[jinja] test_template:3: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(render_error("\n{{ 'abc' < 1 }}"), "[jinja] test_template:2: '<' not supported between instances of 'str' and 'int'");
  EXPECT_EQ(render_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}"), "[jinja] test_template:1: too many values to unpack (expected 2)");
  EXPECT_EQ(render_error("{{ 5 in 'abc' }}"), "[jinja] test_template:1: 'in <string>' requires string as left operand, not int");
  EXPECT_EQ(render_error("{{ 3() }}"), "[jinja] test_template:1: 'int' object is not callable");
  EXPECT_EQ(render_error("{% for x in 5 %}{% endfor %}"), "[jinja] test_template:1: 'int' object is not iterable");
  EXPECT_EQ(render_error("{{ 'x' | join(1, 2, 3) }}"), "[jinja] test_template:1: join() takes at most 2 argument(s) (3 given)");
  EXPECT_EQ(render_error("{{ 9223372036854775807 + 1 }}"), "[jinja] test_template:1: integer overflow: the result does not fit in 64 bits");
}

TEST(JinjaErrors, BadContextShapesAreRejectedAtTheBoundary) {
  EXPECT_THROW(grpo::jinja::from_json(nlohmann::json::parse("18446744073709551615")), grpo::Error);
}

TEST(JinjaErrors, HostileInputFailsCleanly) {
  EXPECT_NE(render_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nesting is deeper"),
            std::string::npos);
  std::string nested;
  for (int i = 0; i < 2000; ++i) nested += "{% if true %}";
  EXPECT_NE(render_error(nested).find("nesting is deeper"), std::string::npos);
  EXPECT_NE(render_error("{{ 'ab' * 9000000000 }}").find("too large"), std::string::npos);
  EXPECT_EQ(render("{{ '\xFF\xFE' ~ 'x' }}"), "\xFF\xFEx");  // invalid UTF-8 passes through untouched
}

TEST(JinjaErrors, NumberLiteralsOutOfRange) {
  EXPECT_EQ(render_error("\n{{ 99999999999999999999 }}"),
            "[jinja] test_template:2: integer literal 99999999999999999999 does not fit in 64 bits");
  EXPECT_EQ(render("{{ 1e999 }} {{ -1e999 }}"), "inf -inf");
  EXPECT_NE(render_error("{{ '{99999999999}'.format(1) }}"), "");
}
