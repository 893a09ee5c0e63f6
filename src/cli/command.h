// Registry of `grpo` subcommands. Each cli/cmd_*.cpp registers itself with GRPO_REGISTER_COMMAND; its
// setup function adds a CLI11 subcommand (with --help) and the callback that runs it.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace grpo::cli {

using CommandSetup = std::function<void(CLI::App& app)>;

std::vector<CommandSetup>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(CommandSetup setup) { command_registry().push_back(std::move(setup)); }
};

// Returns the `parent` subcommand of app, creating it once (used by `grpo bench ...`, `grpo debug ...`,
// `grpo data ...` whose subcommands live in several files).
CLI::App* group_command(CLI::App& app, const std::string& parent, const std::string& description);

}  // namespace grpo::cli

#define GRPO_CLI_CAT2(a, b) a##b
#define GRPO_CLI_CAT(a, b) GRPO_CLI_CAT2(a, b)
#define GRPO_REGISTER_COMMAND(fn) \
  static ::grpo::cli::CommandRegistrar GRPO_CLI_CAT(grpo_command_registrar_, __COUNTER__)(fn)
