// Pictures in prompt datasets (see vision_data.h).
#include "data/vision_data.h"

#include <filesystem>

#include "core/error.h"

namespace grpo {

namespace {

int64_t count_in_text(const std::string& text) {
  int64_t n = 0;
  for (size_t p = text.find(kImagePlaceholder); p != std::string::npos; p = text.find(kImagePlaceholder, p + 1)) ++n;
  return n;
}

// "a<image>b" -> [{"type":"text","text":"a"}, {"type":"image"}, {"type":"text","text":"b"}].
nlohmann::ordered_json split_placeholders(const std::string& text) {
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  const std::string marker = kImagePlaceholder;
  size_t start = 0;
  for (size_t p = text.find(marker); ; p = text.find(marker, start)) {
    const std::string piece = text.substr(start, p == std::string::npos ? std::string::npos : p - start);
    if (!piece.empty()) items.push_back({{"type", "text"}, {"text", piece}});
    if (p == std::string::npos) break;
    items.push_back({{"type", "image"}});
    start = p + marker.size();
  }
  return items;
}

// Wraps an error of a picture with the row and the picture's index.
template <typename Fn>
auto for_picture(const std::string& where, size_t k, Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    fail(where, ": images[", k, "]: ", e.what());
  }
}

}  // namespace

bool is_image_item(const nlohmann::json& item) {
  return item.is_object() &&
         ((item.contains("type") && item["type"] == "image") || item.contains("image") || item.contains("image_url"));
}

int64_t count_image_placeholders(const nlohmann::json& messages) {
  int64_t n = 0;
  for (const auto& m : messages) {
    if (!m.is_object() || !m.contains("content")) continue;
    const auto& c = m["content"];
    if (c.is_string()) n += count_in_text(c.get<std::string>());
    if (c.is_array())
      for (const auto& item : c) n += is_image_item(item);
  }
  return n;
}

int64_t count_image_placeholders(const Example& ex) {
  return ex.messages.is_null() ? count_in_text(ex.prompt) : count_image_placeholders(ex.messages);
}

nlohmann::ordered_json template_messages(const nlohmann::ordered_json& messages, bool has_image_key) {
  nlohmann::ordered_json out = messages;
  for (auto& m : out) {
    if (!m.is_object() || !m.contains("content")) continue;
    auto& c = m["content"];
    if (has_image_key && c.is_string() && count_in_text(c.get<std::string>()) > 0) {
      c = split_placeholders(c.get<std::string>());
    } else if (c.is_array()) {
      std::string text;
      bool text_only = true;
      for (const auto& item : c) {
        text_only = text_only && item.is_object() && !is_image_item(item) && item.contains("text") &&
                    item["text"].is_string();
        if (text_only) text += item["text"].get<std::string>();
      }
      if (text_only) c = text;
    }
  }
  return out;
}

nlohmann::ordered_json template_messages(const Example& ex) {
  if (ex.messages.is_null()) {
    nlohmann::ordered_json user = {{"role", "user"}, {"content", ex.prompt}};
    return template_messages(nlohmann::ordered_json::array({user}), ex.has_image_key);
  }
  return template_messages(nlohmann::ordered_json::parse(ex.messages.dump()), ex.has_image_key);
}

std::string plain_vision_prompt(const std::string& prompt) {
  std::string out;
  const std::string marker = kImagePlaceholder;
  size_t start = 0;
  for (size_t p = prompt.find(marker); p != std::string::npos; p = prompt.find(marker, start)) {
    out += prompt.substr(start, p - start) + kVisionPromptText;
    start = p + marker.size();
  }
  return out + prompt.substr(start);
}

std::string resolve_picture_path(const std::string& data_path, const std::string& picture) {
  const std::filesystem::path p(picture);
  if (p.is_absolute() || data_path == "-") return picture;
  return (std::filesystem::path(data_path).parent_path() / p).lexically_normal().string();
}

std::vector<ImageGrid> probe_pictures(const std::vector<std::string>& paths, const ImageProcessorConfig& c,
                                      const std::string& where, const ImageLimits& limits) {
  std::vector<ImageGrid> grids;
  for (size_t k = 0; k < paths.size(); ++k)
    grids.push_back(for_picture(where, k, [&] {
      const ImageInfo info = probe_image_file(paths[k], limits);
      return image_grid(c, info.height, info.width, paths[k]);
    }));
  return grids;
}

std::vector<ImageGrid> probe_picture_bytes(const std::vector<std::span<const uint8_t>>& pictures,
                                           const std::vector<std::string>& names, const ImageProcessorConfig& c,
                                           const std::string& where, const ImageLimits& limits) {
  GRPO_CHECK(pictures.size() == names.size(), where, ": ", pictures.size(), " pictures but ", names.size(), " names");
  std::vector<ImageGrid> grids;
  for (size_t k = 0; k < pictures.size(); ++k)
    grids.push_back(for_picture(where, k, [&] {
      const ImageInfo info = probe_image(pictures[k], names[k], limits);
      return image_grid(c, info.height, info.width, names[k]);
    }));
  return grids;
}

std::vector<int32_t> expand_picture_pads(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                         const std::vector<ImageGrid>& grids, int64_t merge_size,
                                         const std::string& where) {
  const int32_t pad = tok.token_to_id(kImagePadToken);
  GRPO_CHECK(pad >= 0, where, ": the row has pictures but the tokenizer has no ", kImagePadToken,
             " token (not a vision-language model's tokenizer)");
  int64_t pads = 0;
  for (int32_t id : ids) pads += id == pad;
  GRPO_CHECK(pads == static_cast<int64_t>(grids.size()), where, ": the rendered prompt holds ", pads, " ",
             kImagePadToken, " for ", grids.size(), " picture(s) (does the chat template render image items?)");
  return expand_image_pads(ids, pad, grids, merge_size);
}

PictureBatch load_pictures(const std::vector<std::string>& paths, const std::vector<ImageGrid>& grids,
                           const ImageProcessorConfig& c, const std::string& where, const ImageLimits& limits) {
  GRPO_CHECK(paths.size() == grids.size(), where, ": ", paths.size(), " pictures but ", grids.size(), " grids");
  PictureBatch out;
  out.row_width = c.row_width();
  out.merge_size = c.merge_size;
  for (size_t k = 0; k < paths.size(); ++k)
    out.append(for_picture(where, k, [&] {
      PictureBatch one = preprocess_image(load_image(paths[k], limits), c, paths[k]);
      GRPO_CHECK(one.grids[0] == grids[k], "[image] ", paths[k], ": the picture now gives a ", one.grids[0].h, "x",
                 one.grids[0].w, " patch grid, not the ", grids[k].h, "x", grids[k].w,
                 " counted when the data was loaded (was the file changed?)");
      return one;
    }));
  return out;
}

namespace {

// The example's pictures from the Parquet row that stores them.
PictureBatch load_stored_pictures(const Example& ex, const ImageProcessorConfig& c, const std::string& where) {
  std::vector<nlohmann::json> row =
      ex.picture_file->read_rows(ex.picture_row_group, ex.picture_row, ex.picture_row + 1, {ex.picture_column});
  const nlohmann::json& value = row.at(0)[ex.picture_column];
  const nlohmann::json items = value.is_array() ? value : nlohmann::json::array({value});
  GRPO_CHECK(items.size() == ex.images.size(), where, ": ", ex.picture_column, " now holds ", items.size(),
             " pictures, not the ", ex.images.size(), " counted when the data was loaded (was the file changed?)");
  PictureBatch out;
  out.row_width = c.row_width();
  out.merge_size = c.merge_size;
  for (size_t k = 0; k < items.size(); ++k)
    out.append(for_picture(where, k, [&] {
      const nlohmann::json& it = items[k];
      const nlohmann::json& b = it.is_binary() ? it : it.at("bytes");
      GRPO_CHECK(b.is_binary(), "[image] ", ex.images[k], ": no bytes (was the file changed?)");
      const std::span<const uint8_t> bytes(b.get_binary().data(), b.get_binary().size());
      PictureBatch one = preprocess_image(decode_image(bytes, ex.images[k]), c, ex.images[k]);
      GRPO_CHECK(one.grids[0] == ex.image_grids[k], "[image] ", ex.images[k], ": the picture now gives a ",
                 one.grids[0].h, "x", one.grids[0].w, " patch grid, not the ", ex.image_grids[k].h, "x",
                 ex.image_grids[k].w, " counted when the data was loaded (was the file changed?)");
      return one;
    }));
  return out;
}

}  // namespace

PictureBatch load_example_pictures(const Example& ex, const ImageProcessorConfig& c, const std::string& data_path) {
  const std::string where = ex.picture_file ? cat("[dataset] ", data_path, " row ", ex.line)
                                            : cat("[dataset] ", data_path, ":", ex.line);
  if (ex.picture_file) return load_stored_pictures(ex, c, where);
  return load_pictures(ex.images, ex.image_grids, c, where);
}

std::vector<PicturePtr> model_pictures(const PictureBatch& batch) {
  std::vector<PicturePtr> out;
  for (int64_t k = 0; k < batch.pictures(); ++k) {
    const float* first = batch.row(batch.row_offset(k));
    std::vector<float> rows(first, first + batch.grids[k].patches() * batch.row_width);
    out.push_back(make_picture(batch.grids[k], std::move(rows), batch.row_width));
  }
  return out;
}

}  // namespace grpo
