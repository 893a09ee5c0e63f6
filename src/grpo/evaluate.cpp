// Held-out evaluation (see evaluate.h).
#include "grpo/evaluate.h"

#include <chrono>

#include "comm/bytes.h"
#include "train/balance.h"

namespace grpo {

namespace {

// Per-example results of the examples `which` (indices into examples, which are also the request ids).
struct Outcomes {
  std::vector<double> correct, length, reward;
};

Outcomes run_examples(rollout::Engine& engine, const std::vector<Example>& examples, const std::vector<int64_t>& which,
                      const EvalOptions& opt, std::vector<WeightedReward>* rewards) {
  std::vector<rollout::Request> reqs;
  for (int64_t i : which) {
    rollout::Request q;
    q.prompt = examples[i].prompt_ids;
    q.n = 1;
    q.sampling = opt.sampling;
    q.stop_token_ids = opt.stop_ids;
    q.max_new_tokens = opt.max_new_tokens;
    q.seed = opt.seed;
    q.id = static_cast<uint64_t>(i);
    reqs.push_back(std::move(q));
  }
  std::vector<rollout::RequestResult> out = engine.generate(reqs);
  Outcomes o;
  std::vector<RewardInput> inputs;
  for (size_t j = 0; j < which.size(); ++j) {
    const Example& ex = examples[which[j]];
    const rollout::SampleResult& s = out[j].samples[0];
    o.correct.push_back(math_reward(s.text, ex.answer));
    o.length.push_back(static_cast<double>(s.tokens.size()));
    inputs.push_back({ex.id, ex.prompt, s.text, ex.answer});
  }
  if (rewards && !rewards->empty()) {
    const RewardScores sc = score_batch(*rewards, inputs);
    o.reward.assign(sc.total.begin(), sc.total.end());
  }
  return o;
}

// Means in example order (the additions one process makes).
EvalResult summarise(const Outcomes& o, bool with_rewards) {
  EvalResult r;
  r.examples = static_cast<int64_t>(o.correct.size());
  if (r.examples == 0) return r;
  double correct = 0, length = 0, reward = 0;
  for (int64_t i = 0; i < r.examples; ++i) {
    correct += o.correct[i];
    length += o.length[i];
    if (with_rewards) reward += o.reward[i];
  }
  r.accuracy = correct / r.examples;
  r.response_length = length / r.examples;
  if (with_rewards) r.reward_mean = reward / r.examples;
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

EvalResult evaluate(rollout::Engine& engine, const std::vector<Example>& examples, const EvalOptions& opt,
                    std::vector<WeightedReward>* rewards) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int64_t> all(examples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  EvalResult r = summarise(run_examples(engine, examples, all, opt, rewards), rewards && !rewards->empty());
  r.seconds = seconds_since(t0);
  return r;
}

EvalResult evaluate(comm::Communicator& comm, rollout::Engine& engine, const std::vector<Example>& examples,
                    const EvalOptions& opt, std::vector<WeightedReward>* rewards) {
  if (comm.size() == 1) return evaluate(engine, examples, opt, rewards);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int64_t> weight;
  for (const Example& ex : examples) weight.push_back(static_cast<int64_t>(ex.prompt_ids.size()) + opt.max_new_tokens);
  const std::vector<std::vector<int64_t>> shares = train::balanced_partitions(weight, comm.size());
  const Outcomes mine = run_examples(engine, examples, shares[comm.rank()], opt, rewards);
  comm::ByteWriter w;
  w.put_vector(mine.correct);
  w.put_vector(mine.length);
  w.put_vector(mine.reward);
  const std::vector<std::string> all = comm.all_gather_bytes(w.bytes());
  const bool with_rewards = rewards && !rewards->empty();
  Outcomes o;
  o.correct.resize(examples.size());
  o.length.resize(examples.size());
  if (with_rewards) o.reward.resize(examples.size());
  for (int r = 0; r < comm.size(); ++r) {
    comm::ByteReader in(all[r], "evaluation results");
    const std::vector<double> c = in.get_vector<double>(), l = in.get_vector<double>(), rw = in.get_vector<double>();
    GRPO_CHECK(c.size() == shares[r].size() && l.size() == c.size() && (!with_rewards || rw.size() == c.size()),
               "[eval] rank ", r, " sent results for ", c.size(), " prompts, expected ", shares[r].size());
    for (size_t j = 0; j < c.size(); ++j) {
      o.correct[shares[r][j]] = c[j];
      o.length[shares[r][j]] = l[j];
      if (with_rewards) o.reward[shares[r][j]] = rw[j];
    }
  }
  EvalResult res = summarise(o, with_rewards);
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace grpo
