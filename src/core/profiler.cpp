// Implementation of the profiler (see profiler.h): per-thread event lists merged on demand.
#include "core/profiler.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "core/files.h"

namespace grpo {

std::atomic<bool> Profiler::enabled_{false};

namespace {
struct Event {
  const char* name;
  int64_t start_us, dur_us;
};
struct ThreadEvents {
  int tid;
  std::vector<Event> events;
};
std::mutex g_mu;
std::vector<std::shared_ptr<ThreadEvents>> g_threads;

ThreadEvents& local_events() {
  thread_local std::shared_ptr<ThreadEvents> t = [] {
    auto p = std::make_shared<ThreadEvents>();
    std::lock_guard<std::mutex> lock(g_mu);
    p->tid = static_cast<int>(g_threads.size());
    g_threads.push_back(p);
    return p;
  }();
  return *t;
}
const auto g_epoch = std::chrono::steady_clock::now();
}  // namespace

void Profiler::enable(bool on) { enabled_.store(on, std::memory_order_relaxed); }

void Profiler::clear() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& t : g_threads) t->events.clear();
}

int64_t Profiler::now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - g_epoch)
      .count();
}

void Profiler::record(const char* name, int64_t start_us, int64_t dur_us) {
  local_events().events.push_back({name, start_us, dur_us});
}

void Profiler::write_chrome_trace(const std::string& path) {
  std::ostringstream os;
  os << "{\"traceEvents\":[";
  bool first = true;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& t : g_threads)
      for (const Event& e : t->events) {
        os << (first ? "\n" : ",\n") << "{\"name\":\"" << e.name << "\",\"ph\":\"X\",\"pid\":1,\"tid\":" << t->tid
           << ",\"ts\":" << e.start_us << ",\"dur\":" << e.dur_us << "}";
        first = false;
      }
  }
  os << "\n],\"displayTimeUnit\":\"ms\"}\n";
  write_file_atomic(path, os.str());
}

std::vector<ScopeSummary> Profiler::summary() {
  std::map<std::string, ScopeSummary> m;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& t : g_threads)
      for (const Event& e : t->events) {
        ScopeSummary& s = m[e.name];
        s.name = e.name;
        s.calls++;
        s.total_ms += e.dur_us / 1000.0;
      }
  }
  std::vector<ScopeSummary> out;
  for (auto& [k, v] : m) out.push_back(v);
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.total_ms > b.total_ms; });
  return out;
}

std::string Profiler::summary_table() {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%-40s %10s %12s %12s\n", "scope", "calls", "total ms", "mean ms");
  os << line;
  for (const auto& s : summary()) {
    std::snprintf(line, sizeof line, "%-40s %10llu %12.3f %12.4f\n", s.name.c_str(),
                  static_cast<unsigned long long>(s.calls), s.total_ms, s.total_ms / std::max<uint64_t>(1, s.calls));
    os << line;
  }
  return os.str();
}

}  // namespace grpo
