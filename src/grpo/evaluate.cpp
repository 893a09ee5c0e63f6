// Held-out evaluation (see evaluate.h).
#include "grpo/evaluate.h"

#include <chrono>

namespace grpo {

EvalResult evaluate(rollout::Engine& engine, const std::vector<Example>& examples,
                    const EvalOptions& opt, std::vector<WeightedReward>* rewards) {
  auto t0 = std::chrono::steady_clock::now();
  EvalResult r;
  std::vector<rollout::Request> reqs;
  for (size_t i = 0; i < examples.size(); ++i) {
    rollout::Request q;
    q.prompt = examples[i].prompt_ids;
    if (opt.pictures) q.pictures = opt.pictures(examples[i]);
    q.n = 1;
    q.sampling = opt.sampling;
    q.stop_token_ids = opt.stop_ids;
    q.max_new_tokens = opt.max_new_tokens;
    q.seed = opt.seed;
    q.id = i;
    reqs.push_back(std::move(q));
  }
  std::vector<rollout::RequestResult> out = engine.generate(reqs);
  std::vector<RewardInput> inputs;
  double correct = 0, length = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const rollout::SampleResult& s = out[i].samples[0];
    correct += math_reward(s.text, examples[i].answer);
    length += s.tokens.size();
    inputs.push_back({examples[i].id, examples[i].prompt, s.text, examples[i].answer});
  }
  r.examples = examples.size();
  if (r.examples > 0) {
    r.accuracy = correct / r.examples;
    r.response_length = length / r.examples;
    if (rewards && !rewards->empty()) {
      RewardScores sc = score_batch(*rewards, inputs);
      double sum = 0;
      for (float v : sc.total) sum += v;
      r.reward_mean = sum / r.examples;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace grpo
