// Pass 5: REDUCE to a register accumulator. REDUCE(x, ranges) becomes
//   acc[0] = identity                      inside the ranges x lies in besides the reduced ones
//   acc[0] = acc[0] <op> x, END(ranges)    the reduction loop
//   ... acc[0] ...                         read after it
// with acc a one-element REG buffer. The initializing store names the outer ranges (AFTER on
// them) so that it runs once per outer iteration, not once per kernel.
#include <cmath>
#include <limits>

#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

UOp identity(Op op, DType dt) {
  switch (op) {
    case Op::ADD: return dt.is_float() ? constant(0.0, dt) : constant(Wide(0), dt);
    case Op::MUL: return dt.is_float() ? constant(1.0, dt) : constant(Wide(1), dt);
    case Op::MAX: return dt.is_float() ? constant(-std::numeric_limits<double>::infinity(), dt) : constant(dt.min_value(), dt);
    case Op::MIN: return dt.is_float() ? constant(std::numeric_limits<double>::infinity(), dt) : constant(dt.max_value(), dt);
    default: throw Error("reduce_to_accumulators: no identity for " + std::string(op_name(op)));
  }
}

}  // namespace

UOp reduce_to_accumulators(const UOp& kernel) {
  int64_t next_slot = fresh_buffer_slot(kernel);
  OpenRanges open;
  return transform(kernel, [&](const UOp&, const UOp& u) -> std::optional<UOp> {
    if (u.op() != Op::REDUCE) return std::nullopt;
    const UOp& x = u.src(0);
    if (x.dtype().is_vector()) throw Error("reduce_to_accumulators: REDUCE of a vector " + expr_string(x));
    const Op op = u.arg_as<Op>();
    std::vector<UOp> reduced(u.src().begin() + 1, u.src().end());
    std::vector<UOp> outer;
    for (const UOp& r : open.of(x))
      if (std::none_of(reduced.begin(), reduced.end(), [&](const UOp& q) { return q.same(r); })) outer.push_back(r);
    const UOp acc = placeholder({1}, x.dtype(), next_slot++, AddrSpace::REG);
    const UOp zero = constant(Wide(0));
    const UOp init = (outer.empty() ? acc : acc.after(outer))[zero].store(identity(op, x.dtype().element()));
    std::vector<UOp> inside{init};
    inside.insert(inside.end(), reduced.begin(), reduced.end());
    const UOp partial = acc.after(inside)[zero].load();
    const UOp update = acc[zero].store(partial.alu(op, {x})).end(reduced);
    return acc.after({update})[zero].load();
  });
}

}  // namespace weft::lower
