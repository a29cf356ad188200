// Tile operations beyond tiles.h, on the same types (Workgroup, gl, st, rt):
// - load_kn: the B operand (MFMA or mma.sync) of D = A * B from a K x N (row-major B) shared tile, for kernels
//   whose B is not stored transposed;
// - rf, a register tile owned thread by thread (tilelang's fragment), with a register-staged
//   copy gl -> st, a scalar-FMA fma_AB and a store: the vocabulary of kernels without matrix
//   cores (matmul_relu).
//
//   st bs = shared(32, 32, dtypes::bfloat16, SharedSwizzle::st_16x32);   // K x N
//   rt br = load_kn(wg, bs.after({ready}), stage, 32, wg.wave_col());    // as N x K
//   c = mma_ABt(wg, c, ar, br, {ko});                                     // c += A * B
//
//   rf c = zero(fragment(wg, 64, 64, dtypes::float32, /*threads_x=*/16));
//   UOp fill = group({copy(wg, as, a, row0, ko * 64), copy(wg, bs, b, ko * 64, col0)});
//   c = fma_AB(wg, c, as.after({fill}), bs.after({fill}), {ko});         // c += A * B
//   UOp out = store(wg, cg, c, row0, col0, relu);
#pragma once

#include <functional>
#include <optional>

#include "weft/kernels/tiles.h"

namespace weft::tile {

// A wave's B operand of D = A * B from stage `stage` of `src`, a K x N shared tile: columns
// [block*cols, (block+1)*cols) and every k row, as the N x K register tile mma_ABt takes (the
// values load(wg, st, stage, MatrixOperand::B, ...) gives for the transposed tile, so
// mma_ABt(c, a, load_kn(...)) is c += A * B): transpose(load(wg, src, stage, Major::col, cols,
// block)), the col-major tile mma_AB takes, seen as N x K. `block` is wave-uniform.
// Cost: an MFMA B operand holds consecutive k values per lane, which a K x N tile keeps a row
// apart (aligned_vector_width is 1): 2 ds_read_b64_tr_b16 (the transposing LDS read) per
// 16 x 32 sub-tile on gfx950 where the layouts allow it, else one ds_read_u16 per element (4 per
// 16 x 16 sub-tile on gfx942), where an N x K tile takes one ds_read_b128 or ds_read_b64; on NVIDIA 8 two-byte reads per 16 x 16 sub-tile (two mma.sync B fragments),
// where ldmatrix.trans would take one instruction (not yet). Throws weft::Error for shapes that
// are not whole operand sub-tiles.
rt load_kn(const Workgroup& wg, const st& src, const UOp& stage, int64_t cols, const UOp& block);

// A register tile of the whole workgroup, owned thread by thread: each thread holds `elements`
// values of `dtype` in a REG buffer, and `layout` (("register", "lane", "wave") -> ("row",
// "col")) says which element of the rows x cols tile register e of thread (wave, lane) holds.
struct rf {
  UOp buffer;
  int64_t rows, cols, elements;
  DType dtype;
  Layout layout;
};

// tilelang's fragment ownership over the workgroup's threads as a threads_y x threads_x grid
// (thread t = wave * wave_size + lane, tx = t % threads_x, ty = t / threads_x): thread (ty, tx)
// owns rows ty, ty + threads_y, ... (strided) and the cols / threads_x consecutive columns from
// tx * cols / threads_x. Example, 64 x 64 over 128 threads with threads_x 16: thread 17 (ty 1,
// tx 1) holds rows 1, 9, ..., 57 and columns 4-7; register e is row 8 * (e / 4) + 1, column
// 4 + e % 4. `id` fixes the buffer's id (a kernel whose graph must not depend on what was built
// before). Throws weft::Error unless every count is a power of two and the tile divides.
rf fragment(const Workgroup& wg, int64_t rows, int64_t cols, DType dtype, int64_t threads_x, std::optional<int64_t> id = std::nullopt);

// c = 0. Returns the tile after the stores.
rf zero(const rf& c);

// global[row0 .., col0 ..] -> stage `stage` of `dst` through registers: every thread loads up
// to 16 bytes of consecutive columns a round and stores them where dst's layout puts them.
// Plain loads and stores, so it works on every target (load(st, gl) is the direct-to-LDS form).
// The tile must lie inside the tensor. Returns the store effect. Throws weft::Error for a
// tile that does not divide into rounds of the workgroup's threads.
UOp copy(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0);

// dst = src (stage 0 of a shared tile of dst's shape), each thread its own elements, cast to
// dst's dtype. Returns the tile after the copy.
rf load(const Workgroup& wg, const rf& dst, const st& src);

// c += a * b for one-stage shared tiles a (rows x K) and b (K x cols, row-major B), one fused multiply-add
// per element and k (tilelang's T.gemm on fragments: scalar FMA in c's dtype, one rounding a
// step). A thread's consecutive columns of b are one vector read where b's layout keeps them
// contiguous. `loops` are the ranges the update repeats in (the loop over K tiles). Returns the
// tile after the update.
rf fma_AB(const Workgroup& wg, const rf& c, const st& a, const st& b, const std::vector<UOp>& loops);

// global[row0 + r, col0 + c] = epilogue(c[r, c]) cast to the tensor's dtype, where inside the
// tensor. The kernel's closing statement: ended over the hardware ranges.
UOp store(const Workgroup& wg, const gl& dst, const rf& c, const UOp& row0, const UOp& col0,
          const std::function<UOp(const UOp&)>& epilogue = nullptr);

// relu: max(x, 0).
UOp relu(const UOp& x);

}  // namespace weft::tile
