// Held-out evaluation (see evaluate.h).
#include "grpo/evaluate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "grpo/math_answer.h"

namespace grpo {

int64_t majority_answer(const std::vector<std::optional<std::string>>& answers) {
  std::vector<int64_t> representative, votes;  // one entry per distinct answer
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i]) continue;
    size_t c = 0;
    while (c < representative.size() && !answers_match(*answers[i], *answers[representative[c]])) ++c;
    if (c == representative.size()) {
      representative.push_back(static_cast<int64_t>(i));
      votes.push_back(0);
    }
    ++votes[c];
  }
  if (votes.empty()) return -1;
  return representative[std::max_element(votes.begin(), votes.end()) - votes.begin()];
}

EvalResult evaluate(rollout::Engine& engine, const std::vector<Example>& examples,
                    const EvalOptions& opt, std::vector<WeightedReward>* rewards) {
  GRPO_CHECK(opt.n >= 1, "[eval] responses per prompt must be >= 1, got ", opt.n);
  auto t0 = std::chrono::steady_clock::now();
  EvalResult r;
  r.n = opt.n;
  std::vector<rollout::Request> reqs;
  for (size_t i = 0; i < examples.size(); ++i) {
    rollout::Request q;
    q.prompt = examples[i].prompt_ids;
    if (opt.pictures) q.pictures = opt.pictures(examples[i]);
    q.n = opt.n;
    q.sampling = opt.sampling;
    q.stop_token_ids = opt.stop_ids;
    q.max_new_tokens = opt.max_new_tokens;
    q.seed = opt.seed;
    q.id = i;
    reqs.push_back(std::move(q));
  }
  std::vector<rollout::RequestResult> out = engine.generate(reqs);
  std::vector<RewardInput> inputs;
  double correct = 0, best = 0, majority = 0, length = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& ex = examples[i];
    std::vector<std::optional<std::string>> answers;
    double right = 0;
    for (const rollout::SampleResult& s : out[i].samples) {
      right += math_reward(s.text, ex.answer);
      length += s.tokens.size();
      answers.push_back(extract_answer(s.text));
      inputs.push_back({ex.id, ex.prompt, s.text, ex.answer, ex.data_source,
                        ex.extra.value("extra_info", nlohmann::json())});
    }
    correct += right;
    best += right > 0;
    const int64_t m = majority_answer(answers);
    majority += m >= 0 && answers_match(*answers[m], ex.answer);
  }
  r.examples = examples.size();
  if (r.examples > 0) {
    const double responses = static_cast<double>(r.examples) * opt.n;
    r.accuracy = correct / responses;
    r.best_accuracy = best / r.examples;
    r.majority_accuracy = majority / r.examples;
    r.response_length = length / responses;
    if (rewards && !rewards->empty()) {
      RewardScores sc = score_batch(*rewards, inputs);
      double sum = 0, best_sum = 0;
      for (size_t i = 0; i < examples.size(); ++i) {
        float top = sc.total[i * opt.n];
        for (int32_t k = 0; k < opt.n; ++k) {
          sum += sc.total[i * opt.n + k];
          top = std::max(top, sc.total[i * opt.n + k]);
        }
        best_sum += top;
      }
      r.reward_mean = sum / responses;
      r.reward_best = best_sum / r.examples;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace grpo
