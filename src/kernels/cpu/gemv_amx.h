// The rollout's bf16 GEMV on AMX tiles (gemv_amx.cpp), chosen by ops::gemv at the amx level, and the same
// kernel on the scalar tile emulator (kernels/cpu/amx_tiles.h) for the tests and the self-check.
// y [B, N] = x [B, K] . W [N, K]^T with W bf16 and x rounded to bf16 (as every bf16 GEMV path does):
// 16 rows of W are the A operand, loaded straight from W ([out, in], no repacking; a partial block of rows
// or of k is copied into a zero-padded tile first), x in bf16 pairs is the B operand (staged once per call
// into x_staged), and C = y^T. C[m][n] depends only on W row m and x row n, summed over k in tiles of 32
// in order from zero, whatever B, the blocking and the thread count: the kernel is batch invariant.
#pragma once
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace grpo::ops::cpu_tiles {

// bf16 elements x_staged must hold: B rounded up to 16 times K rounded up to 32.
int64_t staged_x_elems(int64_t B, int64_t K);

// On the hardware's tiles: only where the ISA decision is amx (callers go through ops::gemv, which also
// waits for the self-check).
void gemv_tiles_hardware(float* y, const float* x, bf16_t* x_staged, const bf16_t* W, int64_t B, int64_t N, int64_t K);
// On the emulator: the same results bit for bit if the emulator is exact, on any CPU.
void gemv_tiles_emulated(float* y, const float* x, bf16_t* x_staged, const bf16_t* W, int64_t B, int64_t N, int64_t K);

// The self-check of this process (run once, on the first call, at the amx level only): the hardware tile
// GEMV against the emulator, bit for bit, on shapes that take every path of the kernel, on this thread and
// then on twice as many threads as cores at once (tile state across preemption), with SIGILL, SIGSEGV and
// SIGBUS caught while it runs. Passed: the rollout's bf16 GEMV uses the tiles. Failed: it
// uses the AVX-512 BF16 GEMV for the rest of the process, and the reason goes to stderr once.
struct TileSelfCheck {
  bool passed = false;
  std::string failure;  // what went wrong, "" when passed
};
const TileSelfCheck& tile_self_check();
// The same check run now, whatever the level (tests): where the CPU has no tiles, or Linux did not grant
// them, it reports the SIGILL of the first tile instruction instead of dying of it.
TileSelfCheck check_tiles_now();

// Why ops::gemv does not run bf16 weights on the hardware tiles in this process ("" when it does): the
// level (no AMX on this CPU, Linux's refusal, a GRPO_ISA cap) or the failed self-check (which this runs).
std::string tiles_unavailable_reason();

// Tests: ops::gemv runs its bf16 weights on the emulated tiles at every level (true) or as the decision
// says (false), so that the tile kernel's batch invariance is tested with the real decoder on any CPU.
void set_emulated_tiles_for_tests(bool on);
bool emulated_tiles_for_tests();

}  // namespace grpo::ops::cpu_tiles
