// The communication layer: the collectives the engine uses, behind one interface, so that the trainer
// does not know whether it runs alone (LocalCommunicator), over MPI (comm/mpi/) or, later, over NCCL.
//
// - Float collectives on flat ranges of the parameter layout (comm/partition.h): reduce_scatter (the
//   gradient buckets of ZeRO; the wire carries fp32 or bf16, the sum is always fp32 and in rank order,
//   so a result never depends on timing or on which rank owns a shard), all_gather and gather of byte
//   ranges (updated parameter shards in the rollout dtype, checkpoints). These are non-blocking: they return a
//   Request and complete in wait(), so that the gradient reduction of one bucket overlaps the backward of
//   the next layers.
// - Small blocking collectives for metrics, samples and control: variable-size byte blobs gathered to
//   every rank, rank-order sums of doubles, broadcast, barrier.
//
// Every rank starts the same operations in the same order (as with MPI collectives); operations complete
// in that order. A rank that does not arrive (dead, stopped, on another code path) makes the others'
// operations fail after timeout() seconds with an Error that says so: nothing waits forever.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "comm/partition.h"
#include "core/names.h"

namespace grpo::comm {

// Element type of gradients on the wire. BF16 halves the bytes; each rank's contribution is rounded to
// bf16 (round to nearest even) and the sum is accumulated in fp32.
enum class Wire : uint8_t { F32, BF16 };
// verl's reduce_dtype spellings (fsdp_config.mixed_precision.reduce_dtype).
inline constexpr auto kWireNames = name_table<Wire>({{Wire::F32, "fp32"}, {Wire::BF16, "bf16"}});
Wire parse_wire(std::string_view name);
std::string_view wire_name(Wire w);
int64_t wire_bytes(Wire w);

struct CommStats {
  int64_t bytes_sent = 0;   // payload this rank handed to other ranks
  int64_t operations = 0;   // operations started
  double blocked_s = 0;     // time the calling thread spent waiting for operations to complete
  double busy_s = 0;        // time an operation was in flight (overlapped or not)
};

namespace detail {
struct OpState;  // completion flag + error of one operation, shared with the backend
}

// A started operation. Default-constructed (or already waited for): nothing pending.
class Request {
 public:
  Request() = default;
  explicit Request(std::shared_ptr<detail::OpState> s) : state_(std::move(s)) {}
  bool pending() const { return state_ != nullptr; }

 private:
  friend class Communicator;
  std::shared_ptr<detail::OpState> state_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "local" | "mpi"
  virtual std::string host() const = 0;     // the machine this rank runs on (ranks per node)

  // ---- non-blocking; the buffers must stay valid and untouched by the caller until wait().
  // Every rank contributes full[lo, hi) (indices of the flat layout that `part` splits). Rank r receives
  // the sum over ranks of the piece of [lo, hi) inside its shard: shard[i - part.begin(r)] = (accumulate ?
  // shard[..] : 0) + (c_0[i] + c_1[i] + ... + c_{N-1}[i]) for i in that piece, c_k the contribution of rank k
  // rounded to `wire`, summed left to right in fp32.
  virtual Request reduce_scatter(const float* full, int64_t lo, int64_t hi, const Partition& part, float* shard,
                                 Wire wire, bool accumulate) = 0;
  // In place: rank r owns bytes [byte_offsets[r], byte_offsets[r + 1]) of `data` (N + 1 offsets); on
  // completion every rank holds every rank's bytes.
  virtual Request all_gather(void* data, std::vector<int64_t> byte_offsets) = 0;
  // Rank r's bytes `mine` (byte_offsets[r + 1] - byte_offsets[r] of them) land at out + byte_offsets[r] on
  // `root`; `out` is only used on root.
  virtual Request gather(const void* mine, void* out, std::vector<int64_t> byte_offsets, int root) = 0;
  // Blocks until `r` completed (no-op when nothing is pending). Throws Error when it failed or timed out.
  void wait(Request& r);

  // ---- blocking
  // Every rank's blob, in rank order (sizes may differ, be zero).
  virtual std::vector<std::string> all_gather_bytes(std::string_view mine) = 0;
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // x[i] = sum over ranks of x[i], added in rank order (the same bits on every rank).
  void all_reduce_sum(double* x, int64_t n);
  double all_reduce_sum(double x);
  int64_t all_reduce_max(int64_t x);

  // Seconds an operation may take before it fails (a rank died or hangs). Default: GRPO_COMM_TIMEOUT_S
  // from the environment, else 600.
  void set_timeout(double seconds);
  double timeout() const { return timeout_s_.load(); }
  CommStats stats() const;  // since construction or reset_stats()
  void reset_stats();
  // Collective: the communication on the critical path since the previous call (or construction), in
  // seconds, by the label this rank's wait for each operation had (label_waits; "" when none). For each
  // operation, the wait of the rank that waited least for it (the last to arrive: the others' longer waits
  // are that rank's extra work, load imbalance, not communication), summed over the operations of a label.
  // Overlapped operations nobody waited for count 0. Ranks must call it at the same point.
  std::map<std::string, double> take_critical_path_waits();
  // Local: forgets this rank's waits so far, starting the interval of the next take_critical_path_waits().
  void forget_waits();
  // Local: the label of this rank's waits from now on (what the caller is doing, e.g. a phase of a training
  // step, so that its communication can be told apart from its computation); returns the previous one.
  // `label` must outlive the waits (a string literal).
  const char* label_waits(const char* label);

 protected:
  Communicator();
  // The completion state of a new operation, numbered in the order operations start (backends finish it,
  // possibly on another thread).
  std::shared_ptr<detail::OpState> new_op();
  // Checks the arguments every backend's reduce_scatter / all_gather / gather share.
  void check_range(const char* op, int64_t lo, int64_t hi, const Partition& part) const;
  void check_offsets(const char* op, const std::vector<int64_t>& byte_offsets) const;
  // Accounting, callable from a communication thread.
  void count_operation(int64_t bytes_sent, double busy_s);

 private:
  std::atomic<int64_t> bytes_sent_{0}, operations_{0}, blocked_ns_{0}, busy_ns_{0};
  std::atomic<uint64_t> ordinals_{0};
  std::atomic<double> timeout_s_;
  struct Wait {  // what ranks exchange
    uint64_t ordinal;
    double seconds;
  };
  std::mutex waits_mu_;
  static constexpr size_t kMaxWaitRecords = size_t{1} << 16;
  // Since the last take_critical_path_waits() (the newest kMaxWaitRecords), under waits_mu_; wait_labels_[i]
  // is the label of waits_[i].
  std::vector<Wait> waits_;
  std::vector<const char*> wait_labels_;
  std::atomic<const char*> label_{""};
};

// Labels a communicator's waits for the lifetime of the scope (Communicator::label_waits), then restores
// the previous label. A null communicator is allowed (nothing to label).
class WaitLabel {
 public:
  WaitLabel(Communicator* comm, const char* label) : comm_(comm), previous_(comm ? comm->label_waits(label) : "") {}
  ~WaitLabel() {
    if (comm_) comm_->label_waits(previous_);
  }
  WaitLabel(const WaitLabel&) = delete;
  WaitLabel& operator=(const WaitLabel&) = delete;

 private:
  Communicator* comm_;
  const char* previous_;
};

// Single process (N = 1): collectives are copies; nothing travels, so the wire type changes nothing.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "local"; }
  std::string host() const override;
  Request reduce_scatter(const float* full, int64_t lo, int64_t hi, const Partition& part, float* shard, Wire wire,
                         bool accumulate) override;
  Request all_gather(void* data, std::vector<int64_t> byte_offsets) override;
  Request gather(const void* mine, void* out, std::vector<int64_t> byte_offsets, int root) override;
  std::vector<std::string> all_gather_bytes(std::string_view mine) override;
  void broadcast(void* data, int64_t bytes, int root) override;
  void barrier() override {}
};

// The process's communicator, created on first use; the one place that decides the backend: MPI when the
// process was started by an MPI launcher (mpirun, srun) with more than one rank, else local. The first call
// initialises MPI; later calls return the same object.
Communicator& world();
// Whether this process was started by an MPI launcher with more than one rank, and its rank there (0
// otherwise); both from the launcher's environment, without initialising MPI.
bool launched_distributed();
int launch_rank();
// Whether an MPI launcher started this process, with any number of ranks (mpirun -np 1 included).
bool launched_by_mpi();
// Leaves the process with `status` at once, without waiting for the other ranks (error paths of a
// distributed run: the launcher then stops the other ranks). Flushes stdio first.
[[noreturn]] void exit_now(int status);

}  // namespace grpo::comm
