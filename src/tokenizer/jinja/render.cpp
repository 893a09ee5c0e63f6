// The interpreter: walks the parsed template with Jinja's scoping (each for-loop iteration, macro call and
// with-block is a scope; if-blocks are not), loop variables, loop controls and macros.
#include <memory>

#include "core/error.h"
#include "tokenizer/jinja/access.h"
#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/globals.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/template.h"

namespace grpo::jinja {

namespace {

constexpr int kMaxMacroDepth = 200;

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Frame> parent;

  const Value* find(const std::string& name) const {
    for (const Frame* f = this; f; f = f->parent.get())
      for (const auto& [k, v] : f->vars)
        if (k == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, Value value) {
    for (auto& [k, v] : vars) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    vars.emplace_back(name, std::move(value));
  }
};

// Shared state of one for-loop, read by loop.cycle() and loop.changed().
struct LoopState {
  int64_t index0 = 0;
  bool has_last_changed = false;
  Value last_changed;
};

struct LoopKeys {
  Value index{"index"}, index0{"index0"}, revindex{"revindex"}, revindex0{"revindex0"}, first{"first"},
      last{"last"}, length{"length"}, previtem{"previtem"}, nextitem{"nextitem"}, depth{"depth"},
      depth0{"depth0"}, cycle{"cycle"}, changed{"changed"};
};

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  explicit Renderer(const Value& context) : context_(context), frame_(std::make_shared<Frame>()) {}

  void render_all(const std::vector<Node>& nodes, std::string& out) { render(nodes, out); }

 private:
  // Swaps in a frame for the lifetime of the guard.
  class FrameGuard {
   public:
    FrameGuard(Renderer& r, std::shared_ptr<Frame> frame) : r_(r), saved_(std::move(r.frame_)) { r.frame_ = std::move(frame); }
    ~FrameGuard() { r_.frame_ = std::move(saved_); }
    FrameGuard(const FrameGuard&) = delete;
    FrameGuard& operator=(const FrameGuard&) = delete;

   private:
    Renderer& r_;
    std::shared_ptr<Frame> saved_;
  };

  std::shared_ptr<Frame> child_frame() const {
    auto f = std::make_shared<Frame>();
    f->parent = frame_;
    return f;
  }

  Flow render(const std::vector<Node>& nodes, std::string& out) {
    for (const Node& n : nodes) {
      const Flow flow = render_node(n, out);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  // Block-set, filter and generation bodies are scopes of their own: their assignments stay inside.
  Flow render_scoped(const std::vector<Node>& nodes, std::string& out) {
    FrameGuard guard(*this, child_frame());
    return render(nodes, out);
  }

  Flow render_node(const Node& n, std::string& out) {
    try {
      return render_node_inner(n, out);
    } catch (TemplateFailure& f) {
      if (f.line == 0) f.line = n.line;
      throw;
    }
  }

  Flow render_node_inner(const Node& n, std::string& out) {
    switch (n.kind) {
      case NodeKind::Text:
        out += n.text;
        return Flow::Normal;
      case NodeKind::Output: {
        const Value v = eval(*n.expr);
        if (v.is_string()) out += v.as_string();
        else out += to_str(v);
        return Flow::Normal;
      }
      case NodeKind::If:
        return render(eval(*n.expr).truthy() ? n.body : n.else_body, out);
      case NodeKind::For:
        return render_for(n, out);
      case NodeKind::Set:
        assign(n, eval(*n.expr));
        return Flow::Normal;
      case NodeKind::SetBlock: {
        std::string captured;
        render_scoped(n.body, captured);
        frame_->set(n.targets[0], apply_filters(n.filters, Value(std::move(captured))));
        return Flow::Normal;
      }
      case NodeKind::FilterBlock: {
        std::string captured;
        render_scoped(n.body, captured);
        out += to_str(apply_filters(n.filters, Value(std::move(captured))));
        return Flow::Normal;
      }
      case NodeKind::Macro:
        frame_->set(n.text, make_macro(n));
        return Flow::Normal;
      case NodeKind::With: {
        auto frame = child_frame();
        for (size_t i = 0; i < n.targets.size(); ++i) frame->set(n.targets[i], eval(*n.values[i]));
        FrameGuard guard(*this, std::move(frame));
        return render(n.body, out);
      }
      case NodeKind::Scope:
        return render_scoped(n.body, out);
      case NodeKind::Break:
        return Flow::Break;
      case NodeKind::Continue:
        return Flow::Continue;
    }
    return Flow::Normal;
  }

  // Binds for/set targets: one name, or a tuple unpacked like Python's `a, b = value`.
  static void bind_targets(Frame& frame, const Node& n, const Value& value) {
    if (!n.tuple_target) {
      frame.set(n.targets[0], value);
      return;
    }
    const std::vector<Value> items = iterate(value);
    if (items.size() != n.targets.size()) {
      if (items.size() < n.targets.size())
        fail("not enough values to unpack (expected " + std::to_string(n.targets.size()) + ", got " +
             std::to_string(items.size()) + ")");
      fail("too many values to unpack (expected " + std::to_string(n.targets.size()) + ")");
    }
    for (size_t i = 0; i < items.size(); ++i) frame.set(n.targets[i], items[i]);
  }

  void assign(const Node& n, const Value& value) {
    if (n.attribute.empty()) {
      bind_targets(*frame_, n, value);
      return;
    }
    const Value target = lookup(n.targets[0]);
    if (!target.is_object() || target.object().kind != ObjectKind::Namespace)
      fail("Cannot assign attribute on non-namespace object");
    target.object().set(Value(n.attribute), value);
  }

  Flow render_for(const Node& n, std::string& out) {
    const Value iterable = eval(*n.expr);
    std::vector<Value> items = iterate(iterable);
    if (n.condition) {
      std::vector<Value> kept;
      for (Value& item : items) {
        auto frame = child_frame();
        bind_targets(*frame, n, item);
        FrameGuard guard(*this, std::move(frame));
        if (eval(*n.condition).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }

    static const LoopKeys keys;
    auto state = std::make_shared<LoopState>();
    const Value cycle = Value::callable("bound method LoopContext.cycle", [state](CallArgs& args) {
      expect_no_keywords(args, "cycle");
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[static_cast<size_t>(state->index0) % args.positional.size()];
    });
    const Value changed = Value::callable("bound method LoopContext.changed", [state](CallArgs& args) {
      expect_no_keywords(args, "changed");
      Value current = Value::make_array(args.positional);
      if (state->has_last_changed && equals(current, state->last_changed)) return Value(false);
      state->has_last_changed = true;
      state->last_changed = std::move(current);
      return Value(true);
    });
    const int64_t length = static_cast<int64_t>(items.size());
    // Jinja renders the else block unless some iteration ran its body to the end: an iteration left by
    // break or continue does not count.
    bool body_completed = false;
    for (int64_t i = 0; i < length; ++i) {
      state->index0 = i;
      auto frame = child_frame();
      bind_targets(*frame, n, items[static_cast<size_t>(i)]);
      Value loop = Value::make_object(ObjectKind::Loop);
      auto& e = loop.object().entries;
      e.reserve(13);
      e.emplace_back(keys.index, Value(i + 1));
      e.emplace_back(keys.index0, Value(i));
      e.emplace_back(keys.revindex, Value(length - i));
      e.emplace_back(keys.revindex0, Value(length - i - 1));
      e.emplace_back(keys.first, Value(i == 0));
      e.emplace_back(keys.last, Value(i == length - 1));
      e.emplace_back(keys.length, Value(length));
      e.emplace_back(keys.previtem, i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
      e.emplace_back(keys.nextitem, i + 1 < length ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
      e.emplace_back(keys.depth, Value(1));
      e.emplace_back(keys.depth0, Value(0));
      e.emplace_back(keys.cycle, cycle);
      e.emplace_back(keys.changed, changed);
      frame->set("loop", std::move(loop));
      FrameGuard guard(*this, std::move(frame));
      const Flow flow = render(n.body, out);
      if (flow == Flow::Break) break;
      if (flow == Flow::Normal) body_completed = true;
    }
    if (!body_completed) return render(n.else_body, out);
    return Flow::Normal;
  }

  // The macro refers to its defining scope weakly: that scope holds the macro, and a strong reference
  // would make a cycle that is never freed.
  Value make_macro(const Node& n) {
    std::weak_ptr<Frame> closure = frame_;
    const Node* node = &n;
    return Value::callable("Macro '" + n.text + "'",
                           [this, node, closure](CallArgs& args) { return call_macro(*node, closure, args); });
  }

  Value call_macro(const Node& n, const std::weak_ptr<Frame>& closure, CallArgs& args) {
    if (macro_depth_ >= kMaxMacroDepth) fail("maximum macro recursion depth exceeded in macro '" + n.text + "'");
    auto frame = std::make_shared<Frame>();
    frame->parent = closure.lock();
    if (!frame->parent) fail("macro '" + n.text + "' was called after the scope that defined it ended");
    const size_t n_params = n.targets.size();
    std::vector<bool> given(n_params, false);
    std::vector<Value> varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < n_params) {
        frame->set(n.targets[i], args.positional[i]);
        given[i] = true;
      } else if (n.uses_varargs) {
        varargs.push_back(args.positional[i]);
      } else {
        fail("macro '" + n.text + "' takes not more than " + std::to_string(n_params) + " argument(s)");
      }
    }
    Value kwargs = Value::make_object();
    for (const auto& [name, value] : args.keyword) {
      size_t i = 0;
      while (i < n_params && n.targets[i] != name) ++i;
      if (i < n_params) {
        if (given[i]) fail("macro '" + n.text + "' got multiple values for argument '" + name + "'");
        frame->set(name, value);
        given[i] = true;
      } else if (n.uses_kwargs) {
        kwargs.object().set(Value(name), value);
      } else {
        fail("macro '" + n.text + "' takes no keyword argument '" + name + "'");
      }
    }
    if (n.uses_varargs) frame->set("varargs", Value::make_tuple(std::move(varargs)));
    if (n.uses_kwargs) frame->set("kwargs", kwargs);
    FrameGuard guard(*this, frame);
    for (size_t i = 0; i < n_params; ++i) {
      if (given[i]) continue;
      frame->set(n.targets[i], n.values[i] ? eval(*n.values[i])
                                           : Value::undefined("parameter '" + n.targets[i] + "' was not provided"));
    }
    ++macro_depth_;
    std::string out;
    try {
      render(n.body, out);
    } catch (...) {
      --macro_depth_;
      throw;
    }
    --macro_depth_;
    return Value(std::move(out));
  }

  Value apply_filters(const std::vector<ExprPtr>& filters, Value input) {
    for (const ExprPtr& f : filters) {
      CallArgs args = eval_args(*f);
      try {
        input = f->filter(input, args);
      } catch (TemplateFailure& failure) {
        if (failure.line == 0) failure.line = f->line;
        throw;
      }
    }
    return input;
  }

  Value lookup(const std::string& name) const {
    if (const Value* v = frame_->find(name)) return *v;
    if (context_.is_object()) {
      if (const Value* v = context_.object().find(std::string_view(name))) return *v;
    }
    if (const Value* v = find_global(name)) return *v;
    return Value::undefined("'" + name + "' is undefined");
  }

  // Arguments of a call/filter/test: children[first..] positional, plus keywords.
  CallArgs eval_args(const Expr& e, size_t first = 1) {
    CallArgs args;
    args.positional.reserve(e.children.size() - std::min(first, e.children.size()));
    for (size_t i = first; i < e.children.size(); ++i) args.positional.push_back(eval(*e.children[i]));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
    return args;
  }

  Value eval(const Expr& e) {
    try {
      return eval_inner(e);
    } catch (TemplateFailure& f) {
      if (f.line == 0) f.line = e.line;
      throw;
    }
  }

  Value eval_optional(const ExprPtr& e) { return e ? eval(*e) : Value(); }

  Value call(const Expr& e) {
    const Expr& callee = *e.children[0];
    Value fn;
    if (callee.kind == ExprKind::GetAttr) {
      const Value obj = eval(*callee.children[0]);
      if (has_method(obj, callee.name)) {
        CallArgs args = eval_args(e);
        return call_method(obj, callee.name, args);
      }
      fn = get_attribute(obj, callee.name);
    } else {
      fn = eval(callee);
    }
    if (fn.is_undefined()) fail(fn.undefined_hint());
    if (!fn.is_callable()) fail("'" + type_name(fn) + "' object is not callable");
    CallArgs args = eval_args(e);
    return fn.callable().fn(args);
  }

  bool compare(CompareOp op, const Value& a, const Value& b) {
    switch (op) {
      case CompareOp::Eq: return equals(a, b);
      case CompareOp::Ne: return !equals(a, b);
      case CompareOp::Lt: return less_than(a, b);
      case CompareOp::Le: return less_than(a, b) || equals(a, b);
      case CompareOp::Gt: return less_than(b, a);
      case CompareOp::Ge: return less_than(b, a) || equals(a, b);
      case CompareOp::In: return contains(b, a);
      case CompareOp::NotIn: return !contains(b, a);
    }
    return false;
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Const:
        return e.value;
      case ExprKind::Name:
        return lookup(e.name);
      case ExprKind::List:
      case ExprKind::Tuple: {
        std::vector<Value> items;
        items.reserve(e.children.size());
        for (const ExprPtr& c : e.children) items.push_back(eval(*c));
        return Value::make_array(std::move(items), e.kind == ExprKind::Tuple ? ArrayKind::Tuple : ArrayKind::List);
      }
      case ExprKind::Dict: {
        Value obj = Value::make_object();
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          Value key = eval(*e.children[i]);
          if (key.is_array() && !key.array().is_tuple()) fail("unhashable type: '" + type_name(key) + "'");
          if (key.is_dict()) fail("unhashable type: 'dict'");
          obj.object().set(std::move(key), eval(*e.children[i + 1]));
        }
        return obj;
      }
      case ExprKind::GetAttr:
        return get_attribute(eval(*e.children[0]), e.name);
      case ExprKind::GetItem: {
        const Value obj = eval(*e.children[0]);
        return get_item(obj, eval(*e.children[1]));
      }
      case ExprKind::Slice: {
        const Value obj = eval(*e.children[0]);
        return slice(obj, eval_optional(e.children[1]), eval_optional(e.children[2]), eval_optional(e.children[3]));
      }
      case ExprKind::Call:
        return call(e);
      case ExprKind::Filter: {
        const Value input = eval(*e.children[0]);
        CallArgs args = eval_args(e);
        return e.filter(input, args);
      }
      case ExprKind::Test: {
        const Value input = eval(*e.children[0]);
        CallArgs args = eval_args(e);
        return Value(e.test(input, args) != e.negated);
      }
      case ExprKind::Unary: {
        const Value v = eval(*e.children[0]);
        if (e.name == "not") return Value(!v.truthy());
        return e.name == "-" ? negate(v) : unary_plus(v);
      }
      case ExprKind::And: {
        Value left = eval(*e.children[0]);
        return left.truthy() ? eval(*e.children[1]) : left;
      }
      case ExprKind::Or: {
        Value left = eval(*e.children[0]);
        return left.truthy() ? left : eval(*e.children[1]);
      }
      case ExprKind::Binary: {
        const Value left = eval(*e.children[0]);
        return binary_op(e.binary_op, left, eval(*e.children[1]));
      }
      case ExprKind::Compare: {
        Value left = eval(*e.children[0]);
        for (size_t i = 0; i < e.compare_ops.size(); ++i) {
          Value right = eval(*e.children[i + 1]);
          if (!compare(e.compare_ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::Concat: {
        std::string out;
        for (const ExprPtr& c : e.children) out += to_str(eval(*c));
        return Value(std::move(out));
      }
      case ExprKind::Conditional:
        if (eval(*e.children[0]).truthy()) return eval(*e.children[1]);
        if (e.children[2]) return eval(*e.children[2]);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
    }
    return Value();
  }

  const Value& context_;
  std::shared_ptr<Frame> frame_;
  int macro_depth_ = 0;
};

}  // namespace

std::string Template::render(const Value& context) const {
  std::string out;
  try {
    Renderer(context).render_all(body_, out);
  } catch (const TemplateFailure& f) {
    grpo::fail("[jinja] ", name_, ":", f.line, ": ", f.message);
  }
  return out;
}

}  // namespace grpo::jinja
