// Paged KV cache: storage, block allocator with reference counts, prefix cache with LRU eviction
// (see kv_cache.h).
#include "rollout/kv_cache.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace grpo::rollout {

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  GRPO_CHECK(in, "[kv_cache] cannot read /proc/meminfo to size the cache from a memory fraction");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream ls(line.substr(13));
    int64_t kb = 0;
    GRPO_CHECK(ls >> kb, "[kv_cache] /proc/meminfo: cannot parse \"", line, "\"");
    return kb * 1024;
  }
  fail("[kv_cache] /proc/meminfo has no MemAvailable line");
}

namespace {
ops::PagedKvView shape_view(const KvCacheShape& s, int64_t num_blocks) {
  ops::PagedKvView v;
  v.dtype = s.dtype;
  v.num_layers = s.num_layers;
  v.num_blocks = num_blocks;
  v.num_kv_heads = s.num_kv_heads;
  v.block_size = s.block_size;
  v.head_dim = s.head_dim;
  return v;
}
}  // namespace

int64_t KvCache::bytes_per_block(const KvCacheShape& shape) { return shape_view(shape, 1).bytes_per_block(); }

int64_t KvCache::blocks_for_bytes(const KvCacheShape& shape, int64_t bytes) { return bytes / bytes_per_block(shape); }

KvCache::KvCache(const KvCacheShape& shape, int64_t num_blocks, bool prefix_cache)
    : view_(shape_view(shape, num_blocks)), prefix_cache_(prefix_cache) {
  GRPO_CHECK(shape.num_layers > 0 && shape.num_kv_heads > 0 && shape.head_dim > 0, "[kv_cache] layers ",
             shape.num_layers, ", kv heads ", shape.num_kv_heads, ", head_dim ", shape.head_dim, ": all must be > 0");
  GRPO_CHECK(shape.block_size > 0, "[kv_cache] block_size must be > 0, got ", shape.block_size);
  GRPO_CHECK(num_blocks > 0 && num_blocks < (int64_t{1} << 31) / shape.block_size, "[kv_cache] num_blocks ",
             num_blocks, " must be > 0 and keep slot ids in int32");
  const size_t bytes = static_cast<size_t>(view_.num_layers * view_.layer_elems() * ops::kv_dtype_size(shape.dtype));
  k_ = Buffer(bytes, cat("the KV cache keys (", num_blocks, " blocks of ", shape.block_size, " tokens)"));
  v_ = Buffer(bytes, cat("the KV cache values (", num_blocks, " blocks of ", shape.block_size, " tokens)"));
  view_.k = k_.data();
  view_.v = v_.data();
  if (shape.dtype == ops::KvDType::I8) {
    const size_t sbytes = static_cast<size_t>(view_.num_layers * num_blocks * view_.num_kv_heads * view_.block_size) *
                          sizeof(float);
    k_scale_ = Buffer(sbytes, "the int8 KV cache key scales");
    v_scale_ = Buffer(sbytes, "the int8 KV cache value scales");
    view_.k_scale = static_cast<float*>(k_scale_.data());
    view_.v_scale = static_cast<float*>(v_scale_.data());
  }
  refs_.assign(num_blocks, 0);
  free_.reserve(num_blocks);
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));  // hands out 0, 1, ...
  lru_prev_.assign(num_blocks + 1, static_cast<int32_t>(num_blocks));
  lru_next_.assign(num_blocks + 1, static_cast<int32_t>(num_blocks));
  cached_.assign(num_blocks, 0);
  hash_.assign(num_blocks, 0);
  parent_hash_.assign(num_blocks, 0);
  if (prefix_cache_) {
    block_tokens_.assign(num_blocks * shape.block_size, 0);
    size_t cap = 1;
    while (cap < static_cast<size_t>(2 * num_blocks)) cap *= 2;
    table_.assign(cap, -1);
  }
}

void KvCache::lru_push_back(int32_t b) {
  const int32_t sentinel = static_cast<int32_t>(view_.num_blocks), last = lru_prev_[sentinel];
  lru_next_[last] = b;
  lru_prev_[b] = last;
  lru_next_[b] = sentinel;
  lru_prev_[sentinel] = b;
  ++lru_size_;
}

void KvCache::lru_remove(int32_t b) {
  lru_next_[lru_prev_[b]] = lru_next_[b];
  lru_prev_[lru_next_[b]] = lru_prev_[b];
  --lru_size_;
}

int32_t KvCache::allocate() {
  int32_t b = -1;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (lru_size_ > 0) {
    b = lru_next_[view_.num_blocks];  // least recently released
    lru_remove(b);
    forget(b);
    ++stats_.evictions;
  } else {
    return -1;
  }
  refs_[b] = 1;
  return b;
}

void KvCache::retain(int32_t b) {
  GRPO_CHECK(b >= 0 && b < view_.num_blocks, "[kv_cache] retain of block ", b, " outside [0, ", view_.num_blocks, ")");
  if (refs_[b] == 0) {
    GRPO_CHECK(cached_[b], "[kv_cache] retain of free block ", b);
    lru_remove(b);
  }
  ++refs_[b];
}

void KvCache::release(int32_t b) {
  GRPO_CHECK(b >= 0 && b < view_.num_blocks && refs_[b] > 0, "[kv_cache] release of block ", b,
             " which holds no reference");
  if (--refs_[b] > 0) return;
  if (cached_[b])
    lru_push_back(b);
  else
    free_.push_back(b);
}

uint64_t KvCache::hash_block(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t x = parent_hash ^ 0x6a09e667f3bcc909ull;
  uint64_t h = splitmix64(x);
  for (int32_t t : tokens) {
    x = h ^ (static_cast<uint64_t>(static_cast<uint32_t>(t)) * 0x9e3779b97f4a7c15ull);
    h = splitmix64(x);
  }
  return h;
}

int64_t KvCache::find_slot(uint64_t hash) const {
  const size_t mask = table_.size() - 1;
  size_t i = hash & mask;
  while (table_[i] >= 0 && hash_[table_[i]] != hash) i = (i + 1) & mask;
  return static_cast<int64_t>(i);
}

void KvCache::table_erase(int32_t block) {
  const size_t mask = table_.size() - 1;
  size_t i = static_cast<size_t>(find_slot(hash_[block]));
  table_[i] = -1;
  // backward-shift deletion: move later entries of the probe run into the hole when their home allows it
  for (size_t j = (i + 1) & mask; table_[j] >= 0; j = (j + 1) & mask) {
    const size_t home = hash_[table_[j]] & mask;
    const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    table_[i] = table_[j];
    table_[j] = -1;
    i = j;
  }
}

void KvCache::forget(int32_t block) {
  table_erase(block);
  cached_[block] = 0;
}

void KvCache::clear_prefix_cache() {
  const int32_t sentinel = static_cast<int32_t>(view_.num_blocks);
  for (int32_t b = lru_next_[sentinel]; b != sentinel; b = lru_next_[b]) free_.push_back(b);
  lru_next_[sentinel] = lru_prev_[sentinel] = sentinel;
  lru_size_ = 0;
  std::fill(cached_.begin(), cached_.end(), 0);
  std::fill(table_.begin(), table_.end(), -1);
}

void KvCache::release_storage() {
  clear_prefix_cache();  // the cached blocks' contents go with the pages
  GRPO_CHECK(static_cast<int64_t>(free_.size()) == view_.num_blocks, "[kv_cache] release of the storage while ",
             view_.num_blocks - static_cast<int64_t>(free_.size()), " of ", view_.num_blocks, " blocks are in use");
  for (Buffer* b : {&k_, &v_, &k_scale_, &v_scale_}) b->discard(0, b->size());
}

int32_t KvCache::lookup(uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens) {
  if (!prefix_cache_) return -1;
  ++stats_.lookups;
  const int32_t b = table_[find_slot(hash)];
  if (b < 0 || parent_hash_[b] != parent_hash ||
      !std::equal(tokens.begin(), tokens.end(), block_tokens_.begin() + b * view_.block_size))
    return -1;
  ++stats_.hits;
  retain(b);
  return b;
}

void KvCache::insert(int32_t block, uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens) {
  if (!prefix_cache_ || cached_[block]) return;
  GRPO_CHECK(static_cast<int64_t>(tokens.size()) == view_.block_size, "[kv_cache] insert of block ", block, " with ",
             tokens.size(), " tokens, expected a full block of ", view_.block_size);
  const int64_t slot = find_slot(hash);
  if (table_[slot] >= 0) return;  // the same content is cached in another block already
  table_[slot] = block;
  cached_[block] = 1;
  hash_[block] = hash;
  parent_hash_[block] = parent_hash;
  std::copy(tokens.begin(), tokens.end(), block_tokens_.begin() + block * view_.block_size);
}

}  // namespace grpo::rollout
