// Test helper: the instruction-set levels this process can run (what the CPU and GRPO_ISA allow) and a
// scope that runs every kernel family at one of them (grpo::set_isa_for_tests), so that a test checks the
// AVX2 paths on an AVX-512 machine too.
#pragma once
#include <initializer_list>
#include <vector>

#include "kernels/backend.h"

namespace grpo::test {

// Those of `levels` this process can run, in the given order.
inline std::vector<Isa> runnable_isas(std::initializer_list<Isa> levels = {Isa::Amx, Isa::Avx512Bf16, Isa::Avx512,
                                                                          Isa::Avx2}) {
  std::vector<Isa> out;
  for (Isa l : levels)
    if (isa_available(l)) out.push_back(l);
  return out;
}

// Every kernel family runs at `level` for the lifetime of the scope (which must be runnable).
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa level) { set_isa_for_tests(level); }
  ~ScopedIsa() { set_isa_for_tests(std::nullopt); }
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;
};

// bf16 GEMMs native or emulated for the lifetime of the scope (set_bf16_gemm_for_tests).
class ScopedBf16Gemm {
 public:
  explicit ScopedBf16Gemm(bool native) { set_bf16_gemm_for_tests(native); }
  ~ScopedBf16Gemm() { set_bf16_gemm_for_tests(std::nullopt); }
  ScopedBf16Gemm(const ScopedBf16Gemm&) = delete;
  ScopedBf16Gemm& operator=(const ScopedBf16Gemm&) = delete;
};

// The bf16 GEMM paths this process can run at `level`: native (at avx512_bf16 and amx) and emulated.
inline std::vector<bool> runnable_bf16_gemms(Isa level) {
  if (level >= Isa::Avx512Bf16) return {true, false};
  return {false};
}

}  // namespace grpo::test
