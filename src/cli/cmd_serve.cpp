// `grpo serve`: the model behind an OpenAI-compatible HTTP API (src/serve; docs/serving.md).
#include "cli/command.h"
#include "serve/run_serve.h"

namespace grpo::cli {
namespace {

void setup_serve(CLI::App& app) {
  auto o = std::make_shared<serve::ServeOptions>();
  CLI::App* c = app.add_subcommand("serve", "Serve a model over OpenAI's HTTP API (chat, completions, a chat page)");
  c->add_option("--model", o->model, "Hugging Face model folder (text or Qwen3-VL)")->required();
  c->add_option("--adapter", o->adapter, "PEFT LoRA adapter folder to apply (unmerged)");
  c->add_option("--host", o->server.host, "Address to listen on (default loopback; elsewhere give an API key)");
  c->add_option("--port", o->server.port, "Port (0: any free port, printed at start)");
  c->add_option("--api-key", o->server.api_key,
                "Require \"Authorization: Bearer KEY\" on every request (default: the GRPO_API_KEY variable)");
  c->add_option("--served-model-name", o->server.model_name, "The model's name in the API (default: the folder's)");
  c->add_option("--max-queue", o->server.max_queue, "Requests queued or running at most; beyond: 429 (>= 1)");
  c->add_option("--max-body-bytes", o->server.max_body_bytes, "Request bodies at most this size; beyond: 413");
  c->add_option("--max-n", o->server.max_n, "Choices per request (n) at most");
  c->add_option("--drain-seconds", o->server.drain_seconds,
                "On SIGTERM / SIGINT: seconds the requests in flight get to finish before they are cancelled");
  c->add_option("--max-seqs", o->max_seqs, "Sequences per engine step (continuous batching)");
  c->add_option("--kv-dtype", o->kv_dtype, "KV cache dtype: f32, bf16 or int8");
  c->add_option("--kv-cache-memory", o->kv_bytes, "KV cache budget in bytes (default: a fraction of free memory)");
  c->add_option("--kv-cache-fraction", o->kv_fraction, "KV cache budget as a fraction of free memory, in (0, 1]");
  c->add_option("--dtype", o->dtype, "Weights read as f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_option("--threads", o->threads, "Threads (default 0: all cores)");
  c->callback([o] { serve::run_serve(*o); });
}

GRPO_REGISTER_COMMAND(setup_serve);

}  // namespace
}  // namespace grpo::cli
