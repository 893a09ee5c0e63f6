// verl's Search-R1 rule (search_r1_like_qa_em.py, exact match): see verl_rules.h.
#include "reward/verl/py_text.h"
#include "reward/verl/verl_rules.h"

namespace grpo::verl {

namespace {

bool ascii_punctuation(char32_t c) {  // string.punctuation
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

// re.sub(r"\b(a|an|the)\b", " ", text) with Unicode word boundaries.
PyStr remove_articles(const PyStr& s) {
  auto word = [&](size_t i) { return i < s.size() && py_isword(s[i]); };
  PyStr out;
  size_t i = 0;
  while (i < s.size()) {
    const bool boundary_before = i == 0 || !py_isword(s[i - 1]);
    size_t len = 0;
    if (boundary_before && word(i)) {
      for (const char32_t* a : {U"a", U"an", U"the"}) {
        // The alternation tries a, an, the in order and takes the first that ends at a boundary.
        const PyStr article = a;
        if (s.compare(i, article.size(), article) == 0 && !word(i + article.size())) {
          len = article.size();
          break;
        }
      }
    }
    if (len) {
      out += U' ';
      i += len;
    } else {
      out += s[i++];
    }
  }
  return out;
}

PyStr squad_normalize(const PyStr& text) {
  PyStr s;
  for (char32_t c : lower(text))
    if (!ascii_punctuation(c)) s += c;
  s = remove_articles(s);
  PyStr out;
  for (const PyStr& w : split_whitespace(s)) out += (out.empty() ? U"" : U" ") + w;
  return out;
}

// The content of the last <answer>...</answer> (non-greedy, across lines), stripped; nullopt when none.
std::optional<PyStr> last_answer_tag(const PyStr& s) {
  static const PyStr kOpen = U"<answer>", kClose = U"</answer>";
  std::optional<PyStr> found;
  for (size_t i = 0; (i = s.find(kOpen, i)) != PyStr::npos;) {
    const size_t close = s.find(kClose, i + kOpen.size());
    if (close == PyStr::npos) break;
    found = strip(s.substr(i + kOpen.size(), close - i - kOpen.size()));
    i = close + kClose.size();
  }
  return found;
}

size_t count(const PyStr& s, const PyStr& part) {
  size_t n = 0;
  for (size_t i = 0; (i = s.find(part, i)) != PyStr::npos; i += part.size()) ++n;
  return n;
}

}  // namespace

double search_r1_score(const std::string& response, const std::vector<std::string>& targets) {
  const PyStr s = from_utf8(response);
  const auto answer = last_answer_tag(s);
  if (!answer) return 0.0;
  const PyStr prediction = squad_normalize(*answer);
  bool match = false;
  for (const std::string& t : targets) match = match || squad_normalize(from_utf8(t)) == prediction;
  if (!match) return 0.0;
  return count(s, U"<answer>") > 10 || count(s, U"</answer>") > 10 ? 0.25 : 1.0;
}

}  // namespace grpo::verl
