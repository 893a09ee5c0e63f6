// Benchmarks that run `grpo train` as child processes (bench grpo, bench dist): start a command, send its
// stdout to our stderr (our stdout carries only the table and the JSON), wait for it.
#pragma once
#include <string>
#include <vector>

namespace grpo::cli {

// The path of this executable (to run it again, directly or under mpirun).
std::string self_executable();
// Runs argv (argv[0] looked up in PATH) and waits; a failure is an Error naming `what`.
void run_child(const std::vector<std::string>& argv, const std::string& what);

}  // namespace grpo::cli
