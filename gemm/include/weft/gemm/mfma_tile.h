// One MFMA tile through `wmma`: a single wave (64 lanes) loads its A and B fragments from
// global memory in the target's MFMA layout (kernels/mfma_layout.h), issues one m x n x k
// matrix multiply-accumulate, and stores D. D[m, n] (float32, slot 0) = A[m, k] @ B[k, n]
// (slots 1 and 2, float16 or bfloat16).
#pragma once

#include <string_view>

#include "weft/gemm/matmul_relu.h"

namespace weft::gemm {

UOp mfma_tile(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input);

// With `identity_b`, B is the k x n identity and D must equal A bit for bit; otherwise A and B
// are random and D is checked against A @ B in double precision.
RunResult run_mfma_tile(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                        rt::CompileCache* cache = nullptr);

}  // namespace weft::gemm
