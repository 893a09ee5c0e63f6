// Statements: if/elif/else, for loops (loop variables, filters, else, unpacking, break/continue, cycle,
// changed), set (tuple, block, namespace attributes), scoping, macros, with, filter blocks, generation.
#include <gtest/gtest.h>

#include "tokenizer_jinja/render_util.h"

using grpo::jinja::testing::render;
using grpo::jinja::testing::render_error;

TEST(JinjaStatements, IfElifElse) {
  const std::string tpl = "{% if n > 2 %}big{% elif n > 1 %}mid{% else %}small{% endif %}";
  EXPECT_EQ(render(tpl, R"({"n": 3})"), "big");
  EXPECT_EQ(render(tpl, R"({"n": 2})"), "mid");
  EXPECT_EQ(render(tpl, R"({"n": 1})"), "small");
}

TEST(JinjaStatements, LoopVariables) {
  EXPECT_EQ(render("{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
                   R"({"l": ["a", "b"]})"),
            "1021TrueFalse2;2110FalseTrue2;");
  EXPECT_EQ(render("{% for x in l %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", R"({"l": [1, 2, 3]})"),
            "[|2][1|3][2|]");
  EXPECT_EQ(render("{% for x in l %}{{ loop.cycle('odd', 'even') }} {% endfor %}", R"({"l": [1, 2, 3]})"), "odd even odd ");
  EXPECT_EQ(render("{% for x in [1, 1, 2, 1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}"), "121");
  EXPECT_EQ(render("{% for r in [[1, 2], [3]] %}{% for c in r %}{{ loop.index }}{{ c }}{{ loop.depth }} {% endfor %}{% endfor %}"),
            "111 221 131 ");
}

TEST(JinjaStatements, LoopFilterElseAndUnpacking) {
  EXPECT_EQ(render("{% for x in l if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %}", R"({"l": [3, 1, 2]})"),
            "3:1/2 2:2/2 ");
  EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1] if x > 5 %}{{ x }}{% else %}none passed{% endfor %}"), "none passed");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}", R"({"d": {"b": 1, "a": 2}})"), "b=1,a=2,");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", R"({"d": {"b": 1, "a": 2}})"), "ba");
  EXPECT_EQ(render("{% for c in 'h\xC3\xA9!' %}{{ c }}.{% endfor %}"), "h.\xC3\xA9.!.");
  EXPECT_EQ(render("{% for (a, b) in [[1, 2], [3, 4]] %}{{ a * b }} {% endfor %}"), "2 12 ");
}

TEST(JinjaStatements, ForElseRunsUnlessAnIterationCompletedItsBody) {
  // Jinja's quirk: iterations left through break/continue do not count as "the loop ran".
  EXPECT_EQ(render("{% for x in [1, 2] %}{{ x }}{% continue %}{% else %}E{% endfor %}"), "12E");
  EXPECT_EQ(render("{% for x in [1, 2] %}{{ x }}{% break %}{% else %}E{% endfor %}"), "1E");
  EXPECT_EQ(render("{% for x in [1, 2] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% else %}E{% endfor %}"), "1");
}

TEST(JinjaStatements, BlockBodiesAreScopes) {
  EXPECT_EQ(render("{% set x %}{% set inner = 1 %}{% endset %}[{{ inner }}]"), "[]");
  EXPECT_EQ(render("{% filter upper %}{% set inner = 1 %}{% endfilter %}[{{ inner }}]"), "[]");
  EXPECT_EQ(render("{% generation %}{% set inner = 1 %}{% endgeneration %}[{{ inner }}]"), "[]");
}

TEST(JinjaStatements, LoopControls) {
  EXPECT_EQ(render("{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}"
                   "{{ x }}{% endfor %}",
                   R"({"l": [0, 1, 2, 3, 4, 5]})"),
            "023");
  // break leaves only the innermost loop
  EXPECT_EQ(render("{% for i in range(3) %}{% for j in range(3) %}{% if j > i %}{% break %}{% endif %}{{ i }}{{ j }} "
                   "{% endfor %}{% endfor %}"),
            "00 10 11 20 21 22 ");
}

TEST(JinjaStatements, SetForms) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% set x = [1, 2] %}{% set y = x + [3] %}{{ x }}{{ y }}"), "[1, 2][1, 2, 3]");
  EXPECT_EQ(render("{% set blk %}inner {{ 1 + 1 }}{% endset %}[{{ blk }}]"), "[inner 2]");
  EXPECT_EQ(render("{% set blk | upper | replace('A', '4') %}abc{% endset %}{{ blk }}"), "4BC");
}

TEST(JinjaStatements, ScopingFollowsJinja) {
  // A set inside a loop body does not leak out; inside an if it does.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [5, 6] %}{% set x = i %}{{ x }}{% endfor %}{{ x }}"), "561");
  EXPECT_EQ(render("{% if true %}{% set y = 'in-if' %}{% endif %}{{ y }}"), "in-if");
  EXPECT_EQ(render("{% for m in [1, 2] %}{% set last = m %}{% endfor %}[{{ last }}]"), "[]");
  EXPECT_EQ(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]"), "3[]");
}

TEST(JinjaStatements, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(render("{% set ns = namespace(total=0, found=false) %}{% for x in [1, 2, 3] %}{% set ns.total = ns.total + x %}"
                   "{% if x == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.total }} {{ ns.found }}"),
            "6 True");
  EXPECT_EQ(render("{% set ns = namespace({'x': 1}, y=2) %}{{ ns.x }}{{ ns.y }}{{ ns.missing is defined }}"), "12False");
  EXPECT_NE(render_error("{% set d = {} %}{% set d.x = 1 %}").find("Cannot assign attribute on non-namespace object"),
            std::string::npos);
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(render("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
                   "{{ greet('Bob') }} {{ greet('Al', greeting='Hi') }} {{ greet(name='Cy') }}"),
            "Hello, Bob! Hi, Al! Hello, Cy!");
  EXPECT_EQ(render("{% macro m(a, b=a ~ '2') %}{{ a }}{{ b }}{% endmacro %}{{ m('x') }}"), "xx2");
  EXPECT_EQ(render("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, a=3) }}"), "(1, 2){'a': 3}");
  EXPECT_EQ(render("{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}"), "[]");
  EXPECT_EQ(render("{% macro outer(x) %}{% macro inner(y) %}<{{ y }}>{% endmacro %}{{ inner(x) }}{{ inner(x ~ '!') }}"
                   "{% endmacro %}{{ outer('q') }}"),
            "<q><q!>");
  // Macros see the variables of the scope they were defined in, with their values at call time.
  EXPECT_EQ(render("{% set g = 'a' %}{% macro m() %}{{ g }}{% endmacro %}{% set g = 'b' %}{{ m() }}"), "b");
  EXPECT_NE(render_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}").find("macro 'm' takes not more than 1 argument(s)"),
            std::string::npos);
  EXPECT_NE(render_error("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}").find("macro 'm' takes no keyword argument 'b'"),
            std::string::npos);
  EXPECT_NE(render_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}").find("recursion"), std::string::npos);
}

TEST(JinjaStatements, FilterBlockAndGenerationBlock) {
  EXPECT_EQ(render("{% filter upper %}hello {{ 'x' }}{% endfilter %}"), "HELLO X");
  // transformers' {% generation %} marks assistant text; it renders its body unchanged.
  EXPECT_EQ(render("a{% generation %}b{{ 1 }}{% endgeneration %}c"), "ab1c");
}

TEST(JinjaStatements, GlobalFunctions) {
  EXPECT_EQ(render("{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}"),
            "[0, 1, 2] [1, 4, 7] [5, 3, 1] []");
  EXPECT_EQ(render("{{ dict(a=1, b='x') }}"), "{'a': 1, 'b': 'x'}");
  EXPECT_EQ(render("{% set j = joiner(' | ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}"), "1 | 2 | 3");
  EXPECT_EQ(render("{{ strftime_now('%Y') | length }}"), "4");
  EXPECT_NE(render_error("{{ range(200000) | length }}").find("MAX_RANGE"), std::string::npos);
}
