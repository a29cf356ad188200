// The HipKittens-style tile layer: a workgroup as a grid of waves, global tensors (gl), shared
// tiles (st), register tiles of one wave (rt) and fp32 accumulators (acc), each a thin value
// over DSL nodes plus a Layout that says where every element lives. Operations build DSL
// graphs; those that write memory return the effect, those that read return values.
//
//   Workgroup wg(arch, {tiles_n, tiles_m}, /*wave_rows=*/2, /*wave_cols=*/4);
//   gl a = global(1, m, k, dtypes::bfloat16);
//   st as = shared(256, 64, dtypes::bfloat16, SharedSwizzle::st_16x32, /*stages=*/2);
//   UOp fill = load(wg, as, stage, a, row0, col0);         // direct-to-LDS on CDNA, cp.async on NVIDIA
//   rt ar = load(wg, as.after({fill, barrier}), stage, MatrixOperand::A, 128, wg.wave_row());
//   acc c = mma_ABt(c, ar, br);
//
// docs/tiles.md walks through the types and the GEMM written with them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "weft/dsl/builder.h"
#include "weft/kernels/layouts.h"

namespace weft::tile {

// One workgroup: its place in the grid (GLOBAL ranges) and its waves as a wave_rows x
// wave_cols grid (WARP ranges, the same in every lane of a wave), wave_size lanes each (the
// LOCAL range `lane`). Fresh ranges for loops continue the ids.
class Workgroup {
 public:
  Workgroup(std::string arch, const std::vector<UOp>& grid, int64_t wave_rows, int64_t wave_cols, int64_t wave_size = 64);

  const std::string& arch() const { return arch_; }
  UOp block(size_t axis) const { return blocks_.at(axis); }
  UOp lane() const { return lane_; }
  UOp wave_row() const { return wave_row_; }
  UOp wave_col() const { return wave_col_; }
  UOp wave() const { return wave_row_ * wave_cols_ + wave_col_; }  // 0 .. waves()-1, wave-uniform
  UOp thread() const { return wave() * wave_size_ + lane_; }
  int64_t wave_rows() const { return wave_rows_; }
  int64_t wave_cols() const { return wave_cols_; }
  int64_t waves() const { return wave_rows_ * wave_cols_; }
  int64_t wave_size() const { return wave_size_; }
  int64_t threads() const { return waves() * wave_size_; }

  // A fresh range (the id counter is not part of the workgroup's value: operations taking a
  // const Workgroup& still make their loops).
  UOp range(int64_t size, AxisType axis) const;
  UOp range(const UOp& size, AxisType axis) const;
  // The ranges every statement of the kernel runs under: blocks, lanes, waves.
  std::vector<UOp> hardware_ranges() const;

 private:
  std::string arch_;
  std::vector<UOp> blocks_;
  UOp lane_, wave_row_, wave_col_;
  int64_t wave_rows_, wave_cols_, wave_size_;
  mutable int64_t next_id_;
};

// A global tensor: rows x cols, row-major, sizes known at run time.
struct gl {
  UOp buffer;
  UOp rows, cols;
};
gl global(int64_t slot, const UOp& rows, const UOp& cols, DType dtype);

// A shared tile: `stages` copies of a rows x cols tile placed by `layout` ((row, col) ->
// offset in elements), one LOCAL buffer of stages * rows * cols elements.
struct st {
  UOp buffer;
  int64_t rows, cols, stages;
  DType dtype;
  Layout layout;
  int64_t size() const { return rows * cols; }
  // The tile as it is after `effects` (fills, barriers): what reads must go through.
  st after(const std::vector<UOp>& effects) const;
};
st shared(int64_t rows, int64_t cols, DType dtype, SharedSwizzle swizzle, int64_t stages = 1);

// A register tile of one wave: rows x cols as (rows/16) x (cols/k) operand sub-tiles
// (operand_layout: an MFMA's, or on NVIDIA mma.sync's). `layout` places one sub-tile: ("register", "lane") -> ("row", "col") with rows = the
// sub-tile's 16 rows (M for an A operand, N for a transposed B) and cols = its k. parts[i * kt
// + j] is sub-tile (i, j): one vector value per lane.
struct rt {
  std::vector<UOp> parts;
  int64_t rows, cols;
  int64_t sub_rows, sub_cols;
  Layout layout;
  UOp part(int64_t i, int64_t j) const { return parts.at(static_cast<size_t>(i * (cols / sub_cols) + j)); }
};

// An fp32 accumulator of one wave: rows x cols in 16x16 C sub-tiles (operand_layout's C), a
// REG buffer [tiles_m][tiles_n][elements] per lane.
struct acc {
  UOp buffer;
  int64_t rows, cols, elements;
  Layout layout;  // one sub-tile: ("register", "lane") -> ("row", "col")
  int64_t tiles_m() const { return rows / 16; }
  int64_t tiles_n() const { return cols / 16; }
};
acc accumulator(const Workgroup& wg, int64_t rows, int64_t cols);

// One value per row of an accumulator, held the way the accumulator holds its rows: lane l
// keeps, for each of the tiles_m sub-tile rows i, the value of every row its registers cover
// (register e of sub-tile row i is row i*16 + layout.row(e, l)), and the lanes whose lane bits
// differ only in column bits hold the same values (16x16 C: rows 4*(l/16)+e, e < 4, replicated
// over the 16 lanes l % 16). values[i * elements + e] is the row of register e; values, not
// memory (a reduction's result lives in VGPRs).
struct rv {
  std::vector<UOp> values;
  int64_t rows, elements;
  Layout layout;  // the accumulator's sub-tile layout the rows follow
  UOp at(int64_t i, int64_t e) const { return values.at(static_cast<size_t>(i * elements + e)); }
};

// The matrix instruction the tile layer uses for `input` (bfloat16, float16) on the
// workgroup's target: the MFMA 16x16x32 on gfx950 and 16x16x16 on gfx942 (64-lane waves);
// mma.sync m16n8k16 on NVIDIA ("sm_XY", 32-lane warps). Throws weft::Error for another target,
// input or wave size.
WmmaArg mma_shape(const Workgroup& wg, DType input);

// The operand sub-tile the tile types are made of, ("register", "lane") -> ("row", "col"): A
// 16 x k, B k x 16, C 16 x 16 (k: mma_shape's). On CDNA one MFMA's operand (mfma_operand). On
// NVIDIA two mma.sync m16n8k16 side by side along n (mma_m16n8k16_operand): A is one
// instruction's, and B's and C's register bit 2 selects the second instruction's half (n 8-15),
// so a 16 x 16 sub-tile is 8 registers a lane on both targets' 16 x 16 accumulators of 32 lanes
// (and 4 of 64), and mma_ABt issues one MFMA or two mma.sync per sub-tile and k step.
Layout operand_layout(const Workgroup& wg, DType input, MatrixOperand which);

// ---- operations ----

// global[row0 .., col0 ..] -> stage `stage` of `dst`, by every thread of the workgroup. On
// CDNA, direct-to-LDS (buffer_load ... lds, 16 bytes a lane on gfx950, 4 on gfx942); on NVIDIA
// cp.async.cg, 16 bytes a lane. The destination is lane-linear, so each lane reads the global
// elements the shared layout puts there (the swizzle moves to the global side). Elements outside
// the tensor read as zeros (the buffer's range check; cp.async's zero source size). Returns the
// copy effect. On NVIDIA the copies count in groups: the kernel closes them with async_commit
// and waits with wait_counts{.vm = groups still allowed in flight}.
UOp load(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0);
// How many memory instructions (each counted by vmcnt) one load(st, gl) of `dst` issues per
// wave: what a wait must leave outstanding to cover every earlier fill but not this one.
int64_t fill_instructions(const Workgroup& wg, const st& dst);

// (row, col) -> (col, row) of a two-dimensional layout: a B operand (k x n) seen as the n x k
// tile that C = A * B^T reads.
Layout transposed(const Layout& l);

// Sub-tile (i, j) of a register tile read from stage `stage` of `src`, one vector per lane:
// `to_offset` maps ("register", "lane", "sub_row", "sub_col", "block") to the tile's "offset";
// each lane's registers are read in aligned pieces as wide as the layout allows (16 bytes at
// most). The shared body of load(rt, st) and load_kn.
UOp read_operand_part(const Workgroup& wg, const st& src, const UOp& stage, const Layout& to_offset, int64_t i, int64_t j, const UOp& block);

// A wave's register tile from stage `stage` of `src`: rows [block*rows, (block+1)*rows) and
// every column, in the layout of `operand` (A: rows are M, cols k; B: rows are N, cols k, the
// transposed B of C = A * B^T). Each lane's vector is one aligned LDS read of up to 16 bytes,
// its index and width taken from the layouts. `block` is wave-uniform.
rt load(const Workgroup& wg, const st& src, const UOp& stage, MatrixOperand operand, int64_t rows, const UOp& block);

// c = 0. Returns the accumulator after the stores.
acc zero(const acc& c, const Workgroup& wg);

// c += a * b^T for register tiles a (M x K) and b (N x K), one MFMA (two mma.sync on NVIDIA,
// one per 8 columns) per 16x16 sub-tile of c and k step. `loops` are the ranges the update repeats in (the K loop): the accumulator is
// read as it is after the previous iteration; with no loops, one update. Returns the accumulator
// after the update. With `priority` >= 0, the wave runs its MFMAs at that priority (s_setprio;
// HipKittens raises it to 1 around each MFMA cluster so that the other waves' memory
// instructions still issue) and returns to 0 after them.
acc mma_ABt(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority = -1);

// ---- attention: loads and stores through the accumulator layout, row statistics, maps ----

// c[r, col] = global[row0 + r, col0 + col] as fp32 (zeros outside the tensor), each lane
// reading the elements the accumulator layout gives it. Returns the accumulator after the loads.
acc load(const Workgroup& wg, const acc& c, const gl& src, const UOp& row0, const UOp& col0);

// Stage `stage` of `dst` holds global[row0 + r, col0 + c] at (c, r): a dst.cols x dst.rows block
// of the tensor, transposed. Plain loads and stores by every thread (each thread reads
// consecutive columns of a row, coalesced, and writes them down a column of the tile). A tile
// read after it (dst.after({effect})) gets its barrier from the pipeline. Use: V (keys x d) for
// O = P * V, which mma_ABt takes as V^T (d x keys), the B operand rows being n. Elements outside
// the tensor read as zeros. Returns the store effect.
UOp load_transposed(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0);

// Stage `stage` of `dst` at (row0 + r, col0 + c) = c[r, c] cast to the tile's dtype, placed by
// the tile's layout: plain LDS stores, one element a store (a lane's registers are different
// rows of one column, not a contiguous vector). How an fp32 accumulator in the C layout becomes
// an A operand: the C layout (row = 4*(l/16)+e, col = l%16) is not the A layout (row = l%16, k
// = 8*(l/16)+e on gfx950), so the values go through shared memory and come back with
// load(wg, dst.after({effect}), stage, MatrixOperand::A, ...), which the pipeline puts after
// a barrier. row0, col0 are wave-uniform, and the caller keeps the accumulator inside the tile
// (row0 + c.rows <= dst.rows, col0 + c.cols <= dst.cols). Returns the store effect.
UOp store(const Workgroup& wg, const st& dst, const UOp& stage, const acc& c, const UOp& row0, const UOp& col0);

// The maximum (row_max) or sum (row_sum) of each row of c over its columns: first over the
// lane's own sub-tiles, then across the lanes that hold the same rows, with xor shuffles on
// the lane bits the layout maps to columns (lanes 1, 2, 4, 8 apart in the 16x16 C layout).
rv row_max(const Workgroup& wg, const acc& c);
rv row_sum(const Workgroup& wg, const acc& c);

// Elementwise, into a fresh accumulator (a new REG buffer; the input is not changed):
// map: f(c[r, col]); sub_row / mul_row / div_row: c[r, col] - v[r], * v[r], / v[r];
// exp2: 2^c[r, col] (v_exp_f32 on CDNA). The row vector must come from an accumulator of
// the same rows and layout.
acc map(const acc& c, const std::function<UOp(const UOp&)>& f);
acc sub_row(const acc& c, const rv& v);
acc mul_row(const acc& c, const rv& v);
acc div_row(const acc& c, const rv& v);
acc exp2(const acc& c);

// global[row0 + r, col0] = v[r] for the rows inside the tensor, written by the one lane of each
// row group whose column lane bits are zero. A kernel's closing statement (ended over the
// hardware ranges), like store(gl, acc).
UOp store(const Workgroup& wg, const gl& dst, const rv& v, const UOp& row0, const UOp& col0);

// global[row0 + r, col0 + c] = epilogue(c[r, c]) cast to the tensor's dtype, where inside the
// tensor (ragged edges are masked). The kernel's closing statement: ended over the hardware
// ranges.
UOp store(const Workgroup& wg, const gl& dst, const acc& c, const UOp& row0, const UOp& col0,
          const std::function<UOp(const UOp&)>& epilogue = nullptr);

}  // namespace weft::tile
