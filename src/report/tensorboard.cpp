// TensorBoard event file writer (see tensorboard.h).
#include "report/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/files.h"

namespace grpo {

namespace {

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reflected Castagnoli
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

// Protocol buffer encoding of the fields we write.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_tag(std::string& out, int field, int wire_type) { put_varint(out, static_cast<uint64_t>(field) << 3 | wire_type); }
template <typename T>
void put_fixed(std::string& out, T v) {  // little-endian (x86)
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// double -> float without undefined behaviour: values beyond float's range become +-inf.
float to_float(double x) {
  if (std::isfinite(x) && std::fabs(x) > std::numeric_limits<float>::max())
    return x > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  return static_cast<float>(x);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event { wall_time = 1 (double), step = 2 (int64) } plus the caller's other fields.
std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_tag(e, 1, 1);
  put_fixed(e, wall_time);
  put_tag(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  make_dirs(dir);
  char host[256] = "localhost";
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  path_ = cat(dir, "/events.out.tfevents.", static_cast<int64_t>(now_seconds()), ".", host, ".", ::getpid());
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) fail("[tensorboard] cannot create ", path_, ": ", std::strerror(errno));
  std::string first = event_header(now_seconds(), 0);
  put_bytes(first, 3, "brain.Event:2");
  write_record(first);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::write_scalars(int64_t step, const nlohmann::json& metrics) {
  std::string summary;
  for (const auto& [tag, value] : metrics.items()) {
    if (!value.is_number()) continue;
    std::string v;
    put_bytes(v, 1, tag);
    put_tag(v, 2, 5);
    put_fixed(v, to_float(value.get<double>()));
    put_bytes(summary, 1, v);
  }
  std::string event = event_header(now_seconds(), step);
  put_bytes(event, 5, summary);
  write_record(event);
}

void TensorBoardWriter::write_record(const std::string& data) {
  std::string header;
  put_fixed(header, static_cast<uint64_t>(data.size()));
  std::string record = header;
  put_fixed(record, masked_crc32c(header));
  record += data;
  put_fixed(record, masked_crc32c(data));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    fail("[tensorboard] cannot write ", path_, ": ", std::strerror(errno));
}

}  // namespace grpo
