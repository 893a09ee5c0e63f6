// What ops::gemm and ops::gemm_batched share of oneDNN: one engine and stream for the process, the matmul
// attributes of alpha and beta, and a bounded cache of matmul primitives keyed by shape ("shape cache":
// creating a primitive costs ~1 ms, executing a cached one nothing). Packed batches vary T from step to
// step, so each cache is bounded: past its capacity (256 shapes) the plan used longest ago goes; plans in
// use stay alive through their shared_ptr. Primitives are made with a user scratchpad: a cached plan holds no working
// memory of its own (oneDNN's default gives each primitive one, sized by its shape, so that a cache of shapes grew by
// megabytes with every new micro-batch length); each thread executes on one scratchpad of its own, grown to the largest
// plan it ran.
#pragma once

#include <dnnl.hpp>

#include <cstddef>
#include <cstdlib>
#include <list>
#include <new>
#include <unordered_map>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace grpo::ops::cpu_dnnl {

// One matmul primitive and the memory descriptors of its operands: src [.., M, K], weights [.., K, N],
// dst [.., M, N] (f32).
struct MatmulPlan {
  dnnl::memory::desc a_md, b_md, c_md;
  dnnl::matmul prim;
  dnnl::memory::desc scratch_md;  // the working memory the primitive needs at execute
};

// The process's oneDNN CPU engine and stream. The shape caches below are the process's one cache of
// primitives: oneDNN's own (1,024 primitives by default) is turned off, as it kept every primitive our
// caches let go alive (a `tiny` GRPO run grew from 85 to 122 MiB over 40 steps of new micro-batch lengths).
struct Runtime {
  Runtime() { dnnl::set_primitive_cache_capacity(0); }
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};
inline Runtime& runtime() {
  static Runtime rt;
  return rt;
}

// C = alpha * op(A) op(B) + beta * C with beta 0 or 1: alpha an output scale, beta = 1 a sum post-op.
inline dnnl::primitive_attr matmul_attr(float alpha, float beta) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

inline MatmulPlan make_plan(const dnnl::memory::desc& a_md, const dnnl::memory::desc& b_md,
                            const dnnl::memory::desc& c_md, float alpha, float beta) {
  const dnnl::matmul::desc desc(a_md, b_md, c_md);
  const dnnl::matmul::primitive_desc pd(desc, matmul_attr(alpha, beta), runtime().engine);
  return {a_md, b_md, c_md, dnnl::matmul(pd), pd.scratchpad_desc()};
}

// This thread's scratchpad for executing plans: at least `bytes`, 64-byte aligned, kept for the next call.
inline void* thread_scratchpad(size_t bytes) {
  struct Scratch {
    void* p = nullptr;
    size_t size = 0;
    ~Scratch() { std::free(p); }
  };
  thread_local Scratch s;
  if (bytes > s.size) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* grown = std::aligned_alloc(64, rounded);
    if (!grown) throw std::bad_alloc();
    std::free(s.p);
    s.p = grown;
    s.size = rounded;
  }
  return s.p;
}

// Runs plan on A, B, C (pointers to the first element of each operand's view) and waits for it.
inline void execute(const MatmulPlan& plan, const void* A, const void* B, float* C) {
  Runtime& rt = runtime();
  dnnl::memory a(plan.a_md, rt.engine, const_cast<void*>(A));
  dnnl::memory b(plan.b_md, rt.engine, const_cast<void*>(B));
  dnnl::memory c(plan.c_md, rt.engine, C);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  if (const size_t bytes = plan.scratch_md.get_size(); bytes > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(plan.scratch_md, rt.engine, thread_scratchpad(bytes)));
  plan.prim.execute(rt.stream, args);
  rt.stream.wait();
}

// Plans by Key (ordered), made on a miss by the caller's function; thread-safe. Past its capacity the plan
// used longest ago goes (a step's shapes stay while it runs; a plan in use stays alive through its
// shared_ptr).
template <typename Key>
class PlanCache {
 public:
  // Plans a cache holds at most by default. A plan (its primitive: oneDNN's descriptors and JIT-compiled
  // kernel) takes ~40 KiB: a `tiny` run's two caches, full, hold ~19 MiB (85 -> 102 MiB over 40 steps).
  static constexpr size_t kDefaultCapacity = 256;

  template <typename Make>
  std::shared_ptr<const MatmulPlan> get(const Key& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second.recent);
      return it->second.plan;
    }
    while (plans_.size() >= capacity_) evict_oldest();
    recent_.push_front(key);
    it = plans_.emplace(key, Entry{std::make_shared<const MatmulPlan>(std::forward<Make>(make)()), recent_.begin()})
             .first;
    return it->second.plan;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return plans_.size();
  }
  size_t capacity() {
    std::lock_guard<std::mutex> lock(mu_);
    return capacity_;
  }
  void set_capacity(size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    capacity_ = capacity;
    while (plans_.size() > capacity_) evict_oldest();
  }

 private:
  struct Entry {
    std::shared_ptr<const MatmulPlan> plan;
    typename std::list<Key>::iterator recent;  // its place in recent_
  };
  void evict_oldest() {
    plans_.erase(recent_.back());
    recent_.pop_back();
  }
  std::mutex mu_;
  std::map<Key, Entry> plans_;
  std::list<Key> recent_;  // most recently used first
  size_t capacity_ = kDefaultCapacity;
};

}  // namespace grpo::ops::cpu_dnnl
