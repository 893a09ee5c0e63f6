// Profiler: GRPO_PROFILE("name") scopes around kernels and phases. Off by default and then costs one
// relaxed atomic load per scope. When on, each thread records (name, start, duration) events; the
// profiler writes a Chrome trace (chrome://tracing, Perfetto) and a per-scope summary table.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace grpo {

struct ScopeSummary {
  std::string name;
  uint64_t calls = 0;
  double total_ms = 0;
};

class Profiler {
 public:
  static bool enabled() { return enabled_.load(std::memory_order_relaxed); }
  static void enable(bool on);
  static void clear();
  static int64_t now_us();
  static void record(const char* name, int64_t start_us, int64_t dur_us);
  // Writes every recorded event as a Chrome trace JSON file (atomically).
  static void write_chrome_trace(const std::string& path);
  // Per-scope totals, sorted by total time, descending.
  static std::vector<ScopeSummary> summary();
  static std::string summary_table();

 private:
  static std::atomic<bool> enabled_;
};

class ProfileScope {
 public:
  explicit ProfileScope(const char* name) : name_(Profiler::enabled() ? name : nullptr) {
    if (name_) start_ = Profiler::now_us();
  }
  ~ProfileScope() {
    if (name_) Profiler::record(name_, start_, Profiler::now_us() - start_);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  const char* name_;
  int64_t start_ = 0;
};

}  // namespace grpo

#define GRPO_PROFILE_CAT2(a, b) a##b
#define GRPO_PROFILE_CAT(a, b) GRPO_PROFILE_CAT2(a, b)
// name must be a string literal (or outlive the profiler's events).
#define GRPO_PROFILE(name) ::grpo::ProfileScope GRPO_PROFILE_CAT(grpo_profile_scope_, __LINE__)(name)
