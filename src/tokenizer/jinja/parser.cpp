// Recursive-descent parser for the Jinja subset used by chat templates.
#include "tokenizer/jinja/parser.h"

#include <cstdlib>
#include <initializer_list>

#include "core/error.h"
#include "tokenizer/jinja/lexer.h"

namespace grpo::jinja {

namespace {

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& name) : tokens_(std::move(tokens)), name_(name) {}

  std::vector<Node> parse() {
    std::vector<Node> body = subparse({});
    if (cur().type != TokenType::End) error(cat("unexpected '", cur().value, "'"));
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::Operator && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == TokenType::Name && cur().value == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::End: return "end of template";
      case TokenType::BlockEnd: return "end of statement block";
      case TokenType::VariableEnd: return "end of print statement";
      case TokenType::BlockBegin: return "begin of statement block";
      case TokenType::VariableBegin: return "begin of print statement";
      case TokenType::Text: return "template data";
      case TokenType::String: return "string";
      case TokenType::Integer: return "integer";
      case TokenType::Float: return "float";
      default: return "'" + t.value + "'";
    }
  }

  [[noreturn]] void error(const std::string& what, int line = 0) const {
    grpo::fail("[jinja] ", name_, ":", line ? line : cur().line, ": ", what);
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) error(cat("expected '", op, "', got ", describe(cur())));
  }
  std::string expect_name() {
    if (cur().type != TokenType::Name) error("expected a name, got " + describe(cur()));
    std::string n = cur().value;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != TokenType::BlockEnd) error("expected end of statement block, got " + describe(cur()));
    advance();
  }

  // Bounds the recursion of nested expressions and blocks, so that hostile input cannot exhaust the stack.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) p_.error("template nesting is deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& p_;
  };
  static constexpr int kMaxDepth = 256;

  static ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ----
  // Parses nodes until a block tag whose name is in `ends`; leaves the position at that name.
  std::vector<Node> subparse(std::initializer_list<std::string_view> ends) {
    const DepthGuard guard(*this);
    std::vector<Node> body;
    while (cur().type != TokenType::End) {
      const Token& t = cur();
      if (t.type == TokenType::Text) {
        Node n{};
        n.kind = NodeKind::Text;
        n.line = t.line;
        n.text = t.value;
        body.push_back(std::move(n));
        advance();
      } else if (t.type == TokenType::VariableBegin) {
        Node n{};
        n.kind = NodeKind::Output;
        n.line = t.line;
        advance();
        n.expr = parse_tuple(true, {});
        if (cur().type != TokenType::VariableEnd) error("expected end of print statement, got " + describe(cur()));
        advance();
        body.push_back(std::move(n));
      } else if (t.type == TokenType::BlockBegin) {
        advance();
        if (cur().type != TokenType::Name) error("expected a statement name, got " + describe(cur()));
        for (std::string_view end : ends)
          if (cur().value == end) return body;
        body.push_back(parse_statement());
      } else {
        error("unexpected " + describe(t));
      }
    }
    if (ends.size() > 0) {
      std::string expected;
      for (std::string_view e : ends) expected += (expected.empty() ? "'" : " or '") + std::string(e) + "'";
      error("unexpected end of template, expected " + expected);
    }
    return body;
  }

  Node parse_statement() {
    const int line = cur().line;
    const std::string tag = cur().value;
    advance();
    Node n{};
    n.line = line;
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "with") return parse_with(line);
    if (tag == "filter") {
      n.kind = NodeKind::FilterBlock;
      n.filters = parse_filter_chain(true);
      expect_block_end();
      n.body = subparse({"endfilter"});
      advance();
      expect_block_end();
      return n;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) error("'" + tag + "' is only allowed inside a for loop", line);
      n.kind = tag == "break" ? NodeKind::Break : NodeKind::Continue;
      expect_block_end();
      return n;
    }
    if (tag == "generation") {
      n.kind = NodeKind::Scope;
      expect_block_end();
      n.body = subparse({"endgeneration"});
      advance();
      expect_block_end();
      return n;
    }
    static const char* const kUnsupported[] = {"include", "import", "from", "extends", "block", "call", "do",
                                               "autoescape", "trans"};
    for (const char* u : kUnsupported)
      if (tag == u) error("the '" + tag + "' tag is not supported by this Jinja implementation", line);
    error("Encountered unknown tag '" + tag + "'", line);
  }

  Node parse_if(int line) {
    const DepthGuard guard(*this);  // elif chains nest
    Node n{};
    n.kind = NodeKind::If;
    n.line = line;
    n.expr = parse_tuple(false, {});
    expect_block_end();
    n.body = subparse({"elif", "else", "endif"});
    if (skip_name("elif")) {
      n.else_body.push_back(parse_if(tokens_[pos_ - 1].line));
      return n;  // the nested if consumed the endif
    }
    if (skip_name("else")) {
      expect_block_end();
      n.else_body = subparse({"endif"});
    }
    advance();  // endif
    expect_block_end();
    return n;
  }

  // Assignment targets: `a`, `a, b`, `(a, b)`; with allow_attribute also `ns.attr`.
  void parse_targets(Node& n, bool allow_attribute) {
    const bool paren = skip_op("(");
    n.targets.push_back(expect_name());
    if (allow_attribute && !paren && skip_op(".")) {
      n.attribute = expect_name();
      return;
    }
    while (skip_op(",")) {
      n.tuple_target = true;
      if (is_op(")") || is_name("in") || is_op("=")) break;
      n.targets.push_back(expect_name());
    }
    if (paren) {
      n.tuple_target = true;
      expect_op(")");
    }
  }

  Node parse_for(int line) {
    Node n{};
    n.kind = NodeKind::For;
    n.line = line;
    parse_targets(n, false);
    if (!skip_name("in")) error("expected 'in' in for loop, got " + describe(cur()));
    n.expr = parse_tuple(false, {"recursive"});
    if (skip_name("if")) n.condition = parse_expression(true);
    if (is_name("recursive")) error("recursive for loops are not supported by this Jinja implementation");
    expect_block_end();
    ++loop_depth_;
    n.body = subparse({"endfor", "else"});
    --loop_depth_;
    if (skip_name("else")) {
      expect_block_end();
      n.else_body = subparse({"endfor"});
    }
    advance();
    expect_block_end();
    return n;
  }

  Node parse_set(int line) {
    Node n{};
    n.line = line;
    parse_targets(n, true);
    if (skip_op("=")) {
      n.kind = NodeKind::Set;
      n.expr = parse_tuple(true, {});
      expect_block_end();
      return n;
    }
    if (n.tuple_target || !n.attribute.empty()) error("block assignments take a single name", line);
    n.kind = NodeKind::SetBlock;
    if (is_op("|")) n.filters = parse_filter_chain(false);
    expect_block_end();
    n.body = subparse({"endset"});
    advance();
    expect_block_end();
    return n;
  }

  Node parse_macro(int line) {
    Node n{};
    n.kind = NodeKind::Macro;
    n.line = line;
    n.text = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!n.targets.empty()) expect_op(",");
      if (is_op(")")) break;
      n.targets.push_back(expect_name());
      n.values.push_back(skip_op("=") ? parse_expression(true) : nullptr);
      if (!n.values.back() && n.values.size() > 1 && n.values[n.values.size() - 2])
        error("non-default argument follows default argument");
    }
    advance();
    expect_block_end();
    macro_uses_.push_back({false, false});
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    n.body = subparse({"endmacro"});
    loop_depth_ = saved_loop_depth;
    n.uses_varargs = macro_uses_.back().first;
    n.uses_kwargs = macro_uses_.back().second;
    macro_uses_.pop_back();
    advance();
    expect_block_end();
    return n;
  }

  Node parse_with(int line) {
    Node n{};
    n.kind = NodeKind::With;
    n.line = line;
    while (cur().type != TokenType::BlockEnd) {
      if (!n.targets.empty()) expect_op(",");
      n.targets.push_back(expect_name());
      expect_op("=");
      n.values.push_back(parse_expression(true));
    }
    expect_block_end();
    n.body = subparse({"endwith"});
    advance();
    expect_block_end();
    return n;
  }

  // `| f(args) | g` (or, for {% filter %}, starting without the first `|`); inputs are left null.
  std::vector<ExprPtr> parse_filter_chain(bool start_inline) {
    std::vector<ExprPtr> chain;
    while (start_inline || skip_op("|")) {
      start_inline = false;
      chain.push_back(parse_filter(nullptr));
    }
    return chain;
  }

  // ---- expressions ----
  bool is_tuple_end(std::initializer_list<std::string_view> extra_ends) const {
    const TokenType t = cur().type;
    if (t == TokenType::VariableEnd || t == TokenType::BlockEnd || t == TokenType::End || is_op(")")) return true;
    for (std::string_view e : extra_ends)
      if (is_name(e)) return true;
    return false;
  }

  ExprPtr parse_tuple(bool with_conditional, std::initializer_list<std::string_view> extra_ends,
                      bool explicit_parentheses = false) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_ends)) break;
      items.push_back(parse_expression(with_conditional));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) error("expected an expression, got " + describe(cur()));
    }
    auto e = make(ExprKind::Tuple, line);
    e->children = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_conditional) {
    return with_conditional ? parse_conditional() : parse_or();
  }

  ExprPtr parse_conditional() {
    const DepthGuard guard(*this);
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const int line = cur().line;
      advance();
      ExprPtr cond = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_conditional() : nullptr;
      auto e = make(ExprKind::Conditional, line);
      e->children.push_back(std::move(cond));
      e->children.push_back(std::move(expr));
      e->children.push_back(std::move(otherwise));
      expr = std::move(e);
    }
    return expr;
  }

  ExprPtr binary(ExprKind kind, ExprPtr left, ExprPtr right, int line) {
    auto e = make(kind, line);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = cur().line;
      advance();
      left = binary(ExprKind::Or, std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = cur().line;
      advance();
      left = binary(ExprKind::And, std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    const DepthGuard guard(*this);
    if (is_name("not")) {
      const int line = cur().line;
      advance();
      auto e = make(ExprKind::Unary, line);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    auto e = make(ExprKind::Compare, line);
    while (true) {
      static const std::pair<const char*, CompareOp> kOps[] = {{"==", CompareOp::Eq}, {"!=", CompareOp::Ne},
                                                               {"<", CompareOp::Lt},  {"<=", CompareOp::Le},
                                                               {">", CompareOp::Gt},  {">=", CompareOp::Ge}};
      bool matched = false;
      for (const auto& [sym, op] : kOps) {
        if (is_op(sym)) {
          advance();
          e->compare_ops.push_back(op);
          matched = true;
          break;
        }
      }
      if (!matched) {
        if (is_name("in")) {
          advance();
          e->compare_ops.push_back(CompareOp::In);
        } else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
          advance();
          advance();
          e->compare_ops.push_back(CompareOp::NotIn);
        } else {
          break;
        }
      }
      e->children.push_back(parse_math1());
    }
    if (e->compare_ops.empty()) return first;
    e->children.insert(e->children.begin(), std::move(first));
    return e;
  }

  ExprPtr arithmetic(ExprPtr left, BinaryOp op, ExprPtr right, int line) {
    auto e = binary(ExprKind::Binary, std::move(left), std::move(right), line);
    e->binary_op = op;
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const int line = cur().line;
      const BinaryOp op = is_op("+") ? BinaryOp::Add : BinaryOp::Sub;
      advance();
      left = arithmetic(std::move(left), op, parse_concat(), line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(ExprKind::Concat, line);
    e->children.push_back(std::move(first));
    while (skip_op("~")) e->children.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (true) {
      BinaryOp op;
      if (is_op("*")) op = BinaryOp::Mul;
      else if (is_op("/")) op = BinaryOp::Div;
      else if (is_op("//")) op = BinaryOp::FloorDiv;
      else if (is_op("%")) op = BinaryOp::Mod;
      else break;
      const int line = cur().line;
      advance();
      left = arithmetic(std::move(left), op, parse_pow(), line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      advance();
      left = arithmetic(std::move(left), BinaryOp::Pow, parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const DepthGuard guard(*this);
    const int line = cur().line;
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = make(ExprKind::Unary, line);
      e->name = cur().value;
      advance();
      e->children.push_back(parse_unary(false));
      node = std::move(e);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    if (t.type == TokenType::Name) {
      auto e = make(ExprKind::Const, line);
      if (t.value == "true" || t.value == "True") e->value = Value(true);
      else if (t.value == "false" || t.value == "False") e->value = Value(false);
      else if (t.value == "none" || t.value == "None") e->value = Value::none();
      else {
        e->kind = ExprKind::Name;
        e->name = t.value;
        if (!macro_uses_.empty() && t.value == "varargs") macro_uses_.back().first = true;
        if (!macro_uses_.empty() && t.value == "kwargs") macro_uses_.back().second = true;
      }
      advance();
      return e;
    }
    if (t.type == TokenType::String) {
      std::string s;
      while (cur().type == TokenType::String) {
        s += cur().value;
        advance();
      }
      auto e = make(ExprKind::Const, line);
      e->value = Value(std::move(s));
      return e;
    }
    if (t.type == TokenType::Integer || t.type == TokenType::Float) {
      auto e = make(ExprKind::Const, line);
      // The lexer range-checked integers; float literals overflow to inf as in Python.
      e->value = t.type == TokenType::Integer ? Value(static_cast<int64_t>(std::stoll(t.value)))
                                              : Value(std::strtod(t.value.c_str(), nullptr));
      advance();
      return e;
    }
    if (skip_op("(")) {
      ExprPtr e = parse_tuple(true, {}, true);
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto e = make(ExprKind::List, line);
      while (!is_op("]")) {
        if (!e->children.empty()) expect_op(",");
        if (is_op("]")) break;
        e->children.push_back(parse_expression(true));
      }
      advance();
      return e;
    }
    if (skip_op("{")) {
      auto e = make(ExprKind::Dict, line);
      while (!is_op("}")) {
        if (!e->children.empty()) expect_op(",");
        if (is_op("}")) break;
        e->children.push_back(parse_expression(true));
        expect_op(":");
        e->children.push_back(parse_expression(true));
      }
      advance();
      return e;
    }
    error("unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (skip_op("|")) node = parse_filter(std::move(node));
      else if (is_name("is")) node = parse_test(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = cur().line;
    if (skip_op(".")) {
      if (cur().type == TokenType::Name) {
        auto e = make(ExprKind::GetAttr, line);
        e->name = cur().value;
        advance();
        e->children.push_back(std::move(node));
        return e;
      }
      if (cur().type != TokenType::Integer) error("expected name or number after '.', got " + describe(cur()));
      auto key = make(ExprKind::Const, line);
      key->value = Value(static_cast<int64_t>(std::stoll(cur().value)));
      advance();
      auto e = make(ExprKind::GetItem, line);
      e->children.push_back(std::move(node));
      e->children.push_back(std::move(key));
      return e;
    }
    expect_op("[");
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    advance();
    if (args.empty()) error("expected a subscript expression", line);
    if (args.size() == 1 && args[0]->kind == ExprKind::Slice) {
      args[0]->children[0] = std::move(node);
      return std::move(args[0]);
    }
    auto e = make(ExprKind::GetItem, line);
    e->children.push_back(std::move(node));
    if (args.size() == 1) {
      e->children.push_back(std::move(args[0]));
    } else {
      for (const auto& a : args)
        if (a->kind == ExprKind::Slice) error("multi-dimensional slices are not supported", line);
      auto tuple = make(ExprKind::Tuple, line);
      tuple->children = std::move(args);
      e->children.push_back(std::move(tuple));
    }
    return e;
  }

  // One subscript: an expression or a slice `start:stop:step` (children[0] is filled in by the caller).
  ExprPtr parse_subscribed() {
    const int line = cur().line;
    ExprPtr start;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    advance();
    auto e = make(ExprKind::Slice, line);
    e->children.push_back(nullptr);
    e->children.push_back(std::move(start));
    e->children.push_back(is_op("]") || is_op(",") || is_op(":") ? nullptr : parse_expression(true));
    ExprPtr step;
    if (skip_op(":") && !is_op("]") && !is_op(",")) step = parse_expression(true);
    e->children.push_back(std::move(step));
    return e;
  }

  // `(args, name=value)` appended to e->children / e->kwargs.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) error("*args and **kwargs in calls are not supported");
      if (cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
        std::string key = cur().value;
        advance();
        advance();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error("positional argument follows keyword argument");
        e.children.push_back(parse_expression(true));
      }
    }
    advance();
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::Call, cur().line);
    e->children.push_back(std::move(node));
    parse_call_args(*e);
    return e;
  }

  std::string dotted_name() {
    std::string n = expect_name();
    while (skip_op(".")) {
      n += '.';
      n += expect_name();
    }
    return n;
  }

  ExprPtr parse_filter(ExprPtr input) {
    const int line = cur().line;
    auto e = make(ExprKind::Filter, line);
    e->name = dotted_name();
    e->filter = find_filter(e->name);
    if (!e->filter) error("No filter named '" + e->name + "'.", line);
    e->children.push_back(std::move(input));
    if (is_op("(")) parse_call_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr input) {
    const int line = cur().line;
    advance();  // is
    auto e = make(ExprKind::Test, line);
    e->negated = skip_name("not");
    e->name = dotted_name();
    e->test = find_test(e->name);
    if (!e->test) error("No test named '" + e->name + "'.", line);
    e->children.push_back(std::move(input));
    const TokenType t = cur().type;
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((t == TokenType::Name || t == TokenType::String || t == TokenType::Integer || t == TokenType::Float ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) error("You cannot chain multiple tests with is");
      e->children.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  std::vector<Token> tokens_;
  const std::string& name_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;
  std::vector<std::pair<bool, bool>> macro_uses_;  // per macro being parsed: reads varargs, kwargs
};

}  // namespace

std::vector<Node> parse_template(std::string_view source, const std::string& template_name) {
  return Parser(tokenize(source, template_name), template_name).parse();
}

}  // namespace grpo::jinja
