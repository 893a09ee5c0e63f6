// The BPE merge loop: rank order (lowest first, leftmost on ties), both merge spellings, agreement with a
// naive quadratic reference on Qwen3's merges, the 100 kB word that must stay fast, and load errors.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "core/error.h"
#include "core/files.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer_fixture.h"

namespace grpo {
namespace {

TEST(Bpe, MergesByRankNotByPosition) {
  // "b c" ranks before "a b": "abc" -> a + bc, not ab + c.
  const Tokenizer tok = tiny_tokenizer(tiny_tokenizer_json({{"b", "c"}, {"a", "b"}}));
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{'a', 256}));
  EXPECT_EQ(tok.encode("ab"), (std::vector<int32_t>{257}));
}

TEST(Bpe, LeftmostWinsOnEqualRank) {
  // "aaa" with only "a a": the leftmost pair merges first -> aa + a.
  const Tokenizer tok = tiny_tokenizer(tiny_tokenizer_json({{"a", "a"}}));
  EXPECT_EQ(tok.encode("aaa"), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(tok.encode("aaaa"), (std::vector<int32_t>{256, 256}));
}

TEST(Bpe, ChainedMergesAndPairSpelling) {
  auto j = tiny_tokenizer_json({{"a", "b"}, {"ab", "c"}, {"\xC4\xA0", "abc"}});  // "Ġ abc" = " abc"
  const Tokenizer from_strings = tiny_tokenizer(j);
  // The same merges written as ["left", "right"] pairs.
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& m : j["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    pairs.push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  j["model"]["merges"] = pairs;
  const Tokenizer from_pairs = tiny_tokenizer(j);
  for (const Tokenizer* tok : {&from_strings, &from_pairs}) {
    EXPECT_EQ(tok->encode("abc abc"), (std::vector<int32_t>{257, 258}));
    EXPECT_EQ(tok->decode({257, 258}), "abc abc");
  }
}

// Quadratic reference: repeatedly merge the leftmost pair of lowest rank.
std::vector<int32_t> naive_bpe(const BpeModel& model, std::string_view word) {
  std::vector<int32_t> ids;
  for (char c : word) {
    std::string ch;
    ch = byte_level::encode(std::string(1, c));
    ids.push_back(model.token_to_id(ch));
  }
  for (;;) {
    int32_t best_rank = INT32_MAX, best_pos = -1, best_id = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const MergeTable::Merge* m = model.merges().find(ids[i], ids[i + 1]);
      if (m && m->rank < best_rank) {
        best_rank = m->rank;
        best_pos = static_cast<int32_t>(i);
        best_id = m->id;
      }
    }
    if (best_pos < 0) return ids;
    ids[best_pos] = best_id;
    ids.erase(ids.begin() + best_pos + 1);
  }
}

const BpeModel& qwen3_model() {
  static const BpeModel model = [] {
    const auto j = nlohmann::json::parse(read_file(std::string(GRPO_SHARED_DIR) + "/models/qwen3-tokenizer/tokenizer.json"));
    return BpeModel::from_json(j["model"], "qwen3 model");
  }();
  return model;
}

TEST(Bpe, HeapLoopAgreesWithNaiveReferenceOnQwen3Merges) {
  const BpeModel& model = qwen3_model();
  EXPECT_EQ(model.merges().size(), 151387u);
  std::mt19937 rng(5);
  const std::string alphabet = "etaoinshrdlucmfwyp ETAOIN0123456789.,'-_\xC3\xA9\xE4\xB8\xAD";
  for (int t = 0; t < 1000; ++t) {
    std::string word;
    const int len = 1 + static_cast<int>(rng() % 24);
    for (int k = 0; k < len; ++k) word += alphabet[rng() % alphabet.size()];
    std::vector<int32_t> fast;
    model.encode_word_uncached(word, fast);
    ASSERT_EQ(fast, naive_bpe(model, word)) << word;
    std::vector<int32_t> cached, again;
    model.encode_word(word, cached);
    model.encode_word(word, again);
    ASSERT_EQ(cached, fast);
    ASSERT_EQ(again, fast);
  }
}

TEST(Bpe, HundredKilobyteWordIsFast) {
  const Tokenizer& tok = qwen3_tokenizer();
  std::mt19937 rng(1);
  std::string random_letters, repeated(100000, 'a');
  for (int k = 0; k < 100000; ++k) random_letters += static_cast<char>('a' + rng() % 26);
  for (const std::string* word : {&random_letters, &repeated}) {
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok.encode(*word);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 10.0);  // ~20 ms in Release, ~1 s with sanitizers; a quadratic loop takes minutes
    EXPECT_EQ(tok.decode(ids), *word);
    EXPECT_LT(ids.size(), word->size() * 2 / 3);
  }
}

TEST(Bpe, LoadErrorsNameTheMerge) {
  auto expect_error = [](nlohmann::json j, const std::string& needle) {
    try {
      tiny_tokenizer(j);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto j = tiny_tokenizer_json({{"a", "b"}});
  j["model"]["merges"].push_back("a b c");
  expect_error(j, "merges[1]");
  j = tiny_tokenizer_json({{"a", "b"}});
  j["model"]["merges"].push_back("x \xE4\xB8\xAD");
  expect_error(j, "is not in the vocab");
  j = tiny_tokenizer_json({});
  j["model"]["type"] = "WordPiece";
  expect_error(j, "\"WordPiece\" is not supported");
  j = tiny_tokenizer_json({});
  j["model"]["continuing_subword_prefix"] = "##";
  expect_error(j, "continuing_subword_prefix");
  // A flag of another type is named (found by fuzz_tokenizer: an object here escaped as nlohmann's error).
  for (const char* flag : {"byte_fallback", "ignore_merges", "fuse_unk"}) {
    j = tiny_tokenizer_json({});
    j["model"][flag] = nlohmann::json::object();
    expect_error(j, std::string(flag) + ": expected true or false");
  }
}

// Ids number the vocab's entries: an id at or past the entry count is refused before any id-indexed table
// is sized (an id of 1e9 must not allocate gigabytes), as are negative and non-integer ids.
TEST(Bpe, VocabIdsAreBoundedByTheEntryCount) {
  auto expect_error = [](const nlohmann::json& id, const std::string& needle) {
    auto j = tiny_tokenizer_json({{"a", "b"}});
    j["model"]["vocab"]["ab"] = id;
    try {
      tiny_tokenizer(j);
      ADD_FAILURE() << "no error for id " << id.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string bound = "vocab[\"ab\"]: expected an id in 0..256 (the vocab has 257 entries), got ";
  expect_error(1000000000, bound + "1000000000");
  expect_error(257, bound + "257");
  expect_error(uint64_t{1} << 63, bound + "9223372036854775808");
  expect_error(-1, bound + "-1");
  expect_error(2.5, bound + "2.5");
  auto j = tiny_tokenizer_json({{"a", "b"}});
  j["model"]["vocab"]["ab"] = 256;
  EXPECT_EQ(tiny_tokenizer(j).vocab_size(), 257);
}

TEST(Bpe, IgnoreMergesTakesWholeWordsFromTheVocab) {
  auto j = tiny_tokenizer_json({{"a", "b"}, {"b", "c"}});
  j["model"]["vocab"]["abc"] = 258;  // reachable only as a whole word
  j["model"]["ignore_merges"] = true;
  const Tokenizer tok = tiny_tokenizer(j);
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(tok.encode("abcb"), (std::vector<int32_t>{256, 'c', 'b'}));
}

}  // namespace
}  // namespace grpo
