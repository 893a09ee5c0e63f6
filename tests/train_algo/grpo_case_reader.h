// Test helper: reads the float tensors of /work/shared/reference/models/<variant>/grpo_case.safetensors
// (8-byte little-endian header size, JSON header, raw data) without depending on the model level.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"

namespace grpo::test {

// name -> values converted to double (F32, I64 and U8 tensors only).
inline std::map<std::string, std::vector<double>> read_reference_tensors(const std::string& path) {
  const std::string bytes = read_file(path);
  GRPO_CHECK(bytes.size() >= 8, path, ": too short for a safetensors header");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  GRPO_CHECK(8 + header_size <= bytes.size(), path, ": header size ", header_size, " past the end");
  const auto header = nlohmann::json::parse(bytes.substr(8, header_size));
  const char* data = bytes.data() + 8 + header_size;
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string dtype = info.at("dtype");
    const size_t begin = info.at("data_offsets")[0], end = info.at("data_offsets")[1];
    std::vector<double>& values = out[name];
    if (dtype == "F32") {
      for (size_t o = begin; o < end; o += 4) {
        float v;
        std::memcpy(&v, data + o, 4);
        values.push_back(v);
      }
    } else if (dtype == "I64") {
      for (size_t o = begin; o < end; o += 8) {
        int64_t v;
        std::memcpy(&v, data + o, 8);
        values.push_back(static_cast<double>(v));
      }
    } else if (dtype == "U8") {
      for (size_t o = begin; o < end; ++o) values.push_back(static_cast<uint8_t>(data[o]));
    }
  }
  return out;
}

}  // namespace grpo::test
