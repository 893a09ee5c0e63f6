// The wait note (comm/wait_note.h) in a forked child that is then sent SIGTERM, as a launcher ending the
// job would: the last note published is printed whole (a newline added, cut at 1,023 bytes), a cleared note
// prints nothing, and the child still dies of SIGTERM; a process that ignores SIGTERM keeps doing so.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "comm/wait_note.h"

using namespace grpo;

namespace {

struct Child {
  int status = 0;
  std::string err;  // what the child wrote to stderr
};

// Runs `body` in a forked child whose stderr is captured; `body` ends by raising SIGTERM.
Child run_child(const std::function<void()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    body();
    _exit(7);
  }
  close(fds[1]);
  Child c;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) c.err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(pid, &c.status, 0);
  return c;
}

class WaitNote : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("OMPI_COMM_WORLD_SIZE")) GTEST_SKIP() << "forks: run without mpirun";
  }
};

TEST_F(WaitNote, TheLastNoteIsPrintedWhenSigtermEndsTheProcess) {
  const Child c = run_child([] {
    comm::print_wait_note_on_sigterm();
    comm::set_wait_note("[rank 0] waiting for rank 2");
    comm::set_wait_note("[rank 0] waiting 1.5 s for rank 1: all_gather\n");
    raise(SIGTERM);
  });
  ASSERT_TRUE(WIFSIGNALED(c.status)) << c.status;
  EXPECT_EQ(WTERMSIG(c.status), SIGTERM);
  EXPECT_EQ(c.err, "[rank 0] waiting 1.5 s for rank 1: all_gather\n");
}

TEST_F(WaitNote, AClearedNotePrintsNothingAndALongOneIsCut) {
  const Child cleared = run_child([] {
    comm::print_wait_note_on_sigterm();
    comm::set_wait_note("waiting");
    comm::set_wait_note("");
    raise(SIGTERM);
  });
  ASSERT_TRUE(WIFSIGNALED(cleared.status));
  EXPECT_EQ(WTERMSIG(cleared.status), SIGTERM);
  EXPECT_EQ(cleared.err, "");
  const Child long_note = run_child([] {
    comm::print_wait_note_on_sigterm();
    comm::set_wait_note(std::string(3000, 'x'));
    raise(SIGTERM);
  });
  ASSERT_TRUE(WIFSIGNALED(long_note.status));
  EXPECT_EQ(long_note.err, std::string(1023, 'x') + "\n");
}

TEST_F(WaitNote, AProcessThatIgnoresSigtermKeepsIgnoringIt) {
  const Child c = run_child([] {
    signal(SIGTERM, SIG_IGN);
    comm::print_wait_note_on_sigterm();
    comm::set_wait_note("waiting");
    raise(SIGTERM);
  });
  ASSERT_TRUE(WIFEXITED(c.status));
  EXPECT_EQ(WEXITSTATUS(c.status), 7);
  EXPECT_EQ(c.err, "");
}

}  // namespace
