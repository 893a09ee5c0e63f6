// Tests of the run configuration: verl defaults, overrides, aliases, derived values, errors that name
// the key / value / line / what is allowed, and the resolved YAML loading back to the same config.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <limits>

#include "core/error.h"
#include "grpo/config.h"
#include "grpo/session.h"
#include "temp_dir.h"
#include "error_of.h"
#include "test_util.h"

using namespace grpo;

namespace {

using grpo::test::contains;

const char* kMinimal =
    "data:\n"
    "  train_files: train.jsonl\n"
    "actor_rollout_ref:\n"
    "  model:\n"
    "    path: models/tiny\n";

using test::error_of;

}  // namespace

TEST(Config, DefaultsAreVerls) {
  test::TempDir dir;
  Config c = load_config(dir.write("c.yaml", kMinimal));
  EXPECT_EQ(c.data.train_files, "train.jsonl");
  EXPECT_EQ(c.data.train_batch_size, 1024);
  EXPECT_EQ(c.data.max_prompt_length, 512);
  EXPECT_EQ(c.actor_rollout_ref.actor.ppo_mini_batch_size, 256);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.clip_ratio_low, 0.2);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.clip_ratio_c, 3.0);
  EXPECT_EQ(c.actor_rollout_ref.actor.loss_agg_mode, "token-mean");
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.kl_loss_coef, 0.001);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.optim.lr, 1e-6);
  EXPECT_TRUE(c.algorithm.norm_adv_by_std_in_grpo);
  EXPECT_EQ(c.algorithm.adv_estimator, "grpo");
  EXPECT_EQ(c.trainer.save_freq, -1);
  EXPECT_TRUE(c.reward.functions.empty()) << "verl's choice: custom function, data_source rules, else math";
  EXPECT_EQ(c.reward.reward_manager, "naive");
  EXPECT_EQ(c.reward.custom_reward_function.name, "compute_score");
  // derived: loss_scale_factor 0 -> max_response_length
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.loss_scale_factor, 512.0);
}

TEST(Config, OverridesWinOverTheFile) {
  test::TempDir dir;
  std::string path = dir.write("c.yaml", std::string(kMinimal) + "trainer:\n  seed: 1\n");
  Config c = load_config(path, {"trainer.seed=7", "actor_rollout_ref.actor.optim.betas=[0.9, 0.95]",
                                "actor_rollout_ref.rollout.n=8", "data.val_files=test.jsonl",
                                "reward.functions=[{name: math, weight: 1}, {name: format, weight: 0.2, "
                                "pattern: 'answer is'}]"});
  EXPECT_EQ(c.trainer.seed, 7);
  EXPECT_EQ(c.actor_rollout_ref.actor.optim.betas, (std::vector<double>{0.9, 0.95}));
  EXPECT_EQ(c.actor_rollout_ref.rollout.n, 8);
  EXPECT_EQ(c.data.val_files, "test.jsonl");
  ASSERT_EQ(c.reward.functions.size(), 2u);
  EXPECT_EQ(c.reward.functions[1].pattern, "answer is");
  EXPECT_DOUBLE_EQ(c.reward.functions[1].weight, 0.2);
}

TEST(Config, MissionAliasesAndDerivedValues) {
  test::TempDir dir;
  std::string path = dir.write("c.yaml", std::string(kMinimal) +
                                             "use_dynamic_bsz: true\n"
                                             "max_tokens_per_gpu: 4096\n"
                                             "actor_rollout_ref.actor.clip_ratio: 0.1\n"
                                             "reward_model:\n  overlong_buffer:\n    enable: true\n    len: 64\n"
                                             "mixed_precision:\n  enabled: true\n  op_blacklist: []\n");
  Config c = load_config(path, {"actor_rollout_ref.actor.clip_ratio_high=0.28", "algorithm.scale_rewards=none",
                                "actor_rollout_ref.actor.clip_ratio_low=null"});
  EXPECT_TRUE(c.actor_rollout_ref.actor.use_dynamic_bsz);
  EXPECT_EQ(c.actor_rollout_ref.actor.ppo_max_token_len_per_gpu, 4096);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.clip_ratio_low, 0.1);  // from clip_ratio
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.clip_ratio_high, 0.28);
  EXPECT_TRUE(c.reward.overlong_buffer.enable);
  EXPECT_EQ(c.reward.overlong_buffer.len, 64);
  EXPECT_TRUE(c.mixed_precision.enabled);
  EXPECT_TRUE(c.mixed_precision.op_blacklist.empty());
  EXPECT_FALSE(c.algorithm.norm_adv_by_std_in_grpo);  // scale_rewards none
  EXPECT_EQ(advantage_scaling(c), train::AdvantageScaling::None);
  auto p = policy_loss_config(c);
  EXPECT_FLOAT_EQ(p.clip_ratio_high, 0.28f);
  EXPECT_EQ(p.kl_coef, 0.0f);  // use_kl_loss false
}

TEST(Config, NormAdvFalseMeansNoStd) {
  test::TempDir dir;
  Config c = load_config(dir.write("c.yaml", kMinimal), {"algorithm.norm_adv_by_std_in_grpo=false"});
  EXPECT_EQ(c.algorithm.scale_rewards, "none");
  std::string e = error_of([&] {
    load_config(dir.write("c.yaml", kMinimal), {"algorithm.norm_adv_by_std_in_grpo=false",
                                                "algorithm.scale_rewards=batch"});
  });
  EXPECT_TRUE(contains(e, "contradicts")) << e;
}

TEST(Config, UnknownKeyNamesKeyValueLineAndWhatIsAllowed) {
  test::TempDir dir;
  std::string path = dir.write("bad.yaml",
                   "data:\n  train_files: t.jsonl\n  train_batch_sise: 8\n"
                   "actor_rollout_ref:\n  model:\n    path: m\n");
  std::string e = error_of([&] { load_config(path); });
  EXPECT_TRUE(contains(e, "bad.yaml:3")) << e;
  EXPECT_TRUE(contains(e, "unknown key \"data.train_batch_sise\"")) << e;
  EXPECT_TRUE(contains(e, "\"8\"")) << e;
  EXPECT_TRUE(contains(e, "did you mean data.train_batch_size?")) << e;
  EXPECT_TRUE(contains(e, "max_prompt_length")) << e;  // lists the allowed keys of the section

  e = error_of([&] { load_config(dir.write("c.yaml", kMinimal), {"trainer.sed=3"}); });
  EXPECT_TRUE(contains(e, "--set")) << e;
  EXPECT_TRUE(contains(e, "trainer.seed")) << e;
  e = error_of([&] { load_config(dir.write("c.yaml", std::string(kMinimal) + "wandb: {}\n")); });
  EXPECT_TRUE(contains(e, "unknown key \"wandb\"")) << e;
}

TEST(Config, WrongTypesAreErrors) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  struct Case {
    std::string set, expect;
  };
  for (const Case& k : std::vector<Case>{
           {"data.train_batch_size=abc", "expected an integer, got \"abc\""},
           {"data.train_batch_size=1.5", "expected an integer"},
           {"actor_rollout_ref.actor.optim.lr=fast", "expected a number"},
           {"data.shuffle=maybe", "expected true or false"},
           {"actor_rollout_ref.actor.optim.betas=0.9", "expected a list"},
           {"actor_rollout_ref.actor.optim.betas=[0.9]", "wrong number of items"},
           {"data.train_files=[a, b]", "expected text"},
           {"reward.functions=[{name: math, pattern: x}]", "not used by reward function \"math\""},
       }) {
    std::string e = error_of([&] { load_config(path, {k.set}); });
    EXPECT_TRUE(contains(e, k.expect)) << k.set << " -> " << e;
    EXPECT_TRUE(contains(e, "--set")) << e;
  }
}

TEST(Config, OutOfRangeValuesAreErrors) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  struct Case {
    std::string set, expect;
  };
  for (const Case& k : std::vector<Case>{
           {"actor_rollout_ref.rollout.n=0", "allowed: [1, 2147483647]"},
           {"actor_rollout_ref.rollout.top_p=0", "allowed: [1e-06, 1]"},
           {"actor_rollout_ref.rollout.top_k=0", "allowed: [1, 2147483647] or -1"},
           {"actor_rollout_ref.actor.clip_ratio_c=1", "allowed: (1, 1e+30]"},
           {"actor_rollout_ref.actor.loss_agg_mode=mean", "one of: token-mean"},
           {"actor_rollout_ref.rollout.kv_cache_dtype=fp8", "one of: auto, f32, bf16, int8"},
           {"trainer.save_freq=0", "out of range"},
           {"mixed_precision.op_blacklist=[lm_head, softmax]", "a list of: qkv_proj"},
       }) {
    std::string e = error_of([&] { load_config(path, {k.set}); });
    EXPECT_TRUE(contains(e, k.expect)) << k.set << " -> " << e;
    EXPECT_TRUE(contains(e, k.set.substr(0, k.set.find('=')))) << e;
  }
}

TEST(Config, CrossChecksAndRequiredKeys) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  std::string e = error_of([&] { load_config(path, {"data.train_batch_size=10", "actor_rollout_ref.actor.ppo_mini_batch_size=4"}); });
  EXPECT_TRUE(contains(e, "must divide data.train_batch_size")) << e;
  e = error_of([&] {
    load_config(path, {"actor_rollout_ref.actor.use_dynamic_bsz=true",
                       "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=100"});
  });
  EXPECT_TRUE(contains(e, "so that every sequence fits")) << e;
  e = error_of([&] { load_config(path, {"reward.overlong_buffer.enable=true"}); });
  EXPECT_TRUE(contains(e, "reward.overlong_buffer.len")) << e;
  e = error_of([&] { load_config(path, {"reward.functions=[{name: external}]"}); });
  EXPECT_TRUE(contains(e, "needs a command")) << e;
  e = error_of([&] { load_config(dir.write("empty.yaml", "data:\n  train_batch_size: 8\n"), {}); });
  EXPECT_TRUE(contains(e, "data.train_files is required")) << e;
  EXPECT_TRUE(contains(e, "actor_rollout_ref.model.path is required")) << e;
  e = error_of([&] { load_config(dir.write("syntax.yaml", "data: [1, 2\n")); });
  EXPECT_TRUE(contains(e, "syntax.yaml:")) << e;
  e = error_of([&] { load_config(dir.path() + "/missing.yaml"); });
  EXPECT_TRUE(contains(e, "cannot open") && contains(e, "No such file or directory")) << e;
  e = error_of([&] { load_config(dir.path()); });
  EXPECT_TRUE(contains(e, "Is a directory")) << e;
}

TEST(Config, ResolvedYamlRoundTrips) {
  test::TempDir dir;
  Config c = load_config(dir.write("c.yaml", kMinimal),
                         {"trainer.experiment_name=null", "trainer.project_name='true'",
                          "actor_rollout_ref.actor.optim.lr=3e-7", "actor_rollout_ref.actor.entropy_coeff=0.1",
                          "reward.functions=[{name: format, weight: 0.5, pattern: '\\\\boxed\\{.*\\}: \"x\"'}, "
                          "{name: external, command: 'python3 r.py --flag', timeout_s: 2.5, workers: 3}]",
                          "trainer.logger=[console]"});
  EXPECT_EQ(c.trainer.experiment_name, "grpo");  // null keeps the default
  EXPECT_EQ(c.trainer.project_name, "true");
  const std::string yaml = config_to_yaml(c);
  Config back = load_config(dir.write("resolved.yaml", yaml));
  EXPECT_EQ(config_to_yaml(back), yaml);
  EXPECT_EQ(back.trainer.project_name, "true");
  EXPECT_DOUBLE_EQ(back.actor_rollout_ref.actor.optim.lr, 3e-7);
  EXPECT_DOUBLE_EQ(back.actor_rollout_ref.actor.entropy_coeff, 0.1);
  ASSERT_EQ(back.reward.functions.size(), 2u);
  EXPECT_EQ(back.reward.functions[0].pattern, c.reward.functions[0].pattern);
  EXPECT_EQ(back.reward.functions[1].command, "python3 r.py --flag");
  EXPECT_DOUBLE_EQ(back.reward.functions[1].timeout_s, 2.5);
  EXPECT_EQ(back.reward.functions[1].workers, 3);
  EXPECT_EQ(back.trainer.logger, (std::vector<std::string>{"console"}));
}

// verl's custom_reward_function (top-level and reward.* spellings), reward_kwargs as a mapping, the
// reward manager, and python / verl entries of reward.functions; all written back and read again.
TEST(Config, CustomRewardFunctionKeys) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", std::string(kMinimal) +
                                                   "custom_reward_function:\n  path: my_reward.py\n  name: score_fn\n"
                                                   "  reward_kwargs:\n    bonus: 0.5\n    mode: strict\n    n: 3\n");
  Config c = load_config(path, {"reward_model.reward_manager=batch"});
  EXPECT_EQ(c.reward.custom_reward_function.path, "my_reward.py");
  EXPECT_EQ(c.reward.custom_reward_function.name, "score_fn");
  EXPECT_EQ(c.reward.custom_reward_function.reward_kwargs,
            nlohmann::json::parse(R"({"bonus": 0.5, "mode": "strict", "n": 3})"));
  EXPECT_EQ(c.reward.reward_manager, "batch");
  Config back = load_config(dir.write("resolved.yaml", config_to_yaml(c)));
  EXPECT_EQ(config_to_yaml(back), config_to_yaml(c));
  EXPECT_EQ(back.reward.custom_reward_function.reward_kwargs, c.reward.custom_reward_function.reward_kwargs);

  c = load_config(dir.write("d.yaml", kMinimal),
                  {"reward.custom_reward_function.path=r.py", "reward.custom_reward_function.reward_kwargs={a: 1}"});
  EXPECT_EQ(c.reward.custom_reward_function.reward_kwargs, nlohmann::json::parse(R"({"a": 1})"));
  c = load_config(dir.write("e.yaml", kMinimal),
                  {"reward.functions=[{name: python, path: r.py, function: f, kwargs: {k: x}, batch: true, workers: 4}, "
                   "{name: verl, weight: 0.5}]"});
  ASSERT_EQ(c.reward.functions.size(), 2u);
  EXPECT_EQ(c.reward.functions[0].kwargs_json, R"({"k":"x"})");
  EXPECT_TRUE(c.reward.functions[0].batch);
  EXPECT_EQ(c.reward.functions[0].workers, 4);
  back = load_config(dir.write("resolved2.yaml", config_to_yaml(c)));
  EXPECT_EQ(config_to_yaml(back), config_to_yaml(c));

  // verl's DAPO scripts: the reward manager's arguments as dotted entries of reward_model.reward_kwargs.
  c = load_config(dir.write("f.yaml", kMinimal),
                  {"reward_model.reward_manager=dapo", "reward_model.reward_kwargs.overlong_buffer_cfg.enable=True",
                   "reward_model.reward_kwargs.overlong_buffer_cfg.len=128",
                   "reward_model.reward_kwargs.overlong_buffer_cfg.penalty_factor=0.5",
                   "reward_model.reward_kwargs.overlong_buffer_cfg.log=False",
                   "reward_model.reward_kwargs.max_resp_len=512"});
  EXPECT_TRUE(c.reward.overlong_buffer.enable);
  EXPECT_EQ(c.reward.overlong_buffer.len, 128);
  EXPECT_DOUBLE_EQ(c.reward.overlong_buffer.penalty_factor, 0.5);
  // With the batch manager they are the custom function's keyword arguments.
  c = load_config(dir.write("g.yaml", kMinimal), {"reward_model.reward_manager=batch", "custom_reward_function.path=r.py",
                                                  "reward_model.reward_kwargs.scale=2"});
  EXPECT_EQ(c.reward.custom_reward_function.reward_kwargs, nlohmann::json::parse(R"({"scale": 2})"));
  std::string e = error_of([&] { load_config(path, {"reward_model.reward_kwargs.scale=2"}); });
  EXPECT_TRUE(contains(e, "not taken by reward_manager naive")) << e;

  e = error_of([&] { load_config(path, {"reward.functions=[{name: math}]"}); });
  EXPECT_TRUE(contains(e, "reward.functions are both set")) << e;
  e = error_of([&] { load_config(path, {"reward.reward_manager=fancy"}); });
  EXPECT_TRUE(contains(e, "naive")) << e;
  e = error_of([&] { load_config(path, {"reward.custom_reward_function.reward_kwargs=[1]"}); });
  EXPECT_TRUE(contains(e, "expected a mapping")) << e;
  e = error_of([&] { load_config(path, {"reward.functions=[{name: python}]", "custom_reward_function.path=''"}); });
  EXPECT_TRUE(contains(e, "needs a path")) << e;
}

TEST(Config, KeyTableDocumentsEveryKey) {
  const auto& keys = config_keys();
  EXPECT_GT(keys.size(), 60u);
  for (const auto& k : keys) {
    EXPECT_FALSE(k.doc.empty()) << k.name;
    EXPECT_FALSE(k.allowed.empty()) << k.name;
  }
  const std::string help = config_help();
  EXPECT_TRUE(contains(help, "actor_rollout_ref.rollout.gpu_memory_utilization"));
  EXPECT_TRUE(contains(help, "trainer.default_local_dir"));
}

TEST(Config, ValidateConfigChecksConfigsBuiltInCode) {
  Config c;
  c.data.train_files = "t.jsonl";
  c.actor_rollout_ref.model.path = "m";
  EXPECT_NO_THROW(validate_config(c));
  c.actor_rollout_ref.rollout.temperature = -1;
  std::string e = error_of([&] { validate_config(c); });
  EXPECT_TRUE(contains(e, "actor_rollout_ref.rollout.temperature = -1.0 is not allowed")) << e;
}

TEST(Config, ExampleConfigsLoad) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GRPO_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(load_config(entry.path().string())) << entry.path();
    ++loaded;
  }
  EXPECT_GE(loaded, 2);
  Config grpo = load_config(std::string(GRPO_SOURCE_DIR) + "/examples/arith-grpo.yaml");
  EXPECT_EQ(grpo.actor_rollout_ref.rollout.n, 8);
  EXPECT_TRUE(grpo.actor_rollout_ref.actor.use_dynamic_bsz);
  EXPECT_DOUBLE_EQ(grpo.actor_rollout_ref.actor.clip_ratio_high, 0.28);
  Config sft = load_config(std::string(GRPO_SOURCE_DIR) + "/examples/arith-sft.yaml");
  EXPECT_DOUBLE_EQ(sft.sft.lr, 1e-3);
}

// Every numeric key is bounded by the type that consumes it: extreme values (beyond int32, beyond int64,
// beyond float, non-finite) are errors naming the key, never narrowed or wrapped. The seed is the one key
// that takes any int64 >= 0 (it is hashed).
TEST(Config, EveryNumericKeyRefusesExtremeValues) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  int checked = 0;
  for (const ConfigKeyInfo& k : config_keys()) {
    std::vector<std::string> values;
    if (k.type == "integer") {
      values = {"2147483648", "4294967297", "9223372036854775807", "-9223372036854775808", "99999999999999999999",
                "1.5"};
      if (k.name == "trainer.seed") values = {"-1", "-9223372036854775808", "99999999999999999999"};
    } else if (k.type == "number") {
      values = {"1e308", "-1e308", ".nan", ".inf", "-.inf", "1e39"};
    } else if (k.type == "list of numbers") {
      values = {"[1e308, 0.5]", "[.nan, 0.5]"};
    } else {
      continue;
    }
    for (const std::string& v : values) {
      const std::string e = error_of([&] { load_config(path, {k.name + "=" + v}); });
      EXPECT_TRUE(contains(e, k.name)) << k.name << "=" << v << " -> " << (e.empty() ? "accepted" : e);
      ++checked;
    }
  }
  EXPECT_GT(checked, 200);
  EXPECT_NO_THROW(load_config(path, {"trainer.seed=9223372036854775807"}));

  // The cases of issue 10: no silent narrowing to 1, no negative group size, no overflowing KV sizing.
  for (const std::string set : {"actor_rollout_ref.rollout.top_k=4294967297", "actor_rollout_ref.rollout.n=2147483648",
                                "actor_rollout_ref.rollout.max_num_seqs=9223372036854775807"}) {
    const std::string e = error_of([&] { load_config(path, {set}); });
    EXPECT_TRUE(contains(e, "out of range") && contains(e, "[1, 2147483647]")) << set << " -> " << e;
  }
}

// Each integer key at its largest allowed value: products of keys are checked (a clear error, no overflow;
// the sanitizer build would flag one), and the KV sizing of the largest config is overflow-checked too.
TEST(Config, LargestValuesGiveErrorsNotOverflows) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  std::vector<std::string> sets;
  for (const ConfigKeyInfo& k : config_keys())
    if (k.type == "integer" && k.name != "trainer.seed" && k.allowed.find("2147483647") != std::string::npos)
      sets.push_back(k.name + "=2147483647");  // (worker counts are bounded lower: kMaxRewardWorkers)
  std::string e = error_of([&] { load_config(path, sets); });
  EXPECT_TRUE(contains(e, "responses per step; at most 2147483647")) << e;
  EXPECT_TRUE(contains(e, "positions are 32-bit")) << e;

  Config c = load_config(path, {"actor_rollout_ref.rollout.max_num_seqs=2147483647",
                                "data.max_prompt_length=1073741823", "data.max_response_length=1073741824"});
  ModelConfig m;
  m.num_hidden_layers = 64;
  m.num_key_value_heads = 64;
  m.head_dim = 256;
  m.max_position_embeddings = std::numeric_limits<int64_t>::max();
  // The KV cap counts blocks of the sequences running at once (bytes follow from the memory budget, in the
  // engine): at the largest values it is exact, not wrapped.
  const rollout::EngineConfig ec = engine_config(c, m, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ec.kv_max_blocks, int64_t{2147483647} * ((int64_t{2147483647} + ec.block_size - 1) / ec.block_size));
}

TEST(Config, SettingsThatCannotWorkAreRefused) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  struct Case {
    std::vector<std::string> sets;
    std::string expect;
  };
  for (const Case& k : std::vector<Case>{
           {{"actor_rollout_ref.rollout.temperature=0", "actor_rollout_ref.rollout.n=8"}, "every advantage is 0"},
           {{"actor_rollout_ref.rollout.val_kwargs.n=4"}, "val_kwargs.temperature = 0 (greedy) with val_kwargs.n = 4"},
           {{"actor_rollout_ref.rollout.temperature=0.001"}, "[0.01, 100] or 0"},
           {{"mixed_precision.op_blacklist=[lm_head]"}, "op_blacklist: not supported"},
           {{"trainer.resume_mode=resume_path"}, "needs trainer.resume_from_path"},
           {{"trainer.resume_from_path=runs/x"}, "set trainer.resume_mode: resume_path"},
           {{"trainer.logger=[tensorboard]", "trainer.project_name=a/b"}, "trainer.project_name = \"a/b\""},
           {{"trainer.logger=[wandb]"}, "a list of: console, jsonl, tensorboard"},
           {{"reward.functions=[{name: math, weight: 1e7}]"}, "weight = 1e+07 must be a finite number"},
           {{"reward.functions=[{name: external, command: x, workers: 100000}]"}, "workers: expected an integer in [1, 256]"},
           {{"reward.functions=[{name: external, command: x, timeout_s: 1e300}]"}, "timeout_s: expected a number"},
       }) {
    const std::string e = error_of([&] { load_config(path, k.sets); });
    EXPECT_TRUE(contains(e, k.expect)) << k.sets[0] << " -> " << e;
  }
  EXPECT_NO_THROW(load_config(path, {"actor_rollout_ref.rollout.temperature=0", "actor_rollout_ref.rollout.n=1"}));
  EXPECT_NO_THROW(load_config(path, {"actor_rollout_ref.rollout.val_kwargs.n=4",
                                     "actor_rollout_ref.rollout.val_kwargs.temperature=0.7",
                                     "trainer.logger=[console, tensorboard]", "trainer.resume_mode=auto"}));
}
