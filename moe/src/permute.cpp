// The forward kernels: dispatch (a gather of token rows into expert order, optionally quantized
// to fp8 on the way) and combine (a weighted gather-sum back to token order).
#include "weft/moe/permute.h"

#include "permute_kernels.h"
#include "row_tiling.h"

namespace weft::moe {

using namespace detail;

namespace detail {

void check_row(const char* kernel, int64_t d, DType dtype) {
  if (d < 1) throw Error(std::string("moe ") + kernel + ": the row length D must be >= 1, got " + std::to_string(d));
  if (dtype != dtypes::bfloat16 && dtype != dtypes::float32)
    throw Error(std::string("moe ") + kernel + ": rows are bfloat16 or float32, not " + dtype.name());
}

void check_top_k(const char* kernel, int64_t top_k) {
  if (top_k < 1 || top_k > 64) throw Error(std::string("moe ") + kernel + ": top_k must lie in [1, 64], got " + std::to_string(top_k));
}

UOp token_of(const UOp& row_token, const UOp& row, const UOp& tokens) {
  // Clamped into [0, T): a padding row's -1 reads token 0 under a false mask, and a corrupt plan
  // cannot make the gather read outside X (the clamp also proves the row offsets fit int32).
  const UOp tok = as_index(row_token[row].load());
  return max(min(tok, tokens - 1), constant(Wide(0)));
}

UOp weighted_gather_sum(const WeightedGather& g) {
  const RowTiling t = row_tiling(g.d, g.input);
  const UOp tokens = tokens_variable(g.d), rows = rows_variable(g.d);
  const UOp out = global_buffer({tokens, constant(Wide(g.d))}, g.output, 0);
  const UOp src = global_buffer({rows, constant(Wide(g.d))}, g.input, 1);
  const UOp dest_row = global_buffer({tokens * g.top_k}, dtypes::int32, 2);
  const UOp weights = g.weighted ? global_buffer({tokens * g.top_k}, dtypes::float32, 3) : UOp();
  const UOp token = range(tokens, 0, AxisType::GLOBAL);
  const RowAccess a = row_access(t, 1);
  // In order of j, in fp32: the same sum, bit for bit, on every run.
  std::vector<UOp> acc;
  for (int64_t j = 0; j < g.top_k; ++j) {
    const UOp choice = token * g.top_k + j;
    const UOp row = max(min(as_index(dest_row[choice].load()), rows - 1), constant(Wide(0)));
    const UOp at = src[{row, a.column}].vec(t.vector);
    const UOp v = !a.inside.is_null() ? at.load(a.inside, splat(constant(0.0, g.input), t.vector)) : at.load();
    const UOp w = g.weighted ? weights[choice].load() : UOp();
    for (int64_t i = 0; i < t.vector; ++i) {
      UOp x = (t.vector == 1 ? v : v.gep(i)).cast(dtypes::float32);
      if (!w.is_null()) x = w * x;
      if (j == 0) acc.push_back(x);
      else acc[static_cast<size_t>(i)] = acc[static_cast<size_t>(i)] + x;
    }
  }
  for (UOp& x : acc) x = x.cast(g.output);
  const UOp at = out[{token, a.column}].vec(t.vector);
  const UOp value = t.vector == 1 ? acc[0] : vectorize(acc);
  const UOp store = !a.inside.is_null() ? at.store(value, a.inside) : at.store(value);
  return sink({.name = g.name, .dependent_launch = true}, {store.end({token, a.lane, a.step})});
}

}  // namespace detail

UOp dispatch_kernel(int64_t d, DType dtype) {
  check_row("dispatch", d, dtype);
  const RowTiling t = row_tiling(d, dtype);
  const UOp tokens = tokens_variable(d), rows = rows_variable(d);
  const UOp xs = global_buffer({rows, constant(Wide(d))}, dtype, 0), x = global_buffer({tokens, constant(Wide(d))}, dtype, 1);
  const UOp row_token = global_buffer({rows}, dtypes::int32, 2);
  const UOp row = range(rows, 0, AxisType::GLOBAL);
  const RowAccess a = row_access(t, 1);
  // Padding rows (row_token -1) read zeros; the tail past D reads nothing.
  const UOp valid = both(row_token[row].load() >= 0, a.inside);
  const UOp v = x[{token_of(row_token, row, tokens), a.column}].vec(t.vector).load(valid, splat(constant(0.0, dtype), t.vector));
  const UOp at = xs[{row, a.column}].vec(t.vector);
  const UOp store = !a.inside.is_null() ? at.store(v, a.inside) : at.store(v);
  return sink({.name = "moe_dispatch_" + dtype.name() + "_d" + std::to_string(d), .dependent_launch = true}, {store.end({row, a.lane, a.step})});
}

UOp dispatch_fp8_kernel(int64_t d, DType dtype, DType fp8) {
  check_row("dispatch_fp8", d, dtype);
  if (fp8 != dtypes::fp8e4m3 && fp8 != dtypes::fp8e4m3fnuz)
    throw Error("moe dispatch_fp8: quantizes to " + dtypes::fp8e4m3.name() + " or " + dtypes::fp8e4m3fnuz.name() + ", not " + fp8.name());
  const double fp8_max = float_format_info(*fp8.float_format()).max_finite;
  const RowTiling t = row_tiling(d, dtype);
  const UOp tokens = tokens_variable(d), rows = rows_variable(d);
  const UOp xs8 = global_buffer({rows, constant(Wide(d))}, fp8, 0), scales = global_buffer({rows}, dtypes::float32, 1);
  const UOp x = global_buffer({tokens, constant(Wide(d))}, dtype, 2), row_token = global_buffer({rows}, dtypes::int32, 3);
  const UOp row = range(rows, 0, AxisType::GLOBAL);
  const RowAccess a = row_access(t, 1);
  const UOp valid = both(row_token[row].load() >= 0, a.inside);
  const UOp v = x[{token_of(row_token, row, tokens), a.column}].vec(t.vector).load(valid, splat(constant(0.0, dtype), t.vector));
  std::vector<UOp> lanes;
  UOp lane_max;
  for (int64_t i = 0; i < t.vector; ++i) {
    lanes.push_back((t.vector == 1 ? v : v.gep(i)).cast(dtypes::float32));
    const UOp m = max(lanes.back(), -lanes.back());
    lane_max = i ? max(lane_max, m) : m;
  }
  // The row's amax over every lane and step (a workgroup reduction); a zero row keeps scale 0.
  const UOp amax = lane_max.reduce(Op::MAX, {a.lane, a.step});
  const UOp zero = constant(0.0, dtypes::float32);
  const UOp scale = amax / fp8_max;
  const UOp inv = where(amax > zero, constant(fp8_max, dtypes::float32) / amax, zero);
  std::vector<UOp> q;
  for (const UOp& l : lanes) q.push_back((l * inv).cast(fp8));
  const UOp at = xs8[{row, a.column}].vec(t.vector);
  const UOp value = t.vector == 1 ? q[0] : vectorize(q);
  const UOp store = !a.inside.is_null() ? at.store(value, a.inside) : at.store(value);
  const UOp scale_store = scales[row].store(scale, a.lane.eq(constant(Wide(0))));
  return sink({.name = "moe_dispatch_" + fp8.name() + "_" + dtype.name() + "_d" + std::to_string(d), .dependent_launch = true},
              {group({store.end({a.lane, a.step}), scale_store.end({a.lane})}).end({row})});
}

UOp combine_kernel(int64_t d, int64_t top_k, DType input, DType output) {
  check_row("combine", d, input);
  check_row("combine", d, output);
  check_top_k("combine", top_k);
  return weighted_gather_sum({"moe_combine_" + input.name() + "_to_" + output.name() + "_k" + std::to_string(top_k) + "_d" + std::to_string(d),
                              d, top_k, input, output, true});
}

}  // namespace weft::moe
