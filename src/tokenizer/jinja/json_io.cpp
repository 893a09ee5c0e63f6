// Conversion of nlohmann::json to Values and Python-compatible JSON serialization (the `tojson` filter).
#include "tokenizer/jinja/json_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "tokenizer/jinja/utf8.h"

namespace grpo::jinja {

namespace {

template <typename Json>
Value convert(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      GRPO_CHECK(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                 "[jinja] input integer ", u, " does not fit in 64 bits");
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(convert(item));
      return Value::make_array(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value obj = Value::make_object();
      auto& entries = obj.object().entries;
      entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) entries.emplace_back(Value(it.key()), convert(it.value()));
      return obj;
    }
    default:
      grpo::fail("[jinja] input JSON holds a ", j.type_name(), " value; expected null, bool, number, string, array "
                 "or object");
  }
}

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (ensure_ascii && u >= 0x80) {
      size_t next = i;
      const char32_t cp = next_codepoint(s, next);
      i = next - 1;
      char buf[16];
      if (cp >= 0x10000) {
        const char32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      }
      out += buf;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return format_float(d);
}

std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String:
      return k.as_string();
    case Value::Kind::Int:
      return std::to_string(k.as_int());
    case Value::Kind::Float:
      return json_float(k.as_double());
    case Value::Kind::Bool:
      return k.as_bool() ? "true" : "false";
    case Value::Kind::None:
      return "null";
    default:
      fail("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& o, int depth) {
  auto newline = [&](int level) {
    if (!o.indented) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None:
      out += "null";
      return;
    case Value::Kind::Bool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::Int:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::Float:
      out += json_float(v.as_double());
      return;
    case Value::Kind::String:
      dump_string(out, v.as_string(), o.ensure_ascii);
      return;
    case Value::Kind::Array: {
      if (!v.array().is_sequence()) break;
      const auto& items = v.array().items;
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += o.item_separator;
        newline(depth + 1);
        dump(out, items[i], o, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Object: {
      if (v.object().kind != ObjectKind::Dict) break;
      std::vector<const std::pair<Value, Value>*> entries;
      for (const auto& e : v.object().entries) entries.push_back(&e);
      if (entries.empty()) {
        out += "{}";
        return;
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return less_than(a->first, b->first); });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += o.item_separator;
        newline(depth + 1);
        dump_string(out, json_key(entries[i]->first), o.ensure_ascii);
        out += o.key_separator;
        dump(out, entries[i]->second, o, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default:
      break;
  }
  fail("Object of type " + type_name(v) + " is not JSON serializable");
}

}  // namespace

Value from_json(const nlohmann::json& j) { return convert(j); }
Value from_json(const nlohmann::ordered_json& j) { return convert(j); }

std::string to_json(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  dump(out, v, options, 0);
  return out;
}

}  // namespace grpo::jinja
