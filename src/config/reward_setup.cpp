// The run's reward functions (see reward_setup.h).
#include "config/reward_setup.h"

#include <algorithm>

#include "data/shapes.h"
#include "reward/verl/verl_reward.h"

namespace grpo {

std::vector<RewardFunctionConfig> run_reward_functions(const RewardConfig& reward,
                                                       const std::vector<std::string>& data_sources,
                                                       const std::string& where) {
  if (!reward.functions.empty()) return reward.functions;
  RewardFunctionConfig f;
  const CustomRewardFunctionConfig& custom = reward.custom_reward_function;
  if (!custom.path.empty()) {
    f.name = RewardKind::Python;
    f.path = custom.path;
    f.function = custom.name;
    f.kwargs_json = custom.reward_kwargs.dump();
    f.batch = reward.reward_manager == RewardManager::Batch;
    f.workers = custom.workers;
    f.timeout_s = custom.timeout_s;
    return {f};
  }
  const bool any_source = std::any_of(data_sources.begin(), data_sources.end(), [](const std::string& s) {
    return !s.empty() && s != kShapesDataSource;
  });
  if (!any_source) return {f};  // math
  verl::check_verl_data_sources(data_sources, where);
  f.name = RewardKind::Verl;
  return {f};
}

std::vector<std::string> data_sources_of(const std::vector<const Dataset*>& datasets) {
  std::vector<std::string> out;
  for (const Dataset* d : datasets)
    if (d)
      for (const Example& e : d->examples)
        if (std::find(out.begin(), out.end(), e.data_source) == out.end()) out.push_back(e.data_source);
  return out;
}

}  // namespace grpo
