// The HipKittens-style tile layer: a workgroup as a grid of waves, global tensors (gl), shared
// tiles (st), register tiles of one wave (rt) and fp32 accumulators (acc), each a thin value
// over DSL nodes plus a Layout that says where every element lives. Operations build DSL
// graphs; those that write memory return the effect, those that read return values.
//
//   Workgroup wg(arch, {tiles_n, tiles_m}, /*wave_rows=*/2, /*wave_cols=*/4);
//   gl a = global(1, m, k, dtypes::bfloat16);
//   st as = shared(256, 64, dtypes::bfloat16, SharedSwizzle::st_16x32, /*stages=*/2);
//   UOp fill = load(wg, as, stage, a, row0, col0);         // direct-to-LDS on CDNA
//   rt ar = load(wg, as.after({fill, barrier}), stage, MatrixOperand::A, 128, wg.wave_row());
//   acc c = mma_ABt(c, ar, br);
//   rt bk = load(wg, bs_kn.after({ready}), stage, Major::col, 64, wg.wave_col());  // K x N
//   c = mma_AB(wg, c, ar, bk, {ko});                         // mma_AtB, mma_AtBt likewise
//   WaveGroup producers = wave_rows(wg, constant(Wide(0)), 1);  // one row of waves fills
//   UOp fill_b = load(wg, producers, bs, stage, b, row0, col0);
//
// docs/tiles.md walks through the types and the GEMM written with them.
#pragma once

#include <functional>
#include <optional>
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
  // 0 .. waves()-1, wave-uniform: the hardware wave index (on CDNA wave w runs on SIMD w % 4).
  UOp wave() const { return wave_row_ * wave_cols_ + wave_col_; }
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

// A global tensor: rows x cols, row-major, sizes known at run time. Row r of the tensor is row
// first_row + r of its buffer (null: r itself), so that one buffer can hold several tensors
// stacked by rows (the heads of attention's [heads * seq, d] inputs): row_window(t, first, n) is a
// window over rows first .. first + n - 1 of t, and every tile operation on it reads zeros and
// writes nothing outside the window, exactly as at a tensor's own edges.
struct gl {
  UOp buffer;
  UOp rows, cols;
  UOp first_row = UOp();  // index; null for a tensor that starts at its buffer's row 0
  // The buffer's element of the tensor's (r, c), and whether (r, c) lies inside the tensor.
  UOp at(const UOp& r, const UOp& c) const;
  UOp inside(const UOp& r, const UOp& c) const;
};
gl global(int64_t slot, const UOp& rows, const UOp& cols, DType dtype);
// Rows [first, first + count) of `t` as a tensor of their own (a window; nested windows add up).
// The caller keeps the window inside t (first + count <= t.rows): reads past t's buffer would
// be out of bounds.
gl row_window(const gl& t, const UOp& first, const UOp& count);

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

// Which way a register tile lies relative to the product it feeds (HipKittens' row_l and col_l):
// row: the tile is (M or N) x K, a lane's consecutive k values run along a row (A of A * B,
// either operand of A * B^T); col: the tile is K x (M or N), a lane's k values run down a
// column (B of A * B, A of A^T * B). The registers hold the same MFMA operand vectors either
// way (on CDNA the A layout of m x k and the B layout of k x n are one another's transpose); the
// orientation says which of the tile's dimensions is k, so that an mma can check and index it.
enum class Major { row, col };

// A register tile of one wave: rows x cols as a grid of MFMA operand sub-tiles of sub_rows x
// sub_cols (16 x k when row major, k x 16 when col major). `layout` places one sub-tile:
// ("register", "lane") -> ("row", "col") in the tile's own orientation. parts[i * (cols /
// sub_cols) + j] is sub-tile (i, j) of that grid: one vector value per lane.
struct rt {
  std::vector<UOp> parts;
  int64_t rows, cols;
  int64_t sub_rows, sub_cols;
  Layout layout;
  Major major = Major::row;
  UOp part(int64_t i, int64_t j) const { return parts.at(static_cast<size_t>(i * (cols / sub_cols) + j)); }
  // The operand's M (or N) extent, its K extent and the MFMA's k.
  int64_t mn() const { return major == Major::row ? rows : cols; }
  int64_t k() const { return major == Major::row ? cols : rows; }
  int64_t k_step() const { return major == Major::row ? sub_cols : sub_rows; }
  // The operand vector of M (or N) sub-tile i at k step kk, whatever the orientation.
  UOp operand(int64_t i, int64_t kk) const { return major == Major::row ? part(i, kk) : part(kk, i); }
  // The same values as they are after `effects`: what uses them (an mma) is written after the
  // effects, while the reads themselves stay where they are. A ping-pong reads a tile, names its
  // parts in the barrier that ends the memory cluster (barrier({..., parts}), which issues the
  // reads before it) and multiplies tile.after({that barrier}).
  rt after(const std::vector<UOp>& effects) const;
};

// K steps [first, first + count) of a register tile: the sub-tiles there, in the same layout
// (no data moves; the sub-tiles left out are not read unless used elsewhere). A step's MFMAs
// on part of the K extent, as a ping-pong splits a step's products into clusters. Throws
// weft::Error for steps outside the tile.
rt k_slice(const rt& t, int64_t first, int64_t count);
// M (or N) sub-tiles [first, first + count) of a register tile, every k step: the rows of A (or
// B) a product into subtile(c, ...) of the same rows (or columns) takes. No data moves. Throws
// weft::Error for sub-tiles outside the tile.
rt mn_slice(const rt& t, int64_t first, int64_t count);

// The same registers seen the other way round: a col-major K x N tile as the row-major N x K
// tile (and back). No data moves.
rt transpose(const rt& t);

// An fp32 accumulator of one wave: rows x cols in 16x16 MFMA C sub-tiles, a REG buffer
// [tiles_m][tiles_n][elements] per lane. A sub-tile window of a larger accumulator (subtile)
// shares its buffer: its sub-tile (i, j) is the buffer's (first_tile_row + i, first_tile_col + j).
struct acc {
  UOp buffer;
  int64_t rows, cols, elements;
  Layout layout;  // one sub-tile: ("register", "lane") -> ("row", "col")
  int64_t first_tile_row = 0, first_tile_col = 0;
  int64_t tiles_m() const { return rows / 16; }
  int64_t tiles_n() const { return cols / 16; }
  // Register e of sub-tile (i, j): what every tile operation reads and writes.
  UOp element(int64_t i, int64_t j, int64_t e) const;
  // The accumulator as it is after `effects` (a loop the caller ended around its updates).
  acc after(const std::vector<UOp>& effects) const;
  // The effect that made this accumulator (the stores of the zero or the product that returned
  // it), for a loop body that lists its statements itself. Throws weft::Error for a fresh one.
  UOp written() const;
};
acc accumulator(const Workgroup& wg, int64_t rows, int64_t cols);
// Rows [row0, row0 + rows) and columns [col0, col0 + cols) of `c`, whole 16x16 sub-tiles: the
// same registers, as an accumulator of their own (its positions count from the window's
// corner). A product into it updates only those sub-tiles, as a ping-pong that splits a step's
// MFMAs by rows of C updates one half and then the other. Throws weft::Error for a window that
// is not whole sub-tiles inside `c`.
acc subtile(const acc& c, int64_t row0, int64_t rows, int64_t col0, int64_t cols);

// One value per row of an accumulator, held the way the accumulator holds its rows: lane l
// keeps, for each of the tiles_m sub-tile rows i, the value of every row its registers cover
// (register e of sub-tile row i is row i*16 + layout.row(e, l)), and the lanes whose lane bits
// differ only in column bits hold the same values (16x16 C: rows 4*(l/16)+e, e < 4, replicated
// over the 16 lanes l % 16). values[i * elements + e] is the row of register e; values, not
// memory (a reduction's result lives in VGPRs). Where registers also select columns (NVIDIA's
// mma.sync C layout: register bits 0 and 2 are columns, bit 1 is 8 rows), the registers of one
// row hold the same value.
struct rv {
  std::vector<UOp> values;
  int64_t rows, elements;
  Layout layout;  // the accumulator's sub-tile layout the rows follow
  UOp at(int64_t i, int64_t e) const { return values.at(static_cast<size_t>(i * elements + e)); }
};

// One value per column of an accumulator, held the way the accumulator holds its columns: in
// the 16x16 C layout a lane's registers all lie in one column (l % 16 of each sub-tile column),
// so lane l keeps one value per sub-tile column j, the column j*16 + layout.col(0, l), and the
// lanes whose lane bits differ only in row bits (l, l ^ 16, l ^ 32, l ^ 48) hold the same
// values. values[j]; values, not memory.
struct cv {
  std::vector<UOp> values;
  int64_t cols;
  Layout layout;  // the accumulator's sub-tile layout the columns follow
  UOp at(int64_t j) const { return values.at(static_cast<size_t>(j)); }
};

// A shared vector: `stages` copies of `length` elements in one LOCAL buffer (stage s at s *
// length), for row or column statistics that several waves exchange (each wave's partial row
// maximum, say, combined after a barrier).
struct sv {
  UOp buffer;
  int64_t length, stages;
  DType dtype;
  // The vector as it is after `effects` (its stores and the barrier that publishes them).
  sv after(const std::vector<UOp>& effects) const;
};
sv shared_vector(int64_t length, DType dtype, int64_t stages = 1);

// A set of waves that works together, e.g. the 4 waves of one row of a 2 x 4 grid filling a
// shared tile while the other row computes (HipKittens' 8-wave ping-pong). `member` is true in
// the waves of the group (wave-uniform), `wave` is the calling wave's index in it (0 .. waves-1
// in members; meaningless elsewhere).
struct WaveGroup {
  UOp member;
  UOp wave;
  int64_t waves;
};
// Every wave of the workgroup (member is the constant true).
WaveGroup all_waves(const Workgroup& wg);
// The waves of wave-grid rows [first_row, first_row + rows), row-major inside: `first_row` is
// wave-uniform (a constant, or a loop counter for groups that take turns). Throws weft::Error
// when rows is not in 1 .. wg.wave_rows() or a constant first_row puts the group outside the grid.
WaveGroup wave_rows(const Workgroup& wg, const UOp& first_row, int64_t rows);

// The matrix instruction the tile layer uses for `input` (bfloat16, float16) on the
// workgroup's target: the MFMA 16x16x32 on gfx950 and 16x16x16 on gfx942 (64-lane waves);
// mma.sync m16n8k16 on NVIDIA ("sm_XY", 32-lane warps). On CDNA also the target's fp8
// (mfma_fp8: e4m3 on gfx950, CDNA3's e4m3 fnuz on gfx942): gfx950's f8f6f4 MFMA 16x16x128 (its
// fp8 operands in two runs of 16 k a lane, layouts.h), gfx942's MFMA 16x16x32 fp8.
// Throws weft::Error for another target, input or wave size.
WmmaArg mma_shape(const Workgroup& wg, DType input);
// The fp8 format of `arch`'s MFMAs (gfx942: float8_e4m3fnuz; gfx950: float8_e4m3).
DType mfma_fp8(std::string_view arch);

// The operand sub-tile the tile types are made of, ("register", "lane") -> ("row", "col"), in
// the hardware's own orientation: A 16 x k (M x K), B k x 16 (K x N), C 16 x 16 (k: mma_shape's).
// On CDNA one MFMA's operand (mfma_operand; its A and B layouts are one another's transpose). On
// NVIDIA two mma.sync m16n8k16 side by side along n (mma_m16n8k16_operand): A is one
// instruction's, and B's and C's register bit 2 selects the second instruction's half (n 8-15),
// so the products issue one MFMA or two mma.sync per sub-tile and k step.
Layout operand_layout(const Workgroup& wg, DType input, MatrixOperand which);

// ---- operations ----

// global[row0 .., col0 ..] -> stage `stage` of `dst`, by every thread of the workgroup. On
// CDNA, direct-to-LDS (buffer_load ... lds, 16 bytes a lane on gfx950, 4 on gfx942): the
// destination is lane-linear, so each lane reads the global elements the shared layout puts
// there (the swizzle moves to the global side). Elements outside the tensor read as zeros
// (the buffer's range check). Returns the copy effect.
UOp load(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0);
// How many memory instructions (each counted by vmcnt) one load(st, gl) of `dst` issues per
// wave: what a wait must leave outstanding to cover every earlier fill but not this one.
int64_t fill_instructions(const Workgroup& wg, const st& dst);
// The same copy by the waves of `group` only: each member wave moves waves()/group.waves times
// as much, the others issue nothing (the rounds are a loop whose trip count is 0 outside the
// group, a wave-uniform branch, since an async copy cannot be predicated lane by lane). With
// all_waves(wg), exactly load(wg, dst, ...) above. Returns the copy effect.
UOp load(const Workgroup& wg, const WaveGroup& group, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0);
// vmcnt instructions per member wave of one group-scoped load(st, gl).
int64_t fill_instructions(const Workgroup& wg, const WaveGroup& group, const st& dst);

// (row, col) -> (col, row) of a two-dimensional layout: a B operand (k x n) seen as the n x k
// tile that C = A * B^T reads.
Layout transposed(const Layout& l);

// Sub-tile (i, j) of a register tile read from stage `stage` of `src`, one vector per lane:
// `to_offset` maps ("register", "lane", "sub_row", "sub_col", "block") to the tile's "offset";
// each lane's registers are read in aligned pieces as wide as the layout allows (16 bytes at
// most), or, where those are narrower and the layouts fit it (docs/tiles.md says when):
// - on gfx950, 4 two-byte values at a time with ds_read_b64_tr_b16 (transposed across each
//   16-lane group);
// - on NVIDIA, all 8 two-byte values of an mma.sync operand with one ldmatrix.x4, as stored or
//   transposed (matrix_read_layout).
// The shared body of load(rt, st) and load_kn.
UOp read_operand_part(const Workgroup& wg, const st& src, const UOp& stage, const Layout& to_offset, int64_t i, int64_t j, const UOp& block);

// The layout one ldmatrix.x4 (as stored, or with .trans) reads with, where it delivers the
// registers `to_offset` (("register", "lane", ...) -> "offset", 8 registers and 32 lanes) asks
// for: ("register" e, "lane" t, ...) -> the offset of value e of the 16-byte row lane t names.
// nullopt where the read does not fit (a row would not be 8 aligned consecutive elements).
std::optional<Layout> matrix_read_layout(const Layout& to_offset, bool transposed);

// A wave's register tile from stage `stage` of `src`: rows [block*rows, (block+1)*rows) and
// every column, in the layout of `operand` (A: rows are M, cols k; B: rows are N, cols k, the
// transposed B of C = A * B^T). Each lane's vector is one aligned LDS read of up to 16 bytes,
// its index and width taken from the layouts. `block` is wave-uniform.
rt load(const Workgroup& wg, const st& src, const UOp& stage, MatrixOperand operand, int64_t rows, const UOp& block);

// A wave's register tile in orientation `major` from stage `stage` of `src`:
// - Major::row: src is (M or N) x K; rows [block*extent, (block+1)*extent) and every column, an
//   extent x src.cols row-major tile (the load above);
// - Major::col: src is K x (M or N); columns [block*extent, (block+1)*extent) and every row, a
//   src.rows x extent col-major tile (B of A * B, A of A^T * B).
// Each lane reads its registers in aligned pieces as wide as the layouts allow: a row-major tile
// of a K-contiguous src is one 16-byte (gfx950) or 8-byte (gfx942) read per sub-tile, one
// ldmatrix.x4 on NVIDIA; a col-major tile keeps a lane's k values a row of src apart: on gfx950
// (2-byte elements) one ds_read_b64_tr_b16, the LDS read that transposes across 16 lanes, per 4
// values, on NVIDIA one ldmatrix.x4.trans per sub-tile, where the layouts allow it
// (read_operand_part), elsewhere each value its own 2-byte read. `block` is
// wave-uniform. Throws weft::Error for an extent
// that is not whole 16-wide operand sub-tiles of src, or a k extent that is not whole k steps.
// `operand` says which operand the tile feeds: on CDNA the registers are the same for A and B
// and it may be left out; on NVIDIA mma.sync's A and B layouts differ and leaving it out is an
// error.
rt load(const Workgroup& wg, const st& src, const UOp& stage, Major major, int64_t extent, const UOp& block,
        std::optional<MatrixOperand> operand = std::nullopt);

// A wave's rows x cols register tile in orientation `major` straight from global memory:
// element (r, c) is global[row0 + r, col0 + c], zeros outside the tensor. Each lane reads the
// elements its operand layout gives it, one masked 2-byte load each (a K-contiguous run is not
// known to be aligned or inside the tensor). Throws weft::Error for shapes that are not whole
// operand sub-tiles or a tensor dtype the MFMAs do not take.
rt load(const Workgroup& wg, const gl& src, Major major, int64_t rows, int64_t cols, const UOp& row0, const UOp& col0,
        std::optional<MatrixOperand> operand = std::nullopt);

// An accumulator's values as a register operand tile of `input`, without memory: each operand
// register is one accumulator register of the same lane, rounded to `input` (as store(st, acc)
// rounds). Where the C layout holds the operand (accumulator_feeds_operand): on NVIDIA, the C
// of two m16n8 products side by side is the A operand of m16n8k16, so flash attention's P feeds
// P V from the registers S = Q K^T left it in. A is the accumulator as M x K (row-major), B as
// K x N (col-major). Throws weft::Error where the layouts differ (CDNA's MFMA C is not its A or
// B: store to a shared tile and load(rt, st) instead), for MatrixOperand::C, or for a k extent
// that is not whole k steps.
bool accumulator_feeds_operand(const Workgroup& wg, DType input, MatrixOperand which);
rt as_operand(const Workgroup& wg, const acc& c, DType input, MatrixOperand which);

// c = 0. Returns the accumulator after the stores.
acc zero(const acc& c, const Workgroup& wg);

// The four products, c += op(A) * op(B), one MFMA per 16x16 sub-tile of c and k step. Each
// takes its operands in the orientation HipKittens gives them (an Error naming the operation
// otherwise); all four are one implementation reading operand(i, kk) of either orientation:
//   mma_AB:   a row-major M x K, b col-major K x N        c += a * b
//   mma_ABt:  a row-major M x K, b row-major N x K        c += a * b^T
//   mma_AtB:  a col-major K x M, b col-major K x N        c += a^T * b
//   mma_AtBt: a col-major K x M, b row-major N x K        c += a^T * b^T
// `loops` are the ranges the update repeats in (the K loop): the accumulator is read as it is
// after the previous iteration; with no loops, one update. `end` says who closes the loops:
// LoopEnd::closes (the default), the update itself, its body being this one update;
// LoopEnd::open, the caller, whose loop body holds more (a ping-pong's barriers and a second
// update that reads the returned accumulator with loops = {}) and is ended around all of it,
// group({..., c1.written(), ..., c2.written(), ...}).end(loops). Returns the accumulator after the
// update. With `priority` >= 0, the wave runs its MFMAs at that priority (s_setprio; HipKittens
// raises it to 1 around each MFMA cluster so that the other waves' memory instructions still
// issue) and returns to 0 after them. Throws weft::Error, naming the operation, for an operand
// of the wrong orientation or shapes that do not make c.
enum class LoopEnd { closes, open };
acc mma_AB(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority = -1,
           LoopEnd end = LoopEnd::closes);
acc mma_ABt(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority = -1,
            LoopEnd end = LoopEnd::closes);
acc mma_AtB(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority = -1,
            LoopEnd end = LoopEnd::closes);
acc mma_AtBt(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority = -1,
             LoopEnd end = LoopEnd::closes);

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

// A value's last step before a store: (value, row, col) -> the value to store, the row and
// column being where it lands in the destination tile. Null: the value itself.
using ElementEpilogue = std::function<UOp(const UOp& value, const UOp& row, const UOp& col)>;

// Stage `stage` of `dst` at (row0 + r, col0 + c) = epilogue(c[r, c], row0 + r, col0 + c) cast to
// the tile's dtype, placed by the tile's layout. On sm_90 and newer, a 2-byte tile whose layout keeps 8
// consecutive columns as one aligned 16-byte row takes each 16 x 16 sub-tile with one
// stmatrix.x4 (matrix_read_layout: stmatrix puts a lane's registers where ldmatrix, as stored,
// reads them from), where col0 is a constant multiple of 8; elsewhere plain LDS stores, one
// element a store (on CDNA a lane's registers are different rows of one column, not a
// contiguous vector). How an fp32 accumulator in the C layout becomes
// an A operand: the C layout (row = 4*(l/16)+e, col = l%16) is not the A layout (row = l%16, k
// = 8*(l/16)+e on gfx950), so the values go through shared memory and come back with
// load(wg, dst.after({effect}), stage, MatrixOperand::A, ...), which the pipeline puts after
// a barrier. row0, col0 are wave-uniform, and the caller keeps the accumulator inside the tile
// (row0 + c.rows <= dst.rows, col0 + c.cols <= dst.cols). Returns the store effect.
UOp store(const Workgroup& wg, const st& dst, const UOp& stage, const acc& c, const UOp& row0, const UOp& col0, const ElementEpilogue& epilogue = {});

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
// f(c[r, col], row0 + r, col0 + col) into a fresh accumulator: a map that knows where each
// element is (index expressions), for masks such as attention's causal mask.
acc map_at(const Workgroup& wg, const acc& c, const UOp& row0, const UOp& col0,
           const std::function<UOp(const UOp& x, const UOp& row, const UOp& col)>& f);

// Elementwise on row vectors: f(v[r]), and f(a[r], b[r]) for two vectors of the same rows and
// layout (an Error otherwise); fill_rows: a vector of `rows_of`'s rows, every value `value`.
rv map(const rv& v, const std::function<UOp(const UOp&)>& f);
rv map(const rv& a, const rv& b, const std::function<UOp(const UOp&, const UOp&)>& f);
rv fill_rows(const acc& rows_of, double value);

// ---- registers a loop carries from one iteration to the next ----
// A loop whose iterations update an accumulator or a row vector (flash attention's output and
// its running row maximum and sum) keeps them in REG buffers: it reads them as the previous
// iteration left them (c.after({loop}), read(s.after({loop}))), writes the new values back with
// assign, and ends the loop around the assignments; after the loop, c.after({the loop's end}).
//
//   acc o = zero(accumulator(wg, 16, 64), wg);
//   row_state m = hold(fill_rows(o, -INFINITY));
//   const UOp j = wg.range(steps, AxisType::LOOP);
//   const rv m_new = map(read(m.after({j})), row_max(wg, s), [](auto& a, auto& b) { return max(a, b); });
//   const UOp step = group({..., assign(o, new_o), assign(m, m_new)}).end({j});
//   const acc out = o.after({step});

// Row values held in registers: a REG buffer [rows / 16][elements] per lane, laid out as rv's
// values.
struct row_state {
  UOp buffer;
  int64_t rows, elements;
  Layout layout;
  // The values as they are after `effects` (the loop range: the previous iteration's).
  row_state after(const std::vector<UOp>& effects) const;
};
// A fresh row_state holding `init` (the buffer after its stores).
row_state hold(const rv& init);
// The values of `s`, read where its buffer's effects say.
rv read(const row_state& s);
// s = v; dst = src (element by element, the same shape and layout; an Error otherwise).
// Return the store effects.
UOp assign(const row_state& s, const rv& v);
UOp assign(const acc& dst, const acc& src);

// The maximum (col_max) or sum (col_sum) of each column of c over its rows: first over the
// lane's own registers and sub-tile rows, then across the lanes that hold the same columns,
// with xor shuffles on the lane bits the layout maps to rows (lanes 16 and 32 apart in the
// 16x16 C layout). Throws weft::Error for a layout whose registers span columns.
cv col_max(const Workgroup& wg, const acc& c);
cv col_sum(const Workgroup& wg, const acc& c);
// c[r, col] - v[col], * v[col], / v[col], into a fresh accumulator; the column vector must come
// from an accumulator of the same columns and layout.
acc sub_col(const acc& c, const cv& v);
acc mul_col(const acc& c, const cv& v);
acc div_col(const acc& c, const cv& v);

// Stage `stage` of `dst` at offset + r = v[r] (a row vector) or offset + col = v[col] (a column
// vector), cast to dst's dtype, written by one lane of each group of lanes that hold the same
// values. The caller keeps offset + v.rows (v.cols) <= dst.length when offset is not a constant.
// Returns the store effect; a read of it goes through dst.after({effect, barrier}).
UOp store(const Workgroup& wg, const sv& dst, const UOp& stage, const rv& v, const UOp& offset);
UOp store(const Workgroup& wg, const sv& dst, const UOp& stage, const cv& v, const UOp& offset);
// The row vector of `rows_of`'s rows (the column vector of its columns) read from stage `stage`
// of `src` at offset .., as fp32: every lane reads the values it holds.
rv load_rows(const Workgroup& wg, const sv& src, const UOp& stage, const acc& rows_of, const UOp& offset);
cv load_cols(const Workgroup& wg, const sv& src, const UOp& stage, const acc& cols_of, const UOp& offset);
// The same read straight from a global tensor, the layouts store(gl, rv) and store(gl, cv)
// write: v[r] = src[row0 + r, col0] (a column of the tensor) and v[c] = src[row0, col0 + c] (a
// row), as fp32, zeros outside the tensor. Every lane loads the values it holds (lanes holding
// the same row or column load the same address): per-row and per-column scales of an epilogue.
rv load_rows(const Workgroup& wg, const gl& src, const acc& rows_of, const UOp& row0, const UOp& col0);
cv load_cols(const Workgroup& wg, const gl& src, const acc& cols_of, const UOp& row0, const UOp& col0);
// Between a shared vector and a column of a global tensor (the layout of per-row statistics,
// as store(gl, rv) writes them): dst[i] = global[row0 + i, col0] (zeros outside the tensor), and
// global[row0 + i, col0] = src[i] where inside, plain loads and stores by the workgroup's
// threads. Each returns its store effect; store(gl, sv) is a kernel's closing statement (ended
// over the hardware ranges).
UOp load(const Workgroup& wg, const sv& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0);
UOp store(const Workgroup& wg, const gl& dst, const sv& src, const UOp& stage, const UOp& row0, const UOp& col0);

// global[row0 + r, col0] = v[r] for the rows inside the tensor, written by the one lane of each
// row group whose column lane bits are zero. A kernel's closing statement (ended over the
// hardware ranges), like store(gl, acc).
UOp store(const Workgroup& wg, const gl& dst, const rv& v, const UOp& row0, const UOp& col0);
// global[row0, col0 + c] = v[c] for the columns inside the tensor (a row of the tensor), written
// by the lane of each column group whose row lane bits are zero.
UOp store(const Workgroup& wg, const gl& dst, const cv& v, const UOp& row0, const UOp& col0);

// global[row0 + r, col0 + c] = epilogue(c[r, c]) cast to the tensor's dtype, where inside the
// tensor (ragged edges are masked). The kernel's closing statement: ended over the hardware
// ranges.
UOp store(const Workgroup& wg, const gl& dst, const acc& c, const UOp& row0, const UOp& col0,
          const std::function<UOp(const UOp&)>& epilogue = nullptr);

}  // namespace weft::tile
