// The backend-independent part of Communicator, the single-process backend and the choice of backend
// (see communicator.h).
#include "comm/communicator.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "comm/op_state.h"
#include "core/error.h"
#ifdef GRPO_HAVE_MPI
#include "comm/mpi/mpi_communicator.h"
#endif

namespace grpo::comm {

namespace {

double env_timeout() {
  const char* v = std::getenv("GRPO_COMM_TIMEOUT_S");
  if (!v || !*v) return 600.0;
  char* end = nullptr;
  const double t = std::strtod(v, &end);
  GRPO_CHECK(end && *end == '\0' && t > 0, "[comm] GRPO_COMM_TIMEOUT_S=\"", v, "\": expected a number of seconds > 0");
  return t;
}

int64_t nanos(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

}  // namespace

Wire parse_wire(std::string_view name) {
  if (auto w = kWireNames.find(name)) return *w;
  fail("[comm] reduce dtype \"", name, "\": expected ", kWireNames.listing());
}

std::string_view wire_name(Wire w) { return kWireNames.name(w); }
int64_t wire_bytes(Wire w) { return w == Wire::F32 ? 4 : 2; }

Communicator::Communicator() : timeout_s_(env_timeout()) {}

void Communicator::set_timeout(double seconds) {
  GRPO_CHECK(seconds > 0, "[comm] timeout must be > 0 seconds, got ", seconds);
  timeout_s_ = seconds;
}

CommStats Communicator::stats() const {
  CommStats s;
  s.bytes_sent = bytes_sent_.load();
  s.operations = operations_.load();
  s.blocked_s = blocked_ns_.load() * 1e-9;
  s.busy_s = busy_ns_.load() * 1e-9;
  return s;
}

void Communicator::reset_stats() {
  bytes_sent_ = 0;
  operations_ = 0;
  blocked_ns_ = 0;
  busy_ns_ = 0;
}

void Communicator::count_operation(int64_t bytes_sent, double busy_s) {
  bytes_sent_ += bytes_sent;
  operations_ += 1;
  busy_ns_ += nanos(busy_s);
}

void Communicator::wait(Request& r) {
  if (!r.state_) return;
  const auto t0 = std::chrono::steady_clock::now();
  detail::OpState& op = *r.state_;
  std::string error;
  {
    std::unique_lock<std::mutex> lock(op.mu);
    // The backend enforces the timeout; this backstop only matters if the backend itself is stuck.
    const auto backstop = std::chrono::duration<double>(timeout_s_ + 60.0);
    if (!op.cv.wait_for(lock, backstop, [&] { return op.done; }))
      error = cat("[comm] rank ", rank(), "/", size(), ": ", op.what, " did not complete within ", timeout_s_ + 60.0,
                  " s (the communication backend is stuck)");
    else
      error = op.error;
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  blocked_ns_ += nanos(waited);
  {
    std::lock_guard<std::mutex> lock(waits_mu_);
    // A caller that never takes them (sft) keeps the newest records only: bounded memory, and an interval
    // between two takes holds far fewer waits than this.
    if (waits_.size() >= kMaxWaitRecords) {
      waits_.erase(waits_.begin(), waits_.begin() + kMaxWaitRecords / 2);
      wait_labels_.erase(wait_labels_.begin(), wait_labels_.begin() + kMaxWaitRecords / 2);
    }
    waits_.push_back({op.ordinal, waited});
    wait_labels_.push_back(label_.load());
  }
  r.state_.reset();
  if (!error.empty()) throw Error(error);
}

void Communicator::all_reduce_sum(double* x, int64_t n) {
  GRPO_CHECK(n >= 0, "[comm] all_reduce_sum of ", n, " values");
  const std::vector<std::string> all =
      all_gather_bytes(std::string_view(reinterpret_cast<const char*>(x), static_cast<size_t>(n) * sizeof(double)));
  for (int64_t i = 0; i < n; ++i) x[i] = 0;
  for (const std::string& b : all) {
    GRPO_CHECK(b.size() == static_cast<size_t>(n) * sizeof(double), "[comm] all_reduce_sum: a rank sent ", b.size(),
               " bytes, expected ", n * sizeof(double), " (ranks disagree on the number of values)");
    const double* v = reinterpret_cast<const double*>(b.data());
    for (int64_t i = 0; i < n; ++i) x[i] += v[i];
  }
}

double Communicator::all_reduce_sum(double x) {
  all_reduce_sum(&x, 1);
  return x;
}

int64_t Communicator::all_reduce_max(int64_t x) {
  int64_t m = x;
  for (const std::string& b : all_gather_bytes(std::string_view(reinterpret_cast<const char*>(&x), sizeof x))) {
    GRPO_CHECK(b.size() == sizeof(int64_t), "[comm] all_reduce_max: a rank sent ", b.size(), " bytes");
    int64_t v;
    std::memcpy(&v, b.data(), sizeof v);
    m = std::max(m, v);
  }
  return m;
}

void Communicator::check_range(const char* op, int64_t lo, int64_t hi, const Partition& part) const {
  GRPO_CHECK(part.parts() == size(), "[comm] ", op, ": partition into ", part.parts(), " shards for ", size(), " ranks");
  GRPO_CHECK(0 <= lo && lo <= hi && hi <= part.total(), "[comm] ", op, ": range [", lo, ", ", hi,
             ") outside the partitioned [0, ", part.total(), ")");
}

void Communicator::check_offsets(const char* op, const std::vector<int64_t>& off) const {
  GRPO_CHECK(static_cast<int>(off.size()) == size() + 1, "[comm] ", op, ": ", off.size(), " byte offsets for ",
             size(), " ranks (expected ", size() + 1, ")");
  for (size_t r = 0; r + 1 < off.size(); ++r)
    GRPO_CHECK(off[r] >= 0 && off[r] <= off[r + 1], "[comm] ", op, ": byte offsets must be >= 0 and non-decreasing");
}

std::shared_ptr<detail::OpState> Communicator::new_op() {
  auto op = std::make_shared<detail::OpState>();
  op->ordinal = ordinals_++;
  return op;
}

void Communicator::forget_waits() {
  std::lock_guard<std::mutex> lock(waits_mu_);
  waits_.clear();
  wait_labels_.clear();
}

const char* Communicator::label_waits(const char* label) { return label_.exchange(label ? label : ""); }

std::map<std::string, double> Communicator::take_critical_path_waits() {
  std::vector<Wait> mine;
  std::vector<const char*> labels;
  {
    std::lock_guard<std::mutex> lock(waits_mu_);
    mine.swap(waits_);
    labels.swap(wait_labels_);
  }
  if (size() == 1) return {};
  const std::vector<std::string> all =
      all_gather_bytes(std::string_view(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(Wait)));
  forget_waits();  // the exchange itself is not part of the next interval
  // ordinal -> [least of the ranks' waits on it, ranks that waited]; an operation some rank did not wait for
  // was not on that rank's critical path, so it counts 0.
  std::map<uint64_t, std::pair<double, int>> least;
  for (const std::string& b : all) {
    GRPO_CHECK(b.size() % sizeof(Wait) == 0, "[comm] take_critical_path_waits: a rank sent ", b.size(), " bytes");
    std::map<uint64_t, double> per_op;
    for (size_t i = 0; i < b.size() / sizeof(Wait); ++i) {
      Wait w;
      std::memcpy(&w, b.data() + i * sizeof(Wait), sizeof w);
      per_op[w.ordinal] += w.seconds;
    }
    for (const auto& [ordinal, s] : per_op) {
      auto [it, fresh] = least.try_emplace(ordinal, s, 0);
      if (!fresh) it->second.first = std::min(it->second.first, s);
      it->second.second += 1;
    }
  }
  // Each operation under the label of this rank's (last) wait for it.
  std::map<uint64_t, const char*> label_of;
  for (size_t i = 0; i < mine.size(); ++i) label_of[mine[i].ordinal] = labels[i];
  std::map<std::string, double> total;
  for (const auto& [ordinal, e] : least)
    if (e.second == size()) total[label_of.at(ordinal)] += e.first;
  return total;
}

// ---------------------------------------------------------------- LocalCommunicator

std::string LocalCommunicator::host() const {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

Request LocalCommunicator::reduce_scatter(const float* full, int64_t lo, int64_t hi, const Partition& part,
                                          float* shard, Wire, bool accumulate) {
  check_range("reduce_scatter", lo, hi, part);
  const int64_t base = part.begin(0);
  for (int64_t i = lo; i < hi; ++i) shard[i - base] = accumulate ? shard[i - base] + full[i] : full[i];
  count_operation(0, 0);
  return {};
}

Request LocalCommunicator::all_gather(void*, std::vector<int64_t> byte_offsets) {
  check_offsets("all_gather", byte_offsets);
  count_operation(0, 0);
  return {};
}

Request LocalCommunicator::gather(const void* mine, void* out, std::vector<int64_t> off, int root) {
  check_offsets("gather", off);
  GRPO_CHECK(root == 0, "[comm] gather to rank ", root, " of 1");
  if (off[1] > off[0] && out != mine) std::memmove(static_cast<char*>(out) + off[0], mine, off[1] - off[0]);
  count_operation(0, 0);
  return {};
}

std::vector<std::string> LocalCommunicator::all_gather_bytes(std::string_view mine) {
  count_operation(0, 0);
  return {std::string(mine)};
}

void LocalCommunicator::broadcast(void*, int64_t bytes, int root) {
  GRPO_CHECK(root == 0 && bytes >= 0, "[comm] broadcast of ", bytes, " bytes from rank ", root, " of 1");
  count_operation(0, 0);
}

// ---------------------------------------------------------------- the backend choice

namespace {
// Open MPI, MPICH / Slurm (PMI), MVAPICH.
int64_t launcher_env(const char* const (&vars)[3], int64_t fallback) {
  for (const char* var : vars) {
    const char* v = std::getenv(var);
    if (v && *v) return std::atoll(v);
  }
  return fallback;
}
int64_t launcher_world_size() {
  return launcher_env({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}, 1);
}
}  // namespace

bool launched_distributed() { return launcher_world_size() > 1; }
bool launched_by_mpi() { return launcher_env({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}, 0) > 0; }
int launch_rank() {
  return static_cast<int>(launcher_env({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"}, 0));
}

Communicator& world() {
  static std::unique_ptr<Communicator> w = []() -> std::unique_ptr<Communicator> {
    if (!launched_distributed()) return std::make_unique<LocalCommunicator>();
#ifdef GRPO_HAVE_MPI
    return make_mpi_communicator();
#else
    fail("[comm] started by an MPI launcher with ", launcher_world_size(),
         " ranks, but this grpo was built without MPI (install libopenmpi-dev, scripts/setup.sh, and rebuild)");
#endif
  }();
  return *w;
}

void exit_now(int status) {
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace grpo::comm
