// Test helper: a fresh temporary folder removed at the end of the test, and a text-file writer.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace grpo::test {

class TempDir {
 public:
  TempDir() : owner_(::getpid()) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("grpo_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    if (::getpid() != owner_) return;  // a forked child leaves its parent's folder
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text` to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  pid_t owner_;
  std::string path_;
};

}  // namespace grpo::test
