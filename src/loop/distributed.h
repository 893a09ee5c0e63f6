// What the GRPO loop and SFT do differently with several ranks (mpirun -np N), outside the actor (whose
// data-parallel update is train/actor.h): the launch checked against trainer.nnodes / n_gpus_per_node,
// the split of a generation batch's prompts across ranks, and the gathering of every rank's generated and
// scored groups, after which every rank continues with the whole batch in prompt order (advantages, DAPO
// filtering, mini-batches and metrics are then the numbers one process computes for the same samples).
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "config/config.h"
#include "loop/step_phases.h"

namespace grpo {

// Checks trainer.nnodes and trainer.n_gpus_per_node (0: not set) against the ranks the launcher started and
// the machines they run on; a mismatch is an Error naming the key, the value and what was launched.
void check_world(const Config& config, comm::Communicator& comm);

// Shares of a generation batch's prompts (indices into prompts, ascending), one per rank: a group's n
// samples stay on one rank, and shares are balanced by the tokens a group is expected to take,
// n x (prompt tokens + expected response tokens).
std::vector<std::vector<int64_t>> prompt_shares(const std::vector<const Example*>& prompts, int64_t n,
                                                int64_t expected_response_tokens, int ranks);

// On entry gen and sc hold this rank's groups (with remax's greedy baselines: their lengths and rewards) (the prompts of shares[rank], in that order); on return
// every rank holds the whole generation batch in the order of `prompts`. Seconds become the slowest
// rank's; token counts are summed. Pictures do not travel: a sample with pictures keeps them on the rank
// that generated it, and gets that rank as its home_rank (the only one that trains on it).
void gather_groups(comm::Communicator& comm, const std::vector<std::vector<int64_t>>& shares,
                   const std::vector<const Example*>& prompts, GenerationResult& gen, ScoreResult& sc);

// On entry each rank holds the `logprobs` (old_logprobs or ref_logprobs) of its share of every mini-batch
// (Actor::share_logprobs); on return every rank holds them for every sample. For what reads the whole
// batch's: the KL penalty in the reward (and kl_ctrl's update) and rollout_rs's rejection counts.
void all_gather_logprobs(comm::Communicator& comm, std::vector<std::vector<train::TrainSample>>& minibatches,
                         std::vector<float> train::TrainSample::*logprobs);

}  // namespace grpo
