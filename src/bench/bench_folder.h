// The work folder that `grpo bench grpo` and `grpo bench dist` run in: a random model of the preset, the
// task's data set (arithmetic prompts, or shapes pictures with --vl) and the GRPO config every run starts
// from. A temporary folder when none is given.
#pragma once
#include <string>

#include "bench/grpo_bench.h"

namespace grpo::cli {

struct BenchFolder {
  std::string out;         // the folder
  std::string train_path;  // the training data set
  std::string yaml;        // the GRPO config the runs start from
};

// command: "bench grpo" or "bench dist", for the messages and the temporary folder's name.
BenchFolder prepare_bench_folder(const GrpoBenchOptions& o, const std::string& out, const char* command);

}  // namespace grpo::cli
