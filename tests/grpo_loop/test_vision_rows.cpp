// A run whose data has pictures on a model that cannot see them stops at start-up, naming the row;
// without preprocessor_config.json the dataset itself refuses the row.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "grpo/byte_model.h"
#include "grpo/config.h"
#include "grpo/session.h"
#include "grpo/temp_dir.h"
#include "image/image.h"
#include "tokenizer/byte_tokenizer.h"

using namespace grpo;

namespace {

std::string open_error(const std::string& model, const std::string& data) {
  try {
    Session::open(load_config("", {"data.train_files=" + data, "actor_rollout_ref.model.path=" + model}), false);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VisionRows, RefusedUntilTheModelTakesPictures) {
  test::TempDir dir;
  const std::string model = dir.path() + "/model";
  write_byte_model(model, "qwen3", "tiny", 0);
  write_png(dir.path() + "/a.png", Image{64, 64, std::vector<uint8_t>(64 * 64 * 3, 128)});
  const std::string data = dir.write("d.jsonl", R"({"prompt": "<image>How many?", "answer": "1", "images": ["a.png"]})" "\n");
  std::string e = open_error(model, data);
  EXPECT_NE(e.find(data + ":1: the row has pictures but the model has no preprocessor_config.json"), std::string::npos) << e;

  std::filesystem::copy_file(std::string(GRPO_SHARED_DIR) + "/reference/models/qwen3-vl/preprocessor_config.json",
                             model + "/preprocessor_config.json");
  write_byte_tokenizer(model, /*vision=*/true);
  e = open_error(model, data);
  EXPECT_NE(e.find("[data] " + data + ":1: the row has pictures but " + model + " is loaded as a text decoder"),
            std::string::npos)
      << e;
}

}  // namespace
