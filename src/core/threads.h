// Thread control: the number of OpenMP threads kernels use (default: all cores, or OMP_NUM_THREADS).
#pragma once

namespace grpo {
int num_threads();
void set_num_threads(int n);
}  // namespace grpo
