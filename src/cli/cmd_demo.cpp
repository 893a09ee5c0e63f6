// `grpo demo [--task arith|shapes|tools]`: the whole pipeline on a built-in task (data, init, SFT, GRPO) with
// held-out accuracy after SFT and after GRPO; the last stdout line is a JSON summary.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/threads.h"
#include "demo/demo.h"

namespace grpo::cli {
namespace {

void setup_demo(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  auto threads = std::make_shared<int>(0);
  CLI::App* c = app.add_subcommand("demo", "Demo: SFT a small model from scratch on a built-in task, then GRPO");
  c->add_option("--task", o->task, "arith (two-digit arithmetic, text model), shapes (pictures, Qwen3-VL model) or tools "
                                  "(products a calculator tool pays on, multi-turn GRPO with the built-in calculator)");
  c->add_option("--out", o->out, "Output folder (data, models, runs, reports)");
  c->add_option("--train", o->train_examples, "Training problems (default: arith 16000, shapes 3000, tools 12000)");
  c->add_option("--test", o->test_examples, "Held-out problems (default: arith 500, shapes 300, tools 300)");
  c->add_option("--rl", o->rl_examples, "shapes: GRPO's own problems, in neither train nor test (default 10000; 0: "
                                        "GRPO on the training problems)");
  c->add_option("--val", o->val_examples, "shapes: validation problems in no other split, which decide when the SFT "
                                         "stops and which GRPO checkpoint is kept (default 300; 0: both runs validate "
                                         "on the test set, and GRPO's last step is kept)");
  c->add_option("--seed", o->seed, "Seed");
  c->add_option("--difficulty", o->difficulty,
                "Levels: arith easy, medium, hard, mixed or 1..5 (default 2); shapes easy, medium, hard, mixed or "
                "1..3 (default easy); tools mult, mixed, hard or 1..5 (default mult)");
  c->add_option("--columns-fraction,--worked-fraction,--tool-fraction", o->worked_fraction,
                "Fraction of SFT responses worked out (arith: digit by digit; shapes: listing the shapes; tools: "
                "calling the calculator); default arith 0.25, shapes 1, tools 0.4");
  c->add_option("--preset", o->preset, "Model preset (default: arith small, shapes and tools tiny)");
  c->add_option("--sft-set", o->sft_overrides, "Override an SFT config key (repeatable)");
  c->add_option("--grpo-set", o->grpo_overrides, "Override a GRPO config key (repeatable)");
  c->add_option("--sft-model", o->sft_model, "Start GRPO from this earlier demo's SFT model (<out>/sft/model of a "
                                            "run with the same task, seed and sizes): no init, no SFT");
  c->add_option("--threads", *threads, "Threads (default: all cores)");
  c->callback([o, threads] {
    if (*threads > 0) set_num_threads(*threads);
    DemoResult r = run_demo(*o);
    std::printf("held-out accuracy after SFT:  %5.1f%%  (%.0f s)\n", 100 * r.sft_accuracy, r.sft_seconds);
    std::printf("held-out accuracy after GRPO: %5.1f%%  (%.0f s; the model of step %lld)\n", 100 * r.grpo_accuracy,
                r.grpo_seconds, static_cast<long long>(r.grpo_step));
    if (r.sft_tool_call_share >= 0)
      std::printf("tool-call share after SFT: %.1f%%  after GRPO: %.1f%%\n", 100 * r.sft_tool_call_share,
                  100 * r.grpo_tool_call_share);
    std::printf("reports: %s  %s\n", r.sft_report.c_str(), r.grpo_report.c_str());
    nlohmann::json j = {{"sft_accuracy", r.sft_accuracy}, {"grpo_accuracy", r.grpo_accuracy},
                        {"sft_seconds", r.sft_seconds},   {"grpo_seconds", r.grpo_seconds},
                        {"sft_report", r.sft_report},     {"grpo_report", r.grpo_report},
                        {"grpo_step", r.grpo_step}};
    if (r.sft_tool_call_share >= 0) {
      j["sft_tool_call_share"] = r.sft_tool_call_share;
      j["grpo_tool_call_share"] = r.grpo_tool_call_share;
    }
    std::printf("%s\n", j.dump().c_str());
  });
}

GRPO_REGISTER_COMMAND(setup_demo);

}  // namespace
}  // namespace grpo::cli
