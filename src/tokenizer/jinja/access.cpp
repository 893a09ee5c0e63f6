// Attribute/item access, slicing, and the str/list/dict methods available to templates.
#include "tokenizer/jinja/access.h"

#include <algorithm>
#include <array>
#include <optional>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/utf8.h"

namespace grpo::jinja {

namespace {

constexpr std::array<std::string_view, 23> kStringMethods = {
    "split", "rsplit", "strip", "lstrip", "rstrip", "startswith", "endswith", "upper", "lower", "replace", "title",
    "capitalize", "find", "rfind", "count", "format", "join", "isdigit", "isalpha", "isalnum", "isspace", "islower",
    "isupper"};
constexpr std::array<std::string_view, 2> kListMethods = {"index", "count"};
constexpr std::array<std::string_view, 4> kDictMethods = {"items", "keys", "values", "get"};
// Python attributes that exist but that the immutable sandbox refuses (they mutate).
constexpr std::array<std::string_view, 7> kUnsafeListMethods = {"append", "extend", "insert", "pop", "remove", "clear", "sort"};
constexpr std::array<std::string_view, 5> kUnsafeDictMethods = {"pop", "popitem", "update", "setdefault", "clear"};

template <size_t N>
bool in(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string object_desc(const Value& obj) { return "'" + type_name(obj) + " object'"; }

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(object_desc(obj) + " has no attribute '" + name + "'");
}

// Python index normalization for obj[i]: returns false when out of range.
bool normalize_index(int64_t& i, int64_t n) {
  if (i < 0) i += n;
  return i >= 0 && i < n;
}

// Code point range [start, end) of s, clamped like Python's str[start:end] (used by find/count/startswith).
std::pair<size_t, size_t> byte_range(const std::string& s, const Value& start, const Value& end) {
  if (start.is_undefined() && end.is_undefined()) return {0, s.size()};
  const auto offsets = codepoint_offsets(s);
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.is_undefined() || v.is_none()) return dflt;
    if (!v.is_number() || v.is_float()) fail("slice indices must be integers or None");
    int64_t i = v.as_int();
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return std::min(i, n);
  };
  const int64_t a = clamp(start, 0), b = clamp(end, n);
  return {offsets[static_cast<size_t>(a)], offsets[static_cast<size_t>(std::max(a, b))]};
}

int64_t codepoint_index(const std::string& s, size_t byte_pos) {
  return static_cast<int64_t>(codepoint_count(std::string_view(s).substr(0, byte_pos)));
}

bool affix_match(const std::string& s, const Value& affix, const Value& start, const Value& end, bool prefix,
                 const char* method) {
  const auto [a, b] = byte_range(s, start, end);
  const std::string_view part = std::string_view(s).substr(a, b - a);
  auto test = [&](const Value& v) {
    if (!v.is_string()) fail(std::string(method) + " first arg must be str or a tuple of str, not " + type_name(v));
    const std::string& x = v.as_string();
    return x.size() <= part.size() && (prefix ? part.substr(0, x.size()) == x : part.substr(part.size() - x.size()) == x);
  };
  if (affix.is_array() && affix.array().is_tuple()) {
    for (const Value& v : affix.array().items)
      if (test(v)) return true;
    return false;
  }
  return test(affix);
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();)
    if (!pred(next_codepoint(s, i))) return false;
  return true;
}

bool cased_check(const std::string& s, bool want_lower) {
  bool any_cased = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next_codepoint(s, i);
    const bool lo = is_lower_char(cp);
    const bool up = is_upper_char(cp);
    if (want_lower ? up : lo) return false;
    any_cased = any_cased || lo || up;
  }
  return any_cased;
}

// Python str.format with automatic/explicit/named fields and !s/!r conversions (no format specs).
std::string str_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      else fail("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) fail("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size() || (field[bang + 1] != 's' && field[bang + 1] != 'r'))
        fail("unsupported conversion in format field '{" + field + "}'");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) fail("format specs are not supported: '{" + field + "}'");
    Value v;
    if (field.empty()) {
      if (auto_index >= args.positional.size()) fail("Replacement index " + std::to_string(auto_index) + " out of range");
      v = args.positional[auto_index++];
    } else if (field.size() <= 9 && std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      const size_t k = std::stoul(field);
      if (k >= args.positional.size()) fail("Replacement index " + field + " out of range");
      v = args.positional[k];
    } else {
      auto it = std::find_if(args.keyword.begin(), args.keyword.end(), [&](const auto& kw) { return kw.first == field; });
      if (it == args.keyword.end()) fail("format key '" + field + "' not given");
      v = it->second;
    }
    out += conversion == 'r' ? repr(v) : to_str(v);
  }
  return out;
}

Value call_string_method(const std::string& s, std::string_view name, CallArgs& args) {
  const std::string fn = "str." + std::string(name);
  if (name == "split" || name == "rsplit") {
    const auto a = bind_args(args, fn, {{"sep", Value::none()}, {"maxsplit", Value(-1)}});
    if (!a[1].is_number() || a[1].is_float()) fail(fn + "() maxsplit must be an integer");
    return Value::make_array(split_string(s, a[0], a[1].as_int(), name == "rsplit"));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto a = bind_args(args, fn, {{"chars", Value::none()}});
    return Value(strip_string(s, a[0], name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    const auto a = bind_args(args, fn, {{"affix", Value(), true}, {"start", Value()}, {"end", Value()}});
    return Value(affix_match(s, a[0], a[1], a[2], name == "startswith", fn.c_str()));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    bind_args(args, fn, {});
    if (name == "upper") return Value(upper(s));
    if (name == "lower") return Value(lower(s));
    return Value(name == "title" ? title_case(s) : capitalize(s));
  }
  if (name == "replace") {
    const auto a = bind_args(args, fn, {{"old", Value(), true}, {"new", Value(), true}, {"count", Value(-1)}});
    if (!a[0].is_string() || !a[1].is_string()) fail(fn + "() arguments must be str");
    if (!a[2].is_number() || a[2].is_float()) fail(fn + "() count must be an integer");
    return Value(replace_string(s, a[0].as_string(), a[1].as_string(), a[2].as_int()));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    const auto a = bind_args(args, fn, {{"sub", Value(), true}, {"start", Value()}, {"end", Value()}});
    if (!a[0].is_string()) fail(fn + "() argument must be str, not " + type_name(a[0]));
    const std::string& sub = a[0].as_string();
    const auto [lo, hi] = byte_range(s, a[1], a[2]);
    const std::string_view part = std::string_view(s).substr(lo, hi - lo);
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(codepoint_count(part)) + 1);
      int64_t n = 0;
      for (size_t p = part.find(sub); p != std::string_view::npos; p = part.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    const size_t p = name == "find" ? part.find(sub) : part.rfind(sub);
    return Value(p == std::string_view::npos ? int64_t{-1} : codepoint_index(s, lo + p));
  }
  if (name == "format") return Value(str_format(s, args));
  if (name == "join") {
    const auto a = bind_args(args, fn, {{"iterable", Value(), true}});
    std::string out;
    bool first = true;
    for (const Value& v : iterate(a[0])) {
      if (!v.is_string()) fail("sequence item: expected str instance, " + type_name(v) + " found");
      if (!first) out += s;
      out += v.as_string();
      first = false;
    }
    return Value(std::move(out));
  }
  bind_args(args, fn, {});
  if (name == "isdigit") return Value(all_chars(s, is_digit));
  if (name == "isalpha") return Value(all_chars(s, is_alpha));
  if (name == "isalnum") return Value(all_chars(s, [](char32_t c) { return is_alpha(c) || is_digit(c); }));
  if (name == "isspace") return Value(all_chars(s, is_space));
  if (name == "islower") return Value(cased_check(s, true));
  return Value(cased_check(s, false));  // isupper
}

Value call_list_method(const Value& list, std::string_view name, CallArgs& args) {
  const std::string fn = type_name(list) + "." + std::string(name);
  const auto a = bind_args(args, fn, {{"value", Value(), true}});
  const auto& items = list.array().items;
  if (name == "count")
    return Value(static_cast<int64_t>(std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, a[0]); })));
  for (size_t i = 0; i < items.size(); ++i)
    if (equals(items[i], a[0])) return Value(static_cast<int64_t>(i));
  fail(repr(a[0]) + " is not in list");
}

Value call_dict_method(const Value& dict, std::string_view name, CallArgs& args) {
  const std::string fn = "dict." + std::string(name);
  const auto& entries = dict.object().entries;
  if (name == "get") {
    const auto a = bind_args(args, fn, {{"key", Value(), true}, {"default", Value::none()}});
    const Value* v = dict.object().find(a[0]);
    return v ? *v : a[1];
  }
  bind_args(args, fn, {});
  std::vector<Value> out;
  out.reserve(entries.size());
  for (const auto& [k, v] : entries) {
    if (name == "items") out.push_back(Value::make_tuple({k, v}));
    else out.push_back(name == "keys" ? k : v);
  }
  return Value::make_array(std::move(out), name == "items"  ? ArrayKind::DictItems
                                           : name == "keys" ? ArrayKind::DictKeys
                                                            : ArrayKind::DictValues);
}

}  // namespace

bool has_method(const Value& obj, std::string_view name) {
  if (obj.is_string()) return in(kStringMethods, name);
  if (obj.is_array()) return obj.array().is_sequence() && in(kListMethods, name);
  if (obj.is_dict()) return in(kDictMethods, name);
  return false;
}

Value call_method(const Value& obj, std::string_view name, CallArgs& args) {
  if (obj.is_string()) return call_string_method(obj.as_string(), name, args);
  if (obj.is_array()) return call_list_method(obj, name, args);
  return call_dict_method(obj, name, args);
}

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail(obj.undefined_hint());
  if (has_method(obj, name)) {
    return Value::callable("built-in method " + name + " of " + type_name(obj) + " object",
                           [obj, name](CallArgs& args) { return call_method(obj, name, args); });
  }
  if ((obj.is_array() && obj.array().kind == ArrayKind::List && in(kUnsafeListMethods, name)) ||
      (obj.is_dict() && in(kUnsafeDictMethods, name)))
    return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe");
  if (obj.is_object()) {
    if (const Value* v = obj.object().find(std::string_view(name))) return *v;
  }
  return no_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail(obj.undefined_hint());
  const bool int_key = key.is_number() && !key.is_float();
  if (obj.is_string() && int_key) {
    const std::string& s = obj.as_string();
    int64_t i = key.as_int();
    if (is_ascii(s)) {
      if (normalize_index(i, static_cast<int64_t>(s.size()))) return Value(s.substr(static_cast<size_t>(i), 1));
    } else {
      const auto offsets = codepoint_offsets(s);
      if (normalize_index(i, static_cast<int64_t>(offsets.size()) - 1)) {
        const size_t at = offsets[static_cast<size_t>(i)];
        return Value(s.substr(at, offsets[static_cast<size_t>(i) + 1] - at));
      }
    }
  } else if (obj.is_list_or_tuple() && int_key) {
    int64_t i = key.as_int();
    const auto& items = obj.array().items;
    if (normalize_index(i, static_cast<int64_t>(items.size()))) return items[static_cast<size_t>(i)];
  } else if (obj.is_dict()) {
    if (const Value* v = obj.object().find(key)) return *v;
  }
  if (key.is_string()) {
    Value attr = get_attribute(obj, key.as_string());
    if (!attr.is_undefined()) return attr;
  }
  return Value::undefined(object_desc(obj) + " has no element " + repr(key));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail(obj.undefined_hint());
  // Jinja slices with Python's own subscription, so slicing anything else is a TypeError.
  if (obj.is_dict()) fail("unhashable type: 'slice'");
  if (!obj.is_string() && !obj.is_list_or_tuple()) fail("'" + type_name(obj) + "' object is not subscriptable");
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_number() || v.is_float()) fail(std::string("slice ") + what + " must be an integer or None");
    return v.as_int();
  };
  const auto step_v = as_index(step, "step");
  const int64_t st = step_v.value_or(1);
  if (st == 0) fail("slice step cannot be zero");
  const bool ascii = obj.is_string() && is_ascii(obj.as_string());
  std::vector<size_t> offsets;
  if (obj.is_string() && !ascii) offsets = codepoint_offsets(obj.as_string());
  const int64_t n = obj.is_array() ? static_cast<int64_t>(obj.array().items.size())
                    : ascii      ? static_cast<int64_t>(obj.as_string().size())
                                 : static_cast<int64_t>(offsets.size()) - 1;
  auto bound = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v;
    if (i < 0) i = std::max<int64_t>(i + n, st < 0 ? -1 : 0);
    return std::min(i, st < 0 ? n - 1 : n);
  };
  const int64_t a = bound(as_index(start, "start"), st < 0 ? n - 1 : 0);
  const int64_t b = bound(as_index(stop, "stop"), st < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = a; st > 0 ? i < b : i > b; i += st) picks.push_back(i);
  if (obj.is_array()) {
    std::vector<Value> items;
    items.reserve(picks.size());
    for (int64_t i : picks) items.push_back(obj.array().items[static_cast<size_t>(i)]);
    return Value::make_array(std::move(items), obj.array().kind);
  }
  const std::string& s = obj.as_string();
  std::string out;
  out.reserve(picks.size());
  for (int64_t i : picks) {
    if (ascii) out += s[static_cast<size_t>(i)];
    else out.append(s, offsets[static_cast<size_t>(i)], offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)]);
  }
  return Value(std::move(out));
}

std::vector<Value> split_string(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (sep.is_none() || sep.is_undefined()) {
    // Runs of whitespace separate; leading/trailing whitespace yields no empty parts.
    auto cps = to_codepoints(s);
    if (from_right) std::reverse(cps.begin(), cps.end());
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && is_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t end = cps.size();
        while (end > i && is_space(cps[end - 1])) --end;
        std::vector<char32_t> rest(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(end));
        if (from_right) std::reverse(rest.begin(), rest.end());
        parts.push_back(from_codepoints(rest));
        break;
      }
      const size_t start = i;
      while (i < cps.size() && !is_space(cps[i])) ++i;
      std::vector<char32_t> word(cps.begin() + static_cast<std::ptrdiff_t>(start), cps.begin() + static_cast<std::ptrdiff_t>(i));
      if (from_right) std::reverse(word.begin(), word.end());
      parts.push_back(from_codepoints(word));
    }
    if (from_right) std::reverse(parts.begin(), parts.end());
  } else {
    if (!sep.is_string()) fail("must be str or None, not " + type_name(sep));
    const std::string& d = sep.as_string();
    if (d.empty()) fail("empty separator");
    if (!from_right) {
      size_t start = 0;
      for (size_t p = s.find(d); p != std::string::npos && (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit);
           p = s.find(d, start)) {
        parts.push_back(s.substr(start, p - start));
        start = p + d.size();
      }
      parts.push_back(s.substr(start));
    } else {
      size_t end = s.size();
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        if (end < d.size()) break;
        const size_t p = s.rfind(d, end - d.size());
        if (p == std::string::npos) break;
        parts.push_back(s.substr(p + d.size(), end - p - d.size()));
        end = p;
      }
      parts.push_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
  }
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return out;
}

std::string strip_string(const std::string& s, const Value& chars, bool left, bool right) {
  if (!chars.is_none() && !chars.is_undefined() && !chars.is_string())
    fail("strip arg must be None or str, not " + type_name(chars));
  const bool whitespace = !chars.is_string();
  const std::vector<char32_t> set = whitespace ? std::vector<char32_t>{} : to_codepoints(chars.as_string());
  auto strip_cp = [&](char32_t cp) { return whitespace ? is_space(cp) : std::find(set.begin(), set.end(), cp) != set.end(); };
  const auto offsets = codepoint_offsets(s);
  size_t a = 0, b = offsets.size() - 1;  // code point range [a, b)
  auto cp_at = [&](size_t k) {
    size_t i = offsets[k];
    return next_codepoint(s, i);
  };
  if (left)
    while (a < b && strip_cp(cp_at(a))) ++a;
  if (right)
    while (b > a && strip_cp(cp_at(b - 1))) --b;
  return s.substr(offsets[a], offsets[b] - offsets[a]);
}

std::string replace_string(const std::string& s, const std::string& old, const std::string& replacement, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {  // Python inserts the replacement around every code point
    size_t i = 0;
    while (i <= s.size()) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (i == s.size()) break;
      const size_t start = i;
      next_codepoint(s, i);
      out.append(s, start, i - start);
    }
    return out;
  }
  size_t start = 0;
  for (size_t p = s.find(old); p != std::string::npos && (count < 0 || done < count); p = s.find(old, start)) {
    out.append(s, start, p - start);
    out += replacement;
    start = p + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string title_case(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool previous_cased = false;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t cp = next_codepoint(s, i);
    out += previous_cased ? lower(std::string_view(s).substr(start, i - start)) : title_char(cp);
    previous_cased = is_cased(cp);
  }
  return out;
}

std::string capitalize(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  if (!s.empty()) out += title_char(next_codepoint(s, i));
  return out + lower(std::string_view(s).substr(i));
}

}  // namespace grpo::jinja
