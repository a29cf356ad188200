// Register tiles read from shared tiles in layouts other than tiles.h's: today the B operand of
// D = A * B from a K x N (row-major B) shared tile, for kernels whose B is not stored
// transposed. Same types as tiles.h (Workgroup, st, rt).
//
//   st bs = shared(32, 32, dtypes::bfloat16, SharedSwizzle::st_16x32);   // K x N
//   rt br = load_kn(wg, bs.after({ready}), stage, 32, wg.wave_col());    // as N x K
//   c = mma_ABt(wg, c, ar, br, {ko});                                     // c += A * B
#pragma once

#include "weft/kernels/tiles.h"

namespace weft::tile {

// A wave's B operand of D = A * B from stage `stage` of `src`, a K x N shared tile: columns
// [block*cols, (block+1)*cols) and every k row, as the N x K register tile mma_ABt takes (the
// values load(wg, st, stage, MatrixOperand::B, ...) gives for the transposed tile, so
// mma_ABt(c, a, load_kn(...)) is c += A * B). `block` is wave-uniform.
// Cost: an MFMA B operand holds consecutive k values per lane, which a K x N tile keeps a row
// apart, so each element is its own LDS read (aligned_vector_width is 1): 8 ds_read_u16 per
// 16 x 32 sub-tile on gfx950 and 4 on gfx942, where an N x K tile takes one ds_read_b128 or
// ds_read_b64. Throws weft::Error for shapes that are not whole operand sub-tiles.
rt load_kn(const Workgroup& wg, const st& src, const UOp& stage, int64_t cols, const UOp& block);

}  // namespace weft::tile
