// Algorithm cases through the training code (see algorithm_cases.h).
#include "train/algorithm_cases.h"

#include <cmath>

#include "core/files.h"
#include "model/safetensors.h"
#include "train/advantages.h"
#include "train/aggregation.h"
#include "train/rollout_correction.h"
#include "train/kl_penalty.h"
#include "train/policy_objective.h"

namespace grpo::train {

nlohmann::json read_algorithm_cases(const std::string& dir) {
  const std::string path = dir + "/cases.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail("[algorithm] ", path, ": not valid JSON (", e.what(), ")");
  }
  GRPO_CHECK(j.is_object() && j.contains("cases") && j["cases"].is_object(), "[algorithm] ", path,
             ": expected an object with a \"cases\" object (case name -> case)");
  for (const auto& [name, c] : j["cases"].items())
    GRPO_CHECK(c.is_object() && c.contains("kind") && c["kind"].is_string() && c.contains("inputs") &&
                   c["inputs"].is_string(),
               "[algorithm] ", path, ": case \"", name, "\" needs a string \"kind\" and \"inputs\"");
  return j["cases"];
}

namespace {

// A case's config value under verl's key, or the default when absent or null.
struct CaseConfig {
  const nlohmann::json& j;
  std::string where;
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  double num(const char* key, double dflt) const {
    if (!has(key)) return dflt;
    GRPO_CHECK(j[key].is_number(), "[algorithm] ", where, ": config ", key, " must be a number");
    return j[key].get<double>();
  }
  bool flag(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    GRPO_CHECK(j[key].is_boolean(), "[algorithm] ", where, ": config ", key, " must be true or false");
    return j[key].get<bool>();
  }
  std::string text(const char* key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    GRPO_CHECK(j[key].is_string(), "[algorithm] ", where, ": config ", key, " must be text");
    return j[key].get<std::string>();
  }
};

// The [B, T] inputs of a case.
struct CaseInputs {
  int64_t B = 0, T = 0;
  std::vector<double> rewards, mask, baselines;
  std::vector<float> maskf, logp, old_logp, ref_logp, rollout_logp, advantages;
  std::vector<int64_t> group;
};

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

CaseInputs read_inputs(const std::string& path) {
  SafetensorsFile f = SafetensorsFile::open(path);
  CaseInputs in;
  const StTensor* m = f.find("response_mask");
  GRPO_CHECK(m && m->shape.size() == 2, "[algorithm] ", path, ": needs a 2-D response_mask [B, T]");
  in.B = m->shape[0], in.T = m->shape[1];
  auto matrix = [&](const char* name) {
    if (!f.find(name)) return std::vector<float>();
    std::vector<float> v = case_floats(f, name);
    GRPO_CHECK(static_cast<int64_t>(v.size()) == in.B * in.T, "[algorithm] ", path, ": ", name, " has ", v.size(),
               " values, expected B x T = ", in.B * in.T);
    return v;
  };
  in.maskf = matrix("response_mask");
  in.mask = widen(in.maskf);
  in.rewards = widen(matrix("token_level_rewards"));
  in.logp = matrix("log_prob");
  in.old_logp = matrix("old_log_prob");
  in.ref_logp = matrix("ref_log_prob");
  in.rollout_logp = matrix("rollout_log_prob");
  in.advantages = matrix("advantages");
  if (f.find("group")) in.group = case_ints(f, "group");
  if (f.find("reward_baselines")) in.baselines = widen(case_floats(f, "reward_baselines"));
  GRPO_CHECK(in.group.empty() || static_cast<int64_t>(in.group.size()) == in.B, "[algorithm] ", path,
             ": group has ", in.group.size(), " entries, expected B = ", in.B);
  return in;
}

const std::vector<float>& need(const std::vector<float>& v, const char* name, const std::string& where) {
  GRPO_CHECK(!v.empty(), "[algorithm] ", where, ": the inputs have no ", name);
  return v;
}

TokenAdvantages case_advantages(const CaseConfig& cfg, const CaseInputs& in) {
  AdvantageOptions opt;
  opt.estimator = parse_adv_estimator(cfg.text("algorithm.adv_estimator", "grpo"));
  opt.scaling = cfg.flag("algorithm.norm_adv_by_std_in_grpo", true) ? AdvantageScaling::GroupStd : AdvantageScaling::None;
  opt.gamma = cfg.num("algorithm.gamma", 1.0);
  GRPO_CHECK(!in.rewards.empty() && !in.group.empty(), "[algorithm] ", cfg.where,
             ": the inputs need token_level_rewards and group");
  AdvantageInputs ai;
  ai.B = in.B, ai.T = in.T;
  ai.token_level_rewards = in.rewards;
  ai.response_mask = in.mask;
  ai.group = in.group;
  ai.reward_baselines = in.baselines;
  return estimate_advantages(opt, ai);
}

CaseTensor as_tensor(const std::vector<double>& v, std::vector<int64_t> shape) {
  CaseTensor t;
  t.shape = std::move(shape);
  t.data.assign(v.begin(), v.end());
  return t;
}

PolicyObjectiveConfig loss_config(const CaseConfig& cfg) {
  PolicyObjectiveConfig c;
  c.mode = parse_pg_loss_mode(cfg.text("actor_rollout_ref.actor.policy_loss.loss_mode", "vanilla"));
  const double clip = cfg.num("actor_rollout_ref.actor.clip_ratio", 0.2);
  c.clip_ratio_low = cfg.num("actor_rollout_ref.actor.clip_ratio_low", clip);
  c.clip_ratio_high = cfg.num("actor_rollout_ref.actor.clip_ratio_high", clip);
  c.clip_ratio_c = cfg.num("actor_rollout_ref.actor.clip_ratio_c", 3.0);
  c.tau_pos = cfg.num("actor_rollout_ref.actor.tau_pos", 1.0);
  c.tau_neg = cfg.num("actor_rollout_ref.actor.tau_neg", 1.05);
  c.clip_cov_ratio = cfg.num("actor_rollout_ref.actor.policy_loss.clip_cov_ratio", 0.0002);
  c.clip_cov_lb = cfg.num("actor_rollout_ref.actor.policy_loss.clip_cov_lb", 1.0);
  c.clip_cov_ub = cfg.num("actor_rollout_ref.actor.policy_loss.clip_cov_ub", 5.0);
  c.kl_cov_ratio = cfg.num("actor_rollout_ref.actor.policy_loss.kl_cov_ratio", 0.0002);
  c.ppo_kl_coef = cfg.num("actor_rollout_ref.actor.policy_loss.ppo_kl_coef", 1.0);
  c.dro_beta = cfg.num("actor_rollout_ref.actor.policy_loss.dro_beta", 1.0);
  if (cfg.flag("actor_rollout_ref.actor.use_kl_loss", false)) {
    c.kl_coef = cfg.num("actor_rollout_ref.actor.kl_loss_coef", 0.001);
    c.kl_type = parse_kl_penalty(cfg.text("actor_rollout_ref.actor.kl_loss_type", "low_var_kl"));
  }
  return c;
}

CaseOutputs policy_loss_case(const CaseConfig& cfg, const CaseInputs& in) {
  const int64_t B = in.B, T = in.T;
  std::vector<float> adv = in.advantages;
  if (adv.empty()) {
    const TokenAdvantages a = case_advantages(cfg, in);
    adv.assign(a.advantages.begin(), a.advantages.end());
  }
  const PolicyObjectiveConfig c = loss_config(cfg);
  const LossAggMode requested = parse_loss_agg_mode(cfg.text("actor_rollout_ref.actor.loss_agg_mode", "token-mean"));
  const double scale = cfg.num("actor_rollout_ref.actor.loss_scale_factor", static_cast<double>(T));
  // rollout_rs: rejected tokens leave the mask (and the aggregation's counts).
  std::vector<float> mask = in.maskf;
  const std::vector<RejectionCriterion> rejection =
      parse_rollout_rs(cfg.text("algorithm.rollout_correction.rollout_rs", ""),
                       cfg.has("algorithm.rollout_correction.rollout_rs_threshold")
                           ? cfg.j["algorithm.rollout_correction.rollout_rs_threshold"].is_string()
                                 ? cfg.j["algorithm.rollout_correction.rollout_rs_threshold"].get<std::string>()
                                 : cfg.j["algorithm.rollout_correction.rollout_rs_threshold"].dump()
                           : "");
  if (!rejection.empty()) {
    const std::vector<float>& rollout = need(in.rollout_logp, "rollout_log_prob", cfg.where);
    const std::vector<float>& old = need(in.old_logp, "old_log_prob", cfg.where);
    for (int64_t i = 0; i < B; ++i)
      rollout_rejection_mask(mask.data() + i * T, old.data() + i * T, rollout.data() + i * T, in.maskf.data() + i * T,
                             T, rejection);
  }
  std::vector<int64_t> tokens(B, 0), begin(B + 1, 0);
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t t = 0; t < T; ++t) tokens[i] += mask[i * T + t] != 0.0f;
    begin[i + 1] = (i + 1) * T;
  }
  const std::vector<float> pg_w =
      sequence_loss_weights(tokens, effective_loss_agg_mode(c.mode, requested), static_cast<float>(scale));
  const std::vector<float> w = sequence_loss_weights(tokens, requested, static_cast<float>(scale));
  // Rollout correction: importance weights between old_log_prob and rollout_log_prob.
  const RolloutIsLevel level = parse_rollout_is_level(cfg.text("algorithm.rollout_correction.rollout_is", ""));
  std::vector<float> is_w;
  const std::vector<float>& old_lp = need(in.old_logp, "old_log_prob", cfg.where);
  if (level != RolloutIsLevel::Off) {
    const std::vector<float>& rollout = need(in.rollout_logp, "rollout_log_prob", cfg.where);
    is_w.resize(B * T);
    for (int64_t i = 0; i < B; ++i)
      rollout_is_weights(is_w.data() + i * T, old_lp.data() + i * T, rollout.data() + i * T, mask.data() + i * T,
                         T, level, cfg.num("algorithm.rollout_correction.rollout_is_threshold", 2.0));
  }
  PolicyBatch b;
  b.begin = begin;
  b.logp = need(in.logp, "log_prob", cfg.where).data();
  b.old_logp = old_lp.data();
  b.adv = adv.data();
  b.mask = mask.data();
  b.pg_seq_weight = pg_w.data();
  b.seq_weight = w.data();
  b.is_weight = is_w.empty() ? nullptr : is_w.data();
  if (c.kl_coef != 0) b.ref_logp = need(in.ref_logp, "ref_log_prob", cfg.where).data();
  std::vector<float> dlogp(B * T);
  PolicyStats st;
  policy_objective(c, b, dlogp.data(), nullptr, &st);
  CaseOutputs out;
  out["advantages"] = as_tensor(widen(adv), {B, T});
  out["grad.log_prob"] = as_tensor(widen(dlogp), {B, T});
  out["pg_loss"] = as_tensor({st.pg_loss}, {1});
  if (c.kl_coef != 0) out["kl_loss"] = as_tensor({st.kl}, {1});
  for (const auto& [name, value] : policy_metrics(c.mode, st)) out["metric." + name] = as_tensor({value}, {1});
  if (!is_w.empty()) out["rollout_is_weights"] = as_tensor(widen(is_w), {B, T});
  if (!rejection.empty()) out["response_mask"] = as_tensor(widen(mask), {B, T});
  return out;
}

CaseOutputs kl_penalty_case(const CaseConfig& cfg, const CaseInputs& in) {
  const KlPenaltyType type = parse_kl_penalty(cfg.text("algorithm.kl_penalty", "kl"));
  const std::vector<float>& lp = need(in.logp, "log_prob", cfg.where);
  const std::vector<float>& ref = need(in.ref_logp, "ref_log_prob", cfg.where);
  std::vector<double> kl(lp.size());
  for (size_t k = 0; k < lp.size(); ++k) kl[k] = kl_penalty(lp[k], ref[k], type).value;
  CaseOutputs out;
  out["kl"] = as_tensor(kl, {in.B, in.T});
  return out;
}

}  // namespace

AlgorithmCaseResult run_algorithm_case(const std::string& dir, const std::string& name, const nlohmann::json& c) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const std::string where = cat(dir, "/cases.json case \"", name, "\"");
  const nlohmann::json& config = c.contains("config") && c["config"].is_object() ? c["config"] : kEmpty;
  const CaseConfig cfg{config, where};
  std::string kind = c.at("kind").get<std::string>();
  const std::string suffix = "_refused";
  if (kind.size() > suffix.size() && kind.compare(kind.size() - suffix.size(), suffix.size(), suffix) == 0)
    kind.resize(kind.size() - suffix.size());
  AlgorithmCaseResult r;
  try {
    GRPO_CHECK(kind == "advantage" || kind == "policy_loss" || kind == "kl_penalty", "[algorithm] ", where,
               ": unknown kind \"", c.at("kind").get<std::string>(),
               "\": expected advantage, policy_loss or kl_penalty (optionally with _refused)");
    const CaseInputs in = read_inputs(dir + "/" + c.at("inputs").get<std::string>());
    if (kind == "advantage") {
      const TokenAdvantages a = case_advantages(cfg, in);
      r.outputs["advantages"] = as_tensor(a.advantages, {in.B, in.T});
      r.outputs["returns"] = as_tensor(a.returns, {in.B, in.T});
    } else if (kind == "policy_loss") {
      r.outputs = policy_loss_case(cfg, in);
    } else {
      r.outputs = kl_penalty_case(cfg, in);
    }
    if (c.contains("outputs")) {  // exactly the listed outputs
      CaseOutputs listed;
      for (const auto& o : c["outputs"]) {
        GRPO_CHECK(o.is_string(), "[algorithm] ", where, ": outputs must be names");
        const std::string n = o.get<std::string>();
        auto it = r.outputs.find(n);
        GRPO_CHECK(it != r.outputs.end(), "[algorithm] ", where, ": output \"", n, "\" is not one this case computes");
        listed[n] = std::move(it->second);
      }
      r.outputs = std::move(listed);
    }
  } catch (const Error& e) {  // refused by the algorithm code, or a case this code cannot evaluate: its message
    r.refused = true;
    r.error = e.what();
    r.outputs.clear();
  }
  return r;
}

}  // namespace grpo::train
