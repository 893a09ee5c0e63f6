// Child processes of the benchmarks (see child_process.h).
#include "cli/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"

namespace grpo::cli {

std::string self_executable() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

void run_child(const std::vector<std::string>& args, const std::string& what) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  GRPO_CHECK(pid >= 0, "[bench] fork failed");
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);
    execvp(argv[0], argv.data());
    std::perror(("[bench] exec " + args[0]).c_str());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  GRPO_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "[bench] the ", what, " run failed (exit status ",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, "); its errors are above");
}

}  // namespace grpo::cli
