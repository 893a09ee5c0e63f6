// Python-style binding of call arguments to parameters.
#include "tokenizer/jinja/args.h"

#include <string>

namespace grpo::jinja {

std::vector<Value> bind_args(const CallArgs& args, std::string_view function, std::initializer_list<Param> params) {
  const std::string fn(function);
  if (args.positional.size() > params.size())
    fail(fn + "() takes at most " + std::to_string(params.size()) + " argument(s) (" +
         std::to_string(args.positional.size()) + " given)");
  std::vector<Value> bound;
  std::vector<bool> given(params.size(), false);
  bound.reserve(params.size());
  for (const Param& p : params) bound.push_back(p.default_value);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    bound[i] = args.positional[i];
    given[i] = true;
  }
  for (const auto& [name, value] : args.keyword) {
    size_t index = 0;
    for (const Param& p : params) {
      if (name == p.name) break;
      ++index;
    }
    if (index == params.size()) fail(fn + "() got an unexpected keyword argument '" + name + "'");
    if (given[index]) fail(fn + "() got multiple values for argument '" + name + "'");
    bound[index] = value;
    given[index] = true;
  }
  size_t index = 0;
  for (const Param& p : params) {
    if (p.required && !given[index]) fail(fn + "() missing required argument '" + p.name + "'");
    ++index;
  }
  return bound;
}

void expect_no_keywords(const CallArgs& args, std::string_view function) {
  if (!args.keyword.empty())
    fail(std::string(function) + "() got an unexpected keyword argument '" + args.keyword[0].first + "'");
}

}  // namespace grpo::jinja
