// The layout's ranges as ZeRO sees them (see zero_layout.h).
#include "train/zero_layout.h"

#include <algorithm>

#include "core/error.h"
#include "model/weights.h"

namespace grpo::train {

int64_t ZeroLayout::ready_event(int64_t lo, int64_t hi) const {
  int64_t e = -1;
  for (const Segment& s : segments)
    if (s.range.first < hi && lo < s.range.second) e = std::max(e, s.event);
  return e;
}

ZeroLayout zero_layout(const ModelConfig& c, const Arena& a) {
  ZeroLayout z;
  const int64_t L = c.num_hidden_layers, n = a.numel();
  const bool tower = c.has_vision() && a.has("model.visual.patch_embed.proj.weight");
  const int64_t depth = tower ? c.vision.depth : 0;
  z.text_layers = L;
  z.tower_blocks = depth;  // before any vision_block_event(): block b's event counts from the tower's depth
  z.end_event = L + depth + 1;
  const int64_t head = a.offset(c.text_prefix() + "norm.weight");
  const int64_t text_end = tower ? a.offset("model.visual.patch_embed.proj.weight") : n;
  // (begin, event) of each segment in layout order; each runs to the next one's begin.
  std::vector<std::pair<int64_t, int64_t>> starts;
  starts.emplace_back(0, z.end_event);
  for (int64_t l = 0; l < L; ++l) {
    const int64_t lo = a.offset(first_layer_tensor(c, l));
    z.layers.emplace_back(lo, l + 1 < L ? a.offset(first_layer_tensor(c, l + 1)) : head);
    starts.emplace_back(lo, z.layer_event(l));
  }
  starts.emplace_back(head, z.head_event());
  z.root.emplace_back(0, z.layers.empty() ? head : z.layers[0].first);
  z.root.emplace_back(head, text_end);
  if (tower) {
    auto block = [&](int64_t b) { return a.offset(cat("model.visual.blocks.", b, ".norm1.weight")); };
    const int64_t merger = a.offset("model.visual.merger.norm.weight");
    starts.emplace_back(text_end, z.end_event);
    for (int64_t b = 0; b < depth; ++b) {
      z.vision_blocks.emplace_back(block(b), b + 1 < depth ? block(b + 1) : merger);
      starts.emplace_back(block(b), z.vision_block_event(b));
    }
    starts.emplace_back(merger, z.vision_block_event(depth - 1));
    const auto& ds = c.vision.deepstack_visual_indexes;
    for (size_t k = 0; k < ds.size(); ++k)
      starts.emplace_back(a.offset(cat("model.visual.deepstack_merger_list.", k, ".norm.weight")),
                          z.vision_block_event(ds[k]));
    z.root.emplace_back(text_end, depth > 0 ? block(0) : merger);
    z.root.emplace_back(merger, n);
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t hi = i + 1 < starts.size() ? starts[i + 1].first : n;
    GRPO_CHECK(starts[i].first <= hi, "[zero] layout regions out of order at element ", starts[i].first);
    z.segments.push_back({{starts[i].first, hi}, starts[i].second});
  }
  return z;
}

}  // namespace grpo::train
