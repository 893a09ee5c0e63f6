// Byte encoding of what ranks send each other in blobs (Communicator::all_gather_bytes): plain values,
// vectors of plain values and strings appended to a string, read back in the same order. A reader that
// runs past its blob is an Error, never a wild read.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace grpo::comm {

class ByteWriter {
 public:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    out_.append(s.data(), s.size());
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

class ByteReader {
 public:
  ByteReader(std::string_view in, const char* what) : in_(in), what_(what) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  template <typename T>
  std::vector<T> get_vector() {
    const uint64_t n = get<uint64_t>();
    GRPO_CHECK(n <= (in_.size() - at_) / sizeof(T), "[comm] ", what_, ": a vector of ", n, " elements does not fit");
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  std::string get_string() {
    const uint64_t n = get<uint64_t>();
    return std::string(take(n), n);
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const char* take(uint64_t n) {
    GRPO_CHECK(n <= in_.size() - at_, "[comm] ", what_, ": truncated message (", in_.size(), " bytes, ", at_ + n,
               " needed)");
    const char* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view in_;
  const char* what_;
  size_t at_ = 0;
};

}  // namespace grpo::comm
