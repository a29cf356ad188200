// Pass 4: the expander. An UPCAST or UNROLL range has a constant size and no loop: what it ends
// is repeated once per value (the copies grouped in order), a CONTRACT over it gathers the
// copies of its value into the lanes of a vector, and a REDUCE over it is an unrolled chain.
#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"
#include "weft/lowering/rewrite.h"

namespace weft::lower {
namespace {

bool is_unrolled(const UOp& r) {
  return r.op() == Op::RANGE && (range_axis(r) == AxisType::UPCAST || range_axis(r) == AxisType::UNROLL);
}

// Copies of `x` for every assignment of `ranges`, the first range varying slowest.
std::vector<UOp> copies(const UOp& x, const std::vector<UOp>& ranges) {
  std::vector<UOp> out{x};
  for (const UOp& r : ranges) {
    if (!r.src(0).is_const())
      throw Error("expand_ranges: " + std::string(axis_name(range_axis(r))) + " range " + std::to_string(range_id(r)) +
                  " has size " + expr_string(r.src(0)) + "; unrolled ranges need a constant size");
    const auto n = static_cast<int64_t>(r.src(0).const_int());
    if (n > 256) throw Error("expand_ranges: range " + std::to_string(range_id(r)) + " unrolls " + std::to_string(n) + " times; at most 256");
    std::vector<UOp> next;
    for (const UOp& c : out)
      for (int64_t v = 0; v < n; ++v) next.push_back(substitute(c, {{r, constant(Wide(v))}}));
    out = std::move(next);
  }
  return out;
}

UOp chain(Op op, const std::vector<UOp>& xs) {
  UOp acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) acc = acc.alu(op, {xs[i]});
  return acc;
}

// Splits the range sources of `u` (from position 1) into unrolled ones and the rest.
std::pair<std::vector<UOp>, std::vector<UOp>> partition(const UOp& u) {
  std::vector<UOp> unrolled, rest;
  for (size_t i = 1; i < u.src().size(); ++i) (is_unrolled(u.src(i)) ? unrolled : rest).push_back(u.src(i));
  sort_ranges(unrolled);
  return {unrolled, rest};
}

std::optional<UOp> expand(const UOp& u) {
  if (u.op() != Op::END && u.op() != Op::CONTRACT && u.op() != Op::REDUCE && u.op() != Op::AFTER) return std::nullopt;
  auto [unrolled, rest] = partition(u);
  if (unrolled.empty()) return std::nullopt;
  if (u.op() == Op::AFTER) {  // "the buffer within these iterations": no loop to be inside of
    std::vector<UOp> src{u.src(0)};
    src.insert(src.end(), rest.begin(), rest.end());
    return src.size() == 1 ? src[0] : u.with_src(std::move(src));
  }
  std::vector<UOp> xs = copies(u.src(0), unrolled);
  UOp body;
  if (u.op() == Op::CONTRACT) {
    if (!rest.empty()) throw Error("expand_ranges: CONTRACT over range " + std::to_string(range_id(rest[0])) + ", which is not UPCAST");
    if (u.src(0).dtype().is_vector()) throw Error("expand_ranges: CONTRACT of a vector value " + expr_string(u.src(0)));
    return vectorize(xs);
  }
  if (u.op() == Op::REDUCE) {
    body = chain(u.arg_as<Op>(), xs);
    if (rest.empty()) return body;
    return body.reduce(u.arg_as<Op>(), rest);
  }
  body = xs.size() == 1 ? xs[0] : group(xs);
  if (rest.empty()) return body;
  return body.end(rest);
}

}  // namespace

UOp expand_ranges(const UOp& kernel) {
  UOp out = transform(kernel, [](const UOp&, const UOp& u) { return expand(u); });
  for (const UOp& u : toposort(out))
    if (is_unrolled(u))
      throw Error("expand_ranges: " + std::string(axis_name(range_axis(u))) + " range " + std::to_string(range_id(u)) +
                  " is used outside the END, CONTRACT or REDUCE that should unroll it");
  return out;
}

}  // namespace weft::lower
