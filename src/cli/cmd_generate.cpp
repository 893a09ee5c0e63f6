// `grpo generate`: samples completions for a JSONL file of prompts with the rollout engine. Input lines
// {"prompt": "..."}, {"messages": [...]} (with --chat: the model's chat template plus the generation
// prompt) or {"input_ids": [...]}; output lines echo the input plus
// "completions": [{text, token_ids, logprobs, finish_reason}]. A bad line is reported (file:line, field)
// and skipped; the rest of the file is still generated. Progress on stderr.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/files.h"
#include "core/threads.h"
#include "rollout/decoder_model.h"
#include "rollout/engine.h"
#include "rollout/tokenizer_text.h"
#include "tokenizer/tokenizer.h"

namespace grpo::cli {
namespace {

struct GenerateArgs {
  std::string model, prompts, out, kv_dtype = "bf16", dtype = "bf16";
  int n = 1, max_new_tokens = 256, top_k = 0, threads = 0;
  double temperature = 1.0, top_p = 1.0, min_p = 0.0, kv_fraction = 0.3;
  int64_t kv_bytes = 0, seed = 0;
  bool chat = false;
  std::vector<std::string> stop;
};

ops::KvDType kv_dtype_of(const std::string& s) {
  if (s == "f32") return ops::KvDType::F32;
  if (s == "bf16") return ops::KvDType::BF16;
  if (s == "int8") return ops::KvDType::I8;
  fail("[generate] --kv-dtype: expected f32, bf16 or int8, got \"", s, "\"");
}

void run_generate(const GenerateArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  rollout::SamplingParams sp;
  sp.temperature = static_cast<float>(a.temperature);
  sp.top_p = static_cast<float>(a.top_p);
  sp.top_k = a.top_k;
  sp.min_p = static_cast<float>(a.min_p);
  rollout::validate_sampling(sp, "command line");
  GRPO_CHECK(a.n >= 1, "[generate] --n must be >= 1, got ", a.n);
  GRPO_CHECK(a.max_new_tokens >= 1, "[generate] --max-new-tokens must be >= 1, got ", a.max_new_tokens);
  auto weights = ModelWeights::load(a.model);
  Tokenizer tok = Tokenizer::load(a.model);
  const int64_t V = weights->config().vocab_size, P = weights->config().max_position_embeddings;

  // Parse every line; bad lines are reported and skipped.
  std::vector<nlohmann::ordered_json> inputs;
  std::vector<rollout::Request> reqs;
  int64_t bad = 0;
  for_each_line(a.prompts, [&](int64_t line, const std::string& text) {
    if (text.find_first_not_of(" \t") == std::string::npos) return;
    try {
      nlohmann::ordered_json j;
      try {
        j = nlohmann::ordered_json::parse(text);
      } catch (const std::exception& e) {
        fail("not valid JSON (", e.what(), ")");
      }
      GRPO_CHECK(j.is_object(), "expected a JSON object");
      rollout::Request r;
      if (j.contains("input_ids")) {
        GRPO_CHECK(j["input_ids"].is_array(), "field \"input_ids\" must be an array of token ids");
        for (const auto& v : j["input_ids"]) {
          GRPO_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < V,
                     "field \"input_ids\": ids must be integers in [0, ", V, ")");
          r.prompt.push_back(v.get<int32_t>());
        }
      } else if (j.contains("messages")) {
        GRPO_CHECK(a.chat, "field \"messages\" needs --chat (the model's chat template)");
        GRPO_CHECK(j["messages"].is_array(), "field \"messages\" must be an array");
        r.prompt = tok.encode(tok.apply_chat_template(j["messages"], j.value("tools", nlohmann::ordered_json()), true,
                                                      nlohmann::ordered_json::object()));
      } else if (j.contains("prompt")) {
        GRPO_CHECK(j["prompt"].is_string(), "field \"prompt\" must be a string");
        const std::string p = j["prompt"].get<std::string>();
        if (a.chat) {
          nlohmann::ordered_json msgs = nlohmann::ordered_json::array({{{"role", "user"}, {"content", p}}});
          r.prompt = tok.encode(tok.apply_chat_template(msgs, nullptr, true, nlohmann::ordered_json::object()));
        } else {
          r.prompt = tok.encode(p);
        }
      } else {
        fail("expected a field \"prompt\", \"messages\" or \"input_ids\"");
      }
      GRPO_CHECK(!r.prompt.empty(), "the prompt is empty");
      GRPO_CHECK(static_cast<int64_t>(r.prompt.size()) + a.max_new_tokens <= P, "the prompt's ", r.prompt.size(),
                 " tokens + --max-new-tokens ", a.max_new_tokens, " exceed the model's context of ", P, " tokens");
      r.n = a.n;
      r.sampling = sp;
      r.stop_token_ids = tok.stop_ids();
      r.stop_strings = a.stop;
      r.max_new_tokens = a.max_new_tokens;
      r.seed = static_cast<uint64_t>(a.seed);
      r.id = static_cast<uint64_t>(line);
      reqs.push_back(std::move(r));
      inputs.push_back(std::move(j));
    } catch (const Error& e) {
      ++bad;
      std::fprintf(stderr, "error: %s:%lld: %s (line skipped)\n", a.prompts.c_str(), static_cast<long long>(line),
                   e.what());
    }
  });

  rollout::EngineConfig ec;
  ec.kv_dtype = kv_dtype_of(a.kv_dtype);
  ec.kv_memory_bytes = a.kv_bytes;
  ec.kv_memory_fraction = a.kv_fraction;
  rollout::DecoderRolloutModel model(*weights, parse_compute_mode(a.dtype), ec.block_size);
  rollout::Engine engine(model, ec, rollout::tokenizer_decode_fn(tok));
  auto last = std::chrono::steady_clock::now();
  auto progress = [&](const rollout::Progress& p) {
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last).count() > 1.0 || p.requests_done == p.requests_total) {
      std::fprintf(stderr, "\r[generate] %lld/%lld requests, %lld tokens, %.0f tokens/s   ",
                   static_cast<long long>(p.requests_done), static_cast<long long>(p.requests_total),
                   static_cast<long long>(p.tokens_generated), p.tokens_per_second);
      last = now;
    }
    return true;
  };
  std::vector<rollout::RequestResult> res = engine.generate(reqs, progress);
  std::fprintf(stderr, "\n");
  std::string out;
  for (size_t i = 0; i < res.size(); ++i) {
    nlohmann::ordered_json j = inputs[i];
    nlohmann::ordered_json comps = nlohmann::ordered_json::array();
    for (const rollout::SampleResult& s : res[i].samples)
      comps.push_back({{"text", s.text},
                       {"token_ids", s.tokens},
                       {"logprobs", s.logprobs},
                       {"finish_reason", std::string(rollout::finish_reason_name(s.finish_reason))}});
    j["completions"] = comps;
    out += j.dump() + "\n";
  }
  if (a.out == "-")
    std::fwrite(out.data(), 1, out.size(), stdout);
  else
    write_file_atomic(a.out, out);
  GRPO_CHECK(bad == 0, "[generate] ", bad, " line(s) of ", a.prompts, " were skipped (see above)");
}

void setup(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = app.add_subcommand("generate", "Sample completions for JSONL prompts with the rollout engine");
  c->add_option("--model", a->model, "Hugging Face model folder (with tokenizer.json)")->required();
  c->add_option("--prompts", a->prompts, "JSONL: {\"prompt\"}, {\"messages\"} or {\"input_ids\"} per line")->required();
  c->add_option("--out", a->out, "JSONL output (- for stdout)")->required();
  c->add_option("--n", a->n, "Samples per prompt");
  c->add_option("--max-new-tokens", a->max_new_tokens, "Tokens to generate at most");
  c->add_option("--temperature", a->temperature, "Sampling temperature (0: greedy)");
  c->add_option("--top-p", a->top_p, "Nucleus sampling mass");
  c->add_option("--top-k", a->top_k, "Keep the k most likely tokens (0: off)");
  c->add_option("--min-p", a->min_p, "Drop tokens below min-p x the most likely one");
  c->add_option("--seed", a->seed, "Seed");
  c->add_option("--kv-dtype", a->kv_dtype, "KV cache dtype: f32, bf16 or int8");
  c->add_option("--kv-cache-memory", a->kv_bytes, "KV cache budget in bytes (default: a fraction of free memory)");
  c->add_option("--kv-cache-fraction", a->kv_fraction, "KV cache budget as a fraction of free memory");
  c->add_option("--dtype", a->dtype, "Weights read as f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_flag("--chat", a->chat, "Apply the model's chat template with the generation prompt");
  c->add_option("--stop", a->stop, "Stop string (repeatable); excluded from the text");
  c->add_option("--threads", a->threads, "Threads (default: all cores)");
  c->callback([a] { run_generate(*a); });
}

GRPO_REGISTER_COMMAND(setup);

}  // namespace
}  // namespace grpo::cli
