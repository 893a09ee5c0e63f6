// Tests of the metric loggers: TensorBoard event files read back by an independent decoder (bitwise
// CRC-32C, a hand-written protobuf reader: not the writer's code), and trainer.logger honoured exactly
// (console lines only with console, metrics.jsonl only with jsonl, event files only with tensorboard).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "report/step_logger.h"
#include "report/tensorboard.h"
#include "temp_dir.h"

using namespace grpo;
namespace fs = std::filesystem;

namespace {

// CRC-32C bit by bit (the writer uses a table).
uint32_t crc32c_bitwise(const std::string& s) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char byte : s) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

template <typename T>
T read_le(const std::string& s, size_t at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof(T));
  return v;
}

struct Field {
  int number = 0, wire = 0;
  uint64_t varint = 0;
  std::string bytes;  // wire 1, 2, 5: the raw bytes
};

std::vector<Field> parse_message(const std::string& m) {
  std::vector<Field> out;
  size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      EXPECT_LT(i, m.size());
      if (i >= m.size()) return v;
      const uint8_t b = static_cast<uint8_t>(m[i++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < m.size()) {
    const uint64_t key = varint();
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) f.varint = varint();
    else if (f.wire == 1) f.bytes = m.substr(i, 8), i += 8;
    else if (f.wire == 5) f.bytes = m.substr(i, 4), i += 4;
    else if (f.wire == 2) {
      const uint64_t n = varint();
      f.bytes = m.substr(i, n);
      i += n;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      return out;
    }
    out.push_back(f);
  }
  EXPECT_EQ(i, m.size()) << "a field runs past the message";
  return out;
}

struct Event {
  double wall_time = 0;
  int64_t step = -1;
  std::string file_version;
  std::map<std::string, float> scalars;
};

// Every record of an event file, checking lengths and both CRCs.
std::vector<Event> read_events(const std::string& path) {
  const std::string data = read_file(path);
  std::vector<Event> events;
  for (size_t at = 0; at < data.size();) {
    EXPECT_LE(at + 12, data.size());
    const uint64_t n = read_le<uint64_t>(data, at);
    EXPECT_EQ(read_le<uint32_t>(data, at + 8), mask(crc32c_bitwise(data.substr(at, 8)))) << "length CRC";
    const std::string payload = data.substr(at + 12, n);
    EXPECT_EQ(read_le<uint32_t>(data, at + 12 + n), mask(crc32c_bitwise(payload))) << "data CRC";
    at += 12 + n + 4;
    Event e;
    for (const Field& f : parse_message(payload)) {
      if (f.number == 1 && f.wire == 1) e.wall_time = read_le<double>(f.bytes, 0);
      else if (f.number == 2 && f.wire == 0) e.step = static_cast<int64_t>(f.varint);
      else if (f.number == 3 && f.wire == 2) e.file_version = f.bytes;
      else if (f.number == 5 && f.wire == 2)
        for (const Field& v : parse_message(f.bytes)) {
          EXPECT_EQ(v.number, 1);
          std::string tag;
          float value = -1;
          for (const Field& x : parse_message(v.bytes)) {
            if (x.number == 1 && x.wire == 2) tag = x.bytes;
            if (x.number == 2 && x.wire == 5) value = read_le<float>(x.bytes, 0);
          }
          e.scalars[tag] = value;
        }
      else ADD_FAILURE() << "unexpected Event field " << f.number;
    }
    events.push_back(e);
  }
  return events;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().string());
  return v;
}

}  // namespace

TEST(TensorBoard, Crc32cKnownValues) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c_bitwise("123456789"), 0xe3069283u);
  const std::string bytes("\x00\xff\x10grpo", 7);
  EXPECT_EQ(masked_crc32c(bytes), mask(crc32c_bitwise(bytes)));
}

TEST(TensorBoard, EventFilesReadBackWithAnIndependentDecoder) {
  test::TempDir dir;
  std::string path;
  {
    TensorBoardWriter w(dir.path() + "/tb");
    path = w.path();
    w.write_scalars(1, {{"critic/rewards/mean", 0.25}, {"perf/peak_rss_bytes", 123456789}, {"note", "text"},
                        {"actor/grad_norm", nullptr}});
    w.write_scalars(300, {{"critic/rewards/mean", -1.5}, {"actor/lr", 1e-6}, {"huge", 1e300}});
  }
  EXPECT_NE(fs::path(path).filename().string().find("events.out.tfevents."), std::string::npos) << path;
  const std::vector<Event> e = read_events(path);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].file_version, "brain.Event:2");
  EXPECT_GT(e[0].wall_time, 1.5e9);
  EXPECT_EQ(e[1].step, 1);
  EXPECT_EQ(e[1].scalars, (std::map<std::string, float>{{"critic/rewards/mean", 0.25f}, {"perf/peak_rss_bytes", 123456789.0f}}));
  EXPECT_EQ(e[2].step, 300);
  EXPECT_EQ(e[2].scalars.at("critic/rewards/mean"), -1.5f);
  EXPECT_EQ(e[2].scalars.at("actor/lr"), 1e-6f);
  EXPECT_TRUE(std::isinf(e[2].scalars.at("huge")));
  EXPECT_GE(e[2].wall_time, e[1].wall_time);
}

TEST(StepLogger, EachLoggerOnExactlyWhenListed) {
  unsetenv("TENSORBOARD_DIR");
  test::TempDir dir;
  const nlohmann::json m = {{"critic/rewards/mean", 0.5}, {"response_length/mean", 12.0}};
  for (const std::vector<std::string>& loggers :
       std::vector<std::vector<std::string>>{{"console"}, {"jsonl"}, {"tensorboard"}, {"console", "jsonl", "tensorboard"}, {}}) {
    std::string name = "run";
    for (const auto& l : loggers) name += "_" + l;
    StepLoggerOptions o;
    o.loggers.clear();
    for (const auto& l : loggers) o.loggers.push_back(*kLoggerNames.find(l));
    o.run_dir = dir.path() + "/" + name;
    o.project_name = "proj";
    o.experiment_name = "exp";
    make_dirs(o.run_dir);
    testing::internal::CaptureStderr();
    {
      StepLogger log(o);
      log.log(1, m, "[train] step 1/2 | " + console_fields(m, {{"reward", "critic/rewards/mean", "%.3f"}}));
      log.log(2, m, "[train] step 2/2");
    }
    const std::string printed = testing::internal::GetCapturedStderr();
    auto listed = [&](const char* l) { return std::find(loggers.begin(), loggers.end(), l) != loggers.end(); };
    EXPECT_EQ(printed.find("[train] step 1/2 | reward 0.500") != std::string::npos, listed("console")) << name << ": " << printed;
    EXPECT_EQ(file_exists(o.run_dir + "/metrics.jsonl"), listed("jsonl")) << name;
    const std::string tb = o.run_dir + "/tensorboard_log/proj/exp";
    EXPECT_EQ(fs::exists(tb), listed("tensorboard")) << name;
    if (listed("tensorboard")) {
      const auto files = files_in(tb);
      ASSERT_EQ(files.size(), 1u);
      const std::vector<Event> e = read_events(files[0]);
      ASSERT_EQ(e.size(), 3u);
      EXPECT_EQ(e[2].step, 2);
      EXPECT_EQ(e[2].scalars.size(), 2u) << "one scalar per metric per step";
    }
    if (loggers.empty()) {
      EXPECT_TRUE(printed.empty()) << printed;
    }
  }
}

TEST(StepLogger, ConsoleFieldsLeaveOutMissingMetrics) {
  const nlohmann::json m = {{"a", 1.0}, {"b", nullptr}, {"c", "x"}};
  EXPECT_EQ(console_fields(m, {{"A", "a", "%.2f"}, {"B", "b", "%.2f"}, {"C", "c", "%.2f"}, {"D", "d", "%.2f"}}),
            "A 1.00");
  EXPECT_EQ(console_fields(m, {{"B", "b", "%.2f"}}), "");
}
