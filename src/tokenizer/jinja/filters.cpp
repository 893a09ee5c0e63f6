// Built-in filters and tests, with Jinja2 3.1's argument names, defaults and Python semantics.
#include "tokenizer/jinja/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "tokenizer/jinja/access.h"
#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/json_io.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/utf8.h"

namespace grpo::jinja {

namespace {

// ---- helpers ----

// Jinja's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value lookup_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && part.size() <= 18 &&
                        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = get_item(v, digits ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

std::string require_string(const Value& v, const char* what) {
  if (!v.is_string()) fail(std::string(what) + " must be a string, not " + type_name(v));
  return v.as_string();
}

int64_t require_int(const Value& v, const char* what) {
  if (!v.is_number() || v.is_float()) fail(std::string(what) + " must be an integer, not " + type_name(v));
  return v.as_int();
}

// Sort key for case-insensitive comparisons (Jinja's ignore_case).
Value fold_case(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(lower(v.as_string())) : v;
}

Value attribute_or_self(const Value& item, const Value& attribute) {
  return attribute.is_none() || attribute.is_undefined() ? item : lookup_path(item, to_str(attribute));
}

// Positional arguments from index `from` on, keywords kept: the arguments passed on to a test/filter.
CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs rest;
  for (size_t i = from; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  rest.keyword = args.keyword;
  return rest;
}

// ---- filters ----

Value f_abs(const Value& v, CallArgs& args) {
  bind_args(args, "abs", {});
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  fail("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "attr", {{"name", Value(), true}});
  const std::string name = require_string(a[0], "attr() name");
  if (has_method(v, name) || (v.is_object() && !v.is_dict())) return get_attribute(v, name);
  return Value::undefined("'" + type_name(v) + " object' has no attribute '" + name + "'");
}

Value f_capitalize(const Value& v, CallArgs& args) {
  bind_args(args, "capitalize", {});
  return Value(capitalize(to_str(v)));
}

Value f_center(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "center", {{"width", Value(80)}});
  const std::string s = to_str(v);
  const int64_t width = require_int(a[0], "center() width");
  const int64_t n = static_cast<int64_t>(codepoint_count(s));
  if (width <= n) return Value(s);
  const int64_t pad = width - n;
  const int64_t left = pad / 2 + (pad & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(pad - left), ' '));
}

Value f_length(const Value& v, CallArgs& args) {
  bind_args(args, "length", {});
  return Value(length(v));
}

Value f_default(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "default", {{"default_value", Value("")}, {"boolean", Value(false)}});
  if (v.is_undefined() || (a[1].truthy() && !v.truthy())) return a[0];
  return v;
}

Value f_dictsort(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "dictsort",
                           {{"case_sensitive", Value(false)}, {"by", Value("key")}, {"reverse", Value(false)}});
  if (!v.is_dict()) fail("dictsort() requires a mapping, got " + type_name(v));
  const std::string by = to_str(a[1]);
  if (by != "key" && by != "value") fail("You can only sort by either 'key' or 'value'");
  const size_t pos = by == "key" ? 0 : 1;
  std::vector<Value> items;
  for (const auto& [k, val] : v.object().entries) items.push_back(Value::make_tuple({k, val}));
  const bool cs = a[0].truthy();
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return less_than(fold_case(x.array().items[pos], cs), fold_case(y.array().items[pos], cs));
  });
  if (a[2].truthy()) std::reverse(items.begin(), items.end());
  return Value::make_array(std::move(items));
}

Value f_escape(const Value& v, CallArgs& args) {
  bind_args(args, "escape", {});
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value f_first(const Value& v, CallArgs& args) {
  bind_args(args, "first", {});
  if (v.is_array()) {
    auto& items = v.array().items;
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    Value first = items.front();
    if (v.array().kind == ArrayKind::Generator) items.erase(items.begin());  // next() consumes one item
    return first;
  }
  const auto items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(const Value& v, CallArgs& args) {
  bind_args(args, "last", {});
  if (v.is_array() && v.array().kind == ArrayKind::Generator) fail("'generator' object is not reversible");
  if (v.is_array()) return v.array().items.empty() ? Value::undefined("No last item, sequence was empty.") : v.array().items.back();
  const auto items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

// Python float(str): surrounding whitespace allowed, "inf"/"nan" accepted; false when not a number.
bool parse_float(const std::string& text, double& out) {
  const std::string s = strip_string(text, Value::none(), true, true);
  if (s.empty()) return false;
  std::string cleaned;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return false;
      continue;
    }
    cleaned += s[i];
  }
  const std::string low = lower(cleaned);
  const std::string body = low[0] == '+' || low[0] == '-' ? low.substr(1) : low;
  if (body == "inf" || body == "infinity" || body == "nan") {
    out = body == "nan" ? std::nan("") : HUGE_VAL;
    if (low[0] == '-') out = -out;
    return true;
  }
  if (body.empty() || !(std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.')) return false;
  if (body.find_first_of("xp") != std::string::npos) return false;  // strtod's hex floats are not Python's
  char* end = nullptr;
  out = std::strtod(cleaned.c_str(), &end);
  return end == cleaned.c_str() + cleaned.size();
}

Value f_float(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "float", {{"default", Value(0.0)}});
  if (v.is_undefined()) fail(v.undefined_hint());
  if (v.is_number()) return Value(v.as_double());
  double d = 0;
  if (v.is_string() && parse_float(v.as_string(), d)) return Value(d);
  return a[0];
}

bool parse_int(const std::string& text, int64_t base, int64_t& out) {
  std::string s = strip_string(text, Value::none(), true, true);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s = s.substr(1);
  }
  if (s.size() > 2 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 0x20);
    if ((p == 'x' && (base == 16 || base == 0)) || (p == 'o' && (base == 8 || base == 0)) || (p == 'b' && (base == 2 || base == 0))) {
      base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
      s = s.substr(2);
      if (!s.empty() && s[0] == '_') s = s.substr(1);
    }
  }
  if (base == 0) base = 10;
  if (s.empty() || s.front() == '_' || s.back() == '_' || s.find("__") != std::string::npos) return false;
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(s.c_str(), &end, static_cast<int>(base));
  if (end != s.c_str() + s.size() || s[0] == '+' || s[0] == '-' || errno == ERANGE) return false;
  out = negative ? -value : value;
  return true;
}

Value f_int(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "int", {{"default", Value(0)}, {"base", Value(10)}});
  if (v.is_undefined()) fail(v.undefined_hint());
  if (v.is_float()) {
    if (!std::isfinite(v.as_double())) return a[0];
    return Value(static_cast<int64_t>(std::trunc(v.as_double())));
  }
  if (v.is_number()) return Value(v.as_int());
  if (v.is_string()) {
    int64_t i = 0;
    if (parse_int(v.as_string(), require_int(a[1], "int() base"), i)) return Value(i);
    double d = 0;
    if (parse_float(v.as_string(), d) && std::isfinite(d)) return Value(static_cast<int64_t>(std::trunc(d)));
  }
  return a[0];
}

Value f_format(const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty())
    fail("format() can't handle positional and keyword arguments at the same time");
  if (!args.keyword.empty()) {
    Value mapping = Value::make_object();
    for (const auto& [k, val] : args.keyword) mapping.object().set(Value(k), val);
    return Value(percent_format(to_str(v), mapping));
  }
  return Value(percent_format(to_str(v), Value::make_tuple(args.positional)));
}

Value f_indent(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "indent", {{"width", Value(4)}, {"first", Value(false)}, {"blank", Value(false)}});
  if (v.is_undefined()) fail(v.undefined_hint());
  if (!v.is_string()) fail("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
  const std::string indention = a[0].is_string() ? a[0].as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, require_int(a[0], "indent() width"))), ' ');
  const auto lines = split_lines(to_str(v) + "\n");
  std::string rv;
  if (a[2].truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i == 0) rv = lines[0];
      else rv += "\n" + (lines[i].empty() ? lines[i] : indention + lines[i]);
    }
  }
  if (a[1].truthy()) rv = indention + rv;
  return Value(std::move(rv));
}

Value f_items(const Value& v, CallArgs& args) {
  bind_args(args, "items", {});
  if (v.is_undefined()) return Value::make_array({}, ArrayKind::Generator);
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> items;
  for (const auto& [k, val] : v.object().entries) items.push_back(Value::make_tuple({k, val}));
  return Value::make_array(std::move(items), ArrayKind::Generator);
}

Value f_join(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "join", {{"d", Value("")}, {"attribute", Value::none()}});
  const std::string sep = to_str(a[0]);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    out += to_str(attribute_or_self(item, a[1]));
    first = false;
  }
  return Value(std::move(out));
}

Value f_list(const Value& v, CallArgs& args) {
  bind_args(args, "list", {});
  return Value::make_array(iterate(v));
}

Value f_lower(const Value& v, CallArgs& args) {
  bind_args(args, "lower", {});
  return Value(lower(to_str(v)));
}

Value f_upper(const Value& v, CallArgs& args) {
  bind_args(args, "upper", {});
  return Value(upper(to_str(v)));
}

Value f_map(const Value& v, CallArgs& args) {
  std::vector<Value> out;
  const auto attr = std::find_if(args.keyword.begin(), args.keyword.end(), [](const auto& kw) { return kw.first == "attribute"; });
  if (attr != args.keyword.end()) {
    const auto a = bind_args(args, "map", {{"attribute", Value(), true}, {"default", Value()}});
    for (const Value& item : iterate(v)) {
      Value x = lookup_path(item, to_str(a[0]));
      out.push_back(x.is_undefined() && !a[1].is_undefined() ? a[1] : x);
    }
    return Value::make_array(std::move(out), ArrayKind::Generator);
  }
  if (args.positional.empty()) fail("map requires a filter argument");
  const std::string name = require_string(args.positional[0], "map() filter name");
  const FilterFn filter = find_filter(name);
  if (!filter) fail("No filter named '" + name + "'.");
  for (const Value& item : iterate(v)) {
    CallArgs rest = rest_args(args, 1);
    out.push_back(filter(item, rest));
  }
  return Value::make_array(std::move(out), ArrayKind::Generator);
}

Value min_max(const Value& v, CallArgs& args, bool want_max) {
  const auto a = bind_args(args, want_max ? "max" : "min", {{"case_sensitive", Value(false)}, {"attribute", Value::none()}});
  const auto items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const Value* best = &items[0];
  for (const Value& item : items) {
    const Value x = fold_case(attribute_or_self(item, a[1]), a[0].truthy());
    const Value y = fold_case(attribute_or_self(*best, a[1]), a[0].truthy());
    if (want_max ? less_than(y, x) : less_than(x, y)) best = &item;
  }
  return *best;
}

Value f_max(const Value& v, CallArgs& args) { return min_max(v, args, true); }
Value f_min(const Value& v, CallArgs& args) { return min_max(v, args, false); }

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Value select_items(const Value& v, CallArgs& args, bool by_attribute, bool keep_if) {
  const size_t test_pos = by_attribute ? 1 : 0;
  if (by_attribute && args.positional.empty()) fail("selectattr/rejectattr require an attribute name");
  TestFn test = nullptr;
  if (args.positional.size() > test_pos) {
    const std::string name = require_string(args.positional[test_pos], "test name");
    test = find_test(name);
    if (!test) fail("No test named '" + name + "'.");
  }
  std::vector<Value> out;
  for (const Value& item : iterate(v)) {
    const Value x = by_attribute ? lookup_path(item, to_str(args.positional[0])) : item;
    CallArgs rest = rest_args(args, test_pos + 1);
    const bool passed = test ? test(x, rest) : x.truthy();
    if (passed == keep_if) out.push_back(item);
  }
  return Value::make_array(std::move(out), ArrayKind::Generator);
}

Value f_select(const Value& v, CallArgs& args) { return select_items(v, args, false, true); }
Value f_reject(const Value& v, CallArgs& args) { return select_items(v, args, false, false); }
Value f_selectattr(const Value& v, CallArgs& args) { return select_items(v, args, true, true); }
Value f_rejectattr(const Value& v, CallArgs& args) { return select_items(v, args, true, false); }

Value f_replace(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "replace", {{"old", Value(), true}, {"new", Value(), true}, {"count", Value::none()}});
  const int64_t count = a[2].is_none() ? -1 : require_int(a[2], "replace() count");
  return Value(replace_string(to_str(v), to_str(a[0]), to_str(a[1]), count));
}

Value f_reverse(const Value& v, CallArgs& args) {
  bind_args(args, "reverse", {});
  if (v.is_string()) {
    auto cps = to_codepoints(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(from_codepoints(cps));
  }
  // Python's reversed() gives a one-shot iterator; a generator is not reversible, so Jinja lists it first.
  const bool was_generator = v.is_array() && v.array().kind == ArrayKind::Generator;
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_array(std::move(items), was_generator ? ArrayKind::List : ArrayKind::Generator);
}

Value f_round(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "round", {{"precision", Value(0)}, {"method", Value("common")}});
  const int64_t precision = require_int(a[0], "round() precision");
  const std::string method = to_str(a[1]);
  if (method != "common" && method != "ceil" && method != "floor") fail("method must be 'common', 'ceil' or 'floor'");
  if (!v.is_number()) fail("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());  // round(int, n) stays an int for n >= 0
    if (!std::isfinite(v.as_double())) return v;
    // Python rounds the exact binary value to `precision` decimals, ties to even: so does printf.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), v.as_double());
    if (precision >= 0) return Value(std::strtod(buf, nullptr));
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value(std::nearbyint(v.as_double() / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(const Value& v, CallArgs& args) {
  bind_args(args, "safe", {});
  return Value(to_str(v));
}

Value f_sort(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "sort",
                           {{"reverse", Value(false)}, {"case_sensitive", Value(false)}, {"attribute", Value::none()}});
  auto items = iterate(v);
  const bool cs = a[1].truthy();
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = fold_case(attribute_or_self(x, a[2]), cs);
    const Value ky = fold_case(attribute_or_self(y, a[2]), cs);
    return a[0].truthy() ? less_than(ky, kx) : less_than(kx, ky);
  });
  return Value::make_array(std::move(items));
}

Value f_string(const Value& v, CallArgs& args) {
  bind_args(args, "string", {});
  return v.is_string() ? v : Value(to_str(v));
}

Value f_sum(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "sum", {{"attribute", Value::none()}, {"start", Value(0)}});
  Value total = a[1];
  for (const Value& item : iterate(v)) total = binary_op(BinaryOp::Add, total, attribute_or_self(item, a[0]));
  return total;
}

Value f_title(const Value& v, CallArgs& args) {
  bind_args(args, "title", {});
  // Jinja splits before runs of whitespace or ([{<- and capitalizes each piece.
  const std::string s = to_str(v);
  std::string out;
  bool at_start = true;
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next_codepoint(s, i);
    const bool separator = is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string one;
    append_utf8(one, cp);
    out += separator ? one : at_start ? upper(one) : lower(one);
    at_start = separator;
  }
  return Value(std::move(out));
}

Value f_tojson(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "tojson", {{"ensure_ascii", Value(false)}, {"indent", Value::none()},
                                            {"separators", Value::none()}, {"sort_keys", Value(false)}});
  JsonDumpOptions o;
  o.ensure_ascii = a[0].truthy();
  if (!a[1].is_none() && !a[1].is_undefined()) {
    o.indented = true;
    o.item_separator = ",";
    o.indent = a[1].is_string() ? a[1].as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, require_int(a[1], "tojson() indent"))), ' ');
  }
  if (!a[2].is_none() && !a[2].is_undefined()) {
    if (!a[2].is_array() || a[2].array().items.size() != 2) fail("tojson() separators must be a pair of strings");
    o.item_separator = require_string(a[2].array().items[0], "tojson() item separator");
    o.key_separator = require_string(a[2].array().items[1], "tojson() key separator");
  }
  o.sort_keys = a[3].truthy();
  return Value(to_json(v, o));
}

Value f_trim(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "trim", {{"chars", Value::none()}});
  return Value(strip_string(to_str(v), a[0], true, true));
}

Value f_truncate(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "truncate", {{"length", Value(255)}, {"killwords", Value(false)}, {"end", Value("...")},
                                              {"leeway", Value(5)}});
  const std::string s = to_str(v);
  const std::string end = to_str(a[2]);
  const int64_t length = require_int(a[0], "truncate() length");
  const int64_t end_len = static_cast<int64_t>(codepoint_count(end));
  if (length < end_len) fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  const auto offsets = codepoint_offsets(s);
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  if (n <= length + require_int(a[3], "truncate() leeway")) return Value(s);
  std::string head = s.substr(0, offsets[static_cast<size_t>(length - end_len)]);
  if (!a[1].truthy()) {
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return Value(head + end);
}

Value f_unique(const Value& v, CallArgs& args) {
  const auto a = bind_args(args, "unique", {{"case_sensitive", Value(false)}, {"attribute", Value::none()}});
  std::vector<Value> out, seen;
  for (const Value& item : iterate(v)) {
    const Value key = fold_case(attribute_or_self(item, a[1]), a[0].truthy());
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::make_array(std::move(out), ArrayKind::Generator);
}

Value f_wordcount(const Value& v, CallArgs& args) {
  bind_args(args, "wordcount", {});
  const std::string s = to_str(v);
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next_codepoint(s, i);
    const bool word_char = cp == '_' || is_alpha(cp) || is_digit(cp);
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value(words);
}

// ---- tests ----

bool t_boolean(const Value& v, CallArgs& a) { bind_args(a, "boolean", {}); return v.is_bool(); }
bool t_callable(const Value& v, CallArgs& a) { bind_args(a, "callable", {}); return v.is_callable(); }
bool t_defined(const Value& v, CallArgs& a) { bind_args(a, "defined", {}); return !v.is_undefined(); }
bool t_undefined(const Value& v, CallArgs& a) { bind_args(a, "undefined", {}); return v.is_undefined(); }
bool t_none(const Value& v, CallArgs& a) { bind_args(a, "none", {}); return v.is_none(); }
bool t_true(const Value& v, CallArgs& a) { bind_args(a, "true", {}); return v.is_bool() && v.as_bool(); }
bool t_false(const Value& v, CallArgs& a) { bind_args(a, "false", {}); return v.is_bool() && !v.as_bool(); }
bool t_integer(const Value& v, CallArgs& a) { bind_args(a, "integer", {}); return v.is_int(); }
bool t_float(const Value& v, CallArgs& a) { bind_args(a, "float", {}); return v.is_float(); }
bool t_number(const Value& v, CallArgs& a) { bind_args(a, "number", {}); return v.is_number(); }
bool t_string(const Value& v, CallArgs& a) { bind_args(a, "string", {}); return v.is_string(); }
bool t_mapping(const Value& v, CallArgs& a) { bind_args(a, "mapping", {}); return v.is_dict(); }
bool t_escaped(const Value& v, CallArgs& a) { bind_args(a, "escaped", {}); return false; }

bool t_iterable(const Value& v, CallArgs& a) {
  bind_args(a, "iterable", {});
  return v.is_undefined() || v.is_string() || v.is_array() || v.is_dict();
}

bool t_sequence(const Value& v, CallArgs& a) {
  bind_args(a, "sequence", {});
  return v.is_undefined() || v.is_string() || v.is_list_or_tuple() || v.is_dict();  // Undefined has len()
}

bool t_lower(const Value& v, CallArgs& a) {
  bind_args(a, "lower", {});
  CallArgs none;
  return call_method(Value(to_str(v)), "islower", none).truthy();
}

bool t_upper(const Value& v, CallArgs& a) {
  bind_args(a, "upper", {});
  CallArgs none;
  return call_method(Value(to_str(v)), "isupper", none).truthy();
}

// Jinja: value % 2 == 0 (even) / == 1 (odd); a float like 2.5 is neither.
bool t_odd_even(const Value& v, bool want_even) {
  return equals(binary_op(BinaryOp::Mod, v, Value(2)), Value(want_even ? 0 : 1));
}
bool t_even(const Value& v, CallArgs& a) { bind_args(a, "even", {}); return t_odd_even(v, true); }
bool t_odd(const Value& v, CallArgs& a) { bind_args(a, "odd", {}); return t_odd_even(v, false); }

bool t_divisibleby(const Value& v, CallArgs& a) {
  const auto b = bind_args(a, "divisibleby", {{"num", Value(), true}});
  return equals(binary_op(BinaryOp::Mod, v, b[0]), Value(0));
}

Value other(CallArgs& a, const char* name) { return bind_args(a, name, {{"other", Value(), true}})[0]; }
bool t_eq(const Value& v, CallArgs& a) { return equals(v, other(a, "eq")); }
bool t_ne(const Value& v, CallArgs& a) { return !equals(v, other(a, "ne")); }
bool t_lt(const Value& v, CallArgs& a) { return less_than(v, other(a, "lt")); }
bool t_le(const Value& v, CallArgs& a) { const Value o = other(a, "le"); return !less_than(o, v); }
bool t_gt(const Value& v, CallArgs& a) { return less_than(other(a, "gt"), v); }
bool t_ge(const Value& v, CallArgs& a) { const Value o = other(a, "ge"); return !less_than(v, o); }
bool t_in(const Value& v, CallArgs& a) { return contains(bind_args(a, "in", {{"seq", Value(), true}})[0], v); }

bool t_sameas(const Value& v, CallArgs& a) {
  const Value o = other(a, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::None:
    case Value::Kind::Undefined:
      return true;
    case Value::Kind::Bool:
    case Value::Kind::Int:
    case Value::Kind::Float:
      return equals(v, o);
    default:
      return v.identity() == o.identity();
  }
}

bool t_filter(const Value& v, CallArgs& a) {
  bind_args(a, "filter", {});
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}

bool t_test(const Value& v, CallArgs& a) {
  bind_args(a, "test", {});
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> kFilters = {
      {"abs", f_abs},           {"attr", f_attr},         {"capitalize", f_capitalize}, {"center", f_center},
      {"count", f_length},      {"d", f_default},         {"default", f_default},       {"dictsort", f_dictsort},
      {"e", f_escape},          {"escape", f_escape},     {"forceescape", f_escape},    {"first", f_first},
      {"float", f_float},       {"format", f_format},     {"indent", f_indent},         {"int", f_int},
      {"items", f_items},       {"join", f_join},         {"last", f_last},             {"length", f_length},
      {"list", f_list},         {"lower", f_lower},       {"map", f_map},               {"max", f_max},
      {"min", f_min},           {"reject", f_reject},     {"rejectattr", f_rejectattr}, {"replace", f_replace},
      {"reverse", f_reverse},   {"round", f_round},       {"safe", f_safe},             {"select", f_select},
      {"selectattr", f_selectattr}, {"sort", f_sort},     {"string", f_string},         {"sum", f_sum},
      {"title", f_title},       {"tojson", f_tojson},     {"trim", f_trim},             {"truncate", f_truncate},
      {"unique", f_unique},     {"upper", f_upper},       {"wordcount", f_wordcount},
  };
  const auto it = kFilters.find(name);
  return it == kFilters.end() ? nullptr : it->second;
}

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> kTests = {
      {"boolean", t_boolean},   {"callable", t_callable}, {"defined", t_defined},     {"undefined", t_undefined},
      {"none", t_none},         {"true", t_true},         {"false", t_false},         {"integer", t_integer},
      {"float", t_float},       {"number", t_number},     {"string", t_string},       {"mapping", t_mapping},
      {"iterable", t_iterable}, {"sequence", t_sequence}, {"lower", t_lower},         {"upper", t_upper},
      {"even", t_even},         {"odd", t_odd},           {"divisibleby", t_divisibleby}, {"escaped", t_escaped},
      {"eq", t_eq},             {"equalto", t_eq},        {"==", t_eq},               {"ne", t_ne},
      {"!=", t_ne},             {"lt", t_lt},             {"lessthan", t_lt},         {"<", t_lt},
      {"le", t_le},             {"<=", t_le},             {"gt", t_gt},               {"greaterthan", t_gt},
      {">", t_gt},              {"ge", t_ge},             {">=", t_ge},               {"in", t_in},
      {"sameas", t_sameas},     {"filter", t_filter},     {"test", t_test},
  };
  const auto it = kTests.find(name);
  return it == kTests.end() ? nullptr : it->second;
}

}  // namespace grpo::jinja
