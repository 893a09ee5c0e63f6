// Jinja lexer configured as transformers configures Jinja2: trim_blocks (the first newline after a
// block or comment tag is dropped), lstrip_blocks (whitespace before a block/comment tag on its own line
// is dropped), `-`/`+` whitespace control on tags, {% raw %}, and the single trailing newline of the
// source dropped (keep_trailing_newline=False). Newlines are normalized to "\n" first.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace grpo::jinja {

enum class TokenType { Text, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };

struct Token {
  TokenType type;
  std::string value;  // text, name, operator, unescaped string, or number digits
  int line;
};

// Throws grpo::Error "[jinja] <template_name>:<line>: <what>" on malformed input.
std::vector<Token> tokenize(std::string_view source, const std::string& template_name);

}  // namespace grpo::jinja
