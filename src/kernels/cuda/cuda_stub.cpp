// Built when grpo.cpp has no CUDA backend: reports that none is available. The CUDA backend will
// replace this file with kernels behind the same interface (kernels/ops.h).
#include "kernels/backend.h"

namespace grpo {
bool cuda_available() { return false; }
}  // namespace grpo
