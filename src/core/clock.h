// Wall-clock timing on the monotonic clock: the one helper every phase timer, benchmark and timeout uses.
#pragma once
#include <chrono>

namespace grpo {

using Clock = std::chrono::steady_clock;

// Seconds elapsed since t0.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace grpo
