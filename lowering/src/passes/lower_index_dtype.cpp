// Pass 8: index dtype lowering. `index` is a 64-bit integer until here; each index node becomes
// int32 when its own value range and those of all its index sources fit in int32 (then int32
// arithmetic computes the same values), and int64 otherwise, with sign extensions where an
// int32 value feeds an int64 one. A source whose range fits but which was computed in int64
// (from a wider source: `min(base + i, n - 1)`, `wide % 3`) is narrowed by a CAST where it feeds
// an int32 operation, so one wide value does not make everything computed from it wide.
#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

bool fits_int32(const UOp& u) { return u.vmin() >= dtypes::int32.min_value() && u.vmax() <= dtypes::int32.max_value(); }

// Converts an index value to `to`: a sign extension, or a truncation of an int64 value whose
// range fits int32 (exact).
UOp convert(const UOp& x, DType to) { return x.dtype() == to ? x : UOp::make(Op::CAST, to, {x}); }

// Operands of one comparison share a dtype: int64 where any operand's range needs it.
DType common_int(const UOp& comparison) {
  for (const UOp& x : comparison.src())
    if (!fits_int32(x)) return dtypes::int64;
  return dtypes::int32;
}

}  // namespace

UOp lower_index_dtype(const UOp& kernel) {
  return transform(kernel, [](const UOp& old, const UOp& u) -> std::optional<UOp> {
    std::vector<UOp> src = u.src();
    std::vector<size_t> index_srcs;
    for (size_t i = 0; i < src.size(); ++i)
      if (old.src(i).dtype() == dtypes::index) index_srcs.push_back(i);
    if (old.dtype() == dtypes::index) {
      if (old.op() == Op::CAST && (src[0].dtype() == dtypes::int32 || src[0].dtype() == dtypes::int64) &&
          (src[0].dtype() == dtypes::int64 || fits_int32(old)))
        return src[0];  // an int32 or int64 variable used as an index
      // An ALU operation reads its sources' values, which a narrowing keeps; other index nodes
      // (a RANGE's bound) keep the dtype their sources were computed in.
      const bool alu = opsets::alu.contains(old.op()) && old.op() != Op::CAST;
      bool wide = !fits_int32(old);
      for (size_t i : index_srcs) wide |= alu ? !fits_int32(old.src(i)) : src[i].dtype() == dtypes::int64;
      const DType to = wide ? dtypes::int64 : dtypes::int32;
      if (alu)
        for (size_t i : index_srcs) src[i] = convert(src[i], to);
      return UOp::make(old.op(), to, std::move(src), old.arg());
    }
    if (opsets::comparison.contains(old.op()) && !index_srcs.empty()) {
      const DType to = common_int(old);
      for (UOp& s : src) s = convert(s, to);
      return UOp::make(old.op(), old.dtype(), std::move(src), old.arg());
    }
    return std::nullopt;
  });
}

}  // namespace weft::lower
