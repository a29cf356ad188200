#include "row_tiling.h"

#include <climits>

namespace weft::moe::detail {

namespace {
// Rows longer than this many steps per lane loop instead of unrolling (the code stays small).
constexpr int64_t kMaxUnrolledSteps = 16;
}  // namespace

RowTiling row_tiling(int64_t d, DType dtype) {
  RowTiling t;
  t.d = d;
  t.vector = 16 / dtype.itemsize();
  while (d % t.vector) t.vector /= 2;
  const int64_t n = t.accesses();
  // The widest workgroup (of whole 64-lane waves, at most 256 lanes) that divides the row's
  // accesses evenly, else the narrowest that covers them in as few steps as 256 lanes would.
  t.threads = 0;
  for (int64_t w : {256, 128, 64})
    if (n % w == 0) {
      t.threads = w;
      break;
    }
  if (!t.threads) {
    const int64_t steps = (n + 255) / 256;
    t.threads = ((n + steps - 1) / steps + 63) / 64 * 64;
  }
  t.steps = (n + t.threads - 1) / t.threads;
  return t;
}

RowAccess row_access(const RowTiling& t, int64_t first_range_id) {
  RowAccess a;
  a.lane = range(t.threads, first_range_id, AxisType::LOCAL);
  a.step = range(t.steps, first_range_id + 1, t.steps <= kMaxUnrolledSteps ? AxisType::UNROLL : AxisType::LOOP);
  a.access = a.step * t.threads + a.lane;
  a.column = a.access * t.vector;
  if (t.ragged()) a.inside = a.access < t.accesses();
  return a;
}

UOp splat(const UOp& value, int64_t lanes) {
  if (lanes == 1) return value;
  return vectorize(std::vector<UOp>(static_cast<size_t>(lanes), value));
}

UOp both(const UOp& a, const UOp& b) {
  if (!a.node()) return b;  // (!a would build an IR negation)
  if (!b.node()) return a;
  return a & b;
}

UOp tokens_variable(int64_t d) { return variable("T", 1, INT32_MAX / d).cast(dtypes::index); }
UOp rows_variable(int64_t d) { return variable("R", 1, INT32_MAX / d).cast(dtypes::index); }

UOp global_buffer(std::vector<UOp> shape, DType dtype, int64_t slot) { return placeholder(std::span<const UOp>(shape), dtype, slot); }

}  // namespace weft::moe::detail
