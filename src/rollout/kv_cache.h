// The paged KV cache of the rollout engine: the storage (all layers, one pool of fixed-size blocks sized by a
// memory budget), the block allocator (free list + reference counts, so a prompt's full blocks are shared by
// its n samples) and the cross-request prefix cache (chained block hashes over the tokens so far; cached
// blocks nobody references stay reusable until evicted, least recently released first).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/arena.h"
#include "kernels/paged_ops.h"

namespace grpo::rollout {

struct KvCacheShape {
  int64_t num_layers = 0, num_kv_heads = 0, head_dim = 0;
  int64_t block_size = 16;
  ops::KvDType dtype = ops::KvDType::F32;
};

// Bytes available on this machine (MemAvailable of /proc/meminfo).
int64_t available_memory_bytes();

class KvCache {
 public:
  // num_blocks blocks of shape.block_size tokens; prefix_cache switches the cross-request cache.
  KvCache(const KvCacheShape& shape, int64_t num_blocks, bool prefix_cache);
  // Number of blocks that fit in `bytes`, and the bytes of one block (all layers, k and v, scales).
  static int64_t blocks_for_bytes(const KvCacheShape& shape, int64_t bytes);
  static int64_t bytes_per_block(const KvCacheShape& shape);

  const ops::PagedKvView& view() const { return view_; }
  int64_t num_blocks() const { return view_.num_blocks; }
  int64_t block_size() const { return view_.block_size; }
  bool prefix_cache_enabled() const { return prefix_cache_; }

  // Blocks that allocate() can hand out now (free ones plus evictable cached ones).
  int64_t available_blocks() const { return static_cast<int64_t>(free_.size()) + lru_size_; }
  // A block with reference count 1, or -1 when none is available. Evicts the least recently released
  // cached block when the free list is empty.
  int32_t allocate();
  void retain(int32_t block);   // one more reference
  void release(int32_t block);  // one reference less; at 0 the block becomes free (or evictable if cached)
  int32_t ref_count(int32_t block) const { return refs_[block]; }

  // Prefix cache. hash_block chains the previous block's hash with a full block of tokens.
  static uint64_t hash_block(uint64_t parent_hash, std::span<const int32_t> tokens);
  // The cached block holding exactly `tokens` after `parent_hash`, retained; -1 when not cached.
  int32_t lookup(uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens);
  // Records that full block `block` holds `tokens` after `parent_hash` (no-op when caching is off or the
  // hash is already cached).
  void insert(int32_t block, uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens);

  // Forgets every cached block (cached blocks nobody references become free).
  void clear_prefix_cache();
  // Between rollouts: forgets the prefix cache and returns the storage's memory to the system (the pages
  // of k, v and their scales read as zero until written again; the address ranges and the view stay
  // valid, nothing is allocated). Every block must be free.
  void release_storage();

  struct Stats {
    int64_t lookups = 0, hits = 0, evictions = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  // Intrusive LRU list of unreferenced cached blocks (node num_blocks is the sentinel) and an
  // open-addressing hash table (linear probing) of cached blocks: no allocation after construction.
  void lru_push_back(int32_t block);
  void lru_remove(int32_t block);
  int64_t find_slot(uint64_t hash) const;  // table slot holding hash, or the empty slot where it would go
  void table_erase(int32_t block);
  void forget(int32_t block);  // drops a block from the prefix cache

  ops::PagedKvView view_;
  Buffer k_, v_, k_scale_, v_scale_;
  bool prefix_cache_;
  std::vector<int32_t> refs_;          // [num_blocks]
  std::vector<int32_t> free_;          // stack of free, uncached blocks (capacity num_blocks)
  std::vector<int32_t> lru_prev_, lru_next_;  // [num_blocks + 1]
  int64_t lru_size_ = 0;
  std::vector<uint8_t> cached_;        // [num_blocks] 1 when the block is in the prefix cache
  std::vector<uint64_t> hash_, parent_hash_;  // [num_blocks]
  std::vector<int32_t> block_tokens_;  // [num_blocks, block_size] tokens of cached blocks (collision check)
  std::vector<int32_t> table_;         // [power of 2 >= 2 num_blocks] block ids, -1 empty
  Stats stats_;
};

}  // namespace grpo::rollout
