// The demos (`grpo demo`, README quick-start command 1), each from scratch to a GRPO-trained model with
// held-out accuracy after each phase:
//  - arith (default): the arithmetic task (two-digit + and -, a quarter of the worked responses column by
//    column), a `small` byte-level Qwen3 model, SFT (examples/arith-sft.yaml) then GRPO
//    (examples/arith-grpo.yaml).
//  - shapes: the visual task (pictures of coloured shapes, questions answered by a number or a colour;
//    every SFT response lists the shapes before answering), a Qwen3-VL-shaped model (vision tower,
//    DeepStack, M-RoPE) with the byte-level tokenizer, SFT (examples/shapes-sft.yaml) then GRPO
//    (examples/shapes-grpo.yaml) on further problems the SFT never saw. The SFT stops early when the
//    model already reads the pictures well (sft.stop_at_val_accuracy, checked on a validation split of its
//    own), so that GRPO has room to improve whatever the data's draw and the CPU's summation order. GRPO
//    validates on that split too, with a checkpoint at every validation, and the result is the checkpoint
//    that validated best, measured on the test set (as the SFT model is).
//  - tools: the calculator task (data/calc.h: four- and five-digit products; 40% of the SFT responses
//    call the built-in calculator, the others answer directly), a `tiny`
//    byte-level Qwen3 model, SFT (examples/tools-sft.yaml) then multi-turn GRPO with the calculator
//    (examples/tools-grpo.yaml; the tool config the demo writes, <out>/data/tools.yaml); validation runs
//    with the calculator too, and the share of held-out responses that call it is reported.
// A rerun into the same folder replaces the earlier demo runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loop/trainer.h"

namespace grpo {

struct DemoOptions {
  std::string task = "arith";  // arith | shapes | tools
  std::string out = "runs/demo";
  // 0 / "" / negative: the task's default (demo_defaults).
  int64_t train_examples = 0, test_examples = 0;
  int64_t rl_examples = -1;    // shapes: GRPO's own prompts (data/shapes.h), 0: GRPO on the SFT problems
  // shapes: the SFT's validation problems (val.jsonl), in no other split; 0: the SFT validates on the test set
  int64_t val_examples = -1;
  uint64_t seed = 0;
  std::string difficulty;  // arith levels (data/arith.h), shapes levels (data/shapes.h), tools (data/calc.h)
  // SFT responses worked out: arith column by column, shapes listing the shapes, tools calling the calculator
  double worked_fraction = -1;
  std::string preset;          // model preset (model/presets.h)
  std::vector<std::string> sft_overrides, grpo_overrides;  // extra --set values
  // An earlier demo's SFT model (<out>/sft/model, same task, seed and sizes): GRPO starts from it, without
  // the init and the SFT (to compare GRPO settings from one SFT model; accuracy after SFT is then GRPO's
  // validation before training).
  std::string sft_model;
};

// The task's defaults filled into the fields left at 0 / "" / negative; an unknown task is an error.
DemoOptions demo_defaults(DemoOptions o);

struct DemoResult {
  // Both on the test set. sft_accuracy is the SFT's last validation, or, when the SFT validated on a split
  // of its own or did not run (sft_model), the SFT model validated as GRPO validates.
  double sft_accuracy = 0, grpo_accuracy = 0;
  // The GRPO step whose model grpo_accuracy measures: with a validation split of its own (shapes), the
  // checkpoint that validated best on it; otherwise the last step.
  int64_t grpo_step = 0;
  double sft_seconds = 0, grpo_seconds = 0;
  // tools: the share of held-out (greedy) responses that call the calculator; -1 for the other tasks.
  double sft_tool_call_share = -1, grpo_tool_call_share = -1;
  std::string sft_report, grpo_report;
};

DemoResult run_demo(const DemoOptions& opt);

// GRPO's model chosen on a validation split: among the validations after training began (TrainSummary's
// val_steps > 0), the one with the highest accuracy whose checkpoint <run_dir>/checkpoints/global_step_N
// exists, the later one of equals (it trained longer). An error names run_dir when there is none.
struct ChosenCheckpoint {
  int64_t step = 0;
  double val_accuracy = 0;
  std::string dir;
};
ChosenCheckpoint best_validated_checkpoint(const TrainSummary& g, const std::string& run_dir);

}  // namespace grpo
