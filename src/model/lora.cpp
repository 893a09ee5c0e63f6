// LoRA adapters: module selection as PEFT resolves it, the adapter arena, PEFT folder IO, initialisation and
// merging (see lora.h).
#include "model/lora.h"

#include <cmath>
#include <filesystem>
#include <regex>
#include <set>

#include "core/files.h"
#include "core/rng.h"
#include "kernels/ops.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace grpo {

namespace {

constexpr const char* kSlotModules[kLoraSlots] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                  "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                                  "mlp.down_proj"};

std::string slot_module_name(const ModelConfig& c, int64_t layer, int s) {
  return c.text_prefix() + "layers." + std::to_string(layer) + "." + kSlotModules[s];
}

constexpr const char* kTowerModules[kTowerSlots] = {"attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2"};
constexpr const char* kMergerModules[kMergerSlots] = {"linear_fc1", "linear_fc2"};

std::string tower_module_name(int64_t block, int s) {
  return "model.visual.blocks." + std::to_string(block) + "." + kTowerModules[s];
}

// Merger m: 0 the main merger, 1 + k DeepStack merger k.
std::string merger_module_name(int64_t m, int s) {
  return (m == 0 ? std::string("model.visual.merger.")
                 : "model.visual.deepstack_merger_list." + std::to_string(m - 1) + ".") +
         kMergerModules[s];
}

int64_t merger_count(const ModelConfig& c) {
  return c.has_vision() ? 1 + static_cast<int64_t>(c.vision.deepstack_visual_indexes.size()) : 0;
}

// Every adaptable linear module of `c`, the tower's included, in layout order.
std::vector<std::string> all_linear_modules(const ModelConfig& c) {
  std::vector<std::string> out;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (int s = 0; s < kLoraSlots; ++s) out.push_back(slot_module_name(c, l, s));
  for (int64_t b = 0; b < (c.has_vision() ? c.vision.depth : 0); ++b)
    for (int s = 0; s < kTowerSlots; ++s) out.push_back(tower_module_name(b, s));
  for (int64_t m = 0; m < merger_count(c); ++m)
    for (int s = 0; s < kMergerSlots; ++s) out.push_back(merger_module_name(m, s));
  return out;
}

// The tower's patch embedding: a Conv3d that PEFT adapts when a name selects it (e.g. "proj"); we do not.
constexpr const char* kPatchEmbedModule = "model.visual.patch_embed.proj";

std::string last_component(const std::string& module) { return module.substr(module.rfind('.') + 1); }

bool name_matches(const std::string& module, const std::string& entry) {
  return module == entry || (module.size() > entry.size() && module.ends_with(entry) &&
                             module[module.size() - entry.size() - 1] == '.');
}

// Whether `sel` selects `module` (a linear); entries_hit counts the list entries that matched.
bool selects(const ModuleSelector& sel, const std::regex* re, const std::string& module, std::vector<int>* hits) {
  switch (sel.kind) {
    case ModuleSelector::Kind::None: return false;
    case ModuleSelector::Kind::AllLinear: return true;
    case ModuleSelector::Kind::Regex: return std::regex_match(module, *re);
    case ModuleSelector::Kind::List: {
      bool any = false;
      for (size_t i = 0; i < sel.names.size(); ++i)
        if (name_matches(module, sel.names[i])) {
          any = true;
          if (hits) (*hits)[i] += 1;
        }
      return any;
    }
  }
  return false;
}

std::regex compile(const ModuleSelector& sel, const std::string& where) {
  if (sel.kind != ModuleSelector::Kind::Regex) return std::regex();
  try {
    return std::regex(sel.regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fail("[lora] ", where, ": \"", sel.regex, "\" is not a valid regular expression (", e.what(), ")");
  }
}

Shape shape2(int64_t a, int64_t b) { return Shape{a, b}; }

const nlohmann::json* field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

ModuleSelector ModuleSelector::from_json(const nlohmann::json& j, const std::string& where) {
  ModuleSelector s;
  if (j.is_null()) return s;
  if (j.is_string()) {
    const std::string v = j.get<std::string>();
    std::string lower = v;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "all-linear") {
      s.kind = Kind::AllLinear;
    } else if (!v.empty()) {
      s.kind = Kind::Regex;
      s.regex = v;
    }
    return s;
  }
  GRPO_CHECK(j.is_array(), "[lora] ", where, ": expected \"all-linear\", a list of module names or a regular "
             "expression, got ", j.dump());
  s.kind = Kind::List;
  for (const nlohmann::json& e : j) {
    GRPO_CHECK(e.is_string() && !e.get<std::string>().empty(), "[lora] ", where,
               ": every entry must be a non-empty module name, got ", e.dump());
    s.names.push_back(e.get<std::string>());
  }
  if (s.names.empty()) s.kind = Kind::None;
  return s;
}

nlohmann::json ModuleSelector::to_json() const {
  switch (kind) {
    case Kind::None: return nullptr;
    case Kind::AllLinear: return "all-linear";
    case Kind::Regex: return regex;
    case Kind::List: return names;
  }
  return nullptr;
}

float LoraConfig::scale() const {
  const double r = static_cast<double>(rank);
  return static_cast<float>(use_rslora ? alpha / std::sqrt(r) : alpha / r);
}

const char* lora_slot_module(LoraSlot s) { return kSlotModules[static_cast<int>(s)]; }

LoraSlotShape lora_slot_shape(const ModelConfig& c, LoraSlot s) {
  const int64_t C = c.hidden_size, Q = c.num_attention_heads * c.head_dim, KV = c.num_key_value_heads * c.head_dim,
                F = c.intermediate_size, W = Q + 2 * KV;
  switch (s) {
    case LoraSlot::Q: return {0, Q, C, W};
    case LoraSlot::K: return {Q, KV, C, W};
    case LoraSlot::V: return {Q + KV, KV, C, W};
    case LoraSlot::O: return {0, C, Q, C};
    case LoraSlot::Gate: return {0, F, C, 2 * F};
    case LoraSlot::Up: return {F, F, C, 2 * F};
    case LoraSlot::Down: return {0, C, F, C};
  }
  fail("[lora] unknown slot");
}

LoraShape tower_slot_shape(const VisionConfig& v, TowerSlot s) {
  const int64_t D = v.hidden_size, F = v.intermediate_size;
  switch (s) {
    case TowerSlot::Qkv: return {3 * D, D};
    case TowerSlot::Proj: return {D, D};
    case TowerSlot::Fc1: return {F, D};
    case TowerSlot::Fc2: return {D, F};
  }
  fail("[lora] unknown tower slot");
}

LoraShape merger_slot_shape(const VisionConfig& v, MergerSlot s) {
  return s == MergerSlot::Fc1 ? LoraShape{v.merged_dim(), v.merged_dim()} : LoraShape{v.out_hidden_size, v.merged_dim()};
}

std::string lora_key(const std::string& module, bool b_matrix) {
  return "base_model.model." + module + (b_matrix ? ".lora_B.weight" : ".lora_A.weight");
}

LoraAdapters::LoraAdapters(const ModelConfig& c, const LoraConfig& cfg, const std::string& source, bool vision_frozen)
    : model_(c), cfg_(cfg), params_(DType::F32) {
  GRPO_CHECK(cfg_.rank >= 1, "[lora] ", source, ": rank (r / lora_rank) must be at least 1, got ", cfg_.rank);
  GRPO_CHECK(std::isfinite(cfg_.alpha) && cfg_.alpha > 0, "[lora] ", source, ": lora_alpha must be positive, got ",
             cfg_.alpha);
  GRPO_CHECK(!cfg_.target.empty(), "[lora] ", source, ": target_modules is empty: name the modules to adapt "
             "(\"all-linear\" or a list such as [q_proj, v_proj])");
  const std::regex target_re = compile(cfg_.target, source + " target_modules");
  const std::regex exclude_re = compile(cfg_.exclude, source + " exclude_modules");
  std::vector<int> hits(cfg_.target.names.size(), 0), excl_hits(cfg_.exclude.names.size(), 0);
  auto chosen = [&](const std::string& m) {
    return selects(cfg_.target, &target_re, m, &hits) && !selects(cfg_.exclude, &exclude_re, m, &excl_hits);
  };
  adapted_.assign(c.num_hidden_layers, {});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (int s = 0; s < kLoraSlots; ++s)
      if (chosen(slot_module_name(c, l, s))) {
        adapted_[l][s] = true;
        modules_.push_back(slot_module_name(c, l, s));
      }
  const int64_t depth = c.has_vision() ? c.vision.depth : 0;
  tower_adapted_.assign(depth, {});
  merger_adapted_.assign(merger_count(c), {});
  if (!vision_frozen) {
    for (int64_t b = 0; b < depth; ++b)
      for (int s = 0; s < kTowerSlots; ++s)
        if (chosen(tower_module_name(b, s))) {
          tower_adapted_[b][s] = true;
          modules_.push_back(tower_module_name(b, s));
        }
    for (int64_t m = 0; m < merger_count(c); ++m)
      for (int s = 0; s < kMergerSlots; ++s)
        if (chosen(merger_module_name(m, s))) {
          merger_adapted_[m][s] = true;
          modules_.push_back(merger_module_name(m, s));
        }
  } else {  // a frozen tower's modules still count as matches of a list entry (it names existing modules)
    for (const std::string& m : all_linear_modules(c))
      if (m.starts_with("model.visual.")) selects(cfg_.target, &target_re, m, &hits);
  }
  if (!vision_frozen && c.has_vision() && cfg_.target.kind != ModuleSelector::Kind::AllLinear)
    GRPO_CHECK(!chosen(kPatchEmbedModule), "[lora] ", source, ": target_modules selects \"", kPatchEmbedModule,
               "\", the vision tower's patch embedding (a Conv3d, which PEFT would adapt as one): LoRA on it is not "
               "supported; exclude it (exclude_modules: [patch_embed.proj]) or name the modules in full");
  tower_modules_ = static_cast<int64_t>(modules_.size());
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (int s = 0; s < kLoraSlots; ++s) tower_modules_ -= adapted_[l][s];
  for (size_t i = 0; i < hits.size(); ++i)
    GRPO_CHECK(hits[i] > 0, "[lora] ", source, ": target_modules entry \"", cfg_.target.names[i],
               "\" matches no linear module of ", c.architecture, " (adaptable: q_proj, k_proj, v_proj, o_proj, "
               "gate_proj, up_proj, down_proj, e.g. ", slot_module_name(c, 0, 0),
               c.has_vision() ? "; the vision tower's qkv, proj, linear_fc1, linear_fc2, e.g. " + tower_module_name(0, 0)
                              : std::string(), ")");
  GRPO_CHECK(!modules_.empty(), "[lora] ", source, ": target_modules (", cfg_.target.to_json().dump(),
             ") minus exclude_modules selects no linear module of ", c.architecture);
  // Per layer and input group: the A matrices back to back (one [g r, in] matrix), then the B matrices.
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (const LoraGroup& g : kLoraGroups) {
      bool first_a = true;
      for (int s = g.first; s <= g.last; ++s)
        if (adapted_[l][s]) {
          params_.add(lora_key(slot_module_name(c, l, s), false),
                      shape2(cfg_.rank, lora_slot_shape(c, static_cast<LoraSlot>(s)).in), /*pack=*/!first_a);
          first_a = false;
        }
      for (int s = g.first; s <= g.last; ++s)
        if (adapted_[l][s])
          params_.add(lora_key(slot_module_name(c, l, s), true),
                      shape2(lora_slot_shape(c, static_cast<LoraSlot>(s)).out, cfg_.rank));
    }
  // The tower's: each module's A, then its B; the blocks, then the mergers.
  auto add_pair = [&](const std::string& module, LoraShape sh) {
    params_.add(lora_key(module, false), shape2(cfg_.rank, sh.in));
    params_.add(lora_key(module, true), shape2(sh.out, cfg_.rank));
  };
  for (int64_t b = 0; b < depth; ++b)
    for (int s = 0; s < kTowerSlots; ++s)
      if (tower_adapted_[b][s]) add_pair(tower_module_name(b, s), tower_slot_shape(c.vision, static_cast<TowerSlot>(s)));
  for (int64_t m = 0; m < merger_count(c); ++m)
    for (int s = 0; s < kMergerSlots; ++s)
      if (merger_adapted_[m][s])
        add_pair(merger_module_name(m, s), merger_slot_shape(c.vision, static_cast<MergerSlot>(s)));
  params_.allocate();
  params_.zero();
  tensors_ = resolve(params_);
}

int LoraAdapters::group(int64_t l, int gi, const LoraTensors* grads, LoraModule* mods, const float** A,
                        float** dA) const {
  const LoraGroup& grp = kLoraGroups[gi];
  int g = 0;
  for (int k = grp.first; k <= grp.last; ++k) {
    const LoraPair& p = tensors_.layers[l].slot[k];
    if (!p.A) continue;
    const LoraSlotShape sh = lora_slot_shape(model_, static_cast<LoraSlot>(k));
    const LoraPair* gp = grads ? &grads->layers[l].slot[k] : nullptr;
    if (g == 0) {
      *A = p.A;
      *dA = gp ? gp->A : nullptr;
    }
    // The layout (see the constructor and declare) puts a group's A matrices back to back.
    GRPO_CHECK(p.A == *A + g * cfg_.rank * sh.in && (!gp || gp->A == *dA + g * cfg_.rank * sh.in),
               "[lora] the A matrix of ", slot_module_name(model_, l, k), " does not follow its group's previous one");
    mods[g++] = {p.B, gp ? gp->B : nullptr, sh.row_offset, sh.out};
  }
  return g;
}

void LoraAdapters::declare(Arena& a) const {
  int64_t end = -1;  // a tensor that directly follows the previous one is packed after it in `a` too
  for (const auto& [name, view] : params_.entries()) {
    const int64_t off = params_.offset(name);
    a.add(name, view.shape, /*pack=*/off == end);
    end = off + view.numel();
  }
}

LoraTensors LoraAdapters::resolve(const Arena& a) const {
  LoraTensors t;
  t.layers.resize(model_.num_hidden_layers);
  for (int64_t l = 0; l < model_.num_hidden_layers; ++l)
    for (int s = 0; s < kLoraSlots; ++s)
      if (adapted_[l][s]) {
        const std::string m = slot_module_name(model_, l, s);
        t.layers[l].slot[s] = {a.view(lora_key(m, false)).f32(), a.view(lora_key(m, true)).f32()};
      }
  auto pair = [&](const std::string& m) { return LoraPair{a.view(lora_key(m, false)).f32(), a.view(lora_key(m, true)).f32()}; };
  t.tower.resize(tower_adapted_.size());
  for (size_t b = 0; b < tower_adapted_.size(); ++b)
    for (int s = 0; s < kTowerSlots; ++s)
      if (tower_adapted_[b][s]) t.tower[b][s] = pair(tower_module_name(static_cast<int64_t>(b), s));
  t.mergers.resize(merger_adapted_.size());
  for (size_t m = 0; m < merger_adapted_.size(); ++m)
    for (int s = 0; s < kMergerSlots; ++s)
      if (merger_adapted_[m][s]) t.mergers[m][s] = pair(merger_module_name(static_cast<int64_t>(m), s));
  return t;
}

int64_t LoraAdapters::first_tower_block() const {
  for (size_t b = 0; b < tower_adapted_.size(); ++b)
    for (bool a : tower_adapted_[b])
      if (a) return static_cast<int64_t>(b);
  return static_cast<int64_t>(tower_adapted_.size());
}

LoraConfig LoraAdapters::read_config(const std::string& dir) {
  const std::string path = dir + "/adapter_config.json";
  GRPO_CHECK(std::filesystem::exists(path), "[lora] ", dir, ": no adapter_config.json (expected a PEFT LoRA "
             "adapter folder: adapter_config.json + adapter_model.safetensors)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail("[lora] ", path, ": not valid JSON (", e.what(), ")");
  }
  GRPO_CHECK(j.is_object(), "[lora] ", path, ": expected a JSON object");
  if (const nlohmann::json* t = field(j, "peft_type"))
    GRPO_CHECK(t->is_string() && t->get<std::string>() == "LORA", "[lora] ", path, ": peft_type is ", t->dump(),
               ", expected \"LORA\"");
  LoraConfig cfg;
  const nlohmann::json* r = field(j, "r");
  GRPO_CHECK(r && r->is_number_integer(), "[lora] ", path, ": field \"r\" (the rank) must be an integer");
  cfg.rank = r->get<int64_t>();
  const nlohmann::json* alpha = field(j, "lora_alpha");
  GRPO_CHECK(!alpha || alpha->is_number(), "[lora] ", path, ": field \"lora_alpha\" must be a number");
  cfg.alpha = alpha ? alpha->get<double>() : 8.0;  // PEFT's default
  if (const nlohmann::json* rs = field(j, "use_rslora")) {
    GRPO_CHECK(rs->is_boolean(), "[lora] ", path, ": field \"use_rslora\" must be true or false");
    cfg.use_rslora = rs->get<bool>();
  }
  const nlohmann::json* target = field(j, "target_modules");
  GRPO_CHECK(target, "[lora] ", path, ": field \"target_modules\" is missing");
  cfg.target = ModuleSelector::from_json(*target, path + " target_modules");
  if (const nlohmann::json* ex = field(j, "exclude_modules"))
    cfg.exclude = ModuleSelector::from_json(*ex, path + " exclude_modules");
  // PEFT features that change the computation and that we do not implement: refuse rather than ignore.
  for (const char* key : {"use_dora", "lora_bias"})
    if (const nlohmann::json* v = field(j, key))
      GRPO_CHECK(*v == false, "[lora] ", path, ": \"", key, "\" is ", v->dump(), ", not supported");
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    if (const nlohmann::json* v = field(j, key))
      GRPO_CHECK(v->empty(), "[lora] ", path, ": \"", key, "\" (per-module ranks or alphas) is not supported");
  for (const char* key : {"layers_to_transform", "modules_to_save"})
    if (const nlohmann::json* v = field(j, key))
      GRPO_CHECK(v->empty(), "[lora] ", path, ": \"", key, "\" is not supported");
  if (const nlohmann::json* b = field(j, "bias"))
    GRPO_CHECK(*b == "none", "[lora] ", path, ": \"bias\" is ", b->dump(), ", only \"none\" is supported");
  return cfg;
}

std::unique_ptr<LoraAdapters> LoraAdapters::load(const ModelConfig& c, const std::string& dir, bool vision_frozen) {
  auto a = std::make_unique<LoraAdapters>(c, read_config(dir), dir + "/adapter_config.json", vision_frozen);
  a->load_tensors(dir);
  return a;
}

void LoraAdapters::load_tensors(const std::string& dir) {
  const std::string path = dir + "/adapter_model.safetensors";
  GRPO_CHECK(std::filesystem::exists(path), "[lora] ", dir, ": no adapter_model.safetensors");
  SafetensorsFile f = SafetensorsFile::open(path);
  for (const StTensor& t : f.tensors()) {
    const bool tower_key = t.name.starts_with("base_model.model.model.visual.");
    GRPO_CHECK(params_.has(t.name), "[lora] ", path, ": tensor \"", t.name, "\" belongs to no adapted module of ",
               model_.architecture, " (target_modules ", cfg_.target.to_json().dump(), ", rank ", cfg_.rank,
               "; expected keys such as \"", params_.entries().front().first, "\")",
               tower_key && !has_tower() && model_.has_vision()
                   ? ": an adapter of the vision tower, which this run freezes (actor_rollout_ref.actor.freeze_vision_tower)"
                   : "");
  }
  for (const auto& [name, view] : params_.entries()) {
    const StTensor* t = f.find(name);
    GRPO_CHECK(t, "[lora] ", path, ": missing tensor \"", name, "\" (adapter_config.json selects its module)");
    const std::vector<int64_t> want(view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim);
    GRPO_CHECK(t->shape == want, "[lora] ", path, ": tensor \"", name, "\" has shape ", st_shape_str(t->shape),
               ", the model's module needs ", st_shape_str(want), " (r = ", cfg_.rank, ")");
    tensor_to_f32(*t, view.f32(), view.numel(), path);
  }
}

void LoraAdapters::init_default(uint64_t seed) {
  for (int64_t l = 0; l < model_.num_hidden_layers; ++l)
    for (int s = 0; s < kLoraSlots; ++s) {
      const LoraPair& p = tensors_.layers[l].slot[s];
      if (!p.A) continue;
      const LoraSlotShape sh = lora_slot_shape(model_, static_cast<LoraSlot>(s));
      // kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / 6), bound gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in).
      const double bound = 1.0 / std::sqrt(static_cast<double>(sh.in));
      Rng rng({seed, static_cast<uint64_t>(l), static_cast<uint64_t>(s)});
      for (int64_t i = 0; i < cfg_.rank * sh.in; ++i) p.A[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
      std::fill_n(p.B, sh.out * cfg_.rank, 0.0f);
    }
  // The tower's modules: their own streams (key 1: a block, 2: a merger), the text ones unchanged.
  auto init_pair = [&](const LoraPair& p, LoraShape sh, uint64_t kind, uint64_t index, uint64_t s) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(sh.in));
    Rng rng({seed, kind, index, s});
    for (int64_t i = 0; i < cfg_.rank * sh.in; ++i) p.A[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
    std::fill_n(p.B, sh.out * cfg_.rank, 0.0f);
  };
  for (size_t b = 0; b < tensors_.tower.size(); ++b)
    for (int s = 0; s < kTowerSlots; ++s)
      if (tensors_.tower[b][s].A)
        init_pair(tensors_.tower[b][s], tower_slot_shape(model_.vision, static_cast<TowerSlot>(s)), 1, b, s);
  for (size_t m = 0; m < tensors_.mergers.size(); ++m)
    for (int s = 0; s < kMergerSlots; ++s)
      if (tensors_.mergers[m][s].A)
        init_pair(tensors_.mergers[m][s], merger_slot_shape(model_.vision, static_cast<MergerSlot>(s)), 2, m, s);
}

void LoraAdapters::save(const std::string& dir, const std::string& base_model) const {
  std::filesystem::create_directories(dir);
  // target_modules: the module base names when they select exactly the adapted modules, else the full names
  // (so no exclude_modules is needed). Only fields that PEFT has had since rsLoRA (0.7) are written, so older
  // PEFT and vLLM read the file too.
  std::set<std::string> bases;
  for (const std::string& m : modules_) bases.insert(last_component(m));
  std::vector<std::string> peft_sees = all_linear_modules(model_);  // what the base names would select in PEFT
  if (model_.has_vision()) peft_sees.push_back(kPatchEmbedModule);
  size_t by_bases = 0;
  for (const std::string& m : peft_sees)
    for (const std::string& b : bases) by_bases += name_matches(m, b);
  nlohmann::json targets = by_bases == modules_.size() ? nlohmann::json(std::vector<std::string>(bases.begin(), bases.end()))
                                                       : nlohmann::json(modules_);
  nlohmann::json j = {{"peft_type", "LORA"},
                      {"task_type", "CAUSAL_LM"},
                      {"base_model_name_or_path", base_model},
                      {"r", cfg_.rank},
                      {"lora_alpha", cfg_.alpha},
                      {"use_rslora", cfg_.use_rslora},
                      {"target_modules", targets},
                      {"lora_dropout", 0.0},
                      {"bias", "none"},
                      {"fan_in_fan_out", false},
                      {"init_lora_weights", true},
                      {"modules_to_save", nullptr},
                      {"layers_to_transform", nullptr},
                      {"rank_pattern", nlohmann::json::object()},
                      {"alpha_pattern", nlohmann::json::object()},
                      {"inference_mode", true}};
  if (model_.has_vision()) j["task_type"] = nullptr;  // a Qwen3-VL adapter loads on the conditional-generation model
  std::vector<StTensorOut> out;
  for (const auto& [name, view] : params_.entries())
    out.push_back({name, StDType::F32, std::vector<int64_t>(view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim),
                   view.f32()});
  write_safetensors(dir + "/adapter_model.safetensors", out, {{"format", "pt"}});
  write_file_atomic(dir + "/adapter_config.json", j.dump(2) + "\n");
}

void LoraAdapters::merge_into(ModelWeights& w) const {
  GRPO_CHECK(!w.frozen_bf16(), "[lora] merging needs the f32 weights; this base is frozen in bf16 only");
  const ModelTensors& t = w.f32();
  const float s = scale();
  for (int64_t l = 0; l < model_.num_hidden_layers; ++l)
    for (int k = 0; k < kLoraSlots; ++k) {
      const LoraPair& p = tensors_.layers[l].slot[k];
      if (!p.A) continue;
      const LoraSlotShape sh = lora_slot_shape(model_, static_cast<LoraSlot>(k));
      const LayerTensors& lt = t.layers[l];
      void* W = k <= 2 ? lt.wqkv : k == 3 ? lt.wo : k <= 5 ? lt.wgu : lt.wdown;
      float* rows = static_cast<float*>(W) + sh.row_offset * sh.in;  // [out, in]
      ops::gemm(ops::Trans::N, ops::Trans::N, sh.out, sh.in, cfg_.rank, s, p.B, cfg_.rank, p.A, sh.in, 1.0f, rows,
                sh.in, DType::F32);
    }
  auto merge = [&](const LoraPair& p, LoraShape sh, void* W) {  // W [out, in] += s B A
    ops::gemm(ops::Trans::N, ops::Trans::N, sh.out, sh.in, cfg_.rank, s, p.B, cfg_.rank, p.A, sh.in, 1.0f,
              static_cast<float*>(W), sh.in, DType::F32);
  };
  for (size_t b = 0; b < tensors_.tower.size(); ++b) {
    const VisionBlockTensors& vt = t.vision.blocks[b];
    void* const weights[kTowerSlots] = {vt.wqkv, vt.wproj, vt.wfc1, vt.wfc2};
    for (int k = 0; k < kTowerSlots; ++k)
      if (tensors_.tower[b][k].A)
        merge(tensors_.tower[b][k], tower_slot_shape(model_.vision, static_cast<TowerSlot>(k)), weights[k]);
  }
  for (size_t m = 0; m < tensors_.mergers.size(); ++m) {
    const MergerTensors& mt = m == 0 ? t.vision.merger : t.vision.deepstack[m - 1];
    void* const weights[kMergerSlots] = {mt.wfc1, mt.wfc2};
    for (int k = 0; k < kMergerSlots; ++k)
      if (tensors_.mergers[m][k].A)
        merge(tensors_.mergers[m][k], merger_slot_shape(model_.vision, static_cast<MergerSlot>(k)), weights[k]);
  }
  if (w.has_bf16()) w.refresh_bf16();
}

}  // namespace grpo
