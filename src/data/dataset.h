// Prompt datasets: JSONL files, one example a line, with `prompt` (text) or `messages` (chat turns
// [{role, content}], content a string or a list of {"type": "text"} / {"type": "image"} items), `answer`
// (text or number), optional `id`, optional `response` (the target text of supervised fine-tuning),
// optional pictures (`images`, or the key named by data.image_key: paths relative to the data file, one
// per "<image>" placeholder in the text or image item in the messages, in order; see data/vision_data.h);
// any other fields are kept in `extra` (e.g. the arithmetic task's `level`).
// verl's rows load unchanged: `prompt` as a list of chat turns, the answer in
// `reward_model.ground_truth`, `data_source` (kept, and passed to external rewards) and `extra_info`
// (kept in `extra`; its `index` is the id when there is no `id`).
// Parquet files (verl's usual format; by the .parquet suffix or the "PAR1" magic) load natively, row group
// by row group (data/parquet): each row becomes the same JSON object a JSONL line is, so every column is
// kept as JSONL fields are. Pictures stored in the file (verl's `images`: [{bytes, path}]) are probed at
// load and decoded from the file when the example is used, never written out or held by the dataset.
// A malformed line (or row) is an error naming the file and line (or row). Prompts longer than max_prompt_length tokens are filtered
// (and counted), truncated, or an error, as configured; a file left with no example is an error.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/names.h"
#include "data/parquet/parquet_file.h"
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
  // A `messages` row whose turns go on after its last user turn (assistant turns, with `tool_calls`, and
  // `tool` turns: a multi-turn SFT target) keeps its turns up to that user turn in `messages` (the prompt)
  // and the rest here; null otherwise. Supervised fine-tuning trains on its assistant turns only.
  nlohmann::ordered_json response_messages;
  // `tools`: the tools' OpenAI function schemas (verl's multi-turn SFT column), passed to the chat template
  // with the prompt; null when absent. Key order as in the row.
  nlohmann::ordered_json tools;
  nlohmann::json extra;           // other fields of the line (an object)
  std::vector<int32_t> prompt_ids;  // filled when DatasetOptions::encode_prompt is given
  int64_t line = 0;               // 1-based line in the file (Parquet: row)
  // Pictures in order of appearance: paths (resolved against the data file's folder by load_dataset) and
  // their grids (from the files' headers and the model's preprocessor). Pixels are loaded when the
  // example is used (load_example_pictures), never held by the dataset.
  bool has_image_key = false;     // the row has the image key (placeholders are then counted)
  std::vector<std::string> images;
  std::vector<ImageGrid> image_grids;
  // Pictures stored inside a Parquet file: the file, row group, row and column to read their bytes from
  // when the example is used (`images` then holds their names, "FILE row R images[k]").
  std::shared_ptr<const parquet::ParquetFile> picture_file;
  int picture_row_group = -1;
  int64_t picture_row = -1;
  std::string picture_column;
};

enum class PromptOverflow {
  Filter,         // drop the example and count it
  TruncateLeft,   // keep the last max_prompt_length tokens
  TruncateRight,  // keep the first max_prompt_length tokens
  Error,          // an error naming the file and line
};

// data.truncation's values (Filter is data.filter_overlong_prompts).
inline constexpr auto kTruncationNames = name_table<PromptOverflow>({{PromptOverflow::Error, "error"},
                                                                     {PromptOverflow::TruncateLeft, "left"},
                                                                     {PromptOverflow::TruncateRight, "right"}});

// data.filter_overlong_prompts / data.truncation -> PromptOverflow.
PromptOverflow prompt_overflow_from_config(bool filter_overlong_prompts, PromptOverflow truncation);

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

// A JSONL or Parquet file. Throws grpo::Error "[dataset] FILE:LINE: ..." (Parquet: "FILE row R") on the first
// malformed row, and when the file holds no example at all (empty, or every prompt filtered out).
Dataset load_dataset(const std::string& path, const DatasetOptions& options = {});
// Several files (verl's list of data files), their examples in order; `path` lists them.
Dataset load_datasets(const std::vector<std::string>& paths, const DatasetOptions& options = {});

// Whether a data file is Parquet: the .parquet suffix, or the "PAR1" magic.
bool is_parquet_file(const std::string& path);

// Parses one line (exposed for tests and fuzzing); `where` prefixes error messages. Picture paths are
// kept as written.
Example parse_example(const std::string& line, const std::string& where, bool require_response,
                      const std::string& image_key = "images");
// The same for a row already parsed (a Parquet row).
Example example_from_row(const nlohmann::json& row, const std::string& where, bool require_response,
                         const std::string& image_key = "images");

}  // namespace grpo
