// Pass 2b: conditional regions. `when(cond, effects)` becomes its effects with `cond` joined to
// the validity of every access they make: each store and atomic, and each load their values
// (and addresses) need, so that nothing is read or written where `cond` is false. No branch is
// introduced for those; the renderers predicate (AMD: EXEC masking of a select or a guarded
// store; NVIDIA: an `if` around a store).
//
// Synchronization statements (opsets::sync: barriers, waits, priority changes, scheduling hints)
// cannot be predicated: a scalar instruction such as s_barrier runs whatever EXEC holds. Nor can
// Hopper's statements (opsets::hopper): wgmma is issued by a whole warpgroup, an mbarrier wait
// spins. Where `cond` is wave-uniform (the same in every lane of a wave: it depends only on WARP
// ranges, workgroup ids, loop ranges, constants, kernel variables and loads of shared or global
// memory at such addresses) each becomes WHEN(cond, statement), which the renderers turn into a real branch taken by whole waves (HipKittens'
// ping-pong stagger, a Hopper GEMM's producer and consumer warpgroups). A Hopper statement's value
// operands (addresses, parities) are guarded like any value of the region. Elsewhere these are an
// error, as are async copies and inline statements, and values that need every lane (lane
// operations, reductions across threads). stmatrix, whose lanes write each other's values, is
// treated as such a statement: one branch on a wave-uniform condition, an error elsewhere.
//
// The region holds the effects `when` lists and, inside each loop it holds, every effect of the
// loop's body (when_region, graph_utils.h). Other effects the region reaches, through AFTER or a
// statement's predecessors, lie outside it and keep their own guards (the barrier after an
// mbarrier_init, say). An AFTER or predecessor naming one of the region's own effects refers to
// its guarded version, whatever the order of the list, so that no effect of the region is also
// written unguarded.
//
// A region on a wave-uniform condition that holds a Hopper statement (a warp-specialized role:
// the producer's TMA loop, a consumer's wgmma loop) is not rewritten: it stays WHEN(cond,
// effects...), which linearize writes as one branch around the whole region. ptxas serializes
// wgmma instructions that sit in branches of their own, and a role is one branch in any case.
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

class Guard {
 public:
  Guard(const UOp& when, OpenRanges& open) : cond_(when.src(0)), members_(when_region(when, open)) {
    // barrier.cluster is .aligned, and every thread of every CTA of the cluster must arrive.
    // So must every thread of the grid reach a grid barrier.
    for (const UOp& u : toposort(when)) {
      if (u.op() == Op::CLUSTER_SYNC && members_.count(u.node()))
        throw Error("resolve_when: CLUSTER_SYNC inside when(" + expr_string(cond_, 60) +
                    ", ...): every thread of every CTA of the cluster must reach a cluster barrier; move it out of the region");
      if (u.op() == Op::GRID_BARRIER && members_.count(u.node()))
        throw Error("resolve_when: GRID_BARRIER inside when(" + expr_string(cond_, 60) +
                    ", ...): every thread of every workgroup must reach a grid barrier; move it out of the region");
    }
  }

  // A region on a wave-uniform condition holding a Hopper statement stays one branch.
  bool one_branch() const {
    if (varying_part(cond_)) return false;
    for (const Node* n : members_)
      if (opsets::hopper.contains(n->op)) return true;
    return false;
  }

  // Each effect of the region rewritten once; a statement that names an effect of the region as
  // its predecessor (barrier({st})) then follows the guarded one, never the unguarded original.
  UOp effect(const UOp& e) {
    if (auto it = effects_.find(e.node()); it != effects_.end()) return it->second;
    UOp out = rewrite(e);
    effects_.emplace(e.node(), out);
    return out;
  }

 private:
  UOp rewrite(const UOp& e) {
    switch (e.op()) {
      case Op::STORE:
        // stmatrix writes other lanes' values at each lane's row: a masked lane would drop them.
        // On a warp-uniform condition the whole warp branches around it.
        if (is_matrix_write(e)) {
          if (varying_part(cond_)) outside(e, "stmatrix needs every lane of the warp (each lane's row holds the others' values)");
          return branch(e, cond_);
        }
        return UOp::make(Op::STORE, dtypes::void_, {access(e.src(0)), value(e.src(1))});
      case Op::ATOMIC: return value(e);
      case Op::END:
      case Op::GROUP: {
        std::vector<UOp> src = e.src();
        const size_t effects = e.op() == Op::END ? 1 : src.size();
        for (size_t i = 0; i < effects; ++i) src[i] = effect(src[i]);
        return e.with_src(std::move(src));
      }
      case Op::WHEN:  // a synchronization statement under an inner uniform condition
        return branch(e.src(1), e.src(0) & cond_);
      default:
        if (opsets::sync.contains(e.op()) || opsets::hopper.contains(e.op())) return branch(e, cond_);
        throw Error("resolve_when: " + std::string(op_name(e.op())) + " " + expr_string(e, 80) +
                    " inside when(" + expr_string(cond_, 60) + ", ...): not every thread would reach it; move it out of the region");
    }
  }

  // A branch around one synchronization statement, allowed only on a wave-uniform condition.
  UOp branch(const UOp& statement, const UOp& cond) {
    if (auto lane_varying = varying_part(cond))
      throw Error("resolve_when: " + std::string(op_name(statement.op())) + " inside when(" + expr_string(cond, 60) +
                  ", ...): not every thread would reach it; the condition is not wave-uniform (it depends on " + *lane_varying +
                  "); a synchronization statement may depend only on WARP ranges, workgroup ids, loop ranges, constants, kernel variables and loads at "
                  "addresses made of these");
    std::vector<UOp> src = statement.src();
    for (UOp& p : src) {
      if (!p.is_effect() || p.is_valued_effect()) p = value(p);  // a Hopper statement's operand
      else if (members_.count(p.node())) p = effect(p);
    }
    return UOp::make(Op::WHEN, dtypes::void_, {cond, statement.with_src(std::move(src))});
  }

  // What makes `cond` differ between the lanes of a wave, or nullopt where it is wave-uniform.
  // A load of shared or global memory is uniform where its address and validity are: the lanes
  // of a wave read one address in one instruction (a block's expert read from the routing plan,
  // say). Its buffer is not a value (an INDEX's first source), and neither are the effects an
  // AFTER orders its first source after.
  static std::optional<std::string> varying_part(const UOp& cond) {
    std::unordered_map<const Node*, std::optional<std::string>> memo;
    std::function<std::optional<std::string>(const UOp&)> varying = [&](const UOp& n) -> std::optional<std::string> {
      if (auto it = memo.find(n.node()); it != memo.end()) return it->second;
      std::optional<std::string> why = varying_node(n);
      const size_t first = n.op() == Op::INDEX ? 1 : 0, end = n.op() == Op::AFTER ? 1 : n.src().size();
      for (size_t i = first; i < end && !why; ++i) why = varying(n.src(i));
      return memo[n.node()] = why;
    };
    return varying(cond);
  }

  // What makes node `n` itself differ between lanes (its sources aside).
  static std::optional<std::string> varying_node(const UOp& n) {
    switch (n.op()) {
      case Op::RANGE: {
        const AxisType a = range_axis(n);
        if (a == AxisType::LOCAL || a == AxisType::GROUP_REDUCE || a == AxisType::THREAD || a == AxisType::DEVICE)
          return "range " + std::to_string(range_id(n)) + " (" + std::string(axis_name(a)) + ")";
        return std::nullopt;
      }
      case Op::SPECIAL: {
        const auto& name = n.arg_as<std::string>();
        if (name.rfind("gidx", 0) != 0 && name.rfind("widx", 0) != 0) return "the thread index " + name;
        return std::nullopt;
      }
      case Op::ATOMIC: return "memory (" + expr_string(n, 40) + ")";  // each lane's own old value
      case Op::LOAD:
        // A thread's own registers; a cross-lane read hands each lane other lanes' elements.
        if (in_registers(n.src(0))) return "registers (" + expr_string(n, 40) + ")";
        if (is_transposed_read(n)) return "a transposing read (" + expr_string(n, 40) + ")";
        if (is_matrix_read(n)) return "ldmatrix (" + expr_string(n, 40) + ")";
        return std::nullopt;
      case Op::SHUFFLE: case Op::BROADCAST: case Op::VOTE: case Op::REDUCE: case Op::WMMA: case Op::CUSTOMI:
        return std::string(op_name(n.op())) + " " + expr_string(n, 40);
      default: return std::nullopt;
    }
  }

  // The index with its address computed from guarded values and `cond` joined to its validity.
  UOp access(const UOp& index) {
    std::vector<UOp> src = index.src();
    for (UOp& s : src) s = value(s);  // the buffer too: an AFTER may name the region's effects
    if (src.size() > 2) src[2] = src[2] & cond_;
    else src.push_back(cond_);
    return index.with_src(std::move(src));
  }

  // A value with every load (and atomic) below it guarded. Ranges are left alone; so are the
  // effects an AFTER names outside the region, while those of the region are its guarded ones.
  UOp value(const UOp& v) {
    if (auto it = memo_.find(v.node()); it != memo_.end()) return it->second;
    UOp out = v;
    switch (v.op()) {
      case Op::CONST: case Op::DEFINE_VAR: case Op::RANGE: case Op::SPECIAL: case Op::PLACEHOLDER: break;
      case Op::AFTER: {  // the buffer as it is after effects: the region's own are the guarded ones
        std::vector<UOp> src = v.src();
        for (size_t i = 1; i < src.size(); ++i)
          if (members_.count(src[i].node())) src[i] = effect(src[i]);
        out = v.with_src(std::move(src));
        break;
      }
      case Op::LOAD:
      case Op::ATOMIC: {
        // A masked lane would still feed the others of its 16-lane group their values.
        if (is_transposed_read(v)) outside(v, "a transposing LDS read needs every lane of its 16-lane group");
        if (is_matrix_read(v)) outside(v, "ldmatrix needs every lane of the warp (each names a row of the others' values)");
        std::vector<UOp> src = v.src();
        // A register read is harmless where `cond` fails and feeds only guarded effects; masking
        // its index would make it dynamic and move a register array (a wgmma accumulator, say)
        // to memory.
        src[0] = v.op() == Op::LOAD && in_registers(src[0]) ? value(src[0]) : access(src[0]);
        for (size_t i = 1; i < src.size(); ++i) src[i] = value(src[i]);
        out = v.with_src(std::move(src));
        break;
      }
      case Op::SHUFFLE:
      case Op::BROADCAST:
      case Op::VOTE: outside(v, "a lane operation needs every lane of the wave");
      case Op::REDUCE: {
        for (size_t i = 1; i < v.src().size(); ++i)
          if (axis_is_thread(v.src(i).arg_as<RangeArg>().axis)) outside(v, "a reduction across threads needs every thread");
        std::vector<UOp> src = v.src();
        src[0] = value(src[0]);
        out = v.with_src(std::move(src));
        break;
      }
      default: {
        if (v.is_effect()) break;  // a buffer view's sources are buffers and sizes: AFTERs are mapped
        std::vector<UOp> src = v.src();
        for (UOp& s : src) s = value(s);
        out = v.with_src(std::move(src));
      }
    }
    memo_.emplace(v.node(), out);
    return out;
  }

  static bool in_registers(const UOp& index) {
    const UOp root = buffer_root(index.src(0));
    return !root.is_null() && root.arg_as<BufferArg>().space == AddrSpace::REG;
  }

  [[noreturn]] void outside(const UOp& v, const std::string& why) {
    throw Error("resolve_when: " + std::string(op_name(v.op())) + " " + expr_string(v, 80) + " inside when(" + expr_string(cond_, 60) +
                ", ...): " + why + "; compute it outside the region");
  }

  UOp cond_;
  std::unordered_set<const Node*> members_;
  std::unordered_map<const Node*, UOp> memo_;
  std::unordered_map<const Node*, UOp> effects_;
};

}  // namespace

UOp resolve_when(const UOp& kernel) {
  OpenRanges open;
  return transform(kernel, [&](const UOp&, const UOp& u) -> std::optional<UOp> {
    if (u.op() != Op::WHEN) return std::nullopt;
    Guard guard(u, open);
    if (guard.one_branch()) return std::nullopt;  // linearize writes it as one branch
    std::vector<UOp> effects;
    for (size_t i = 1; i < u.src().size(); ++i) effects.push_back(guard.effect(u.src(i)));
    return effects.size() == 1 ? effects[0] : group(effects);
  });
}

}  // namespace weft::lower
