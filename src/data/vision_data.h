// Pictures in prompt datasets, as verl writes vision rows: a row's picture list (data.image_key,
// default "images") holds paths relative to the data file, one per placeholder in order of appearance:
// "<image>" in a string (the `prompt` text or a message's string content) or an image item
// ({"type": "image"}, or an item with an "image" / "image_url" key) in a message's content list.
// Placeholders count only in rows that have the key (elsewhere "<image>" is ordinary text). The chat
// template writes <|vision_start|><|image_pad|><|vision_end|> per picture; after tokenisation the k-th
// <|image_pad|> is expanded to the k-th picture's t*h*w/merge^2 tokens. Grids come from the files'
// headers when the dataset is loaded; pixels are decoded and preprocessed only when an example is used
// (load_example_pictures), so a dataset never holds its pictures' pixel values.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "image/image.h"
#include "image/picture.h"
#include "image/preprocess.h"
#include "model/picture.h"
#include "tokenizer/tokenizer.h"

namespace grpo {

inline constexpr const char* kImagePlaceholder = "<image>";
inline constexpr const char* kVisionPromptText = "<|vision_start|><|image_pad|><|vision_end|>";
inline constexpr const char* kImagePadToken = "<|image_pad|>";

// An image item of a content list (what the chat template renders as a picture).
bool is_image_item(const nlohmann::json& item);
// Placeholders of a row that has the image key: "<image>" in its strings plus image items.
int64_t count_image_placeholders(const Example& ex);
int64_t count_image_placeholders(const nlohmann::json& messages);

// The messages the chat template receives: in rows with the image key, string contents holding "<image>"
// split there into text and image items (empty texts dropped, as verl does); content lists of text items
// only joined into one string (every template renders that the same way, text-only templates too).
nlohmann::ordered_json template_messages(const Example& ex);
nlohmann::ordered_json template_messages(const nlohmann::ordered_json& messages, bool has_image_key);
// A plain-text prompt (no chat template) with each "<image>" replaced by the vision markers.
std::string plain_vision_prompt(const std::string& prompt);

// A picture path as written in a data file, resolved against that file's folder (absolute paths kept).
std::string resolve_picture_path(const std::string& data_path, const std::string& picture);

// Each picture's grid from its header (cheap). Errors: "WHERE: images[k]: [image] PATH: ...".
std::vector<ImageGrid> probe_pictures(const std::vector<std::string>& paths, const ImageProcessorConfig& c,
                                      const std::string& where, const ImageLimits& limits = {});

// The same for pictures given as bytes (stored in a Parquet file); `names` name them in errors.
std::vector<ImageGrid> probe_picture_bytes(const std::vector<std::span<const uint8_t>>& pictures,
                                           const std::vector<std::string>& names, const ImageProcessorConfig& c,
                                           const std::string& where, const ImageLimits& limits = {});

// Expands the tokenised prompt's <|image_pad|> ids to their pictures' token counts. Throws (naming
// `where`) when the tokenizer has no <|image_pad|> or the prompt holds another number of them.
std::vector<int32_t> expand_picture_pads(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                         const std::vector<ImageGrid>& grids, int64_t merge_size,
                                         const std::string& where);

// Decodes and preprocesses pictures into the model's input; each decoded size must give the grid
// recorded at load time (else the file changed). Errors name `where`, the picture index and the file.
PictureBatch load_pictures(const std::vector<std::string>& paths, const std::vector<ImageGrid>& grids,
                           const ImageProcessorConfig& c, const std::string& where, const ImageLimits& limits = {});
// The same for a dataset example; `data_path` is its data file (for error messages). Pictures stored in a
// Parquet file are read from its row (only the pages holding it) and decoded from memory.
PictureBatch load_example_pictures(const Example& ex, const ImageProcessorConfig& c, const std::string& data_path);

// The batch's pictures one by one as the model consumes them (model/picture.h: grid, rows, content hash).
std::vector<PicturePtr> model_pictures(const PictureBatch& batch);

}  // namespace grpo
