// Entry point of the `grpo` command-line tool: builds the CLI11 app from the command registry, makes the
// CPU instruction-set decision once the command line has parsed (before the command runs: it prints the
// "[cpu] ..." line, or refuses a CPU without AVX2+FMA or a bad GRPO_ISA), and turns grpo::Error into a
// one-line message and exit status 1.
#include <cstdio>
#include <exception>
#include <new>

#include "cli/command.h"
#include "core/error.h"
#include "kernels/backend.h"

namespace grpo::cli {

std::vector<CommandSetup>& command_registry() {
  static std::vector<CommandSetup> registry;
  return registry;
}

CLI::App* group_command(CLI::App& app, const std::string& parent, const std::string& description) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    if (sub->get_name() == parent) return sub;
  CLI::App* g = app.add_subcommand(parent, description);
  g->require_subcommand(1);
  return g;
}

}  // namespace grpo::cli

int main(int argc, char** argv) {
  CLI::App app{"grpo.cpp: reinforcement-learning post-training (GRPO) of language models, one native engine"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every command");
  for (auto& setup : grpo::cli::command_registry()) setup(app);
  app.parse_complete_callback([] { grpo::isa_decision(); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const grpo::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory (an allocation outside the arenas failed)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
