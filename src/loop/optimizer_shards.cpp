// Sharded AdamW moments of a run checkpoint (see optimizer_shards.h).
#include "loop/optimizer_shards.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "model/safetensors.h"

namespace grpo {

namespace fs = std::filesystem;

namespace {
constexpr const char* kFormat = "grpo-zero-moments-v1";

std::string shard_name(int rank) { return "shard_" + std::to_string(rank) + ".safetensors"; }

// The manifest's entries, checked to cover [0, numel) in order.
std::vector<nlohmann::json> checked_entries(const nlohmann::json& manifest, int64_t numel, const std::string& where) {
  GRPO_CHECK(manifest.is_object() && manifest.value("format", "") == kFormat, where, ": \"format\" must be \"", kFormat,
             "\"");
  GRPO_CHECK(manifest.contains("numel") && manifest["numel"].is_number_integer(), where,
             ": \"numel\" (an integer) missing");
  const int64_t saved = manifest["numel"].get<int64_t>();
  GRPO_CHECK(saved == numel, where, ": \"numel\" is ", saved, ", the run trains ", numel,
             " elements (another model, or a tower trained in one run and frozen in the other)");
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

nlohmann::json write_moment_shard(const std::string& stage_dir, int rank, const MomentShard& s, int64_t numel) {
  const int64_t n = s.hi - s.lo;
  GRPO_CHECK(n >= 0 && s.lo >= 0 && s.hi <= numel, "[checkpoint] rank ", rank, ": moment range [", s.lo, ", ", s.hi,
             ") outside [0, ", numel, ")");
  const std::string path = stage_dir + "/" + shard_name(rank);
  write_safetensors(path, {{"m", StDType::F32, {n}, s.m}, {"v", StDType::F32, {n}, s.v}},
                    {{"lo", std::to_string(s.lo)}, {"hi", std::to_string(s.hi)}, {"numel", std::to_string(numel)}});
  return {{"file", shard_name(rank)},
          {"lo", s.lo},
          {"hi", s.hi},
          {"bytes", static_cast<int64_t>(fs::file_size(path))},
          {"sha256", sha256_file(path)}};
}

void place_moment_shards(const std::string& stage_dir, const std::string& dir,
                         const std::vector<nlohmann::json>& entries, int64_t numel) {
  const nlohmann::json manifest = {{"format", kFormat}, {"numel", numel}, {"shards", entries}};
  checked_entries(manifest, numel, "[checkpoint] the ranks' shards");
  make_dirs(dir + "/optimizer");
  for (const nlohmann::json& e : entries) {
    const std::string from = stage_dir + "/" + e["file"].get<std::string>();
    GRPO_CHECK(file_exists(from), "[checkpoint] ", from,
               ": a rank's moments are not there; the run folder must be on a "
               "file system every rank sees (a shared one when the ranks run on several machines)");
    fs::rename(from, dir + "/optimizer/" + e["file"].get<std::string>());
  }
  write_file_atomic(dir + "/optimizer/manifest.json", manifest.dump(2) + "\n");
}

bool has_moment_shards(const std::string& dir) { return file_exists(dir + "/optimizer/manifest.json"); }

void read_moment_range(const std::string& dir, int64_t lo, int64_t hi, int64_t numel, float* m, float* v) {
  const std::string path = dir + "/optimizer/manifest.json";
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail("[resume] ", path, ": not valid JSON (", e.what(), ")");
  }
  for (const nlohmann::json& e : checked_entries(manifest, numel, "[resume] " + path)) {
    const int64_t slo = e["lo"].get<int64_t>(), shi = e["hi"].get<int64_t>();
    const int64_t a = std::max(lo, slo), b = std::min(hi, shi);
    if (a >= b) continue;
    const std::string file = dir + "/optimizer/" + e["file"].get<std::string>();
    GRPO_CHECK(file_exists(file), "[resume] ", file, ": missing (listed in ", path, ")");
    const int64_t bytes = static_cast<int64_t>(fs::file_size(file));
    GRPO_CHECK(bytes == e["bytes"].get<int64_t>(), "[resume] ", file, ": ", bytes, " bytes, the manifest says ",
               e["bytes"].get<int64_t>(), " (truncated or replaced)");
    const std::string sum = sha256_file(file);
    GRPO_CHECK(sum == e["sha256"].get<std::string>(), "[resume] ", file, ": SHA-256 ", sum, ", the manifest says ",
               e["sha256"].get<std::string>(), " (corrupt)");
    const SafetensorsFile f = SafetensorsFile::open(file);
    for (const auto& [name, out] : {std::pair<const char*, float*>{"m", m}, {"v", v}}) {
      const StTensor* t = f.find(name);
      GRPO_CHECK(t && t->dtype == StDType::F32 && t->shape == std::vector<int64_t>{shi - slo}, "[resume] ", file,
                 ": tensor \"", name, "\" must be F32 [", shi - slo, "]");
      std::memcpy(out + (a - lo), t->data + (a - slo) * 4, static_cast<size_t>(b - a) * 4);
    }
  }
}

}  // namespace grpo
