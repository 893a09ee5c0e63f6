// Loading tokenizer.json / tokenizer_config.json, encoding and decoding (see tokenizer.h). The encode
// pipeline is Hugging Face's: added tokens in the raw text -> NFC per remaining piece -> added tokens
// with normalized = true -> pre-tokenizer words -> byte-level BPE -> post-processor ids.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <exception>
#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "core/threads.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace grpo {
namespace {

using nlohmann::json;

bool parse_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return false;
  if (!j.is_object() || !j.contains("type")) fail("[tokenizer] ", where, ": expected an object with a \"type\"");
  const std::string type = j["type"].is_string() ? j["type"].get<std::string>() : j["type"].dump();
  if (type == "NFC") return true;
  if (type == "Sequence" && j.contains("normalizers") && j["normalizers"].is_array()) {
    bool nfc = false;
    for (size_t k = 0; k < j["normalizers"].size(); ++k)
      nfc = parse_normalizer(j["normalizers"][k], cat(where, ".normalizers[", k, "]")) || nfc;
    return nfc;
  }
  fail("[tokenizer] ", where, ": normalizer type \"", type, "\" is not supported (supported: NFC, Sequence)");
}

void check_decoder(const json& j, const std::string& where) {
  if (j.is_null()) fail("[tokenizer] ", where, ": no decoder; only the ByteLevel decoder is supported");
  if (!j.is_object() || !j.contains("type")) fail("[tokenizer] ", where, ": expected an object with a \"type\"");
  const std::string type = j["type"].is_string() ? j["type"].get<std::string>() : j["type"].dump();
  if (type == "ByteLevel") return;
  if (type == "Sequence" && j.contains("decoders") && j["decoders"].is_array() && j["decoders"].size() == 1)
    return check_decoder(j["decoders"][0], where + ".decoders[0]");
  fail("[tokenizer] ", where, ": decoder type \"", type, "\" is not supported (supported: ByteLevel)");
}

// Reads the ids that a TemplateProcessing "single" template puts before and after the sequence.
void parse_template(const json& j, const std::string& where, std::vector<int32_t>& prefix,
                    std::vector<int32_t>& suffix) {
  if (!j.contains("single") || !j["single"].is_array()) fail("[tokenizer] ", where, ".single: expected an array");
  const json special = j.value("special_tokens", json::object());
  bool seen_sequence = false;
  for (size_t k = 0; k < j["single"].size(); ++k) {
    const json& piece = j["single"][k];
    const std::string at = cat(where, ".single[", k, "]");
    if (piece.contains("Sequence")) {
      seen_sequence = true;
    } else if (piece.contains("SpecialToken") && piece["SpecialToken"].contains("id")) {
      const json& name = piece["SpecialToken"]["id"];
      if (!name.is_string() || !special.contains(name.get<std::string>()))
        fail("[tokenizer] ", at, ": special token ", name.dump(), " is not in special_tokens");
      const json& ids = special[name.get<std::string>()]["ids"];
      if (!ids.is_array()) fail("[tokenizer] ", where, ".special_tokens[", name.dump(), "].ids: expected an array");
      for (const json& id : ids) (seen_sequence ? suffix : prefix).push_back(id.get<int32_t>());
    } else {
      fail("[tokenizer] ", at, ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
}

void parse_post_processor(const json& j, const std::string& where, std::vector<int32_t>& prefix,
                          std::vector<int32_t>& suffix) {
  if (j.is_null()) return;
  if (!j.is_object() || !j.contains("type")) fail("[tokenizer] ", where, ": expected an object with a \"type\"");
  const std::string type = j["type"].is_string() ? j["type"].get<std::string>() : j["type"].dump();
  if (type == "ByteLevel") return;  // only adjusts offsets
  if (type == "TemplateProcessing") return parse_template(j, where, prefix, suffix);
  if (type == "Sequence" && j.contains("processors") && j["processors"].is_array()) {
    for (size_t k = 0; k < j["processors"].size(); ++k)
      parse_post_processor(j["processors"][k], cat(where, ".processors[", k, "]"), prefix, suffix);
    return;
  }
  fail("[tokenizer] ", where, ": post-processor type \"", type,
       "\" is not supported (supported: ByteLevel, TemplateProcessing, Sequence)");
}

AddedToken parse_added_token(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer() || !j.contains("content") ||
      !j["content"].is_string())
    fail("[tokenizer] ", where, ": expected {\"id\": int, \"content\": string, ...}");
  AddedToken t;
  t.id = j["id"].get<int32_t>();
  if (t.id < 0) fail("[tokenizer] ", where, ".id: negative id ", t.id);
  t.content = j["content"].get<std::string>();
  if (t.content.empty()) fail("[tokenizer] ", where, ".content: empty");
  auto flag = [&](const char* key, bool default_value) {
    if (!j.contains(key)) return default_value;
    if (!j[key].is_boolean()) fail("[tokenizer] ", where, ".", key, ": expected true or false");
    return j[key].get<bool>();
  };
  t.special = flag("special", false);
  t.single_word = flag("single_word", false);
  t.lstrip = flag("lstrip", false);
  t.rstrip = flag("rstrip", false);
  t.normalized = flag("normalized", !t.special);
  return t;
}

// A special token field of tokenizer_config.json: "text", {"content": "text", ...} or null ("" = none).
std::string config_token(const json& config, const char* key, const std::string& where) {
  if (!config.contains(key) || config[key].is_null()) return "";
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  fail("[tokenizer] ", where, ": ", key, ": expected a string, {\"content\": ...} or null");
}

json parse_json(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("[tokenizer] ", source, ": invalid JSON: ", e.what());
  }
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::string tokenizer_path = path, config_path;
  if (fs::is_directory(path)) {
    tokenizer_path = (fs::path(path) / "tokenizer.json").string();
    const std::string candidate = (fs::path(path) / "tokenizer_config.json").string();
    if (fs::exists(candidate)) config_path = candidate;
  }
  if (!fs::exists(tokenizer_path)) fail("[tokenizer] ", tokenizer_path, ": no such file");
  return from_json_text(read_file(tokenizer_path), config_path.empty() ? "" : read_file(config_path), tokenizer_path);
}

Tokenizer Tokenizer::from_json_text(const std::string& tokenizer_json, const std::string& config_json,
                                    const std::string& source) {
  auto impl = std::make_shared<Impl>();
  impl->source = source;
  const json j = parse_json(tokenizer_json, source);
  if (!j.is_object()) fail("[tokenizer] ", source, ": expected a JSON object");
  if (!j.contains("model")) fail("[tokenizer] ", source, ": missing \"model\"");
  if (j.contains("truncation") && !j["truncation"].is_null())
    fail("[tokenizer] ", source, ": truncation: not supported (expected null)");
  if (j.contains("padding") && !j["padding"].is_null())
    fail("[tokenizer] ", source, ": padding: not supported (expected null)");
  impl->model = BpeModel::from_json(j["model"], source + ": model");
  impl->nfc = parse_normalizer(j.value("normalizer", json()), source + ": normalizer");
  impl->pre_tokenizer = PreTokenizer::from_json(j.value("pre_tokenizer", json()), source + ": pre_tokenizer");
  check_decoder(j.value("decoder", json()), source + ": decoder");
  parse_post_processor(j.value("post_processor", json()), source + ": post_processor", impl->prefix_ids,
                       impl->suffix_ids);

  int32_t max_id = impl->model.max_id();
  const json added = j.value("added_tokens", json::array());
  if (!added.is_array()) fail("[tokenizer] ", source, ": added_tokens: expected an array");
  // Hugging Face numbers added tokens itself: the vocabulary id when the content is in the vocabulary,
  // else the next id after the vocabulary and the added tokens before it. The listed ids must agree.
  const auto model_size = static_cast<int32_t>(impl->model.vocab_entries());
  int32_t max_added = -1;
  for (size_t k = 0; k < added.size(); ++k) {
    const std::string where = cat(source, ": added_tokens[", k, "]");
    AddedToken t = parse_added_token(added[k], where);
    int32_t expected = impl->model.token_to_id(t.content);
    if (expected < 0) expected = max_added >= model_size ? max_added + 1 : model_size;
    if (t.id != expected)
      fail("[tokenizer] ", where, ": \"", t.content, "\" has id ", t.id, " but Hugging Face tokenizers assigns ",
           expected, " (added tokens follow the vocabulary without gaps)");
    max_added = std::max(max_added, t.id);
    max_id = std::max(max_id, t.id);
    impl->added.push_back(std::move(t));
  }
  const size_t vocab = static_cast<size_t>(max_id) + 1;
  impl->id_to_added.assign(vocab, "");
  impl->special.assign(vocab, 0);
  impl->bytes_of_id.assign(vocab, "");
  std::vector<AddedToken> raw, normalized;
  for (const AddedToken& t : impl->added) {
    impl->id_to_added[t.id] = t.content;
    impl->special[t.id] = t.special ? 1 : 0;
    if (t.normalized) {
      AddedToken n = t;
      if (impl->nfc) {
        n.content.clear();
        nfc::normalize(t.content, n.content);
      }
      normalized.push_back(std::move(n));
    } else {
      raw.push_back(t);
    }
  }
  impl->raw_matcher = AddedTokenMatcher(std::move(raw));
  impl->normalized_matcher = AddedTokenMatcher(std::move(normalized));
  for (size_t id = 0; id < vocab; ++id) {
    const std::string& token =
        impl->id_to_added[id].empty() ? impl->model.id_to_token(static_cast<int32_t>(id)) : impl->id_to_added[id];
    impl->bytes_of_id[id] = byte_level::decode(token);
  }
  for (int32_t id : impl->prefix_ids)
    if (!impl->valid_id(id)) fail("[tokenizer] ", source, ": post_processor: id ", id, " is not in the vocabulary");
  for (int32_t id : impl->suffix_ids)
    if (!impl->valid_id(id)) fail("[tokenizer] ", source, ": post_processor: id ", id, " is not in the vocabulary");

  if (!config_json.empty()) {
    const std::string where = "tokenizer_config.json";
    const json config = parse_json(config_json, where);
    if (!config.is_object()) fail("[tokenizer] ", where, ": expected a JSON object");
    Tokenizer probe(impl);
    auto resolve = [&](const char* key, std::string* content) {
      const std::string token = config_token(config, key, where);
      if (token.empty()) return int32_t{-1};
      const int32_t id = probe.token_to_id(token);
      if (id < 0) fail("[tokenizer] ", where, ": ", key, " \"", token, "\" is not a token of ", source);
      if (content) *content = token;
      return id;
    };
    const int32_t eos = resolve("eos_token", &impl->eos_token);
    const int32_t pad = resolve("pad_token", nullptr);
    const int32_t bos = resolve("bos_token", &impl->bos_token);
    impl->eos = eos;
    impl->pad = pad;
    impl->bos = bos;
    // add_bos_token / add_eos_token, when given, decide whether bos / eos surround encoded text.
    auto apply_flag = [&](const char* key, int32_t id, std::vector<int32_t>& ids, bool front) {
      if (!config.contains(key) || config[key].is_null()) return;
      if (!config[key].is_boolean()) fail("[tokenizer] ", where, ": ", key, ": expected true or false");
      if (id < 0) return;
      const bool present = !ids.empty() && (front ? ids.front() : ids.back()) == id;
      if (config[key].get<bool>() && !present) ids.insert(front ? ids.begin() : ids.end(), id);
      if (!config[key].get<bool>() && present) ids.erase(front ? ids.begin() : ids.end() - 1);
    };
    apply_flag("add_bos_token", bos, impl->prefix_ids, true);
    apply_flag("add_eos_token", eos, impl->suffix_ids, false);
    if (config.contains("chat_template")) {
      const json& ct = config["chat_template"];
      if (ct.is_string()) {
        impl->chat_template = ct.get<std::string>();
      } else if (ct.is_array()) {
        for (const json& entry : ct)
          if (entry.is_object() && entry.contains("name") && entry["name"] == "default" && entry.contains("template") &&
              entry["template"].is_string())
            impl->chat_template = entry["template"].get<std::string>();
        if (impl->chat_template.empty())
          fail("[tokenizer] ", where, ": chat_template: a list without a {\"name\": \"default\"} template");
      } else if (!ct.is_null()) {
        fail("[tokenizer] ", where, ": chat_template: expected a string or a list of {name, template}");
      }
    }
  }
  return Tokenizer(impl);
}

void Tokenizer::Impl::encode_into(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const {
  utf8::check_valid(text, "[tokenizer] encode");
  if (add_special_tokens) out.insert(out.end(), prefix_ids.begin(), prefix_ids.end());
  thread_local std::vector<TextSegment> raw_segments, normalized_segments;
  thread_local std::string normalized, storage;
  thread_local std::vector<std::string_view> words;
  raw_segments.clear();
  raw_matcher.split(text, raw_segments);
  for (const TextSegment& raw : raw_segments) {
    if (raw.id >= 0) {
      out.push_back(raw.id);
      continue;
    }
    std::string_view piece = text.substr(raw.begin, raw.end - raw.begin);
    if (piece.empty()) continue;
    if (nfc && !nfc::quick_check(piece)) {
      normalized.clear();
      nfc::normalize(piece, normalized);
      piece = normalized;
    }
    normalized_segments.clear();
    if (normalized_matcher.empty())
      normalized_segments.push_back({0, piece.size(), -1});
    else
      normalized_matcher.split(piece, normalized_segments);
    for (const TextSegment& seg : normalized_segments) {
      if (seg.id >= 0) {
        out.push_back(seg.id);
        continue;
      }
      words.clear();
      pre_tokenizer->split(piece.substr(seg.begin, seg.end - seg.begin), storage, words);
      for (std::string_view word : words) model.encode_word(word, out);
    }
  }
  if (add_special_tokens) out.insert(out.end(), suffix_ids.begin(), suffix_ids.end());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  impl_->encode_into(text, add_special_tokens, ids);
  return ids;
}

std::vector<std::vector<int32_t>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                          bool add_special_tokens) const {
  std::vector<std::vector<int32_t>> result(texts.size());
  std::exception_ptr error;
  const auto n = static_cast<int64_t>(texts.size());
#pragma omp parallel for schedule(dynamic, 8) num_threads(num_threads())
  for (int64_t i = 0; i < n; ++i) {
    try {
      result[i].reserve(texts[i].size() / 3 + 4);
      impl_->encode_into(texts[i], add_special_tokens, result[i]);
    } catch (...) {
#pragma omp critical(grpo_tokenizer_batch_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return result;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (!impl_->valid_id(id))
      fail("[tokenizer] decode: id ", id, " is not in the vocabulary (0..", vocab_size() - 1, ")");
    if (skip_special_tokens && impl_->special[id]) continue;
    bytes.append(impl_->bytes_of_id[id]);
  }
  std::string text;
  text.reserve(bytes.size());
  utf8::append_lossy(text, bytes);
  return text;
}

int32_t Tokenizer::token_to_id(std::string_view token) const {
  for (const AddedToken& t : impl_->added)
    if (t.content == token) return t.id;
  return impl_->model.token_to_id(token);
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (!impl_->valid_id(id)) return "";
  return impl_->id_to_added[id].empty() ? impl_->model.id_to_token(id) : impl_->id_to_added[id];
}

int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(impl_->bytes_of_id.size()); }
int32_t Tokenizer::eos_id() const { return impl_->eos; }
int32_t Tokenizer::pad_id() const { return impl_->pad; }
int32_t Tokenizer::bos_id() const { return impl_->bos; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }
bool Tokenizer::is_special(int32_t id) const { return impl_->valid_id(id) && impl_->special[id]; }

const std::string& Tokenizer::token_bytes(int32_t id) const {
  if (!impl_->valid_id(id)) fail("[tokenizer] id ", id, " is not in the vocabulary (0..", vocab_size() - 1, ")");
  return impl_->bytes_of_id[id];
}

std::vector<int32_t> Tokenizer::stop_ids() const {
  std::vector<int32_t> ids;
  auto add = [&](int32_t id) {
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  add(impl_->eos);
  add(token_to_id("<|im_end|>"));
  add(token_to_id("<|endoftext|>"));
  return ids;
}

}  // namespace grpo
