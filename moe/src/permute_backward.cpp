// The backward kernels of dispatch (a gather-sum over each token's k rows, or the opt-in
// scatter-add with float atomics) and of combine (the gradients of the expert rows and of the
// routing weights, in one pass over the rows).
#include "permute_kernels.h"
#include "row_tiling.h"
#include "weft/moe/permute.h"

namespace weft::moe {

using namespace detail;

UOp dispatch_backward_kernel(int64_t d, int64_t top_k, DType input, DType output) {
  check_row("dispatch_backward", d, input);
  check_row("dispatch_backward", d, output);
  check_top_k("dispatch_backward", top_k);
  return weighted_gather_sum({"moe_dispatch_backward_" + input.name() + "_to_" + output.name() + "_k" + std::to_string(top_k) + "_d" +
                                  std::to_string(d),
                              d, top_k, input, output, false});
}

UOp dispatch_backward_atomic_kernel(int64_t d, DType input) {
  check_row("dispatch_backward_atomic", d, input);
  const RowTiling t = row_tiling(d, input);
  const UOp tokens = tokens_variable(d), rows = rows_variable(d);
  const UOp dx = global_buffer({tokens, constant(Wide(d))}, dtypes::float32, 0), dxs = global_buffer({rows, constant(Wide(d))}, input, 1);
  const UOp row_token = global_buffer({rows}, dtypes::int32, 2);
  const UOp row = range(rows, 0, AxisType::GLOBAL);
  const RowAccess a = row_access(t, 1);
  const UOp valid = both(row_token[row].load() >= 0, a.inside);
  const UOp token = token_of(row_token, row, tokens);
  const UOp v = dxs[{row, a.column}].vec(t.vector).load(valid, splat(constant(0.0, input), t.vector));
  std::vector<UOp> adds;
  for (int64_t i = 0; i < t.vector; ++i)
    adds.push_back(atomic(AtomicOp::Add, dx[{token, a.column + i}], (t.vector == 1 ? v : v.gep(i)).cast(dtypes::float32)));
  return sink({.name = "moe_dispatch_backward_atomic_" + input.name() + "_d" + std::to_string(d), .dependent_launch = true},
              {when(valid, {group(adds)}).end({row, a.lane, a.step})});
}

UOp zero_kernel(int64_t d) {
  if (d < 1) throw Error("moe zero_kernel: the row length D must be >= 1, got " + std::to_string(d));
  const RowTiling t = row_tiling(d, dtypes::float32);
  const UOp tokens = tokens_variable(d);
  const UOp out = global_buffer({tokens, constant(Wide(d))}, dtypes::float32, 0);
  const UOp token = range(tokens, 0, AxisType::GLOBAL);
  const RowAccess a = row_access(t, 1);
  const UOp at = out[{token, a.column}].vec(t.vector);
  const UOp zeros = splat(constant(0.0, dtypes::float32), t.vector);
  const UOp store = !a.inside.is_null() ? at.store(zeros, a.inside) : at.store(zeros);
  return sink({.name = "moe_zero_float32_d" + std::to_string(d), .dependent_launch = true}, {store.end({token, a.lane, a.step})});
}

UOp combine_backward_kernel(int64_t d, int64_t top_k, DType dtype) {
  check_row("combine_backward", d, dtype);
  check_top_k("combine_backward", top_k);
  const RowTiling t = row_tiling(d, dtype);
  const UOp tokens = tokens_variable(d), rows = rows_variable(d), D = constant(Wide(d));
  const UOp dys = global_buffer({rows, D}, dtype, 0), dw = global_buffer({tokens * top_k}, dtypes::float32, 1);
  const UOp dy = global_buffer({tokens, D}, dtype, 2), ys = global_buffer({rows, D}, dtype, 3);
  const UOp row_token = global_buffer({rows}, dtypes::int32, 4), row_weight = global_buffer({rows}, dtypes::float32, 5);
  const UOp dest_row = global_buffer({tokens * top_k}, dtypes::int32, 6);
  const UOp row = range(rows, 0, AxisType::GLOBAL);
  const RowAccess a = row_access(t, 1);
  const UOp routed = row_token[row].load() >= 0;
  const UOp token = token_of(row_token, row, tokens);
  const UOp zeros = splat(constant(0.0, dtype), t.vector);
  const UOp g = dy[{token, a.column}].vec(t.vector).load(both(routed, a.inside), zeros);
  const UOp yi = ys[{row, a.column}].vec(t.vector);
  const UOp y = !a.inside.is_null() ? yi.load(a.inside, zeros) : yi.load();
  const UOp w = row_weight[row].load();
  std::vector<UOp> grads;
  UOp dot;
  for (int64_t i = 0; i < t.vector; ++i) {
    const UOp gi = (t.vector == 1 ? g : g.gep(i)).cast(dtypes::float32), y_i = (t.vector == 1 ? y : y.gep(i)).cast(dtypes::float32);
    grads.push_back((w * gi).cast(dtype));
    dot = i ? dot + gi * y_i : gi * y_i;
  }
  const UOp at = dys[{row, a.column}].vec(t.vector);
  const UOp value = t.vector == 1 ? grads[0] : vectorize(grads);
  const UOp row_store = !a.inside.is_null() ? at.store(value, a.inside) : at.store(value);
  // dW at the choice of this row: the j with dest_row[token*k + j] == row (one of them for a
  // routed row). The dot product is reduced in a fixed order: per lane, then across the lanes.
  const UOp total = dot.reduce(Op::ADD, {a.lane, a.step});
  UOp j = constant(Wide(0));
  for (int64_t i = 1; i < top_k; ++i)
    j = j + where(as_index(dest_row[token * top_k + i].load(routed, constant(Wide(-1), dtypes::int32))).eq(row), constant(Wide(i)), constant(Wide(0)));
  // Written where the plan agrees that choice's row is this one (for k = 1 the only check).
  const UOp agrees = as_index(dest_row[token * top_k + j].load(routed, constant(Wide(-1), dtypes::int32))).eq(row);
  const UOp weight_store = dw[token * top_k + j].store(total, routed & agrees & a.lane.eq(constant(Wide(0))));
  return sink({.name = "moe_combine_backward_" + dtype.name() + "_k" + std::to_string(top_k) + "_d" + std::to_string(d), .dependent_launch = true},
              {group({row_store.end({a.lane, a.step}), weight_store.end({a.lane})}).end({row})});
}

}  // namespace weft::moe
