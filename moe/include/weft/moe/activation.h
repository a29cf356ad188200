// The MoE feed-forward layer's activation, between its two grouped GEMMs (SwiGLU): from the
// gate/up projection H [R, 2F] (bf16; columns [0, F) are the gate g, [F, 2F) the up u) to
//
//   A[r, c] = silu(g) * u = g * sigmoid(g) * u,   sigmoid(g) = 1 / (1 + 2^(-g * log2(e)))
//
// in fp32, rounded once to bf16. One workgroup per row, with the 16-byte accesses of the permute
// kernels (moe/src/row_tiling.h: F = 4096 moves 8 elements a lane per access).
//
// Padding rows (row_token[r] = -1: the padding of each expert's last block and every row past
// offsets[E]) are not read: they get zeros, the value a padding row of H (zeros times W1) would
// give. So A is defined on every row, and the down projection's padding rows are zeros too; an
// unused block's rows of H, which the grouped GEMM leaves unwritten, are never read.
// A very negative g gives 2^(+large) = inf, sigmoid 0 and A = 0 (never NaN for finite H).
#pragma once

#include <cstdint>

#include "weft/moe/plan.h"
#include "weft/runtime/kernel.h"

namespace weft::moe {

// slot 0 A [R, F] bf16, 1 H [R, 2F] bf16, 2 row_token [R] int32; R (max_rows) bound at launch.
// Throws weft::Error for F < 1.
UOp silu_mul_kernel(int64_t f);

// The kernel compiled for a device, a shape (its max_rows) and F.
class SiluMul {
 public:
  SiluMul(rt::Device& device, const MoeShape& shape, int64_t f, rt::CompileCache* cache = nullptr);
  // h [max_rows, 2F] and a [max_rows, F] bf16, row_token [max_rows] int32; weft::Error naming a
  // buffer of another dtype or size.
  void launch(rt::Device& device, const rt::DeviceArray& h, const rt::DeviceArray& row_token, const rt::DeviceArray& a) const;
  const rt::CompiledKernel& kernel() const { return kernel_; }

 private:
  MoeShape shape_;
  int64_t f_;
  rt::CompiledKernel kernel_;
};

}  // namespace weft::moe
