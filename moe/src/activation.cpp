// The SiLU * up activation of the MoE layer (activation.h).
#include "weft/moe/activation.h"

#include "launch_util.h"
#include "row_tiling.h"

namespace weft::moe {

using namespace detail;

namespace {
constexpr double kLog2e = 1.4426950408889634;
UOp f32(double v) { return constant(v, dtypes::float32); }
}  // namespace

UOp silu_mul_kernel(int64_t f) {
  if (f < 1) throw Error("moe silu_mul: the row length F must be >= 1, got " + std::to_string(f));
  const DType bf16 = dtypes::bfloat16;
  const RowTiling t = row_tiling(f, bf16);
  const UOp rows = rows_variable(2 * f);  // H's rows are the longest: 2F elements
  const UOp a = global_buffer({rows, constant(Wide(f))}, bf16, 0), h = global_buffer({rows, constant(Wide(2 * f))}, bf16, 1);
  const UOp row_token = global_buffer({rows}, dtypes::int32, 2);
  const UOp row = range(rows, 0, AxisType::GLOBAL);
  const RowAccess at = row_access(t, 1);
  // A padding row reads nothing and computes silu(0) * 0 = 0; the tail past F reads nothing.
  const UOp valid = both(row_token[row].load() >= 0, at.inside);
  const UOp zeros = splat(constant(0.0, bf16), t.vector);
  const UOp gate = h[{row, at.column}].vec(t.vector).load(valid, zeros);
  const UOp up = h[{row, at.column + f}].vec(t.vector).load(valid, zeros);
  std::vector<UOp> out;
  for (int64_t i = 0; i < t.vector; ++i) {
    const UOp g = (t.vector == 1 ? gate : gate.gep(i)).cast(dtypes::float32);
    const UOp u = (t.vector == 1 ? up : up.gep(i)).cast(dtypes::float32);
    out.push_back((g * recip(f32(1.0) + exp2(-g * kLog2e)) * u).cast(bf16));
  }
  const UOp dst = a[{row, at.column}].vec(t.vector);
  const UOp value = t.vector == 1 ? out[0] : vectorize(out);
  const UOp store = !at.inside.is_null() ? dst.store(value, at.inside) : dst.store(value);
  return sink({.name = "moe_silu_mul_f" + std::to_string(f), .dependent_launch = true}, {store.end({row, at.lane, at.step})});
}

SiluMul::SiluMul(rt::Device& device, const MoeShape& shape, int64_t f, rt::CompileCache* cache) : shape_(shape), f_(f) {
  shape_.validate();
  kernel_ = rt::CompiledKernel::compile(device, silu_mul_kernel(f), cache);
}

void SiluMul::launch(rt::Device& device, const rt::DeviceArray& h, const rt::DeviceArray& row_token, const rt::DeviceArray& a) const {
  expect_array("silu_mul", h, "H [max_rows, 2F]", dtypes::bfloat16, shape_.max_rows() * 2 * f_);
  expect_array("silu_mul", row_token, "row_token [max_rows]", dtypes::int32, shape_.max_rows());
  expect_array("silu_mul", a, "A [max_rows, F]", dtypes::bfloat16, shape_.max_rows() * f_);
  detail::launch(device, kernel_, {a, h, row_token}, shape_);
}

}  // namespace weft::moe
