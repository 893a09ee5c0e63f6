// Tokenizer for Jinja templates: splits text from {{ }}, {% %} and {# #} tags (with Jinja2's whitespace
// rules) and tokenizes the expressions inside tags.
#include "tokenizer/jinja/lexer.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "core/error.h"
#include "tokenizer/jinja/utf8.h"

namespace grpo::jinja {

namespace {

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_ascii_digit(c); }

// Length of s once trailing (Python) whitespace is removed.
size_t rstripped_size(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    if (!is_space(next_codepoint(s, i))) break;
    end = start;
  }
  return end;
}

bool all_space(std::string_view s) {
  for (size_t i = 0; i < s.size();)
    if (!is_space(next_codepoint(s, i))) return false;
  return true;
}

void append_escape_codepoint(std::string& out, std::string_view digits, int base, std::string_view original) {
  uint32_t cp = 0;
  for (char c : digits) {
    const int d = is_ascii_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
    cp = cp * static_cast<uint32_t>(base) + static_cast<uint32_t>(d);
  }
  if (cp > 0x10FFFF) {
    out += original;
    return;
  }
  append_utf8(out, cp);
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name) : name_(name) {
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit_text(src_.substr(pos_));
        break;
      }
      const char kind = src_[tag + 1];
      const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      std::string text = src_.substr(pos_, tag - pos_);
      const int text_newlines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
      strip_before_tag(text, sign, kind != '{', line_starting);
      if (!text.empty()) tokens_.push_back({TokenType::Text, std::move(text), line_});
      line_ += text_newlines;
      pos_ = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        line_starting = lex_comment();
      } else if (kind == '%' && lex_raw_begin(line_starting)) {
        line_starting = lex_raw_body(line_starting);
      } else {
        line_starting = lex_tag(kind == '%');
      }
    }
    tokens_.push_back({TokenType::End, "", line_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error(const std::string& what, int line) const {
    grpo::fail("[jinja] ", name_, ":", line, ": ", what);
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos && i + 1 < src_.size(); i = src_.find('{', i + 1)) {
      const char c = src_[i + 1];
      if (c == '{' || c == '%' || c == '#') return i;
    }
    return std::string::npos;
  }

  void strip_before_tag(std::string& text, char sign, bool is_block_or_comment, bool line_starting) const {
    if (sign == '-') {
      text.resize(rstripped_size(text));
    } else if (sign != '+' && is_block_or_comment) {  // lstrip_blocks
      const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
      if ((l_pos > 0 || line_starting) && l_pos < text.size() && all_space(std::string_view(text).substr(l_pos)))
        text.resize(l_pos);
    }
  }

  // Consumes whitespace after a `-` end tag, or the one newline trim_blocks drops; returns whether the
  // consumed end ends with a newline (Jinja's "line starting" state for lstrip_blocks).
  bool after_end_tag(char sign, bool trim_newline, char last_char) {
    if (sign == '-') {
      size_t i = pos_;
      while (i < src_.size()) {
        size_t next = i;
        if (!is_space(next_codepoint(src_, next))) break;
        i = next;
      }
      if (i == pos_) return last_char == '\n';
      line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                           src_.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
      pos_ = i;
      return src_[i - 1] == '\n';
    }
    if (sign == 0 && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      return true;
    }
    return false;
  }

  bool lex_comment() {
    const int start_line = line_;
    const size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) error("Missing end of comment tag", start_line);
    char sign = 0;
    size_t body_end = close;
    if (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) {
      sign = src_[close - 1];
      body_end = close - 1;
    }
    line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         src_.begin() + static_cast<std::ptrdiff_t>(body_end), '\n'));
    pos_ = close + 2;
    return after_end_tag(sign, true, '}');
  }

  size_t skip_spaces(size_t i) const {
    while (i < src_.size() && (src_[i] == ' ' || src_[i] == '\t' || src_[i] == '\n' || src_[i] == '\f' ||
                               src_[i] == '\v'))
      ++i;
    return i;
  }

  // Position after a block end ("%}", "-%}", "+%}") at i, with its sign, or npos.
  size_t match_block_end(size_t i, char& sign) const {
    sign = 0;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) {
      sign = src_[i];
      ++i;
    }
    if (src_.compare(i, 2, "%}") == 0) return i + 2;
    return std::string::npos;
  }

  // `{% raw %}` begin (pos_ just after "{%" and its sign): consumes it and returns true.
  bool lex_raw_begin(bool& line_starting) {
    size_t i = skip_spaces(pos_);
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && is_name_char(src_[i + 3]))) return false;
    i = skip_spaces(i + 3);
    char sign = 0;
    const size_t end = match_block_end(i, sign);
    if (end == std::string::npos || sign == '+') return false;
    line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         src_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
    pos_ = end;
    line_starting = after_end_tag(sign, false, '}');
    return true;
  }

  bool lex_raw_body(bool line_starting) {
    const int start_line = line_;
    for (size_t tag = src_.find("{%", pos_); tag != std::string::npos; tag = src_.find("{%", tag + 1)) {
      size_t i = tag + 2;
      const char sign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i] : 0;
      if (sign) ++i;
      i = skip_spaces(i);
      if (src_.compare(i, 6, "endraw") != 0) continue;
      i = skip_spaces(i + 6);
      char end_sign = 0;
      const size_t end = match_block_end(i, end_sign);
      if (end == std::string::npos) continue;
      std::string text = src_.substr(pos_, tag - pos_);
      line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                           src_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
      strip_before_tag(text, sign, true, line_starting);
      if (!text.empty()) tokens_.push_back({TokenType::Text, std::move(text), start_line});
      pos_ = end;
      return after_end_tag(end_sign, true, '}');
    }
    error("Missing end of raw directive", start_line);
  }

  bool lex_tag(bool is_block) {
    const int start_line = line_;
    tokens_.push_back({is_block ? TokenType::BlockBegin : TokenType::VariableBegin, "", line_});
    std::vector<char> brackets;
    while (true) {
      while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\n' ||
                                    src_[pos_] == '\f' || src_[pos_] == '\v')) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size())
        error(is_block ? "unexpected end of template, expected end of block tag '%}'"
                       : "unexpected end of template, expected end of print statement '}}'",
              start_line);
      if (brackets.empty()) {
        char sign = 0;
        size_t end = std::string::npos;
        if (is_block) {
          end = match_block_end(pos_, sign);
        } else if (src_.compare(pos_, 3, "-}}") == 0) {
          sign = '-';
          end = pos_ + 3;
        } else if (src_.compare(pos_, 2, "}}") == 0) {
          end = pos_ + 2;
        }
        if (end != std::string::npos) {
          tokens_.push_back({is_block ? TokenType::BlockEnd : TokenType::VariableEnd, "", line_});
          pos_ = end;
          return after_end_tag(sign, is_block, '}');
        }
      }
      lex_expression_token(brackets);
    }
  }

  void lex_expression_token(std::vector<char>& brackets) {
    const char c = src_[pos_];
    if (is_ascii_digit(c)) return lex_number();
    if (is_name_start(c)) {
      size_t end = pos_;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      tokens_.push_back({TokenType::Name, src_.substr(pos_, end - pos_), line_});
      pos_ = end;
      return;
    }
    if (c == '\'' || c == '"') return lex_string();
    static const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~",
                                             "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
    for (const char* op : kOperators) {
      const size_t n = std::char_traits<char>::length(op);
      if (src_.compare(pos_, n, op) != 0) continue;
      if (n == 1 && (c == '(' || c == '[' || c == '{')) brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      if (n == 1 && (c == ')' || c == ']' || c == '}')) {
        if (brackets.empty()) error(cat("unexpected '", c, "'"), line_);
        if (brackets.back() != c) error(cat("unexpected '", c, "', expected '", brackets.back(), "'"), line_);
        brackets.pop_back();
      }
      tokens_.push_back({TokenType::Operator, op, line_});
      pos_ += n;
      return;
    }
    error(cat("unexpected char '", c, "'"), line_);
  }

  int64_t parse_int64(const std::string& digits, int base, int line) const {
    int64_t value = 0;
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (res.ec != std::errc() || res.ptr != digits.data() + digits.size())
      error("integer literal " + digits + " does not fit in 64 bits", line);
    return value;
  }

  size_t scan_digits(size_t i, bool (*is_digit_fn)(char)) const {
    while (i < src_.size() &&
           (is_digit_fn(src_[i]) || (src_[i] == '_' && i + 1 < src_.size() && is_digit_fn(src_[i + 1]))))
      ++i;
    return i;
  }

  void lex_number() {
    const int line = line_;
    auto strip_underscores = [](std::string s) {
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      return s;
    };
    const char prefix = pos_ + 1 < src_.size() ? static_cast<char>(src_[pos_ + 1] | 0x20) : 0;
    if (src_[pos_] == '0' && (prefix == 'x' || prefix == 'o' || prefix == 'b')) {
      static bool (*const hex)(char) = [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; };
      static bool (*const oct)(char) = [](char ch) { return ch >= '0' && ch <= '7'; };
      static bool (*const bin)(char) = [](char ch) { return ch == '0' || ch == '1'; };
      size_t i = pos_ + 2;
      if (i < src_.size() && src_[i] == '_') ++i;
      const size_t end = scan_digits(i, prefix == 'x' ? hex : prefix == 'o' ? oct : bin);
      if (end == i) error("invalid number literal", line);
      const int base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : 2;
      tokens_.push_back({TokenType::Integer, std::to_string(parse_int64(strip_underscores(src_.substr(i, end - i)), base, line)), line});
      pos_ = end;
      return;
    }
    static bool (*const dec)(char) = [](char ch) { return ch >= '0' && ch <= '9'; };
    size_t end = scan_digits(pos_, dec);
    const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::Operator && tokens_.back().value == "." &&
                           pos_ > 0 && src_[pos_ - 1] == '.';
    bool is_float = false;
    if (!after_dot) {
      if (end + 1 < src_.size() && src_[end] == '.' && is_ascii_digit(src_[end + 1])) {
        end = scan_digits(end + 1, dec);
        is_float = true;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t e = end + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        if (e < src_.size() && is_ascii_digit(src_[e])) {
          end = scan_digits(e, dec);
          is_float = true;
        }
      }
    }
    std::string digits = strip_underscores(src_.substr(pos_, end - pos_));
    if (!is_float) parse_int64(digits, 10, line);  // range check: later stages convert without failing
    tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, std::move(digits), line});
    pos_ = end;
  }

  void lex_string() {
    const int line = line_;
    const char quote = src_[pos_];
    std::string out;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) error("unexpected end of template: unterminated string", line);
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) error("unexpected end of template: unterminated string", line);
      i = unescape(out, i);
    }
    tokens_.push_back({TokenType::String, std::move(out), line});
    pos_ = i + 1;
  }

  // Python "unicode-escape" decoding of the escape starting at src_[i] == '\\'; returns the next index.
  size_t unescape(std::string& out, size_t i) {
    const char e = src_[i + 1];
    auto hex_run = [&](size_t start, size_t n) {
      size_t k = 0;
      while (k < n && start + k < src_.size() && std::isxdigit(static_cast<unsigned char>(src_[start + k]))) ++k;
      return k;
    };
    switch (e) {
      case '\n': ++line_; return i + 2;  // line continuation
      case '\\': out += '\\'; return i + 2;
      case '\'': out += '\''; return i + 2;
      case '"': out += '"'; return i + 2;
      case 'a': out += '\a'; return i + 2;
      case 'b': out += '\b'; return i + 2;
      case 'f': out += '\f'; return i + 2;
      case 'n': out += '\n'; return i + 2;
      case 'r': out += '\r'; return i + 2;
      case 't': out += '\t'; return i + 2;
      case 'v': out += '\v'; return i + 2;
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (hex_run(i + 2, n) != n) error(cat("invalid \\", e, " escape in string literal"), line_);
        append_escape_codepoint(out, std::string_view(src_).substr(i + 2, n), 16, std::string_view(src_).substr(i, n + 2));
        return i + 2 + n;
      }
      default:
        if (e >= '0' && e <= '7') {
          size_t n = 1;
          while (n < 3 && i + 1 + n < src_.size() && src_[i + 1 + n] >= '0' && src_[i + 1 + n] <= '7') ++n;
          append_escape_codepoint(out, std::string_view(src_).substr(i + 1, n), 8, "");
          return i + 1 + n;
        }
        out += '\\';  // unknown escapes stay as written
        return i + 1;
    }
  }

  std::string src_;
  const std::string& name_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;

  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back({TokenType::Text, std::move(text), line_});
  }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& template_name) {
  return Lexer(source, template_name).run();
}

}  // namespace grpo::jinja
