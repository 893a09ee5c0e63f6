// Hugging Face model folders: config.json + model.safetensors, or shards listed by
// model.safetensors.index.json. Opening validates the whole checkpoint against the config; saving writes
// a complete folder next to the destination and swaps it into place, so a crash never leaves a broken
// checkpoint where a good one was.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"

namespace grpo {

// The config.json of a Hugging Face model folder, with the folder checks Checkpoint::open makes first (no
// such folder, not a folder, no config.json), without reading any tensor.
ModelConfig read_model_folder_config(const std::string& dir);

class Checkpoint {
 public:
  // Validates: every expected tensor present with the right shape and dtype F32/BF16/F16, no unknown
  // tensors, index consistent (missing shard, tensor listed in the index but absent from its shard, or
  // present in a shard but not listed). Tolerates a duplicate lm_head.weight when tied, and a missing
  // one when untied (the config is then treated as tied, see notes()).
  static Checkpoint open(const std::string& dir);

  const ModelConfig& config() const { return config_; }
  const StTensor* find(const std::string& name) const;
  // Tensor `name`'s mapped bytes, once converted, leave the process's resident set (a loader's peak holds
  // one tensor of the file, not the whole file).
  void release(const std::string& name) const;
  // The file holding tensor `name` (for error messages), or "" if absent.
  const std::string& file_of(const std::string& name) const;
  // Parameter names in HF order (expected_tensors(config())).
  std::vector<std::string> names() const;
  const std::string& dir() const { return dir_; }
  const std::vector<std::string>& files() const { return file_names_; }  // safetensors files, in order
  // Things tolerated while opening (e.g. "lm_head.weight absent: tied to the embeddings").
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::string dir_;
  ModelConfig config_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> file_names_;
  std::unordered_map<std::string, size_t> where_;  // tensor name -> index into files_
  std::vector<std::string> notes_;
};

// A rank's part of a model folder that several ranks write at once (save_checkpoint_from_parts): the file and
// the tensors (HF names, in order) it holds.
struct ModelFilePart {
  std::string file;
  std::vector<std::string> tensors;
};
// The model's tensors (expected_tensors order) split among `ranks` files of contiguous tensors balanced by
// elements: parts[r] is rank r's (no tensors: it writes no file). One file is model.safetensors; more are
// model-0000i-of-0000K.safetensors, listed by the index.
std::vector<ModelFilePart> model_file_parts(const ModelConfig& c, int ranks);

struct NamedF32 {
  std::string name;
  std::vector<int64_t> shape;
  const float* data;
};

// Writes config.json + weights (one file, or shards of at most max_shard_bytes with the index) into dir,
// atomically as a folder: written to the sibling "<dir>.partial" then swapped into place, so a crash
// mid-save leaves a previous checkpoint at dir intact. The tensors must be exactly expected_tensors(c).
// save_dtype F32 or BF16 (converted from the f32 inputs). extra_files_to_copy (e.g. tokenizer.json) are
// copied into the folder under their file names; write_more (e.g. optimizer state) writes further files
// straight into the partial folder (its argument) before it is swapped into place. Refuses to replace an
// existing non-empty folder that has no config.json (it is not a checkpoint). On any error the partial
// folder is removed and dir is untouched.
void save_checkpoint(const std::string& dir, const ModelConfig& c, const std::vector<NamedF32>& tensors,
                     DType save_dtype, int64_t max_shard_bytes = 0 /*0: one file*/,
                     const std::vector<std::string>& extra_files_to_copy = {},
                     const std::function<void(const std::string& partial_dir)>& write_more = {});
// The same folder assembled from model files the ranks wrote into stage_dir (ModelWeights::write_file_part,
// dtype save_dtype): each moved into the folder, the index written for several.
void save_checkpoint_from_parts(const std::string& dir, const ModelConfig& c, DType save_dtype,
                                const std::vector<ModelFilePart>& parts, const std::string& stage_dir,
                                const std::vector<std::string>& extra_files_to_copy = {},
                                const std::function<void(const std::string& partial_dir)>& write_more = {});

}  // namespace grpo
