// Tests of the run configuration: verl defaults, overrides, aliases, derived values, errors that name
// the key / value / line / what is allowed, and the resolved YAML loading back to the same config.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "config/config.h"
#include "config/part_options.h"
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
  EXPECT_EQ(c.data.train_files, std::vector<std::string>{"train.jsonl"});
  EXPECT_EQ(c.data.train_batch_size, 1024);
  EXPECT_EQ(c.data.max_prompt_length, 512);
  EXPECT_EQ(c.actor_rollout_ref.actor.ppo_mini_batch_size, 256);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.clip_ratio_low, 0.2);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.clip_ratio_c, 3.0);
  EXPECT_EQ(c.actor_rollout_ref.actor.loss_agg_mode, train::LossAggMode::TokenMean);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.kl_loss_coef, 0.001);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.optim.lr, 1e-6);
  EXPECT_TRUE(c.algorithm.norm_adv_by_std_in_grpo);
  EXPECT_EQ(c.algorithm.adv_estimator, train::AdvEstimator::Grpo);
  EXPECT_EQ(c.trainer.save_freq, -1);
  // verl's ppo_trainer.yaml defaults that differed here before verl's run scripts were read unchanged.
  EXPECT_FALSE(c.data.filter_overlong_prompts);
  EXPECT_EQ(c.trainer.total_epochs, 30);
  EXPECT_EQ(c.trainer.default_local_dir, "checkpoints/verl_examples/gsm8k");
  EXPECT_EQ(c.algorithm.filter_groups.max_num_gen_batches, 0);
  EXPECT_EQ(c.actor_rollout_ref.rollout.max_num_seqs, 256);
  EXPECT_TRUE(c.actor_rollout_ref.rollout.do_sample);
  EXPECT_FALSE(c.actor_rollout_ref.rollout.val_kwargs.do_sample);
  EXPECT_TRUE(c.reward.functions.empty()) << "verl's choice: custom function, data_source rules, else math";
  EXPECT_EQ(c.reward.reward_manager, RewardManager::Naive);
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
  EXPECT_EQ(c.data.val_files, std::vector<std::string>{"test.jsonl"});
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
  EXPECT_EQ(c.algorithm.scale_rewards, train::AdvantageScaling::None);
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
  EXPECT_TRUE(contains(e, "override trainer.sed")) << e;
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
           {"data.train_files={a: b}", "expected a list"},
           {"reward.functions=[{name: math, pattern: x}]", "not used by reward function \"math\""},
       }) {
    std::string e = error_of([&] { load_config(path, {k.set}); });
    EXPECT_TRUE(contains(e, k.expect)) << k.set << " -> " << e;
    EXPECT_TRUE(contains(e, "override " + k.set.substr(0, k.set.find('=')))) << e;
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
  std::string e = error_of([&] { load_config(path, {"data.train_batch_size=10", "actor_rollout_ref.actor.ppo_mini_batch_size=16"}); });
  EXPECT_TRUE(contains(e, "must be at most data.train_batch_size")) << e;
  // One that does not divide it leaves a smaller last mini-batch, as in verl.
  EXPECT_EQ(load_config(path, {"data.train_batch_size=10", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                               "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1"})
                .actor_rollout_ref.actor.ppo_mini_batch_size,
            4);
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
  EXPECT_EQ(c.trainer.experiment_name, "gsm8k");  // null keeps the default (verl's)
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
  EXPECT_EQ(back.trainer.logger, (std::vector<Logger>{Logger::Console}));
}

// Every choice key takes each of its names: the value loads (or a cross-check refuses it, never the key), is
// written back by its name and reads back to the same config; a misspelt name is an error naming the key, the
// value and the allowed names.
TEST(Config, ChoiceKeysTakeTheirNamesAndRoundTrip) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  int choice_keys = 0;
  for (const ConfigKeyInfo& k : config_keys()) {
    const bool list = k.allowed.starts_with("a list of: ");
    if (!list && !k.allowed.starts_with("one of: ")) continue;
    ++choice_keys;
    const std::string names = k.allowed.substr(k.allowed.find(": ") + 2);
    for (size_t b = 0; b <= names.size();) {
      const size_t end = std::min(names.find(", ", b), names.size());
      const std::string name = names.substr(b, end - b);
      b = end + 2;
      const std::string set = k.name + "=" + (list ? "[" + name + "]" : name);
      try {
        const Config c = load_config(path, {set});
        const std::string yaml = config_to_yaml(c);
        EXPECT_EQ(config_to_yaml(load_config(dir.write("back.yaml", yaml))), yaml) << set;
      } catch (const Error& e) {
        EXPECT_FALSE(contains(e.what(), "allowed")) << set << " -> " << e.what();
      }
    }
    const std::string e = error_of([&] { load_config(path, {k.name + "=no_such_name"}); });
    EXPECT_TRUE(contains(e, k.name) && contains(e, "no_such_name") && contains(e, k.allowed)) << e;
  }
  EXPECT_GE(choice_keys, 20);
  // Synonyms load as one value, written by its first name.
  const Config c = load_config(path, {"actor_rollout_ref.actor.kl_loss_type=k1"});
  EXPECT_EQ(c.actor_rollout_ref.actor.kl_loss_type, (train::KlPenaltyType{train::KlEstimator::K1, false}));
  EXPECT_TRUE(contains(config_to_yaml(c), "kl_loss_type: \"kl\"")) << config_to_yaml(c);
  EXPECT_TRUE(contains(error_of([&] { load_config(path, {"algorithm.kl_penalty=k3+"}); }), "not an allowed value"));
  EXPECT_TRUE(contains(error_of([&] { load_config(path, {"actor_rollout_ref.actor.kl_loss_type=full"}); }),
                       "not an allowed value"));
  EXPECT_TRUE(contains(error_of([&] { load_config(path, {"reward.functions=[{name: judge}]"}); }),
                       "name must be one of: math, exact, format, external, verl, python"));
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
  EXPECT_EQ(c.reward.reward_manager, RewardManager::Batch);
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
  c.data.train_files = {"t.jsonl"};
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
           {{"trainer.logger=[neptune]"}, "a list of: console, jsonl, tensorboard"},
           {{"reward.functions=[{name: math, weight: 1e7}]"}, "weight = 1e+07 must be a finite number"},
           {{"reward.functions=[{name: external, command: x, workers: 100000}]"}, "workers: expected an integer in [1, 256]"},
           {{"reward.functions=[{name: external, command: x, timeout_s: 1e300}]"}, "timeout_s: expected a number"},
       }) {
    const std::string e = error_of([&] { load_config(path, k.sets); });
    EXPECT_TRUE(contains(e, k.expect)) << k.sets[0] << " -> " << e;
  }
  EXPECT_NO_THROW(load_config(path, {"actor_rollout_ref.rollout.temperature=0", "actor_rollout_ref.rollout.n=1"}));
  EXPECT_NO_THROW(load_config(path, {"actor_rollout_ref.rollout.val_kwargs.n=4",
                                     "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
                                     "actor_rollout_ref.rollout.val_kwargs.temperature=0.7",
                                     "trainer.logger=[console, tensorboard]", "trainer.resume_mode=auto"}));
}

// verl's run scripts: overrides as Hydra parses them, verl's keys without effect here, loggers we do not
// write, and features we do not have refused by name.
TEST(Config, VerlOverridesParseAsHydraDoes) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  ConfigNotes notes;
  Config c = load_config("", {"++data.train_files=['a.parquet']", "+actor_rollout_ref.model.path=~/models/qwen",
                              "data.val_files=None", "actor_rollout_ref.actor.optim.lr=1e-6",
                              "actor_rollout_ref.actor.use_kl_loss=True", "trainer.logger=[\"console\",\"wandb\"]",
                              "trainer.project_name='proj'", "trainer.experiment_name=exp"},
                         &notes);
  EXPECT_EQ(c.data.train_files, std::vector<std::string>{"a.parquet"});
  EXPECT_EQ(c.actor_rollout_ref.model.path, std::string(std::getenv("HOME")) + "/models/qwen");
  EXPECT_TRUE(c.data.val_files.empty());
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.optim.lr, 1e-6);
  EXPECT_TRUE(c.actor_rollout_ref.actor.use_kl_loss);
  EXPECT_EQ(c.trainer.logger, (std::vector<Logger>{Logger::Console, Logger::Jsonl}));  // wandb's metrics: metrics.jsonl
  EXPECT_EQ(notes.foreign_loggers, (std::vector<std::string>{"wandb"}));
  EXPECT_EQ(c.trainer.default_local_dir, "checkpoints/proj/exp");  // verl's default run folder
  EXPECT_TRUE(contains(notes.describe("runs/x"), "wandb not written here; metrics go to runs/x/metrics.jsonl")) << notes.describe("runs/x");

  // A logger named alone, verl's `file` logger (JSON lines: ours), ${key} in a text value.
  c = load_config(path, {"trainer.logger=file", "trainer.default_local_dir=out/${trainer.experiment_name}"});
  EXPECT_EQ(c.trainer.logger, (std::vector<Logger>{Logger::Jsonl}));
  EXPECT_EQ(c.trainer.default_local_dir, "out/gsm8k");
  std::string e = error_of([&] { load_config(path, {"trainer.default_local_dir=${oc.env:HOME}/x"}); });
  EXPECT_TRUE(contains(e, "${...} must name another text key")) << e;
  c = load_config(path, {"data.train_files=['a.parquet', 'b.parquet']", "data.val_files=''"});  // verl's run scripts
  EXPECT_EQ(c.data.train_files, (std::vector<std::string>{"a.parquet", "b.parquet"}));
  EXPECT_TRUE(c.data.val_files.empty());
  e = error_of([&] { load_config(path, {"~trainer.seed"}); });
  EXPECT_TRUE(contains(e, "Hydra's ~key")) << e;
}

TEST(Config, VerlGpuKeysAreAcceptedOnceAndFeaturesWeLackAreRefused) {
  test::TempDir dir;
  // verl's sections in a file: read key by key where some are ours or have rules, else accepted whole.
  const std::string path = dir.write("c.yaml",
                                     "data:\n  train_files: train.jsonl\n  dataloader_num_workers: 8\n"
                                     "critic:\n  optim:\n    lr: 1e-5\n"
                                     "actor_rollout_ref:\n  model:\n    path: models/tiny\n"
                                     "    override_config:\n      attention_dropout: 0.0\n"
                                     "  rollout:\n    name: vllm\n"
                                     "    engine_kwargs:\n      vllm: {}\n"
                                     "    multi_turn:\n      enable: false\n      format: hermes\n      max_parallel_calls: 1\n"
                                     "reward_model:\n  reward_manager: dapo\n  overlong_buffer:\n    enable: true\n"
                                     "    len: 16\n    log: false\n");
  ConfigNotes notes;
  const Config c = load_config(path,
              {"actor_rollout_ref.rollout.tensor_model_parallel_size=2", "actor_rollout_ref.actor.fsdp_config.param_offload=True",
               "actor_rollout_ref.ref.log_prob_micro_batch_size=128", "actor_rollout_ref.model.lora_rank=0",
               "+actor_rollout_ref.model.override_config.attention_dropout=0.", "algorithm.use_kl_in_reward=False",
               "trainer.critic_warmup=0", "actor_rollout_ref.actor.strategy=fsdp2", "algorithm.filter_groups.metric=acc",
               "actor_rollout_ref.rollout.tensor_model_parallel_size=4"},
              &notes);
  EXPECT_TRUE(c.reward.overlong_buffer.enable);
  EXPECT_EQ(c.reward.overlong_buffer.len, 16);
  for (const char* k : {"critic", "actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.engine_kwargs",
                        "data.dataloader_num_workers",
                        "actor_rollout_ref.rollout.multi_turn.max_parallel_calls",
                        "actor_rollout_ref.rollout.tensor_model_parallel_size",
                        "actor_rollout_ref.actor.fsdp_config.param_offload", "trainer.critic_warmup"})
    EXPECT_NE(std::find(notes.no_effect.begin(), notes.no_effect.end(), k), notes.no_effect.end()) << k;
  // Keys at a value that leaves their feature off agree with what this engine does: not listed.
  EXPECT_EQ(std::find(notes.no_effect.begin(), notes.no_effect.end(), "actor_rollout_ref.model.lora_rank"),
            notes.no_effect.end());
  EXPECT_EQ(std::count(notes.no_effect.begin(), notes.no_effect.end(),
                       "actor_rollout_ref.rollout.tensor_model_parallel_size"),
            1);
  const std::string line = notes.describe("runs/x");
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;

  for (const auto& [set, expect] : std::vector<std::pair<std::string, std::string>>{
           {"actor_rollout_ref.model.lora.rank=64", "not by the model.lora section"},
           {"actor_rollout_ref.rollout.multi_turn.interaction_config_path=i.yaml", "interactions"},
           {"+actor_rollout_ref.model.override_config.max_position_embeddings=32768", "overriding config.json"},
           {"reward_model.enable=True", "a reward model is not supported"},
           {"data.apply_chat_template_kwargs.enable_thinking=false", "chat template arguments"},
           {"defaults=[ppo_trainer]", "Hydra's defaults list"},
       }) {
    const std::string e = error_of([&] { load_config(path, {set}); });
    EXPECT_TRUE(contains(e, set.substr(set.starts_with("+") ? 1 : 0, set.find('=') - (set.starts_with("+") ? 1 : 0))))
        << e;
    EXPECT_TRUE(contains(e, "is not supported here") && contains(e, expect)) << set << " -> " << e;
  }
  // The nearest key, ours or verl's, by the whole path or the last part.
  std::string e = error_of([&] { load_config(path, {"actor_rollout_ref.rollout.gpu_memory_utilisation=0.5"}); });
  EXPECT_TRUE(contains(e, "did you mean actor_rollout_ref.rollout.gpu_memory_utilization?")) << e;
  e = error_of([&] { load_config(path, {"actor_rollout_ref.actor.fsdp_config.param_ofload=True"}); });
  EXPECT_TRUE(contains(e, "did you mean actor_rollout_ref.actor.fsdp_config.param_offload?")) << e;
}

TEST(Config, MultiTurnKeysAreVerls) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  const Config c = load_config(path, {"actor_rollout_ref.rollout.multi_turn.enable=true",
                                      "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
                                      "actor_rollout_ref.rollout.multi_turn.max_user_turns=null",
                                      "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=100",
                                      "actor_rollout_ref.rollout.multi_turn.tool_response_truncate_side=left",
                                      "actor_rollout_ref.rollout.multi_turn.tool_config_path=tools.yaml"});
  const MultiTurnConfig& mt = c.actor_rollout_ref.rollout.multi_turn;
  EXPECT_TRUE(mt.enable);
  EXPECT_EQ(mt.max_assistant_turns, 3);
  EXPECT_EQ(mt.max_user_turns, 0);  // null keeps the default: no limit
  EXPECT_EQ(mt.max_tool_response_length, 100);
  EXPECT_EQ(mt.tool_response_truncate_side, tools::TruncateSide::Left);
  EXPECT_EQ(mt.tool_config_path, "tools.yaml");
  EXPECT_EQ(mt.format, tools::ToolCallFormat::Hermes);
  std::string e = error_of([&] { load_config(path, {"actor_rollout_ref.rollout.multi_turn.format=json"}); });
  EXPECT_TRUE(contains(e, "multi_turn.format") && contains(e, "hermes")) << e;
  e = error_of([&] {
    load_config(path, {"actor_rollout_ref.rollout.multi_turn.enable=true", "data.apply_chat_template=false"});
  });
  EXPECT_TRUE(contains(e, "needs data.apply_chat_template")) << e;
  e = error_of([&] {
    load_config(path, {"actor_rollout_ref.rollout.multi_turn.enable=true",
                       "actor_rollout_ref.rollout.continuous_batching=false"});
  });
  EXPECT_TRUE(contains(e, "needs rollout.continuous_batching")) << e;
}

TEST(Config, VerlDerivedDefaults) {
  test::TempDir dir;
  const std::string path = dir.write("c.yaml", kMinimal);
  ConfigNotes notes;
  // The reference's token budget follows the actor's; do_sample false is greedy, saying what is unused.
  Config c = load_config(path, {"actor_rollout_ref.actor.use_dynamic_bsz=true",
                                "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=3000",
                                "actor_rollout_ref.rollout.val_kwargs.temperature=0.6"},
                         &notes);
  EXPECT_TRUE(c.actor_rollout_ref.ref.log_prob_use_dynamic_bsz);
  EXPECT_EQ(c.actor_rollout_ref.ref.log_prob_max_token_len_per_gpu, 3000);
  EXPECT_EQ(c.actor_rollout_ref.rollout.val_kwargs.temperature, 0.0);
  ASSERT_EQ(notes.unused.size(), 1u);
  EXPECT_TRUE(contains(notes.unused[0], "val_kwargs.temperature = 0.6 is not used")) << notes.unused[0];
  ConfigNotes quiet;  // greedy values under greedy decoding: nothing unused
  load_config(path, {"actor_rollout_ref.rollout.val_kwargs.temperature=0", "actor_rollout_ref.rollout.val_kwargs.top_k=-1"},
              &quiet);
  EXPECT_TRUE(quiet.unused.empty());
  c = load_config(path, {"actor_rollout_ref.rollout.val_kwargs.do_sample=True",
                         "actor_rollout_ref.rollout.val_kwargs.temperature=0.6", "actor_rollout_ref.nccl_timeout=60",
                         "actor_rollout_ref.actor.optim.clip_grad=0.5",
                         "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=True",
                         "+reward_model.reward_kwargs.overlong_buffer_cfg.len=64"});
  EXPECT_EQ(c.actor_rollout_ref.rollout.val_kwargs.temperature, 0.6);
  EXPECT_EQ(c.trainer.comm_timeout_s, 60);
  EXPECT_EQ(c.actor_rollout_ref.actor.grad_clip, 0.5);
  EXPECT_TRUE(c.reward.overlong_buffer.enable);
  EXPECT_EQ(c.reward.overlong_buffer.len, 64);
  EXPECT_EQ(verl_config_name_overrides("ppo_trainer.yaml"), std::vector<std::string>{});
  const std::string e = error_of([&] { verl_config_name_overrides("grpo_trainer"); });
  EXPECT_TRUE(contains(e, "no equivalent here") && contains(e, "dapo_trainer")) << e;
}
