// One mma.sync.m16n8k16 through `wmma` on an NVIDIA GPU: a warp loads its A (16x16) and B
// (16x8) fragments in the PTX layout (mma_m16n8k16_operand, kernels/layouts.h), multiplies with an f32
// accumulator and stores D (16x8, float32, slot 0); A and B (slots 1, 2) are float16 or bfloat16.
#pragma once

#include "weft/gemm/matmul_relu.h"

namespace weft::gemm {

UOp mma_tile(DType input);

// With `identity_b`, B is the 16x8 identity (ones on its diagonal) and D must equal A's first 8
// columns bit for bit; otherwise random, checked against A @ B in double precision.
RunResult run_mma_tile(rt::Device& device, DType input, bool identity_b, uint64_t seed, rt::CompileCache* cache = nullptr);

}  // namespace weft::gemm

namespace weft::gemm {

// A tiled GEMM on NVIDIA tensor cores, written with the tile layer (kernels/tiles.h): D[M, N]
// (float32, slot 0) = A[M, K] @ B[K, N] (bfloat16 or float16, slots 1 and 2). 128x128 tiles of
// D per workgroup of 2 x 4 warps, each 64x32 as 4 x 2 accumulator sub-tiles of 16x16 (two
// mma.sync.m16n8k16 each); A and B tiles 32 deep in two stages of 64-byte-swizzled shared
// memory, filled with 16-byte cp.async one step ahead (commit_group, wait_group 1). M and N
// multiples of 128, K of 32.
UOp mma_gemm(int64_t m, int64_t n, int64_t k, DType input);

RunResult run_mma_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                       rt::CompileCache* cache = nullptr);

}  // namespace weft::gemm
