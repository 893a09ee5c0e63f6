// Internal to the config parsers (config.cpp, vl_config.cpp): typed access to the fields of one JSON object
// with errors that name the source file and the field (with its path, e.g. "text_config.rope_theta"), and
// the text-decoder field readers/writers that the causal LMs and Qwen3-VL's text_config share.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "model/config.h"

namespace grpo::config_detail {

class FieldReader {
 public:
  FieldReader(const nlohmann::json& j, std::string source, std::string prefix = "")
      : j_(j), source_(std::move(source)), prefix_(std::move(prefix)) {}

  bool has(const char* f) const { return j_.contains(f) && !j_[f].is_null(); }
  const nlohmann::json& at(const char* f) const { return j_[f]; }

  [[noreturn]] void bad(const char* f, const std::string& expected) const {
    if (!j_.contains(f)) fail("[config] ", source_, ": missing field \"", prefix_, f, "\" (expected ", expected, ")");
    fail("[config] ", source_, ": field \"", prefix_, f, "\": expected ", expected, ", got ", j_[f].dump());
  }

  // Positive integers are capped far above any real model so that tensor sizes cannot overflow int64.
  int64_t positive_int(const char* f, int64_t max = int64_t{1} << 31) const {
    if (!has(f) || !j_[f].is_number_integer() || j_[f].get<int64_t>() <= 0 || j_[f].get<int64_t>() > max)
      bad(f, cat("a positive integer <= ", max));
    return j_[f].get<int64_t>();
  }
  int64_t positive_int_or(const char* f, int64_t dflt, int64_t max = int64_t{1} << 31) const {
    return has(f) ? positive_int(f, max) : dflt;
  }
  int64_t token_id(const nlohmann::json& v, const char* f) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) bad(f, "a non-negative integer token id (or a list of them)");
    return v.get<int64_t>();
  }
  double positive_number(const char* f, double dflt) const {
    if (!has(f)) return dflt;
    if (!j_[f].is_number() || !(j_[f].get<double>() > 0)) bad(f, "a positive number");
    return j_[f].get<double>();
  }
  bool boolean(const char* f, bool dflt) const {
    if (!has(f)) return dflt;
    if (!j_[f].is_boolean()) bad(f, "true or false");
    return j_[f].get<bool>();
  }
  std::string string(const char* f, const std::string& dflt) const {
    if (!has(f)) return dflt;
    if (!j_[f].is_string()) bad(f, "a string");
    return j_[f].get<std::string>();
  }
  const std::string& source() const { return source_; }
  const std::string& prefix() const { return prefix_; }

 private:
  const nlohmann::json& j_;
  std::string source_, prefix_;
};

// Reads the decoder fields (sizes, heads, head_dim, norms, rope, dtype, special tokens) of `r` into c and
// rejects the features this engine does not implement. c.model_type must be set (it selects defaults).
// mrope: the rope field may carry Qwen3-VL's mrope_section / mrope_interleaved.
void read_text_fields(const FieldReader& r, ModelConfig& c, int64_t default_max_positions, bool mrope);
// Writes the decoder fields of c over j (keeping the spellings j already uses).
void write_text_fields(nlohmann::json& j, const ModelConfig& c);
void read_dtype(const FieldReader& r, ModelConfig& c);
void write_dtype(nlohmann::json& j, const ModelConfig& c);

// Qwen3-VL (vl_config.cpp): the whole config.json, and its writer.
ModelConfig parse_vl_config(const nlohmann::json& j, const std::string& source);
nlohmann::json vl_config_to_json(const ModelConfig& c);

}  // namespace grpo::config_detail
