// Jinja parser: tokens -> statement nodes and expression trees, following Jinja2's grammar and operator
// precedence (or < and < not < comparisons < + - < ~ < * / // % < ** < unary, then filters and tests).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/ast.h"

namespace grpo::jinja {

// Throws grpo::Error "[jinja] <template_name>:<line>: <what>" for syntax errors, unknown tags, filters
// and tests, and for Jinja features outside the supported subset.
std::vector<Node> parse_template(std::string_view source, const std::string& template_name);

}  // namespace grpo::jinja
