// The demo pipelines (see demo.h).
#include "demo/demo.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/files.h"
#include "data/arith.h"
#include "data/calc.h"
#include "data/byte_model.h"
#include "config/config.h"
#include "demo/example_configs.h"
#include "loop/sft.h"
#include "data/shapes.h"
#include "loop/session.h"
#include "loop/trainer.h"
#include "tools/tool_set.h"

namespace grpo {

namespace {

// Accuracy of the model in `model_dir` on `data_path`, evaluated as GRPO's validation with `config`.
double model_accuracy(const Config& config, const std::string& model_dir, const std::string& data_path) {
  Config c = config;
  c.actor_rollout_ref.model.path = model_dir;
  c.data.train_files = {data_path};  // the session needs prompts to train on; none are used
  c.data.val_files = {data_path};
  const std::unique_ptr<Session> s = Session::open(c, /*require_response=*/false, SessionRollout::ValidateOnly);
  return evaluate(*s->engine, s->val.examples, validation_options(*s), nullptr).accuracy;
}

}  // namespace

ChosenCheckpoint best_validated_checkpoint(const TrainSummary& g, const std::string& run_dir) {
  ChosenCheckpoint best;
  best.val_accuracy = -1;
  for (size_t i = 0; i < g.val_steps.size(); ++i) {
    const std::string dir = cat(run_dir, "/checkpoints/global_step_", g.val_steps[i]);
    if (g.val_steps[i] > 0 && g.val_accuracy[i] >= best.val_accuracy && file_exists(dir + "/config.json"))
      best = {g.val_steps[i], g.val_accuracy[i], dir};
  }
  GRPO_CHECK(best.step > 0, "[demo] ", run_dir, "/checkpoints: no checkpoint of a GRPO validation after training "
             "began (trainer.test_freq, trainer.total_training_steps)");
  return best;
}

DemoOptions demo_defaults(DemoOptions o) {
  GRPO_CHECK(o.task == "arith" || o.task == "shapes" || o.task == "tools",
             "[demo] --task: expected arith, shapes or tools, got \"", o.task, "\"");
  const bool arith = o.task == "arith", shapes = o.task == "shapes";
  if (o.train_examples <= 0) o.train_examples = arith ? 16000 : shapes ? 3000 : 12000;
  if (o.test_examples <= 0) o.test_examples = arith ? 500 : 300;
  if (o.difficulty.empty()) o.difficulty = arith ? "2" : shapes ? "easy" : "mult";
  // tools: 0.4 (still a minority) gives the tiny model enough calls to learn to copy the expression into the
  // call and the result into the answer; at 0.25 GRPO's samples almost never got a call right.
  // shapes: 1, every response lists the shapes; the direct answers of a mix let GRPO drop the listing,
  // and direct answers never learn to count the shapes of one colour (docs/performance.md).
  if (o.worked_fraction < 0) o.worked_fraction = arith ? 0.25 : shapes ? 1.0 : 0.4;
  // shapes: GRPO on 10,000 problems the SFT never saw (on the SFT's own, memorised ones it finds little
  // to learn); arith's and tools' GRPO use the SFT problems.
  if (o.rl_examples < 0) o.rl_examples = shapes ? 10000 : 0;
  GRPO_CHECK(shapes || o.rl_examples == 0, "[demo] --rl: the ", o.task, " demo's GRPO uses its training problems");
  // shapes: the SFT stops by its accuracy on 300 problems of its own, so that the test set measures the
  // result without having chosen the stopping point.
  if (o.val_examples < 0) o.val_examples = shapes ? 300 : 0;
  GRPO_CHECK(shapes || o.val_examples == 0, "[demo] --val: the ", o.task, " demo's SFT validates on its test set");
  // shapes: `tiny` (a 2-block tower of width 64, a 4-layer decoder of width 128): the `small` decoder's
  // training step is ~30x slower on the 2-core AVX2 machine, too slow for a ~15-minute demo. tools: `tiny`
  // too, as a conversation with a call is ~250 tokens (the byte-level prompt with its tools, the call, the
  // tool turn) and GRPO's rollouts are as long.
  if (o.preset.empty()) o.preset = arith ? "small" : "tiny";
  return o;
}

namespace {

// The demo's data files: the task's splits, and for the tools task verl's tool config.
struct DemoData {
  std::string train_path, test_path, rl_path, val_path, tool_config;
};

// Step 1: the task's problems written to `data`.
DemoData write_demo_data(const DemoOptions& opt, const std::string& data) {
  DemoData d;
  if (opt.task == "arith") {
    std::fprintf(stderr, "[demo] 1/4 arithmetic task: %lld train / %lld held-out problems -> %s\n",
                 static_cast<long long>(opt.train_examples), static_cast<long long>(opt.test_examples), data.c_str());
    const ArithSplit split = write_arith_dataset(data, opt.train_examples, opt.test_examples, opt.seed,
                                                 opt.difficulty, opt.worked_fraction);
    d.train_path = split.train_path;
    d.test_path = split.test_path;
  } else if (opt.task == "tools") {
    std::fprintf(stderr, "[demo] 1/4 calculator task: %lld train (%.0f%% calling the calculator) / %lld held-out problems -> %s\n",
                 static_cast<long long>(opt.train_examples), 100 * opt.worked_fraction,
                 static_cast<long long>(opt.test_examples), data.c_str());
    const CalcSplit split = write_calc_dataset(data, opt.train_examples, opt.test_examples, opt.seed, opt.difficulty,
                                               opt.worked_fraction, tools::ToolSet::builtin({"calculator"}).template_tools());
    d.train_path = split.train_path;
    d.test_path = split.test_path;
    // verl's tool config naming the built-in calculator: SFT's validation and GRPO call it.
    d.tool_config = data + "/tools.yaml";
    write_file_atomic(d.tool_config, "tools:\n  - class_name: grpo.tools.Calculator\n    config: {type: native}\n");
  } else {
    std::fprintf(stderr, "[demo] 1/4 shapes task: %lld train / %lld held-out / %lld GRPO / %lld SFT validation "
                 "pictures and questions -> %s\n", static_cast<long long>(opt.train_examples),
                 static_cast<long long>(opt.test_examples), static_cast<long long>(opt.rl_examples),
                 static_cast<long long>(opt.val_examples), data.c_str());
    const ShapesSplit split = write_shapes_dataset(data, opt.train_examples, opt.test_examples, opt.seed,
                                                   opt.difficulty, opt.worked_fraction, opt.rl_examples,
                                                   opt.val_examples);
    d.train_path = split.train_path;
    d.test_path = split.test_path;
    d.rl_path = split.rl_path;
    d.val_path = split.val_path;
  }
  return d;
}

// The demo's run: its options, folder, data and configs.
struct DemoRun {
  const DemoOptions& opt;
  std::string out, init, sft_yaml, grpo_yaml;
  DemoData data;
  std::vector<std::string> tool_sets;  // overrides naming the tool config (tools task)
  // With a validation split of its own (shapes), GRPO validates on it too, with a checkpoint at every
  // validation, and the demo measures the checkpoint it validates best on the test set; otherwise GRPO
  // validates on the test set and its last validation is the result.
  bool choose_on_val = false;
};

// GRPO's config starting from `model`.
Config demo_grpo_config(const DemoRun& d, const std::string& model) {
  std::vector<std::string> sets = {"data.train_files=" + (d.data.rl_path.empty() ? d.data.train_path : d.data.rl_path),
                                   "data.val_files=" + (d.choose_on_val ? d.data.val_path : d.data.test_path),
                                   "actor_rollout_ref.model.path=" + model,
                                   "trainer.default_local_dir=" + d.out + "/grpo"};
  sets.insert(sets.end(), d.tool_sets.begin(), d.tool_sets.end());
  sets.insert(sets.end(), d.opt.grpo_overrides.begin(), d.opt.grpo_overrides.end());
  Config c = load_config(d.grpo_yaml, sets);
  if (d.choose_on_val) {
    GRPO_CHECK(c.trainer.test_freq > 0, "[demo] trainer.test_freq = ", c.trainer.test_freq,
               ": the shapes demo chooses GRPO's model among its validations on val.jsonl; expected > 0");
    c.trainer.save_freq = c.trainer.test_freq;  // a checkpoint for every validation
    c.trainer.val_before_train = true;
  }
  return c;
}

// Steps 2 and 3: the random-initialised model and its supervised warm start (or --sft-model's); returns
// the SFT model's folder.
std::string demo_sft(const DemoRun& d, DemoResult& r) {
  const DemoOptions& opt = d.opt;
  std::string sft_model = opt.sft_model;
  if (!sft_model.empty()) {
    GRPO_CHECK(file_exists(sft_model + "/config.json"), "[demo] --sft-model ", sft_model,
               ": no config.json there; expected an earlier demo's SFT model folder (<out>/sft/model)");
    std::fprintf(stderr, "[demo] 2-3/4 GRPO starts from the SFT model %s (no init, no SFT)\n", sft_model.c_str());
    return sft_model;
  }
  const std::string arch = opt.task == "shapes" ? "qwen3-vl" : "qwen3";
  std::fprintf(stderr, "[demo] 2/4 random-initialised %s `%s` model with a byte-level tokenizer -> %s\n", arch.c_str(),
               opt.preset.c_str(), d.init.c_str());
  write_byte_model(d.init, arch, opt.preset, opt.seed);

  std::fprintf(stderr, "[demo] 3/4 supervised warm start (%s)\n", d.sft_yaml.c_str());
  std::vector<std::string> sft_sets = {
      "data.train_files=" + d.data.train_path,
      "data.val_files=" + (d.data.val_path.empty() ? d.data.test_path : d.data.val_path)};
  sft_sets.push_back("actor_rollout_ref.model.path=" + d.init);
  sft_sets.push_back("trainer.default_local_dir=" + d.out + "/sft");
  sft_sets.insert(sft_sets.end(), d.tool_sets.begin(), d.tool_sets.end());
  sft_sets.insert(sft_sets.end(), opt.sft_overrides.begin(), opt.sft_overrides.end());
  // The demo owns its folder: a rerun replaces its earlier SFT and GRPO runs (run_folder.h says so on stderr).
  SftSummary sft = run_sft(load_config(d.sft_yaml, sft_sets), /*quiet=*/false, /*overwrite=*/true);
  r.sft_accuracy = sft.val_accuracy;
  if (opt.task == "tools") r.sft_tool_call_share = sft.val_tool_call_share;
  r.sft_seconds = sft.seconds;
  r.sft_report = d.out + "/sft/report.html";
  return sft.model_dir;
}

// Step 4: GRPO from the SFT model, and its result (the best validated checkpoint, or the last validation).
void demo_grpo(const DemoRun& d, const std::string& sft_model, DemoResult& r) {
  const DemoOptions& opt = d.opt;
  const bool tool_task = opt.task == "tools";
  const std::string& test_path = d.data.test_path;
  std::fprintf(stderr, "[demo] 4/4 GRPO (%s) from the SFT model\n", d.grpo_yaml.c_str());
  TrainOptions grpo_options;
  grpo_options.overwrite = true;
  const Config grpo_config = demo_grpo_config(d, sft_model);
  GrpoTrainer trainer(grpo_config, grpo_options);
  const TrainSummary g = trainer.run();
  if (d.choose_on_val) {
    const ChosenCheckpoint best = best_validated_checkpoint(g, d.out + "/grpo");
    r.grpo_step = best.step;
    std::fprintf(stderr,
                 "[demo] GRPO's best validation on %s: step %lld of %lld (accuracy %.3f); the SFT model and "
                 "that checkpoint on %s:\n",
                 d.data.val_path.c_str(), static_cast<long long>(best.step), static_cast<long long>(g.steps),
                 best.val_accuracy, test_path.c_str());
    r.sft_accuracy = model_accuracy(grpo_config, sft_model, test_path);
    r.grpo_accuracy = model_accuracy(grpo_config, best.dir, test_path);
    std::fprintf(stderr, "[demo] %s: %.3f  %s: %.3f\n", sft_model.c_str(), r.sft_accuracy, best.dir.c_str(),
                 r.grpo_accuracy);
  } else {
    r.grpo_accuracy = g.val_accuracy.empty() ? 0.0 : g.val_accuracy.back();
    r.grpo_step = g.steps;
    // From an earlier SFT model: its accuracy on the test set is GRPO's validation before training.
    if (!opt.sft_model.empty() && grpo_config.trainer.val_before_train && !g.val_accuracy.empty()) {
      r.sft_accuracy = g.val_accuracy.front();
      if (tool_task && !g.val_tool_call_share.empty()) r.sft_tool_call_share = g.val_tool_call_share.front();
    }
    if (tool_task && !g.val_tool_call_share.empty()) r.grpo_tool_call_share = g.val_tool_call_share.back();
  }
  r.grpo_seconds = g.seconds;
  r.grpo_report = d.out + "/grpo/report.html";
}

}  // namespace

DemoResult run_demo(const DemoOptions& options) {
  const DemoOptions opt = demo_defaults(options);
  const bool arith = opt.task == "arith", shapes = opt.task == "shapes";
  make_dirs(opt.out);
  DemoRun d{opt,
            opt.out,
            opt.out + "/init",
            opt.out + "/" + opt.task + "-sft.yaml",
            opt.out + "/" + opt.task + "-grpo.yaml",
            write_demo_data(opt, opt.out + "/data"),
            {}};
  write_file_atomic(d.sft_yaml, arith ? kArithSftYaml : shapes ? kShapesSftYaml : kToolsSftYaml);
  write_file_atomic(d.grpo_yaml, arith ? kArithGrpoYaml : shapes ? kShapesGrpoYaml : kToolsGrpoYaml);
  if (opt.task == "tools")
    d.tool_sets.push_back("actor_rollout_ref.rollout.multi_turn.tool_config_path=" + d.data.tool_config);
  d.choose_on_val = !d.data.val_path.empty();
  demo_grpo_config(d, d.init);  // GRPO's settings checked before the SFT, the longest wait before an error
  DemoResult r;
  const std::string sft_model = demo_sft(d, r);
  demo_grpo(d, sft_model, r);
  return r;
}

}  // namespace grpo
