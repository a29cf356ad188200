// Pass 9: implicit barriers for shared (LOCAL) memory.
// - Read after write: a LOCAL buffer read AFTER effects that store to LOCAL memory is read after
//   a barrier that follows those stores (a BARRIER or GRID_BARRIER among them is one
//   already). Buffers read after the same stores share one barrier
//   (the BARRIER node is hash-consed over its sorted dependencies).
// - Write after read: a loop whose body both stores to and loads from one LOCAL buffer ends its
//   body with a barrier, so no thread overwrites the buffer for the next iteration while others
//   still read it. The innermost such loop gets it. Atomics count as both, except against each
//   other: a loop whose only accesses to a buffer are atomics (counting) needs no barrier. Exception: in a kernel with a conditional
//   barrier (when(wave-uniform cond, {barrier()}): waves that execute different barrier sequences,
//   HipKittens' ping-pong stagger), a loop whose body holds a barrier the author wrote is left
//   alone. The author owns that schedule, and an extra barrier in every wave would shift how the
//   waves' barriers pair.
#include <algorithm>

#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

bool is_local(const UOp& buffer) {
  UOp root = buffer_root(buffer);
  return !root.is_null() && root.arg_as<BufferArg>().space == AddrSpace::LOCAL;
}

// A STORE, an ATOMIC or an ASYNC_COPY (global to LDS) into a LOCAL buffer.
bool writes_local(const UOp& n) {
  return (n.op() == Op::STORE || n.op() == Op::ATOMIC || n.op() == Op::ASYNC_COPY) && is_local(n.src(0).src(0));
}

bool stores_local(const UOp& effect) {
  for (const UOp& n : toposort(effect))
    if (writes_local(n)) return true;
  return false;
}

UOp barrier_after(std::vector<UOp> effects) {
  std::sort(effects.begin(), effects.end(), [](const UOp& a, const UOp& b) { return a.hash() < b.hash(); });
  return UOp::make(Op::BARRIER, dtypes::void_, std::move(effects));
}

std::optional<UOp> read_after_write(const UOp& after) {
  if (!is_local(after.src(0))) return std::nullopt;
  std::vector<UOp> effects, others{after.src(0)};
  for (size_t i = 1; i < after.src().size(); ++i) {
    const UOp& d = after.src(i);
    // (A grid barrier ends with a fenced workgroup barrier: it orders the stores before it.)
    (d.is_effect() && d.op() != Op::BARRIER && d.op() != Op::GRID_BARRIER && stores_local(d) ? effects : others).push_back(d);
  }
  if (effects.empty()) return std::nullopt;
  others.push_back(barrier_after(std::move(effects)));
  return after.with_src(std::move(others));
}

// Whether the END's body, inside range `r`, writes a LOCAL buffer that another of its accesses
// reads or writes so that the order between iterations matters: a plain store against any access,
// or an atomic against a plain load. Atomics against atomics need no order (a loop of shared-
// memory counting, each iteration's adds commuting with the next's).
bool war_hazard(const UOp& body, const UOp& r, OpenRanges& open) {
  std::vector<UOp> stored, atomics, loaded;
  auto inside = [&](const UOp& n) {
    const auto& rs = open.of(n);
    return std::any_of(rs.begin(), rs.end(), [&](const UOp& x) { return x.same(r); });
  };
  for (const UOp& n : toposort(body)) {
    const bool atomic = n.op() == Op::ATOMIC && is_local(n.src(0).src(0));
    const bool store = !atomic && writes_local(n);
    const bool load = n.op() == Op::LOAD && is_local(n.src(0).src(0));
    if (!(atomic || store || load) || !inside(n)) continue;
    (atomic ? atomics : store ? stored : loaded).push_back(buffer_root(n.src(0).src(0)));
  }
  auto meets = [](const std::vector<UOp>& a, const std::vector<UOp>& b) {
    return std::any_of(a.begin(), a.end(), [&](const UOp& x) { return std::any_of(b.begin(), b.end(), [&](const UOp& y) { return x.same(y); }); });
  };
  return meets(stored, loaded) || meets(stored, atomics) || meets(atomics, loaded);
}

// Whether the statements of a body (not the effects it names through AFTER, which lie before
// the loop) hold a barrier built with barrier().
bool has_explicit_barrier(const UOp& body) {
  std::vector<UOp> todo{body};
  while (!todo.empty()) {
    const UOp e = todo.back();
    todo.pop_back();
    if (e.op() == Op::BARRIER && std::holds_alternative<EffectArg>(e.arg()) && e.arg_as<EffectArg>().site != 0) return true;
    if (e.op() == Op::GROUP || e.op() == Op::END || e.op() == Op::WHEN)
      for (const UOp& s : e.src())
        if (s.is_effect()) todo.push_back(s);
  }
  return false;
}

bool has_conditional_barrier(const UOp& kernel) {
  for (const UOp& n : toposort(kernel))
    if (n.op() == Op::WHEN && n.src().size() == 2 && n.src(1).op() == Op::BARRIER) return true;
  return false;
}

std::optional<UOp> write_after_read(const UOp& old, const UOp& end, OpenRanges& open, bool staggered) {
  if (staggered && has_explicit_barrier(old.src(0))) return std::nullopt;
  std::vector<UOp> ranges(end.src().begin() + 1, end.src().end());
  std::vector<UOp> old_ranges(old.src().begin() + 1, old.src().end());
  std::optional<size_t> at;
  for (size_t i = 0; i < old_ranges.size(); ++i)
    if (war_hazard(old.src(0), old_ranges[i], open) && (!at || range_id(old_ranges[i]) > range_id(old_ranges[*at]))) at = i;
  if (!at) return std::nullopt;
  const int64_t split = range_id(old_ranges[*at]);
  std::vector<UOp> outer, inner;
  for (const UOp& r : ranges) (range_id(r) <= split ? outer : inner).push_back(r);
  UOp body = inner.empty() ? end.src(0) : end.src(0).end(inner);
  // The body, then the barrier: listed side by side, so that the body's effects stay listed in the
  // loop (the linearizer writes an effect the body only reaches, through the barrier, before the
  // loop when it does not use the range: an accumulator zeroed in every iteration would be zeroed once).
  return group({body, UOp::make(Op::BARRIER, dtypes::void_, {body})}).end(outer);
}

}  // namespace

UOp insert_barriers(const UOp& kernel) {
  OpenRanges open;
  const bool staggered = has_conditional_barrier(kernel);
  return transform(kernel, [&](const UOp& old, const UOp& u) -> std::optional<UOp> {
    if (u.op() == Op::AFTER) return read_after_write(u);
    if (u.op() == Op::END) return write_after_read(old, u, open, staggered);
    return std::nullopt;
  });
}

}  // namespace weft::lower
