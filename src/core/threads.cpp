// Implementation of thread control (see threads.h).
#include "core/threads.h"

#include <omp.h>

#include <cstdlib>

namespace grpo {
int num_threads() { return omp_get_max_threads(); }
void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}
}  // namespace grpo
