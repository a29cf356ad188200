// Launches of the permute kernels on device buffers: every buffer checked against the shape
// first, so that a mismatch names the buffer (not a kernel slot), then one compile (cached) and
// one launch per kernel.
#include "launch_util.h"
#include "weft/moe/permute.h"

namespace weft::moe {

using detail::expect_array;
using detail::launch;

namespace {

DType row_dtype(const char* op, const rt::DeviceArray& a, const char* name) {
  if (a.dtype != dtypes::bfloat16 && a.dtype != dtypes::float32)
    throw Error(std::string("moe ") + op + ": " + name + " holds bfloat16 or float32 rows, not " + a.dtype.name());
  return a.dtype;
}

void check_d(const char* op, int64_t d) {
  if (d < 1) throw Error(std::string("moe ") + op + ": the row length D must be >= 1, got " + std::to_string(d));
}

}  // namespace

Dispatch::Dispatch(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, rt::CompileCache* cache)
    : shape_(shape), d_(d), dtype_(dtype) {
  shape_.validate();
  check_d("dispatch", d);
  kernel_ = rt::CompiledKernel::compile(device, dispatch_kernel(d, dtype), cache);  // (which checks the dtype)
}

void Dispatch::launch(rt::Device& device, const rt::DeviceArray& x, const rt::DeviceArray& row_token, const rt::DeviceArray& xs) const {
  expect_array("dispatch", x, "X [T, D]", dtype_, shape_.tokens * d_);
  expect_array("dispatch", row_token, "row_token [max_rows]", dtypes::int32, shape_.max_rows());
  expect_array("dispatch", xs, "Xs [max_rows, D]", dtype_, shape_.max_rows() * d_);
  detail::launch(device, kernel_, {xs, x, row_token}, shape_);
}

void launch_dispatch(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& x, const rt::DeviceArray& row_token,
                     const rt::DeviceArray& xs, rt::CompileCache* cache) {
  shape.validate();
  check_d("dispatch", d);
  Dispatch(device, shape, d, row_dtype("dispatch", x, "X"), cache).launch(device, x, row_token, xs);
}

void launch_dispatch_fp8(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& x, const rt::DeviceArray& row_token,
                         const rt::DeviceArray& xs8, const rt::DeviceArray& scales, rt::CompileCache* cache) {
  shape.validate();
  check_d("dispatch_fp8", d);
  const DType dt = row_dtype("dispatch_fp8", x, "X");
  expect_array("dispatch_fp8", x, "X [T, D]", dt, shape.tokens * d);
  expect_array("dispatch_fp8", row_token, "row_token [max_rows]", dtypes::int32, shape.max_rows());
  if (xs8.dtype != dtypes::fp8e4m3 && xs8.dtype != dtypes::fp8e4m3fnuz)
    throw Error("moe dispatch_fp8: Xs8 holds " + dtypes::fp8e4m3.name() + " or " + dtypes::fp8e4m3fnuz.name() + " codes, not " + xs8.dtype.name());
  expect_array("dispatch_fp8", xs8, "Xs8 [max_rows, D]", xs8.dtype, shape.max_rows() * d);
  expect_array("dispatch_fp8", scales, "scales [max_rows]", dtypes::float32, shape.max_rows());
  launch(device, dispatch_fp8_kernel(d, dt, xs8.dtype), {xs8, scales, x, row_token}, shape, cache);
}

Combine::Combine(rt::Device& device, const MoeShape& shape, int64_t d, DType input, DType output, rt::CompileCache* cache)
    : shape_(shape), d_(d), input_(input), output_(output) {
  shape_.validate();
  check_d("combine", d);
  kernel_ = rt::CompiledKernel::compile(device, combine_kernel(d, shape.top_k, input, output), cache);
}

void Combine::launch(rt::Device& device, const rt::DeviceArray& ys, const rt::DeviceArray& dest_row, const rt::DeviceArray& weights,
                     const rt::DeviceArray& y) const {
  expect_array("combine", ys, "Ys [max_rows, D]", input_, shape_.max_rows() * d_);
  expect_array("combine", dest_row, "dest_row [T*k]", dtypes::int32, shape_.choices());
  expect_array("combine", weights, "weights [T*k]", dtypes::float32, shape_.choices());
  expect_array("combine", y, "Y [T, D]", output_, shape_.tokens * d_);
  detail::launch(device, kernel_, {y, ys, dest_row, weights}, shape_);
}

void launch_combine(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& ys, const rt::DeviceArray& dest_row,
                    const rt::DeviceArray& weights, const rt::DeviceArray& y, rt::CompileCache* cache) {
  shape.validate();
  check_d("combine", d);
  const DType in = row_dtype("combine", ys, "Ys"), out = row_dtype("combine", y, "Y");
  Combine(device, shape, d, in, out, cache).launch(device, ys, dest_row, weights, y);
}

void launch_dispatch_backward(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& dxs,
                              const rt::DeviceArray& dest_row, const rt::DeviceArray& row_token, const rt::DeviceArray& dx, bool atomic,
                              rt::CompileCache* cache) {
  shape.validate();
  check_d("dispatch_backward", d);
  const DType in = row_dtype("dispatch_backward", dxs, "dXs"), out = row_dtype("dispatch_backward", dx, "dX");
  expect_array("dispatch_backward", dxs, "dXs [max_rows, D]", in, shape.max_rows() * d);
  expect_array("dispatch_backward", dx, "dX [T, D]", out, shape.tokens * d);
  if (!atomic) {
    expect_array("dispatch_backward", dest_row, "dest_row [T*k]", dtypes::int32, shape.choices());
    launch(device, dispatch_backward_kernel(d, shape.top_k, in, out), {dx, dxs, dest_row}, shape, cache);
    return;
  }
  if (out != dtypes::float32) throw Error("moe dispatch_backward: the atomic scatter-add sums into a float32 dX, not " + out.name());
  expect_array("dispatch_backward", row_token, "row_token [max_rows]", dtypes::int32, shape.max_rows());
  launch(device, zero_kernel(d), {dx}, shape, cache);
  launch(device, dispatch_backward_atomic_kernel(d, in), {dx, dxs, row_token}, shape, cache);
}

void launch_combine_backward(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& dy, const rt::DeviceArray& ys,
                             const rt::DeviceArray& row_token, const rt::DeviceArray& row_weight, const rt::DeviceArray& dest_row,
                             const rt::DeviceArray& dys, const rt::DeviceArray& dw, rt::CompileCache* cache) {
  shape.validate();
  check_d("combine_backward", d);
  const DType dt = row_dtype("combine_backward", dy, "dY");
  expect_array("combine_backward", dy, "dY [T, D]", dt, shape.tokens * d);
  expect_array("combine_backward", ys, "Ys [max_rows, D]", dt, shape.max_rows() * d);
  expect_array("combine_backward", row_token, "row_token [max_rows]", dtypes::int32, shape.max_rows());
  expect_array("combine_backward", row_weight, "row_weight [max_rows]", dtypes::float32, shape.max_rows());
  expect_array("combine_backward", dest_row, "dest_row [T*k]", dtypes::int32, shape.choices());
  expect_array("combine_backward", dys, "dYs [max_rows, D]", dt, shape.max_rows() * d);
  expect_array("combine_backward", dw, "dW [T*k]", dtypes::float32, shape.choices());
  launch(device, combine_backward_kernel(d, shape.top_k, dt), {dys, dw, dy, ys, row_token, row_weight, dest_row}, shape, cache);
}

}  // namespace weft::moe
