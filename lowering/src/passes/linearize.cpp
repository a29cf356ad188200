// Passes 10 and 11: control flow and linearization.
//
// nest_loops makes every END close one range, the ranges of one END nested in id order (the
// smallest id outermost). linearize then walks the effects from the SINK and writes the program:
// an effect is written once, after the effects it depends on (through AFTER); an END opens its
// loop, writes its body and closes it; a value is written where it is first used in each loop
// scope and reused inside that scope. Effects a loop body depends on that do not lie in the loop
// are written before the loop opens.
#include <unordered_set>

#include "graph_utils.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {

UOp nest_loops(const UOp& kernel) {
  return transform(kernel, [](const UOp&, const UOp& u) -> std::optional<UOp> {
    if (u.op() != Op::END || u.src().size() <= 2) return std::nullopt;
    std::vector<UOp> ranges(u.src().begin() + 1, u.src().end());
    sort_ranges(ranges);
    UOp body = u.src(0);
    for (size_t i = ranges.size(); i-- > 0;) body = body.end({ranges[i]});
    return body;
  });
}

namespace {

class Linearizer {
 public:
  std::vector<LinearOp> run(const UOp& sink) {
    scopes_.emplace_back();
    effect(sink);
    return std::move(out_);
  }

 private:
  bool defined(const UOp& v) const {
    for (const auto& s : scopes_)
      if (s.count(v.node())) return true;
    return false;
  }

  bool in_open_loops(const UOp& n) {
    for (const UOp& r : open_.of(n))
      if (std::none_of(loops_.begin(), loops_.end(), [&](const UOp& l) { return l.same(r); })) return false;
    return true;
  }

  // Effects the body of an effect depends on through AFTER (not its own sub-effects).
  static void dependencies(const UOp& x, std::vector<UOp>& deps, std::unordered_set<const Node*>& seen) {
    if (!seen.insert(x.node()).second) return;
    if (x.op() == Op::AFTER) {
      for (size_t i = 1; i < x.src().size(); ++i)
        if (x.src(i).is_effect()) deps.push_back(x.src(i));
      dependencies(x.src(0), deps, seen);
      return;
    }
    for (const UOp& s : x.src()) dependencies(s, deps, seen);
  }

  void effect(const UOp& e) {
    if (emitted_.count(e.node())) return;
    switch (e.op()) {
      case Op::SINK:
      case Op::GROUP:
        for (const UOp& s : e.src()) effect(s);
        break;
      case Op::END: loop(e); break;
      case Op::BARRIER:
      case Op::PRIORITY:
        for (const UOp& s : e.src()) effect(s);
        out_.push_back({LinearOp::Kind::Effect, e});
        break;
      case Op::STORE:
      case Op::CUSTOM:
      case Op::ASYNC_COPY:
        for (const UOp& s : e.src()) {
          if (s.is_effect() && !s.is_valued_effect()) effect(s);  // a statement's predecessors
          else value(s);
        }
        out_.push_back({LinearOp::Kind::Effect, e});
        break;
      case Op::ATOMIC:  // an effect with a value: written once, where the effects or a use reach it first
        for (const UOp& s : e.src()) value(s);
        scopes_.back().insert(e.node());
        out_.push_back({LinearOp::Kind::Value, e});
        break;
      default: throw Error("linearize: unexpected effect " + std::string(op_name(e.op())));
    }
    emitted_.insert(e.node());
  }

  void loop(const UOp& end) {
    if (end.src().size() != 2) throw Error("linearize: END of " + std::to_string(end.src().size() - 1) + " ranges (nest_loops runs first)");
    const UOp& r = end.src(1);
    std::vector<UOp> deps;
    std::unordered_set<const Node*> seen;
    dependencies(end.src(0), deps, seen);
    for (const UOp& d : deps)
      if (in_open_loops(d)) effect(d);
    value(r.src(0));
    out_.push_back({LinearOp::Kind::LoopBegin, r});
    loops_.push_back(r);
    scopes_.emplace_back();
    scopes_.back().insert(r.node());
    effect(end.src(0));
    scopes_.pop_back();
    loops_.pop_back();
    out_.push_back({LinearOp::Kind::LoopEnd, r});
  }

  void value(const UOp& v) {
    if (defined(v)) return;
    switch (v.op()) {
      case Op::PLACEHOLDER: return;  // buffers are the renderer's, declared up front
      case Op::RANGE:
        throw Error("linearize: range " + std::to_string(range_id(v)) + " (" + std::string(axis_name(range_axis(v))) +
                    ") is used outside the loop of the END that closes it; end it around every store that uses it");
      case Op::AFTER:
        for (size_t i = 1; i < v.src().size(); ++i)
          if (v.src(i).is_effect()) effect(v.src(i));
        value(v.src(0));
        return;
      case Op::ATOMIC: effect(v); return;
      default: break;
    }
    if (v.is_effect()) throw Error("linearize: an effect (" + std::string(op_name(v.op())) + ") used as a value");
    for (const UOp& s : v.src()) value(s);
    scopes_.back().insert(v.node());
    out_.push_back({LinearOp::Kind::Value, v});
  }

  OpenRanges open_;
  std::vector<LinearOp> out_;
  std::unordered_set<const Node*> emitted_;
  std::vector<std::unordered_set<const Node*>> scopes_;
  std::vector<UOp> loops_;
};

}  // namespace

std::vector<LinearOp> linearize(const UOp& kernel) {
  if (kernel.op() != Op::SINK) throw Error("linearize: the kernel's root is " + std::string(op_name(kernel.op())) + ", not SINK");
  return Linearizer().run(kernel);
}

}  // namespace weft::lower
