// Compute backends. The CPU backend always exists; the CUDA backend (kernels/cuda) reports whether it
// was built and a device is present. Callers ask, they never #ifdef.
#pragma once
#include <string>

namespace grpo {

enum class Backend { Cpu, Cuda };

bool cuda_available();
std::string cpu_features();  // e.g. "avx512f avx512bw avx512_bf16 avx2 fma"
bool cpu_has_avx512_bf16();
bool cpu_has_avx512();

}  // namespace grpo
