// The global functions of the sandboxed environment transformers builds.
#include "tokenizer/jinja/globals.h"

#include <ctime>
#include <memory>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/jinja/args.h"

namespace grpo::jinja {

namespace {

constexpr int64_t kMaxRange = 100000;  // Jinja's sandbox limit (MAX_RANGE)

Value g_range(CallArgs& args) {
  expect_no_keywords(args, "range");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) fail("range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  for (const Value& v : p)
    if (!v.is_number() || v.is_float()) fail(cat("'", type_name(v), "' object cannot be interpreted as an integer"));
  const int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  const int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  const int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                 : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (count > kMaxRange) fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) items.emplace_back(start + i * step);
  return Value::make_array(std::move(items));
}

// dict(mapping?, **kwargs) and namespace(mapping?, **kwargs).
Value make_mapping(CallArgs& args, ObjectKind kind, const char* fn) {
  if (args.positional.size() > 1) fail(std::string(fn) + "() takes at most 1 positional argument");
  Value out = Value::make_object(kind);
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (init.is_dict()) {
      for (const auto& [k, v] : init.object().entries) out.object().set(k, v);
    } else {
      for (const Value& pair : iterate(init)) {
        if (!pair.is_array() || pair.array().items.size() != 2)
          fail(std::string(fn) + "() sequence elements must be key/value pairs");
        out.object().set(pair.array().items[0], pair.array().items[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) out.object().set(Value(k), v);
  return out;
}

Value g_raise_exception(CallArgs& args) {
  const auto a = bind_args(args, "raise_exception", {{"message", Value(), true}});
  fail(std::string(kRaisedPrefix) + to_str(a[0]));
}

Value g_strftime_now(CallArgs& args) {
  const auto a = bind_args(args, "strftime_now", {{"format", Value(), true}});
  if (!a[0].is_string()) fail("strftime_now() format must be a string, not " + type_name(a[0]));
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::string buf(256 + a[0].as_string().size() * 8, '\0');
  const size_t n = a[0].as_string().empty() ? 0 : std::strftime(buf.data(), buf.size(), a[0].as_string().c_str(), &local);
  buf.resize(n);
  return Value(std::move(buf));
}

Value g_joiner(CallArgs& args) {
  const auto a = bind_args(args, "joiner", {{"sep", Value(", ")}});
  auto used = std::make_shared<bool>(false);
  const Value sep = a[0];
  return Value::callable("Joiner", [used, sep](CallArgs& call) {
    bind_args(call, "joiner", {});
    if (!*used) {
      *used = true;
      return Value("");
    }
    return sep;
  });
}

}  // namespace

const Value* find_global(std::string_view name) {
  static const std::unordered_map<std::string_view, Value> kGlobals = {
      {"range", Value::callable("built-in function range", g_range)},
      {"dict", Value::callable("class 'dict'", [](CallArgs& a) { return make_mapping(a, ObjectKind::Dict, "dict"); })},
      {"namespace", Value::callable("class 'jinja2.utils.Namespace'",
                                    [](CallArgs& a) { return make_mapping(a, ObjectKind::Namespace, "namespace"); })},
      {"joiner", Value::callable("class 'jinja2.utils.Joiner'", g_joiner)},
      {"raise_exception", Value::callable("function raise_exception", g_raise_exception)},
      {"strftime_now", Value::callable("function strftime_now", g_strftime_now)},
  };
  const auto it = kGlobals.find(name);
  return it == kGlobals.end() ? nullptr : &it->second;
}

}  // namespace grpo::jinja
