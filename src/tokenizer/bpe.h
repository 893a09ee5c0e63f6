// The byte-level BPE model of tokenizer.json: vocabulary, merges ranked by their order, and the merge
// loop of Hugging Face tokenizers (lowest rank first, leftmost on ties) over a linked list of symbols with
// a binary heap, O(n log n) in the word length. Words are raw bytes; byte b starts as the token of the
// byte-level character of b. Encoded words are cached per thread (bounded).
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace grpo {

// Open-addressing hash map from a token pair (left id, right id) to (rank, merged id).
class MergeTable {
 public:
  struct Merge {
    int32_t rank = -1;
    int32_t id = -1;
  };
  void reserve(size_t n);
  // Later inserts of the same pair replace earlier ones.
  void insert(int32_t left, int32_t right, Merge merge);
  // nullptr when the pair has no merge.
  const Merge* find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    for (size_t slot = hash(key);; slot = (slot + 1) & mask_) {
      const Entry& e = entries_[slot];
      if (e.key == key) return &e.merge;
      if (e.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Entry {
    uint64_t key = kEmpty;
    Merge merge;
  };
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t hash(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  void rehash(size_t capacity);

  std::vector<Entry> entries_ = std::vector<Entry>(1);
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

class BpeModel {
 public:
  // From tokenizer.json's "model" (type BPE); `where` names it in errors.
  static BpeModel from_json(const nlohmann::json& model, const std::string& where);

  // Appends the ids of one pre-tokenized word (raw bytes) to out. Thread-safe.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // The same without the cache (for tests and benchmarks of the merge loop).
  void encode_word_uncached(std::string_view word, std::vector<int32_t>& out) const;

  int32_t token_to_id(std::string_view token) const;  // byte-level token string; -1 if none
  // Byte-level token string of id ("" for ids without a token).
  const std::string& id_to_token(int32_t id) const;
  int32_t max_id() const { return static_cast<int32_t>(tokens_.size()) - 1; }
  size_t vocab_entries() const { return vocab_.size(); }
  const MergeTable& merges() const { return merges_; }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  Vocab vocab_;                        // byte-level token string -> id
  Vocab raw_vocab_;                    // raw bytes -> id (only with ignore_merges)
  std::vector<std::string> tokens_;    // id -> byte-level token string
  std::array<int32_t, 256> byte_ids_;  // byte -> id of its byte-level character, or -1
  MergeTable merges_;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  uint64_t cache_owner_ = 0;  // identifies this model's entries in the per-thread word caches
};

}  // namespace grpo
