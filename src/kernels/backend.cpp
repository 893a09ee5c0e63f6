// CPU feature detection (run-time dispatch of AVX-512 / AVX2 kernels) and backend availability.
#include "kernels/backend.h"

namespace grpo {

bool cpu_has_avx512() {
  static const bool v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl");
  return v;
}

bool cpu_has_avx512_bf16() {
  static const bool v = cpu_has_avx512() && __builtin_cpu_supports("avx512bf16");
  return v;
}

std::string cpu_features() {
  std::string s;
  if (cpu_has_avx512()) s += "avx512 ";
  if (cpu_has_avx512_bf16()) s += "avx512_bf16 ";
  if (__builtin_cpu_supports("avx2")) s += "avx2 ";
  if (__builtin_cpu_supports("fma")) s += "fma ";
  if (!s.empty()) s.pop_back();
  return s;
}

}  // namespace grpo
