// A packed variable-length batch: sequences laid end to end with no padding. Positions restart at 0
// for each sequence; targets[t] is the next token inside the same sequence (-1 for each last token).
// For Qwen3-VL the batch also carries the pictures of its <|image_pad|> runs (pixel rows and grids, in order
// of appearance); the model derives the M-RoPE positions from the ids and the grids.
#pragma once
#include <cstdint>
#include <vector>

#include "image/picture.h"  // ImageGrid

namespace grpo {

struct PackedBatch {
  std::vector<int32_t> ids;         // [T]
  std::vector<int32_t> positions;   // [T]
  std::vector<int32_t> targets;     // [T]  ids[t+1] within the sequence, else -1
  std::vector<int32_t> cu_seqlens;  // [S+1] prefix sums of sequence lengths
  std::vector<float> pixel_values;     // [patch rows, patch_dim] of every picture, in order of appearance
  std::vector<ImageGrid> image_grids;  // [pictures]
  std::vector<int32_t> sequence_pictures;  // [S] pictures of each sequence (on its first <|image_pad|> runs)

  int64_t T() const { return static_cast<int64_t>(ids.size()); }
  int64_t S() const { return static_cast<int64_t>(cu_seqlens.size()) - 1; }
  int64_t seq_len(int64_t s) const { return cu_seqlens[s + 1] - cu_seqlens[s]; }

  void clear();
  void add_sequence(const int32_t* tokens, int64_t n);
  void add_sequence(const std::vector<int32_t>& tokens) { add_sequence(tokens.data(), tokens.size()); }
  // Appends pictures of the last sequence added: `floats` pixel values (their patch rows of patch_dim floats
  // each) and their grids, in order of appearance.
  void add_pictures(const float* pixels, int64_t floats, const std::vector<ImageGrid>& grids);
  bool has_pictures() const { return !image_grids.empty(); }
  // Adds a sequence followed by padded_len - n copies of pad_id inside the same sequence (the fixed,
  // padded baseline): causal attention keeps the real tokens exact; pads have no targets.
  void add_padded_sequence(const int32_t* tokens, int64_t n, int64_t padded_len, int32_t pad_id);
  static PackedBatch from_sequences(const std::vector<std::vector<int32_t>>& seqs);
  // Builds from packed ids + per-sequence lengths; checks every id is in [0, vocab_size).
  static PackedBatch from_packed(const std::vector<int32_t>& ids, const std::vector<int64_t>& seq_lens,
                                 int64_t vocab_size);
};

}  // namespace grpo
