// dispatch and combine: the moves of token rows into expert order and back (the seed's
// grouped_scatter_rows and grouped_gather_rows + weighted sum, extra/gemm/moe_routing.py), and
// their backward, as DSL kernels over the routing plan (plan.h) with host entry points.
//
//   dispatch          Xs[r] = X[row_token[r]], zeros where row_token[r] = -1 (padding rows)
//   dispatch (fp8)    the same rows quantized: scales[r] = amax(row)/448, Xs8[r] = e4m3(X[t] / scales[r])
//   combine           Y[t] = sum_{j = 0..k-1} weights[t*k+j] * Ys[dest_row[t*k+j]]   (fp32, in order of j)
//   dispatch backward dX[t] = sum_j dXs[dest_row[t*k+j]]   (a gather-sum; or, opt-in, float atomics)
//   combine backward  dYs[r] = row_weight[r] * dY[row_token[r]] (zeros for padding rows) and
//                     dW[t*k+j] = dot(dY[t], Ys[dest_row[t*k+j]])   (fp32, one fixed reduction order)
//
// Every kernel takes one row per workgroup: 16-byte accesses per lane where D allows (the
// vector is the largest power of two up to 16 bytes dividing D), the row's accesses unrolled,
// a masked tail where they do not fill the workgroup. Gathers write every output row once, so
// every result but the atomic variant's is the same bits run to run. D is compiled in; the
// token count T and the row count R (MoeShape::max_rows()) are bound at launch.
#pragma once

#include <cstdint>

#include "weft/gemm/matmul_relu.h"
#include "weft/moe/plan.h"

namespace weft::moe {

// ---- kernels ----------------------------------------------------------------------------------
// Buffers by slot; T and R are the kernel's variables "T" and "R". `dtype`: bfloat16 or float32.

// slot 0 Xs [R, D], 1 X [T, D], 2 row_token [R] (int32).
UOp dispatch_kernel(int64_t d, DType dtype);
// slot 0 Xs8 [R, D] (`fp8`: fp8e4m3 or fp8e4m3fnuz), 1 scales [R] (float32), 2 X [T, D],
// 3 row_token [R]. A row of zeros (padding) has scale 0 and codes 0.
UOp dispatch_fp8_kernel(int64_t d, DType dtype, DType fp8 = dtypes::fp8e4m3);
// slot 0 Y [T, D] (`output`), 1 Ys [R, D] (`input`), 2 dest_row [T*k], 3 weights [T*k] (float32).
UOp combine_kernel(int64_t d, int64_t top_k, DType input, DType output);
// slot 0 dX [T, D] (`output`), 1 dXs [R, D] (`input`), 2 dest_row [T*k].
UOp dispatch_backward_kernel(int64_t d, int64_t top_k, DType input, DType output);
// The opt-in scatter-add (the seed's ggather backward): slot 0 dX [T, D] float32, which must
// hold zeros (zero_kernel), 1 dXs [R, D], 2 row_token [R]. The sum's order, and so its last
// bits, depends on the order in which the atomics land.
UOp dispatch_backward_atomic_kernel(int64_t d, DType input);
// slot 0 [T, D] float32 = 0.
UOp zero_kernel(int64_t d);
// slot 0 dYs [R, D], 1 dW [T*k] (float32), 2 dY [T, D], 3 Ys [R, D], 4 row_token [R],
// 5 row_weight [R], 6 dest_row [T*k]. One workgroup per row: dYs[r], and the dot product of
// dY[row_token[r]] with Ys[r] into dW at the choice whose dest_row is r.
UOp combine_backward_kernel(int64_t d, int64_t top_k, DType dtype);

// ---- launches on device buffers (what the MoE layer chains) ------------------------------------
// Each checks the buffers' dtypes and sizes against `shape` and `d` (weft::Error naming the
// buffer and what it should be), compiles through `cache` (nullptr: no cache) and launches.
// The plan's buffers are those of RoutingPlan, uploaded as int32 / float32.

void launch_dispatch(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& x, const rt::DeviceArray& row_token,
                     const rt::DeviceArray& xs, rt::CompileCache* cache = nullptr);
void launch_dispatch_fp8(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& x, const rt::DeviceArray& row_token,
                         const rt::DeviceArray& xs8, const rt::DeviceArray& scales, rt::CompileCache* cache = nullptr);
void launch_combine(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& ys, const rt::DeviceArray& dest_row,
                    const rt::DeviceArray& weights, const rt::DeviceArray& y, rt::CompileCache* cache = nullptr);
// `atomic`: the scatter-add (dX must be float32; it is zeroed first).
void launch_dispatch_backward(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& dxs,
                              const rt::DeviceArray& dest_row, const rt::DeviceArray& row_token, const rt::DeviceArray& dx, bool atomic = false,
                              rt::CompileCache* cache = nullptr);
void launch_combine_backward(rt::Device& device, const MoeShape& shape, int64_t d, const rt::DeviceArray& dy, const rt::DeviceArray& ys,
                             const rt::DeviceArray& row_token, const rt::DeviceArray& row_weight, const rt::DeviceArray& dest_row,
                             const rt::DeviceArray& dys, const rt::DeviceArray& dw, rt::CompileCache* cache = nullptr);

// ---- compiled once, launched many times (what the MoE layer holds) ----------------------------
// The forward kernels compiled for a device, a shape and D; launch() checks the buffers as the
// free launches above do (which build one of these per call, compiling through their cache).

class Dispatch {
 public:
  // `dtype`: the rows' (bfloat16 or float32). Throws weft::Error for a bad shape, D or dtype.
  Dispatch(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, rt::CompileCache* cache = nullptr);
  // x [T, D], row_token [max_rows] (int32), xs [max_rows, D].
  void launch(rt::Device& device, const rt::DeviceArray& x, const rt::DeviceArray& row_token, const rt::DeviceArray& xs) const;
  const rt::CompiledKernel& kernel() const { return kernel_; }

 private:
  MoeShape shape_;
  int64_t d_;
  DType dtype_;
  rt::CompiledKernel kernel_;
};

class Combine {
 public:
  // `input`: Ys's dtype, `output`: Y's (each bfloat16 or float32).
  Combine(rt::Device& device, const MoeShape& shape, int64_t d, DType input, DType output, rt::CompileCache* cache = nullptr);
  // ys [max_rows, D], dest_row [T*k] (int32), weights [T*k] (float32), y [T, D].
  void launch(rt::Device& device, const rt::DeviceArray& ys, const rt::DeviceArray& dest_row, const rt::DeviceArray& weights,
              const rt::DeviceArray& y) const;
  const rt::CompiledKernel& kernel() const { return kernel_; }

 private:
  MoeShape shape_;
  int64_t d_;
  DType input_, output_;
  rt::CompiledKernel kernel_;
};

// ---- host entry points: random inputs (`seed`), poisoned outputs, a launch, a check ----------
// The routing: k distinct experts per token drawn uniformly (`skew`: every token on experts
// 0..k-1, so the others get no rows), random weights; its plan from plan_reference. The
// references are in double; dispatch is compared bit for bit, sums within their rounding.

struct PermuteOptions {
  bool skew = false;
  bool fp8 = false;     // run_dispatch: quantize to fp8e4m3 (per-row scales), compared bit for bit
  bool atomic = false;  // run_dispatch_backward: the scatter-add variant
};

gemm::RunResult run_dispatch(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed,
                             rt::CompileCache* cache = nullptr, const PermuteOptions& options = {});
gemm::RunResult run_combine(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed,
                            rt::CompileCache* cache = nullptr, const PermuteOptions& options = {});
gemm::RunResult run_dispatch_backward(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed,
                                      rt::CompileCache* cache = nullptr, const PermuteOptions& options = {});
// Checks dYs and dW (the result names the first bad element of either).
gemm::RunResult run_combine_backward(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed,
                                     rt::CompileCache* cache = nullptr, const PermuteOptions& options = {});

}  // namespace weft::moe
