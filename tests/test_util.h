// Helpers shared by the test suites: the reference models' folder, fresh temporary folders, substring
// checks, the relative error the reference comparisons use, JSONL files read back, and a buffer's resident
// bytes.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.h"

namespace grpo::test {

// ../shared/reference/models/, with the trailing slash.
inline const std::string kReferenceModels = std::string(GRPO_SHARED_DIR) + "/reference/models/";
inline const std::string kReferenceVl = kReferenceModels + "qwen3-vl/";  // the Qwen3-VL reference model

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Removes, when the process that made them exits, the folders fresh_temp_dir made: a suite leaves nothing
// in the temporary folder. A forked child that exits does not remove its parent's folders.
class TempDirsOfThisProcess {
 public:
  static TempDirsOfThisProcess& instance() {
    static TempDirsOfThisProcess dirs;
    return dirs;
  }
  void add(const std::filesystem::path& d) {
    if (std::find(dirs_.begin(), dirs_.end(), d) == dirs_.end()) dirs_.push_back(d);
  }
  ~TempDirsOfThisProcess() {
    if (::getpid() != owner_) return;
    std::error_code ec;
    for (const std::filesystem::path& d : dirs_) std::filesystem::remove_all(d, ec);
  }

 private:
  TempDirsOfThisProcess() : owner_(::getpid()) {}
  pid_t owner_;
  std::vector<std::filesystem::path> dirs_;
};

// <temp>/grpo_<suite>_<pid>_<name>, emptied (removed, then created unless create is false), and removed when
// the process exits. The process id keeps the tests of parallel runs apart; the suite keeps the names of
// one binary's files apart.
inline std::string fresh_temp_dir(const std::string& suite, const std::string& name, bool create = true) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("grpo_" + suite + "_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(d);
  if (create) std::filesystem::create_directories(d);
  TempDirsOfThisProcess::instance().add(d);
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

// Resident bytes of the pages [p, p + bytes) touches (mincore): a buffer's own memory, which the process's
// RSS (also moved by a sanitizer's shadow memory) does not isolate.
inline int64_t resident_bytes(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const size_t pages = (reinterpret_cast<uintptr_t>(p) + bytes - begin + page - 1) / page;
  std::vector<unsigned char> in(pages);
  if (mincore(reinterpret_cast<void*>(begin), pages * page, in.data()) != 0)
    throw std::runtime_error("mincore failed on a buffer of " + std::to_string(bytes) + " bytes");
  int64_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n * static_cast<int64_t>(page);
}

}  // namespace grpo::test
