// TensorBoard event files written without TensorFlow: the `tensorboard` logger of trainer.logger.
//
// An event file is a sequence of TFRecords, each
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// (mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8), each data an `Event` protocol buffer:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
// The first record carries file_version "brain.Event:2"; then one record per step with one scalar per
// metric. The few protobuf fields are encoded by hand (no protobuf dependency). Records are flushed at
// each step, so TensorBoard shows a run while it trains; a crash leaves at most a torn last record, which
// TensorBoard's reader ignores.
#pragma once
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace grpo {

// CRC-32C (Castagnoli), as TFRecord uses it, and its mask.
uint32_t crc32c(std::string_view data);
uint32_t masked_crc32c(std::string_view data);

class TensorBoardWriter {
 public:
  // Creates `dir` and a new file events.out.tfevents.<seconds>.<host>.<pid> in it.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One Event at `step` with a scalar per numeric member of `metrics` (tag = the metric name); null and
  // non-numeric members are skipped.
  void write_scalars(int64_t step, const nlohmann::json& metrics);
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace grpo
