// OpenAI-shaped error bodies (see api_error.h).
#include "serve/api_error.h"

#include <nlohmann/json.hpp>

namespace grpo::serve {

std::string error_body(const ApiError& e) {
  const nlohmann::ordered_json err = {
      {"message", e.what()},
      {"type", e.type},
      {"param", e.param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.param)},
      {"code", e.code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.code)}};
  return nlohmann::ordered_json{{"error", err}}.dump();
}

}  // namespace grpo::serve
