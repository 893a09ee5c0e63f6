// The wait note (wait_note.h): two fixed buffers used in turn, the writer filling the one it did not publish
// last and then publishing it (one writer: the communication thread), so the handler (async-signal-safe: atomic load,
// write, signal, raise) reads a whole line.
#include "comm/wait_note.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace grpo::comm {
namespace {

constexpr size_t kNoteBytes = 1024;
char notes[2][kNoteBytes];
size_t note_length[2];
std::atomic<int> published{-1};  // the slot the handler prints, -1: none
int next_slot = 0;               // the writer's: the slot it fills next (never the one last published)

void on_sigterm(int) {
  const int slot = published.load(std::memory_order_acquire);
  if (slot >= 0) {
    const ssize_t ignored = write(STDERR_FILENO, notes[slot], note_length[slot]);
    (void)ignored;
  }
  signal(SIGTERM, SIG_DFL);
  raise(SIGTERM);
}

}  // namespace

void set_wait_note(std::string_view text) {
  if (text.empty()) {
    published.store(-1, std::memory_order_release);
    return;
  }
  const int slot = next_slot;
  next_slot = 1 - slot;
  size_t n = std::min(text.size(), kNoteBytes - 1);
  std::memcpy(notes[slot], text.data(), n);
  if (notes[slot][n - 1] != '\n') notes[slot][n++] = '\n';  // n <= kNoteBytes - 1: room for it
  note_length[slot] = n;
  published.store(slot, std::memory_order_release);
}

void print_wait_note_on_sigterm() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction current {};
  if (sigaction(SIGTERM, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  struct sigaction act {};
  act.sa_handler = on_sigterm;
  sigemptyset(&act.sa_mask);
  sigaction(SIGTERM, &act, nullptr);
}

}  // namespace grpo::comm
