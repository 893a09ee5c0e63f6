// `grpo score`: per-token log-probs and entropies of token sequences under a model (teacher forcing).
// Input lines {"input_ids": [...]}; output lines {"token_logprobs": [...], "entropy": [...]} where
// token_logprobs[t] = log p(ids[t+1] | ids[..t]) and entropy[t] is the entropy of that same distribution.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/files.h"
#include "core/threads.h"
#include "model/decoder.h"

namespace grpo::cli {
namespace {

struct ScoreArgs {
  std::string model, adapter, input, out, dtype = "f32";
  double temperature = 1.0;
  int64_t max_batch_tokens = 8192;
  int threads = 0;
};

void run_score(const ScoreArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  GRPO_CHECK(a.temperature > 0, "[score] --temperature must be > 0, got ", a.temperature);
  auto weights = ModelWeights::load(a.model);
  DecoderOptions opt;
  opt.mode = parse_compute_mode(a.dtype);
  opt.logit_scale = static_cast<float>(1.0 / a.temperature);
  Decoder dec(*weights, opt);
  std::unique_ptr<LoraAdapters> lora;  // applied in the forward pass, not merged
  if (!a.adapter.empty()) lora = LoraAdapters::load(weights->config(), a.adapter);
  dec.set_lora(lora.get());
  const int64_t V = weights->config().vocab_size, P = weights->config().max_position_embeddings;

  // Read every line first (errors name the line), then score in packed batches under a token budget.
  std::vector<std::vector<int32_t>> seqs;
  for_each_line(a.input, [&](int64_t line, const std::string& text) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      fail("[score] ", a.input, ":", line, ": not valid JSON (", e.what(), ")");
    }
    GRPO_CHECK(j.is_object() && j.contains("input_ids") && j["input_ids"].is_array(), "[score] ", a.input, ":", line,
               ": expected an object with an \"input_ids\" array");
    std::vector<int32_t> ids;
    for (const auto& v : j["input_ids"]) {
      GRPO_CHECK(v.is_number_integer(), "[score] ", a.input, ":", line, ": input_ids must be integers");
      int64_t id = v.get<int64_t>();
      GRPO_CHECK(id >= 0 && id < V, "[score] ", a.input, ":", line, ": token id ", id, " out of range [0, ", V, ")");
      ids.push_back(static_cast<int32_t>(id));
    }
    GRPO_CHECK(!ids.empty(), "[score] ", a.input, ":", line, ": input_ids is empty");
    GRPO_CHECK(static_cast<int64_t>(ids.size()) <= P, "[score] ", a.input, ":", line, ": ", ids.size(),
               " tokens exceed max_position_embeddings ", P);
    seqs.push_back(std::move(ids));
  });

  std::string out;
  size_t i = 0;
  std::vector<float> lp, ent;
  while (i < seqs.size()) {
    PackedBatch b;
    b.clear();
    size_t first = i;
    while (i < seqs.size() && (b.T() == 0 || b.T() + static_cast<int64_t>(seqs[i].size()) <= a.max_batch_tokens))
      b.add_sequence(seqs[i++]);
    lp.resize(b.T());
    ent.resize(b.T());
    dec.forward(b, lp.data(), ent.data());
    for (size_t s = first; s < i; ++s) {
      int64_t begin = b.cu_seqlens[s - first], n = b.seq_len(s - first);
      nlohmann::json j;
      j["token_logprobs"] = std::vector<float>(lp.begin() + begin, lp.begin() + begin + n - 1);
      j["entropy"] = std::vector<float>(ent.begin() + begin, ent.begin() + begin + n - 1);
      out += j.dump() + "\n";
    }
  }
  if (a.out == "-")
    std::fwrite(out.data(), 1, out.size(), stdout);
  else
    write_file_atomic(a.out, out);
}

void setup_score(CLI::App& app) {
  auto a = std::make_shared<ScoreArgs>();
  CLI::App* c = app.add_subcommand("score", "Per-token log-probs and entropies of {\"input_ids\": [...]} lines");
  c->add_option("--model", a->model, "Hugging Face model folder")->required();
  c->add_option("--adapter", a->adapter, "PEFT LoRA adapter folder to apply (unmerged)");
  c->add_option("--input", a->input, "JSONL input, one {\"input_ids\": [...]} per line (- for stdin)")->required();
  c->add_option("--out", a->out, "JSONL output (- for stdout)")->required();
  c->add_option("--dtype", a->dtype, "Compute mode: f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_option("--temperature", a->temperature, "Score under softmax(logits / temperature)");
  c->add_option("--max-batch-tokens", a->max_batch_tokens, "Tokens per packed forward pass");
  c->add_option("--threads", a->threads, "Threads (default: all cores)");
  c->callback([a] { run_score(*a); });
}

GRPO_REGISTER_COMMAND(setup_score);

}  // namespace
}  // namespace grpo::cli
