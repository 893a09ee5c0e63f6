// Implementation of Regex (see regex.h) with PCRE2 (8-bit, UTF + UCP, JIT-compiled).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace grpo {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// Per-thread matching state: match data for the whole-match offsets and a JIT stack that grows up to
// 64 MiB (long runs of whitespace or letters backtrack deeply through lookaheads).
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;

  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    if (!data || !context || !jit_stack) fail("[regex] out of memory creating PCRE2 match state");
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

// Oniguruma's \s (what Hugging Face tokenizers uses) is Unicode White_Space; PCRE2's also matches U+180E.
// These spell Oniguruma's classes out for PCRE2.
constexpr const char* kSpaceRanges = "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

// Rewrites \s and \S of an Oniguruma pattern into PCRE2 classes with Oniguruma's meaning.
std::string translate_oniguruma(const std::string& pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? cat(kSpaceRanges) : cat("[", kSpaceRanges, "]");
      } else if (e == 'S') {
        out += in_class ? std::string("\\S\\x{180E}") : cat("[^", kSpaceRanges, "]");
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t end = pattern.find(":]", i + 2);  // POSIX class like [:alpha:]
      if (end != std::string::npos) {
        out.append(pattern, i, end + 2 - i);
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, const std::string& where)
    : pattern_(pattern), where_(where), code_(std::make_shared<Code>()) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  const std::string translated = translate_oniguruma(pattern);
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), PCRE2_UTF | PCRE2_UCP,
                              &error_code, &error_offset, nullptr);
  if (!code_->code)
    fail("[regex] ", where, ": cannot compile pattern \"", pattern, "\" at offset ", error_offset, ": ",
         pcre2_message(error_code));
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  ThreadMatchState& state = thread_match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  bool has_previous = false;
  size_t previous_end = 0;
  while (start <= text.size()) {
    const int rc = code_->jit ? pcre2_jit_match(code_->code, subject, text.size(), start, 0, state.data, state.context)
                              : pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK,
                                            state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) fail("[regex] ", where_, ": matching \"", pattern_, "\" failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin == end && has_previous && previous_end == end) {
      // Oniguruma semantics: skip one character and search again.
      if (start >= text.size()) return;
      const size_t len = utf8::valid_sequence_length(text, start);
      start += len == 0 ? 1 : len;
      continue;
    }
    matches.emplace_back(begin, end);
    has_previous = true;
    previous_end = end;
    start = end;
  }
}

}  // namespace grpo
