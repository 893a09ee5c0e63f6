// The model commands end to end through the built `grpo` binary: `debug forward-backward` on every
// reference case matches PyTorch within the README's f32 tolerances, and `score` agrees with the
// reference log-probs; bad input exits non-zero with a message naming the line. The CPU line: every
// command prints the ISA decision once on stderr, GRPO_ISA=avx2 lowers it on any machine, and a bad
// GRPO_ISA value stops the command before it loads anything.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "core/files.h"
#include "model/safetensors.h"
#include "train/case_eval.h"
#include "test_util.h"

using namespace grpo;
using test::run_grpo;
namespace fs = std::filesystem;

namespace {

using grpo::test::rel_err;

const std::string kModels = std::string(GRPO_SHARED_DIR) + "/reference/models/";

fs::path tmpdir() {
  fs::path d = fs::temp_directory_path() / ("grpo_cli_model_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

TEST(CliModel, DebugForwardBackwardMatchesReference) {
  fs::path d = tmpdir();
  for (std::string m : {"qwen3", "qwen3-tied", "qwen2"}) {
    for (std::string kase : {"lm_case", "grpo_case"}) {
      std::string out = (d / (m + "_" + kase + ".safetensors")).string();
      std::string args = "debug forward-backward --model " + kModels + m + " --case " + kModels + m + "/" + kase +
                         ".safetensors --out " + out;
      if (kase == "grpo_case") args += " --grpo " + kModels + m + "/grpo_case.json";
      const test::CommandResult r = run_grpo(args);
      ASSERT_EQ(r.status, 0) << r.output;
      SafetensorsFile ours = SafetensorsFile::open(out), ref = SafetensorsFile::open(kModels + m + "/" + kase + ".safetensors");
      int compared = 0;
      for (const StTensor& t : ref.tensors()) {
        bool grad = t.name.rfind("grad.", 0) == 0;
        if (!grad && t.name != "logits" && t.name != "token_logprobs" && t.name != "entropy" &&
            t.name.rfind("loss", 0) != 0 && t.name != "pg_clipfrac")
          continue;
        ASSERT_TRUE(ours.find(t.name)) << m << " " << kase << ": missing " << t.name;
        double e = rel_err(train::case_floats(ours, t.name), train::case_floats(ref, t.name));
        EXPECT_LE(e, grad ? 1e-3 : 1e-4) << m << " " << kase << ": " << t.name;
        ++compared;
      }
      EXPECT_GT(compared, 10);
    }
  }
  fs::remove_all(d);
}

TEST(CliModel, ScoreMatchesReferenceLogprobs) {
  fs::path d = tmpdir();
  SafetensorsFile ref = SafetensorsFile::open(kModels + "qwen3/lm_case.safetensors");
  std::vector<int64_t> ids = train::case_ints(ref, "input_ids"), lens = train::case_ints(ref, "seq_lens");
  std::vector<float> lp = train::case_floats(ref, "token_logprobs");
  std::string in;
  for (size_t s = 0, off = 0; s < lens.size(); off += lens[s++])
    in += nlohmann::json{{"input_ids", std::vector<int64_t>(ids.begin() + off, ids.begin() + off + lens[s])}}.dump() + "\n";
  write_file_atomic((d / "in.jsonl").string(), in);
  const test::CommandResult r = run_grpo("score --model " + kModels + "qwen3 --input " + (d / "in.jsonl").string() +
                                          " --out " + (d / "out.jsonl").string() + " --max-batch-tokens 10");
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<float> got;
  for_each_line((d / "out.jsonl").string(), [&](int64_t, const std::string& line) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["token_logprobs"].size(), j["entropy"].size());
    for (float v : j["token_logprobs"]) got.push_back(v);
  });
  ASSERT_EQ(got.size(), lp.size());
  EXPECT_LE(rel_err(got, lp), 1e-4);
  fs::remove_all(d);
}

TEST(CliModel, PrintsTheIsaDecisionOnceAndHonoursGrpoIsa) {
  const test::CommandResult r = run_grpo("inspect " + kModels + "qwen3", "2>&1 >/dev/null", "GRPO_ISA=avx2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("[cpu] avx2: using AVX2+FMA 8-lane kernels", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("bf16 emulated"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[cpu]", 1), std::string::npos) << "printed once: " << r.output;
  for (const std::string& command : {"inspect " + kModels + "qwen3", std::string("train no-such-config.yaml")}) {
    const test::CommandResult bad = run_grpo(command, "2>&1", "GRPO_ISA=avx1024");
    EXPECT_EQ(bad.status, 1) << command;
    EXPECT_NE(bad.output.find("error: [cpu] GRPO_ISA=\"avx1024\": expected avx2, avx512, avx512_bf16 or amx"),
              std::string::npos)
        << bad.output;
    EXPECT_EQ(bad.output.find("no-such-config"), std::string::npos) << "refused before the command ran: " << bad.output;
  }
}

TEST(CliModel, ScoreRejectsBadLinesNamingThem) {
  fs::path d = tmpdir();
  write_file_atomic((d / "bad.jsonl").string(), "{\"input_ids\": [1, 2]}\n{\"input_ids\": [1, 99999]}\n");
  test::CommandResult r =
      run_grpo("score --model " + kModels + "qwen3 --input " + (d / "bad.jsonl").string() + " --out " +
               (d / "o.jsonl").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("bad.jsonl:2"), std::string::npos) << r.output;
  write_file_atomic((d / "bad2.jsonl").string(), "not json\n");
  r = run_grpo("score --model " + kModels + "qwen3 --input " + (d / "bad2.jsonl").string() + " --out " +
               (d / "o.jsonl").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("bad2.jsonl:1"), std::string::npos) << r.output;
  fs::remove_all(d);
}

}  // namespace
