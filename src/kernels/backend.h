// Compute backends and the one instruction-set decision of the CPU backend.
//
// The CPU's features are detected once per process; the decision (isa()) is the highest level the CPU
// supports, capped by the environment variable GRPO_ISA=avx2|avx512|avx512_bf16|amx (never raised above
// the CPU), and every CPU kernel family takes its path from it: 8-lane AVX2+FMA or 16-lane AVX-512 bodies,
// native or emulated bf16 GEMM, vcvtneps2bf16 or integer bf16 rounding, the rollout's bf16 GEMV on AMX
// tiles. oneDNN is capped at the same level before its first primitive. Native bf16 GEMM at avx512_bf16
// needs more than the AVX-512 BF16 feature: its dot products must also be fast on this core (measured
// once, kernels/cpu/bf16_dot_rate.h), else bf16 GEMMs are emulated through the f32 GEMM there; at amx they
// are native (oneDNN's AMX kernels). The amx level also needs Linux to grant this process the tile state
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once in detect_cpu); a refusal leaves avx512_bf16, with the reason
// in the start-up line. A CPU without AVX2+FMA gets an error naming what it lacks before any AVX
// instruction runs. The decision is logged once on stderr ("[cpu] avx2: using ..."). Tests lower it with
// set_isa_for_tests to run the AVX2 paths of every family on an AVX-512 machine, and set_bf16_gemm_for_tests
// to run both bf16 GEMM paths where the CPU has AVX-512 BF16.
// The CUDA backend (kernels/cuda) reports whether it was built and a device is present. Callers ask, they
// never #ifdef.
#pragma once
#include <optional>
#include <string>

namespace grpo {

enum class Backend { Cpu, Cuda };

bool cuda_available();

// The levels the CPU kernels have bodies for, in increasing order.
enum class Isa : int {
  Avx2 = 0,        // AVX2 + FMA: 8-lane kernels; bf16 GEMM emulated (bf16 -> f32, f32 GEMM)
  Avx512 = 1,      // AVX-512 F/BW/VL/DQ: 16-lane kernels; bf16 GEMM emulated
  Avx512Bf16 = 2,  // + AVX-512 BF16: vcvtneps2bf16, bf16 dot products; bf16 GEMM native in oneDNN where
                   //   those dot products are fast (IsaDecision::bf16_gemm_native)
  Amx = 3,         // + AMX-TILE and AMX-BF16 with the tile state granted by Linux: bf16 GEMM native (oneDNN's
                   //   AMX kernels), the rollout's bf16 GEMV on tiles (kernels/cpu/gemv_amx.cpp)
};
const char* isa_name(Isa isa);  // "avx2", "avx512", "avx512_bf16", "amx" (the GRPO_ISA values)

// What the CPU reports (cpuid through the compiler's run-time checks, which include OS support).
struct CpuInfo {
  std::string model;  // the brand string, e.g. "AMD EPYC 9R14 96-Core Processor"
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512_bf16 = false;
  bool amx_tile = false, amx_bf16 = false;  // cpuid leaf 7: the tile unit and its bf16 dot products
  // Where the CPU has both AMX features: whether Linux granted this process the tile state
  // (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), else why not.
  bool amx_permitted = false;
  std::string amx_refusal;
  // Measured where the CPU has AVX-512 F and BF16 (else 0): flops/s of bf16 dot products over those of f32
  // FMAs on one core, ~2 on AMD Zen 4 / Zen 5, ~0.5 on the Intel Xeon measured here (AMX not exposed).
  double bf16_dot_speed = 0;
};
CpuInfo detect_cpu();

// Native bf16 GEMM (oneDNN's bf16 kernels) needs bf16 dot products at least this fast (CpuInfo::bf16_dot_speed):
// at 0.5 the f32 GEMM on widened operands was 1.45x faster than oneDNN's native bf16 GEMM (2048^3, 2 threads).
constexpr double kNativeBf16GemmMinSpeed = 0.75;

struct IsaDecision {
  Isa isa = Isa::Avx2;        // what every kernel family uses
  Isa cpu_level = Isa::Avx2;  // the highest level the CPU supports
  bool bf16_gemm_native = false;  // at amx, or at avx512_bf16 with fast bf16 dot products; else emulated
  std::string cap;            // the value of GRPO_ISA ("" when unset)
  CpuInfo cpu;
};
// The decision for `cpu` under GRPO_ISA = `grpo_isa` (null or "": no cap). Throws grpo::Error when the CPU
// lacks AVX2 or FMA (naming what is missing) or when grpo_isa is not one of the four names.
IsaDecision decide_isa(const CpuInfo& cpu, const char* grpo_isa);
// The start-up line: the level, the CPU model, what each kernel family uses and why (cap, missing features).
std::string isa_report(const IsaDecision& d);

// This process's decision, made on the first call (detect_cpu + GRPO_ISA), which also caps oneDNN (the
// command-line tool prints isa_report once per job). Throws as decide_isa (again on every call, so no
// kernel runs on such a CPU).
const IsaDecision& isa_decision();
// The level the kernels use now: isa_decision().isa, or lower while set_isa_for_tests is in effect.
Isa isa();
// True when `level` can run in this process (at most isa_decision().isa).
bool isa_available(Isa level);
// Tests: run every kernel family at `level` (an error if !isa_available(level)); nullopt restores the
// decision. oneDNN keeps its start-up cap, but bf16 GEMMs below Avx512Bf16 take the emulated path.
void set_isa_for_tests(std::optional<Isa> level);
// Tests: bf16 GEMMs native (true: an error below avx512_bf16) or emulated (false) whatever the decision
// says; nullopt restores the decision. At amx, oneDNN's native bf16 GEMMs use the tiles.
void set_bf16_gemm_for_tests(std::optional<bool> native);

// Answers of the decision, for kernels that branch on one feature.
bool cpu_has_avx512();       // isa() >= Isa::Avx512
bool cpu_has_avx512_bf16();  // isa() >= Isa::Avx512Bf16
bool cpu_has_amx();          // isa() >= Isa::Amx (the tile state is granted to this process)
bool gemm_bf16_native();     // bf16 GEMM through oneDNN's bf16 kernels (else emulated through f32): at
                             // avx512_bf16 or amx when the decision or set_bf16_gemm_for_tests says so

}  // namespace grpo
