// Passes 10 and 11: control flow and linearization.
//
// nest_loops makes every END close one range, the ranges of one END nested in id order (the
// smallest id outermost). linearize then walks the effects from the SINK and writes the program:
// an effect is written once, after the effects it depends on (through AFTER); an END opens its
// loop, writes its body and closes it; a value is written where it is first used in each loop
// scope and reused inside that scope, except that a loop-invariant value is hoisted: a pure value
// (see hoistable) is written in the outermost scope where its sources are all defined, before the
// loops it does not depend on, though never out of a WHEN region. (A division by a run-time
// divisor depending only on an outer loop's range would otherwise be recomputed every inner
// iteration: nvcc will not hoist a division it cannot prove nonzero, and hopper_gemm's producer
// then paid three of them on every K step between a stage's release and its TMA load.) Effects a
// loop body depends on that do not lie in the loop (neither listed in its body, nor using its
// range, nor ordered after an effect the body lists) are written before the loop opens. A WHEN
// region that resolve_when kept whole (a warp-specialized role) is written the same way: what it
// depends on outside it, then BranchBegin, its effects in a scope of their own, BranchEnd.
#include <algorithm>
#include <unordered_map>
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

// Whether a divisor is a value cast from a float: a NaN or out-of-range float-to-int cast is
// poison in LLVM (fptosi), whatever its value range says, and a division by poison is undefined.
bool from_float(const UOp& divisor) {
  for (const UOp& u : toposort(divisor))
    if (u.op() == Op::CAST && u.src(0).dtype().is_float()) return true;
  return false;
}

// Whether a value may be written before a loop it does not depend on, where it may run though the
// loop runs zero times: pure and unable to fault or be undefined. Not loads (a loop's effects may
// change what they read), not lane exchanges (convergent), and a division or shift only where the
// divisor is provably positive (and not cast from a float) or the shift amount provably below
// the width.
bool hoistable(const UOp& v) {
  switch (v.op()) {
    case Op::CONST: case Op::DEFINE_VAR: case Op::SPECIAL: case Op::INDEX: case Op::VECTORIZE: case Op::GEP: return true;
    case Op::IDIV: case Op::MOD: return v.src(1).vmin() > 0 && !from_float(v.src(1));
    case Op::SHL: case Op::SHR: return v.src(1).vmin() >= 0 && v.src(1).vmax() < Wide(v.dtype().bits());
    default: return opsets::alu.contains(v.op());
  }
}

// The walk is a machine over an explicit stack of frames, not recursion: a chain of 100,000
// values or effects must not exhaust the thread's stack. Each frame is one call of the
// recursive description in the header comment, resumed at `step` once the call it made returns,
// so the program comes out in exactly the order the recursion would write it.
class Linearizer {
 public:
  std::vector<LinearOp> run(const UOp& sink) {
    open_scope(false);
    call(Frame::Kind::Effect, sink);
    while (!stack_.empty()) {
      switch (stack_.back().kind) {
        case Frame::Kind::Effect: resume_effect(); break;
        case Frame::Kind::Loop: resume_loop(); break;
        case Frame::Kind::Branch: resume_branch(); break;
        case Frame::Kind::Value: resume_value(); break;
      }
    }
    return with_hoisted_values();
  }

 private:
  struct Frame {
    enum class Kind { Effect, Loop, Branch, Value };
    Kind kind = Kind::Effect;
    UOp node;
    int step = 0;          // where the call resumes
    size_t next = 0;       // the next source (or dependency) to visit
    std::vector<UOp> deps;  // Loop, Branch: the effects its body depends on
    std::unordered_set<const Node*> listed;  // Loop: the effects its body lists (never written before it)
    std::unordered_map<const Node*, bool> after_listed;  // Loop: whether an effect comes after a listed one
    std::unordered_set<const Node*> region;  // Branch: the effects of its region
  };

  // Whether `e` comes after an effect the body lists, directly or through the effects it comes
  // after (a barrier insert_barriers put between a listed store and its read): written before the
  // loop, it would take that effect with it. `memo` keeps the answers of one loop's walk, so
  // that a chain of effects is walked once; the walk keeps its own stack (chains can be long).
  static bool after_listed(const std::unordered_set<const Node*>& listed, const UOp& e, std::unordered_map<const Node*, bool>& memo) {
    if (const auto it = memo.find(e.node()); it != memo.end()) return it->second;
    struct Walk {
      UOp effect;
      std::vector<UOp> before;  // the effects it comes after
      size_t next = 0;
      bool after = false;
    };
    std::vector<Walk> stack;
    stack.push_back({e, reached_effects(e)});
    while (!stack.empty()) {
      Walk& w = stack.back();
      if (!w.after && w.next < w.before.size()) {
        const UOp d = w.before[w.next++];
        if (listed.count(d.node())) {
          w.after = true;
        } else if (const auto it = memo.find(d.node()); it != memo.end()) {
          w.after = it->second;
        } else {
          stack.push_back({d, reached_effects(d)});
        }
        continue;
      }
      const bool after = w.after;
      memo[w.effect.node()] = after;
      stack.pop_back();
      if (!stack.empty() && after) stack.back().after = true;
    }
    return memo.at(e.node());
  }

  bool defined(const UOp& v) const {
    for (const auto& s : scopes_)
      if (s.count(v.node())) return true;
    return false;
  }

  // A scope opens with the LoopBegin or BranchBegin written next (the root's at 0).
  void open_scope(bool branch) {
    scopes_.emplace_back();
    scope_starts_.push_back({out_.size(), branch});
  }
  void close_scope() {
    scopes_.pop_back();
    scope_starts_.pop_back();
  }

  // The scope a value is written in: the current one, or for a hoistable value the innermost of
  // the scopes defining its sources, never outside the innermost open WHEN region. (A source
  // not in any scope is a buffer, declared up front, or an AFTER, which pins a value here.)
  size_t scope_for(const UOp& v) const {
    const size_t current = scopes_.size() - 1;
    if (!hoistable(v)) return current;
    size_t at = 0;
    for (size_t level = current; level > 0 && at == 0; --level)
      if (scope_starts_[level].branch) at = level;
    for (const UOp& s : v.src()) {
      if (s.op() == Op::PLACEHOLDER) continue;
      size_t level = current + 1;
      while (level-- > 0 && !scopes_[level].count(s.node())) {}
      if (level > current) return current;
      at = std::max(at, level);
    }
    return at;
  }

  // Writes value `v` in scope `at`: at the end of the program if that is the current scope, else
  // just before the LoopBegin of the scope opened inside it (always a loop's: a value is never
  // hoisted out of a branch region).
  void write_value(const UOp& v, size_t at) {
    scopes_[at].insert(v.node());
    if (at + 1 == scopes_.size()) return out_.push_back({LinearOp::Kind::Value, v});
    hoisted_[scope_starts_[at + 1].index].push_back({LinearOp::Kind::Value, v});
  }

  std::vector<LinearOp> with_hoisted_values() {
    if (hoisted_.empty()) return std::move(out_);
    size_t values = 0;
    for (const auto& [index, hoisted] : hoisted_) values += hoisted.size();
    std::vector<LinearOp> program;
    program.reserve(out_.size() + values);
    for (size_t i = 0; i < out_.size(); ++i) {
      if (const auto it = hoisted_.find(i); it != hoisted_.end()) program.insert(program.end(), it->second.begin(), it->second.end());
      program.push_back(std::move(out_[i]));
    }
    return program;
  }

  bool in_open_loops(const UOp& n) {
    for (const UOp& r : open_.of(n))
      if (std::none_of(loops_.begin(), loops_.end(), [&](const UOp& l) { return l.same(r); })) return false;
    return true;
  }

  void call(Frame::Kind kind, const UOp& node) {
    Frame f;
    f.kind = kind;
    f.node = node;
    stack_.push_back(std::move(f));
  }

  // An effect is written once, after what it uses.
  void resume_effect() {
    Frame& f = stack_.back();
    const UOp e = f.node;
    if (f.step == 0) {
      if (emitted_.count(e.node())) {
        const auto it = branch_of_.find(e.node());
        const bool closed_branch = it != branch_of_.end() && std::find(branches_.begin(), branches_.end(), it->second) == branches_.end();
        // Named first outside, now by an open region that holds it.
        const bool outside_region = !regions_.empty() && regions_.back().count(e.node()) && (it == branch_of_.end() || it->second != branches_.back());
        if (closed_branch || outside_region)
          throw Error("linearize: " + std::string(op_name(e.op())) + " " + expr_string(e, 80) +
                      " is both conditional (inside a when) and named outside it; build two statements");
        return stack_.pop_back();
      }
      switch (e.op()) {
        case Op::SINK: case Op::GROUP: case Op::STORE: case Op::CUSTOM: case Op::ASYNC_COPY: case Op::ATOMIC: break;
        case Op::MBARRIER: case Op::WGMMA: case Op::WGMMA_FENCE: case Op::WGMMA_COMMIT: case Op::WGMMA_WAIT: case Op::TMA_LOAD:
        case Op::TMA_STORE: case Op::TMA_STORE_WAIT: case Op::CLUSTER_SYNC: case Op::SETMAXNREG: case Op::GRID_BARRIER: break;
        case Op::WHEN:
          if (!around_one_statement(e)) {
            f.step = 1;
            return call(Frame::Kind::Branch, e);
          }
          check_branch(e);
          break;
        case Op::END:
          f.step = 1;
          return call(Frame::Kind::Loop, e);
        default:
          if (!opsets::sync.contains(e.op())) throw Error("linearize: unexpected effect " + std::string(op_name(e.op())));
      }
      f.step = 1;
    }
    if (e.op() == Op::WHEN && around_one_statement(e)) {
      // A branch around one statement: the condition, then the statement's predecessors; the
      // statement itself is written by the renderer inside the branch.
      const UOp& statement = e.src(1);
      if (f.next == 0) return ++f.next, call(Frame::Kind::Value, e.src(0));
      if (f.next <= statement.src().size()) {
        const UOp& s = statement.src(f.next++ - 1);
        return call(statement_source_kind(statement, s), s);
      }
      emitted_.insert(statement.node());
      branch_of_[statement.node()] = next_branch_++;  // a branch that is never open again
    } else if (e.op() != Op::END && e.op() != Op::WHEN && f.next < e.src().size()) {
      const UOp s = e.src(f.next++);
      return call(statement_source_kind(e, s), s);
    }
    if (e.op() == Op::ATOMIC) {  // an effect with a value: written once, where the effects or a use reach it first
      scopes_.back().insert(e.node());
      out_.push_back({LinearOp::Kind::Value, e});
    } else if (e.op() != Op::SINK && e.op() != Op::GROUP && e.op() != Op::END && !(e.op() == Op::WHEN && !around_one_statement(e))) {
      out_.push_back({LinearOp::Kind::Effect, e});
    }
    emitted_.insert(e.node());
    if (!branches_.empty()) branch_of_[e.node()] = branches_.back();
    stack_.pop_back();
  }

  // resolve_when leaves two kinds of WHEN: a branch around one synchronization or Hopper statement
  // or stmatrix (an effect the renderer writes as `if (cond) statement`), and a region of whole
  // loops and statements (a warp-specialized role), written as BranchBegin, its effects, BranchEnd.
  static bool around_one_statement(const UOp& when) {
    if (when.src().size() != 2) return false;
    const UOp& s = when.src(1);
    return opsets::sync.contains(s.op()) || opsets::hopper.contains(s.op()) || is_matrix_write(s);
  }

  // A region branch opens (after the effects its region depends on that lie outside it, and its
  // condition), writes the region's effects in a scope of its own and closes.
  void resume_branch() {
    Frame& f = stack_.back();
    const UOp when = f.node;
    switch (f.step) {
      case 0:
        f.region = when_region(when, open_);
        for (size_t i = 1; i < when.src().size(); ++i)
          for (const UOp& d : reached_effects(when.src(i)))
            if (!f.region.count(d.node())) f.deps.push_back(d);
        f.step = 1;
        [[fallthrough]];
      case 1:
        while (f.next < f.deps.size()) {
          const UOp d = f.deps[f.next++];
          if (in_open_loops(d)) return call(Frame::Kind::Effect, d);
        }
        f.step = 2;
        return call(Frame::Kind::Value, when.src(0));
      case 2:
        open_scope(true);
        out_.push_back({LinearOp::Kind::BranchBegin, when});
        branches_.push_back(next_branch_++);
        regions_.push_back(f.region);
        f.next = 1;
        f.step = 3;
        [[fallthrough]];
      case 3:
        if (f.next < when.src().size()) return call(Frame::Kind::Effect, when.src(f.next++));
        close_scope();
        branches_.pop_back();
        regions_.pop_back();
        out_.push_back({LinearOp::Kind::BranchEnd, when});
        stack_.pop_back();
    }
  }

  // A statement's effect sources are its predecessors; CUSTOM's and the Hopper statements' follow
  // their value operands. A synchronization statement's value sources are values written before
  // it (the LDS reads a ping-pong issues ahead of its barrier).
  static Frame::Kind statement_source_kind(const UOp& statement, const UOp& s) {
    const bool effect_source = statement.op() == Op::SINK || statement.op() == Op::GROUP || (opsets::sync.contains(statement.op()) && s.is_effect()) ||
                               (s.is_effect() && !s.is_valued_effect());
    return effect_source ? Frame::Kind::Effect : Frame::Kind::Value;
  }

  // A branch around one synchronization or Hopper statement (a branch on a
  // wave-uniform condition); anything else reaching here is a pipeline bug, reported as such.
  void check_branch(const UOp& when) {
    if (emitted_.count(when.src(1).node()))
      throw Error("linearize: " + std::string(op_name(when.src(1).op())) + " is both conditional (inside when(" + expr_string(when.src(0), 60) +
                  ", ...)) and unconditional (named elsewhere); build two statements");
  }

  // An END opens its loop (after the effects its body depends on that lie outside it), writes
  // its body in a scope of its own and closes it.
  void resume_loop() {
    Frame& f = stack_.back();
    const UOp end = f.node;
    const UOp r = end.src().size() == 2 ? end.src(1) : UOp();
    switch (f.step) {
      case 0:
        if (end.src().size() != 2)
          throw Error("linearize: END of " + std::to_string(end.src().size() - 1) + " ranges (nest_loops runs first)");
        // A prologue a loop's barrier names is written before the loop, once, not in every iteration.
        f.deps = reached_effects(end.src(0));
        f.listed = listed_effects(end.src(0));  // run in every iteration: never written before the loop
        f.step = 1;
        [[fallthrough]];
      case 1:
        while (f.next < f.deps.size()) {
          const UOp d = f.deps[f.next++];
          if (!f.listed.count(d.node()) && in_open_loops(d) && !after_listed(f.listed, d, f.after_listed)) return call(Frame::Kind::Effect, d);
        }
        f.step = 2;
        return call(Frame::Kind::Value, r.src(0));
      case 2:
        open_scope(false);
        out_.push_back({LinearOp::Kind::LoopBegin, r});
        loops_.push_back(r);
        scopes_.back().insert(r.node());
        f.step = 3;
        return call(Frame::Kind::Effect, end.src(0));
      default:
        close_scope();
        loops_.pop_back();
        out_.push_back({LinearOp::Kind::LoopEnd, r});
        stack_.pop_back();
    }
  }

  // A value is written where it is first used in a loop scope, after its sources.
  void resume_value() {
    Frame& f = stack_.back();
    const UOp v = f.node;
    if (f.step == 0) {
      if (defined(v)) return stack_.pop_back();
      switch (v.op()) {
        case Op::PLACEHOLDER: return stack_.pop_back();  // buffers are the renderer's, declared up front
        case Op::RANGE:
          throw Error("linearize: range " + std::to_string(range_id(v)) + " (" + std::string(axis_name(range_axis(v))) +
                      ") is used outside the loop of the END that closes it; end it around every store that uses it");
        case Op::AFTER: f.next = 1; break;
        case Op::ATOMIC: stack_.pop_back(); return call(Frame::Kind::Effect, v);
        default:
          if (v.is_effect()) throw Error("linearize: an effect (" + std::string(op_name(v.op())) + ") used as a value");
      }
      f.step = 1;
    }
    if (v.op() == Op::AFTER) {
      // The effects it names, then the buffer itself in this frame's place.
      while (f.next < v.src().size()) {
        const UOp s = v.src(f.next++);
        if (s.is_effect()) return call(Frame::Kind::Effect, s);
      }
      const UOp buffer = v.src(0);
      stack_.pop_back();
      return call(Frame::Kind::Value, buffer);
    }
    if (f.next < v.src().size()) return call(Frame::Kind::Value, v.src(f.next++));
    write_value(v, scope_for(v));
    stack_.pop_back();
  }

  OpenRanges open_;
  std::vector<Frame> stack_;
  std::vector<LinearOp> out_;
  std::unordered_set<const Node*> emitted_;
  // The branch each effect written inside one belongs to (numbered as opened), and the branches
  // open now: an effect of a closed branch named again is an error, not an effect skipped.
  std::unordered_map<const Node*, size_t> branch_of_;
  std::vector<size_t> branches_;
  std::vector<std::unordered_set<const Node*>> regions_;  // the effects of each open branch's region
  size_t next_branch_ = 0;
  std::vector<std::unordered_set<const Node*>> scopes_;
  struct ScopeStart {
    size_t index;  // in out_: the scope's LoopBegin or BranchBegin
    bool branch;   // a WHEN region's: values are never hoisted out of it
  };
  std::vector<ScopeStart> scope_starts_;
  std::unordered_map<size_t, std::vector<LinearOp>> hoisted_;  // values written just before out_[index], a LoopBegin
  std::vector<UOp> loops_;
};

}  // namespace

std::vector<LinearOp> linearize(const UOp& kernel) {
  if (kernel.op() != Op::SINK) throw Error("linearize: the kernel's root is " + std::string(op_name(kernel.op())) + ", not SINK");
  return Linearizer().run(kernel);
}

}  // namespace weft::lower
