// Entry point of the `grpo` command-line tool: builds the CLI11 app from the command registry, makes the
// CPU instruction-set decision once the command line has parsed (before the command runs: it prints the
// "[cpu] ..." line, on rank 0 only in a distributed run, or refuses a CPU without AVX2+FMA or a bad GRPO_ISA), and turns any exception into
// "error: <message>" plus the scopes it left (what was being done, with what sizes: core/error_context.h)
// and exit status 1 (in a distributed run the line names the rank). Library exceptions (std::bad_alloc, oneDNN's, the standard library's) say what kind of
// failure they are, since their own text is terse.
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>

#include "cli/command.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "core/error_context.h"
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

namespace {

// One line on stderr and status 1. In a distributed run the line names the rank, and the process leaves at
// once without finalising MPI: the launcher sees the failure and stops the other ranks (which may be
// waiting for this one in a collective).
int report_error(const std::string& what) {
  if (!comm::launched_distributed()) {
    std::fprintf(stderr, "error: %s\n", what.c_str());
    return 1;
  }
  std::fprintf(stderr, "error: [rank %d] %s\n", comm::launch_rank(), what.c_str());
  comm::exit_now(1);
}

}  // namespace

}  // namespace grpo::cli

namespace {

// "dnnl::error", "std::out_of_range", ...: the exception's type, readable.
std::string type_name(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : t.name();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"grpo.cpp: reinforcement-learning post-training (GRPO) of language models, one native engine"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every command");
  for (auto& setup : grpo::cli::command_registry()) setup(app);
  app.parse_complete_callback([] {
    const grpo::IsaDecision& isa = grpo::isa_decision();
    if (grpo::comm::launch_rank() == 0)  // once per job: rank 0 speaks for the ranks of a distributed run
      std::fprintf(stderr, "%s\n", grpo::isa_report(isa).c_str());
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const grpo::Error& e) {
    return grpo::cli::report_error(grpo::describe_failure(e.what()));
  } catch (const std::bad_alloc& e) {
    return grpo::cli::report_error("out of memory (" + grpo::describe_failure(e.what()) + ")");
  } catch (const std::exception& e) {
    return grpo::cli::report_error(type_name(typeid(e)) + ": " + grpo::describe_failure(e.what()));
  }
  return 0;
}
