// `grpo generate`: samples completions for a JSONL file of prompts with the rollout engine (the work is in
// src/generate: generate_file.h, prompt_line.h; this file holds the options and the tools). Input lines
// {"prompt": "..."}, {"messages": [...]} or verl's dataset rows {"prompt": [...]} (chat messages; with
// --chat: the model's chat template plus the generation prompt) or {"input_ids": [...]}, each optionally
// with its own "n", "max_new_tokens", "temperature", "top_p", "top_k", "min_p", "seed" and "stop" (a string
// or an array of strings) that override the command line for that line; output lines echo the input (other
// fields included) plus "completions": [{text, token_ids, logprobs, finish_reason}]. An invalid option
// fails before the model is loaded, naming the option. A bad line (invalid JSON or field, a prompt that
// does not fit the model's context or the KV cache) is reported (file:line, field) and skipped; the rest of
// the file is still generated and written, and the exit status is non-zero. Progress on stderr. A model
// folder without tokenizer.json works when every line is {"input_ids"}: ids in, ids out (texts empty; text
// prompts, --chat and stop strings are refused, naming the missing file). Stop tokens then come from
// config.json's eos_token_id. Vision-language models (a folder with preprocessor_config.json): a line's
// "images" lists picture paths (relative to the prompts file), one per "<image>" in "prompt" / string
// contents or image item in "messages", in order, as in datasets; each <|image_pad|> becomes its picture's
// tokens. With "input_ids", the ids hold one <|image_pad|> per picture or the pads already expanded (`grpo
// tokenize`). A line's pictures are decoded when the file is read and held until the run ends.
// Tools (--tools for the built-in calculator, or --tool-config with verl's tool config; needs --chat):
// multi-turn generation as in training (docs/tools.md): the tools' schemas go into each prompt's chat
// template, a turn with a <tool_call> is answered by the tools and the model goes on; a completion then also
// has "response_mask" (0 for the tool turns' tokens), "num_turns", "tool_calls" and "tool_failures".
#include <memory>

#include "cli/command.h"
#include "data/prompting.h"
#include "generate/generate_file.h"
#include "loop/tool_turns.h"

namespace grpo::cli {
namespace {

void setup_generate(CLI::App& app) {
  auto a = std::make_shared<generate::GenerateOptions>();
  CLI::App* c = app.add_subcommand("generate", "Sample completions for JSONL prompts with the rollout engine");
  c->add_option("--adapter", a->adapter, "PEFT LoRA adapter folder to apply (unmerged)");
  c->add_option("--model", a->model,
                "Hugging Face model folder (without tokenizer.json: \"input_ids\" prompts only, texts empty)")
      ->required();
  c->add_option("--prompts", a->prompts,
                "JSONL: {\"prompt\"}, {\"messages\"} or {\"input_ids\"} per line; optional \"n\", \"max_new_tokens\", "
                "\"temperature\", \"top_p\", \"top_k\", \"min_p\", \"seed\", \"stop\" override the options for that "
                "line; \"images\": picture paths (relative to this file) for the line's \"<image>\" placeholders or "
                "image items; a bad line is reported and skipped")
      ->required();
  c->add_option("--out", a->out, "JSONL output: each input line plus \"completions\" (- for stdout)")->required();
  c->add_option("--n", a->n, "Samples per prompt (>= 1)");
  c->add_option("--max-new-tokens", a->max_new_tokens,
                "Tokens to generate at most (>= 1; prompt + this must fit the model's context)");
  c->add_option("--temperature", a->temperature, "Sampling temperature (finite, >= 0; 0: greedy)");
  c->add_option("--top-p", a->top_p, "Nucleus sampling mass, in (0, 1]");
  c->add_option("--top-k", a->top_k, "Keep the k most likely tokens (>= 0; 0: off)");
  c->add_option("--min-p", a->min_p, "Drop tokens below min-p x the most likely one, in [0, 1]");
  c->add_option("--seed", a->seed, "Seed (>= 0)");
  c->add_option("--kv-dtype", a->kv_dtype, "KV cache dtype: f32, bf16 or int8");
  c->add_option("--kv-cache-memory", a->kv_bytes,
                "KV cache budget in bytes (default: a fraction of free memory); never more than the prompts can use");
  c->add_option("--kv-cache-fraction", a->kv_fraction,
                "KV cache budget as a fraction of free memory, in (0, 1]; never more than the prompts can use");
  c->add_option("--dtype", a->dtype, "Weights read as f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_flag("--chat", a->chat, "Apply the model's chat template with the generation prompt (enable_thinking "
                                 "false, as training renders prompts)");
  c->add_option("--stop", a->stop, "Stop string (repeatable, not empty); excluded from the text");
  c->add_option("--threads", a->threads, "Threads (default 0: all cores)");
  c->add_flag("--tools", a->tools, "Multi-turn with the built-in calculator tool (needs --chat; docs/tools.md)");
  c->add_option("--tool-config", a->tool_config,
                "Multi-turn with the tools of verl's tool config YAML (needs --chat; docs/tools.md)");
  c->add_option("--max-assistant-turns", a->max_assistant_turns, "With tools: assistant turns at most (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  c->callback([a] {
    std::unique_ptr<RunTools> tools;  // lives until the file is generated
    generate::run_generate(*a, [&](const Tokenizer& tok) {
      MultiTurnConfig mt;
      mt.enable = true;
      mt.tool_config_path = a->tool_config;
      mt.max_assistant_turns = a->max_assistant_turns;
      tools = std::make_unique<RunTools>(mt, tok, response_end_id(tok, true));
      return generate::GenerateTools{&tools->schemas, tools->options};
    });
  });
}

GRPO_REGISTER_COMMAND(setup_generate);

}  // namespace
}  // namespace grpo::cli
