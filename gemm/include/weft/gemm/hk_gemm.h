// hk_gemm: HipKittens' bf16 GEMM (kernels/gemm/bf16fp32/mi350x in HipKittens) in weft's tile
// layer. C[M, N] = A[M, K] * B[N, K]^T with bf16 inputs (or the target's fp8: hk_gemm_fp8), fp32
// accumulation and a bf16 or fp32 output (slot 0 C, 1 A, 2 B; M, N and K bound at launch).
//
// One 256 x 256 tile of C per workgroup; 8 waves as 2 x 4, each owning 128 x 64 of C in 16x16
// MFMA sub-tiles (16x16x32 on gfx950, 16x16x16 on gfx942); A and B tiles in st_16x32-swizzled
// shared memory, two stages filled direct-to-LDS while the other stage feeds the MFMAs.
// Correct for any M, N >= 1 and K >= 8 a multiple of 8: whole tiles past the edges are read as
// zeros through the buffers' range checks and the stores past them are masked.
#pragma once

#include <string_view>

#include "weft/gemm/block_gemm.h"
#include "weft/gemm/matmul_relu.h"

namespace weft::gemm {

// hk_gemm's block is gemm_block (block_gemm.h), the body the MoE grouped GEMM shares.
using HkGemmShape = GemmBlockShape;
// The schedule for `arch`: gfx950 steps K by 64 (2 x 64 KiB of LDS), gfx942 by 32 (its LDS is
// 64 KiB); gemm_block_shape's CDNA entries. Throws weft::Error for other targets.
HkGemmShape hk_gemm_shape(std::string_view arch);

UOp hk_gemm(std::string_view arch, DType output = dtypes::bfloat16);
// The same kernel on another schedule (another K step, stage count or MFMA priority; the
// timeline compares them, docs/emulator.md). The shape must fit the target's LDS. With `input`
// the target's fp8 (tile::mfma_fp8: e4m3 on gfx950, e4m3fnuz on gfx942), A and B are fp8 and the
// products gfx950's f8f6f4 MFMA 16x16x128 (gfx942's MFMA 16x16x32 fp8), on
// gemm_block_shape(arch, input)'s schedule; K a multiple of 16.
UOp hk_gemm(std::string_view arch, DType output, const HkGemmShape& shape, DType input = dtypes::bfloat16);
// hk_gemm's fp8 form on its schedule: hk_gemm(arch, output, gemm_block_shape(arch, fp8), fp8).
UOp hk_gemm_fp8(std::string_view arch, DType output = dtypes::bfloat16);
// K's multiple for `input`: the fills' vectors are 16 bytes (8 bf16, 16 fp8).
int64_t hk_gemm_k_multiple(DType input);

// Random inputs (or with `identity_b` B = the N x K identity, N == K: then C must equal A bit
// for bit), a poisoned C, a launch, and a check against A * B^T in double precision.
RunResult run_hk_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType output, bool identity_b, uint64_t seed,
                      rt::CompileCache* cache = nullptr);
// The same on another schedule and inputs (hk_gemm(arch, output, shape, input)).
RunResult run_hk_gemm(rt::Device& device, const HkGemmShape& shape, int64_t m, int64_t n, int64_t k, DType output, bool identity_b,
                      uint64_t seed, DType input = dtypes::bfloat16);

}  // namespace weft::gemm
