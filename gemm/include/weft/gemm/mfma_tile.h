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

// A GEMM on the matrix cores written with the tile types (kernels/tiles.h): D[M, N] (float32,
// slot 0) = A[M, K] @ B[K, N] (float16 or bfloat16, slots 1 and 2). One wave per 32x32 tile of
// D (2x2 sub-tiles of 16x16); A and B reach shared memory by direct-to-LDS loads 32 of K at a
// time, A is read into registers as MFMA A operands (16-byte LDS reads on gfx950), B as it is
// stored, K x N, element by element (load_kn in kernels/fragments.h); MFMA 16x16x16 on gfx942
// and 16x16x32 on gfx950. M, N multiples of 32, K of 32.
UOp mfma_gemm(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input);

// Random inputs, or with `identity_b` an identity B (D must equal A bit for bit; needs K == N).
RunResult run_mfma_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                        rt::CompileCache* cache = nullptr);

}  // namespace weft::gemm
