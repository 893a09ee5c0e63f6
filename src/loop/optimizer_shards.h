// The AdamW moments of a run checkpoint written by N ranks, sharded (ZeRO): each rank writes the moments of
// its own range of the flat parameter layout, in parallel, and nothing is gathered on one rank:
//   <checkpoint>/optimizer/shard_<r>.safetensors   "m" and "v" [hi - lo] f32; metadata lo, hi, numel
//   <checkpoint>/optimizer/manifest.json           {"format", "numel", "shards": [{file, lo, hi, bytes, sha256}]}
// The shards cover [0, numel) in order. A run resumed with any number of ranks reads, on each rank, the parts
// of the shards that overlap its own range (resharding on load), after checking each file it reads against
// the manifest's size and checksum. (One process, and LoRA, write optimizer.safetensors, moments named after
// the parameters: trainer_state.h.) The files are staged by every rank in <checkpoint>.shards, then moved
// into the checkpoint's folder by rank 0 as it assembles it: the run folder must be on a file system that
// every rank sees.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace grpo {

// A rank's moments: elements [lo, hi) of the layout, m and v [hi - lo].
struct MomentShard {
  int64_t lo = 0, hi = 0;
  const float* m = nullptr;
  const float* v = nullptr;
};

// Writes shard `rank` into `stage_dir` (atomically) and returns its manifest entry.
nlohmann::json write_moment_shard(const std::string& stage_dir, int rank, const MomentShard& s, int64_t numel);
// Moves the staged shard files named by `entries` into <dir>/optimizer and writes the manifest; checks that the
// entries cover [0, numel) in order and that each staged file is there.
void place_moment_shards(const std::string& stage_dir, const std::string& dir,
                         const std::vector<nlohmann::json>& entries, int64_t numel);
// Whether the checkpoint folder holds sharded moments (optimizer/manifest.json).
bool has_moment_shards(const std::string& dir);
// Elements [lo, hi) of the moments into m and v [hi - lo], from the shards overlapping them. Errors name the
// checkpoint's manifest or the shard file: a missing or corrupt shard (size, checksum), a manifest that does not
// cover [0, numel) or was written for another number of trained elements.
void read_moment_range(const std::string& dir, int64_t lo, int64_t hi, int64_t numel, float* m, float* v);

}  // namespace grpo
