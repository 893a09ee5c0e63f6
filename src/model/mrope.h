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

// The pictures of one sequence: grids[0..count) go on its first <|image_pad|> runs, in order. Pads after
// them: text tokens when extra_pads_are_text (a response may sample the pad token: it is text, never a
// picture), else an error (a prompt whose pads and pictures disagree).
struct SequencePictures {
  const ImageGrid* grids = nullptr;
  int64_t count = 0;
  bool extra_pads_are_text = false;
};

// Writes the positions of ids [n] into pos3 (axis a at pos3 + a * ld) and returns rope_delta; picture_pad
// [n] (may be null) gets 1 for the pads that show a picture, 0 for every other token. Errors (naming
// `where`): a pad run shorter than its picture's token count, fewer pad runs than pictures, extra pads
// (unless text), <|video_pad|> (videos are not supported; text when extra pads are).
int64_t mrope_positions(const ModelConfig& c, const int32_t* ids, int64_t n, const SequencePictures& pictures,
                        int32_t* pos3, int64_t ld, uint8_t* picture_pad, const std::string& where);

// Axis (0 temporal, 1 height, 2 width) of each of the head_dim / 2 frequencies: height for j % 3 == 1 and
// j < 3 * mrope_section[1], width for j % 3 == 2 and j < 3 * mrope_section[2], temporal otherwise.
std::vector<uint8_t> mrope_axes(const ModelConfig& c);

}  // namespace grpo
