// Sampler tests on small hand-computed distributions: greedy and ties, temperature log-probs, top-k / top-p /
// min-p edge cases, one RNG draw per token, a large-vocabulary nucleus vs a brute-force sort, and parameter
// validation errors that name the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <vector>

#include "core/error.h"
#include "rollout/request.h"
#include "rollout/sampler.h"

using namespace grpo;
using namespace grpo::rollout;

namespace {

// Frequencies of each token over `draws` draws.
std::vector<double> frequencies(Sampler& s, const std::vector<float>& logits, const SamplingParams& p, int draws) {
  Rng rng(123);
  std::vector<int> count(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++count[s.sample(logits.data(), p, rng).token];
  std::vector<double> f(logits.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<double>(count[i]) / draws;
  return f;
}

// log of probabilities 0.5, 0.3, 0.2
const std::vector<float> kThree = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};

std::string error_of(const SamplingParams& p) {
  try {
    validate_sampling(p, "request 3");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTiesWithLogSoftmax) {
  Sampler s(4);
  Rng rng(1);
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, -2.0f};
  SamplingParams p;
  p.temperature = 0;
  const auto rng_before = rng.state();
  SampledToken t = s.sample(logits.data(), p, rng);
  EXPECT_EQ(t.token, 1);
  const double z = std::exp(1.0 - 3) + 2 + std::exp(-5.0);
  EXPECT_NEAR(t.logprob, -std::log(z), 1e-6);
  EXPECT_EQ(rng.state().s[0], rng_before.s[0]);  // greedy does not draw
}

TEST(Sampler, LogprobIsUnderTemperatureScaledSoftmaxOfFullVocabulary) {
  Sampler s(3);
  Rng rng(2);
  SamplingParams p;
  p.temperature = 0.5f;
  p.top_k = 1;  // truncation must not change the reported log-prob
  SampledToken t = s.sample(kThree.data(), p, rng);
  EXPECT_EQ(t.token, 0);
  // softmax(log p / 0.5) = p^2 / sum p^2
  EXPECT_NEAR(t.logprob, std::log(0.25 / (0.25 + 0.09 + 0.04)), 1e-6);
}

TEST(Sampler, FullDistributionFrequenciesMatchProbabilities) {
  Sampler s(3);
  auto f = frequencies(s, kThree, SamplingParams{}, 40000);
  EXPECT_NEAR(f[0], 0.5, 0.01);
  EXPECT_NEAR(f[1], 0.3, 0.01);
  EXPECT_NEAR(f[2], 0.2, 0.01);
}

TEST(Sampler, TopKRenormalisesOverTheKBest) {
  Sampler s(3);
  SamplingParams p;
  p.top_k = 2;
  auto f = frequencies(s, kThree, p, 40000);
  EXPECT_NEAR(f[0], 0.625, 0.01);
  EXPECT_NEAR(f[1], 0.375, 0.01);
  EXPECT_EQ(f[2], 0.0);
  p.top_k = 3;  // k = V: no truncation
  f = frequencies(s, kThree, p, 20000);
  EXPECT_GT(f[2], 0.15);
}

TEST(Sampler, TopKTiesKeepLowerIds) {
  Sampler s(4);
  SamplingParams p;
  p.top_k = 2;
  auto f = frequencies(s, {1.0f, 1.0f, 1.0f, 1.0f}, p, 4000);
  EXPECT_NEAR(f[0], 0.5, 0.03);
  EXPECT_NEAR(f[1], 0.5, 0.03);
  EXPECT_EQ(f[2] + f[3], 0.0);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingTheMass) {
  Sampler s(3);
  SamplingParams p;
  p.top_p = 0.5f;  // 0.5 alone reaches 0.5
  auto f = frequencies(s, kThree, p, 2000);
  EXPECT_EQ(f[0], 1.0);
  p.top_p = 0.6f;  // needs 0.5 + 0.3
  f = frequencies(s, kThree, p, 40000);
  EXPECT_NEAR(f[0], 0.625, 0.01);
  EXPECT_EQ(f[2], 0.0);
  p.top_p = 0.81f;  // all three
  f = frequencies(s, kThree, p, 20000);
  EXPECT_NEAR(f[2], 0.2, 0.01);
}

TEST(Sampler, TopPAfterTopKUsesRenormalisedMass) {
  Sampler s(3);
  SamplingParams p;
  p.top_k = 2;     // 0.625, 0.375
  p.top_p = 0.6f;  // 0.625 >= 0.6: token 0 only
  auto f = frequencies(s, kThree, p, 2000);
  EXPECT_EQ(f[0], 1.0);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  Sampler s(3);
  SamplingParams p;
  p.min_p = 0.5f;  // threshold 0.25: keeps 0.5 and 0.3
  auto f = frequencies(s, kThree, p, 40000);
  EXPECT_NEAR(f[0], 0.625, 0.01);
  EXPECT_EQ(f[2], 0.0);
  p.min_p = 0.7f;  // threshold 0.35
  f = frequencies(s, kThree, p, 2000);
  EXPECT_EQ(f[0], 1.0);
  p.min_p = 1.0f;  // threshold = p_max exactly: the tied maxima are kept (p >= threshold), the rest dropped
  f = frequencies(s, {2.0f, 0.0f, 2.0f}, p, 20000);
  EXPECT_NEAR(f[0], 0.5, 0.02);
  EXPECT_EQ(f[1], 0.0);
  EXPECT_NEAR(f[2], 0.5, 0.02);
}

TEST(Sampler, OneDrawPerTokenSameStreamSameTokens) {
  Sampler s(3);
  SamplingParams p;
  p.top_p = 0.9f;
  Rng a(9), b(9);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(s.sample(kThree.data(), p, a).token, s.sample(kThree.data(), p, b).token);
    b.set_state(a.state());
  }
  Rng c(5), d(5);
  s.sample(kThree.data(), p, c);
  d.uniform();
  EXPECT_EQ(c.next_u64(), d.next_u64());
}

TEST(Sampler, LargeVocabularyNucleusMatchesBruteForce) {
  const int64_t V = 3000;
  Sampler s(V);
  Rng init(77);
  std::vector<float> logits(V);
  for (float& x : logits) x = static_cast<float>(init.normal() * 2.0);
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  // brute force: full sort by probability
  std::vector<double> prob(V);
  double z = 0;
  for (int64_t i = 0; i < V; ++i) z += (prob[i] = std::exp(logits[i] / 0.8));
  std::vector<int> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return prob[a] > prob[b]; });
  std::set<int> nucleus;
  double cum = 0;
  for (int i : order) {
    nucleus.insert(i);
    if ((cum += prob[i] / z) >= 0.9) break;
  }
  ASSERT_GT(nucleus.size(), 64u);  // needs more than the first sorted prefix
  Rng rng(3);
  std::set<int> seen;
  for (int i = 0; i < 4000; ++i) {
    const int t = s.sample(logits.data(), p, rng).token;
    ASSERT_TRUE(nucleus.count(t)) << "token " << t << " outside the nucleus";
    seen.insert(t);
  }
  EXPECT_GT(seen.size(), nucleus.size() / 2);
}

TEST(Sampler, NanOrInfiniteLogitsAreErrors) {
  Sampler s(3);
  Rng rng(1);
  std::vector<float> bad = {0.0f, NAN, 1.0f};
  EXPECT_THROW(s.sample(bad.data(), SamplingParams{}, rng), Error);
  std::vector<float> all_inf = {-INFINITY, -INFINITY, -INFINITY};
  EXPECT_THROW(s.sample(all_inf.data(), SamplingParams{}, rng), Error);
}

TEST(SamplingParams, InvalidValuesNameTheField) {
  SamplingParams p;
  EXPECT_EQ(error_of(p), "");
  p.temperature = -1;
  EXPECT_NE(error_of(p).find("temperature"), std::string::npos);
  p.temperature = NAN;
  EXPECT_NE(error_of(p).find("temperature"), std::string::npos);
  p = {};
  p.top_k = -3;
  EXPECT_NE(error_of(p).find("top_k"), std::string::npos);
  p = {};
  p.top_p = 0;
  EXPECT_NE(error_of(p).find("top_p"), std::string::npos);
  p.top_p = NAN;
  EXPECT_NE(error_of(p).find("top_p"), std::string::npos);
  p = {};
  p.min_p = 1.5f;
  EXPECT_NE(error_of(p).find("min_p"), std::string::npos);
  EXPECT_NE(error_of(p).find("request 3"), std::string::npos);
}

// The top log-probs against a brute-force sort of a random vocabulary with many ties: the n largest logits
// (ties to the lower id), each with its log-prob under the temperature's softmax; asking for them leaves the
// draw and the RNG as they were.
TEST(Sampler, TopLogprobsAreTheLargestLogitsUnderTheSameSoftmax) {
  const int64_t V = 5000;
  std::vector<float> logits(V);
  Rng gen(9);
  for (float& x : logits) x = static_cast<float>(static_cast<int>(gen.uniform() * 200)) / 20.0f;  // ties
  Sampler s(V);
  for (const float temperature : {0.0f, 0.7f, 1.0f}) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_p = 0.9f;
    const double inv_t = temperature == 0 ? 1.0 : 1.0 / temperature;
    const float mx = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (float x : logits) z += std::exp((x - mx) * inv_t);
    std::vector<int32_t> ids(V);
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    for (const int32_t n : {1, 5, kMaxTopLogprobs}) {
      Rng a(4), b(4);
      const SampledToken plain = s.sample(logits.data(), p, a);
      const SampledToken with_top = s.sample(logits.data(), p, b, n);
      EXPECT_EQ(plain.token, with_top.token);
      EXPECT_EQ(plain.logprob, with_top.logprob);
      EXPECT_EQ(a.state().s[0], b.state().s[0]);
      EXPECT_EQ(plain.num_top, 0);
      ASSERT_EQ(with_top.num_top, n);
      for (int32_t k = 0; k < n; ++k) {
        EXPECT_EQ(with_top.top[k].token, ids[k]) << "temperature " << temperature << " n " << n << " k " << k;
        EXPECT_NEAR(with_top.top[k].logprob, (logits[ids[k]] - mx) * inv_t - std::log(z), 1e-5);
      }
    }
  }
  Sampler small(3);  // more alternatives asked for than the vocabulary has
  Rng rng(1);
  const SampledToken t = small.sample(kThree.data(), SamplingParams{}, rng, 5);
  ASSERT_EQ(t.num_top, 3);
  EXPECT_EQ(t.top[2].token, 2);
  EXPECT_NEAR(t.top[2].logprob, std::log(0.2), 1e-6);
}
