// Name tables of choices: the values of an enumeration (or of a small comparable type) with their names,
// written once next to the type. Parsing, printing, the config key table's allowed values and error
// messages all read the same table. A value may have several names (synonyms such as kl and k1); the first
// one is how the value is written.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grpo {

template <typename T>
struct Named {
  T value;
  std::string_view name;
};

template <typename T, size_t N>
struct NameTable {
  using Value = T;
  std::array<Named<T>, N> entries;

  // The value called `name`, or nothing.
  constexpr std::optional<T> find(std::string_view name) const {
    for (const auto& e : entries)
      if (e.name == name) return e.value;
    return std::nullopt;
  }
  // The first name of `value` ("?" for a value without one).
  constexpr std::string_view name(const T& value) const {
    for (const auto& e : entries)
      if (e.value == value) return e.name;
    return "?";
  }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& e : entries) v.emplace_back(e.name);
    return v;
  }
  // The names as a message lists them: "a, b or c" (`last` between the last two).
  std::string listing(std::string_view last = " or ") const {
    std::string s;
    for (size_t i = 0; i < N; ++i) {
      if (i > 0) s += i + 1 == N ? last : ", ";
      s += entries[i].name;
    }
    return s;
  }
};

// name_table<E>({{E::A, "a"}, {E::B, "b"}}): a table of as many entries as listed.
template <typename T, size_t N>
constexpr NameTable<T, N> name_table(const Named<T> (&entries)[N]) {
  NameTable<T, N> t{};
  for (size_t i = 0; i < N; ++i) t.entries[i] = entries[i];
  return t;
}

}  // namespace grpo
