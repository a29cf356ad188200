// One workgroup's block of a bf16 (or CDNA fp8) GEMM, C = A * B^T (A M x K, B N x K, both K-contiguous), as
// the tile layer writes it: the body hk_gemm and the MoE grouped GEMM (moe/grouped_gemm.h) share.
// The kernel around it picks the block (its grid, where A's and B's rows start, how many K
// steps) and stores the accumulator; the body fills staged shared tiles asynchronously
// (direct-to-LDS on CDNA, cp.async on NVIDIA), pipelined over K, and issues the products.
#pragma once

#include <string_view>

#include "weft/kernels/tiles.h"

namespace weft::gemm {

// The schedule of one workgroup: a block_m x block_n block of C, K in steps of k_step through
// `stages` staged shared tiles (swizzled as `swizzle`), wave_rows x wave_cols waves of
// wave_size lanes, each wave owning (block_m / wave_rows) x (block_n / wave_cols) of C.
struct GemmBlockShape {
  int64_t block_m, block_n, k_step, stages;
  int64_t wave_rows, wave_cols;
  int64_t wave_size = 64;
  tile::SharedSwizzle swizzle = tile::SharedSwizzle::st_16x32;
  int mfma_priority = 1;  // the s_setprio the MFMAs of a step run at (0: none)
  // HipKittens' 8-wave ping-pong (CDNA, 2 stages, 2 rows of waves): the rows take turns, one
  // issuing a cluster of memory instructions while the other runs a cluster of MFMAs.
  bool ping_pong = false;
  int64_t wave_m() const { return block_m / wave_rows; }
  int64_t wave_n() const { return block_n / wave_cols; }
};

// The block schedule for `arch`: HipKittens' 256 x 256 block of 2 x 4 waves on gfx950 (K steps
// of 64) and gfx942 (32: its LDS is 64 KiB), in st_16x32 tiles, as the 8-wave ping-pong; on
// NVIDIA ("sm_XY") mma_gemm's 128 x 128 block of 2 x 4 warps, K steps of 32, in 64-byte-swizzled
// tiles, pipelined. Two stages everywhere. Throws weft::Error for another target.
GemmBlockShape gemm_block_shape(std::string_view arch);
// The same for `input`'s elements: bfloat16 as above; the target's fp8 on CDNA (tile::mfma_fp8)
// takes K steps of as many bytes: 128 on gfx950 in st_16x128 tiles, 64 on gfx942 in unswizzled
// ones (its LDS holds no wider two-stage tiles, and st_16x128 needs 128). Throws weft::Error
// for another input.
GemmBlockShape gemm_block_shape(std::string_view arch, DType input);

// The workgroup of a block GEMM over `grid` (GLOBAL sizes, x first): the shape's waves.
tile::Workgroup gemm_workgroup(std::string_view arch, const GemmBlockShape& s, const std::vector<UOp>& grid);

// The wave's share of the block: the fp32 accumulator of C[a_row0 .. + block_m, n0 .. +
// block_n] where B's rows b_row0 .. + block_n are C's columns n0 .., summed over `steps` K
// steps of k_step from K = 0. A and B are read through the tile layer's fills, so their
// elements outside the tensors (rows past a.rows or b.rows, K past cols) are zeros; a
// tensor's cols must be a multiple of the fill's lane vector (16 bytes on gfx950 and NVIDIA, 4 on
// gfx942: 8 and 2 bf16) for the elements past K to be zeros. The tiles hold a's and b's dtype,
// which must be the shape's (gemm_block_shape(arch, input)). Each step's compute waits for its stage (the
// pipeline's wait and barrier) and runs its MFMAs at priority 1. The last steps' fills (zeros
// past K) may still be in flight when the loop ends: a kernel that must not leave copies in
// flight waits for them (wait_counts{.vm = 0}) after the accumulator. With s.ping_pong, the
// schedule is the ping-pong (block_gemm.cpp describes it), which leaves no copy in flight.
// The ping-pong splits each K step's MFMAs in halves: by k steps where a K step is an even
// number of them, by the wave's rows of C where it is one (gfx950's fp8 through the f8f6f4
// 16x16x128, one per 128-byte step). Throws weft::Error for a ping-pong on a shape it does not
// fit (not 2 stages, not 2 rows of waves, an odd number of MFMA k steps per K step other than
// one, one k step with an odd number of 16-row sub-tiles of C a wave, or an NVIDIA target).
tile::acc gemm_block(const tile::Workgroup& wg, const GemmBlockShape& s, const tile::gl& a, const tile::gl& b, const UOp& a_row0,
                     const UOp& b_row0, const UOp& steps);

// ceil(dim / size) as an index expression: the tiles (or K steps) covering a run-time size.
UOp tiles_of(const UOp& dim, int64_t size);

}  // namespace weft::gemm
