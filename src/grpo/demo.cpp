// The demo pipelines (see demo.h).
#include "grpo/demo.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/files.h"
#include "data/arith.h"
#include "grpo/byte_model.h"
#include "grpo/config.h"
#include "grpo/example_configs.h"
#include "grpo/sft.h"
#include "data/shapes.h"
#include "grpo/trainer.h"

namespace grpo {

DemoOptions demo_defaults(DemoOptions o) {
  GRPO_CHECK(o.task == "arith" || o.task == "shapes", "[demo] --task: expected arith or shapes, got \"", o.task, "\"");
  const bool arith = o.task == "arith";
  if (o.train_examples <= 0) o.train_examples = arith ? 16000 : 3000;
  if (o.test_examples <= 0) o.test_examples = arith ? 500 : 300;
  if (o.difficulty.empty()) o.difficulty = arith ? "2" : "easy";
  if (o.worked_fraction < 0) o.worked_fraction = 0.25;
  // shapes: GRPO on 10,000 problems the SFT never saw (on the SFT's own, memorised ones it finds little
  // to learn); arith's GRPO uses the SFT problems, as it always has.
  if (o.rl_examples < 0) o.rl_examples = arith ? 0 : 10000;
  GRPO_CHECK(!arith || o.rl_examples == 0, "[demo] --rl: the arithmetic demo's GRPO uses its training problems");
  // shapes: `tiny` (a 2-block tower of width 64, a 4-layer decoder of width 128): the `small` decoder's
  // training step is ~30x slower on the 2-core AVX2 machine, too slow for a ~15-minute demo.
  if (o.preset.empty()) o.preset = arith ? "small" : "tiny";
  return o;
}

DemoResult run_demo(const DemoOptions& options) {
  const DemoOptions opt = demo_defaults(options);
  const bool arith = opt.task == "arith";
  const std::string out = opt.out, data = out + "/data", init = out + "/init";
  make_dirs(out);
  DemoResult r;

  std::string train_path, test_path, rl_path;
  if (arith) {
    std::fprintf(stderr, "[demo] 1/4 arithmetic task: %lld train / %lld held-out problems -> %s\n",
                 static_cast<long long>(opt.train_examples), static_cast<long long>(opt.test_examples), data.c_str());
    const ArithSplit split = write_arith_dataset(data, opt.train_examples, opt.test_examples, opt.seed,
                                                 opt.difficulty, opt.worked_fraction);
    train_path = split.train_path;
    test_path = split.test_path;
  } else {
    std::fprintf(stderr, "[demo] 1/4 shapes task: %lld train / %lld held-out / %lld GRPO pictures and questions -> %s\n",
                 static_cast<long long>(opt.train_examples), static_cast<long long>(opt.test_examples),
                 static_cast<long long>(opt.rl_examples), data.c_str());
    const ShapesSplit split = write_shapes_dataset(data, opt.train_examples, opt.test_examples, opt.seed,
                                                   opt.difficulty, opt.worked_fraction, opt.rl_examples);
    train_path = split.train_path;
    test_path = split.test_path;
    rl_path = split.rl_path;
  }

  const std::string sft_yaml = out + "/" + opt.task + "-sft.yaml", grpo_yaml = out + "/" + opt.task + "-grpo.yaml";
  write_file_atomic(sft_yaml, arith ? kArithSftYaml : kShapesSftYaml);
  write_file_atomic(grpo_yaml, arith ? kArithGrpoYaml : kShapesGrpoYaml);
  std::string sft_model = opt.sft_model;
  if (sft_model.empty()) {
    const std::string arch = arith ? "qwen3" : "qwen3-vl";
    std::fprintf(stderr, "[demo] 2/4 random-initialised %s `%s` model with a byte-level tokenizer -> %s\n",
                 arch.c_str(), opt.preset.c_str(), init.c_str());
    write_byte_model(init, arch, opt.preset, opt.seed);

    std::fprintf(stderr, "[demo] 3/4 supervised warm start (%s)\n", sft_yaml.c_str());
    std::vector<std::string> sft_sets = {"data.train_files=" + train_path, "data.val_files=" + test_path};
    sft_sets.push_back("actor_rollout_ref.model.path=" + init);
    sft_sets.push_back("trainer.default_local_dir=" + out + "/sft");
    sft_sets.insert(sft_sets.end(), opt.sft_overrides.begin(), opt.sft_overrides.end());
    // The demo owns its folder: a rerun replaces its earlier SFT and GRPO runs (run_folder.h says so on stderr).
    SftSummary sft = run_sft(load_config(sft_yaml, sft_sets), /*quiet=*/false, /*overwrite=*/true);
    r.sft_accuracy = sft.val_accuracy;
    r.sft_seconds = sft.seconds;
    r.sft_report = out + "/sft/report.html";
    sft_model = sft.model_dir;
  } else {
    GRPO_CHECK(file_exists(sft_model + "/config.json"), "[demo] --sft-model ", sft_model,
               ": no config.json there; expected an earlier demo's SFT model folder (<out>/sft/model)");
    std::fprintf(stderr, "[demo] 2-3/4 GRPO starts from the SFT model %s (no init, no SFT)\n", sft_model.c_str());
  }

  std::fprintf(stderr, "[demo] 4/4 GRPO (%s) from the SFT model\n", grpo_yaml.c_str());
  std::vector<std::string> grpo_sets = {"data.train_files=" + (rl_path.empty() ? train_path : rl_path),
                                        "data.val_files=" + test_path};
  grpo_sets.push_back("actor_rollout_ref.model.path=" + sft_model);
  grpo_sets.push_back("trainer.default_local_dir=" + out + "/grpo");
  grpo_sets.insert(grpo_sets.end(), opt.grpo_overrides.begin(), opt.grpo_overrides.end());
  TrainOptions grpo_options;
  grpo_options.overwrite = true;
  const Config grpo_config = load_config(grpo_yaml, grpo_sets);
  GrpoTrainer trainer(grpo_config, grpo_options);
  TrainSummary g = trainer.run();
  r.grpo_accuracy = g.val_accuracy.empty() ? 0.0 : g.val_accuracy.back();
  // From an earlier SFT model: its accuracy is GRPO's validation before training (val_before_train).
  if (!opt.sft_model.empty() && grpo_config.trainer.val_before_train && !g.val_accuracy.empty())
    r.sft_accuracy = g.val_accuracy.front();
  r.grpo_seconds = g.seconds;
  r.grpo_report = out + "/grpo/report.html";
  return r;
}

}  // namespace grpo
