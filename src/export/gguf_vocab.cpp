// tokenizer.json / tokenizer_config.json -> llama.cpp's BPE tokenizer metadata (gguf_vocab.h). Token types
// follow llama.cpp's converter: vocabulary entries are normal, added tokens are control tokens when special
// (or written <|...|>), user-defined otherwise; ids without a token are unused [PAD<id>] entries.
#include "export/gguf_vocab.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace grpo::gguf {
namespace {

using nlohmann::json;

// The Split regexes of tokenizer.json that llama.cpp implements under a pre-tokenizer name.
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

bool is_byte_level(const json& j, bool use_regex) {
  return j.is_object() && j.value("type", "") == "ByteLevel" && !j.value("add_prefix_space", false) &&
         j.value("use_regex", true) == use_regex;
}

// The Split regex of a Sequence [Split(Regex, Isolated), ByteLevel(use_regex false)], or "".
std::string isolated_split_regex(const json& pt) {
  if (!pt.is_object() || pt.value("type", "") != "Sequence" || !pt.contains("pretokenizers")) return "";
  const json& seq = pt["pretokenizers"];
  if (!seq.is_array() || seq.size() != 2 || !is_byte_level(seq[1], false)) return "";
  const json& split = seq[0];
  if (!split.is_object() || split.value("type", "") != "Split" || split.value("behavior", "") != "Isolated" ||
      split.value("invert", false) || !split.contains("pattern") || !split["pattern"].is_object())
    return "";
  return split["pattern"].value("Regex", "");
}

// llama.cpp's tokenizer.ggml.pre for the file's pre-tokenizer. bytes_only: the vocabulary is single
// byte-level characters and there are no merges, so every byte is its own token whatever the split.
std::string pre_name(const json& pt, bool bytes_only, const std::string& where) {
  const std::string regex = isolated_split_regex(pt);
  if (regex == kQwen2Split) return "qwen2";
  if (regex == kLlama3Split) return "llama-bpe";
  if (is_byte_level(pt, true)) return "gpt-2";
  // No split changes a byte tokenizer's ids; qwen2 also keeps llama.cpp's clean_spaces off, as HF decodes.
  if (bytes_only) return "qwen2";
  fail("[gguf] ", where, ".pre_tokenizer: ", pt.dump().substr(0, 200),
       " is not a split llama.cpp implements (expected Qwen2's or Llama 3's Split regex + ByteLevel, or GPT-2's "
       "ByteLevel)");
}

// "left right" strings of model.merges (strings already, or [left, right] pairs: a space inside a part
// is written U+0120, as llama.cpp's converter does).
std::vector<std::string> read_merges(const json& merges, const std::string& where) {
  std::vector<std::string> out;
  if (merges.is_null()) return out;
  GRPO_CHECK(merges.is_array(), "[gguf] ", where, ".model.merges: expected an array");
  for (const json& m : merges) {
    if (m.is_string()) {
      out.push_back(m.get<std::string>());
      continue;
    }
    GRPO_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), "[gguf] ", where,
               ".model.merges[", out.size(), "]: expected \"a b\" or [\"a\", \"b\"]");
    std::string pair;
    for (int k = 0; k < 2; ++k) {
      if (k == 1) pair += ' ';
      for (char ch : m[k].get<std::string>()) pair += ch == ' ' ? std::string("\xC4\xA0") : std::string(1, ch);
    }
    out.push_back(std::move(pair));
  }
  return out;
}

bool looks_special(const std::string& t) { return t.size() >= 4 && t.starts_with("<|") && t.ends_with("|>"); }

// tokens and types of ids 0 .. n-1 from model.vocab and added_tokens.
void read_tokens(const json& tj, int64_t n, const std::string& where, Vocab& v) {
  v.tokens.assign(static_cast<size_t>(n), "");
  v.types.assign(static_cast<size_t>(n), kUnused);
  auto place = [&](int64_t id, const std::string& text, int32_t type, const char* field) {
    GRPO_CHECK(id >= 0 && id < n, "[gguf] ", where, ".", field, ": id ", id, " of \"", text,
               "\" is outside the model's vocab_size ", n);
    v.tokens[static_cast<size_t>(id)] = text;
    v.types[static_cast<size_t>(id)] = type;
  };
  GRPO_CHECK(tj.contains("model") && tj["model"].is_object() && tj["model"].contains("vocab") &&
                 tj["model"]["vocab"].is_object(),
             "[gguf] ", where, ".model.vocab: expected an object of token -> id");
  for (const auto& [text, id] : tj["model"]["vocab"].items()) {
    GRPO_CHECK(id.is_number_integer(), "[gguf] ", where, ".model.vocab[\"", text, "\"]: expected an integer id");
    place(id.get<int64_t>(), text, kNormal, "model.vocab");
  }
  if (tj.contains("added_tokens") && tj["added_tokens"].is_array()) {
    for (const json& a : tj["added_tokens"]) {
      GRPO_CHECK(a.is_object() && a.contains("id") && a["id"].is_number_integer() && a.contains("content") &&
                     a["content"].is_string(),
                 "[gguf] ", where, ".added_tokens: expected {\"id\": int, \"content\": string, ...}");
      const std::string text = a["content"].get<std::string>();
      const bool control = a.value("special", false) || looks_special(text);
      place(a["id"].get<int64_t>(), text, control ? kControl : kUserDefined, "added_tokens");
    }
  }
  for (int64_t i = 0; i < n; ++i)
    if (v.tokens[static_cast<size_t>(i)].empty()) v.tokens[static_cast<size_t>(i)] = cat("[PAD", i, "]");
}

// add_bos / add_eos as the tokenizer applies them (its post-processor or add_bos_token / add_eos_token).
void read_special_flags(const Tokenizer& t, const std::string& where, Vocab& v) {
  const std::vector<int32_t> plain = t.encode("a", false), full = t.encode("a", true);
  const auto at = std::search(full.begin(), full.end(), plain.begin(), plain.end());
  GRPO_CHECK(at != full.end(), "[gguf] ", where, ": the post-processor changes the text's own ids");
  const auto prefix = at - full.begin();
  const auto suffix = static_cast<std::ptrdiff_t>(full.size() - plain.size()) - prefix;
  GRPO_CHECK(
      prefix <= 1 && (prefix == 0 || full.front() == v.bos) && suffix <= 1 && (suffix == 0 || full.back() == v.eos),
      "[gguf] ", where,
      ": the post-processor adds tokens other than one bos before and one eos after "
      "the text, which llama.cpp cannot express");
  v.add_bos = prefix == 1;
  v.add_eos = suffix == 1;
}

}  // namespace

Vocab read_vocab(const std::string& dir, const ModelConfig& c) {
  const std::string path = dir + "/tokenizer.json";
  GRPO_CHECK(file_exists(path), "[gguf] ", path,
             ": missing; a GGUF file carries the tokenizer (llama.cpp tokenizes from its tokenizer.ggml.* keys)");
  json tj;
  try {
    tj = json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail("[gguf] ", path, ": not valid JSON (", e.what(), ")");
  }
  GRPO_CHECK(
      tj.is_object() && tj.contains("model") && tj["model"].is_object() && tj["model"].value("type", "") == "BPE",
      "[gguf] ", path, ".model.type: expected \"BPE\" (llama.cpp's gpt2 tokenizer is byte-level BPE)");
  const Tokenizer tok = Tokenizer::load(dir);  // rejects what the engine does not tokenize, by name
  GRPO_CHECK(tok.vocab_size() <= c.vocab_size, "[gguf] ", path, ": ", tok.vocab_size(),
             " token ids, more than the model's vocab_size ", c.vocab_size);
  Vocab v;
  read_tokens(tj, c.vocab_size, path, v);
  v.merges = read_merges(tj["model"].value("merges", json()), path);
  bool bytes_only = v.merges.empty();
  for (const auto& [text, id] : tj["model"]["vocab"].items())
    bytes_only = bytes_only && !text.empty() && utf8::valid_sequence_length(text, 0) == text.size();
  v.pre = pre_name(tj.value("pre_tokenizer", json()), bytes_only, path);
  v.bos = tok.bos_id() >= 0 ? tok.bos_id() : static_cast<int32_t>(c.bos_token_id);
  v.eos = tok.eos_id() >= 0         ? tok.eos_id()
          : c.eos_token_ids.empty() ? -1
                                    : static_cast<int32_t>(c.eos_token_ids.front());
  v.pad = tok.pad_id();
  read_special_flags(tok, path, v);
  v.chat_template = tok.chat_template();
  return v;
}

void add_vocab(Writer& w, const Vocab& v) {
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", v.pre);
  w.add_string_array("tokenizer.ggml.tokens", v.tokens);
  w.add_i32_array("tokenizer.ggml.token_type", v.types);
  w.add_string_array("tokenizer.ggml.merges", v.merges);
  if (v.bos >= 0) w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
  if (v.eos >= 0) w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos));
  if (v.pad >= 0) w.add_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad));
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  w.add_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  if (!v.chat_template.empty()) w.add_string("tokenizer.chat_template", v.chat_template);
}

}  // namespace grpo::gguf
