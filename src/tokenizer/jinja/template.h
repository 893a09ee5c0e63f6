// A parsed Jinja template, rendered with transformers' semantics. Parse once (or fetch from the cache with
// cached_template), render many times; rendering is thread-safe.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

class Template {
 public:
  // Throws grpo::Error "[jinja] <name>:<line>: ..." on syntax errors and unsupported constructs.
  Template(std::string_view source, std::string name);

  // `context` is a dict Value: template variable -> value. Throws grpo::Error naming the template and the
  // line on render errors (undefined values used, type errors, unknown methods, raise_exception()).
  std::string render(const Value& context) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::vector<Node> body_;
};

// The parsed template for (source, name), parsed on first use and cached (thread-safe).
std::shared_ptr<const Template> cached_template(const std::string& source, const std::string& name);

}  // namespace grpo::jinja
