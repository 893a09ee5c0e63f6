// Sizes as people read them: bytes in GiB, MiB or KiB (binary units), for logs, plans and errors.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace grpo {

// "2.50 GiB", "12.3 MiB", "0.5 KiB": two decimals for GiB (machine-sized budgets), one below.
inline std::string human_bytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
  else if (bytes >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1 << 10));
  return buf;
}

}  // namespace grpo
