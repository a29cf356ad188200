// hopper_gemm: C = A * B^T on an NVIDIA Hopper GPU (sm_90a), written with weft's Hopper
// operations (dsl/builder.h, "Hopper"): TMA loads into a ring of shared-memory stages guarded by
// mbarriers, warpgroup MMAs (wgmma) from 128-byte-swizzled shared tiles, one producer warpgroup
// and two consumer warpgroups (warp specialization).
//
// A [M, K] and B [N, K] are bfloat16 and K-contiguous (B as cuBLAS's "T" operand, hk_gemm's B),
// C [M, N] is bfloat16 or float32 (slots: 0 C, 1 A, 2 B), accumulation in fp32. M, N and K are
// kernel variables: any M, N >= 1 and K >= 8 a multiple of 8 (a TMA row is a multiple of 16
// bytes). Tiles past the edges are filled with zeros by TMA and the epilogue stores only
// elements inside C.
//
// The schedule (docs/nvidia.md, "hopper_gemm"):
//   - persistent: CTAS workgroups of 3 warpgroups (the kernel variable CTAS, as many as the GPU
//     runs at once: hopper_gemm_ctas) walk the 128 x 256 blocks of C, workgroup w taking blocks
//     w, w + CTAS, ..., in L2-friendly order: groups of `group_rows` block rows, column by column
//     inside a group;
//   - warpgroup 0, warp 0 (the producer): for each block and K step of 64, wait until the
//     consumers released the stage (`empty`), announce its bytes and issue two TMA loads (A's
//     128 x 64 box, B's 256 x 64 box) that complete on the stage's `full` mbarrier; it runs up to
//     `stages` steps ahead, into the next block while the consumers store this one;
//   - warpgroups 1 and 2 (the consumers, 64 rows of the block each): wait for `full`, issue four
//     m64n256k16 wgmmas as one group (the block's first overwrites the accumulator), wait until
//     only that group is in flight and release the previous step's stage; after the block's last
//     step, wait for it and convert and store the 64 x 256 accumulator (128 fp32 registers a
//     thread).
#pragma once

#include <cstdint>

#include "weft/gemm/matmul_relu.h"

namespace weft::gemm {

// The block schedule (fixed: the kernel is written for it).
struct HopperGemmShape {
  static constexpr int64_t block_m = 128, block_n = 256, k_step = 64, stages = 4;
  static constexpr int64_t consumers = 2;    // consumer warpgroups, 64 rows of the block each
  static constexpr int64_t group_rows = 8;   // block rows per L2 group of the rasterization
  static constexpr int64_t warpgroup = 128;  // threads
};

// The kernel (NVIDIA sm_90a), with kernel variables M, N, K and CTAS. `output` is bfloat16 or
// float32; throws weft::Error otherwise.
UOp hopper_gemm(DType output);

// The persistent grid for an M x N product on `device`: one workgroup per multiprocessor, at most
// one per block of C. Throws weft::Error for a device that does not report its multiprocessors.
int64_t hopper_gemm_ctas(const rt::Device& device, int64_t m, int64_t n);

// Compiles and runs hopper_gemm on random bf16 A and B (or the identity B: then C equals A bit
// for bit), and checks C against a double-precision reference. Throws weft::Error for sizes it
// cannot take (M, N >= 1; K >= 8 a multiple of 8) and on a device that is not sm_90.
RunResult run_hopper_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType output, bool identity_b, uint64_t seed,
                          rt::CompileCache* cache = nullptr);

}  // namespace weft::gemm
