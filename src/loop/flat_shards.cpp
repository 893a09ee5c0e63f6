// Flat shards of a run checkpoint: AdamW's moments and the f32 master weights (see flat_shards.h).
#include "loop/flat_shards.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "model/safetensors.h"

namespace grpo {

namespace fs = std::filesystem;

namespace {

std::string shard_name(int rank) { return "shard_" + std::to_string(rank) + ".safetensors"; }

// The manifest's entries, checked to cover [0, numel) in order.
std::vector<nlohmann::json> checked_entries(const ShardSet& set, const nlohmann::json& manifest, int64_t numel,
                                            const std::string& where) {
  GRPO_CHECK(manifest.is_object() && manifest.value("format", "") == set.format, where, ": \"format\" must be \"",
             set.format, "\"");
  GRPO_CHECK(manifest.contains("numel") && manifest["numel"].is_number_integer(), where,
             ": \"numel\" (an integer) missing");
  const int64_t saved = manifest["numel"].get<int64_t>();
  GRPO_CHECK(saved == numel, where, ": \"numel\" is ", saved, ", the run has ", numel,
             " elements there (another model, or a tower trained in one run and frozen in the other)");
  GRPO_CHECK(manifest.contains("shards") && manifest["shards"].is_array() && !manifest["shards"].empty(), where,
             ": \"shards\" (a non-empty list) missing");
  std::vector<nlohmann::json> out;
  int64_t next = 0;
  for (const nlohmann::json& e : manifest["shards"]) {
    const size_t i = out.size();
    GRPO_CHECK(e.is_object() && e.contains("file") && e["file"].is_string() && e.contains("lo") &&
                   e["lo"].is_number_integer() && e.contains("hi") && e["hi"].is_number_integer() &&
                   e.contains("bytes") && e["bytes"].is_number_integer() && e.contains("sha256") &&
                   e["sha256"].is_string(),
               where, ": shards[", i, "] must have file, lo, hi, bytes and sha256");
    const std::string file = e["file"].get<std::string>();
    GRPO_CHECK(file.find('/') == std::string::npos && file != ".." && !file.empty(), where, ": shards[", i, "].file \"",
               file, "\" must be a file name in the folder");
    GRPO_CHECK(e["lo"].get<int64_t>() == next && e["hi"].get<int64_t>() >= next, where, ": shards[", i, "] covers [",
               e["lo"].get<int64_t>(), ", ", e["hi"].get<int64_t>(), "), expected to start at ", next);
    next = e["hi"].get<int64_t>();
    out.push_back(e);
  }
  GRPO_CHECK(next == numel, where, ": the shards end at element ", next, ", expected ", numel);
  return out;
}

}  // namespace

const ShardSet& moment_shards() {
  static const ShardSet s{"optimizer", "grpo-zero-moments-v1", {"m", "v"}};
  return s;
}

const ShardSet& master_shards() {
  static const ShardSet s{"master", "grpo-zero-masters-v1", {"w"}};
  return s;
}

nlohmann::json write_flat_shard(const ShardSet& set, const std::string& stage_dir, int rank, const FlatShard& s,
                                int64_t numel, int64_t block_bytes) {
  const int64_t n = s.hi - s.lo;
  GRPO_CHECK(n >= 0 && s.lo >= 0 && s.hi <= numel, "[checkpoint] rank ", rank, ": ", set.folder, " range [", s.lo, ", ",
             s.hi, ") outside [0, ", numel, ")");
  GRPO_CHECK(s.data.size() == set.tensors.size(), "[checkpoint] rank ", rank, ": ", set.folder, " shard of ",
             s.data.size(), " tensors, expected ", set.tensors.size());
  make_dirs(stage_dir + "/" + set.folder);
  const std::string path = stage_dir + "/" + set.folder + "/" + shard_name(rank);
  std::vector<StTensorOut> outs;
  for (size_t k = 0; k < s.data.size(); ++k) outs.push_back({set.tensors[k], StDType::F32, {n}, s.data[k]});
  write_safetensors(path, outs,
                    {{"lo", std::to_string(s.lo)}, {"hi", std::to_string(s.hi)}, {"numel", std::to_string(numel)}});
  std::vector<std::string> blocks;
  const std::string whole = sha256_file(path, block_bytes, &blocks);
  return {{"file", shard_name(rank)},
          {"lo", s.lo},
          {"hi", s.hi},
          {"bytes", static_cast<int64_t>(fs::file_size(path))},
          {"sha256", whole},
          {"block_bytes", block_bytes},
          {"block_sha256", blocks}};
}

void place_flat_shards(const ShardSet& set, const std::string& stage_dir, const std::string& dir,
                       const std::vector<nlohmann::json>& entries, int64_t numel) {
  const nlohmann::json manifest = {{"format", set.format}, {"numel", numel}, {"shards", entries}};
  checked_entries(set, manifest, numel, "[checkpoint] the ranks' " + set.folder + " shards");
  make_dirs(dir + "/" + set.folder);
  for (const nlohmann::json& e : entries) {
    const std::string from = stage_dir + "/" + set.folder + "/" + e["file"].get<std::string>();
    GRPO_CHECK(file_exists(from), "[checkpoint] ", from,
               ": a rank's shard is not there; the run folder must be on a "
               "file system every rank sees (a shared one when the ranks run on several machines)");
    fs::rename(from, dir + "/" + set.folder + "/" + e["file"].get<std::string>());
  }
  write_file_atomic(dir + "/" + set.folder + "/manifest.json", manifest.dump(2) + "\n");
}

bool has_flat_shards(const ShardSet& set, const std::string& dir) {
  return file_exists(dir + "/" + set.folder + "/manifest.json");
}

FlatShardReader::FlatShardReader(const ShardSet& set, const std::string& dir, int64_t numel)
    : set_(set), dir_(dir), manifest_path_(dir + "/" + set.folder + "/manifest.json") {
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(read_file(manifest_path_));
  } catch (const nlohmann::json::exception& e) {
    fail("[resume] ", manifest_path_, ": not valid JSON (", e.what(), ")");
  }
  entries_ = checked_entries(set, manifest, numel, "[resume] " + manifest_path_);
  files_.resize(entries_.size());
  checked_.resize(entries_.size());
  data_start_.resize(entries_.size());
}

FlatShardReader::~FlatShardReader() = default;

const SafetensorsFile& FlatShardReader::open(size_t i) {
  if (files_[i]) return *files_[i];
  const nlohmann::json& e = entries_[i];
  const std::string file = dir_ + "/" + set_.folder + "/" + e["file"].get<std::string>();
  GRPO_CHECK(file_exists(file), "[resume] ", file, ": missing (listed in ", manifest_path_, ")");
  const int64_t bytes = static_cast<int64_t>(fs::file_size(file));
  GRPO_CHECK(bytes == e["bytes"].get<int64_t>(), "[resume] ", file, ": ", bytes, " bytes, the manifest says ",
             e["bytes"].get<int64_t>(), " (truncated or replaced)");
  if (e.contains("block_sha256")) {  // the header's blocks now, the tensors' as they are read
    GRPO_CHECK(e.contains("block_bytes") && e["block_bytes"].is_number_integer() &&
                   e["block_bytes"].get<int64_t>() > 0 && e["block_sha256"].is_array() &&
                   std::all_of(e["block_sha256"].begin(), e["block_sha256"].end(),
                               [](const nlohmann::json& h) { return h.is_string(); }) &&
                   static_cast<int64_t>(e["block_sha256"].size()) ==
                       (bytes + e["block_bytes"].get<int64_t>() - 1) / e["block_bytes"].get<int64_t>(),
               "[resume] ", manifest_path_, ": the entry of ", e["file"].get<std::string>(),
               " must have block_bytes > 0 and one block_sha256 per block of the file");
    checked_[i].assign(e["block_sha256"].size(), false);
    check_bytes(i, 0, std::min<int64_t>(bytes, 8));
    uint64_t header = 0;
    {
      std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.c_str(), "rb"), &std::fclose);
      GRPO_CHECK(f && std::fread(&header, 1, 8, f.get()) == 8, "[resume] ", file, ": cannot read its header");
    }
    GRPO_CHECK(header <= static_cast<uint64_t>(bytes - 8), "[resume] ", file, ": a header of ", header,
               " bytes in a file of ", bytes);
    data_start_[i] = 8 + static_cast<int64_t>(header);
    check_bytes(i, 0, data_start_[i]);
  } else {  // a manifest of whole-file checksums only
    const std::string sum = sha256_file(file);
    GRPO_CHECK(sum == e["sha256"].get<std::string>(), "[resume] ", file, ": SHA-256 ", sum, ", the manifest says ",
               e["sha256"].get<std::string>(), " (corrupt)");
  }
  auto f = std::make_unique<SafetensorsFile>(SafetensorsFile::open(file));
  const int64_t n = e["hi"].get<int64_t>() - e["lo"].get<int64_t>();
  for (const std::string& name : set_.tensors) {
    const StTensor* t = f->find(name);
    GRPO_CHECK(t && t->dtype == StDType::F32 && t->shape == std::vector<int64_t>{n}, "[resume] ", file, ": tensor \"",
               name, "\" must be F32 [", n, "]");
  }
  files_[i] = std::move(f);
  return *files_[i];
}

void FlatShardReader::check_bytes(size_t i, int64_t begin, int64_t end) {
  if (checked_[i].empty() || begin >= end) return;  // a whole-file checksum, checked on open
  const nlohmann::json& e = entries_[i];
  const std::string file = dir_ + "/" + set_.folder + "/" + e["file"].get<std::string>();
  const int64_t block = e["block_bytes"].get<int64_t>(), bytes = e["bytes"].get<int64_t>();
  for (int64_t b = begin / block; b * block < end; ++b) {
    if (checked_[i][static_cast<size_t>(b)]) continue;
    const int64_t at = b * block, len = std::min(block, bytes - at);
    const std::string sum = sha256_file_range(file, at, len);
    const std::string& want = e["block_sha256"][static_cast<size_t>(b)].get_ref<const std::string&>();
    GRPO_CHECK(sum == want, "[resume] ", file, ": SHA-256 ", sum, " of bytes [", at, ", ", at + len,
               "), the manifest says ", want, " (corrupt)");
    checked_[i][static_cast<size_t>(b)] = true;
  }
}

void FlatShardReader::read(int64_t lo, int64_t hi, const std::vector<float*>& out) {
  GRPO_CHECK(out.size() == set_.tensors.size(), "[resume] ", manifest_path_, ": ", out.size(),
             " outputs for shards of ", set_.tensors.size(), " tensors");
  for (size_t i = 0; i < entries_.size(); ++i) {
    const int64_t slo = entries_[i]["lo"].get<int64_t>(), shi = entries_[i]["hi"].get<int64_t>();
    const int64_t a = std::max(lo, slo), b = std::min(hi, shi);
    if (a >= b) continue;
    const SafetensorsFile& f = open(i);
    const uint8_t* data = f.tensors().front().data;  // the first byte after the header
    for (size_t k = 0; k < out.size(); ++k) {
      const StTensor* t = f.find(set_.tensors[k]);
      const uint8_t* src = t->data + (a - slo) * 4;
      const int64_t at = data_start_[i] + (src - data);
      check_bytes(i, at, at + (b - a) * 4);
      std::memcpy(out[k] + (a - lo), src, static_cast<size_t>(b - a) * 4);
      f.release(src, static_cast<size_t>(b - a) * 4);
    }
  }
}

MasterShardSource::MasterShardSource(const std::string& dir, const Arena& layout)
    : layout_(layout), reader_(master_shards(), dir, layout.numel()) {}

void MasterShardSource::read(const std::string& name, int64_t, int64_t first, int64_t count, float* dst) {
  const int64_t at = layout_.offset(name) + first;
  reader_.read(at, at + count, {dst});
}

}  // namespace grpo
