// Whitespace semantics of transformers' Jinja environment: trim_blocks, lstrip_blocks, `-` and `+` tag
// modifiers, comments, {% raw %}, newline normalization and the dropped trailing newline.
#include <gtest/gtest.h>

#include "tokenizer_jinja/render_util.h"

using grpo::jinja::testing::render;

TEST(JinjaWhitespace, TrimBlocksDropsTheNewlineAfterABlockTag) {
  EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nafter"), "yes\nafter");
}

TEST(JinjaWhitespace, TrimBlocksDoesNotApplyToPrintTags) {
  EXPECT_EQ(render("{{ 1 }}\n{{ 2 }}\n"), "1\n2");  // the final newline is the template's trailing newline
}

TEST(JinjaWhitespace, LstripBlocksRemovesIndentationBeforeBlockTags) {
  EXPECT_EQ(render("a\n    {% if true %}\n    x\n    {% endif %}\nb"), "a\n    x\nb");
  EXPECT_EQ(render("\t{% if true %}\n\tx\n\t{% endif %}\n"), "\tx\n");
}

TEST(JinjaWhitespace, LstripBlocksKeepsTextBeforeATagOnTheSameLine) {
  EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");
}

TEST(JinjaWhitespace, LstripBlocksDoesNotTouchPrintTags) {
  EXPECT_EQ(render("x\n    {{ 1 }}"), "x\n    1");
}

TEST(JinjaWhitespace, MinusStripsAllWhitespaceIncludingNewlines) {
  EXPECT_EQ(render("a  \n  {%- if true -%}  \n  yes  \n  {%- endif -%}  \n  b"), "ayesb");
  EXPECT_EQ(render("a {{- ' x ' -}} b"), "a x b");
  EXPECT_EQ(render("a {#- note -#} b"), "ab");
}

TEST(JinjaWhitespace, PlusDisablesLstripAndTrim) {
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(JinjaWhitespace, CommentsAreDroppedWithTrimAndLstrip) {
  EXPECT_EQ(render("a\n  {# a comment\n spanning lines #}\nb"), "a\nb");
}

TEST(JinjaWhitespace, RawBlocksAreNotParsed) {
  EXPECT_EQ(render("{% raw %}{{ not parsed }} {% if %}{% endraw %}"), "{{ not parsed }} {% if %}");
  EXPECT_EQ(render("{%- raw -%}\n  {{ x }}  \n{%- endraw -%}\n"), "{{ x }}");
}

TEST(JinjaWhitespace, NewlinesAreNormalizedAndOneTrailingNewlineIsDropped) {
  EXPECT_EQ(render("l1\r\nl2\r\n{% if true %}\r\nok\r\n{% endif %}\r\n"), "l1\nl2\nok\n");
  EXPECT_EQ(render("text\n\n"), "text\n");
}

TEST(JinjaWhitespace, LoopBodiesWithTypicalChatTemplateIndentation) {
  const std::string tpl =
      "{%- for m in messages %}\n"
      "    {%- if m.role == 'user' %}\n"
      "        {{- 'U:' + m.content + '\\n' }}\n"
      "    {%- else %}\n"
      "        {{- 'A:' + m.content + '\\n' }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n";
  EXPECT_EQ(render(tpl, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})"),
            "U:hi\nA:yo\n");
}

TEST(JinjaWhitespace, LoopWithoutStrippingKeepsLineStructure) {
  EXPECT_EQ(render("{% for i in range(3) %}\n{{ i }}\n{% endfor %}\n"), "0\n1\n2\n");
  EXPECT_EQ(render("{% for i in range(3) -%}\n{{ i }}\n{%- endfor %}"), "012");
}
