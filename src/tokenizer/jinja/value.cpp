// Python semantics of Jinja values: truthiness, str()/repr(), equality and ordering, len() and iteration.
#include "tokenizer/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/utf8.h"

namespace grpo::jinja {

void fail(std::string message) { throw TemplateFailure{std::move(message), 0}; }

const Value* ObjectData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* ObjectData::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void ObjectData::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.ptr_ = std::make_shared<std::string>(std::move(hint));
  return v;
}

Value Value::make_array(std::vector<Value> items, ArrayKind kind) {
  Value v;
  v.kind_ = Kind::Array;
  v.ptr_ = std::make_shared<ArrayData>(ArrayData{std::move(items), kind});
  return v;
}

Value Value::make_object(ObjectKind kind) {
  Value v;
  v.kind_ = Kind::Object;
  auto data = std::make_shared<ObjectData>();
  data->kind = kind;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.ptr_ = std::make_shared<CallableData>(CallableData{std::move(name), std::move(fn)});
  return v;
}

std::string Value::undefined_hint() const {
  if (kind_ == Kind::Undefined && ptr_) return *static_cast<const std::string*>(ptr_.get());
  return "value is undefined";
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return scalar_.b;
    case Kind::Int:
      return scalar_.i != 0;
    case Kind::Float:
      return scalar_.f != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::Array:
      return array().kind == ArrayKind::Generator || !array().items.empty();
    case Kind::Object:
      return object().kind != ObjectKind::Dict || !object().entries.empty();
    case Kind::Callable:
      return true;
  }
  return false;
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "NoneType";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::String:
      return "str";
    case Value::Kind::Array:
      switch (v.array().kind) {
        case ArrayKind::List:
          return "list";
        case ArrayKind::Tuple:
          return "tuple";
        case ArrayKind::Generator:
          return "generator";
        case ArrayKind::DictKeys:
          return "dict_keys";
        case ArrayKind::DictValues:
          return "dict_values";
        case ArrayKind::DictItems:
          return "dict_items";
      }
      return "list";
    case Value::Kind::Object:
      switch (v.object().kind) {
        case ObjectKind::Dict:
          return "dict";
        case ObjectKind::Namespace:
          return "Namespace";
        case ObjectKind::Loop:
          return "LoopContext";
      }
      return "object";
    case Value::Kind::Callable:
      return "function";
  }
  return "object";
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // "-1.2345e+02"
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c >= '0' && c <= '9') digits += c;
  const bool negative = sci[0] == '-';
  int exponent = 0;
  std::from_chars(sci.data() + e_pos + (sci[e_pos + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exponent);
  const int decpt = exponent + 1;  // digits[0:decpt] are the integer part
  const int n = static_cast<int>(digits.size());
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits[0];
  if (n > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_buf;
}

std::string repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next_codepoint(s, i);
    char buf[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x7F && cp >= 0x20) {
      out += static_cast<char>(cp);
    } else if (is_printable(cp)) {
      append_utf8(out, cp);
    } else {
      if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      else std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    }
  }
  out += quote;
  return out;
}

namespace {

std::string repr_object(const ObjectData& obj) {
  std::string out = "{";
  for (size_t i = 0; i < obj.entries.size(); ++i) {
    if (i) out += ", ";
    out += repr(obj.entries[i].first) + ": " + repr(obj.entries[i].second);
  }
  return out + "}";
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::String:
      return repr_string(v.as_string());
    case Value::Kind::Array: {
      const auto& a = v.array();
      if (a.kind == ArrayKind::Generator) return "<generator object>";  // Python adds an address
      std::string out = a.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < a.items.size(); ++i) {
        if (i) out += ", ";
        out += repr(a.items[i]);
      }
      if (a.is_tuple() && a.items.size() == 1) out += ",";
      out += a.is_tuple() ? ")" : "]";
      return a.is_sequence() ? out : type_name(v) + "(" + out + ")";
    }
    case Value::Kind::Object:
      if (v.object().kind == ObjectKind::Namespace) return "<Namespace " + repr_object(v.object()) + ">";
      if (v.object().kind == ObjectKind::Loop) {
        const Value* index = v.object().find("index");
        const Value* len = v.object().find("length");
        return "<LoopContext " + to_str(index ? *index : Value()) + "/" + to_str(len ? *len : Value()) + ">";
      }
      return repr_object(v.object());
    case Value::Kind::Undefined:
      return "Undefined";
    default:
      return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "";
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::Int:
      return std::to_string(v.as_int());
    case Value::Kind::Float:
      return format_float(v.as_double());
    case Value::Kind::String:
      return v.as_string();
    case Value::Kind::Callable:
      return "<" + v.callable().name + ">";
    default:
      return repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None:
      return true;
    case K::String:
      return a.as_string() == b.as_string();
    case K::Array: {
      const auto& x = a.array();
      const auto& y = b.array();
      if (x.kind == ArrayKind::Generator || x.kind == ArrayKind::DictValues) return a.identity() == b.identity();
      if (x.kind != y.kind || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case K::Object: {
      const auto& x = a.object();
      const auto& y = b.object();
      if (x.kind != ObjectKind::Dict || y.kind != ObjectKind::Dict) return a.identity() == b.identity();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order = code point order
  if (a.is_list_or_tuple() && b.is_list_or_tuple() && a.array().kind == b.array().kind) {
    const auto& x = a.array().items;
    const auto& y = b.array().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined()) fail((a.is_undefined() ? a : b).undefined_hint());
  fail("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return static_cast<int64_t>(codepoint_count(v.as_string()));
    case Value::Kind::Array:
      if (v.array().kind == ArrayKind::Generator) break;
      return static_cast<int64_t>(v.array().items.size());
    case Value::Kind::Object:
      if (v.object().kind == ObjectKind::Dict) return static_cast<int64_t>(v.object().entries.size());
      break;
    default:
      break;
  }
  fail("object of type '" + type_name(v) + "' has no len()");
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::Array:
      if (v.array().kind == ArrayKind::Generator) return std::move(v.array().items);  // consumed
      return v.array().items;
    case Value::Kind::String: {
      std::vector<Value> chars;
      const std::string& s = v.as_string();
      for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        next_codepoint(s, i);
        chars.emplace_back(s.substr(start, i - start));
      }
      return chars;
    }
    case Value::Kind::Object:
      if (v.object().kind == ObjectKind::Dict) {
        std::vector<Value> keys;
        keys.reserve(v.object().entries.size());
        for (const auto& entry : v.object().entries) keys.push_back(entry.first);
        return keys;
      }
      break;
    default:
      break;
  }
  fail("'" + type_name(v) + "' object is not iterable");
}

}  // namespace grpo::jinja
