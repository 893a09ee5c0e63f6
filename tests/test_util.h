// Helpers shared by the test suites: the reference models' folder, fresh temporary folders, substring
// checks, the relative error the reference comparisons use, and JSONL files read back.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.h"

namespace grpo::test {

// ../shared/reference/models/, with the trailing slash.
inline const std::string kReferenceModels = std::string(GRPO_SHARED_DIR) + "/reference/models/";
inline const std::string kReferenceVl = kReferenceModels + "qwen3-vl/";  // the Qwen3-VL reference model

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// <temp>/grpo_<suite>_<pid>_<name>, emptied (removed, then created unless create is false). The process id
// keeps the tests of parallel runs apart; the suite keeps the names of one binary's files apart.
inline std::string fresh_temp_dir(const std::string& suite, const std::string& name, bool create = true) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("grpo_" + suite + "_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(d);
  if (create) std::filesystem::create_directories(d);
  return d.string();
}

// max |a - b| / max |b|: the error of a against the reference b, relative to the reference's scale.
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double md = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    md = std::max(md, std::fabs(static_cast<double>(a[i]) - b[i]));
    mb = std::max(mb, std::fabs(static_cast<double>(b[i])));
  }
  return md / std::max(mb, 1e-12);
}

// The lines of a JSONL file, parsed.
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  for_each_line(path, [&](int64_t, const std::string& line) { out.push_back(nlohmann::json::parse(line)); });
  return out;
}

}  // namespace grpo::test
