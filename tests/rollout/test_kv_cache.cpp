// Tests of the KV cache block pool and prefix cache: reference counts, free order, sizing from a byte
// budget, hash-chain lookups with collision checks, LRU eviction of unreferenced cached blocks, clearing,
// and a randomized run against a simple model of the cache. Also the incremental detokeniser.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "rollout/fake_model.h"
#include "rollout/incremental_text.h"
#include "rollout/kv_cache.h"
#include "test_util.h"

using namespace grpo;
using namespace grpo::rollout;

namespace {
KvCacheShape small_shape(ops::KvDType dt = ops::KvDType::F32) { return {2, 2, 8, 4, dt}; }
std::vector<int32_t> toks(int32_t start) { return {start, start + 1, start + 2, start + 3}; }

}  // namespace

TEST(KvCache, SizesFromByteBudgetPerDtype) {
  // per block: 2 (k, v) x 2 layers x 2 heads x 4 tokens x 8 dims
  EXPECT_EQ(KvCache::blocks_for_bytes(small_shape(), 10 * 2 * 2 * 2 * 4 * 8 * 4), 10);
  EXPECT_EQ(KvCache::blocks_for_bytes(small_shape(ops::KvDType::BF16), 10 * 2 * 2 * 2 * 4 * 8 * 2), 10);
  // int8: 1 byte per element plus one f32 scale per token and head, for k and v
  EXPECT_EQ(KvCache::blocks_for_bytes(small_shape(ops::KvDType::I8), 10 * (2 * 2 * 2 * 4 * 8 + 2 * 2 * 2 * 4 * 4)), 10);
  EXPECT_GT(available_memory_bytes(), 0);
}

TEST(KvCache, RefCountsAndFreeOrder) {
  KvCache kv(small_shape(), 3, false);
  EXPECT_EQ(kv.available_blocks(), 3);
  EXPECT_EQ(kv.allocate(), 0);
  EXPECT_EQ(kv.allocate(), 1);
  EXPECT_EQ(kv.allocate(), 2);
  EXPECT_EQ(kv.allocate(), -1);
  kv.retain(1);
  EXPECT_EQ(kv.ref_count(1), 2);
  kv.release(1);
  EXPECT_EQ(kv.available_blocks(), 0);
  kv.release(1);
  EXPECT_EQ(kv.available_blocks(), 1);
  EXPECT_EQ(kv.allocate(), 1);
  EXPECT_THROW(kv.release(5), Error);
  kv.release(0);
  EXPECT_THROW(kv.release(0), Error);  // no reference left
  EXPECT_THROW(kv.retain(0), Error);   // free, not cached
}

TEST(KvCache, PrefixLookupChecksParentAndTokens) {
  KvCache kv(small_shape(), 4, true);
  const auto a = toks(1), b = toks(5);
  const uint64_t ha = KvCache::hash_block(0, a), hb = KvCache::hash_block(ha, b);
  EXPECT_NE(ha, KvCache::hash_block(1, a));  // the chain matters
  const int32_t ba = kv.allocate(), bb = kv.allocate();
  kv.insert(ba, ha, 0, a);
  kv.insert(bb, hb, ha, b);
  EXPECT_EQ(kv.lookup(ha, 0, a), ba);
  EXPECT_EQ(kv.ref_count(ba), 2);
  EXPECT_EQ(kv.lookup(hb, ha, b), bb);
  EXPECT_EQ(kv.lookup(hb, 0, b), -1);            // wrong parent
  EXPECT_EQ(kv.lookup(hb, ha, toks(6)), -1);     // same hash, other tokens (a forced collision)
  EXPECT_EQ(kv.lookup(KvCache::hash_block(0, b), 0, b), -1);
  EXPECT_EQ(kv.stats().hits, 2);
  EXPECT_EQ(kv.stats().lookups, 5);
  EXPECT_THROW(kv.insert(kv.allocate(), 99, 0, std::vector<int32_t>{1, 2}), Error);  // not a full block
}

TEST(KvCache, UnreferencedCachedBlocksAreEvictedLeastRecentlyReleasedFirst) {
  KvCache kv(small_shape(), 3, true);
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(kv.allocate());
    hashes.push_back(KvCache::hash_block(0, toks(10 * i)));
    kv.insert(blocks[i], hashes[i], 0, toks(10 * i));
  }
  kv.release(blocks[1]);
  kv.release(blocks[0]);
  kv.release(blocks[2]);
  EXPECT_EQ(kv.available_blocks(), 3);
  // reuse block 0's content: it leaves the LRU
  EXPECT_EQ(kv.lookup(hashes[0], 0, toks(0)), blocks[0]);
  EXPECT_EQ(kv.allocate(), blocks[1]);  // least recently released
  EXPECT_EQ(kv.stats().evictions, 1);
  EXPECT_EQ(kv.lookup(hashes[1], 0, toks(10)), -1);  // evicted
  EXPECT_EQ(kv.lookup(hashes[2], 0, toks(20)), blocks[2]);
  kv.release(blocks[2]);
  kv.clear_prefix_cache();
  EXPECT_EQ(kv.lookup(hashes[2], 0, toks(20)), -1);
  EXPECT_EQ(kv.available_blocks(), 1);
  EXPECT_EQ(kv.allocate(), blocks[2]);
  EXPECT_EQ(kv.stats().evictions, 1);  // cleared blocks are free, not evicted
}

TEST(KvCache, ReleasedStorageIsNotResidentAndItsBlocksAreNotCached) {
  for (ops::KvDType dt : {ops::KvDType::F32, ops::KvDType::I8}) {
    KvCache kv(small_shape(dt), 16384, true);  // reserved storage (1 MiB or more) for k and v
    const ops::PagedKvView view = kv.view();
    const size_t bytes = static_cast<size_t>(view.num_layers * view.layer_elems() * ops::kv_dtype_size(dt));
    std::memset(view.k, 1, bytes);  // every block written, as a long rollout does
    std::memset(view.v, 1, bytes);
    EXPECT_GE(test::resident_bytes(view.k, bytes), static_cast<int64_t>(bytes) * 9 / 10);
    const int32_t b = kv.allocate();
    const uint64_t h = KvCache::hash_block(0, toks(1));
    kv.insert(b, h, 0, toks(1));
    EXPECT_THROW(kv.release_storage(), Error);  // a block is in use
    kv.release(b);
    kv.release_storage();
    EXPECT_EQ(test::resident_bytes(view.k, bytes), 0);
    EXPECT_EQ(test::resident_bytes(view.v, bytes), 0);
    EXPECT_EQ(kv.lookup(h, 0, toks(1)), -1);  // its content is gone: never served again
    EXPECT_EQ(kv.available_blocks(), kv.num_blocks());
    EXPECT_EQ(static_cast<const char*>(view.k)[100], 0);  // same addresses, zero pages
    std::memset(view.k, 2, 4096);                         // written again without any allocation
    EXPECT_EQ(static_cast<const char*>(kv.view().k)[100], 2);
  }
}

TEST(KvCache, RandomizedAgainstASimpleModel) {
  // Many inserts, lookups, releases and evictions: every cached content is found exactly while cached, the
  // hash table stays consistent through deletions, and references are never lost.
  const int64_t nb = 16;
  KvCache kv(small_shape(), nb, true);
  Rng rng(5);
  std::vector<int32_t> held;                    // references we hold
  std::map<int32_t, int32_t> content;           // block -> content id it was inserted with
  for (int step = 0; step < 5000; ++step) {
    const uint64_t op = rng.below(3);
    if (op == 0) {
      const int32_t b = kv.allocate();
      if (b < 0) {
        ASSERT_EQ(kv.available_blocks(), 0);
        continue;
      }
      content.erase(b);  // evicted or free: no longer cached
      const int32_t c = static_cast<int32_t>(rng.below(40));
      kv.insert(b, KvCache::hash_block(0, toks(c * 4)), 0, toks(c * 4));
      bool dup = false;
      for (auto& [blk, cc] : content) dup |= cc == c;
      if (!dup) content[b] = c;
      held.push_back(b);
    } else if (op == 1 && !held.empty()) {
      const size_t i = rng.below(held.size());
      kv.release(held[i]);
      held.erase(held.begin() + i);
    } else {
      const int32_t c = static_cast<int32_t>(rng.below(40));
      const int32_t got = kv.lookup(KvCache::hash_block(0, toks(c * 4)), 0, toks(c * 4));
      int32_t expect = -1;
      for (auto& [blk, cc] : content)
        if (cc == c) expect = blk;
      ASSERT_EQ(got, expect) << "step " << step;
      if (got >= 0) held.push_back(got);
    }
    int64_t referenced = 0;
    for (int32_t b = 0; b < nb; ++b) referenced += kv.ref_count(b) > 0;
    ASSERT_EQ(referenced + kv.available_blocks(), nb);
  }
}

TEST(IncrementalText, StopStringAcrossTokensIsExcluded) {
  const DecodeFn decode = fake::fake_decode;
  const std::vector<std::string> stops = {"cab", "zz"};
  IncrementalText text(&decode, &stops);
  std::vector<int32_t> gen;
  bool stopped = false;
  for (int32_t t : {0, 1, 36, 2, 0, 1, 3}) {  // "ab cab" + "d"
    gen.push_back(t);
    stopped = text.push(gen);
    if (stopped) break;
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(gen.size(), 6u);  // stopped on the token completing "cab"
  EXPECT_EQ(text.text(), "ab ");
}

TEST(IncrementalText, HoldsBackIncompleteUtf8UntilComplete) {
  const DecodeFn decode = fake::fake_decode;
  const std::vector<std::string> stops = {"\xC3\xA9x"};
  IncrementalText text(&decode, &stops);
  std::vector<int32_t> gen = {0};
  EXPECT_FALSE(text.push(gen));
  gen.push_back(37);  // first byte of é: held back
  EXPECT_FALSE(text.push(gen));
  EXPECT_EQ(text.text(), "a");
  gen.push_back(38);
  EXPECT_FALSE(text.push(gen));
  EXPECT_EQ(text.text(), "a\xC3\xA9");
  gen.push_back(23);  // x: completes the stop string
  EXPECT_TRUE(text.push(gen));
  EXPECT_EQ(text.text(), "a");
}

TEST(IncrementalText, FlushEmitsHeldBackText) {
  const DecodeFn decode = fake::fake_decode;
  const std::vector<std::string> none;
  IncrementalText text(&decode, &none);
  std::vector<int32_t> gen = {1, 37};
  text.push(std::span<const int32_t>(gen).first(1));
  text.push(gen);
  EXPECT_EQ(text.text(), "b");
  EXPECT_FALSE(text.flush(gen));
  EXPECT_EQ(text.text(), "b\xEF\xBF\xBD");
}
