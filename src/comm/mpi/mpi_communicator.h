// The MPI backend of comm::Communicator (Open MPI 4.1, started with mpirun). Built when CMake finds MPI
// (GRPO_HAVE_MPI); comm::world() creates it when the process was launched with more than one rank.
//
// Open MPI makes no asynchronous progress on non-blocking operations by itself, so one dedicated
// communication thread owns MPI: it initialises it (MPI_THREAD_FUNNELED is enough, since no other thread
// calls MPI), runs the started operations one after another in order, and drives each by polling
// MPI_Testall with a short back-off until it completes or its timeout expires. Callers' threads only queue
// operations and wait for their completion, so a reduce-scatter started during the backward really
// proceeds while the backward computes.
//
// Collectives are built from point-to-point messages (at most 256 MiB each, so sizes beyond 2^31 bytes
// work): a reduce-scatter sends each rank the piece of the range inside its shard (bf16 or fp32 on the
// wire) and the receiver sums the N contributions in rank order in fp32, so results are bitwise
// reproducible and independent of MPI's algorithm choice; all-gather and gather send each rank's bytes
// directly to the ranks that need them. Every operation has a tag from its sequence number.
#pragma once
#include <memory>

#include "comm/communicator.h"

namespace grpo::comm {

// Initialises MPI (on the communication thread) and returns the world communicator.
std::unique_ptr<Communicator> make_mpi_communicator();

}  // namespace grpo::comm
