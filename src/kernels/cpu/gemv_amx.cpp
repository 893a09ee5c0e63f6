// The bf16 GEMV on AMX tiles (see gemv_amx.h), written once over a tile unit (kernels/cpu/amx_tiles.h) and
// instantiated for the hardware and for the emulator, and the process's self-check of one against the
// other.
// Layout: x is staged once per call as bf16 B operands, one 1 KiB tile per 16 rows of x and 32 values of k:
// tile (bb, kc) at (bb * KC + kc) * 512, its row p holding (x[16 bb + j][32 kc + 2p], x[16 bb + j][32 kc +
// 2p + 1]) for j = 0..15; rows of x beyond B and values beyond K are zeros. W's rows are A operands read in
// place (stride 2K bytes). A slab of NR blocks of 16 weight rows against NB blocks of 16 rows of x keeps
// NR x NB accumulators in tiles over the whole of k (NR x NB + NR + NB <= 8 tiles): 3 x 1 when x has at
// most 16 rows (decode of a few sequences: three independent TDPBF16PS chains, W streamed once and
// prefetched ahead), else 2 x 2 (and 2 x 1 for a last odd block). The blocking decides only which tiles
// hold what: every C[m][n] gets the same TDPBF16PS sequence over k, so results do not depend on B, on the
// other rows or on the thread count.
#include "kernels/cpu/gemv_amx.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "kernels/backend.h"
#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/head_bf16.h"

namespace grpo::ops::cpu_tiles {
namespace {

constexpr int64_t kTileElems = kTilePairs * 2 * kTileCols;  // bf16 per B tile (= per A tile)
constexpr int64_t kPrefetchChunks = 8;  // decode: how far ahead (in tiles of k) W's rows are prefetched

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// f(std::integral_constant<int, 0>) ... f(std::integral_constant<int, N - 1>): tile numbers as constants.
template <int N, typename F>
[[gnu::always_inline]] inline void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }
  (std::make_integer_sequence<int, N>{});
}

// x [B, K] f32 -> xs in the tile order above (round to nearest even, the bits of core/dtype.h).
void stage_x(bf16_t* xs, const float* x, int64_t B, int64_t K) {
  const detail::F32ToBf16Row row = detail::f32_to_bf16_row();
  const int64_t KC = ceil_div(K, kTileK), BB = ceil_div(B, kTileRows);
  for (int64_t bb = 0; bb < BB; ++bb)
    for (int j = 0; j < kTileRows; ++j) {
      const int64_t b = bb * kTileRows + j;
      for (int64_t kc = 0; kc < KC; ++kc) {
        bf16_t t[kTileK] = {};
        if (b < B) row(t, x + b * K + kc * kTileK, std::min<int64_t>(kTileK, K - kc * kTileK));
        bf16_t* tile = xs + (bb * KC + kc) * kTileElems;
        for (int p = 0; p < kTilePairs; ++p) std::memcpy(tile + (p * kTileCols + j) * 2, t + 2 * p, 2 * sizeof(bf16_t));
      }
    }
}

// Where the A tile of W rows n0..n0+15, k0..k0+31 is read from: W itself when the block is whole, else a
// copy in `pad` with zeros beyond N and K. Returns the address; *stride gets the row stride in bytes.
const bf16_t* w_block(const bf16_t* W, int64_t N, int64_t K, int64_t n0, int64_t k0, bf16_t* pad, int64_t* stride) {
  if (n0 + kTileRows <= N && k0 + kTileK <= K) {
    *stride = K * static_cast<int64_t>(sizeof(bf16_t));
    return W + n0 * K + k0;
  }
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileK; ++c)
      pad[r * kTileK + c] = n0 + r < N && k0 + c < K ? W[(n0 + r) * K + k0 + c] : bf16_t{0};
  *stride = kTileRowBytes;
  return pad;
}

// y rows 16 bb0 .. 16 (bb0 + NB), columns n0 .. n0 + 16 NR (those inside [B, N]) over all of k.
template <int NR, int NB, typename Tiles>
void slab(Tiles& u, float* y, const bf16_t* xs, const bf16_t* W, int64_t B, int64_t N, int64_t K, int64_t n0,
          int64_t bb0) {
  constexpr int kA = NR * NB, kB = kA + NR;  // tiles: C 0 .. kA-1, A kA .. kB-1, B kB .. kB+NB-1
  static_assert(kB + NB <= 8, "AMX has 8 tiles");
  const int64_t KC = ceil_div(K, kTileK);
  alignas(64) bf16_t pad[NR][kTileElems];
  unroll<NR * NB>([&](auto c) { u.template zero<c()>(); });
  for (int64_t kc = 0; kc < KC; ++kc) {
    const int64_t k0 = kc * kTileK;
    unroll<NR>([&](auto r) {
      int64_t stride = 0;
      const bf16_t* a = w_block(W, N, K, n0 + r() * kTileRows, k0, pad[r()], &stride);
      if constexpr (NB == 1)  // decode: W is read once, from memory; ask for its rows ahead
        if (a != pad[r()])
          for (int i = 0; i < kTileRows; ++i)
            __builtin_prefetch(reinterpret_cast<const char*>(a) + i * stride + kPrefetchChunks * kTileRowBytes);
      u.template load<kA + r()>(a, stride);
    });
    unroll<NB>([&](auto b) { u.template load<kB + b()>(xs + ((bb0 + b()) * KC + kc) * kTileElems, kTileRowBytes); });
    unroll<NR>([&](auto r) { unroll<NB>([&](auto b) { u.template dot<r() * NB + b(), kA + r(), kB + b()>(); }); });
  }
  alignas(64) float c[kTileRows][kTileCols];  // C = y^T: row m is weight row n0 + 16 r + m, column j is x row
  unroll<NR>([&](auto r) {
    unroll<NB>([&](auto b) {
      u.template store<r() * NB + b()>(c, kTileCols * static_cast<int64_t>(sizeof(float)));
      for (int m = 0; m < kTileRows; ++m) {
        const int64_t n = n0 + r() * kTileRows + m;
        if (n >= N) break;
        for (int j = 0; j < kTileCols; ++j) {
          const int64_t row = (bb0 + b()) * kTileRows + j;
          if (row >= B) break;
          y[row * N + n] = c[m][j];
        }
      }
    });
  });
}

// threads: split the slabs over the OpenMP threads where the work is large enough (the self-check does not,
// so that a fault stays on the thread that catches it).
template <typename Tiles>
void gemv_tiles(float* y, const float* x, bf16_t* xs, const bf16_t* W, int64_t B, int64_t N, int64_t K,
                bool threads) {
  if (B == 0 || N == 0) return;
  stage_x(xs, x, B, K);
  const int64_t BB = ceil_div(B, kTileRows);
  const int64_t slab_rows = BB == 1 ? 3 * kTileRows : 2 * kTileRows;
  const int64_t slabs = ceil_div(N, slab_rows);
  const int64_t parts = threads && B * N * K > (1 << 17) ? std::min<int64_t>(slabs, num_threads()) : 1;
  parallel_for(parts, parts > 1, [&](int64_t p) {
    Tiles u;  // the tile configuration is per thread: each part loads it and releases the tiles after
    u.configure();
    for (int64_t s = p * slabs / parts; s < (p + 1) * slabs / parts; ++s) {
      const int64_t n0 = s * slab_rows;
      if (BB == 1) {
        slab<3, 1>(u, y, xs, W, B, N, K, n0, 0);
        continue;
      }
      int64_t bb = 0;
      for (; bb + 2 <= BB; bb += 2) slab<2, 2>(u, y, xs, W, B, N, K, n0, bb);
      if (bb < BB) slab<2, 1>(u, y, xs, W, B, N, K, n0, bb);
    }
    u.release();
  });
}

// ---- the self-check ----

// Set while this thread runs the hardware kernel under the self-check: a fault jumps back to it, with the
// signal in t_fault_signal.
thread_local sigjmp_buf* t_fault_return = nullptr;
thread_local volatile sig_atomic_t t_fault_signal = 0;

void on_fault(int sig) {
  if (t_fault_return) {
    t_fault_signal = sig;
    siglongjmp(*t_fault_return, 1);
  }
  std::signal(sig, SIG_DFL);  // not ours: the default action, as if no handler had been installed
  std::raise(sig);
}

// SIGILL, SIGSEGV and SIGBUS go to on_fault while this lives; the previous handlers come back after.
class FaultHandlers {
 public:
  FaultHandlers() {
    struct sigaction ours = {};
    ours.sa_handler = on_fault;
    sigemptyset(&ours.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &ours, &old_[i]);
  }
  ~FaultHandlers() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  FaultHandlers(const FaultHandlers&) = delete;
  FaultHandlers& operator=(const FaultHandlers&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGILL, SIGSEGV, SIGBUS};
  struct sigaction old_[3] = {};
};

// Runs the hardware kernel on this thread (under FaultHandlers); returns 0, or the signal that stopped it.
int run_guarded(float* y, const float* x, bf16_t* xs, const bf16_t* W, int64_t B, int64_t N, int64_t K) {
  sigjmp_buf here;
  t_fault_signal = 0;
  if (sigsetjmp(here, 1) == 0) {
    t_fault_return = &here;
    gemv_tiles<HardwareTiles>(y, x, xs, W, B, N, K, false);
  }
  t_fault_return = nullptr;
  return t_fault_signal;
}

// One problem and the emulator's answer to it.
struct CheckCase {
  int64_t B, N, K;
  std::vector<float> x, expect;
  std::vector<bf16_t> w;
};

std::vector<CheckCase> check_cases() {
  // 3 x 1 slabs with a partial row block and a k tail; 2 x 2 with both; 2 x 2 + 2 x 1, whole blocks.
  const int64_t shapes[][3] = {{1, 50, 100}, {5, 37, 333}, {20, 70, 64}, {40, 64, 96}};
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto uniform = [&] {  // in [-1, 1)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<int64_t>(state >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
  };
  std::vector<CheckCase> cases;
  for (const auto& s : shapes) {
    CheckCase c{s[0], s[1], s[2], std::vector<float>(s[0] * s[2]), std::vector<float>(s[0] * s[1]),
                std::vector<bf16_t>(s[1] * s[2])};
    for (float& v : c.x) v = uniform();
    for (bf16_t& v : c.w) v = f32_to_bf16(uniform());
    std::vector<bf16_t> xs(staged_x_elems(c.B, c.K));
    gemv_tiles<EmulatedTiles>(c.expect.data(), c.x.data(), xs.data(), c.w.data(), c.B, c.N, c.K, false);
    cases.push_back(std::move(c));
  }
  return cases;
}

// Every case `repeats` times on this thread's tiles: "" when all equal the emulator bit for bit, else why not.
std::string check_on_this_thread(const std::vector<CheckCase>& cases, int repeats) {
  std::vector<float> y;
  std::vector<bf16_t> xs;
  for (int rep = 0; rep < repeats; ++rep)
    for (const CheckCase& c : cases) {
      y.assign(c.B * c.N, 0.0f);
      xs.assign(staged_x_elems(c.B, c.K), 0);
      const std::string shape = cat(c.B, "x", c.N, "x", c.K);
      if (const int sig = run_guarded(y.data(), c.x.data(), xs.data(), c.w.data(), c.B, c.N, c.K); sig != 0)
        return cat("the tile kernel raised ", strsignal(sig), " on ", shape);
      int64_t differ = 0;
      float worst = 0;
      for (size_t i = 0; i < y.size(); ++i)
        if (std::memcmp(&y[i], &c.expect[i], sizeof(float)) != 0) {
          ++differ;
          worst = std::max(worst, std::fabs(y[i] - c.expect[i]));
        }
      if (differ > 0)
        return cat(differ, " of ", y.size(), " results of ", shape, " differ from the emulator's (largest by ", worst,
                   ")", rep > 0 ? cat(" on run ", rep + 1, ": the tile state did not survive") : "");
    }
  return "";
}

// On this thread, then on twice as many threads as cores at once, each running every case a few times: a
// thread preempted between its tile instructions must find its tiles as it left them (some virtual machines
// are reported to lose them).
TileSelfCheck run_self_check() {
  const std::vector<CheckCase> cases = check_cases();
  const FaultHandlers handlers;
  TileSelfCheck r;
  r.failure = check_on_this_thread(cases, 1);
  if (!r.failure.empty()) return r;
  const int threads = 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> failures(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { failures[t] = check_on_this_thread(cases, 4); });
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t)
    if (!failures[t].empty()) {
      r.failure = cat(failures[t], " (thread ", t + 1, " of ", threads, " running at once)");
      return r;
    }
  r.passed = true;
  return r;
}

std::atomic<bool>& emulated_for_tests() {
  static std::atomic<bool> on{false};
  return on;
}

}  // namespace

int64_t staged_x_elems(int64_t B, int64_t K) { return ceil_div(B, kTileRows) * kTileRows * ceil_div(K, kTileK) * kTileK; }

void gemv_tiles_hardware(float* y, const float* x, bf16_t* x_staged, const bf16_t* W, int64_t B, int64_t N, int64_t K) {
  gemv_tiles<HardwareTiles>(y, x, x_staged, W, B, N, K, true);
}

void gemv_tiles_emulated(float* y, const float* x, bf16_t* x_staged, const bf16_t* W, int64_t B, int64_t N, int64_t K) {
  gemv_tiles<EmulatedTiles>(y, x, x_staged, W, B, N, K, true);
}

TileSelfCheck check_tiles_now() { return run_self_check(); }

const TileSelfCheck& tile_self_check() {
  static const TileSelfCheck result = [] {
    TileSelfCheck r = run_self_check();
    if (!r.passed)
      std::fprintf(stderr,
                   "[cpu] amx: the tile GEMV failed its self-check (%s): the rollout's bf16 GEMV runs on AVX-512 "
                   "BF16 dot products instead in this process (oneDNN's AMX GEMMs are not affected)\n",
                   r.failure.c_str());
    return r;
  }();
  return result;
}

std::string tiles_unavailable_reason() {
  const IsaDecision& d = isa_decision();
  if (isa() < Isa::Amx) {
    if (d.cpu_level >= Isa::Amx)
      return cat("this process runs at ", isa_name(isa()), d.cap.empty() ? " (lowered by a test)" : " (GRPO_ISA=" + d.cap + ")");
    if (!d.cpu.amx_refusal.empty()) return "Linux refused the tile state: " + d.cpu.amx_refusal;
    return cat("this CPU (", d.cpu.model, ") has no AMX-TILE + AMX-BF16");
  }
  const TileSelfCheck& check = tile_self_check();
  return check.passed ? "" : "the tile GEMV failed its self-check: " + check.failure;
}

void set_emulated_tiles_for_tests(bool on) { emulated_for_tests().store(on, std::memory_order_relaxed); }
bool emulated_tiles_for_tests() { return emulated_for_tests().load(std::memory_order_relaxed); }

}  // namespace grpo::ops::cpu_tiles
