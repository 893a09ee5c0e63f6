// A model folder every rank writes at once (see rank_model_files.h).
#include "loop/rank_model_files.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "core/files.h"
#include "loop/flat_shards.h"
#include "model/checkpoint.h"
#include "model/weights.h"
#include "train/actor.h"

namespace grpo {

ShardedCheckpoint stage_rank_model_files(const std::string& stage, ModelWeights& w, train::Actor& actor,
                                         comm::Communicator& comm) {
  if (comm.rank() == 0) {  // (a leftover of a crashed save goes first)
    std::error_code ec;
    std::filesystem::remove_all(stage, ec);
    for (const char* part : {"/model", "/optimizer", "/master"}) make_dirs(stage + part);
  }
  comm.barrier();
  actor.gather_for_rollout();  // ZeRO-3: every layer whole (the next rollout reads them too)
  const bool bf16 = w.has_bf16();
  ShardedCheckpoint ck;
  ck.stage_dir = stage;
  ck.parts = model_file_parts(w.config(), comm.size());
  ck.model_dtype = bf16 ? DType::BF16 : DType::F32;
  ck.layout_numel = w.params().numel();
  const ModelFilePart& part = ck.parts[comm.rank()];
  if (!part.tensors.empty()) w.write_file_part(stage + "/model/" + part.file, part, ck.model_dtype);
  if (bf16) {  // the exact f32 masters of this rank's shard, which the bf16 model files round
    const train::Actor::MasterRange m = actor.master_range();
    const nlohmann::json mine =
        write_flat_shard(master_shards(), stage, comm.rank(), {m.lo, m.hi, {m.data}}, ck.layout_numel);
    for (const std::string& entry : comm.all_gather_bytes(mine.dump()))
      ck.masters.push_back(nlohmann::json::parse(entry));
  }
  return ck;
}

}  // namespace grpo
