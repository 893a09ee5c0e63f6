// Prompt datasets: JSONL files, one example a line, with `prompt` (text) or `messages` (chat turns
// [{role, content}], content a string or a list of {"type": "text"} / {"type": "image"} items), `answer`
// (text or number), optional `id`, optional `response` (the target text of supervised fine-tuning),
// optional pictures (`images`, or the key named by data.image_key: paths relative to the data file, one
// per "<image>" placeholder in the text or image item in the messages, in order; see data/vision_data.h);
// any other fields are kept in `extra` (e.g. the arithmetic task's `level`).
// verl's rows load unchanged: `prompt` as a list of chat turns, the answer in
// `reward_model.ground_truth`, `data_source` (kept, and passed to external rewards) and `extra_info`
// (kept in `extra`; its `index` is the id when there is no `id`).
// A malformed line is an error naming the file and line; a Parquet file (verl's usual format) is an error
// that gives the one-line conversion to JSONL. Prompts longer than max_prompt_length tokens are filtered
// (and counted), truncated, or an error, as configured; a file left with no example is an error.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "image/picture.h"
#include "image/preprocess.h"

namespace grpo {

struct Example {
  std::string id;                 // `id`, or the line number when absent
  std::string prompt;             // "" when `messages` is used
  nlohmann::json messages;        // null when `prompt` is used
  std::string answer;             // numbers (and non-text ground truths) are stored as JSON text ("42")
  std::string data_source;        // verl's `data_source` ("" when absent)
  std::string response;           // "" when absent
  nlohmann::json extra;           // other fields of the line (an object)
  std::vector<int32_t> prompt_ids;  // filled when DatasetOptions::encode_prompt is given
  int64_t line = 0;               // 1-based line in the file
  // Pictures in order of appearance: paths (resolved against the data file's folder by load_dataset) and
  // their grids (from the files' headers and the model's preprocessor). Pixels are loaded when the
  // example is used (load_example_pictures), never held by the dataset.
  bool has_image_key = false;     // the row has the image key (placeholders are then counted)
  std::vector<std::string> images;
  std::vector<ImageGrid> image_grids;
};

enum class PromptOverflow {
  Filter,         // drop the example and count it
  TruncateLeft,   // keep the last max_prompt_length tokens
  TruncateRight,  // keep the first max_prompt_length tokens
  Error,          // an error naming the file and line
};

// data.filter_overlong_prompts / data.truncation -> PromptOverflow.
PromptOverflow prompt_overflow_from_config(bool filter_overlong_prompts, const std::string& truncation);

struct DatasetOptions {
  // Tokenizes an example's prompt (chat template applied or not: the caller decides). When empty,
  // prompt_ids stay empty and no length limit is applied.
  std::function<std::vector<int32_t>(const Example&)> encode_prompt;
  int64_t max_prompt_length = 0;  // tokens; 0: no limit
  PromptOverflow overflow = PromptOverflow::Filter;
  bool require_response = false;  // SFT data: every line needs `response`
  std::string image_key = "images";  // data.image_key: the field listing a row's pictures
  // The model's preprocessor_config.json; rows with pictures need one (their grids are computed at load).
  const ImageProcessorConfig* image_processor = nullptr;
};

struct Dataset {
  std::string path;
  std::vector<Example> examples;
  int64_t lines = 0;      // non-blank lines read
  int64_t filtered = 0;   // examples dropped for an overlong prompt
  int64_t truncated = 0;  // examples whose prompt was truncated
};

// Throws grpo::Error "[dataset] FILE:LINE: ..." on the first malformed line, and when the file holds no
// example at all (empty, or every prompt filtered out).
Dataset load_dataset(const std::string& path, const DatasetOptions& options = {});

// Parses one line (exposed for tests and fuzzing); `where` prefixes error messages. Picture paths are
// kept as written.
Example parse_example(const std::string& line, const std::string& where, bool require_response,
                      const std::string& image_key = "images");

}  // namespace grpo
