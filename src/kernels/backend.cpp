// The CPU instruction-set decision (see backend.h): detection (with Linux's grant of the AMX tile state),
// the GRPO_ISA cap, oneDNN's cap, the start-up line and the tests' override. This file is compiled for
// baseline x86-64, so it runs (and can refuse to go on) on any CPU.
#include <asm/prctl.h>
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>

#include "core/error.h"
#include "kernels/backend.h"
#include "kernels/cpu/bf16_dot_rate.h"

namespace grpo {
namespace {

constexpr Isa kLevels[] = {Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16, Isa::Amx};

std::string brand_string() {
  unsigned regs[12] = {};
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext < 0x80000004u) return "unknown CPU";
  for (unsigned i = 0; i < 3; ++i)
    __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
  char text[49] = {};
  std::memcpy(text, regs, 48);
  std::string s(text);
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "unknown CPU" : s.substr(b, e - b + 1);
}

struct Feature {
  const char* name;
  bool CpuInfo::*has;
};
constexpr Feature kAvx2Features[] = {{"avx2", &CpuInfo::avx2}, {"fma", &CpuInfo::fma}};
constexpr Feature kAvx512Features[] = {{"avx512f", &CpuInfo::avx512f},
                                       {"avx512bw", &CpuInfo::avx512bw},
                                       {"avx512vl", &CpuInfo::avx512vl},
                                       {"avx512dq", &CpuInfo::avx512dq}};
constexpr Feature kBf16Features[] = {{"avx512_bf16", &CpuInfo::avx512_bf16}};
constexpr Feature kAmxFeatures[] = {{"amx_tile", &CpuInfo::amx_tile}, {"amx_bf16", &CpuInfo::amx_bf16}};

template <size_t N>
bool has_all(const CpuInfo& cpu, const Feature (&features)[N]) {
  return std::all_of(features, features + N, [&](const Feature& f) { return cpu.*f.has; });
}

template <size_t N>
void list(std::string& out, const CpuInfo& cpu, const Feature (&features)[N], bool present) {
  for (const Feature& f : features) {
    if (cpu.*f.has != present) continue;
    if (!out.empty()) out += ' ';
    out += f.name;
  }
}

std::string missing_features(const CpuInfo& cpu) {
  std::string s;
  list(s, cpu, kAvx2Features, false);
  list(s, cpu, kAvx512Features, false);
  list(s, cpu, kBf16Features, false);
  list(s, cpu, kAmxFeatures, false);
  return s;
}

std::string present_features(const CpuInfo& cpu) {
  std::string s;
  list(s, cpu, kAvx2Features, true);
  list(s, cpu, kAvx512Features, true);
  list(s, cpu, kBf16Features, true);
  list(s, cpu, kAmxFeatures, true);
  return s;
}

dnnl::cpu_isa onednn_isa(Isa isa) {
  switch (isa) {
    case Isa::Avx2: return dnnl::cpu_isa::avx2;
    case Isa::Avx512: return dnnl::cpu_isa::avx512_core;
    case Isa::Avx512Bf16: return dnnl::cpu_isa::avx512_core_bf16;
    case Isa::Amx: return dnnl::cpu_isa::avx512_core_amx;
  }
  return dnnl::cpu_isa::avx2;
}

const char* onednn_isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512_core";
    case Isa::Avx512Bf16: return "avx512_core_bf16";
    case Isa::Amx: return "avx512_core_amx";
  }
  return "?";
}

// cpuid leaf 7, sub-leaf 0, EDX bits 22 (AMX-BF16) and 24 (AMX-TILE).
void detect_amx(CpuInfo& c) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return;
  c.amx_bf16 = (edx >> 22) & 1u;
  c.amx_tile = (edx >> 24) & 1u;
}

// Linux (5.16 and newer) hands out the 8 KiB tile state only to processes that ask, once per process; the
// grant covers every thread, those started later included. oneDNN asks too, which is harmless.
void request_tile_state(CpuInfo& c) {
  constexpr long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, kXfeatureXtiledata) == 0) {
    c.amx_permitted = true;
    return;
  }
  const int err = errno;
  c.amx_refusal = cat("arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed: ", std::strerror(err),
                      err == EINVAL   ? " (a Linux kernel older than 5.16, or one that does not enable AMX)"
                      : err == ENOSPC ? " (a signal stack of this process is too small for the tile state)"
                                      : "");
}

// Made once; an unusable CPU or GRPO_ISA value is remembered as its message and thrown on every use.
struct ProcessDecision {
  IsaDecision decision;
  std::string error;
};

const ProcessDecision& process_decision() {
  static const ProcessDecision d = [] {
    ProcessDecision p;
    try {
      p.decision = decide_isa(detect_cpu(), std::getenv("GRPO_ISA"));
    } catch (const Error& e) {
      p.error = e.what();
      return p;
    }
    // Before oneDNN's first primitive: its kernels use no instruction the decision excludes.
    const dnnl::status st = dnnl::set_max_cpu_isa(onednn_isa(p.decision.isa));
    if (st != dnnl::status::success)
      std::fprintf(stderr, "[cpu] warning: oneDNN's instruction set could not be capped at %s (status %d)\n",
                   isa_name(p.decision.isa), static_cast<int>(st));
    return p;
  }();
  return d;
}

std::atomic<int>& test_level() {
  static std::atomic<int> level{-1};
  return level;
}

std::atomic<int>& test_bf16_gemm() {  // -1: the decision's; 0 emulated; 1 native
  static std::atomic<int> native{-1};
  return native;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Bf16: return "avx512_bf16";
    case Isa::Amx: return "amx";
  }
  return "?";
}

CpuInfo detect_cpu() {
  __builtin_cpu_init();
  CpuInfo c;
  c.model = brand_string();
  c.avx2 = __builtin_cpu_supports("avx2");
  c.fma = __builtin_cpu_supports("fma");
  c.avx512f = __builtin_cpu_supports("avx512f");
  c.avx512bw = __builtin_cpu_supports("avx512bw");
  c.avx512vl = __builtin_cpu_supports("avx512vl");
  c.avx512dq = __builtin_cpu_supports("avx512dq");
  c.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  if (has_all(c, kAvx512Features) && c.avx512_bf16) c.bf16_dot_speed = cpu::bf16_dot_flops_vs_fma();
  detect_amx(c);
  if (has_all(c, kAmxFeatures)) request_tile_state(c);
  return c;
}

IsaDecision decide_isa(const CpuInfo& cpu, const char* grpo_isa) {
  IsaDecision d;
  d.cpu = cpu;
  d.cap = grpo_isa ? grpo_isa : "";
  if (!has_all(cpu, kAvx2Features)) {
    std::string lacks;
    list(lacks, cpu, kAvx2Features, false);
    fail("[cpu] this CPU (", cpu.model, ") lacks ", lacks,
         ": grpo.cpp needs AVX2 and FMA (x86-64-v3: Intel Haswell, AMD Excavator / Zen or newer)");
  }
  d.cpu_level = !has_all(cpu, kAvx512Features)                  ? Isa::Avx2
                : !has_all(cpu, kBf16Features)                  ? Isa::Avx512
                : !has_all(cpu, kAmxFeatures) || !cpu.amx_permitted ? Isa::Avx512Bf16
                                                                : Isa::Amx;
  d.isa = d.cpu_level;
  if (!d.cap.empty()) {
    const Isa* cap = std::find_if(std::begin(kLevels), std::end(kLevels),
                                  [&](Isa l) { return d.cap == isa_name(l); });
    GRPO_CHECK(cap != std::end(kLevels), "[cpu] GRPO_ISA=\"", d.cap,
               "\": expected avx2, avx512, avx512_bf16 or amx");
    d.isa = std::min(d.cpu_level, *cap);
  }
  // At amx the tiles multiply bf16 whatever the speed of vdpbf16ps (which only the avx512_bf16 GEMMs use).
  d.bf16_gemm_native =
      d.isa >= Isa::Amx || (d.isa >= Isa::Avx512Bf16 && cpu.bf16_dot_speed >= kNativeBf16GemmMinSpeed);
  return d;
}

std::string isa_report(const IsaDecision& d) {
  const bool wide = d.isa >= Isa::Avx512, bf16 = d.isa >= Isa::Avx512Bf16, amx = d.isa >= Isa::Amx;
  char speed[96] = "";
  if (bf16 && !amx)
    std::snprintf(speed, sizeof speed, "; this core's bf16 dot products give %.2fx the f32 FMA flops",
                  d.cpu.bf16_dot_speed);
  const std::string bf16_gemm = amx                  ? std::string("native (AMX tiles)")
                                : d.bf16_gemm_native ? cat("native (bf16 dot products", speed, ")")
                                                     : cat("emulated (bf16 operands widened to f32, f32 GEMM", speed, ")");
  std::string s = cat("[cpu] ", isa_name(d.isa), ": using ", wide ? "AVX-512 16-lane" : "AVX2+FMA 8-lane",
                      " kernels, GEMM oneDNN f32 + bf16 ", bf16_gemm,
                      amx ? ", rollout bf16 GEMV on AMX tiles (checked against their emulator at first use)" : "",
                      ", f32->bf16 ", bf16 ? "vcvtneps2bf16" : "AVX2 integer rounding", ", oneDNN capped at ",
                      onednn_isa_name(d.isa), "; CPU ", d.cpu.model, " (", present_features(d.cpu));
  const std::string missing = missing_features(d.cpu);
  if (!missing.empty()) s += "; no " + missing;
  if (!d.cpu.amx_refusal.empty()) s += "; AMX not used: Linux refused the tile state, " + d.cpu.amx_refusal;
  s += ")";
  if (!d.cap.empty())
    s += d.isa < d.cpu_level ? cat(", capped by GRPO_ISA=", d.cap)
                             : cat(", GRPO_ISA=", d.cap, " (at or above the CPU's level: no effect)");
  return s;
}

const IsaDecision& isa_decision() {
  const ProcessDecision& p = process_decision();
  if (!p.error.empty()) throw Error(p.error);
  return p.decision;
}

Isa isa() {
  const Isa decided = isa_decision().isa;
  const int forced = test_level().load(std::memory_order_relaxed);
  return forced >= 0 ? static_cast<Isa>(forced) : decided;
}

bool isa_available(Isa level) { return level <= isa_decision().isa; }

void set_isa_for_tests(std::optional<Isa> level) {
  if (level)
    GRPO_CHECK(isa_available(*level), "[cpu] set_isa_for_tests(", isa_name(*level), "): this process runs at most ",
               isa_name(isa_decision().isa), " (the CPU or GRPO_ISA)");
  test_level().store(level ? static_cast<int>(*level) : -1, std::memory_order_relaxed);
}

void set_bf16_gemm_for_tests(std::optional<bool> native) {
  if (native && *native)
    GRPO_CHECK(isa() >= Isa::Avx512Bf16, "[cpu] set_bf16_gemm_for_tests(native): this process runs at ",
               isa_name(isa()), ", native bf16 GEMM needs avx512_bf16");
  test_bf16_gemm().store(native ? static_cast<int>(*native) : -1, std::memory_order_relaxed);
}

bool cpu_has_avx512() { return isa() >= Isa::Avx512; }
bool cpu_has_avx512_bf16() { return isa() >= Isa::Avx512Bf16; }
bool cpu_has_amx() { return isa() >= Isa::Amx; }
bool gemm_bf16_native() {
  if (isa() < Isa::Avx512Bf16) return false;
  const int forced = test_bf16_gemm().load(std::memory_order_relaxed);
  return forced >= 0 ? forced == 1 : isa_decision().bf16_gemm_native;
}

}  // namespace grpo
