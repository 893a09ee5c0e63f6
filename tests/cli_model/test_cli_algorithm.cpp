// `grpo debug algorithm` end to end: verl's cases (../shared/reference/algorithms) through the built binary
// match verl's outputs, and cases of our own that the shared folder does not reach: long responses, a batch
// whose tokens are all masked, and rollout correction (token and sequence importance weights), each against
// an oracle written here from verl's formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "core/files.h"
#include "core/rng.h"
#include "model/safetensors.h"
#include "train/case_eval.h"

using namespace grpo;
using test::run_grpo;
namespace fs = std::filesystem;

namespace {

const std::string kShared = std::string(GRPO_SHARED_DIR) + "/reference/algorithms";

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("grpo_cli_algorithm_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<float> tensor(const std::string& path, const std::string& name) {
  SafetensorsFile f = SafetensorsFile::open(path);
  return train::case_floats(f, name);
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, bool gradient) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = gradient ? 1e-4 * scale + 1e-12 : 1e-5 * std::abs(want[i]) + 1e-7;
    ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
  }
}

}  // namespace

TEST(CliAlgorithm, VerlCasesMatchThroughTheBinary) {
  const fs::path out = fresh_dir("shared");
  const auto r = run_grpo("debug algorithm --cases " + kShared + " --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json cases = nlohmann::json::parse(read_file(kShared + "/cases.json"))["cases"];
  for (const auto& [name, c] : cases.items()) {
    SCOPED_TRACE(name);
    if (c["kind"].get<std::string>().find("_refused") != std::string::npos) {
      ASSERT_TRUE(fs::exists(out / (name + ".error")));
      EXPECT_NE(read_file((out / (name + ".error")).string()).find(c["error"].get<std::string>()), std::string::npos);
      continue;
    }
    const std::string got = (out / (name + ".safetensors")).string(), want = kShared + "/" + name + ".safetensors";
    for (const auto& o : c["outputs"]) {
      const std::string n = o.get<std::string>();
      SCOPED_TRACE(n);
      const std::vector<float> w = tensor(want, n);
      expect_close(tensor(got, n), std::vector<double>(w.begin(), w.end()), n.rfind("grad.", 0) == 0);
    }
  }
  fs::remove_all(out);
}

namespace {

// Inputs in verl's layout: B responses padded to T tokens.
struct Inputs {
  int64_t B, T;
  std::vector<float> rewards, mask, logp, old_logp, ref_logp, rollout_logp;
  std::vector<int64_t> group;
  std::vector<int64_t> lengths;
};

Inputs make_inputs(int64_t T, const std::vector<int64_t>& lengths, const std::vector<int64_t>& group, uint64_t seed) {
  Rng rng(seed);
  Inputs in{static_cast<int64_t>(lengths.size()), T, {}, {}, {}, {}, {}, {}, group, lengths};
  for (int64_t i = 0; i < in.B; ++i) {
    const float score = static_cast<float>(rng.below(3)) * 0.5f;
    for (int64_t t = 0; t < T; ++t) {
      const bool on = t < lengths[i];
      in.mask.push_back(on ? 1.0f : 0.0f);
      in.rewards.push_back(on && t == lengths[i] - 1 ? score : 0.0f);
      const float lp = -0.05f - 2.0f * static_cast<float>(rng.uniform());
      in.logp.push_back(lp);
      in.old_logp.push_back(lp + 0.15f * static_cast<float>(rng.normal()));
      in.ref_logp.push_back(lp + 0.2f * static_cast<float>(rng.normal()));
      in.rollout_logp.push_back(in.old_logp.back() + 0.1f * static_cast<float>(rng.normal()));
    }
  }
  return in;
}

void write_inputs(const fs::path& path, const Inputs& in) {
  std::vector<StTensorOut> t = {
      {"token_level_rewards", StDType::F32, {in.B, in.T}, in.rewards.data()},
      {"response_mask", StDType::F32, {in.B, in.T}, in.mask.data()},
      {"log_prob", StDType::F32, {in.B, in.T}, in.logp.data()},
      {"old_log_prob", StDType::F32, {in.B, in.T}, in.old_logp.data()},
      {"ref_log_prob", StDType::F32, {in.B, in.T}, in.ref_logp.data()},
      {"rollout_log_prob", StDType::F32, {in.B, in.T}, in.rollout_logp.data()},
      {"group", StDType::I64, {in.B}, in.group.data()}};
  write_safetensors(path.string(), t);
}

double score_of(const Inputs& in, int64_t i) {
  double s = 0;
  for (int64_t t = 0; t < in.T; ++t) s += in.rewards[i * in.T + t];
  return s;
}

// verl's RLOO: leave-one-out mean baseline; a group of one keeps its score.
std::vector<double> rloo_oracle(const Inputs& in) {
  std::vector<double> adv(in.B * in.T, 0.0);
  for (int64_t i = 0; i < in.B; ++i) {
    double others = 0;
    int64_t n = 0;
    for (int64_t j = 0; j < in.B; ++j)
      if (in.group[j] == in.group[i] && j != i) others += score_of(in, j), ++n;
    const double a = n == 0 ? score_of(in, i) : score_of(in, i) - others / static_cast<double>(n);
    for (int64_t t = 0; t < in.T; ++t) adv[i * in.T + t] = a * in.mask[i * in.T + t];
  }
  return adv;
}

// verl's REINFORCE++: discounted returns reset at each response's end, whitened over the response tokens.
std::vector<double> reinforce_pp_oracle(const Inputs& in, double gamma) {
  std::vector<double> ret(in.B * in.T, 0.0);
  double sum = 0, count = 0;
  for (int64_t i = 0; i < in.B; ++i)
    for (int64_t t = in.lengths[i] - 1; t >= 0; --t) {
      ret[i * in.T + t] = in.rewards[i * in.T + t] + (t + 1 < in.lengths[i] ? gamma * ret[i * in.T + t + 1] : 0.0);
      sum += ret[i * in.T + t], count += 1;
    }
  const double mean = sum / count;
  double ss = 0;
  for (int64_t i = 0; i < in.B; ++i)
    for (int64_t t = 0; t < in.lengths[i]; ++t) ss += (ret[i * in.T + t] - mean) * (ret[i * in.T + t] - mean);
  const double inv = 1.0 / std::sqrt(ss / (count - 1) + 1e-8);
  std::vector<double> adv(in.B * in.T, 0.0);
  for (int64_t i = 0; i < in.B; ++i)
    for (int64_t t = 0; t < in.lengths[i]; ++t) adv[i * in.T + t] = (ret[i * in.T + t] - mean) * inv;
  return adv;
}

// Vanilla PPO (token-mean) with rollout importance weights: loss and d loss / d log_prob.
struct LossOracle {
  double loss = 0;
  std::vector<double> grad;
};
LossOracle vanilla_is_oracle(const Inputs& in, const std::vector<float>& adv, bool sequence_level, double threshold) {
  LossOracle o;
  o.grad.assign(in.B * in.T, 0.0);
  double tokens = 0;
  for (float m : in.mask) tokens += m;
  for (int64_t i = 0; i < in.B; ++i) {
    double seq_log_ratio = 0;
    for (int64_t t = 0; t < in.lengths[i]; ++t) seq_log_ratio += in.old_logp[i * in.T + t] - in.rollout_logp[i * in.T + t];
    for (int64_t t = 0; t < in.lengths[i]; ++t) {
      const int64_t k = i * in.T + t;
      const double lr = sequence_level ? seq_log_ratio : static_cast<double>(in.old_logp[k]) - in.rollout_logp[k];
      const double w = std::min(std::exp(std::clamp(lr, -20.0, 20.0)), threshold);
      const double A = adv[k], r = std::exp(static_cast<double>(in.logp[k]) - in.old_logp[k]);
      const double L1 = -A * r, L2 = -A * std::clamp(r, 0.8, 1.28);
      double L = std::max(L1, L2), dL = L1 > L2 ? -A * r : (r >= 0.8 && r <= 1.28 ? -A * r : 0.0);
      if (A < 0 && L > -3.0 * A) L = -3.0 * A, dL = 0.0;
      o.loss += w * L / tokens;
      o.grad[k] = w * dL / tokens;
    }
  }
  return o;
}

nlohmann::json loss_case(const std::string& inputs, const std::string& mode, const std::string& agg,
                         const std::string& rollout_is, const std::vector<std::string>& outputs) {
  nlohmann::json cfg = {{"actor_rollout_ref.actor.policy_loss.loss_mode", mode},
                        {"actor_rollout_ref.actor.loss_agg_mode", agg},
                        {"actor_rollout_ref.actor.clip_ratio_low", 0.2},
                        {"actor_rollout_ref.actor.clip_ratio_high", 0.28},
                        {"actor_rollout_ref.actor.clip_ratio_c", 3.0}};
  if (!rollout_is.empty()) {
    cfg["algorithm.rollout_correction.rollout_is"] = rollout_is;
    cfg["algorithm.rollout_correction.rollout_is_threshold"] = 2.0;
  }
  return {{"kind", "policy_loss"}, {"inputs", inputs}, {"config", cfg}, {"outputs", outputs}};
}

}  // namespace

TEST(CliAlgorithm, OwnCasesLongMaskedAndRolloutCorrection) {
  const fs::path dir = fresh_dir("own_cases"), out = fresh_dir("own_out");
  // Long responses (up to 3000 tokens) in groups of 3, 2 and a group of one; a batch with every token masked.
  const Inputs longs = make_inputs(3000, {3000, 1700, 2999, 1, 2500, 800}, {7, 7, 7, 2, 2, 5}, 1);
  const Inputs masked = make_inputs(8, {0, 0, 0, 0}, {0, 0, 1, 1}, 2);
  write_inputs(dir / "long.safetensors", longs);
  write_inputs(dir / "masked.safetensors", masked);
  const std::vector<std::string> loss_outputs = {"advantages", "grad.log_prob", "pg_loss", "metric.actor/pg_clipfrac",
                                                 "metric.actor/ppo_kl", "metric.actor/pg_clipfrac_lower"};
  nlohmann::json cases;
  cases["long_rloo"] = {{"kind", "advantage"}, {"inputs", "long.safetensors"},
                        {"config", {{"algorithm.adv_estimator", "rloo"}}}, {"outputs", {"advantages", "returns"}}};
  cases["long_reinforce_pp"] = {{"kind", "advantage"}, {"inputs", "long.safetensors"},
                                {"config", {{"algorithm.adv_estimator", "reinforce_plus_plus"}, {"algorithm.gamma", 0.995}}},
                                {"outputs", {"advantages", "returns"}}};
  cases["long_vanilla_token_is"] = loss_case("long.safetensors", "vanilla", "token-mean", "token", loss_outputs);
  cases["long_vanilla_sequence_is"] = loss_case("long.safetensors", "vanilla", "token-mean", "sequence", loss_outputs);
  cases["masked_grpo"] = {{"kind", "advantage"}, {"inputs", "masked.safetensors"},
                          {"config", {{"algorithm.adv_estimator", "grpo"}}}, {"outputs", {"advantages", "returns"}}};
  cases["masked_reinforce_pp"] = {{"kind", "advantage_refused"}, {"inputs", "masked.safetensors"},
                                  {"config", {{"algorithm.adv_estimator", "reinforce_plus_plus"}}}};
  for (const char* mode : {"vanilla", "gspo", "geo_mean", "kl_cov", "dro"})
    cases[std::string("masked_loss_") + mode] = loss_case("masked.safetensors", mode, "seq-mean-token-mean", "token",
                                                          {"grad.log_prob", "pg_loss"});
  {
    std::ofstream f(dir / "cases.json");
    f << nlohmann::json{{"cases", cases}}.dump(1);
  }
  const auto r = run_grpo("debug algorithm --cases " + dir.string() + " --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  auto got = [&](const std::string& c, const std::string& n) { return tensor((out / (c + ".safetensors")).string(), n); };

  expect_close(got("long_rloo", "advantages"), rloo_oracle(longs), false);
  expect_close(got("long_reinforce_pp", "advantages"), reinforce_pp_oracle(longs, 0.995), false);
  const std::vector<float> adv = got("long_vanilla_token_is", "advantages");
  for (bool sequence : {false, true}) {
    SCOPED_TRACE(sequence ? "sequence" : "token");
    const std::string c = sequence ? "long_vanilla_sequence_is" : "long_vanilla_token_is";
    const LossOracle o = vanilla_is_oracle(longs, adv, sequence, 2.0);
    expect_close(got(c, "pg_loss"), {o.loss}, false);
    expect_close(got(c, "grad.log_prob"), o.grad, true);
    EXPECT_GT(max_abs(got(c, "grad.log_prob")), 0.0);
  }
  for (float a : got("masked_grpo", "advantages")) EXPECT_EQ(a, 0.0f);
  ASSERT_TRUE(fs::exists(out / "masked_reinforce_pp.error"));
  EXPECT_NE(read_file((out / "masked_reinforce_pp.error").string()).find("mask"), std::string::npos);
  for (const char* mode : {"vanilla", "gspo", "geo_mean", "kl_cov", "dro"}) {
    SCOPED_TRACE(mode);
    EXPECT_EQ(got(std::string("masked_loss_") + mode, "pg_loss")[0], 0.0f);
    for (float g : got(std::string("masked_loss_") + mode, "grad.log_prob")) EXPECT_EQ(g, 0.0f);
  }
  fs::remove_all(dir);
  fs::remove_all(out);
}
