// PackedBatch construction (see batch.h).
#include "model/batch.h"

#include "core/error.h"

namespace grpo {

void PackedBatch::clear() {
  ids.clear();
  positions.clear();
  targets.clear();
  cu_seqlens.assign(1, 0);
  pixel_values.clear();
  image_grids.clear();
  sequence_pictures.clear();
}

void PackedBatch::add_pictures(const float* pixels, int64_t floats, const std::vector<ImageGrid>& grids) {
  GRPO_CHECK(!sequence_pictures.empty(), "[batch] pictures before any sequence");
  pixel_values.insert(pixel_values.end(), pixels, pixels + floats);
  image_grids.insert(image_grids.end(), grids.begin(), grids.end());
  sequence_pictures.back() += static_cast<int32_t>(grids.size());
}

void PackedBatch::add_sequence(const int32_t* tokens, int64_t n) {
  GRPO_CHECK(n > 0, "[batch] empty sequence");
  if (cu_seqlens.empty()) cu_seqlens.push_back(0);
  for (int64_t i = 0; i < n; ++i) {
    ids.push_back(tokens[i]);
    positions.push_back(static_cast<int32_t>(i));
    targets.push_back(i + 1 < n ? tokens[i + 1] : -1);
  }
  cu_seqlens.push_back(static_cast<int32_t>(ids.size()));
  sequence_pictures.push_back(0);
}

void PackedBatch::add_padded_sequence(const int32_t* tokens, int64_t n, int64_t padded_len, int32_t pad_id) {
  GRPO_CHECK(padded_len >= n, "[batch] padded length ", padded_len, " < sequence length ", n);
  add_sequence(tokens, n);
  cu_seqlens.pop_back();
  for (int64_t i = n; i < padded_len; ++i) {
    ids.push_back(pad_id);
    positions.push_back(static_cast<int32_t>(i));
    targets.push_back(-1);
  }
  cu_seqlens.push_back(static_cast<int32_t>(ids.size()));
}

PackedBatch PackedBatch::from_sequences(const std::vector<std::vector<int32_t>>& seqs) {
  PackedBatch b;
  b.clear();
  for (const auto& s : seqs) b.add_sequence(s);
  return b;
}

PackedBatch PackedBatch::from_packed(const std::vector<int32_t>& ids, const std::vector<int64_t>& seq_lens,
                                     int64_t vocab_size) {
  int64_t total = 0;
  for (int64_t n : seq_lens) {
    GRPO_CHECK(n > 0, "[batch] sequence length must be positive, got ", n);
    total += n;
  }
  GRPO_CHECK(total == static_cast<int64_t>(ids.size()), "[batch] sequence lengths sum to ", total, " but there are ",
             ids.size(), " tokens");
  for (size_t i = 0; i < ids.size(); ++i)
    GRPO_CHECK(ids[i] >= 0 && ids[i] < vocab_size, "[batch] token ", i, " has id ", ids[i],
               ", expected 0 <= id < vocab_size ", vocab_size);
  PackedBatch b;
  b.clear();
  int64_t off = 0;
  for (int64_t n : seq_lens) {
    b.add_sequence(ids.data() + off, n);
    off += n;
  }
  return b;
}

}  // namespace grpo
