// Held-out evaluation (see evaluate.h).
#include "core/clock.h"
#include "loop/evaluate.h"

#include <algorithm>
#include <chrono>

#include "comm/bytes.h"
#include "core/error.h"
#include "reward/math_answer.h"
#include "train/balance.h"

namespace grpo {

namespace {

// Per-example results of the examples `which` (indices into examples, which are also the request ids),
// each summed over the example's n responses.
struct Outcomes {
  std::vector<double> correct;    // right responses
  std::vector<double> best;       // 1 when any response is right
  std::vector<double> majority;   // 1 when the most frequent answer is right
  std::vector<double> length;     // generated tokens
  std::vector<double> calls;      // responses that called a tool
  std::vector<double> reward;     // total reward (with reward functions)
  std::vector<double> reward_top; // the best response's total reward (with reward functions)
};

Outcomes run_examples(rollout::Engine& engine, const std::vector<Example>& examples, const std::vector<int64_t>& which,
                      const EvalOptions& opt, std::vector<WeightedReward>* rewards) {
  std::vector<rollout::Request> reqs;
  for (int64_t i : which) {
    rollout::Request q;
    q.prompt = examples[i].prompt_ids;
    if (opt.pictures) q.pictures = opt.pictures(examples[i]);  // each rank's share decodes its own
    q.n = opt.n;
    q.sampling = opt.sampling;
    q.stop_token_ids = opt.stop_ids;
    q.max_new_tokens = opt.max_new_tokens;
    q.seed = opt.seed;
    q.id = static_cast<uint64_t>(i);
    reqs.push_back(std::move(q));
  }
  std::vector<rollout::RequestResult> out = engine.generate(reqs, {}, opt.turns);
  Outcomes o;
  std::vector<RewardInput> inputs;
  for (size_t j = 0; j < which.size(); ++j) {
    const Example& ex = examples[which[j]];
    std::vector<std::optional<std::string>> answers;
    double right = 0, length = 0, calls = 0;
    for (const rollout::SampleResult& s : out[j].samples) {
      right += math_reward(s.text, ex.answer);
      length += static_cast<double>(s.tokens.size() - static_cast<size_t>(s.turns.inserted_tokens));
      calls += s.turns.tool_calls > 0;
      answers.push_back(extract_answer(s.text));
      inputs.push_back({ex.id, ex.prompt, s.text, ex.answer, ex.data_source,
                        ex.extra.value("extra_info", nlohmann::json())});
    }
    const int64_t m = majority_answer(answers);
    o.correct.push_back(right);
    o.best.push_back(right > 0 ? 1.0 : 0.0);
    o.majority.push_back(m >= 0 && answers_match(*answers[m], ex.answer) ? 1.0 : 0.0);
    o.length.push_back(length);
    o.calls.push_back(calls);
  }
  if (rewards && !rewards->empty()) {
    const RewardScores sc = score_batch(*rewards, inputs);
    for (size_t j = 0; j < which.size(); ++j) {
      double sum = 0;
      float top = sc.total[j * opt.n];
      for (int32_t k = 0; k < opt.n; ++k) {
        sum += sc.total[j * opt.n + k];
        top = std::max(top, sc.total[j * opt.n + k]);
      }
      o.reward.push_back(sum);
      o.reward_top.push_back(top);
    }
  }
  return o;
}

// Means in example order (the additions one process makes, whatever the ranks).
EvalResult summarise(const Outcomes& o, int32_t n, bool with_rewards) {
  EvalResult r;
  r.n = n;
  r.examples = static_cast<int64_t>(o.correct.size());
  if (r.examples == 0) return r;
  double correct = 0, best = 0, majority = 0, length = 0, calls = 0, reward = 0, reward_top = 0;
  for (int64_t i = 0; i < r.examples; ++i) {
    correct += o.correct[i];
    best += o.best[i];
    majority += o.majority[i];
    length += o.length[i];
    calls += o.calls[i];
    if (with_rewards) reward += o.reward[i], reward_top += o.reward_top[i];
  }
  const double responses = static_cast<double>(r.examples) * n;
  r.accuracy = correct / responses;
  r.best_accuracy = best / r.examples;
  r.majority_accuracy = majority / r.examples;
  r.response_length = length / responses;
  r.tool_call_share = calls / responses;
  if (with_rewards) {
    r.reward_mean = reward / responses;
    r.reward_best = reward_top / r.examples;
  }
  return r;
}

}  // namespace

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

EvalResult evaluate(rollout::Engine& engine, const std::vector<Example>& examples, const EvalOptions& opt,
                    std::vector<WeightedReward>* rewards) {
  GRPO_CHECK(opt.n >= 1, "[eval] responses per prompt must be >= 1, got ", opt.n);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int64_t> all(examples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  EvalResult r = summarise(run_examples(engine, examples, all, opt, rewards), opt.n, rewards && !rewards->empty());
  r.seconds = seconds_since(t0);
  return r;
}

EvalResult evaluate(comm::Communicator& comm, rollout::Engine& engine, const std::vector<Example>& examples,
                    const EvalOptions& opt, std::vector<WeightedReward>* rewards) {
  if (comm.size() == 1) return evaluate(engine, examples, opt, rewards);
  GRPO_CHECK(opt.n >= 1, "[eval] responses per prompt must be >= 1, got ", opt.n);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int64_t> weight;
  for (const Example& ex : examples) weight.push_back(static_cast<int64_t>(ex.prompt_ids.size()) + opt.max_new_tokens);
  const std::vector<std::vector<int64_t>> shares = train::balanced_partitions(weight, comm.size());
  const Outcomes mine = run_examples(engine, examples, shares[comm.rank()], opt, rewards);
  const bool with_rewards = rewards && !rewards->empty();
  // The fields of Outcomes in one order, to send and to receive.
  auto fields = [with_rewards](Outcomes& o) {
    std::vector<std::vector<double>*> f = {&o.correct, &o.best, &o.majority, &o.length, &o.calls};
    if (with_rewards) f.insert(f.end(), {&o.reward, &o.reward_top});
    return f;
  };
  comm::ByteWriter w;
  Outcomes sent = mine;
  for (std::vector<double>* v : fields(sent)) w.put_vector(*v);
  const std::vector<std::string> all = comm.all_gather_bytes(w.bytes());
  Outcomes o;
  for (std::vector<double>* v : fields(o)) v->resize(examples.size());
  for (int r = 0; r < comm.size(); ++r) {
    comm::ByteReader in(all[r], "evaluation results");
    for (std::vector<double>* v : fields(o)) {
      const std::vector<double> got = in.get_vector<double>();
      GRPO_CHECK(got.size() == shares[r].size(), "[eval] rank ", r, " sent results for ", got.size(),
                 " prompts, expected ", shares[r].size());
      for (size_t j = 0; j < got.size(); ++j) (*v)[shares[r][j]] = got[j];
    }
  }
  EvalResult res = summarise(o, opt.n, with_rewards);
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace grpo
