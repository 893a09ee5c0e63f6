// The demo pipeline (see demo.h).
#include "grpo/demo.h"

#include <chrono>
#include <cstdio>

#include "core/files.h"
#include "grpo/arith.h"
#include "grpo/byte_model.h"
#include "grpo/config.h"
#include "grpo/example_configs.h"
#include "grpo/sft.h"
#include "grpo/trainer.h"

namespace grpo {

DemoResult run_demo(const DemoOptions& opt) {
  const std::string out = opt.out, data = out + "/data", init = out + "/init";
  make_dirs(out);
  DemoResult r;

  std::fprintf(stderr, "[demo] 1/4 arithmetic task: %lld train / %lld held-out problems -> %s\n",
               static_cast<long long>(opt.train_examples), static_cast<long long>(opt.test_examples), data.c_str());
  ArithSplit split = write_arith_dataset(data, opt.train_examples, opt.test_examples, opt.seed, opt.difficulty, opt.columns_fraction);

  std::fprintf(stderr, "[demo] 2/4 random-initialised qwen3 `small` model with a byte-level tokenizer -> %s\n",
               init.c_str());
  write_byte_model(init, "qwen3", "small", opt.seed);

  write_file_atomic(out + "/arith-sft.yaml", kArithSftYaml);
  write_file_atomic(out + "/arith-grpo.yaml", kArithGrpoYaml);
  std::vector<std::string> common = {"data.train_files=" + split.train_path, "data.val_files=" + split.test_path};

  std::fprintf(stderr, "[demo] 3/4 supervised warm start (%s/arith-sft.yaml)\n", out.c_str());
  std::vector<std::string> sft_sets = common;
  sft_sets.push_back("actor_rollout_ref.model.path=" + init);
  sft_sets.push_back("trainer.default_local_dir=" + out + "/sft");
  sft_sets.insert(sft_sets.end(), opt.sft_overrides.begin(), opt.sft_overrides.end());
  // The demo owns its folder: a rerun replaces its earlier SFT and GRPO runs (run_folder.h says so on stderr).
  SftSummary sft = run_sft(load_config(out + "/arith-sft.yaml", sft_sets), /*quiet=*/false, /*overwrite=*/true);
  r.sft_accuracy = sft.val_accuracy;
  r.sft_seconds = sft.seconds;
  r.sft_report = out + "/sft/report.html";

  std::fprintf(stderr, "[demo] 4/4 GRPO (%s/arith-grpo.yaml) from the SFT model\n", out.c_str());
  std::vector<std::string> grpo_sets = common;
  grpo_sets.push_back("actor_rollout_ref.model.path=" + sft.model_dir);
  grpo_sets.push_back("trainer.default_local_dir=" + out + "/grpo");
  grpo_sets.insert(grpo_sets.end(), opt.grpo_overrides.begin(), opt.grpo_overrides.end());
  TrainOptions grpo_options;
  grpo_options.overwrite = true;
  GrpoTrainer trainer(load_config(out + "/arith-grpo.yaml", grpo_sets), grpo_options);
  TrainSummary g = trainer.run();
  r.grpo_accuracy = g.val_accuracy.empty() ? 0.0 : g.val_accuracy.back();
  r.grpo_seconds = g.seconds;
  r.grpo_report = out + "/grpo/report.html";
  return r;
}

}  // namespace grpo
