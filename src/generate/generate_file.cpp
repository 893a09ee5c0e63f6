// `grpo generate` over a prompts file (see generate_file.h).
#include "generate/generate_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/threads.h"
#include "generate/loaded_model.h"
#include "generate/prompt_line.h"
#include "rollout/engine.h"
#include "rollout/tokenizer_text.h"

namespace grpo::generate {

namespace {

// Every line's request and input; a bad line is reported on stderr and counted in `bad`.
struct Lines {
  std::vector<Json> inputs;
  std::vector<rollout::Request> requests;  // id: the line number
  int64_t bad = 0;
};

// Skips (and reports) the lines whose prompt + max_new_tokens need more KV blocks than the cache has: only
// possible when --kv-cache-memory or --kv-cache-fraction gives less than the work can use.
void drop_lines_over_the_cache(Lines& lines, const rollout::Engine& engine, const std::string& path) {
  const int64_t blocks = engine.kv_cache().num_blocks(), bs = engine.kv_cache().block_size();
  size_t kept = 0;
  for (size_t i = 0; i < lines.requests.size(); ++i) {
    const rollout::Request& r = lines.requests[i];
    const int64_t need =
        rollout::kv_blocks_for(1, static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens, bs, "[generate] KV sizing");
    if (need > blocks) {
      ++lines.bad;
      std::fprintf(
          stderr,
          "error: %s:%llu: the prompt's %zu tokens + max_new_tokens %d need %lld KV blocks, the cache has %lld "
          "(raise --kv-cache-memory or lower max_new_tokens) (line skipped)\n",
          path.c_str(), static_cast<unsigned long long>(r.id), r.prompt.size(), r.max_new_tokens,
          static_cast<long long>(need), static_cast<long long>(blocks));
      continue;
    }
    if (kept != i) {
      lines.requests[kept] = std::move(lines.requests[i]);
      lines.inputs[kept] = std::move(lines.inputs[i]);
    }
    ++kept;
  }
  lines.requests.resize(kept);
  lines.inputs.resize(kept);
}

Lines read_lines(const std::string& path, const LineContext& c) {
  Lines out;
  for_each_line(path, [&](int64_t line, const std::string& text) {
    if (text.find_first_not_of(" \t") == std::string::npos) return;
    try {
      Json j = parse_line(text);
      out.requests.push_back(request_of(j, c, line));
      out.inputs.push_back(std::move(j));
    } catch (const std::exception& e) {
      ++out.bad;
      std::fprintf(stderr, "error: %s:%lld: %s (line skipped)\n", path.c_str(), static_cast<long long>(line), e.what());
    }
  });
  return out;
}

rollout::ProgressFn progress_printer() {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [last](const rollout::Progress& p) {
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - *last).count() > 1.0 || p.requests_done == p.requests_total) {
      std::fprintf(stderr, "\r[generate] %lld/%lld requests, %lld tokens, %.0f tokens/s   ",
                   static_cast<long long>(p.requests_done), static_cast<long long>(p.requests_total),
                   static_cast<long long>(p.tokens_generated), p.tokens_per_second);
      *last = now;
    }
    return true;
  };
}

std::string output_lines(const Lines& lines, const std::vector<rollout::RequestResult>& res, bool with_tools) {
  std::string out;
  for (size_t i = 0; i < res.size(); ++i) {
    Json j = lines.inputs[i];
    Json comps = Json::array();
    for (const rollout::SampleResult& s : res[i].samples) {
      Json c = {{"text", s.text},
                {"token_ids", s.tokens},
                {"logprobs", s.logprobs},
                {"finish_reason", std::string(rollout::finish_reason_name(s.finish_reason))}};
      if (with_tools) {
        c["response_mask"] = s.response_mask;
        c["num_turns"] = s.turns.assistant_turns + s.turns.user_turns + 1;
        c["tool_calls"] = s.turns.tool_calls;
        c["tool_failures"] = s.turns.failures;
      }
      comps.push_back(std::move(c));
    }
    j["completions"] = comps;
    out += j.dump() + "\n";
  }
  return out;
}

}  // namespace

void run_generate(const GenerateOptions& a, const MakeTools& make_tools) {
  rollout::Request defaults = request_defaults(a);
  check_engine_options(a);
  if (a.threads > 0) set_num_threads(a.threads);
  rollout::EngineConfig ec;
  ec.kv_dtype = kv_dtype_of(a.kv_dtype);
  ec.kv_memory_bytes = a.kv_bytes;
  ec.kv_memory_fraction = a.kv_fraction;
  const LoadedModel m = load_model(a.model, a.adapter, a.dtype, ec.block_size,
                                   a.chat            ? "--chat"
                                   : !a.stop.empty() ? "--stop"
                                                     : "");
  defaults.stop_token_ids = m.stop_ids;
  GenerateTools tools;
  const bool with_tools = a.tools || !a.tool_config.empty();
  if (with_tools) {
    GRPO_CHECK(a.chat && m.tok,
               "[generate] --tools / --tool-config need --chat (tool turns are rendered by the "
               "model's chat template)");
    tools = make_tools(*m.tok);
  }
  const LineContext context{.defaults = defaults,
                            .tok = m.tokenizer(),
                            .no_tokenizer = m.no_tokenizer,
                            .chat = a.chat,
                            .vocab = m.model->vocab_size(),
                            .context = m.model->max_positions(),
                            .images = m.image_config(),
                            .prompts_path = a.prompts,
                            .image_pad = m.image_pad,
                            .tools = tools.schemas};
  Lines lines = read_lines(a.prompts, context);
  // The KV budget never exceeds what these requests can hold at once.
  ec.kv_max_blocks = std::max<int64_t>(
      1, rollout::kv_blocks_for(lines.requests, ec.max_seqs, ec.block_size, m.model->max_positions()));
  rollout::Engine engine(*m.model, ec, m.tok ? rollout::tokenizer_decode_fn(*m.tok) : rollout::DecodeFn{});
  std::fprintf(stderr, "[generate] %s\n", engine.kv_budget().describe().c_str());
  drop_lines_over_the_cache(lines, engine, a.prompts);
  std::vector<rollout::RequestResult> res = engine.generate(lines.requests, progress_printer(), tools.turns);
  std::fprintf(stderr, "\n");
  const std::string out = output_lines(lines, res, with_tools);
  if (a.out == "-")
    std::fwrite(out.data(), 1, out.size(), stdout);
  else
    write_file_atomic(a.out, out);
  GRPO_CHECK(lines.bad == 0, "[generate] ", lines.bad, " line(s) of ", a.prompts, " were skipped (see above)");
}

}  // namespace grpo::generate
