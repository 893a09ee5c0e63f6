// Sampler implementation (see sampler.h). The softmax numerators come from one vector pass
// (ops::softmax_numerators). Truncation works on a partially sorted candidate list: top-k selects with
// nth_element, top-p sorts a growing prefix only as far as the mass requires, min-p filters in place; the
// draw walks the kept candidates in their (deterministic) order, or the whole vocabulary in id order, a
// block sum at a time. The top log-probs come from one pass keeping the best few in a sorted array.
#include "rollout/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "kernels/paged_ops.h"

namespace grpo::rollout {

namespace {
// The top_n largest logits into out.top (largest first; ties to the lower id, as ids are visited in order),
// with their log-probs under logprob_of.
template <class LogprobOf>
void top_alternatives(const float* logits, int64_t V, int32_t top_n, const LogprobOf& logprob_of, SampledToken& out) {
  const int32_t n = static_cast<int32_t>(std::min<int64_t>(top_n, V));
  std::array<int32_t, kMaxTopLogprobs> best;  // [n] ids, largest logit first
  int32_t count = 0;
  for (int64_t i = 0; i < V; ++i) {
    const float x = logits[i];
    if (count == n && !(x > logits[best[n - 1]])) continue;
    int32_t at = count < n ? count++ : n - 1;
    for (; at > 0 && x > logits[best[at - 1]]; --at) best[at] = best[at - 1];
    best[at] = static_cast<int32_t>(i);
  }
  for (int32_t k = 0; k < count; ++k) out.top[k] = {best[k], logprob_of(best[k])};
  out.num_top = count;
}
}  // namespace

Sampler::Sampler(int64_t vocab_size) : V_(vocab_size), prob_(vocab_size), order_(vocab_size) {
  GRPO_CHECK(vocab_size > 0, "[sampler] vocab_size must be > 0, got ", vocab_size);
}

int64_t Sampler::sort_prefix(int64_t m, int64_t sorted) {
  if (m <= sorted) return sorted;
  const float* p = prob_.data();
  auto better = [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); };
  std::nth_element(order_.begin() + sorted, order_.begin() + m - 1, order_.end(), better);
  std::sort(order_.begin() + sorted, order_.begin() + m, better);
  return m;
}

int32_t Sampler::draw_in_id_order(double r, int32_t fallback) const {
  constexpr int64_t kBlock = 256;
  const float* p = prob_.data();
  double cum = 0;
  for (int64_t b = 0; b < V_; b += kBlock) {
    const int64_t end = std::min(V_, b + kBlock);
    double part[4] = {0, 0, 0, 0};  // four independent chains (the block's sum, in a fixed order)
    int64_t i = b;
    for (; i + 4 <= end; i += 4)
      for (int j = 0; j < 4; ++j) part[j] += p[i + j];
    for (; i < end; ++i) part[0] += p[i];
    const double block = (part[0] + part[1]) + (part[2] + part[3]);
    if (r < cum + block) {
      double walk = cum;
      for (i = b; i < end; ++i) {
        walk += p[i];
        if (r < walk) return static_cast<int32_t>(i);
      }
    }
    cum += block;  // (rounding may let the walk end just short of r: the draw goes on in the next block)
  }
  return fallback;
}

SampledToken Sampler::score(const float* logits, int32_t token, float temperature, int32_t top_n) {
  const float inv_t = 1.0f / temperature;
  const ops::SoftmaxRow row = ops::softmax_numerators(prob_.data(), logits, V_, inv_t);
  const double log_z = std::log(row.sum);
  auto logprob_of = [&](int32_t tok) {
    return static_cast<float>(static_cast<double>((logits[tok] - row.max) * inv_t) - log_z);
  };
  SampledToken out;
  out.token = token;
  out.logprob = logprob_of(token);
  if (top_n > 0) top_alternatives(logits, V_, top_n, logprob_of, out);
  return out;
}

SampledToken Sampler::sample(const float* logits, const SamplingParams& sp, Rng& rng, int32_t top_n) {
  const bool greedy = sp.temperature == 0;
  const float inv_t = greedy ? 1.0f : 1.0f / sp.temperature;
  const ops::SoftmaxRow row = ops::softmax_numerators(prob_.data(), logits, V_, inv_t);
  const float mx = row.max;
  const auto argmax = static_cast<int32_t>(row.argmax);
  const double sum = row.sum;
  const double log_z = std::log(sum);
  auto logprob_of = [&](int32_t tok) {
    return static_cast<float>(static_cast<double>((logits[tok] - mx) * inv_t) - log_z);
  };
  auto drawn = [&](int32_t tok) {
    SampledToken out;
    out.token = tok;
    out.logprob = logprob_of(tok);
    if (top_n > 0) top_alternatives(logits, V_, top_n, logprob_of, out);
    return out;
  };
  if (greedy) return drawn(argmax);

  const bool truncate = (sp.top_k > 0 && sp.top_k < V_) || sp.top_p < 1.0f || sp.min_p > 0.0f;
  if (!truncate) {  // draw over the whole vocabulary in id order
    const int32_t pick = draw_in_id_order(rng.uniform() * sum, argmax);
    return drawn(pick);
  }

  std::iota(order_.begin(), order_.end(), 0);
  int64_t end = V_, sorted = 0;  // candidates: order_[0..end); order_[0..sorted) sorted best first
  if (sp.top_k > 0 && sp.top_k < V_) {
    sorted = sort_prefix(sp.top_k, 0);
    end = sp.top_k;
  }
  if (sp.top_p < 1.0f) {
    double mass = 0;
    for (int64_t i = 0; i < end; ++i) mass += prob_[order_[i]];
    const double target = static_cast<double>(sp.top_p) * mass;
    double cum = 0;
    int64_t i = 0;
    for (int64_t m = std::min<int64_t>(64, end);; m = std::min(end, m * 4)) {
      sorted = sort_prefix(m, sorted);
      for (; i < sorted && cum < target; ++i) cum += prob_[order_[i]];
      if (cum >= target || sorted == end) break;
    }
    end = i;
  }
  if (sp.min_p > 0.0f) {
    float pmax = 0;
    for (int64_t i = 0; i < end; ++i) pmax = std::max(pmax, prob_[order_[i]]);
    const float threshold = sp.min_p * pmax;
    int64_t kept = 0;
    for (int64_t i = 0; i < end; ++i)
      if (prob_[order_[i]] >= threshold) order_[kept++] = order_[i];
    end = kept;
  }
  double total = 0;
  for (int64_t i = 0; i < end; ++i) total += prob_[order_[i]];
  const double r = rng.uniform() * total;
  double cum = 0;
  int32_t pick = order_[0];
  for (int64_t i = 0; i < end; ++i) {
    cum += prob_[order_[i]];
    if (r < cum) {
      pick = order_[i];
      break;
    }
  }
  return drawn(pick);
}

}  // namespace grpo::rollout
