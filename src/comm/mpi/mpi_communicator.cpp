// The MPI backend: a communication thread running point-to-point collectives (see mpi_communicator.h).
#include "comm/mpi/mpi_communicator.h"

// The C API only (Open MPI and MPICH otherwise pull in their deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <thread>

#include "comm/wait_note.h"
#include "comm/op_state.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/error.h"

namespace grpo::comm {

namespace {

constexpr int64_t kMaxMessage = int64_t{1} << 28;  // bytes per MPI message

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

// Wire encodings of gradient pieces.
void encode(const float* src, int64_t n, Wire w, void* dst) {
  if (n == 0) return;  // an empty piece (a rank's empty shard) may come with null pointers
  if (w == Wire::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  bf16_t* d = static_cast<bf16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
}

// acc[i] = (first ? 0 : acc[i]) + decoded src[i]
void add_decoded(float* acc, const void* src, int64_t n, Wire w, bool first) {
  if (n == 0) return;
  if (w == Wire::F32) {
    const float* s = static_cast<const float*>(src);
    if (first)
      std::memcpy(acc, s, static_cast<size_t>(n) * 4);
    else
      for (int64_t i = 0; i < n; ++i) acc[i] += s[i];
    return;
  }
  const bf16_t* s = static_cast<const bf16_t*>(src);
  if (first)
    for (int64_t i = 0; i < n; ++i) acc[i] = bf16_to_f32(s[i]);
  else
    for (int64_t i = 0; i < n; ++i) acc[i] += bf16_to_f32(s[i]);
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    std::promise<std::string> ready;
    std::future<std::string> init = ready.get_future();
    thread_ = std::thread([this, &ready] { thread_main(ready); });
    const std::string error = init.get();
    if (!error.empty()) {
      thread_.join();
      throw Error(error);
    }
  }

  ~MpiCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    // A failed communicator may have operations MPI never completes: leave its thread (and MPI) to the exit.
    if (failed_.load())
      thread_.detach();
    else
      thread_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  std::string host() const override { return host_; }

  Request reduce_scatter(const float* full, int64_t lo, int64_t hi, const Partition& part, float* shard, Wire wire,
                         bool accumulate) override {
    check_range("reduce_scatter", lo, hi, part);
    return submit(cat("reduce_scatter of [", lo, ", ", hi, ") (", wire_name(wire), ")"), [=, this] {
      return run_reduce_scatter(full, lo, hi, part, shard, wire, accumulate);
    });
  }

  Request all_gather(void* data, std::vector<int64_t> off) override {
    check_offsets("all_gather", off);
    return submit(cat("all_gather of ", off.back() - off.front(), " bytes"), [=, this] {
      Posted reqs;
      char* d = static_cast<char*>(data);
      int64_t sent = 0;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        post(false, d + off[r], off[r + 1] - off[r], r, reqs);
        sent += post(true, d + off[rank_], off[rank_ + 1] - off[rank_], r, reqs);
      }
      complete(reqs);
      return sent;
    });
  }

  Request gather(const void* mine, void* out, std::vector<int64_t> off, int root) override {
    check_offsets("gather", off);
    GRPO_CHECK(root >= 0 && root < size_, "[comm] gather to rank ", root, " of ", size_);
    return submit(cat("gather of ", off.back() - off.front(), " bytes to rank ", root), [=, this] {
      Posted reqs;
      int64_t sent = 0;
      if (rank_ == root) {
        char* o = static_cast<char*>(out);
        for (int r = 0; r < size_; ++r)
          if (r != rank_) post(false, o + off[r], off[r + 1] - off[r], r, reqs);
        if (o + off[rank_] != mine && off[rank_ + 1] > off[rank_])
          std::memmove(o + off[rank_], mine, off[rank_ + 1] - off[rank_]);
      } else {
        sent = post(true, mine, off[rank_ + 1] - off[rank_], root, reqs);
      }
      complete(reqs);
      return sent;
    });
  }

  std::vector<std::string> all_gather_bytes(std::string_view mine) override {
    std::vector<std::string> out(size_);
    Request r = submit(cat("all_gather_bytes of ", mine.size(), " bytes"), [&, this] {
      std::vector<int64_t> sizes(size_);
      sizes[rank_] = static_cast<int64_t>(mine.size());
      Posted reqs;
      int64_t sent = 0;
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        post(false, &sizes[p], sizeof(int64_t), p, reqs);
        sent += post(true, &sizes[rank_], sizeof(int64_t), p, reqs);
      }
      complete(reqs);
      for (int p = 0; p < size_; ++p) {
        GRPO_CHECK(sizes[p] >= 0, "[comm] all_gather_bytes: rank ", p, " announced ", sizes[p], " bytes");
        out[p].resize(sizes[p]);
        if (p == rank_) {
          if (!mine.empty()) std::memcpy(out[p].data(), mine.data(), mine.size());
          continue;
        }
        post(false, out[p].data(), sizes[p], p, reqs);
        sent += post(true, mine.data(), static_cast<int64_t>(mine.size()), p, reqs);
      }
      complete(reqs);
      return sent;
    });
    wait(r);
    return out;
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    GRPO_CHECK(root >= 0 && root < size_ && bytes >= 0, "[comm] broadcast of ", bytes, " bytes from rank ", root,
               " of ", size_);
    Request r = submit(cat("broadcast of ", bytes, " bytes from rank ", root), [=, this] {
      Posted reqs;
      int64_t sent = 0;
      if (rank_ == root) {
        for (int p = 0; p < size_; ++p)
          if (p != rank_) sent += post(true, data, bytes, p, reqs);
      } else {
        post(false, data, bytes, root, reqs);
      }
      complete(reqs);
      return sent;
    });
    wait(r);
  }

  void barrier() override {
    Request r = submit("barrier", [this] {
      Posted reqs;
      reqs.requests.emplace_back();
      reqs.peers.push_back(-1);
      check(MPI_Ibarrier(comm_, &reqs.requests.back()));
      complete(reqs);
      return int64_t{0};
    });
    wait(r);
  }

 private:
  // Point-to-point requests in flight, each with the rank at its other end (-1: all, a barrier).
  struct Posted {
    std::vector<MPI_Request> requests;
    std::vector<int> peers;
    void clear() {
      requests.clear();
      peers.clear();
    }
  };

  struct Task {
    std::shared_ptr<detail::OpState> state;
    std::function<int64_t()> run;  // runs on the communication thread; returns the bytes it sent
  };

  Request submit(std::string what, std::function<int64_t()> run) {
    auto state = new_op();
    {
      std::lock_guard<std::mutex> lock(mu_);
      state->what = cat(what, " (operation ", ++submitted_, ")");
      queue_.push_back({state, std::move(run)});
    }
    cv_.notify_one();
    return Request(state);
  }

  void thread_main(std::promise<std::string>& ready) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // back-off sleeps of a few microseconds stay that short
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
      ready.set_value("[comm] MPI_Init_thread failed: " + mpi_error_text(rc));
      return;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, len);
    int* ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &found);
    tag_ub_ = found && ub ? *ub : 32767;
    if (size_ > 1) print_wait_note_on_sigterm();
    ready.set_value("");

    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) break;  // stop requested and nothing left
        t = std::move(queue_.front());
        queue_.pop_front();
      }
      run_task(t);
    }
    if (!failed_.load()) {
      MPI_Comm_free(&comm_);
      MPI_Finalize();
    }
  }

  void run_task(Task& t) {
    const auto t0 = Clock::now();
    ++sequence_;
    what_ = &t.state->what;
    std::string error = failure_;
    int64_t sent = 0;
    if (error.empty()) {
      try {
        sent = t.run();
      } catch (const std::exception& e) {
        set_wait_note("");  // failed, no longer waiting: a SIGTERM from now on is only the job ending
        error = e.what();
        failure_ = cat(error, " (an earlier operation failed; the communicator is unusable)");
        failed_ = true;
      }
    }
    count_operation(sent, seconds_since(t0));
    t.state->finish(error);
  }

  void check(int rc) {
    if (rc != MPI_SUCCESS)
      fail("[comm] rank ", rank_, "/", size_, ": ", *what_, ": MPI error: ", mpi_error_text(rc));
  }

  int tag() const { return 1 + static_cast<int>(sequence_ % static_cast<uint64_t>(tag_ub_ - 1)); }

  // Posts a send (or receive) of `bytes` bytes with `peer` in messages of at most kMaxMessage bytes;
  // returns the bytes sent.
  int64_t post(bool send, const void* p, int64_t bytes, int peer, Posted& reqs) {
    for (int64_t off = 0; off < bytes; off += kMaxMessage) {
      const int n = static_cast<int>(std::min(kMaxMessage, bytes - off));
      MPI_Request r;
      char* at = static_cast<char*>(const_cast<void*>(p)) + off;
      check(send ? MPI_Isend(at, n, MPI_BYTE, peer, tag(), comm_, &r) : MPI_Irecv(at, n, MPI_BYTE, peer, tag(), comm_, &r));
      reqs.requests.push_back(r);
      reqs.peers.push_back(peer);
    }
    return send ? bytes : 0;
  }

  // Drives the requests to completion: MPI_Testall with a short spin, then sleeps of growing length (20 us
  // to 200 us) between polls, so a waiting communication thread takes little CPU from the compute threads.
  // A wait past kNoteAfter leaves a note of what it waits for (printed if the launcher ends the job, see
  // wait_note.h); past the timeout it fails naming the ranks whose messages are still outstanding.
  void complete(Posted& reqs) {
    if (reqs.requests.empty()) return;
    constexpr double kNoteAfter = 0.25;  // seconds
    const auto t0 = Clock::now();
    double noted = 0;  // the wait's length at the last note
    for (int polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Testall(static_cast<int>(reqs.requests.size()), reqs.requests.data(), &done, MPI_STATUSES_IGNORE));
      if (done) {
        if (noted > 0) set_wait_note("");
        reqs.clear();
        return;
      }
      if (polls % 64 == 0) {
        const double waited = seconds_since(t0);
        if (waited > timeout()) {
          const std::string peers = outstanding_peers(reqs);
          fail("[comm] rank ", rank_, "/", size_, ": ", *what_, " did not complete within ", timeout(), " s: ", peers,
               peers.rfind("ranks ", 0) == 0 ? " died, are stopped, cannot be reached"
                                             : " died, is stopped, cannot be reached",
               " or took a different code path (timeout: trainer.comm_timeout_s or GRPO_COMM_TIMEOUT_S)");
        }
        if (waited > noted + kNoteAfter) {
          noted = waited;
          char secs[32];
          std::snprintf(secs, sizeof secs, "%.1f", waited);
          set_wait_note(cat("[rank ", rank_, "] [comm] ended by SIGTERM (the launcher ends the job) after waiting ",
                            secs, " s for ", outstanding_peers(reqs), ": ", *what_));
        }
      }
      if (polls >= 32) std::this_thread::sleep_for(std::chrono::microseconds(polls < 256 ? 20 : 200));
    }
  }

  // "rank 1", "ranks 1, 3" or "another rank": the peers of the requests not complete yet.
  std::string outstanding_peers(const Posted& reqs) {
    std::vector<int> peers;
    for (size_t i = 0; i < reqs.requests.size(); ++i) {
      int done = 1;
      if (reqs.requests[i] != MPI_REQUEST_NULL) MPI_Request_get_status(reqs.requests[i], &done, MPI_STATUS_IGNORE);
      if (!done && reqs.peers[i] >= 0 && std::find(peers.begin(), peers.end(), reqs.peers[i]) == peers.end())
        peers.push_back(reqs.peers[i]);
    }
    if (peers.empty()) return "another rank";
    std::sort(peers.begin(), peers.end());
    std::string list = peers.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < peers.size(); ++i) list += (i ? ", " : "") + std::to_string(peers[i]);
    return list;
  }

  int64_t run_reduce_scatter(const float* full, int64_t lo, int64_t hi, const Partition& part, float* shard, Wire wire,
                             bool accumulate) {
    const int64_t wb = wire_bytes(wire);
    const int64_t a = part.piece_begin(rank_, lo, hi), mine = part.piece_size(rank_, lo, hi);
    recv_.resize(std::max<size_t>(recv_.size(), static_cast<size_t>(size_ * mine * wb)));
    if (wire != Wire::F32) send_.resize(std::max<size_t>(send_.size(), static_cast<size_t>((hi - lo) * wb)));
    Posted reqs;
    int64_t sent = 0;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      if (mine > 0) post(false, recv_.data() + p * mine * wb, mine * wb, p, reqs);
      const int64_t b = part.piece_begin(p, lo, hi), n = part.piece_size(p, lo, hi);
      if (n == 0) continue;
      const void* src = full + b;
      if (wire != Wire::F32) {
        encode(full + b, n, wire, send_.data() + (b - lo) * wb);
        src = send_.data() + (b - lo) * wb;
      }
      sent += post(true, src, n * wb, p, reqs);
    }
    // This rank's own contribution, rounded like the others'.
    encode(full + a, mine, wire, recv_.data() + rank_ * mine * wb);
    complete(reqs);
    float* out = shard + (a - part.begin(rank_));
    acc_.resize(std::max<size_t>(acc_.size(), static_cast<size_t>(mine)));
    float* sum = accumulate ? acc_.data() : out;
    for (int p = 0; p < size_; ++p) add_decoded(sum, recv_.data() + p * mine * wb, mine, wire, p == 0);
    if (accumulate)
      for (int64_t i = 0; i < mine; ++i) out[i] += sum[i];
    return sent;
  }

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  uint64_t submitted_ = 0;  // under mu_

  // Owned by the communication thread.
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, tag_ub_ = 32767;
  std::string host_;
  uint64_t sequence_ = 0;
  const std::string* what_ = nullptr;  // the running operation's description
  std::string failure_;                // first failure: later operations fail with it
  std::atomic<bool> failed_{false};
  std::vector<uint8_t> send_, recv_;  // wire staging
  std::vector<float> acc_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace grpo::comm
