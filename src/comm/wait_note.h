// What this process's communication thread is waiting for, kept where a signal handler can print it: when
// the launcher ends a job (mpirun sends SIGTERM to every rank once one has failed or a host is lost), a
// rank stuck in a collective says which operation and which peers it was waiting on before it dies.
#pragma once
#include <string_view>

namespace grpo::comm {

// Publishes `text` (cut at 1,023 bytes, a newline added) as the current wait; an empty text clears it.
void set_wait_note(std::string_view text);

// Once per process: if SIGTERM has its default action, installs a handler that writes the current wait
// note (if any) to stderr and then dies of SIGTERM, as the default action would.
void print_wait_note_on_sigterm();

}  // namespace grpo::comm
