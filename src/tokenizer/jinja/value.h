// Jinja values with Python semantics: undefined/None/bool/int/float/str/list/tuple/dict plus namespaces,
// loop objects and callables. Containers are shared (the sandbox is immutable, so sharing is safe);
// only namespaces are mutated, by `{% set ns.attr = ... %}`, with Python's reference semantics.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace grpo::jinja {

class Value;

// Errors raised while rendering. The interpreter adds the template line and turns them into grpo::Error.
struct TemplateFailure {
  std::string message;
  int line = 0;
};
[[noreturn]] void fail(std::string message);

// Python's list-like types. Generators (what the map/select/unique/items/reverse filters return) are
// one-shot, always true, without len() or indexing; dict views (d.keys()/values()/items()) have len() but
// no indexing.
enum class ArrayKind : uint8_t { List, Tuple, Generator, DictKeys, DictValues, DictItems };

struct ArrayData {
  std::vector<Value> items;
  ArrayKind kind = ArrayKind::List;

  bool is_tuple() const { return kind == ArrayKind::Tuple; }
  bool is_sequence() const { return kind == ArrayKind::List || kind == ArrayKind::Tuple; }  // len + indexing
};

enum class ObjectKind : uint8_t { Dict, Namespace, Loop };

// Insertion-ordered mapping (Python dicts keep insertion order; tool schemas rely on it).
struct ObjectData {
  std::vector<std::pair<Value, Value>> entries;
  ObjectKind kind = ObjectKind::Dict;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  const Value* find(const char* key) const { return find(std::string_view(key)); }
  const Value* find(const std::string& key) const { return find(std::string_view(key)); }
  void set(Value key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct CallableData {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, Array, Object, Callable };

  Value() = default;  // undefined
  Value(bool b) : kind_(Kind::Bool) { scalar_.b = b; }
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(int64_t v) : kind_(Kind::Int) { scalar_.i = v; }
  Value(double v) : kind_(Kind::Float) { scalar_.f = v; }
  Value(std::string s) : kind_(Kind::String), ptr_(std::make_shared<std::string>(std::move(s))) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(std::string_view s) : Value(std::string(s)) {}

  static Value none();
  // `hint` names what was undefined ("'x' is undefined"), reported when the value is used.
  static Value undefined(std::string hint);
  static Value make_array(std::vector<Value> items = {}, ArrayKind kind = ArrayKind::List);
  static Value make_tuple(std::vector<Value> items) { return make_array(std::move(items), ArrayKind::Tuple); }
  static Value make_object(ObjectKind kind = ObjectKind::Dict);
  static Value callable(std::string name, std::function<Value(CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_list_or_tuple() const { return kind_ == Kind::Array && array().is_sequence(); }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_dict() const { return kind_ == Kind::Object && object().kind == ObjectKind::Dict; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return scalar_.b; }
  // Integer value of an int or a bool (Python bools are ints).
  int64_t as_int() const { return kind_ == Kind::Bool ? (scalar_.b ? 1 : 0) : scalar_.i; }
  // Numeric value of an int, bool or float.
  double as_double() const { return kind_ == Kind::Float ? scalar_.f : static_cast<double>(as_int()); }
  const std::string& as_string() const { return *static_cast<const std::string*>(ptr_.get()); }
  ArrayData& array() const { return *static_cast<ArrayData*>(ptr_.get()); }
  ObjectData& object() const { return *static_cast<ObjectData*>(ptr_.get()); }
  const CallableData& callable() const { return *static_cast<const CallableData*>(ptr_.get()); }
  const void* identity() const { return ptr_.get(); }
  std::string undefined_hint() const;

  bool truthy() const;  // Python bool()

 private:
  Kind kind_ = Kind::Undefined;
  union {
    bool b;
    int64_t i;
    double f;
  } scalar_{};
  std::shared_ptr<void> ptr_;
};

// Python's type name of a value, as in error messages: 'str', 'int', 'list', 'dict', ...
std::string type_name(const Value& v);
std::string format_float(double d);    // Python repr(float): 1.0, 0.1, 1e-05, 1e+16, inf, nan
std::string to_str(const Value& v);    // Python str(); undefined prints empty
std::string repr(const Value& v);      // Python repr()
std::string repr_string(std::string_view s);
bool equals(const Value& a, const Value& b);  // Python ==
// Python ordering (<): numbers, strings, lists/tuples; throws TypeError-like failures otherwise.
bool less_than(const Value& a, const Value& b);
// len(): strings in code points, lists, dicts; fails for other types.
int64_t length(const Value& v);
// Items produced by iterating: list items, dict keys, string characters; undefined iterates empty.
// Iterating a generator consumes it, as in Python.
std::vector<Value> iterate(const Value& v);

}  // namespace grpo::jinja
