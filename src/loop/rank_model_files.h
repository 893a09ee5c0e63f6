// A model folder that every rank writes at once, nothing gathered on one rank: each rank stages its part of
// the Hugging Face files (model_file_parts: from its bf16 shadow under mixed precision, else from its f32
// weights) and, under mixed precision, its shard of the exact f32 masters, which the bf16 files round. The
// run checkpoints of several ranks add their moment shards (trainer.cpp); SFT's final model is this alone.
#pragma once
#include <string>
#include <vector>

#include "loop/trainer_state.h"

namespace grpo {

class ModelWeights;
namespace comm {
class Communicator;
}
namespace train {
class Actor;
}

// Collective. Stages this rank's model file part in <stage>/model and its master shard in <stage>/master
// (rank 0 makes the folders first) and returns the model fields of the checkpoint: the parts, the files'
// dtype, every rank's master entry, the layout's size. ZeRO-3's layers are gathered whole first (the bf16
// shadow or the f32 weights a rank writes from must be whole). The other ranks' files may still be being
// written when it returns: the caller synchronises (a barrier, or its own all-gather) before assembling.
ShardedCheckpoint stage_rank_model_files(const std::string& stage, ModelWeights& w, train::Actor& actor,
                                         comm::Communicator& comm);

}  // namespace grpo
