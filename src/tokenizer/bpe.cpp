// Implementation of the byte-level BPE model (see bpe.h).
#include "tokenizer/bpe.h"

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace grpo {
namespace {

// ---- per-thread cache of encoded words ----

// Open-addressing table of word -> ids for one BPE model; cleared when half full or when another model
// uses it. Keys and ids live in two flat buffers, so a lookup allocates nothing.
class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;

  bool lookup(std::string_view word, size_t hash, std::vector<int32_t>& out) const {
    if (slots_.empty()) return false;
    for (size_t s = hash & kMask;; s = (s + 1) & kMask) {
      const Slot& slot = slots_[s];
      if (!slot.used) return false;
      if (slot.hash == hash && slot.key_length == word.size() &&
          std::string_view(keys_).substr(slot.key_offset, slot.key_length) == word) {
        out.insert(out.end(), ids_.begin() + slot.ids_offset, ids_.begin() + slot.ids_offset + slot.id_count);
        return true;
      }
    }
  }

  void insert(std::string_view word, size_t hash, const int32_t* ids, size_t count) {
    if (slots_.empty() || count_ >= kSlots / 2) clear();
    size_t s = hash & kMask;
    while (slots_[s].used) s = (s + 1) & kMask;
    slots_[s] = Slot{hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(ids_.size()),
                     static_cast<uint16_t>(word.size()), static_cast<uint16_t>(count), true};
    keys_.append(word);
    ids_.insert(ids_.end(), ids, ids + count);
    ++count_;
  }

  // Makes the cache belong to `owner`, dropping another model's entries.
  void claim(uint64_t owner) {
    if (owner_ != owner) {
      owner_ = owner;
      clear();
    }
  }

 private:
  static constexpr size_t kSlots = size_t{1} << 15;
  static constexpr size_t kMask = kSlots - 1;
  struct Slot {
    size_t hash = 0;
    uint32_t key_offset = 0, ids_offset = 0;
    uint16_t key_length = 0, id_count = 0;
    bool used = false;
  };
  void clear() {
    slots_.assign(kSlots, Slot{});
    keys_.clear();
    ids_.clear();
    count_ = 0;
  }

  uint64_t owner_ = 0;
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<int32_t> ids_;
  size_t count_ = 0;
};

std::atomic<uint64_t> next_cache_owner{1};

// ---- merge loop ----

struct Symbol {
  int32_t id;
  int32_t prev, next;  // linked list over the word; -1 at the ends
  bool alive;
};

struct Candidate {
  int32_t rank, pos, id;  // merge symbol `pos` with its next symbol into `id`
};

// Min-heap order on (rank, pos): std heap functions keep the greatest first, so invert.
bool after(const Candidate& a, const Candidate& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; }

}  // namespace

// ---- MergeTable ----

void MergeTable::rehash(size_t capacity) {
  std::vector<Entry> old = std::move(entries_);
  entries_.assign(capacity, Entry{});
  mask_ = capacity - 1;
  shift_ = 64 - __builtin_ctzll(capacity);
  size_ = 0;
  for (const Entry& e : old)
    if (e.key != kEmpty) insert(static_cast<int32_t>(e.key >> 32), static_cast<int32_t>(e.key & 0xFFFFFFFF), e.merge);
}

void MergeTable::reserve(size_t n) {
  size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;
  if (capacity > entries_.size()) rehash(capacity);
}

void MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  if (2 * (size_ + 1) > entries_.size()) rehash(std::max<size_t>(16, entries_.size() * 2));
  const uint64_t key = pack(left, right);
  for (size_t slot = hash(key);; slot = (slot + 1) & mask_) {
    Entry& e = entries_[slot];
    if (e.key == key) {
      e.merge = merge;
      return;
    }
    if (e.key == kEmpty) {
      e.key = key;
      e.merge = merge;
      ++size_;
      return;
    }
  }
}

// ---- BpeModel ----

BpeModel BpeModel::from_json(const nlohmann::json& model, const std::string& where) {
  if (!model.is_object()) fail("[tokenizer] ", where, ": expected an object");
  if (model.contains("type") && model["type"] != "BPE")
    fail("[tokenizer] ", where, ".type: model type ", model["type"].dump(), " is not supported (supported: BPE)");
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      !(model["dropout"].is_number() && model["dropout"].get<double>() == 0.0))
    fail("[tokenizer] ", where, ".dropout: BPE dropout is not supported (expected null)");
  if (!json_string_or_empty(model, "continuing_subword_prefix", where).empty())
    fail("[tokenizer] ", where, ".continuing_subword_prefix: not supported (expected null or \"\")");
  if (!json_string_or_empty(model, "end_of_word_suffix", where).empty())
    fail("[tokenizer] ", where, ".end_of_word_suffix: not supported (expected null or \"\")");
  if (json_bool(model, "byte_fallback", false, where))
    fail("[tokenizer] ", where, ".byte_fallback: not supported with byte-level BPE (expected false)");

  BpeModel m;
  m.cache_owner_ = next_cache_owner.fetch_add(1);
  m.ignore_merges_ = json_bool(model, "ignore_merges", false, where);
  m.fuse_unk_ = json_bool(model, "fuse_unk", false, where);

  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail("[tokenizer] ", where, ".vocab: expected an object {token: id}");
  const nlohmann::json& vocab = model["vocab"];
  // Ids number the entries (Hugging Face gives added tokens the ids after them), so an id is below the entry
  // count; bounding it here keeps the id-indexed tables below as large as the file, whatever the ids say.
  const int64_t entries = static_cast<int64_t>(vocab.size());
  int32_t max_id = -1;
  m.vocab_.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || (id.is_number_unsigned() && id.get<uint64_t>() >= static_cast<uint64_t>(entries)) ||
        id.get<int64_t>() < 0 || id.get<int64_t>() >= entries)
      fail("[tokenizer] ", where, ".vocab[\"", token, "\"]: expected an id in 0..", entries - 1,
           " (the vocab has ", entries, " entries), got ", id.dump());
    m.vocab_.emplace(token, id.get<int32_t>());
    max_id = std::max(max_id, id.get<int32_t>());
  }
  m.tokens_.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& [token, id] : m.vocab_) m.tokens_[id] = token;
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8::append_code_point(ch, byte_level::char_of_byte(static_cast<uint8_t>(b)));
    m.byte_ids_[b] = m.token_to_id(ch);
  }
  if (m.ignore_merges_)
    for (const auto& [token, id] : m.vocab_) m.raw_vocab_.emplace(byte_level::decode(token), id);

  const std::string unk = json_string_or_empty(model, "unk_token", where);
  if (!unk.empty()) {
    m.unk_id_ = m.token_to_id(unk);
    if (m.unk_id_ < 0) fail("[tokenizer] ", where, ".unk_token: \"", unk, "\" is not in the vocab");
  }

  if (!model.contains("merges") || !model["merges"].is_array())
    fail("[tokenizer] ", where, ".merges: expected an array");
  const nlohmann::json& merges = model["merges"];
  m.merges_.reserve(merges.size());
  int32_t rank = 0;
  for (size_t k = 0; k < merges.size(); ++k) {
    const nlohmann::json& entry = merges[k];
    std::string left, right;
    if (entry.is_string()) {
      const std::string& line = entry.get_ref<const std::string&>();
      if (line.rfind("#version", 0) == 0) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
        fail("[tokenizer] ", where, ".merges[", k, "]: expected \"left right\" (one space), got \"", line, "\"");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
      left = entry[0].get<std::string>();
      right = entry[1].get<std::string>();
    } else {
      fail("[tokenizer] ", where, ".merges[", k, "]: expected \"left right\" or [\"left\", \"right\"], got ",
           entry.dump());
    }
    const int32_t left_id = m.token_to_id(left), right_id = m.token_to_id(right);
    const int32_t merged_id = m.token_to_id(left + right);
    if (left_id < 0 || right_id < 0 || merged_id < 0)
      fail("[tokenizer] ", where, ".merges[", k, "]: \"", left_id < 0 ? left : right_id < 0 ? right : left + right,
           "\" is not in the vocab");
    m.merges_.insert(left_id, right_id, {rank++, merged_id});
  }
  return m;
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string& BpeModel::id_to_token(int32_t id) const {
  static const std::string empty;
  return id >= 0 && id < static_cast<int32_t>(tokens_.size()) ? tokens_[id] : empty;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() == 1 && byte_ids_[static_cast<uint8_t>(word[0])] >= 0) {
    out.push_back(byte_ids_[static_cast<uint8_t>(word[0])]);
    return;
  }
  if (word.size() > WordCache::kMaxWordBytes) {
    encode_word_uncached(word, out);
    return;
  }
  thread_local WordCache cache;
  cache.claim(cache_owner_);
  const size_t hash = std::hash<std::string_view>{}(word);
  if (cache.lookup(word, hash, out)) return;
  const size_t before = out.size();
  encode_word_uncached(word, out);
  cache.insert(word, hash, out.data() + before, out.size() - before);
}

void BpeModel::encode_word_uncached(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const auto it = raw_vocab_.find(word);
    if (it != raw_vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.clear();
  heap.clear();
  for (char ch : word) {
    const auto b = static_cast<uint8_t>(ch);
    int32_t id = byte_ids_[b];
    if (id < 0) {
      if (unk_id_ < 0)
        fail("[tokenizer] byte 0x", "0123456789ABCDEF"[b >> 4], "0123456789ABCDEF"[b & 15],
             " has no token in the vocabulary and the model has no unk_token");
      if (fuse_unk_ && !symbols.empty() && symbols.back().id == unk_id_) continue;
      id = unk_id_;
    }
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, n - 1, -1, true});
    if (n > 0) symbols[n - 1].next = n;
  }
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) {
    if (const MergeTable::Merge* m = merges_.find(symbols[i].id, symbols[i + 1].id)) heap.push_back({m->rank, i, m->id});
  }
  std::make_heap(heap.begin(), heap.end(), after);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // Skip stale candidates: the pair at `pos` changed since this one was queued.
    const MergeTable::Merge* current = merges_.find(left.id, right.id);
    if (!current || current->id != top.id) continue;
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const MergeTable::Merge* m = merges_.find(symbols[left.prev].id, left.id)) {
        heap.push_back({m->rank, left.prev, m->id});
        std::push_heap(heap.begin(), heap.end(), after);
      }
    }
    if (left.next >= 0) {
      if (const MergeTable::Merge* m = merges_.find(left.id, symbols[left.next].id)) {
        heap.push_back({m->rank, top.pos, m->id});
        std::push_heap(heap.begin(), heap.end(), after);
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace grpo
