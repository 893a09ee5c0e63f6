// Checkpoint folders (see checkpoint.h): validated opening of single-file and sharded Hugging Face
// checkpoints, and atomic folder saves (write "<dir>.partial", then exchange it with dir).
#include "model/checkpoint.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_set>

#include "core/error.h"
#include "core/files.h"

namespace grpo {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

bool is_rotary_buffer(const std::string& name) {
  const std::string suffix = "rotary_emb.inv_freq";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// weight_map of an index file: tensor name -> shard file name (a plain name inside the folder).
std::vector<std::pair<std::string, std::string>> read_weight_map(const std::string& index_path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(index_path));
  } catch (const nlohmann::json::exception& e) {
    fail("[checkpoint] ", index_path, ": not valid JSON: ", e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    fail("[checkpoint] ", index_path, ": expected an object with \"weight_map\": {tensor name: shard file}");
  std::vector<std::pair<std::string, std::string>> map;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string())
      fail("[checkpoint] ", index_path, ": weight_map \"", name, "\": expected a file name, got ", file.dump());
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "." || f == "..")
      fail("[checkpoint] ", index_path, ": weight_map \"", name, "\": \"", f,
           "\" is not a plain file name inside the checkpoint folder");
    map.emplace_back(name, f);
  }
  return map;
}

void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail("[checkpoint] cannot open directory ", path, ": ", std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail("[checkpoint] cannot fsync ", path, ": ", std::strerror(errno));
}

// Puts the folder `from` at `to`, replacing (and deleting) any folder there. With RENAME_EXCHANGE the
// swap is a single atomic step; filesystems without it fall back to two renames.
void swap_into_place(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (!fs::exists(to)) {
    if (std::rename(from.c_str(), to.c_str()) != 0)
      fail("[checkpoint] cannot rename ", from, " to ", to, ": ", std::strerror(errno));
    return;
  }
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(from, ec);  // now holds the previous checkpoint
    return;
  }
  const std::string old = to + ".old";
  fs::remove_all(old, ec);
  if (std::rename(to.c_str(), old.c_str()) != 0 || std::rename(from.c_str(), to.c_str()) != 0)
    fail("[checkpoint] cannot move ", from, " into place at ", to, ": ", std::strerror(errno));
  fs::remove_all(old, ec);
}

struct ShardPlan {
  std::string file;
  std::vector<size_t> tensors;  // indices into the ordered tensor list
};

std::vector<ShardPlan> plan_shards(const std::vector<int64_t>& bytes, int64_t max_shard_bytes) {
  std::vector<ShardPlan> shards(1);
  int64_t used = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (max_shard_bytes > 0 && used > 0 && used + bytes[i] > max_shard_bytes) {
      shards.emplace_back();
      used = 0;
    }
    shards.back().tensors.push_back(i);
    used += bytes[i];
  }
  if (shards.size() == 1) {
    shards[0].file = kSingleFile;
  } else {
    for (size_t s = 0; s < shards.size(); ++s) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
      shards[s].file = name;
    }
  }
  return shards;
}

void write_shard(const std::string& path, const std::vector<const NamedF32*>& tensors, DType save_dtype) {
  const StDType st = save_dtype == DType::BF16 ? StDType::BF16 : StDType::F32;
  std::vector<StTensorOut> outs;
  for (const NamedF32* t : tensors) outs.push_back({t->name, st, t->shape, t->data});
  write_safetensors_with(path, outs, {{"format", "pt"}}, [&](size_t i, std::FILE* f) {
    const float* src = tensors[i]->data;
    const int64_t n = st_numel(tensors[i]->shape);
    bool ok = true;
    if (st == StDType::F32) {
      ok = n == 0 || std::fwrite(src, 4, static_cast<size_t>(n), f) == static_cast<size_t>(n);
    } else {
      constexpr int64_t kChunk = 1 << 16;
      std::vector<bf16_t> buf(static_cast<size_t>(std::min(n, kChunk)));
      for (int64_t b = 0; b < n && ok; b += kChunk) {
        const int64_t m = std::min(kChunk, n - b);
        for (int64_t k = 0; k < m; ++k) buf[k] = f32_to_bf16(src[b + k]);
        ok = std::fwrite(buf.data(), 2, static_cast<size_t>(m), f) == static_cast<size_t>(m);
      }
    }
    if (!ok) fail("[checkpoint] cannot write ", path, ": ", std::strerror(errno));
  });
}

// Orders the given tensors as expected_tensors(c) and checks that they are exactly those.
std::vector<const NamedF32*> order_tensors(const std::string& dir, const ModelConfig& c,
                                           const std::vector<NamedF32>& tensors) {
  std::unordered_map<std::string, const NamedF32*> by_name;
  for (const NamedF32& t : tensors)
    if (!by_name.emplace(t.name, &t).second) fail("[checkpoint] saving ", dir, ": tensor \"", t.name, "\" given twice");
  std::vector<const NamedF32*> ordered;
  for (const TensorSpec& spec : expected_tensors(c)) {
    auto it = by_name.find(spec.name);
    if (it == by_name.end()) fail("[checkpoint] saving ", dir, ": missing tensor \"", spec.name, "\"");
    if (it->second->shape != spec.shape)
      fail("[checkpoint] saving ", dir, ": tensor \"", spec.name, "\" has shape ", st_shape_str(it->second->shape),
           ", expected ", st_shape_str(spec.shape));
    if (!it->second->data && st_numel(spec.shape) > 0)
      fail("[checkpoint] saving ", dir, ": tensor \"", spec.name, "\" has no data");
    ordered.push_back(it->second);
    by_name.erase(it);
  }
  if (!by_name.empty())
    fail("[checkpoint] saving ", dir, ": tensor \"", by_name.begin()->first, "\" is not a parameter of ",
         c.architecture, " with this config", c.tie_word_embeddings ? " (lm_head is tied)" : "");
  return ordered;
}

}  // namespace

ModelConfig read_model_folder_config(const std::string& dir) {
  const std::string config_path = dir + "/config.json";
  std::error_code ec;
  if (!fs::exists(dir, ec)) fail("[checkpoint] ", dir, ": no such model folder (", ec ? ec.message() : "it does not exist", ")");
  if (!fs::is_directory(dir)) fail("[checkpoint] ", dir, ": not a directory (expected a Hugging Face model folder)");
  if (!fs::exists(config_path)) fail("[checkpoint] ", dir, ": no config.json");
  return load_model_config(config_path);
}

Checkpoint Checkpoint::open(const std::string& dir) {
  Checkpoint ck;
  ck.dir_ = dir;
  ck.config_ = read_model_folder_config(dir);

  const std::string index_path = dir + "/" + kIndexFile;
  if (fs::exists(index_path)) {
    auto weight_map = read_weight_map(index_path);
    std::set<std::string> shard_names;
    for (const auto& [name, file] : weight_map) shard_names.insert(file);
    std::unordered_map<std::string, size_t> shard_index;
    for (const std::string& file : shard_names) {
      const std::string path = dir + "/" + file;
      if (!fs::exists(path)) fail("[checkpoint] ", index_path, ": shard \"", file, "\" does not exist");
      shard_index[file] = ck.files_.size();
      ck.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(path)));
      ck.file_names_.push_back(path);
    }
    for (const auto& [name, file] : weight_map) {
      size_t s = shard_index[file];
      if (!ck.files_[s]->find(name))
        fail("[checkpoint] ", index_path, ": tensor \"", name, "\" is listed in shard \"", file,
             "\" but absent from it");
      ck.where_[name] = s;
    }
    for (size_t s = 0; s < ck.files_.size(); ++s)
      for (const StTensor& t : ck.files_[s]->tensors()) {
        auto it = ck.where_.find(t.name);
        if (it == ck.where_.end() || it->second != s)
          fail("[checkpoint] ", ck.file_names_[s], ": tensor \"", t.name, "\" is not listed for this shard in ",
               kIndexFile);
      }
  } else if (fs::exists(dir + "/" + kSingleFile)) {
    ck.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(dir + "/" + kSingleFile)));
    ck.file_names_.push_back(dir + "/" + kSingleFile);
    for (const StTensor& t : ck.files_[0]->tensors()) ck.where_[t.name] = 0;
  } else {
    fail("[checkpoint] ", dir, ": no ", kSingleFile, " and no ", kIndexFile);
  }

  ModelConfig& c = ck.config_;
  if (!c.tie_word_embeddings && !ck.where_.count("lm_head.weight")) {
    c.tie_word_embeddings = true;
    ck.notes_.push_back("config.json says tie_word_embeddings false but there is no lm_head.weight: tied to the "
                        "embeddings");
  }
  std::unordered_set<std::string> expected_names;
  for (const TensorSpec& spec : expected_tensors(c)) {
    expected_names.insert(spec.name);
    const StTensor* t = ck.find(spec.name);
    if (!t)
      fail("[checkpoint] ", dir, ": missing tensor \"", spec.name, "\" (shape ", st_shape_str(spec.shape),
           " from config.json)");
    const std::string& file = ck.file_of(spec.name);
    if (t->shape != spec.shape)
      fail("[checkpoint] ", file, ": tensor \"", spec.name, "\" has shape ", st_shape_str(t->shape), ", expected ",
           st_shape_str(spec.shape), " from config.json");
    if (t->dtype != StDType::F32 && t->dtype != StDType::BF16 && t->dtype != StDType::F16)
      fail("[checkpoint] ", file, ": tensor \"", spec.name, "\" has dtype ", st_dtype_name(t->dtype),
           ", expected F32, BF16 or F16");
  }
  std::vector<std::string> ignored;
  for (const auto& [name, s] : ck.where_) {
    if (expected_names.count(name)) continue;
    const StTensor* t = ck.files_[s]->find(name);
    if (name == "lm_head.weight" && t->shape == std::vector<int64_t>{c.vocab_size, c.hidden_size}) {
      ck.notes_.push_back("lm_head.weight present although tied: ignored (the embeddings are used)");
    } else if (is_rotary_buffer(name)) {
      ck.notes_.push_back("ignored rotary buffer " + name);
    } else {
      fail("[checkpoint] ", ck.file_names_[s], ": unexpected tensor \"", name, "\" ", st_shape_str(t->shape),
           " (not a parameter of ", c.architecture, " with this config.json)");
    }
    ignored.push_back(name);
  }
  for (const std::string& name : ignored) ck.where_.erase(name);
  return ck;
}

const StTensor* Checkpoint::find(const std::string& name) const {
  auto it = where_.find(name);
  return it == where_.end() ? nullptr : files_[it->second]->find(name);
}

void Checkpoint::release(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return;
  const StTensor* t = files_[it->second]->find(name);
  files_[it->second]->release(t->data, t->nbytes);
}

const std::string& Checkpoint::file_of(const std::string& name) const {
  static const std::string none;
  auto it = where_.find(name);
  return it == where_.end() ? none : file_names_[it->second];
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> n;
  for (const TensorSpec& spec : expected_tensors(config_)) n.push_back(spec.name);
  return n;
}

namespace {

// The atomic folder write of save_checkpoint: config.json (dtype save_dtype), the weight files that
// write_weights puts into the partial folder, the extra files, write_more; then swapped into place.
void write_checkpoint_folder(
    const std::string& dir_in, const ModelConfig& c, DType save_dtype,
    const std::function<void(const std::string& partial, const std::string& dir)>& write_weights,
    const std::vector<std::string>& extra_files_to_copy,
    const std::function<void(const std::string& partial_dir)>& write_more) {
  GRPO_CHECK(save_dtype == DType::F32 || save_dtype == DType::BF16, "[checkpoint] saving ", dir_in,
             ": save dtype must be f32 or bf16, got ", dtype_name(save_dtype));
  // Absolute, so that "ck/", "." or "../ck" all have a parent folder for the sibling "<dir>.partial".
  std::string dir = fs::absolute(dir_in).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::error_code ec;
  if (fs::exists(dir)) {
    if (!fs::is_directory(dir)) fail("[checkpoint] saving ", dir, ": exists and is not a directory");
    if (!fs::is_empty(dir) && !fs::exists(dir + "/config.json"))
      fail("[checkpoint] saving ", dir, ": refusing to replace a non-empty folder that is not a checkpoint "
           "(no config.json)");
  }
  const fs::path parent = fs::path(dir).parent_path();
  make_dirs(parent.string());
  const std::string partial = dir + ".partial";
  fs::remove_all(partial, ec);  // a leftover of a crashed save
  make_dirs(partial);
  try {
    ModelConfig saved = c;
    saved.dtype = save_dtype;
    write_file_atomic(partial + "/config.json", model_config_to_json(saved).dump(2) + "\n");
    write_weights(partial, dir);
    for (const std::string& src : extra_files_to_copy) {
      const std::string name = fs::path(src).filename().string();
      const bool weights_file = name.rfind("model", 0) == 0 && name.find(".safetensors") != std::string::npos;
      if (name == "config.json" || weights_file)
        fail("[checkpoint] saving ", dir, ": extra file ", src, " would overwrite the checkpoint's own ", name);
      if (!fs::is_regular_file(src)) fail("[checkpoint] saving ", dir, ": extra file ", src, " does not exist");
      write_file_atomic(partial + "/" + name, read_file(src));
    }
    if (write_more) write_more(partial);
    fsync_path(partial);
    swap_into_place(partial, dir);
    fsync_path(parent.string());
  } catch (...) {
    fs::remove_all(partial, ec);
    throw;
  }
}

void write_index(const std::string& partial, const nlohmann::json& weight_map, int64_t total) {
  const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_file_atomic(partial + "/" + kIndexFile, index.dump(2) + "\n");
}

}  // namespace

void save_checkpoint(const std::string& dir, const ModelConfig& c, const std::vector<NamedF32>& tensors,
                     DType save_dtype, int64_t max_shard_bytes, const std::vector<std::string>& extra_files_to_copy,
                     const std::function<void(const std::string& partial_dir)>& write_more) {
  GRPO_CHECK(max_shard_bytes >= 0, "[checkpoint] saving ", dir, ": max_shard_bytes must be >= 0");
  const std::vector<const NamedF32*> ordered = order_tensors(dir, c, tensors);
  auto write_weights = [&](const std::string& partial, const std::string&) {
    const int64_t elem = dtype_size(save_dtype);
    std::vector<int64_t> bytes;
    for (const NamedF32* t : ordered) bytes.push_back(st_numel(t->shape) * elem);
    std::vector<ShardPlan> shards = plan_shards(bytes, max_shard_bytes);
    nlohmann::json weight_map = nlohmann::json::object();
    int64_t total = 0;
    for (const ShardPlan& s : shards) {
      std::vector<const NamedF32*> part;
      for (size_t i : s.tensors) {
        part.push_back(ordered[i]);
        weight_map[ordered[i]->name] = s.file;
        total += bytes[i];
      }
      write_shard(partial + "/" + s.file, part, save_dtype);
    }
    if (shards.size() > 1) write_index(partial, weight_map, total);
  };
  write_checkpoint_folder(dir, c, save_dtype, write_weights, extra_files_to_copy, write_more);
}

std::vector<ModelFilePart> model_file_parts(const ModelConfig& c, int ranks) {
  GRPO_CHECK(ranks >= 1, "[checkpoint] model files for ", ranks, " ranks");
  std::vector<std::pair<std::string, int64_t>> tensors;  // HF order, tied lm_head left out
  int64_t total = 0;
  for (const TensorSpec& t : expected_tensors(c)) {
    tensors.emplace_back(t.name, st_numel(t.shape));
    total += st_numel(t.shape);
  }
  // Tensor i goes to the rank in whose even share of the elements it starts: contiguous, balanced.
  std::vector<ModelFilePart> parts(static_cast<size_t>(ranks));
  int64_t before = 0;
  for (const auto& [name, n] : tensors) {
    const int r = static_cast<int>(std::min<int64_t>(ranks - 1, before * ranks / std::max<int64_t>(1, total)));
    parts[r].tensors.push_back(name);
    before += n;
  }
  int files = 0;
  for (const ModelFilePart& p : parts) files += !p.tensors.empty();
  int k = 0;
  for (ModelFilePart& p : parts) {
    if (p.tensors.empty()) continue;
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", ++k, files);
    p.file = files == 1 ? kSingleFile : name;
  }
  return parts;
}

void save_checkpoint_from_parts(const std::string& dir, const ModelConfig& c, DType save_dtype,
                                const std::vector<ModelFilePart>& parts, const std::string& stage_dir,
                                const std::vector<std::string>& extra_files_to_copy,
                                const std::function<void(const std::string& partial_dir)>& write_more) {
  std::map<std::string, int64_t> numel;
  for (const TensorSpec& t : expected_tensors(c)) numel[t.name] = st_numel(t.shape);
  auto write_weights = [&](const std::string& partial, const std::string&) {
    nlohmann::json weight_map = nlohmann::json::object();
    int64_t total = 0, files = 0;
    for (const ModelFilePart& p : parts) {
      if (p.tensors.empty()) continue;
      const std::string from = stage_dir + "/" + p.file;
      GRPO_CHECK(file_exists(from), "[checkpoint] ", from,
                 ": a rank's model file is not there; the run folder must be on a file system every rank sees");
      fs::rename(from, partial + "/" + p.file);
      for (const std::string& t : p.tensors) {
        weight_map[t] = p.file;
        total += numel.at(t) * dtype_size(save_dtype);
      }
      ++files;
    }
    GRPO_CHECK(files >= 1, "[checkpoint] saving ", dir, ": no model file");
    if (files > 1) write_index(partial, weight_map, total);
  };
  write_checkpoint_folder(dir, c, save_dtype, write_weights, extra_files_to_copy, write_more);
}

}  // namespace grpo
