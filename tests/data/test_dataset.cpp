// Tests of JSONL datasets (fields, errors naming file and line, overlong prompts filtered / truncated /
// rejected) and of the arithmetic task (answers recomputed by an independent evaluator, determinism,
// train/test disjointness, difficulty levels).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "core/rng.h"
#include "data/arith.h"
#include "data/dataset.h"
#include "temp_dir.h"
#include "error_of.h"

using namespace grpo;

namespace {

using test::error_of;

// Byte-level "tokenizer": one token per byte of the prompt.
std::vector<int32_t> bytes_of(const Example& ex) {
  return std::vector<int32_t>(ex.prompt.begin(), ex.prompt.end());
}

// Independent check of an arithmetic expression: shunting-yard to postfix, then a stack evaluation.
int64_t evaluate_independently(const std::string& text, bool allow_negative_literals = false) {
  // Negative literals ("-8-3", "7*(-2)") appear only in worked steps: write them as (0-n).
  std::string s;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool unary = text[i] == '-' && (i == 0 || text[i - 1] == '(' || text[i - 1] == '*' ||
                                          text[i - 1] == '+' || text[i - 1] == '-');
    if (unary && allow_negative_literals) {
      size_t j = i + 1;
      while (j < text.size() && isdigit(static_cast<unsigned char>(text[j]))) ++j;
      s += "(0-" + text.substr(i + 1, j - i - 1) + ")";
      i = j - 1;
    } else {
      s += text[i];
    }
  }
  auto prec = [](char op) { return op == '*' ? 2 : 1; };
  std::vector<std::string> postfix;
  std::vector<char> ops;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && isdigit(static_cast<unsigned char>(s[j]))) ++j;
      postfix.push_back(s.substr(i, j - i));
      i = j;
      continue;
    }
    if (c == '(') {
      ops.push_back(c);
    } else if (c == ')') {
      while (ops.back() != '(') postfix.push_back(std::string(1, ops.back())), ops.pop_back();
      ops.pop_back();
    } else {
      while (!ops.empty() && ops.back() != '(' && prec(ops.back()) >= prec(c))
        postfix.push_back(std::string(1, ops.back())), ops.pop_back();
      ops.push_back(c);
    }
    ++i;
  }
  while (!ops.empty()) postfix.push_back(std::string(1, ops.back())), ops.pop_back();
  std::vector<int64_t> st;
  for (const auto& t : postfix) {
    if (isdigit(static_cast<unsigned char>(t[0]))) {
      st.push_back(std::stoll(t));
      continue;
    }
    int64_t b = st.back();
    st.pop_back();
    int64_t a = st.back();
    st.pop_back();
    st.push_back(t[0] == '+' ? a + b : t[0] == '-' ? a - b : a * b);
  }
  return st.back();
}

}  // namespace

TEST(Dataset, ReadsPromptsMessagesAnswersAndExtras) {
  test::TempDir dir;
  auto path = dir.write("d.jsonl",
                        "{\"id\": \"a\", \"prompt\": \"1+1?\", \"answer\": \"2\", \"level\": 1}\n"
                        "\n"
                        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"answer\": 0.5, "
                        "\"response\": \"\\\\boxed{0.5}\"}\r\n"
                        "{\"id\": 7, \"prompt\": \"x\", \"answer\": -3}\n");
  Dataset ds = load_dataset(path);
  ASSERT_EQ(ds.examples.size(), 3u);
  EXPECT_EQ(ds.examples[0].id, "a");
  EXPECT_EQ(ds.examples[0].prompt, "1+1?");
  EXPECT_EQ(ds.examples[0].extra["level"], 1);
  EXPECT_EQ(ds.examples[1].id, "3");  // the line number
  EXPECT_EQ(ds.examples[1].line, 3);
  EXPECT_EQ(ds.examples[1].messages[0]["content"], "hi");
  EXPECT_EQ(ds.examples[1].answer, "0.5");
  EXPECT_EQ(ds.examples[1].response, "\\boxed{0.5}");
  EXPECT_EQ(ds.examples[2].id, "7");
  EXPECT_EQ(ds.examples[2].answer, "-3");
}

// verl's rows (examples/data_preprocess/gsm8k.py) load unchanged: chat turns in "prompt", the answer in
// reward_model.ground_truth, data_source and extra_info kept (extra_info.index is the id).
TEST(Dataset, VerlRowsLoadUnchanged) {
  test::TempDir dir;
  auto path = dir.write(
      "verl.jsonl",
      "{\"data_source\": \"openai/gsm8k\", \"prompt\": [{\"role\": \"user\", \"content\": \"2+2?\"}], "
      "\"ability\": \"math\", \"reward_model\": {\"style\": \"rule\", \"ground_truth\": \"4\"}, "
      "\"extra_info\": {\"split\": \"train\", \"index\": 17, \"answer\": \"2+2=4\"}}\n"
      "{\"prompt\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"3*3?\"}], "
      "\"reward_model\": {\"ground_truth\": 9}, \"data_source\": \"x\"}\n"
      "{\"prompt\": \"list?\", \"reward_model\": {\"ground_truth\": [\"a\", \"b\"]}}\n");
  Dataset ds = load_dataset(path);
  ASSERT_EQ(ds.examples.size(), 3u);
  const Example& a = ds.examples[0];
  EXPECT_EQ(a.messages.size(), 1u);
  EXPECT_EQ(a.messages[0]["content"], "2+2?");
  EXPECT_TRUE(a.prompt.empty());
  EXPECT_EQ(a.answer, "4");
  EXPECT_EQ(a.data_source, "openai/gsm8k");
  EXPECT_EQ(a.id, "17");
  EXPECT_EQ(a.extra["extra_info"]["answer"], "2+2=4");
  EXPECT_EQ(a.extra["ability"], "math");
  EXPECT_FALSE(a.extra.contains("reward_model"));
  EXPECT_EQ(ds.examples[1].messages.size(), 2u);
  EXPECT_EQ(ds.examples[1].answer, "9");
  EXPECT_EQ(ds.examples[1].id, "2");  // no id, no extra_info.index: the line number
  EXPECT_EQ(ds.examples[2].prompt, "list?");
  EXPECT_EQ(ds.examples[2].answer, "[\"a\",\"b\"]");  // kept as JSON text for external rewards

  for (const auto& [line, expect] : std::vector<std::pair<std::string, std::string>>{
           {"{\"prompt\": \"p\", \"reward_model\": {\"style\": \"rule\"}}", "must be an object with \"ground_truth\""},
           {"{\"prompt\": \"p\", \"reward_model\": {\"ground_truth\": null}}", "ground_truth\" is null"},
           {"{\"prompt\": \"p\", \"answer\": 1, \"reward_model\": {\"ground_truth\": 1}}", "has both \"answer\" and"},
           {"{\"prompt\": [], \"answer\": 1}", "\"prompt\" must be a non-empty array"},
           {"{\"prompt\": [{\"role\": \"user\"}], \"answer\": 1}", "prompt[0] needs a string \"content\""},
           {"{\"prompt\": \"p\", \"answer\": 1, \"data_source\": 3}", "\"data_source\" must be a string"},
           {"{\"prompt\": \"p\", \"answer\": 1, \"extra_info\": {\"index\": 1.5}}", "extra_info.index\" must be"},
       }) {
    const std::string e = error_of([&] { load_dataset(dir.write("bad.jsonl", line + "\n")); });
    EXPECT_NE(e.find("bad.jsonl:1"), std::string::npos) << line << " -> " << e;
    EXPECT_NE(e.find(expect), std::string::npos) << line << " -> " << e;
  }
}

// verl ships Parquet; the error names the file and gives the one-line conversion to JSONL.
TEST(Dataset, BrokenParquetIsAParquetError) {
  // Parquet by name or by magic is read as Parquet: a broken one gets the reader's error naming the file.
  test::TempDir dir;
  for (const std::string name : {"train.parquet", "renamed.jsonl"}) {
    const std::string path = dir.write(name, std::string("PAR1\x15\x04", 6));
    const std::string e = error_of([&] { load_dataset(path); });
    EXPECT_NE(e.find("[parquet] " + path + ": not a Parquet file"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] { load_dataset(dir.path() + "/missing.parquet"); }).find("[parquet] " + dir.path() + "/missing.parquet"),
            std::string::npos);
}

TEST(Dataset, MalformedLinesNameFileAndLine) {
  test::TempDir dir;
  const std::string good = "{\"prompt\": \"p\", \"answer\": \"1\"}\n";
  struct Case {
    std::string line, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"{\"prompt\": \"p\", \"answer\": \"1\"", "invalid JSON"},
           {"[1, 2]", "expected a JSON object"},
           {"{\"answer\": \"1\"}", "needs \"prompt\" or \"messages\""},
           {"{\"prompt\": \"p\", \"messages\": [], \"answer\": 1}", "has both"},
           {"{\"prompt\": \"p\"}", "needs \"answer\""},
           {"{\"prompt\": 5, \"answer\": \"1\"}", "\"prompt\" must be a string"},
           {"{\"prompt\": \"p\", \"answer\": [1]}", "\"answer\" must be a string or a number"},
           {"{\"messages\": [{\"role\": \"user\"}], \"answer\": \"1\"}", "messages[0] needs a string \"content\""},
           {"{\"prompt\": \"p\", \"answer\": \"1\", \"id\": 1.5}", "\"id\" must be a string or an integer"},
       }) {
    auto path = dir.write("bad.jsonl", good + good + c.line + "\n" + good);
    std::string e = error_of([&] { load_dataset(path); });
    EXPECT_NE(e.find(path + ":3"), std::string::npos) << c.line << " -> " << e;
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.line << " -> " << e;
  }
  auto path = dir.write("sft.jsonl", good);
  DatasetOptions sft;
  sft.require_response = true;
  EXPECT_NE(error_of([&] { load_dataset(path, sft); }).find("sft.jsonl:1: needs a non-empty \"response\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_dataset(dir.write("empty.jsonl", "\n")); }).find("no examples"), std::string::npos);
  EXPECT_NE(error_of([&] { load_dataset(dir.path() + "/none.jsonl"); }).find("cannot open"), std::string::npos);
  EXPECT_NE(error_of([&] { load_dataset(dir.path() + "/none.jsonl"); }).find("No such file or directory"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_dataset(dir.path()); }).find("Is a directory"), std::string::npos);
}

TEST(Dataset, MutatedLinesAreParsedOrRejectedWithAnError) {
  const std::string good =
      "{\"id\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"answer\": 1, "
      "\"response\": \"r\", \"level\": [1, {\"a\": null}]}";
  Rng rng(4);
  int parsed = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string line = good;
    for (int k = 0, edits = 1 + static_cast<int>(rng.below(3)); k < edits; ++k) {
      const size_t at = rng.below(line.size());
      switch (rng.below(3)) {
        case 0: line.erase(at, 1); break;
        case 1: line.insert(at, 1, "{}[]\",:0a\\"[rng.below(10)]); break;
        default: line[at] = static_cast<char>(rng.below(256)); break;
      }
    }
    try {
      parse_example(line, "[dataset] fuzz:1", false);
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[dataset] fuzz:1: ", 0), 0u) << e.what();
    }
  }
  EXPECT_GT(parsed, 0);
}

TEST(Dataset, OverlongPromptsFilteredTruncatedOrRejected) {
  test::TempDir dir;
  auto path = dir.write("d.jsonl",
                        "{\"prompt\": \"abc\", \"answer\": 1}\n"
                        "{\"prompt\": \"abcdefgh\", \"answer\": 2}\n"
                        "{\"prompt\": \"abcd\", \"answer\": 3}\n");
  DatasetOptions opt;
  opt.encode_prompt = bytes_of;
  opt.max_prompt_length = 4;
  Dataset filtered = load_dataset(path, opt);
  EXPECT_EQ(filtered.examples.size(), 2u);
  EXPECT_EQ(filtered.filtered, 1);
  EXPECT_EQ(filtered.examples[1].prompt_ids.size(), 4u);

  opt.overflow = PromptOverflow::TruncateLeft;
  Dataset left = load_dataset(path, opt);
  ASSERT_EQ(left.examples.size(), 3u);
  EXPECT_EQ(left.truncated, 1);
  EXPECT_EQ(left.examples[1].prompt_ids, (std::vector<int32_t>{'e', 'f', 'g', 'h'}));
  opt.overflow = PromptOverflow::TruncateRight;
  EXPECT_EQ(load_dataset(path, opt).examples[1].prompt_ids, (std::vector<int32_t>{'a', 'b', 'c', 'd'}));
  opt.overflow = PromptOverflow::Error;
  std::string e = error_of([&] { load_dataset(path, opt); });
  EXPECT_NE(e.find("d.jsonl:2: the prompt has 8 tokens"), std::string::npos) << e;

  // Every prompt filtered away: an error before any training, not an empty dataset.
  opt.overflow = PromptOverflow::Filter;
  opt.max_prompt_length = 2;
  e = error_of([&] { load_dataset(path, opt); });
  EXPECT_NE(e.find("d.jsonl: all 3 prompts are longer than 2 tokens"), std::string::npos) << e;

  EXPECT_EQ(prompt_overflow_from_config(true, PromptOverflow::Error), PromptOverflow::Filter);
  EXPECT_EQ(prompt_overflow_from_config(false, PromptOverflow::TruncateLeft), PromptOverflow::TruncateLeft);
  EXPECT_EQ(kTruncationNames.find("left"), PromptOverflow::TruncateLeft);
  EXPECT_FALSE(kTruncationNames.find("middle"));
}

TEST(Arith, AnswersAreRightAndStepsEndAtTheAnswer) {
  for (int level = 1; level <= kArithMaxLevel; ++level) {
    Rng rng({11, static_cast<uint64_t>(level)});
    for (int i = 0; i < 300; ++i) {
      ArithProblem p = generate_arith_problem(rng, level);
      EXPECT_EQ(p.answer, evaluate_independently(p.expression)) << p.expression;
      ASSERT_FALSE(p.steps.empty());
      // Every step, as written in the direct response, is itself a correct operation.
      const std::string response = arith_response(p);
      const std::string steps = response.substr(0, response.find(". \\boxed{"));
      for (size_t start = 0; start < steps.size();) {
        const size_t end = std::min(steps.find(", ", start), steps.size());
        const std::string step = steps.substr(start, end - start);
        const size_t eq = step.rfind('=');
        EXPECT_EQ(std::to_string(evaluate_independently(step.substr(0, eq), true)), step.substr(eq + 1)) << step;
        start = end + 2;
      }
      EXPECT_EQ(p.steps.back().result, p.answer) << p.expression;
      EXPECT_NE(response.find("\\boxed{" + std::to_string(p.answer) + "}"), std::string::npos);
      EXPECT_LE(arith_prompt(p).size(), 32u) << "prompts stay short for byte-level models";
      if (level == 1) {
        EXPECT_EQ(p.expression.size(), 3u);  // d+d
      }
      if (level == 5) {
        EXPECT_NE(p.expression.find('('), std::string::npos);
      }
    }
  }
}

// Checks the column work "d+d(+1)=s, ..." or "t(-1)-d=r, ..." of `a op b` digit by digit, independently
// of the generator: each column's arithmetic, the carries and borrows it passes on, and that the
// columns spell the result.
void check_column_work(int64_t a, char op, int64_t b, const std::string& work) {
  SCOPED_TRACE(std::to_string(a) + op + std::to_string(b) + ": " + work);
  std::vector<std::string> cols;
  for (size_t start = 0; start <= work.size();) {
    const size_t end = std::min(work.find(", ", start), work.size());
    cols.push_back(work.substr(start, end - start));
    start = end + 2;
  }
  int carry = 0;
  std::string digits;  // result digits, most significant first
  for (size_t i = 0; i < cols.size(); ++i) {
    const std::string& c = cols[i];
    const size_t eq = c.find('=');
    ASSERT_NE(eq, std::string::npos);
    const std::string lhs = c.substr(0, eq);
    const int value = std::stoi(c.substr(eq + 1));
    EXPECT_EQ(evaluate_independently(lhs, true), value) << c;
    const int64_t da = a / static_cast<int64_t>(std::pow(10, i)) % 10;
    const int64_t db = b / static_cast<int64_t>(std::pow(10, i)) % 10;
    if (op == '+') {
      EXPECT_EQ(lhs, std::to_string(da) + "+" + std::to_string(db) + (carry ? "+1" : ""));
      carry = value / 10;
      digits = (i + 1 == cols.size() ? std::to_string(value) : std::to_string(value % 10)) + digits;
    } else {
      const bool borrow = da - carry < db;  // this column borrows from the next
      EXPECT_EQ(lhs, std::to_string(borrow ? da + 10 : da) + (carry ? "-1" : "") + "-" + std::to_string(db));
      EXPECT_GE(value, 0);
      EXPECT_LE(value, 9);
      carry = borrow;
      digits = std::to_string(value) + digits;
    }
  }
  if (op == '-') {
    EXPECT_EQ(carry, 0) << "no borrow out of the top column";
  }
  EXPECT_EQ(std::stoll(digits), op == '+' ? a + b : a - b);
}

TEST(Arith, ColumnStyleWorksPlusAndMinusDigitByDigit) {
  ArithProblem add;
  add.expression = "79+99";
  add.steps = {{79, '+', 99, 178}};
  add.answer = 178;
  EXPECT_EQ(arith_response(add, ArithStyle::Columns), "79+99: 9+9=18, 7+9+1=17, so 79+99=178. \\boxed{178}");
  EXPECT_EQ(arith_response(add), "79+99=178. \\boxed{178}");
  ArithProblem sub;
  sub.expression = "59-84";
  sub.steps = {{59, '-', 84, -25}};
  sub.answer = -25;
  EXPECT_EQ(arith_response(sub, ArithStyle::Columns), "59-84: -(84-59), 14-9=5, 8-1-5=2, so 59-84=-25. \\boxed{-25}");
  ArithProblem mul;  // multiplication stays direct
  mul.expression = "7*46";
  mul.steps = {{7, '*', 46, 322}};
  mul.answer = 322;
  EXPECT_EQ(arith_response(mul, ArithStyle::Columns), "7*46=322. \\boxed{322}");

  // Every + and - of non-negative numbers up to three digits, checked column by column.
  Rng rng({3, 4});
  for (int i = 0; i < 3000; ++i) {
    const int64_t a = static_cast<int64_t>(rng.below(1000)), b = static_cast<int64_t>(rng.below(1000));
    for (char op : {'+', '-'}) {
      ArithProblem p;
      p.expression = std::to_string(a) + op + std::to_string(b);
      p.answer = op == '+' ? a + b : a - b;
      p.steps = {{a, op, b, p.answer}};
      const std::string r = arith_response(p, ArithStyle::Columns);
      const std::string head = p.expression + ": ", tail = ", so " + p.expression + "=" + std::to_string(p.answer);
      ASSERT_EQ(r.rfind(head, 0), 0u) << r;
      const size_t so = r.find(tail);
      ASSERT_NE(so, std::string::npos) << r;
      std::string work = r.substr(head.size(), so - head.size());
      if (op == '-' && a < b) {
        const std::string neg = "-(" + std::to_string(b) + "-" + std::to_string(a) + "), ";
        ASSERT_EQ(work.rfind(neg, 0), 0u) << r;
        check_column_work(b, '-', a, work.substr(neg.size()));
      } else {
        check_column_work(a, op, b, work);
      }
    }
  }
}

TEST(Arith, ColumnFractionMixesStylesDeterministically) {
  test::TempDir dir;
  ArithSplit s = write_arith_dataset(dir.path() + "/mix", 2000, 10, 1, "2", 0.25);
  int columns = 0, n = 0;
  for_each_line(s.train_path, [&](int64_t, const std::string& line) {
    const auto j = nlohmann::json::parse(line);
    columns += j["response"].get<std::string>().find(": ") != std::string::npos;
    ++n;
  });
  EXPECT_EQ(n, 2000);
  EXPECT_NEAR(columns / 2000.0, 0.25, 0.04);
  EXPECT_EQ(read_file(write_arith_dataset(dir.path() + "/again", 2000, 10, 1, "2", 0.25).train_path),
            read_file(s.train_path));
  EXPECT_THROW(write_arith_dataset(dir.path() + "/bad", 10, 10, 1, "2", 1.5), Error);
}

TEST(Arith, DeterministicDisjointAndWrittenAsJsonl) {
  test::TempDir dir;
  ArithSplit s = write_arith_dataset(dir.path() + "/arith", 300, 100, 5, "mixed");
  DatasetOptions sft;
  sft.require_response = true;
  Dataset train = load_dataset(s.train_path, sft);
  Dataset test = load_dataset(s.test_path);
  ASSERT_EQ(train.examples.size(), 300u);
  ASSERT_EQ(test.examples.size(), 100u);
  std::set<std::string> test_prompts;
  for (const auto& ex : test.examples) test_prompts.insert(ex.prompt);
  std::set<int> levels;
  for (const auto& ex : train.examples) {
    EXPECT_EQ(test_prompts.count(ex.prompt), 0u) << ex.prompt;
    const std::string expr = ex.prompt.substr(8, ex.prompt.size() - 9);  // "Compute " ... "."
    EXPECT_EQ(ex.answer, std::to_string(evaluate_independently(expr)));
    levels.insert(ex.extra["level"].get<int>());
  }
  EXPECT_EQ(levels.size(), 5u);
  // Same seed: same files; another seed: different problems.
  ArithSplit again = write_arith_dataset(dir.path() + "/again", 300, 100, 5, "mixed");
  EXPECT_EQ(read_file(again.train_path), read_file(s.train_path));
  ArithSplit other = write_arith_dataset(dir.path() + "/other", 300, 100, 6, "mixed");
  EXPECT_NE(read_file(other.train_path), read_file(s.train_path));
}

TEST(Arith, DifficultiesAndLimits) {
  EXPECT_EQ(arith_levels("easy"), (std::vector<int>{1, 2}));
  EXPECT_EQ(arith_levels("4"), (std::vector<int>{4}));
  EXPECT_THROW(arith_levels("impossible"), Error);
  EXPECT_THROW(arith_levels("6"), Error);
  // Level 1 has only 100 distinct problems.
  EXPECT_EQ(generate_arith(100, 1, {1}).size(), 100u);
  std::string e = error_of([] { generate_arith(101, 1, {1}); });
  EXPECT_NE(e.find("distinct problems"), std::string::npos) << e;
  // A count no file could hold is refused before anything is allocated (it was std::bad_alloc).
  e = error_of([] { generate_arith(99999999999, 1, {5}); });
  EXPECT_NE(e.find("number of problems must be in [0, 10000000]"), std::string::npos) << e;
}
