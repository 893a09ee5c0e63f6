// Regular expressions of tokenizer.json (Oniguruma syntax in Hugging Face tokenizers) run with PCRE2's
// JIT: Unicode properties (\p{L}), lookahead, case-insensitive groups. Matching is thread-safe: each
// thread keeps its own match data and JIT stack.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace grpo {

class Regex {
 public:
  // Compiles `pattern`; errors name `where` (e.g. "tokenizer.json: pre_tokenizer.pretokenizers[0]").
  Regex(const std::string& pattern, const std::string& where);

  // Appends [begin, end) of every match in `text` (valid UTF-8), left to right, like Oniguruma's
  // find_iter: an empty match right where the previous match ended is skipped.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;

 private:
  struct Code;
  std::string pattern_;
  std::string where_;
  std::shared_ptr<Code> code_;
};

}  // namespace grpo
