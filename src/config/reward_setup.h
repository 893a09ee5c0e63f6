// Which reward functions a run uses, chosen as verl chooses (used by the trainer, `grpo train --check`
// and `grpo reward`): reward.functions when the config lists any; else the Python function of
// reward.custom_reward_function (batch mode when reward.reward_manager is batch); else, when the rows
// carry data_source, verl's rule for each row's data_source (every data_source must have one: an error
// at start names the first that has none and lists the known ones); else `math` (also for the project's
// own tasks: rows of `grpo data shapes` carry data_source "shapes").
#pragma once
#include <string>
#include <vector>

#include "data/dataset.h"
#include "config/config.h"
#include "reward/reward_config.h"

namespace grpo {

// `data_sources`: every row's data_source ("" for rows without), `where` names the data for errors.
std::vector<RewardFunctionConfig> run_reward_functions(const RewardConfig& reward,
                                                       const std::vector<std::string>& data_sources,
                                                       const std::string& where);

// The data_source of every example of the data sets (deduplicated, in first-seen order).
std::vector<std::string> data_sources_of(const std::vector<const Dataset*>& datasets);

}  // namespace grpo
