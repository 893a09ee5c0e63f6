// File helpers: whole-file reads, atomic writes (temp file + fsync + rename, so a crash never leaves a
// half-written file in place of a good one), read-only memory maps, and JSONL line reading.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace grpo {

std::string read_file(const std::string& path);
void write_file_atomic(const std::string& path, std::string_view contents);
// Streams data into `path` atomically: `fill` writes into the FILE*, then fsync + rename.
void write_file_atomic_with(const std::string& path, const std::function<void(std::FILE*)>& fill);
bool file_exists(const std::string& path);
void make_dirs(const std::string& path);

class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Gives back the memory of the whole pages of [p, p + bytes) (a part of this mapping that has been read):
  // they leave the process's resident set and are read from the file again if touched. No-op outside it.
  void release(const uint8_t* p, size_t bytes) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Calls fn(line_number starting at 1, line) for each line of a text file ("-" = stdin); skips
// nothing: callers decide what a blank line means.
void for_each_line(const std::string& path, const std::function<void(int64_t, const std::string&)>& fn);

}  // namespace grpo
