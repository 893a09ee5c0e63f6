// Data-URL pictures of chat requests (see pictures.h).
#include "serve/pictures.h"

#include "core/error.h"
#include "data/vision_data.h"
#include "image/image.h"

namespace grpo::serve {

namespace {
int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}
}  // namespace

std::vector<uint8_t> data_url_bytes(const std::string& url) {
  GRPO_CHECK(url.rfind("data:", 0) == 0,
             "image_url: expected a data URL (\"data:image/png;base64,...\"); the "
             "server fetches no remote pictures, got \"",
             url.substr(0, 40), "\"");
  const size_t comma = url.find(',');
  GRPO_CHECK(comma != std::string::npos && url.substr(0, comma).ends_with(";base64"),
             "image_url: expected a base64 data URL (\"data:image/png;base64,...\")");
  std::vector<uint8_t> out;
  out.reserve((url.size() - comma) * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = comma + 1; i < url.size(); ++i) {
    const char c = url[i];
    if (c == '=' || c == '\n' || c == '\r') continue;
    const int v = base64_value(c);
    GRPO_CHECK(v >= 0, "image_url: invalid base64 character at offset ", i);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  GRPO_CHECK(!out.empty(), "image_url: the data URL holds no bytes");
  return out;
}

void DataUrlPictures::read(const std::vector<std::string>& data_urls, rollout::Request& r) const {
  PictureBatch batch;
  batch.row_width = config_.row_width();
  batch.merge_size = config_.merge_size;
  for (size_t k = 0; k < data_urls.size(); ++k) {
    const std::string name = cat("picture ", k);
    const std::vector<uint8_t> bytes = data_url_bytes(data_urls[k]);
    batch.append(preprocess_image(decode_image(bytes, name), config_, name));
  }
  r.pictures = model_pictures(batch);
}

void DataUrlPictures::expand(rollout::Request& r) const {
  GRPO_CHECK(image_pad_ >= 0, "config.json has no image_token_id");
  std::vector<ImageGrid> grids;
  for (const PicturePtr& p : r.pictures) grids.push_back(p->grid);
  r.prompt = expand_image_pads(r.prompt, image_pad_, grids, config_.merge_size);
}

}  // namespace grpo::serve
