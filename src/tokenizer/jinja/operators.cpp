// Arithmetic, membership and printf-style formatting with Python's rules.
#include "tokenizer/jinja/operators.h"

#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/utf8.h"

namespace grpo::jinja {

namespace {

[[noreturn]] void unsupported(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail(a.undefined_hint());
  if (b.is_undefined()) fail(b.undefined_hint());
  fail(std::string("unsupported operand type(s) for ") + binary_op_symbol(op) + ": '" + type_name(a) + "' and '" +
       type_name(b) + "'");
}

[[noreturn]] void overflow() { fail("integer overflow: the result does not fit in 64 bits"); }

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

Value repeat(const Value& seq, int64_t times) {
  constexpr int64_t kMaxItems = int64_t{1} << 28;
  const int64_t unit = seq.is_string() ? static_cast<int64_t>(seq.as_string().size())
                                       : static_cast<int64_t>(seq.array().items.size());
  if (times > 0 && unit > 0 && times > kMaxItems / unit) fail("repetition result is too large");
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < times; ++i)
    items.insert(items.end(), seq.array().items.begin(), seq.array().items.end());
  return Value::make_array(std::move(items), seq.array().kind);
}

double float_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

const char* binary_op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "**";
  }
  return "?";
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  const bool numbers = a.is_number() && b.is_number();
  const bool ints = numbers && !a.is_float() && !b.is_float();
  switch (op) {
    case BinaryOp::Add:
      if (ints) return Value(checked_add(a.as_int(), b.as_int()));
      if (numbers) return Value(a.as_double() + b.as_double());
      if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
      if (a.is_list_or_tuple() && b.is_list_or_tuple() && a.array().kind == b.array().kind) {
        std::vector<Value> items = a.array().items;
        items.insert(items.end(), b.array().items.begin(), b.array().items.end());
        return Value::make_array(std::move(items), a.array().kind);
      }
      break;
    case BinaryOp::Sub:
      if (ints) return Value(checked_sub(a.as_int(), b.as_int()));
      if (numbers) return Value(a.as_double() - b.as_double());
      break;
    case BinaryOp::Mul:
      if (ints) return Value(checked_mul(a.as_int(), b.as_int()));
      if (numbers) return Value(a.as_double() * b.as_double());
      if ((a.is_string() || a.is_list_or_tuple()) && b.is_number() && !b.is_float()) return repeat(a, b.as_int());
      if ((b.is_string() || b.is_list_or_tuple()) && a.is_number() && !a.is_float()) return repeat(b, a.as_int());
      break;
    case BinaryOp::Div:
      if (numbers) {
        if (b.as_double() == 0) fail("division by zero");
        return Value(a.as_double() / b.as_double());
      }
      break;
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod:
      if (op == BinaryOp::Mod && a.is_string()) return Value(percent_format(a.as_string(), b));
      if (numbers) {
        if (b.as_double() == 0) fail("integer division or modulo by zero");
        if (ints) {
          const int64_t x = a.as_int(), y = b.as_int();
          if (x == INT64_MIN && y == -1) overflow();
          int64_t q = x / y, m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) {
            --q;
            m += y;
          }
          return Value(op == BinaryOp::FloorDiv ? q : m);
        }
        const double x = a.as_double(), y = b.as_double();
        const double m = float_mod(x, y);
        return op == BinaryOp::Mod ? Value(m) : Value(std::round((x - m) / y));
      }
      break;
    case BinaryOp::Pow:
      if (ints && b.as_int() >= 0) {
        int64_t result = 1, base = a.as_int();
        for (int64_t e = b.as_int(); e > 0; e >>= 1) {
          if (e & 1) result = checked_mul(result, base);
          if (e > 1) base = checked_mul(base, base);
        }
        return Value(result);
      }
      if (numbers) {
        if (a.as_double() == 0 && b.as_double() < 0) fail("0.0 cannot be raised to a negative power");
        if (a.as_double() < 0 && b.as_double() != std::floor(b.as_double()))
          fail("complex results of ** are not supported");
        const double r = std::pow(a.as_double(), b.as_double());
        if (std::isinf(r) && std::isfinite(a.as_double()) && std::isfinite(b.as_double()))
          fail("(34, 'Numerical result out of range')");  // Python's OverflowError for float **
        return Value(r);
      }
      break;
  }
  unsupported(op, a, b);
}

Value negate(const Value& v) {
  if (v.is_float()) return Value(-v.as_double());
  if (v.is_number()) {
    if (v.as_int() == INT64_MIN) overflow();
    return Value(-v.as_int());
  }
  if (v.is_undefined()) fail(v.undefined_hint());
  fail("bad operand type for unary -: '" + type_name(v) + "'");
}

Value unary_plus(const Value& v) {
  if (v.is_float()) return v;
  if (v.is_number()) return Value(v.as_int());
  if (v.is_undefined()) fail(v.undefined_hint());
  fail("bad operand type for unary +: '" + type_name(v) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined:
      return false;
    case Value::Kind::String:
      if (!item.is_string())
        fail("'in <string>' requires string as left operand, not " + type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::Array: {
      auto& items = container.array().items;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!equals(items[i], item)) continue;
        // A generator is consumed up to and including the match.
        if (container.array().kind == ArrayKind::Generator) items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return true;
      }
      if (container.array().kind == ArrayKind::Generator) items.clear();
      return false;
    }
    case Value::Kind::Object:
      if (container.object().kind == ObjectKind::Dict) {
        if ((item.is_array() && !item.array().is_tuple()) || item.is_dict()) fail("unhashable type: '" + type_name(item) + "'");
        return container.object().find(item) != nullptr;
      }
      break;
    default:
      break;
  }
  fail("argument of type '" + type_name(container) + "' is not iterable");
}

namespace {

std::string pad(std::string s, int width, bool left_align, char fill = ' ') {
  const int n = static_cast<int>(codepoint_count(s));
  if (n >= width) return s;
  const std::string padding(static_cast<size_t>(width - n), fill);
  return left_align ? s + padding : padding + s;
}

std::string format_number(const std::string& flags, int width, int precision, char type, const Value& arg) {
  if (!arg.is_number()) fail(std::string("%") + type + " format: a real number is required, not " + type_name(arg));
  std::string spec = "%" + flags;
  if (width >= 0) spec += std::to_string(width);
  if (precision >= 0) {
    spec += '.';
    spec += std::to_string(precision);
  }
  char buf[512];
  if (type == 'd' || type == 'i' || type == 'u' || type == 'x' || type == 'X' || type == 'o') {
    if (arg.is_float() && (type == 'x' || type == 'X' || type == 'o'))
      fail(std::string("%") + type + " format: an integer is required, not float");
    const auto v = arg.is_float() ? static_cast<long long>(std::trunc(arg.as_double())) : static_cast<long long>(arg.as_int());
    spec += std::string("ll") + (type == 'i' || type == 'u' ? 'd' : type);
    std::snprintf(buf, sizeof buf, spec.c_str(), v);
  } else {
    spec += type;
    std::snprintf(buf, sizeof buf, spec.c_str(), arg.as_double());
  }
  return buf;
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args) {
  // Python: a tuple supplies the arguments; any other value is the one argument, and a mapping (or a list,
  // which could be one) may also go unused or serve %(key)s.
  std::vector<Value> positional;
  const bool mapping = args.is_dict();
  const bool may_go_unused = mapping || args.is_undefined() || (args.is_array() && !args.array().is_tuple());
  if (args.is_array() && args.array().is_tuple()) positional = args.array().items;
  else positional.push_back(args);
  size_t next_arg = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail("incomplete format");
    Value arg;
    bool have_arg = false;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos) fail("incomplete format key");
      if (!mapping) fail("format requires a mapping");
      const Value* v = args.object().find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (!v) fail("format key " + repr_string(fmt.substr(i + 1, close - i - 1)) + " not found");
      arg = *v;
      have_arg = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) flags += fmt[i++];
    int width = -1, precision = -1;
    while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') width = (width < 0 ? 0 : width * 10) + (fmt[i++] - '0');
    if (i < fmt.size() && fmt[i] == '.') {
      precision = 0;
      ++i;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') precision = precision * 10 + (fmt[i++] - '0');
    }
    if (i >= fmt.size()) fail("incomplete format");
    const char type = fmt[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!have_arg) {
      if (next_arg >= positional.size()) fail("not enough arguments for format string");
      arg = positional[next_arg++];
    }
    const bool left = flags.find('-') != std::string::npos;
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = type == 's' ? to_str(arg) : repr(arg);
        if (precision >= 0) {
          const auto offsets = codepoint_offsets(s);
          if (static_cast<size_t>(precision) + 1 < offsets.size()) s.resize(offsets[static_cast<size_t>(precision)]);
        }
        out += pad(std::move(s), width, left);
        break;
      }
      case 'c': {
        std::string s;
        if (arg.is_string() && codepoint_count(arg.as_string()) == 1) s = arg.as_string();
        else if (arg.is_int() && arg.as_int() >= 0 && arg.as_int() <= 0x10FFFF) append_utf8(s, static_cast<char32_t>(arg.as_int()));
        else fail("%c requires an int or a unicode character");
        out += pad(std::move(s), width, left);
        break;
      }
      case 'd': case 'i': case 'u': case 'x': case 'X': case 'o':
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
        out += format_number(flags, width, precision, type, arg);
        break;
      default:
        fail(std::string("unsupported format character '") + type + "'");
    }
  }
  if (!may_go_unused && next_arg < positional.size()) fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace grpo::jinja
