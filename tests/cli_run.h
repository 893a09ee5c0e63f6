// Test helper of the cli_* suites: runs the built `grpo` binary (GRPO_BINARY) through the shell and
// captures what it prints.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace grpo::test {

struct CommandResult {
  int status;          // exit status, -1 when killed by a signal
  std::string output;  // what `redirect` sends to the pipe
};

// `grpo args`; redirect "2>&1" captures stdout and stderr together, "2>&1 >/dev/null" stderr alone; `env`
// is put before the command (e.g. "GRPO_ISA=avx2").
inline CommandResult run_grpo(const std::string& args, const std::string& redirect = "2>&1", const std::string& env = "") {
  const std::string cmd = env + (env.empty() ? "" : " ") + std::string(GRPO_BINARY) + " " + args + " " + redirect;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed: " + cmd};
  CommandResult r{-1, ""};
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Before running `grpo` under mpirun: Open MPI may run as root, and under ASan its own allocations at exit
// are not the binary's leaks (tests/lsan_openmpi.supp says why). Launches keep their session files under
// `session_dir` (created; the test's own folder): two launchers starting at once in parallel tests race
// to create Open MPI's shared /tmp/ompi.<host>.<uid> and one fails with "File exists".
inline void prepare_mpirun_env(const std::string& session_dir) {
  std::filesystem::create_directories(session_dir);
  setenv("OMPI_MCA_orte_tmpdir_base", session_dir.c_str(), 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const std::string asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  if (asan.find("fast_unwind_on_malloc") == std::string::npos)
    setenv("ASAN_OPTIONS", (asan + (asan.empty() ? "" : ":") + "fast_unwind_on_malloc=0").c_str(), 1);
  setenv("LSAN_OPTIONS", "suppressions=" GRPO_SOURCE_DIR "/tests/lsan_openmpi.supp", 1);
}

}  // namespace grpo::test
