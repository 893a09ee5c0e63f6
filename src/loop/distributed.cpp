// The GRPO loop's exchanges between ranks (see distributed.h).
#include "loop/distributed.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "comm/bytes.h"
#include "train/balance.h"

namespace grpo {

void check_world(const Config& config, comm::Communicator& comm) {
  const std::vector<std::string> hosts = comm.all_gather_bytes(comm.host());
  std::map<std::string, int64_t> per_host;
  for (const std::string& h : hosts) per_host[h]++;
  const int64_t nodes = static_cast<int64_t>(per_host.size());
  const TrainerConfig& t = config.trainer;
  std::string machines;
  for (const auto& [h, n] : per_host) machines += (machines.empty() ? "" : ", ") + h + ": " + std::to_string(n);
  // A process started without an MPI launcher: a verl script's GPU counts (trainer.nnodes=1,
  // n_gpus_per_node=8) describe its cluster, not this run, which is one process on every core.
  if (!comm::launched_by_mpi()) {
    if ((t.nnodes != 0 && t.nnodes != 1) || (t.n_gpus_per_node != 0 && t.n_gpus_per_node != 1))
      std::fprintf(stderr, "[config] trainer.nnodes = %lld, trainer.n_gpus_per_node = %lld: this run is one "
                   "process on this machine's cores (mpirun -np N starts N ranks, which these keys then check)\n",
                   static_cast<long long>(t.nnodes), static_cast<long long>(t.n_gpus_per_node));
    return;
  }
  GRPO_CHECK(t.nnodes == 0 || t.nnodes == nodes, "[config] trainer.nnodes = ", t.nnodes, " but the launcher started ",
             comm.size(), " ranks on ", nodes, " machine(s) (", machines, "); set it to ", nodes,
             " or 0, or launch on ", t.nnodes, " machines (mpirun --hostfile)");
  if (t.n_gpus_per_node != 0)
    for (const auto& [h, n] : per_host)
      GRPO_CHECK(n == t.n_gpus_per_node, "[config] trainer.n_gpus_per_node = ", t.n_gpus_per_node, " but ", h,
                 " runs ", n, " ranks (", machines, "); set it to the ranks per machine or 0, or launch with mpirun -np ",
                 t.n_gpus_per_node * nodes);
}

std::vector<std::vector<int64_t>> prompt_shares(const std::vector<const Example*>& prompts, int64_t n,
                                                int64_t expected_response_tokens, int ranks) {
  std::vector<int64_t> weight;
  for (const Example* p : prompts) weight.push_back(n * (static_cast<int64_t>(p->prompt_ids.size()) + expected_response_tokens));
  return train::balanced_partitions(weight, ranks);
}

namespace {
// A sample's multi-turn counts on the wire.
void put_turns(comm::ByteWriter& w, const rollout::TurnStats& t) {
  w.put(t.assistant_turns);
  w.put(t.user_turns);
  w.put(t.tool_calls);
  w.put(t.tool_seconds);
  w.put(t.parked_seconds);
  w.put(t.inserted_tokens);
  w.put(static_cast<int64_t>(t.failures.size()));
  for (const auto& [kind, count] : t.failures) {
    w.put_string(kind);
    w.put(count);
  }
}
rollout::TurnStats get_turns(comm::ByteReader& in) {
  rollout::TurnStats t;
  t.assistant_turns = in.get<int32_t>();
  t.user_turns = in.get<int32_t>();
  t.tool_calls = in.get<int32_t>();
  t.tool_seconds = in.get<double>();
  t.parked_seconds = in.get<double>();
  t.inserted_tokens = in.get<int64_t>();
  const int64_t kinds = in.get<int64_t>();
  for (int64_t k = 0; k < kinds; ++k) {
    std::string kind = in.get_string();
    t.failures[kind] = in.get<int32_t>();
  }
  return t;
}
}  // namespace

void gather_groups(comm::Communicator& comm, const std::vector<std::vector<int64_t>>& shares,
                   const std::vector<const Example*>& prompts, GenerationResult& gen, ScoreResult& sc) {
  const size_t functions = sc.function_names.size();
  comm::ByteWriter w;
  w.put(gen.gen_tokens);
  w.put(gen.prompt_tokens);
  w.put(gen.seconds);
  w.put(sc.seconds);
  w.put_vector(gen.group_sizes);
  w.put_vector(sc.failures);
  w.put_vector(gen.greedy_lengths);  // remax: per group, its greedy baseline's tokens (else empty)
  w.put<uint8_t>(!gen.turns.empty());
  for (size_t i = 0; i < gen.samples.size(); ++i) {
    const train::TrainSample& s = gen.samples[i];
    w.put_vector(s.tokens);
    w.put(s.prompt_len);
    w.put(s.loss_masked);
    w.put_vector(s.rollout_logprobs);
    w.put(!s.pictures.empty());
    w.put_vector(s.response_mask);
    if (!gen.turns.empty()) put_turns(w, gen.turns[i]);
    w.put_string(gen.texts[i]);
    w.put(gen.truncated[i]);
    w.put(sc.scores[i]);
    w.put(sc.rewards[i]);
    for (size_t f = 0; f < functions; ++f) w.put(sc.per_function[f][i]);
    if (!gen.greedy_lengths.empty()) w.put(sc.reward_baselines[i]);
  }
  const std::vector<std::string> all = comm.all_gather_bytes(w.bytes());
  // This rank's own samples keep their pictures (decoded for its prompts only); samples with pictures are
  // trained on by the rank that holds them (TrainSample::home_rank).
  std::vector<std::vector<PicturePtr>> own_pictures;
  for (train::TrainSample& t : gen.samples) own_pictures.push_back(std::move(t.pictures));
  size_t own_next = 0;

  // Each prompt's group, then the batch in prompt order.
  struct Group {
    std::vector<train::TrainSample> samples;
    std::vector<std::string> texts;
    std::vector<uint8_t> truncated;
    std::vector<float> scores, rewards, reward_baselines;
    std::vector<std::vector<float>> per_function;
    int64_t greedy_length = -1;  // remax: its greedy baseline's tokens
    std::vector<rollout::TurnStats> turns;
  };
  std::vector<Group> groups(prompts.size());
  GenerationResult g;
  ScoreResult s;
  s.function_names = sc.function_names;
  s.failures.assign(functions, 0);
  for (int r = 0; r < comm.size(); ++r) {
    comm::ByteReader in(all[r], "generated groups");
    g.gen_tokens += in.get<int64_t>();
    g.prompt_tokens += in.get<int64_t>();
    g.seconds = std::max(g.seconds, in.get<double>());
    s.seconds = std::max(s.seconds, in.get<double>());
    const std::vector<int64_t> sizes = in.get_vector<int64_t>();
    const std::vector<int64_t> failures = in.get_vector<int64_t>();
    const std::vector<int64_t> greedy_lengths = in.get_vector<int64_t>();
    GRPO_CHECK(greedy_lengths.empty() || greedy_lengths.size() == sizes.size(), "[train] rank ", r, " sent ",
               greedy_lengths.size(), " greedy baselines for ", sizes.size(), " groups");
    const bool with_turns = in.get<uint8_t>() != 0;
    GRPO_CHECK(failures.size() == functions, "[train] rank ", r, " counted failures of ", failures.size(),
               " reward functions, expected ", functions);
    for (size_t f = 0; f < functions; ++f) s.failures[f] += failures[f];
    GRPO_CHECK(sizes.size() == shares[r].size(), "[train] rank ", r, " generated ", sizes.size(), " groups, expected ",
               shares[r].size());
    for (size_t j = 0; j < sizes.size(); ++j) {
      Group& gr = groups[shares[r][j]];
      gr.per_function.resize(functions);
      if (!greedy_lengths.empty()) gr.greedy_length = greedy_lengths[j];
      for (int64_t k = 0; k < sizes[j]; ++k) {
        train::TrainSample t;
        t.tokens = in.get_vector<int32_t>();
        t.prompt_len = in.get<int64_t>();
        t.loss_masked = in.get<bool>();
        t.rollout_logprobs = in.get_vector<float>();
        if (in.get<bool>()) t.home_rank = r;
        if (r == comm.rank()) {
          GRPO_CHECK(own_next < own_pictures.size(), "[train] rank ", r, " lists more samples than it generated");
          t.pictures = std::move(own_pictures[own_next++]);
        }
        t.response_mask = in.get_vector<uint8_t>();
        if (with_turns) gr.turns.push_back(get_turns(in));
        gr.samples.push_back(std::move(t));
        gr.texts.push_back(in.get_string());
        gr.truncated.push_back(in.get<uint8_t>());
        gr.scores.push_back(in.get<float>());
        gr.rewards.push_back(in.get<float>());
        for (size_t f = 0; f < functions; ++f) gr.per_function[f].push_back(in.get<float>());
        if (!greedy_lengths.empty()) gr.reward_baselines.push_back(in.get<float>());
      }
    }
    GRPO_CHECK(in.done(), "[train] rank ", r, " sent more than its groups");
  }
  g.prompts = prompts;
  s.per_function.resize(functions);
  for (Group& gr : groups) {
    g.group_sizes.push_back(static_cast<int64_t>(gr.samples.size()));
    if (gr.greedy_length >= 0) g.greedy_lengths.push_back(gr.greedy_length);
    s.reward_baselines.insert(s.reward_baselines.end(), gr.reward_baselines.begin(), gr.reward_baselines.end());
    for (size_t k = 0; k < gr.samples.size(); ++k) {
      g.samples.push_back(std::move(gr.samples[k]));
      g.texts.push_back(std::move(gr.texts[k]));
      g.truncated.push_back(gr.truncated[k]);
      if (!gr.turns.empty()) g.turns.push_back(std::move(gr.turns[k]));
      s.scores.push_back(gr.scores[k]);
      s.rewards.push_back(gr.rewards[k]);
      for (size_t f = 0; f < functions; ++f) s.per_function[f].push_back(gr.per_function[f][k]);
    }
  }
  GRPO_CHECK(g.greedy_lengths.empty() || g.greedy_lengths.size() == prompts.size(), "[train] greedy baselines of ",
             g.greedy_lengths.size(), " of ", prompts.size(), " prompts gathered");
  gen = std::move(g);
  sc = std::move(s);
}

void all_gather_logprobs(comm::Communicator& comm, std::vector<std::vector<train::TrainSample>>& minibatches,
                         std::vector<float> train::TrainSample::*logprobs) {
  comm::ByteWriter w;
  for (size_t m = 0; m < minibatches.size(); ++m)
    for (size_t i = 0; i < minibatches[m].size(); ++i) {
      const std::vector<float>& lp = minibatches[m][i].*logprobs;
      if (lp.empty()) continue;  // another rank's share (or an empty response)
      w.put(static_cast<int64_t>(m));
      w.put(static_cast<int64_t>(i));
      w.put_vector(lp);
    }
  const std::vector<std::string> all = comm.all_gather_bytes(w.bytes());
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) continue;
    comm::ByteReader in(all[r], "response log-probs");
    while (!in.done()) {
      const int64_t m = in.get<int64_t>(), i = in.get<int64_t>();
      GRPO_CHECK(m >= 0 && m < static_cast<int64_t>(minibatches.size()) && i >= 0 &&
                     i < static_cast<int64_t>(minibatches[m].size()),
                 "[train] rank ", r, " sent log-probs of sample ", i, " of mini-batch ", m, ", which does not exist");
      train::TrainSample& s = minibatches[m][i];
      s.*logprobs = in.get_vector<float>();
      GRPO_CHECK(static_cast<int64_t>((s.*logprobs).size()) == s.response_len(), "[train] rank ", r, " sent ",
                 (s.*logprobs).size(), " log-probs of sample ", i, " of mini-batch ", m, ", which has ",
                 s.response_len(), " response tokens");
    }
  }
}

}  // namespace grpo
