// The catalog of concrete layouts: where the hardware puts a matrix operand's elements (MFMA on
// CDNA3/CDNA4, mma.sync on NVIDIA), how HipKittens lays a shared tile out (its XOR swizzles),
// where LDS DMA writes, and how a workgroup's waves form a grid. Each is a `Layout` value
// (layout.h), built from the formula its source gives and checked linear over GF(2) on every
// input when built (Layout::linear). Tests: tests/kernels/test_layouts.cpp compares each with
// an independent statement of its source, element by element.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "weft/dsl/dtype.h"
#include "weft/kernels/layout.h"

namespace weft::tile {

// Which operand of D = A * B + C: A is m x k, B is k x n, C (and D) m x n.
enum class MatrixOperand { A, B, C };

// One MFMA instruction the tile layer knows: target, shape and input dtype, accumulating in
// f32. mfma_shapes() is the registry: mfma_operand (and through it MfmaLayout in
// mfma_layout.h and the names of layout_catalog.h) takes exactly these. The AMDGPU renderer
// keeps its own intrinsic table (lowering/ does not depend on kernels/).
struct MfmaShape {
  std::string_view arch;
  int64_t m, n, k;
  DType input;
};
const std::vector<MfmaShape>& mfma_shapes();

// An MFMA operand on `arch` (gfx942, gfx950) with f32 accumulation: ("register", "lane") ->
// ("row", "col") of the operand as a matrix (A: row = m index, col = k index; B: row = k,
// col = n; C: row = m, col = n). "register" counts the elements a lane holds, in order (the
// element e of the lane's vector, packed low to high in its VGPRs); "lane" has 64 values.
// Shapes: f16 and bf16 16x16x16 and 32x32x8 on both targets, 16x16x32 and 32x32x16 on gfx950;
// fp8 (the target's own: fp8e4m3fnuz on gfx942, fp8e4m3 on gfx950) 16x16x32 and 32x32x16, and
// gfx950's f8f6f4 16x16x128 and 32x32x64 with fp8 e4m3 operands (32 bytes a lane).
// Source: AMD's matrix instruction calculator for CDNA3 (../shared/reference/mfma-cdna3/,
// "Register to matrix element mapping"), and the CDNA4 ISA guide's double-K forms, which keep
// the CDNA3 pattern with twice the consecutive k values per lane:
//   A: row = lane % m, col = (lane / m) * (m*k/64) + e
//   B: row = (lane / n) * (k*n/64) + e, col = lane % n
//   C: 16x16: row = 4 * (lane / 16) + e, col = lane % 16
//      32x32: row = 8 * (e / 4) + 4 * (lane / 32) + e % 4, col = lane % 32 (groups of 4 rows
//      8 apart: e's bits 0-1 are row bits 0-1, lane bit 5 is row bit 2, e's bits 2-3 are row
//      bits 3-4, so the map is linear)
// The f8f6f4 MFMAs' fp8 operands hold two runs of 16 k a lane, half of K apart (docs/mfma-f8f6f4.md
// section 2.1, from AMD Composable Kernel's hardware-run tables):
//   A: row = lane % m, col = (e / 16) * (k/2) + 16 * (lane / m) + e % 16 (B likewise)
// Example: gfx950 16x16x32 bf16 A, 8 registers, lanes 0-15 hold k 0-7, lanes 16-31 k 8-15:
//            register 0  register 1  ...  register 7
//   lane 0   (0, 0)      (0, 1)           (0, 7)        (row, col)
//   lane 1   (1, 0)      (1, 1)           (1, 7)
//   lane 16  (0, 8)      (0, 9)           (0, 15)
//   lane 63  (15, 24)    (15, 25)         (15, 31)
// Throws weft::Error naming the shape and target when either is not in mfma_shapes().
Layout mfma_operand(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input, MatrixOperand which);

// NVIDIA's mma.sync.aligned.m16n8k16 with f16 or bf16 inputs and f32 accumulation, a warp of 32
// lanes: ("register", "lane") -> ("row", "col"); A 16 x 16 (8 registers), B 16 x 8 (4), C 16 x 8
// (4). Source: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type", with
// group g = lane / 4 and t = lane % 4:
//   A: row = g + 8 * (e / 2 % 2), col = 2t + e % 2 + 8 * (e / 4)
//   B: row = 2t + e % 2 + 8 * (e / 2), col = g
//   C: row = g + 8 * (e / 2), col = 2t + e % 2
// Example, C:  lane 0: (0, 0) (0, 1) (8, 0) (8, 1);  lane 5: (1, 2) (1, 3) (9, 2) (9, 3).
// Throws weft::Error for other inputs.
Layout mma_m16n8k16_operand(DType input, MatrixOperand which);

// NVIDIA Hopper's wgmma.mma_async m64nNk16 accumulator (f32) for one warpgroup of 128 threads:
// ("register", "lane") -> ("row", "col") of the 64 x n tile D, n/2 registers a thread ("lane" is
// the thread's index in the warpgroup, 0..127; n a power of two from 8 to 256 so that the layout
// is linear). Source: PTX ISA, "Register Fragments and Shared Memory Matrix Layouts" for wgmma,
// the figure of the m64nNk16 D fragment: warp w = lane / 32 holds rows 16w..16w+15 as mma.sync's
// m16n8 C fragment, repeated for each 8 columns; with g = (lane % 32) / 4 and t = lane % 4:
//   row = 16 * (lane / 32) + g + 8 * (e / 2 % 2), col = 8 * (e / 4) + 2t + e % 2
// Example, n = 16: thread 0: (0, 0) (0, 1) (8, 0) (8, 1) (0, 8) (0, 9) (8, 8) (8, 9);
//                  thread 37 (warp 1, g 1, t 1): (17, 2) (17, 3) (25, 2) (25, 3) (17, 10) ...
// Throws weft::Error for other n.
Layout wgmma_m64nNk16_accumulator(int64_t n);

// HipKittens' shared-tile shapes (include/types/shared/st_shape.cuh). A tile is a row-major grid
// of subtiles of the kind's shape, each subtile contiguous; within a subtile the element at
// (r, c) sits at byte b = itemsize * (r * cols + c), XOR-swizzled:
//   unswizzled  any dtype, the whole tile row-major (no subtiles)
//   st_16x32    2-byte: b ^ (((b % 1024) >> 9) << 5)   (row bit 3 flips column bit 4); 4-byte: b
//   st_32x32    2-byte: b ^ (((b % 1024) >> 9) << 5) ^ (((b % 2048) >> 10) << 4)
//               (row bit 3 flips column bit 4, row bit 4 flips column bit 3); 4-byte: b
//   st_8x32     2- and 4-byte: b
//   st_16x128   1-byte: b ^ (((b % 2048) >> 8) << 4)   (row bits 1-3 flip column bits 4-6)
// and NVIDIA's 64-byte swizzle (the TMA tensor map's SWIZZLE_64B, CUTLASS's Swizzle<2,4,3> on
// byte addresses: the 16-byte chunk index within a 64-byte row span, byte bits 4-5, is XORed
// with byte bits 7-8; the pattern repeats every 512 bytes):
//   swizzle_64b 1-, 2- and 4-byte, subtile 8 rows x 64 bytes (8 x 64 fp8, 8 x 32 bf16, 8 x 16
//               fp32): b ^ (((b % 512) >> 7) << 4)
//               (row bits 1-2 flip column bits 3-4: rows 0-7 put a 16-byte chunk at 8
//               different bank groups, so a warp reading 8 rows of one chunk is conflict-free)
// and the 128-byte swizzle (TMA's SWIZZLE_128B and wgmma's 128-byte swizzle mode, CUTLASS's
// Swizzle<3,4,3>: the 16-byte chunk index within a 128-byte row, byte bits 4-6, is XORed with
// byte bits 7-9, the row's index within its group of 8; the pattern repeats every 1024 bytes):
//   swizzle_128b 1-, 2- and 4-byte, subtile 8 rows x 128 bytes (8 x 128 fp8, 8 x 64 bf16,
//               8 x 32 fp32): b ^ (((b % 1024) >> 7) << 4). hopper_gemm's ring (128-byte K steps) and staging
//               boxes, a TMA box of 128-byte rows as it lands in shared memory.
enum class SharedSwizzle { unswizzled, st_16x32, st_32x32, st_8x32, st_16x128, swizzle_64b, swizzle_128b };

std::string_view swizzle_name(SharedSwizzle kind);                // "st_16x32"
std::vector<SharedSwizzle> all_swizzles();
// The subtile's rows and columns for elements of `itemsize` bytes (unswizzled: 1 x 1, any
// power-of-two tile; swizzle_128b: 128 bytes of columns, HipKittens' kinds the same for any size).
std::pair<int64_t, int64_t> subtile_shape(SharedSwizzle kind, int itemsize);
// Whether the kind is defined (by HipKittens, or for swizzle_64b and swizzle_128b by the catalog) for elements of
// `itemsize` bytes.
bool swizzle_supports(SharedSwizzle kind, int itemsize);

// A rows x cols shared tile of `dtype`: ("row", "col") -> ("offset"), the element's offset in
// ELEMENTS from the tile's start. Bijective. Example, st_16x32 bf16 16 x 32: rows 0-7 are
// row-major (row r, col c at 32r + c); rows 8-15 swap their two 16-column halves (row 8, col 0
// at 272 = 8*32 + 16; row 8, col 16 at 256).
// Throws weft::Error when the dtype's size is not one the kind takes, or when rows and cols
// are not powers of two that are multiples of the subtile's (a grid that is not a power of two
// is not linear).
Layout shared_tile(SharedSwizzle kind, int64_t rows, int64_t cols, DType dtype);

// Where LDS DMA (buffer_load ... lds, global_load_lds) writes: ("byte", "lane") -> ("offset"),
// in bytes from the instruction's LDS base: lane l's bytes at l * bytes_per_lane, in order.
// Source: the CDNA3/CDNA4 ISA guides (LDS address = LDS_base + M0 + inst_offset + lane * size;
// ../shared/reference/amdgpu-facts.md). Sizes 1, 2 and 4 (ubyte/ushort/dword) on both targets
// and 16 (dwordx4) on gfx950; gfx950's 12-byte dwordx3 is not a power of two and so not a
// linear layout. Example, 4 bytes: lane 0 -> 0-3, lane 1 -> 4-7, lane 63 -> 252-255.
// Throws weft::Error for other sizes.
Layout lds_dma_destination(int bytes_per_lane);

// A workgroup's waves as a rows x cols grid, row-major: ("wave") -> ("wave_row", "wave_col").
// Example, 2 x 4: wave 5 -> (1, 1). Throws weft::Error unless both are powers of two.
Layout wave_grid(int64_t rows, int64_t cols);

// LDS facts for bank-conflict counts (bank_conflicts in layout.h): the banks of 4 bytes, and
// which lanes one LDS read of `vector_bytes` per lane serves together.
// NVIDIA (any "sm_XY" from sm_80 on): 32 banks of 4 bytes, successive 32-bit words in
// successive banks, and a warp's 2- or 4-byte shared-memory read served in one phase of all 32
// lanes, lanes reading one 32-bit word sharing it (CUDA C++ Programming Guide, "Shared Memory"
// for compute capability 5.x and later, which 8.x and 9.0 keep). Wider NVIDIA reads are not in
// the catalog.
// Source: HipKittens' measurements on gfx950 (analysis/paper_experiments/phases/ds_read_b128 and
// ds_read_b64): 64 banks; ds_read_b64 in two phases of lanes 0-31 and 32-63; ds_read_b128 in
// four phases of 16 lanes, a phase being one half of the wave and the lanes l whose bits 2-4
// have even (or odd) parity: phase 0 = lanes 0-3, 12-15, 20-23, 24-27. gfx942: 32 banks (AMD's
// CK-Tile LDS blog); its phases are not in the catalog.
// Throws weft::Error for a target or width the catalog does not know.
bool is_nvidia(std::string_view arch);  // "sm_XY": an NVIDIA target (32-lane warps, mma.sync)
int lds_banks(std::string_view arch);
std::vector<std::vector<int64_t>> lds_read_phases(std::string_view arch, int vector_bytes);

}  // namespace weft::tile
