// Flat shards of a run checkpoint written by N ranks (ZeRO): each rank writes its own range of the flat
// parameter layout, in parallel, and nothing is gathered on one rank. Two sets:
//   moments: <checkpoint>/optimizer/shard_<r>.safetensors   "m" and "v" [hi - lo] f32 (AdamW's state)
//   masters: <checkpoint>/master/shard_<r>.safetensors      "w" [hi - lo] f32 (mixed precision's f32 master
//            weights, which the checkpoint's bf16 model files round)
// each with <folder>/manifest.json {"format", "numel", "shards": [{file, lo, hi, bytes, sha256, block_bytes,
// block_sha256}]}, metadata lo, hi, numel in every file: the whole file's SHA-256 (sha256sum checks it) and
// that of each block of block_bytes (16 MiB). The shards cover [0, numel) in order. A run resumed with any
// number of ranks reads, on each rank, the parts of the shards it needs (resharding on load), after checking
// each file's size and the checksums of the blocks it reads (its header's and its range's), so a rank reads
// its own slices of the checkpoint, not every file whole. (One process, and LoRA, write optimizer.safetensors, moments
// named after the parameters: trainer_state.h.) The files are staged by every rank in <stage>/<folder>, then
// moved into the checkpoint's folder by rank 0 as it assembles it: the run folder must be on a file system
// that every rank sees.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/weights.h"

namespace grpo {

class SafetensorsFile;

// Which shards: their folder in the checkpoint, the manifest's format, the f32 tensors of each shard.
struct ShardSet {
  std::string folder;
  std::string format;
  std::vector<std::string> tensors;
};
const ShardSet& moment_shards();  // AdamW's m and v of the trained elements
const ShardSet& master_shards();  // the f32 master weights of the whole layout

// A rank's shard: elements [lo, hi) of the layout, one pointer per tensor of its set, each [hi - lo].
struct FlatShard {
  int64_t lo = 0, hi = 0;
  std::vector<const float*> data;
};

// Bytes of a checksummed block of a shard file.
constexpr int64_t kShardChecksumBlockBytes = int64_t{16} << 20;
// Writes shard `rank` into <stage_dir>/<folder> (atomically) and returns its manifest entry.
nlohmann::json write_flat_shard(const ShardSet& set, const std::string& stage_dir, int rank, const FlatShard& s,
                                int64_t numel, int64_t block_bytes = kShardChecksumBlockBytes);
// Moves the staged shard files named by `entries` into <dir>/<folder> and writes the manifest; checks that the
// entries cover [0, numel) in order and that each staged file is there.
void place_flat_shards(const ShardSet& set, const std::string& stage_dir, const std::string& dir,
                       const std::vector<nlohmann::json>& entries, int64_t numel);
// Whether the checkpoint folder holds the set (<folder>/manifest.json).
bool has_flat_shards(const ShardSet& set, const std::string& dir);

// Reads ranges of a checkpoint's shards. Errors name the manifest or the shard file: a missing or corrupt
// shard (its size when first read; the checksum of each block it reads, once; a manifest without block
// checksums, the whole file's), a manifest that does not cover [0, numel) or was written for another number
// of elements.
class FlatShardReader {
 public:
  FlatShardReader(const ShardSet& set, const std::string& dir, int64_t numel);
  ~FlatShardReader();
  // Elements [lo, hi) of each tensor of the set into out[k] [hi - lo]. The pages read are given back to the
  // system (a whole model streamed through costs no resident memory).
  void read(int64_t lo, int64_t hi, const std::vector<float*>& out);

 private:
  const SafetensorsFile& open(size_t i);
  // Checks the blocks of shard i's file that hold its bytes [begin, end) against the manifest (each once).
  void check_bytes(size_t i, int64_t begin, int64_t end);

  const ShardSet& set_;
  std::string dir_, manifest_path_;
  std::vector<nlohmann::json> entries_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;  // [entries], opened and checked on first use
  std::vector<std::vector<bool>> checked_;               // [entries][blocks]: checked against the manifest
  std::vector<int64_t> data_start_;                      // [entries]: the file offset of its tensors' bytes
};

// The f32 master shards of a checkpoint, read by parameter (the layout `layout` names their offsets), for
// ModelWeights::load_from.
class MasterShardSource final : public ParameterSource {
 public:
  MasterShardSource(const std::string& dir, const Arena& layout);
  void read(const std::string& name, int64_t numel, int64_t first, int64_t count, float* dst) override;
  void done(const std::string&) override {}

 private:
  const Arena& layout_;
  FlatShardReader reader_;
};

}  // namespace grpo
