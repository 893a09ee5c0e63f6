// Pictures of chat requests for Qwen3-VL models: image_url parts given as data URLs
// ("data:image/png;base64,..." or image/jpeg) decoded, preprocessed with the model's
// preprocessor_config.json and attached to the request; its <|image_pad|> tokens are then expanded to each
// picture's token count. Remote URLs are refused (the server fetches nothing).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "image/preprocess.h"
#include "serve/openai_request.h"

namespace grpo::serve {

// The bytes of a base64 data URL; an error naming what is wrong.
std::vector<uint8_t> data_url_bytes(const std::string& url);

class DataUrlPictures : public PictureReader {
 public:
  DataUrlPictures(const ImageProcessorConfig& config, int32_t image_pad) : config_(config), image_pad_(image_pad) {}
  void read(const std::vector<std::string>& data_urls, rollout::Request& r) const override;
  void expand(rollout::Request& r) const override;

 private:
  const ImageProcessorConfig& config_;
  int32_t image_pad_;
};

}  // namespace grpo::serve
