// Parsed form of a Jinja template: expression trees and statement nodes, with the template line of each
// node for error messages. Filters and tests are resolved to functions when parsing.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/value.h"

namespace grpo::jinja {

enum class ExprKind : uint8_t {
  Const,      // value
  Name,       // name
  List,       // children = items
  Tuple,      // children = items
  Dict,       // children = key0, value0, key1, value1, ...
  GetAttr,    // children = [object], name = attribute
  GetItem,    // children = [object, key]
  Slice,      // children = [object, start, stop, step] (null when omitted)
  Call,       // children = [callee, args...], kwargs
  Filter,     // children = [input (null inside filter blocks), args...], kwargs, name, filter
  Test,       // children = [input, args...], kwargs, name, test, negated
  Unary,      // children = [operand], name = "-" | "+" | "not"
  And,        // children = [left, right]
  Or,         // children = [left, right]
  Binary,     // children = [left, right], binary_op
  Compare,    // children = [first, operand...], compare_ops (one per operand)
  Concat,     // children = parts joined by ~
  Conditional,  // children = [condition, then, else (null: undefined)]
};

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  BinaryOp binary_op = BinaryOp::Add;
  std::vector<CompareOp> compare_ops;
  FilterFn filter = nullptr;
  TestFn test = nullptr;
  bool negated = false;
};

enum class NodeKind : uint8_t {
  Text,         // text
  Output,       // expr
  If,           // expr = condition, body, else_body (elif chains nest in else_body)
  For,          // targets, expr = iterable, condition (may be null), body, else_body
  Set,          // targets (or targets[0] + attribute for namespaces), expr
  SetBlock,     // targets[0], filters, body
  Macro,        // name, params, defaults, body
  With,         // targets + values (assignments), body
  FilterBlock,  // filters, body
  Break,
  Continue,
  Scope,        // body rendered in place (transformers' {% generation %} block)
};

struct Node {
  NodeKind kind;
  int line;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<std::string> targets;
  bool tuple_target = false;
  std::string attribute;
  std::vector<ExprPtr> values;   // With: one per target; Macro: one default per parameter (null: none)
  std::vector<ExprPtr> filters;  // Filter exprs whose input is the block's output
  std::vector<Node> body;
  std::vector<Node> else_body;
  bool uses_varargs = false;  // Macro: the body reads `varargs` / `kwargs`
  bool uses_kwargs = false;
};

}  // namespace grpo::jinja
