// Qwen3-VL's interleaved M-RoPE in the text decoder: positions [3, n] (temporal, height, width) of a
// sequence from its placeholder layout (transformers' get_rope_index), the position axis that turns each
// rotary frequency, and the per-token cos/sin rows built from them.
//
// A text token takes (p, p, p), then p += 1. The k-th picture's run of t*h*w/m^2 <|image_pad|> tokens (m =
// spatial_merge_size) gives the token at merged cell (ti, i, j), in raster order, (p + ti, p + i, p + j); after
// the run p = (largest position so far) + 1. rope_delta = largest position + 1 - n: a token generated later at
// index n' takes n' + rope_delta on all three axes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/batch.h"
#include "model/config.h"

namespace grpo {

// Writes the positions of ids [n] into pos3 (axis a at pos3 + a * ld) and returns rope_delta. The pictures
// of the sequence are grids[*next_grid], grids[*next_grid + 1], ... in order; *next_grid advances past them.
// Errors (naming `where`): a pad run that is not a whole picture, more pads than pictures, video pads.
int64_t mrope_positions(const ModelConfig& c, const int32_t* ids, int64_t n, const std::vector<ImageGrid>& grids,
                        size_t* next_grid, int32_t* pos3, int64_t ld, const std::string& where);

// Axis (0 temporal, 1 height, 2 width) of each of the head_dim / 2 frequencies: height for j % 3 == 1 and
// j < 3 * mrope_section[1], width for j % 3 == 2 and j < 3 * mrope_section[2], temporal otherwise.
std::vector<uint8_t> mrope_axes(const ModelConfig& c);

}  // namespace grpo
