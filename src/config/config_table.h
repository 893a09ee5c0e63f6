// Private to grpo/config*.cpp: the typed table of configuration keys (name, type, allowed values, doc,
// and where the value lives in Config). Defaults are the member initialisers of the Config structs.
#pragma once
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace grpo::config_detail {

// Choice: an enum field (or a small comparable type) read and written by the names of its table
// (core/names.h); ChoiceList: a list of those.
enum class KeyType { Int, Float, Bool, String, StringList, Choice, ChoiceList, FloatList, RewardFunctions, Mapping };

// What a value may be: a numeric interval (with open/closed ends) plus extra allowed numbers such as
// -1 meaning "off"; a set of choices for strings (and for each item of a string list); a fixed length
// for float lists.
struct Allowed {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false, max_open = false;
  std::vector<double> also;
  std::vector<std::string> choices;
  int64_t length = -1;  // float lists: exact number of items
  bool scalar_as_list = false;  // string lists: a single text value reads as a list of one
  // Choice keys: the field set from names (false when one is not in `choices`, the field then unchanged),
  // and its value as names (one for a Choice).
  std::function<bool(void* field, const std::vector<std::string>& names)> set_names;
  std::function<std::vector<std::string>(const void* field)> get_names;

  Allowed or_value(double v) const {
    Allowed a = *this;
    a.also.push_back(v);
    return a;
  }
  Allowed with_length(int64_t n) const {
    Allowed a = *this;
    a.length = n;
    return a;
  }
  bool accepts(double v) const;
  bool accepts(const std::string& s) const;
  std::string describe(KeyType type) const;
};

Allowed any();
Allowed at_least(double v);
Allowed greater_than(double v);
Allowed between(double lo, double hi);            // [lo, hi]
Allowed open_closed(double lo, double hi);        // (lo, hi]
Allowed closed_open(double lo, double hi);        // [lo, hi)
// A choice key's allowed values: the names of `table` (a NameTable of core/names.h), all of them or those
// whose value `keep` accepts.
template <typename Table>
struct ChoiceOf {
  const Table* table;
  bool (*keep)(const typename Table::Value&) = nullptr;
};
template <typename Table>
ChoiceOf<Table> choice(const Table& table, bool (*keep)(const typename Table::Value&) = nullptr) {
  return {&table, keep};
}

struct KeySpec {
  std::string name;
  KeyType type;
  Allowed allowed;
  std::string doc;
  bool required = false;  // must be set (no usable default)
  std::function<void*(Config&)> field;
};

// Every key, grouped by section (keys of one section are contiguous, in struct order).
const std::vector<KeySpec>& key_specs();
const KeySpec* find_key(const std::string& name);
// Input-only alias of a key or section prefix -> canonical name (unchanged when not an alias).
std::string resolve_alias(const std::string& name);
bool is_section(const std::string& prefix);  // some key starts with prefix + "."

std::string type_name(KeyType type);
std::string format_double(double v);  // shortest text that reads back to the same double
// The current value of a key as text (YAML flow syntax for lists).
std::string value_text(const KeySpec& spec, Config& config);

}  // namespace grpo::config_detail
