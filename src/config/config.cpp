// Loading, validating and writing the run configuration (see config.h); the key table is in
// config_table.cpp.
#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "train/rollout_correction.h"
#include "config/config_table.h"
#include "config/verl_keys.h"
#include "kernels/backend.h"
#include "train/actor.h"

namespace grpo {

using namespace config_detail;

namespace {

// A value given for a key, and where it was given ("file.yaml:12" or "--set").
struct Given {
  YAML::Node node;
  std::string where;
  std::string spelled;  // the key as written (an alias, maybe)
};

std::string shown(const YAML::Node& node) {
  std::string s = node.IsScalar() ? node.Scalar() : YAML::Dump(node);
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return "\"" + s + "\"";
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "unknown key" message: the closest known key, and the keys of the nearest enclosing section.
std::string unknown_key_message(const std::string& where, const std::string& key, const YAML::Node& value) {
  std::string best;
  size_t best_distance = std::max<size_t>(3, key.size() / 4) + 1;
  // The nearest of our keys and of verl's keys that we accept: by the whole dotted path, or by the last
  // component against the last component (a key put in the wrong section).
  const size_t key_dot = key.rfind('.');
  const std::string key_last = key_dot == std::string::npos ? key : key.substr(key_dot + 1);
  auto consider = [&](const std::string& name) {
    size_t d = edit_distance(key, name);
    const size_t dot = name.rfind('.');
    if (dot != std::string::npos) {
      d = std::min(d, edit_distance(key, name.substr(dot + 1)) + 1);
      d = std::min(d, edit_distance(key_last, name.substr(dot + 1)) + 1);
    }
    if (d < best_distance) best_distance = d, best = name;
  };
  for (const auto& k : key_specs()) consider(k.name);
  for (const auto& name : verl_key_names()) consider(name);
  std::string section = key;
  while (!section.empty() && !is_section(section)) {
    const size_t dot = section.rfind('.');
    section = dot == std::string::npos ? "" : section.substr(0, dot);
  }
  std::vector<std::string> children;  // direct children of the section: keys or sub-sections
  for (const auto& k : key_specs()) {
    if (!section.empty() && k.name.rfind(section + ".", 0) != 0) continue;
    std::string rest = section.empty() ? k.name : k.name.substr(section.size() + 1);
    rest = rest.substr(0, rest.find('.'));
    if (std::find(children.begin(), children.end(), rest) == children.end()) children.push_back(rest);
  }
  std::string listing;
  for (const auto& c : children) listing += " " + c + ",";
  if (!listing.empty()) listing.pop_back();
  return cat("[config] ", where, ": unknown key \"", key, "\" (value ", shown(value), ")",
             best.empty() ? "" : cat("; did you mean ", best, "?"), " Allowed ",
             section.empty() ? "top-level keys" : cat("keys under ", section), ":", listing,
             " (`grpo train --help-config` lists every key)");
}

// A verl key that is not ours (verl_keys.h): accepted when it has no effect here (recorded in `notes`) or
// holds a value that leaves its feature off (what this engine does anyway); an error naming it, the value
// and why otherwise.
void accept_verl_key(const VerlKeyRule& rule, const std::string& where, const std::string& spelled,
                     const YAML::Node& value, ConfigNotes& notes, std::vector<std::string>& errors) {
  const bool scalar = value.IsNull() || value.IsScalar();
  const bool empty = value.IsNull() || ((value.IsMap() || value.IsSequence()) && value.size() == 0);
  if (rule.kind == VerlKeyKind::OnlyDefault && !empty && !(scalar && verl_value_accepted(rule, value.Scalar()))) {
    std::string accepted;
    for (const auto& a : rule.accepted) accepted += (accepted.empty() ? "" : ", ") + a;
    errors.push_back(cat("[config] ", where, ": ", spelled, " = ", shown(value), " is not supported here: ", rule.why,
                         " (accepted: ", accepted.empty() ? "null" : accepted + " or null", ")"));
    return;
  }
  if (rule.kind == VerlKeyKind::NoEffect &&
      std::find(notes.no_effect.begin(), notes.no_effect.end(), spelled) == notes.no_effect.end())
    notes.no_effect.push_back(spelled);
}

// Whether some verl rule lies under `prefix` (a mapping in a YAML file to descend into).
bool is_verl_section(const std::string& prefix) {
  for (const auto& name : verl_key_names())
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.')
      return true;
  return false;
}

void collect_file_keys(const YAML::Node& map, const std::string& prefix, const std::string& file,
                       std::map<std::string, Given>& given, ConfigNotes& notes, std::vector<std::string>& errors) {
  for (const auto& item : map) {
    const std::string where = cat(file, ":", item.first.Mark().line + 1);
    const std::string spelled = prefix.empty() ? item.first.Scalar() : prefix + "." + item.first.Scalar();
    const std::string key = resolve_alias(spelled);
    // Our keys; a mapping under one of our sections (or aliases), or under a verl section with rules
    // of its own, is read key by key; a verl section whose keys all have no effect is accepted whole.
    const bool ours = find_key(key) != nullptr;
    const bool map = item.second.IsMap() && item.second.size() > 0;
    const VerlKeyRule* verl = ours ? nullptr : find_verl_key(key);
    const bool verl_section = verl && verl->pattern.ends_with(".*");
    if (ours) {
      auto [it, fresh] = given.emplace(key, Given{item.second, where, spelled});
      if (!fresh)
        errors.push_back(cat("[config] ", where, ": key \"", key, "\" is given twice (also as \"",
                             it->second.spelled, "\" at ", it->second.where, ")"));
    } else if (map && is_section(key)) {
      collect_file_keys(item.second, spelled, file, given, notes, errors);
    } else if (verl_section && verl->kind == VerlKeyKind::NoEffect) {
      accept_verl_key(*verl, where, spelled, item.second, notes, errors);
    } else if (map && (is_verl_section(key) || verl_section)) {
      collect_file_keys(item.second, spelled, file, given, notes, errors);
    } else if (verl) {
      accept_verl_key(*verl, where, spelled, item.second, notes, errors);
    } else if ((is_section(key) || is_verl_section(key)) && item.second.IsNull()) {
      continue;  // an empty section keeps its defaults
    } else if (is_section(key)) {
      errors.push_back(cat("[config] ", where, ": \"", key, "\" is a section and needs a mapping of keys, got ",
                           shown(item.second)));
    } else {
      errors.push_back(unknown_key_message(where, spelled, item.second));
    }
  }
}

// Strict scalar parsers: the whole text must be the value.
bool parse_int(const std::string& s, int64_t& out) {
  auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && res.ec == std::errc() && res.ptr == s.data() + s.size();
}

bool parse_float(const std::string& s, double& out) {
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  auto res = std::from_chars(begin, s.data() + s.size(), out);
  return !s.empty() && res.ec == std::errc() && res.ptr == s.data() + s.size() && std::isfinite(out);
}

bool parse_bool(const std::string& s, bool& out) {
  if (s == "true" || s == "True" || s == "TRUE") return out = true, true;
  if (s == "false" || s == "False" || s == "FALSE") return out = false, true;
  return false;
}

// A YAML value as JSON: scalars that read as integers, numbers, booleans or null become those, others text.
nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& item : node) j[item.first.Scalar()] = yaml_to_json(item.second);
    return j;
  }
  if (node.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& item : node) j.push_back(yaml_to_json(item));
    return j;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted in the YAML: text
  int64_t i;
  double d;
  bool b;
  if (parse_int(s, i)) return i;
  if (parse_float(s, d)) return d;
  if (parse_bool(s, b)) return b;
  if (s == "null" || s == "~" || s == "Null" || s == "NULL") return nullptr;
  return s;
}

// Reads one reward function {name, weight, pattern, command, timeout_s, workers, path, function, kwargs,
// batch}; keys that the named function does not use are errors.
void read_reward_function(const YAML::Node& node, const std::string& where, size_t index, RewardFunctionConfig& f,
                          std::vector<std::string>& errors) {
  const std::string here = cat("[config] ", where, ": reward.functions[", node.Mark().line + 1, "]: ");
  if (!node.IsMap()) {
    errors.push_back(here + cat("expected a mapping {name: ..., weight: ...}, got ", shown(node)));
    return;
  }
  std::set<std::string> used = {"name", "weight"};
  if (node["name"] && node["name"].IsScalar()) {
    const std::string name = node["name"].Scalar();
    const std::optional<RewardKind> kind = kRewardKindNames.find(name);
    if (!kind) {
      errors.push_back(cat("[config] reward.functions[", index, "] (", name,
                           "): name must be one of: ", kRewardKindNames.listing(", ")));
      return;
    }
    f.name = *kind;
  }
  if (f.name == RewardKind::Format) used.insert("pattern");
  if (f.name == RewardKind::External) used.insert({"command", "timeout_s", "workers"});
  if (f.name == RewardKind::Python) used.insert({"path", "function", "kwargs", "batch", "timeout_s", "workers"});
  for (const auto& item : node) {
    const std::string k = item.first.Scalar();
    const YAML::Node& v = item.second;
    if (!used.count(k)) {
      errors.push_back(here + cat("key \"", k, "\" is not used by reward function \"", kRewardKindNames.name(f.name),
                                  "\" (math/exact/verl: name, weight; format: + pattern; external: + command, "
                                  "timeout_s, workers; python: + path, function, kwargs, batch, timeout_s, workers)"));
    } else if (k == "weight" && !(v.IsScalar() && parse_float(v.Scalar(), f.weight))) {
      errors.push_back(here + cat("weight: expected a number, got ", shown(v)));
    } else if (k == "timeout_s" && !(v.IsScalar() && parse_float(v.Scalar(), f.timeout_s) && f.timeout_s > 0 &&
                                     f.timeout_s <= kMaxRewardTimeoutSeconds)) {
      errors.push_back(here + cat("timeout_s: expected a number of seconds in (0, ", kMaxRewardTimeoutSeconds,
                                  "], got ", shown(v)));
    } else if (k == "workers" && !(v.IsScalar() && parse_int(v.Scalar(), f.workers) && f.workers >= 1 &&
                                   f.workers <= kMaxRewardWorkers)) {
      errors.push_back(here + cat("workers: expected an integer in [1, ", kMaxRewardWorkers, "], got ", shown(v)));
    } else if (k == "kwargs") {
      if (!v.IsMap()) errors.push_back(here + cat("kwargs: expected a mapping of keyword arguments, got ", shown(v)));
      else f.kwargs_json = yaml_to_json(v).dump();
    } else if (k == "batch" && !(v.IsScalar() && parse_bool(v.Scalar(), f.batch))) {
      errors.push_back(here + cat("batch: expected true or false, got ", shown(v)));
    } else if ((k == "pattern" || k == "command" || k == "name" || k == "path" || k == "function") && !v.IsScalar()) {
      errors.push_back(here + cat(k, ": expected text, got ", shown(v)));
    } else if (k == "pattern") {
      f.pattern = v.Scalar();
    } else if (k == "command") {
      f.command = v.Scalar();
    } else if (k == "path") {
      f.path = v.Scalar();
    } else if (k == "function") {
      f.function = v.Scalar();
    }
  }
}

// Converts `g.node` into the key's field; type and range errors go to `errors`.
void assign(const KeySpec& spec, const Given& g, Config& config, std::vector<std::string>& errors) {
  if (g.node.IsNull()) return;  // null keeps the default
  const std::string where = cat("[config] ", g.where, ": ", spec.name, ": ");
  auto bad = [&](const std::string& problem) {
    errors.push_back(where + cat(problem, " ", shown(g.node), "; allowed: ", spec.allowed.describe(spec.type)));
  };
  void* p = spec.field(config);
  const bool scalar = g.node.IsScalar();
  switch (spec.type) {
    case KeyType::Int: {
      int64_t v;
      if (!scalar || !parse_int(g.node.Scalar(), v)) return bad("expected an integer, got");
      if (!spec.allowed.accepts(static_cast<double>(v))) return bad("out of range:");
      *static_cast<int64_t*>(p) = v;
      return;
    }
    case KeyType::Float: {
      double v;
      if (!scalar || !parse_float(g.node.Scalar(), v)) return bad("expected a number, got");
      if (!spec.allowed.accepts(v)) return bad("out of range:");
      *static_cast<double*>(p) = v;
      return;
    }
    case KeyType::Bool: {
      bool v;
      if (!scalar || !parse_bool(g.node.Scalar(), v)) return bad("expected true or false, got");
      *static_cast<bool*>(p) = v;
      return;
    }
    case KeyType::String: {
      if (!scalar) return bad("expected text, got");
      if (!spec.allowed.accepts(g.node.Scalar())) return bad("not an allowed value:");
      *static_cast<std::string*>(p) = g.node.Scalar();
      return;
    }
    case KeyType::Choice: {
      if (!scalar) return bad("expected text, got");
      if (!spec.allowed.set_names(p, {g.node.Scalar()})) return bad("not an allowed value:");
      return;
    }
    case KeyType::ChoiceList: {
      if (scalar && !g.node.Scalar().empty() && spec.allowed.set_names(p, {g.node.Scalar()})) return;  // a list of one
      if (!g.node.IsSequence()) return bad("expected a list, got");
      std::vector<std::string> v;
      for (const auto& item : g.node) {
        if (!item.IsScalar()) return bad("not an allowed list:");
        v.push_back(item.Scalar());
      }
      if (!spec.allowed.set_names(p, v)) return bad("not an allowed list:");
      return;
    }
    case KeyType::StringList: {
      if (scalar && !g.node.Scalar().empty() &&
          (spec.allowed.scalar_as_list || spec.allowed.accepts(g.node.Scalar()))) {  // one name: a list of one
        *static_cast<std::vector<std::string>*>(p) = {g.node.Scalar()};
        return;
      }
      if (scalar && g.node.Scalar().empty() && spec.allowed.scalar_as_list) {  // "" (verl: data.val_files=''): none
        static_cast<std::vector<std::string>*>(p)->clear();
        return;
      }
      if (!g.node.IsSequence()) return bad("expected a list, got");
      std::vector<std::string> v;
      for (const auto& item : g.node) {
        if (!item.IsScalar() || !spec.allowed.accepts(item.Scalar())) return bad("not an allowed list:");
        v.push_back(item.Scalar());
      }
      *static_cast<std::vector<std::string>*>(p) = v;
      return;
    }
    case KeyType::FloatList: {
      if (!g.node.IsSequence()) return bad("expected a list, got");
      std::vector<double> v;
      for (const auto& item : g.node) {
        double x;
        if (!item.IsScalar() || !parse_float(item.Scalar(), x) || !spec.allowed.accepts(x))
          return bad("not an allowed list:");
        v.push_back(x);
      }
      if (spec.allowed.length >= 0 && static_cast<int64_t>(v.size()) != spec.allowed.length)
        return bad("wrong number of items:");
      *static_cast<std::vector<double>*>(p) = v;
      return;
    }
    case KeyType::Mapping: {
      if (!g.node.IsMap()) return bad("expected a mapping, got");
      *static_cast<nlohmann::json*>(p) = yaml_to_json(g.node);
      return;
    }
    case KeyType::RewardFunctions: {  // an empty list keeps verl's choice (see RewardConfig)
      if (!g.node.IsSequence()) return bad("expected a list, got");
      std::vector<RewardFunctionConfig> v;
      for (const auto& item : g.node) read_reward_function(item, g.where, v.size(), v.emplace_back(), errors);
      *static_cast<std::vector<RewardFunctionConfig>*>(p) = v;
      return;
    }
  }
}

// Derived values: clip_ratio_low/high default to clip_ratio, loss_scale_factor 0 means the maximum
// response length, scale_rewards / norm_adv_by_std_in_grpo agree; as verl: the run folder defaults to
// checkpoints/<project>/<experiment>, the reference's token budget to the actor's, and do_sample false
// is greedy decoding (the sampling keys it overrides are noted as unused).
void resolve(Config& c, const std::map<std::string, Given>& given, ConfigNotes& notes,
             std::vector<std::string>& errors) {
  auto is_set = [&](const char* key) {
    auto it = given.find(key);
    return it != given.end() && !it->second.node.IsNull();
  };
  // verl's reward manager arguments (reward_model.reward_kwargs).
  auto& reward = c.reward;
  nlohmann::json manager_kwargs = reward.reward_kwargs;
  if (reward.reward_manager == RewardManager::Dapo && manager_kwargs.contains("overlong_buffer_cfg")) {
    const nlohmann::json& ob = manager_kwargs["overlong_buffer_cfg"];
    auto& to = reward.overlong_buffer;
    if (!ob.is_object()) {
      errors.push_back("[config] reward.reward_kwargs.overlong_buffer_cfg must be a mapping {enable, len, penalty_factor}");
    } else {
      if (ob.contains("enable") && ob["enable"].is_boolean() && !is_set("reward.overlong_buffer.enable"))
        to.enable = ob["enable"].get<bool>();
      if (ob.contains("len") && ob["len"].is_number_integer() && !is_set("reward.overlong_buffer.len"))
        to.len = ob["len"].get<int64_t>();
      if (ob.contains("penalty_factor") && ob["penalty_factor"].is_number() && !is_set("reward.overlong_buffer.penalty_factor"))
        to.penalty_factor = ob["penalty_factor"].get<double>();
    }
    manager_kwargs.erase("overlong_buffer_cfg");
  }
  if (reward.reward_manager == RewardManager::Dapo) manager_kwargs.erase("max_resp_len");  // = max_response_length
  if (reward.reward_manager == RewardManager::Batch) {
    for (const auto& [k, v] : manager_kwargs.items()) reward.custom_reward_function.reward_kwargs[k] = v;
  } else if (!manager_kwargs.empty()) {
    errors.push_back(cat("[config] reward.reward_kwargs (verl's reward_model.reward_kwargs) ", manager_kwargs.dump(),
                         " is not taken by reward_manager ", kRewardManagerNames.name(reward.reward_manager),
                         " (batch passes them to the custom function; dapo takes overlong_buffer_cfg and "
                         "max_resp_len); pass a function's arguments in custom_reward_function.reward_kwargs"));
  }
  reward.reward_kwargs = nlohmann::json::object();  // consumed: the resolved config holds their effect
  auto& actor = c.actor_rollout_ref.actor;
  if (!is_set("trainer.default_local_dir"))
    c.trainer.default_local_dir = cat("checkpoints/", c.trainer.project_name, "/", c.trainer.experiment_name);
  // verl's reference log-prob micro-batches follow the actor's unless set.
  auto& ref = c.actor_rollout_ref.ref;
  if (!is_set("actor_rollout_ref.ref.log_prob_use_dynamic_bsz")) ref.log_prob_use_dynamic_bsz = actor.use_dynamic_bsz;
  if (!is_set("actor_rollout_ref.ref.log_prob_max_token_len_per_gpu"))
    ref.log_prob_max_token_len_per_gpu = actor.ppo_max_token_len_per_gpu;
  // do_sample false is greedy decoding whatever the sampling keys say (verl's validation default).
  auto greedy = [&](const char* section, bool do_sample, double& temperature, double& top_p, int64_t& top_k) {
    if (do_sample) return;
    const std::pair<const char*, bool> differs[] = {
        {"temperature", temperature != 0}, {"top_p", top_p != 1}, {"top_k", top_k != -1}};
    for (const auto& [k, set_otherwise] : differs)
      if (set_otherwise && is_set(cat("actor_rollout_ref.rollout.", section, k).c_str()))
        notes.unused.push_back(cat("actor_rollout_ref.rollout.", section, k, " = ",
                                   given.at(cat("actor_rollout_ref.rollout.", section, k)).node.Scalar(),
                                   " is not used: actor_rollout_ref.rollout.", section,
                                   "do_sample is false (greedy decoding", *section ? ", verl's default" : "",
                                   "); set ", section, "do_sample=true to sample"));
    temperature = 0, top_p = 1, top_k = -1;
  };
  auto& rollout = c.actor_rollout_ref.rollout;
  greedy("", rollout.do_sample, rollout.temperature, rollout.top_p, rollout.top_k);
  greedy("val_kwargs.", rollout.val_kwargs.do_sample, rollout.val_kwargs.temperature, rollout.val_kwargs.top_p,
         rollout.val_kwargs.top_k);
  if (!is_set("actor_rollout_ref.actor.clip_ratio_low")) actor.clip_ratio_low = actor.clip_ratio;
  if (!is_set("actor_rollout_ref.actor.clip_ratio_high")) actor.clip_ratio_high = actor.clip_ratio;
  if (actor.loss_scale_factor == 0) actor.loss_scale_factor = static_cast<double>(c.data.max_response_length);
  // gpg's estimator comes with its own loss.
  if (c.algorithm.adv_estimator == train::AdvEstimator::Gpg && !is_set("actor_rollout_ref.actor.policy_loss.loss_mode"))
    actor.policy_loss.loss_mode = train::PgLossMode::Gpg;
  // tis_imp_ratio_cap C is rollout_correction's token-level weights truncated at C.
  auto& rc = c.algorithm.rollout_correction;
  if (actor.tis_imp_ratio_cap > 0) {
    if (is_set("algorithm.rollout_correction.rollout_is") &&
        (rc.rollout_is != train::RolloutIsLevel::Token || rc.rollout_is_threshold != actor.tis_imp_ratio_cap))
      errors.push_back(
          cat("[config] ", given.at("actor_rollout_ref.actor.tis_imp_ratio_cap").where,
              ": actor_rollout_ref.actor.tis_imp_ratio_cap = ", actor.tis_imp_ratio_cap,
              " (token-level weights truncated at it) contradicts algorithm.rollout_correction.rollout_is = ",
              train::kRolloutIsNames.name(rc.rollout_is), " with rollout_is_threshold ", rc.rollout_is_threshold,
              "; set one of them"));
    rc.rollout_is = train::RolloutIsLevel::Token;
    rc.rollout_is_threshold = actor.tis_imp_ratio_cap;
  }

  auto& alg = c.algorithm;
  const bool norm_set = is_set("algorithm.norm_adv_by_std_in_grpo"), scale_set = is_set("algorithm.scale_rewards");
  const bool scaled = alg.scale_rewards != train::AdvantageScaling::None;
  if (norm_set && scale_set && alg.norm_adv_by_std_in_grpo != scaled) {
    errors.push_back(
        cat("[config] ", given.at("algorithm.norm_adv_by_std_in_grpo").where,
            ": algorithm.norm_adv_by_std_in_grpo = ", alg.norm_adv_by_std_in_grpo ? "true" : "false",
            " contradicts algorithm.scale_rewards = ", train::kAdvantageScalingNames.name(alg.scale_rewards), " (",
            given.at("algorithm.scale_rewards").where,
            "); allowed: scale_rewards none with norm false, group or batch with norm true"));
  } else if (norm_set && !scale_set) {
    if (!alg.norm_adv_by_std_in_grpo) alg.scale_rewards = train::AdvantageScaling::None;
  } else if (scale_set) {
    alg.norm_adv_by_std_in_grpo = scaled;
  }
}

// A file or folder name made from a config value (TensorBoard's <project>/<experiment> folders).
bool plain_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

// Relations between keys, by concern. They run only on values within their keys' bounds (every key <= 2^31 - 1
// except the seed), so the products below fit int64; those consumed as int32 are bounded here.
constexpr int64_t kInt32Max = 2147483647;

// Batch and sequence sizes: responses per step and positions fit int32, mini- and micro-batches fit the batch,
// token budgets fit the longest sequence.
void check_batches(const Config& c, std::vector<std::string>& e) {
  const auto& actor = c.actor_rollout_ref.actor;
  const int64_t n = c.actor_rollout_ref.rollout.n;
  const int64_t responses = c.data.train_batch_size * n;
  if (responses > kInt32Max)
    e.push_back(cat("[config] data.train_batch_size x actor_rollout_ref.rollout.n = ", c.data.train_batch_size, " x ",
                    n, " = ", responses, " responses per step; at most ", kInt32Max));
  if (c.data.max_prompt_length + c.data.max_response_length > kInt32Max)
    e.push_back(cat("[config] data.max_prompt_length + data.max_response_length = ",
                    c.data.max_prompt_length + c.data.max_response_length, " tokens; positions are 32-bit: at most ",
                    kInt32Max));
  // A mini-batch size that does not divide the batch leaves a smaller last mini-batch (as in verl).
  if (actor.ppo_mini_batch_size > c.data.train_batch_size)
    e.push_back(cat("[config] actor_rollout_ref.actor.ppo_mini_batch_size = ", actor.ppo_mini_batch_size,
                    " must be at most data.train_batch_size = ", c.data.train_batch_size));
  if (!actor.use_dynamic_bsz && (actor.ppo_mini_batch_size * n) % actor.ppo_micro_batch_size_per_gpu)
    e.push_back(
        cat("[config] actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = ", actor.ppo_micro_batch_size_per_gpu,
            " must divide ppo_mini_batch_size x rollout.n = ", actor.ppo_mini_batch_size * n));
  const int64_t longest = c.data.max_prompt_length + c.data.max_response_length;
  if (actor.use_dynamic_bsz && actor.ppo_max_token_len_per_gpu < longest)
    e.push_back(cat("[config] actor_rollout_ref.actor.ppo_max_token_len_per_gpu = ", actor.ppo_max_token_len_per_gpu,
                    " must be >= data.max_prompt_length + data.max_response_length = ", longest,
                    " so that every sequence fits a micro-batch"));
  const auto& ref = c.actor_rollout_ref.ref;
  if (ref.log_prob_use_dynamic_bsz && ref.log_prob_max_token_len_per_gpu < longest)
    e.push_back(cat("[config] actor_rollout_ref.ref.log_prob_max_token_len_per_gpu = ",
                    ref.log_prob_max_token_len_per_gpu, " must be >= ", longest));
}

// The rollout: greedy sampling with several responses per prompt, multi-turn's needs, mixed precision's
// blacklist.
void check_rollout(const Config& c, std::vector<std::string>& e) {
  const auto& rollout = c.actor_rollout_ref.rollout;
  const int64_t n = rollout.n;
  if (rollout.temperature == 0 && n > 1)
    e.push_back(cat("[config] actor_rollout_ref.rollout.temperature = 0 (greedy) with rollout.n = ", n,
                    ": the n responses of a prompt would be identical, so every advantage is 0 and nothing is "
                    "learned; sample (rollout.do_sample=true, temperature > 0, e.g. 1.0) or set n = 1"));
  if (rollout.val_kwargs.temperature == 0 && rollout.val_kwargs.n > 1)
    e.push_back(cat("[config] actor_rollout_ref.rollout.val_kwargs.temperature = 0 (greedy) with val_kwargs.n = ",
                    rollout.val_kwargs.n, ": the responses would be identical; sample (val_kwargs.do_sample=true, "
                    "val_kwargs.temperature > 0, e.g. 1.0) or set val_kwargs.n = 1"));
  if (rollout.multi_turn.enable && !c.data.apply_chat_template)
    e.push_back("[config] actor_rollout_ref.rollout.multi_turn.enable needs data.apply_chat_template: true (tool "
                "turns are rendered by the model's chat template)");
  if (rollout.multi_turn.enable && !rollout.continuous_batching)
    e.push_back("[config] actor_rollout_ref.rollout.multi_turn.enable needs rollout.continuous_batching: true (a "
                "static batch cannot park a response while its tools run)");
  if (!c.mixed_precision.op_blacklist.empty())
    e.push_back("[config] mixed_precision.op_blacklist: not supported (every GEMM reads bf16 inputs when "
                "mixed_precision.enabled is true); leave it empty, or set mixed_precision.enabled: false for f32 "
                "throughout");
}

// The run folder: resuming, and the TensorBoard folder names.
void check_trainer(const Config& c, std::vector<std::string>& e) {
  const auto& t = c.trainer;
  if (t.resume_mode == ResumeMode::ResumePath && t.resume_from_path.empty())
    e.push_back("[config] trainer.resume_mode = resume_path needs trainer.resume_from_path (a checkpoint folder "
                "global_step_N, or a run folder)");
  if (t.resume_mode != ResumeMode::ResumePath && !t.resume_from_path.empty())
    e.push_back(cat("[config] trainer.resume_from_path is set but trainer.resume_mode = ",
                    kResumeModeNames.name(t.resume_mode), " ignores it; set trainer.resume_mode: resume_path"));
  if (std::find(t.logger.begin(), t.logger.end(), Logger::Tensorboard) != t.logger.end())
    for (const auto& [key, value] : {std::pair{"project_name", &t.project_name}, {"experiment_name", &t.experiment_name}})
      if (!plain_name(*value))
        e.push_back(cat("[config] trainer.", key, " = \"", *value,
                        "\" names the TensorBoard folder: expected a "
                        "non-empty name without '/' (not . or ..)"));
  const auto& model = c.actor_rollout_ref.model;
  if (!model.lora_adapter_path.empty() && model.lora_rank == 0)
    e.push_back(cat("[config] actor_rollout_ref.model.lora_adapter_path = ", model.lora_adapter_path,
                    " is set but actor_rollout_ref.model.lora_rank = 0 (LoRA off); set lora_rank > 0 to train the "
                    "adapter (its own r, alpha and modules are used)"));
}

// The algorithm: the estimator, the reward scaling, the KL penalty, the clip ratios, the rollout correction.
void check_algorithm(const Config& c, std::vector<std::string>& e) {
  const auto& actor = c.actor_rollout_ref.actor;
  const auto& alg = c.algorithm;
  if (actor.clip_ratio_low >= 1)
    e.push_back(cat("[config] actor_rollout_ref.actor.clip_ratio_low = ", actor.clip_ratio_low, " must be < 1"));
  if (alg.norm_adv_by_std_in_grpo != (alg.scale_rewards != train::AdvantageScaling::None))
    e.push_back("[config] algorithm.norm_adv_by_std_in_grpo and algorithm.scale_rewards disagree");
  try {
    train::parse_rollout_rs(alg.rollout_correction.rollout_rs, alg.rollout_correction.rollout_rs_threshold);
  } catch (const Error& err) {
    e.push_back(cat("[config] algorithm.rollout_correction: ", err.what()));
  }
  if (alg.adv_estimator == train::AdvEstimator::Gae) e.push_back(cat("[config] ", train::kGaeRefused));
  if (alg.adv_estimator == train::AdvEstimator::GrpoPassk && c.actor_rollout_ref.rollout.n < 2)
    e.push_back(
        cat("[config] algorithm.adv_estimator = grpo_passk needs at least 2 responses per prompt "
            "(actor_rollout_ref.rollout.n = ",
            c.actor_rollout_ref.rollout.n, ")"));
  if (alg.scale_rewards == train::AdvantageScaling::BatchStd && alg.adv_estimator != train::AdvEstimator::Grpo)
    e.push_back(cat("[config] algorithm.scale_rewards = batch applies to adv_estimator grpo only (got ",
                    train::kAdvEstimatorNames.name(alg.adv_estimator), ")"));
  if (alg.use_kl_in_reward && alg.kl_penalty.estimator == train::KlEstimator::Full)
    e.push_back("[config] algorithm.kl_penalty = full needs the whole vocabulary distribution of every response "
                "token, which training never materialises (verl does not implement it either); use kl, abs, mse "
                "or low_var_kl");
  if (actor.policy_loss.loss_mode == train::PgLossMode::Vanilla && actor.clip_ratio_c <= 1)
    e.push_back(cat("[config] actor_rollout_ref.actor.clip_ratio_c = ", actor.clip_ratio_c, " must be > 1"));
}

// The rewards: overlong shaping, each reward function's settings, the custom function.
void check_rewards(const Config& c, std::vector<std::string>& e) {
  const auto& ob = c.reward.overlong_buffer;
  if (ob.enable && (ob.len < 1 || ob.len > c.data.max_response_length))
    e.push_back(cat("[config] reward.overlong_buffer.len = ", ob.len,
                    " must be in [1, data.max_response_length = ", c.data.max_response_length, "] when enabled"));
  for (size_t i = 0; i < c.reward.functions.size(); ++i) {
    const auto& f = c.reward.functions[i];
    const std::string at = cat("[config] reward.functions[", i, "] (", kRewardKindNames.name(f.name), "): ");
    if (!std::isfinite(f.weight) || std::fabs(f.weight) > kMaxRewardMagnitude)
      e.push_back(at + cat("weight = ", f.weight, " must be a finite number of magnitude at most ", kMaxRewardMagnitude));
    if (f.name == RewardKind::Format && f.pattern.empty()) e.push_back(at + "needs a pattern (a regular expression)");
    if (f.name == RewardKind::External && f.command.empty()) e.push_back(at + "needs a command");
    if (f.name == RewardKind::Python && (f.path.empty() || f.function.empty()))
      e.push_back(at + "needs a path (a Python file) and a function name");
    if (!(f.timeout_s > 0 && f.timeout_s <= kMaxRewardTimeoutSeconds) || f.workers < 1 || f.workers > kMaxRewardWorkers)
      e.push_back(at + cat("timeout_s must be in (0, ", kMaxRewardTimeoutSeconds, "] and workers in [1, ",
                           kMaxRewardWorkers, "]"));
  }
  const auto& custom = c.reward.custom_reward_function;
  if (!custom.path.empty() && !c.reward.functions.empty())
    e.push_back(cat("[config] reward.custom_reward_function.path = \"", custom.path, "\" and reward.functions are both ",
                    "set; list the Python function in reward.functions ({name: python, path: ", custom.path,
                    ", function: ", custom.name, "}) or drop reward.functions"));
  if (!custom.reward_kwargs.is_object())
    e.push_back("[config] reward.custom_reward_function.reward_kwargs must be a mapping");
}

std::vector<std::string> cross_checks(const Config& c) {
  std::vector<std::string> e;
  check_batches(c, e);
  check_rollout(c, e);
  check_trainer(c, e);
  check_algorithm(c, e);
  check_rewards(c, e);
  return e;
}

// What this CPU must honour, checked with the config (before any model loads): the ISA decision itself (a
// CPU without AVX2+FMA, an unknown GRPO_ISA). Every configured value has a path at every level it allows:
// mixed_precision runs its bf16 GEMMs natively at avx512_bf16 and emulated (bf16 operands widened to f32)
// below, and every kernel family, KV cache dtype and decode matmul runs at every level.
std::vector<std::string> cpu_checks() {
  try {
    isa_decision();
  } catch (const Error& e) {
    return {e.what()};
  }
  return {};
}

// One command-line override as verl's run scripts write it: key=value, +key=value (Hydra: add a key),
// ++key=value (add or override). The value is YAML, with Hydra's None read as null.
struct Override {
  std::string key, where;
  YAML::Node value;
};

bool parse_override(const std::string& text, Override& ov, std::vector<std::string>& errors) {
  std::string o = text;
  if (o.starts_with("++"))
    o = o.substr(2);
  else if (o.starts_with("+"))
    o = o.substr(1);
  else if (o.starts_with("~")) {
    errors.push_back(cat("[config] ", text, ": Hydra's ~key (delete a key) is not supported; leave the key out, or "
                         "set it to null to keep its default"));
    return false;
  }
  const size_t eq = o.find('=');
  if (eq == std::string::npos || eq == 0) {
    errors.push_back(cat("[config] override ", text, ": expected key=value"));
    return false;
  }
  ov.key = o.substr(0, eq);
  ov.where = "override " + ov.key;
  const std::string raw = o.substr(eq + 1);
  try {
    ov.value = raw == "None" ? YAML::Node(YAML::NodeType::Null) : YAML::Load(raw);
  } catch (const YAML::Exception& e) {
    errors.push_back(cat("[config] override ", text, ": the value is not valid YAML: ", e.msg));
    return false;
  }
  return true;
}

// trainer.logger: a name alone is a list of one (verl accepts both); the loggers verl writes and we do
// not (wandb, mlflow, ...) leave the list for `notes`, and metrics.jsonl (ours) takes their place.
void split_loggers(YAML::Node& node, ConfigNotes& notes) {
  if (node.IsScalar()) {
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back(node.Scalar());
    node = list;
  }
  if (!node.IsSequence()) return;  // assign() reports it
  YAML::Node kept(YAML::NodeType::Sequence);
  bool foreign = false, jsonl = false;
  for (const auto& item : node) {
    if (item.IsScalar() && is_foreign_logger(item.Scalar())) {
      notes.foreign_loggers.push_back(item.Scalar());
      foreign = true;
      continue;
    }
    // verl's `file` logger writes the metrics as JSON lines: ours is metrics.jsonl.
    const bool file = item.IsScalar() && item.Scalar() == "file";
    jsonl = jsonl || file || (item.IsScalar() && item.Scalar() == "jsonl");
    kept.push_back(file ? YAML::Node("jsonl") : YAML::Node(item));
  }
  if (foreign && !jsonl) kept.push_back("jsonl");
  node = kept;
}

// Text values after reading: a leading ~/ is the home folder (verl's paths are often written so), and
// ${section.key} is that key's value (verl's default run folder is checkpoints/${trainer.project_name}/
// ${trainer.experiment_name}).
void expand_text_values(Config& c, const std::map<std::string, Given>& given, std::vector<std::string>& errors) {
  for (const auto& spec : key_specs()) {
    if (spec.type != KeyType::String) continue;
    std::string& v = *static_cast<std::string*>(spec.field(c));
    auto it = given.find(spec.name);
    const std::string where = it == given.end() ? "default" : it->second.where;
    if (v.starts_with("~/")) {
      const char* home = std::getenv("HOME");
      if (home && *home) v = home + v.substr(1);
    }
    for (size_t at = v.find("${"); at != std::string::npos; at = v.find("${", at)) {
      const size_t end = v.find('}', at);
      const std::string ref = end == std::string::npos ? "" : v.substr(at + 2, end - at - 2);
      const KeySpec* target = ref.empty() ? nullptr : find_key(ref);
      if (!target || (target->type != KeyType::String && target->type != KeyType::Choice) ||
          target->name == spec.name) {
        errors.push_back(cat("[config] ", where, ": ", spec.name, " = \"", v, "\": ${...} must name another text key "
                             "(e.g. ${trainer.experiment_name}); environment variables are the shell's ($VAR)"));
        break;
      }
      const std::string text = target->type == KeyType::Choice ? target->allowed.get_names(target->field(c))[0]
                                                               : *static_cast<std::string*>(target->field(c));
      if (text.find("${") != std::string::npos) {
        errors.push_back(cat("[config] ", where, ": ", spec.name, " refers to ", ref, " which refers to another key"));
        break;
      }
      v.replace(at, end - at + 1, text);
      at += text.size();
    }
  }
}

void throw_if_any(const std::vector<std::string>& errors) {
  if (errors.empty()) return;
  std::string msg;
  for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
  throw Error(msg);
}

// The mapping key that `key` names an entry of (reward.reward_kwargs for reward.reward_kwargs.a.b), or null.
const KeySpec* mapping_key_above(const std::string& key) {
  for (size_t dot = key.rfind('.'); dot != std::string::npos && dot > 0; dot = key.rfind('.', dot - 1)) {
    const KeySpec* spec = find_key(key.substr(0, dot));
    if (spec) return spec->type == KeyType::Mapping ? spec : nullptr;
  }
  return nullptr;
}

struct MappingEntry {
  const KeySpec* spec;
  std::string path;  // "a.b" below the mapping key
  YAML::Node value;
};

}  // namespace

Config load_config(const std::string& yaml_path, const std::vector<std::string>& overrides, ConfigNotes* notes_out) {
  std::vector<std::string> errors;
  std::vector<MappingEntry> mapping_entries;
  std::map<std::string, Given> given;
  ConfigNotes notes;
  if (!yaml_path.empty()) {
    std::string text;
    try {
      text = read_file(yaml_path);
    } catch (const Error& e) {
      fail("[config] ", e.what());  // "cannot open PATH: <strerror>"
    }
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      fail("[config] ", yaml_path, ":", e.mark.line + 1, ": YAML syntax error: ", e.msg);
    }
    if (root.IsMap()) {
      collect_file_keys(root, "", yaml_path, given, notes, errors);
    } else if (!root.IsNull()) {
      fail("[config] ", yaml_path, ": expected a mapping of keys at the top level, got ", shown(root));
    }
  }
  for (const auto& o : overrides) {
    Override ov;
    if (!parse_override(o, ov, errors)) continue;
    const std::string key = resolve_alias(ov.key);
    if (!find_key(key)) {
      if (const KeySpec* mapping = mapping_key_above(key)) {  // MAPPING.a.b=value: one entry of a mapping
        mapping_entries.push_back({mapping, key.substr(mapping->name.size() + 1), ov.value});
      } else if (const VerlKeyRule* verl = find_verl_key(key)) {
        accept_verl_key(*verl, ov.where, ov.key, ov.value, notes, errors);
      } else {
        errors.push_back(unknown_key_message(ov.where, ov.key, ov.value));
      }
      continue;
    }
    given[key] = Given{ov.value, ov.where, ov.key};
  }
  if (auto it = given.find("trainer.logger"); it != given.end()) split_loggers(it->second.node, notes);
  Config config;
  for (const auto& [key, g] : given) assign(*find_key(key), g, config, errors);
  for (const MappingEntry& e : mapping_entries) {
    nlohmann::json* j = static_cast<nlohmann::json*>(e.spec->field(config));
    for (size_t b = 0;;) {
      const size_t dot = e.path.find('.', b);
      const std::string part = e.path.substr(b, dot == std::string::npos ? std::string::npos : dot - b);
      if (!j->is_object()) *j = nlohmann::json::object();
      j = &(*j)[part];
      if (dot == std::string::npos) break;
      b = dot + 1;
    }
    *j = yaml_to_json(e.value);
  }
  for (const auto& spec : key_specs()) {
    auto it = given.find(spec.name);
    if (spec.required && (it == given.end() || it->second.node.IsNull() ||
                          (it->second.node.IsScalar() && it->second.node.Scalar().empty())))
      errors.push_back(cat("[config] ", yaml_path.empty() ? "(no file)" : yaml_path, ": ", spec.name,
                           " is required (", spec.doc, ")"));
  }
  throw_if_any(errors);
  expand_text_values(config, given, errors);
  resolve(config, given, notes, errors);
  throw_if_any(errors);
  validate_config(config);
  if (notes_out) *notes_out = notes;
  return config;
}

std::vector<std::string> verl_config_name_overrides(const std::string& config_name) {
  std::string name = config_name;
  for (const char* ext : {".yaml", ".yml"})
    if (name.ends_with(ext)) name.resize(name.size() - std::string(ext).size());
  if (name == "ppo_trainer" || name == "ppo_megatron_trainer") return {};
  // recipe/dapo/config/dapo_trainer.yaml: ppo_trainer plus these defaults (its other additions,
  // gen_batch_size and the dapo reward manager, have no effect here).
  if (name == "dapo_trainer") return {"trainer.project_name=verl-dapo", "reward.overlong_buffer.penalty_factor=0.0"};
  fail("[config] --config-name ", config_name,
       ": no equivalent here; the verl configs we start from are ppo_trainer (the default), ppo_megatron_trainer "
       "(the same keys; its megatron.* settings have no effect here) and dapo_trainer (recipe/dapo); pass the "
       "others' keys as overrides, or a YAML file of our keys");
}

std::string ConfigNotes::describe(const std::string& run_dir) const {
  std::string s;
  if (!no_effect.empty()) {
    s += "[config] no effect here (verl's engines, parallel sizes, offload, micro-batch sizing, Ray, critic, "
         "...):";
    for (size_t i = 0; i < no_effect.size(); ++i) s += (i ? ", " : " ") + no_effect[i];
    s += "\n";
  }
  if (!foreign_loggers.empty()) {
    s += "[config] trainer.logger:";
    for (size_t i = 0; i < foreign_loggers.size(); ++i) s += (i ? ", " : " ") + foreign_loggers[i];
    s += cat(" not written here; metrics go to ", run_dir, "/metrics.jsonl (add tensorboard to trainer.logger for "
             "event files, which `wandb sync --sync-tensorboard` uploads)\n");
  }
  for (const auto& u : unused) s += "[config] " + u + "\n";
  return s;
}

void validate_config(const Config& config) {
  Config c = config;  // the table's accessors take a mutable Config
  std::vector<std::string> errors;
  for (const auto& spec : key_specs()) {
    void* p = spec.field(c);
    bool ok = true;
    switch (spec.type) {
      case KeyType::Int: ok = spec.allowed.accepts(static_cast<double>(*static_cast<int64_t*>(p))); break;
      case KeyType::Float: ok = spec.allowed.accepts(*static_cast<double*>(p)); break;
      case KeyType::String: ok = spec.allowed.accepts(*static_cast<std::string*>(p)); break;
      case KeyType::StringList:
        for (const auto& s : *static_cast<std::vector<std::string>*>(p)) ok = ok && spec.allowed.accepts(s);
        break;
      case KeyType::Choice:
      case KeyType::ChoiceList:  // a value without a name, or outside the key's names (set in code)
        for (const auto& s : spec.allowed.get_names(p)) ok = ok && spec.allowed.accepts(s);
        break;
      case KeyType::FloatList: {
        const auto& v = *static_cast<std::vector<double>*>(p);
        ok = spec.allowed.length < 0 || static_cast<int64_t>(v.size()) == spec.allowed.length;
        for (double x : v) ok = ok && spec.allowed.accepts(x);
        break;
      }
      case KeyType::Bool:
      case KeyType::Mapping:
      case KeyType::RewardFunctions: break;
    }
    if (!ok)
      errors.push_back(cat("[config] ", spec.name, " = ", value_text(spec, c), " is not allowed; allowed: ",
                           spec.allowed.describe(spec.type)));
    if (spec.required && spec.type == KeyType::String && static_cast<std::string*>(p)->empty())
      errors.push_back(cat("[config] ", spec.name, " is required (", spec.doc, ")"));
    if (spec.required && spec.type == KeyType::StringList && static_cast<std::vector<std::string>*>(p)->empty())
      errors.push_back(cat("[config] ", spec.name, " is required (", spec.doc, ")"));
  }
  throw_if_any(errors);  // the cross-checks' arithmetic relies on the bounds
  auto checks = cross_checks(c);
  auto cpu = cpu_checks();
  checks.insert(checks.end(), cpu.begin(), cpu.end());
  throw_if_any(checks);
}

std::string config_to_yaml(const Config& config) {
  Config c = config;
  YAML::Emitter out;
  out << YAML::Comment("grpo.cpp resolved configuration (every key, defaults included)") << YAML::Newline;
  out << YAML::BeginMap;
  std::vector<std::string> open;  // sections currently open
  for (const auto& spec : key_specs()) {
    std::vector<std::string> parts;
    for (size_t begin = 0;;) {
      const size_t dot = spec.name.find('.', begin);
      parts.push_back(spec.name.substr(begin, dot - begin));
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common]) ++common;
    for (size_t i = open.size(); i > common; --i) out << YAML::EndMap;
    open.resize(common);
    for (size_t i = common; i < sections.size(); ++i) {
      out << YAML::Key << sections[i] << YAML::Value << YAML::BeginMap;
      open.push_back(sections[i]);
    }
    out << YAML::Key << parts.back() << YAML::Value;
    void* p = spec.field(c);
    switch (spec.type) {
      case KeyType::Int: out << *static_cast<int64_t*>(p); break;
      case KeyType::Float: out << format_double(*static_cast<double*>(p)); break;
      case KeyType::Bool: out << (*static_cast<bool*>(p) ? "true" : "false"); break;
      case KeyType::String: out << YAML::DoubleQuoted << *static_cast<std::string*>(p); break;
      case KeyType::Choice:
        out << YAML::DoubleQuoted << spec.allowed.get_names(p)[0];
        break;
      case KeyType::ChoiceList:
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& s : spec.allowed.get_names(p)) out << s;
        out << YAML::EndSeq;
        break;
      case KeyType::StringList:
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& s : *static_cast<std::vector<std::string>*>(p)) out << s;
        out << YAML::EndSeq;
        break;
      case KeyType::FloatList:
        out << YAML::Flow << YAML::BeginSeq;
        for (double v : *static_cast<std::vector<double>*>(p)) out << format_double(v);
        out << YAML::EndSeq;
        break;
      case KeyType::Mapping: out << YAML::Flow << YAML::Load(static_cast<nlohmann::json*>(p)->dump()); break;
      case KeyType::RewardFunctions:
        out << YAML::BeginSeq;
        for (const auto& f : *static_cast<std::vector<RewardFunctionConfig>*>(p)) {
          out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << std::string(kRewardKindNames.name(f.name));
          out << YAML::Key << "weight" << YAML::Value << format_double(f.weight);
          if (f.name == RewardKind::Format)
            out << YAML::Key << "pattern" << YAML::Value << YAML::DoubleQuoted << f.pattern;
          if (f.name == RewardKind::External)
            out << YAML::Key << "command" << YAML::Value << YAML::DoubleQuoted << f.command;
          if (f.name == RewardKind::Python) {
            out << YAML::Key << "path" << YAML::Value << YAML::DoubleQuoted << f.path;
            out << YAML::Key << "function" << YAML::Value << YAML::DoubleQuoted << f.function;
            out << YAML::Key << "kwargs" << YAML::Value << YAML::Load(f.kwargs_json);
            out << YAML::Key << "batch" << YAML::Value << (f.batch ? "true" : "false");
          }
          if (f.name == RewardKind::External || f.name == RewardKind::Python) {
            out << YAML::Key << "timeout_s" << YAML::Value << format_double(f.timeout_s);
            out << YAML::Key << "workers" << YAML::Value << f.workers;
          }
          out << YAML::EndMap;
        }
        out << YAML::EndSeq;
        break;
    }
  }
  for (size_t i = 0; i < open.size(); ++i) out << YAML::EndMap;
  out << YAML::EndMap;
  GRPO_CHECK(out.good(), "[config] cannot write the resolved configuration: ", out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

const std::vector<ConfigKeyInfo>& config_keys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    std::vector<ConfigKeyInfo> v;
    Config defaults;
    for (const auto& spec : key_specs())
      v.push_back({spec.name, type_name(spec.type), spec.required ? "(required)" : value_text(spec, defaults),
                   spec.allowed.describe(spec.type), spec.doc});
    return v;
  }();
  return keys;
}

std::string data_files_text(const std::vector<std::string>& files) {
  std::string s;
  for (const std::string& f : files) s += (s.empty() ? "" : ", ") + f;
  return s;
}

std::string config_help() {
  std::string s = "Configuration keys (YAML file and --set key=value; null keeps the default):\n";
  for (const auto& k : config_keys())
    s += cat("  ", k.name, " (", k.type, ", default ", k.default_value, ")\n      ", k.doc, "; allowed: ", k.allowed,
             "\n");
  s += "Aliases: use_dynamic_bsz, max_tokens_per_gpu, actor_rollout_ref.actor.max_tokens_per_gpu, "
       "actor_rollout_ref.actor.optim.lr_scheduler_type, actor_rollout_ref.actor.optim.clip_grad, "
       "actor_rollout_ref.nccl_timeout, reward_model.overlong_buffer.*, "
       "reward_model.reward_kwargs.overlong_buffer_cfg.*, reward.reward_kwargs.overlong_buffer_cfg.*, "
       "custom_reward_function.overlong_buffer.*, custom_reward_function.* (= reward.custom_reward_function.*), "
       "reward_model.reward_manager, reward_model.reward_kwargs\n"
       "verl's keys that steer only its GPU machinery are accepted and listed as having no effect (docs/verl.md).\n";
  return s;
}

}  // namespace grpo
