#include "weft/kernels/tiles_hopper.h"

#include "tiles_internal.h"

namespace weft::tile {
using detail::shape_text;

namespace {

void require_hopper(const Workgroup& wg, const std::string& op) {
  if (wg.arch() != "sm_90" && wg.arch() != "sm_90a")
    throw Error(op + ": Hopper's TMA, mbarrier and wgmma operations need an sm_90 workgroup, not '" + wg.arch() + "'");
}

// A TMA coordinate: an int32 value as it is, an index cast (the caller keeps it below 2^31).
UOp coordinate(const UOp& x) { return x.dtype() == dtypes::int32 ? x : x.cast(dtypes::int32); }

// The element of stage `stage` (at tile row `row`, column 0; null: row 0): where a TMA box
// starts.
UOp stage_row(const st& t, const UOp& stage, const UOp& row = UOp()) {
  const UOp start = stage * t.size();
  return t.buffer[row.is_null() ? start : start + row * t.cols];
}

// Whether `c` is all of a warpgroup_accumulator's buffer (not a subtile window of it): wgmma writes
// a slab's cols / 2 registers as one run of the buffer.
bool whole_warpgroup_accumulator(const acc& c) {
  UOp root = c.buffer;
  while (root.op() != Op::PLACEHOLDER && !root.src().empty()) root = root.src(0);
  const std::vector<int64_t> shape = root.static_shape();
  return c.elements == 8 && c.first_tile_row == 0 && c.first_tile_col == 0 && shape.size() == 3 && shape[0] == c.tiles_m() && shape[1] == c.tiles_n();
}

// A constant stage must be one of the tile's.
void require_stage(const st& t, const UOp& stage, const std::string& op) {
  if (stage.is_const() && (stage.const_int() < 0 || stage.const_int() >= t.stages))
    throw Error(op + ": stage " + wide_to_string(stage.const_int()) + " of a tile of " + std::to_string(t.stages) + " stages");
}

void require_tma_source(const gl& src, const std::string& op) {
  if (src.first_row.node())
    throw Error(op + ": a TMA copy addresses its tensor's whole buffer (one tensor map a buffer), not a row window of it");
}

}  // namespace

Warpgroup warpgroup(const Workgroup& wg) {
  require_hopper(wg, "warpgroup");
  if (wg.wave_size() != 32 || wg.wave_cols() != Warpgroup::warps)
    throw Error("warpgroup: a warpgroup is a row of 4 warps of 32 lanes; this workgroup's wave grid is " + shape_text(wg.wave_rows(), wg.wave_cols()) +
                " of " + std::to_string(wg.wave_size()) + " lanes");
  return {wg.wave_row(), wg.wave_col(), wg.wave_col() * wg.wave_size() + wg.lane()};
}

// ---- mbarriers ----

UOp mbarriers::operator[](int64_t i) const { return buffer[constant(Wide(i))]; }

mbarriers mbarrier_array(int64_t count) {
  if (count < 1) throw Error("mbarrier_array: " + std::to_string(count) + " barriers; at least one");
  return {alloc_shared({count}, dtypes::uint64), count};
}

std::vector<UOp> init(const mbarriers& bars, int64_t arrivals) {
  std::vector<UOp> inits;
  for (int64_t i = 0; i < bars.count; ++i) inits.push_back(mbarrier_init(bars[i], arrivals));
  return inits;
}

Ring::Use Ring::use(const UOp& step) const { return {step % stages, ((step / stages) % 2).cast(dtypes::int32)}; }

Ring::Use Ring::use(const UOp& trip, const UOp& per_trip, const UOp& k, int64_t offset) const {
  if (offset < -stages || offset > stages)
    throw Error("Ring::use: an offset of " + std::to_string(offset) + " steps; -" + std::to_string(stages) + " .. " + std::to_string(stages) + " with " +
                std::to_string(stages) + " stages");
  // step = trip * per_trip + k + offset is congruent, modulo 2 * stages, to this non-negative m;
  // its stage is m % stages and its parity (m / stages) % 2, as step's are.
  const int64_t period = 2 * stages;
  const UOp m = (trip % period) * (per_trip % period) + k + ((offset % period) + period) % period;
  return {m % stages, ((m / stages) % 2).cast(dtypes::int32)};
}

Ring stage_ring(int64_t stages, int64_t readers) {
  if (stages < 1) throw Error("stage_ring: " + std::to_string(stages) + " stages; at least one");
  if (readers < 1) throw Error("stage_ring: " + std::to_string(readers) + " readers release a stage; at least one");
  return {stages, readers, mbarrier_array(stages), mbarrier_array(stages)};
}

std::vector<UOp> init(const Ring& ring) {
  std::vector<UOp> inits;
  for (int64_t s = 0; s < ring.stages; ++s) {
    inits.push_back(mbarrier_init(ring.full[s], 1));
    inits.push_back(mbarrier_init(ring.empty[s], ring.readers));
  }
  return inits;
}

UOp acquire(const Ring& ring, const Ring::Use& use, const std::vector<UOp>& after) { return mbarrier_wait(ring.empty[use.stage], use.parity ^ 1, after); }

UOp expect_bytes(const Ring& ring, const UOp& stage, int64_t bytes, const std::vector<UOp>& after) {
  if (bytes < 1 || bytes >= (int64_t{1} << 20)) throw Error("expect_bytes: " + std::to_string(bytes) + " bytes; an mbarrier phase counts 1 .. 2^20 - 1");
  return mbarrier_arrive_expect_tx(ring.full[stage], constant(Wide(bytes), dtypes::int32), after);
}

UOp wait(const Ring& ring, const Ring::Use& use, const std::vector<UOp>& after) { return mbarrier_wait(ring.full[use.stage], use.parity, after); }

std::vector<UOp> release(const Ring& ring, const UOp& stage, const std::vector<UOp>& after, int64_t cluster) {
  const UOp empty = ring.empty[stage];
  if (cluster < 1) throw Error("release: a cluster of " + std::to_string(cluster) + " CTAs");
  if (cluster == 1) return {mbarrier_arrive_warp(empty, after)};
  std::vector<UOp> arrivals;
  for (int64_t r = 0; r < cluster; ++r)
    arrivals.push_back(mbarrier_arrive_cluster(empty, constant(Wide(r), dtypes::int32), arrivals.empty() ? after : std::vector<UOp>{arrivals.back()}));
  return arrivals;
}

TurnOrder turn_order(int64_t parties, int64_t arrivals) {
  if (parties < 2) throw Error("turn_order: " + std::to_string(parties) + " parties; turns need at least two");
  if (arrivals < 1) throw Error("turn_order: " + std::to_string(arrivals) + " arrivals pass a turn; at least one");
  return {mbarrier_array(parties), parties, arrivals};
}

std::vector<UOp> init(const TurnOrder& turns) { return init(turns.bars, turns.arrivals); }

namespace {
void require_turns(const TurnOrder& turns, const std::string& op) {
  if (turns.parties < 2) throw Error(op + ": a TurnOrder of " + std::to_string(turns.parties) + " parties; make it with turn_order(parties >= 2, ...)");
}
}  // namespace

// Party p's turn t is the (t * parties + p)-th of all. bars[p] completes its phase k when party
// p - 1 passes its turn k (p >= 1) or k + 1 (p = 0, after the last party): so party p >= 1 waits
// for phase t (parity t % 2) and party 0 for phase t - 1 (parity (t + 1) % 2; for t = 0 the
// phase before the first, which a fresh barrier reports complete).
UOp wait_turn(const TurnOrder& turns, const UOp& party, const UOp& turn, const std::vector<UOp>& after) {
  require_turns(turns, "wait_turn");
  const UOp first = min(party, party.const_like(Wide(1)));  // 1 for every party but 0
  return mbarrier_wait(turns.bars[party], ((turn + 1 - first) % 2).cast(dtypes::int32), after);
}

UOp pass_turn(const TurnOrder& turns, const UOp& party, const std::vector<UOp>& after) {
  require_turns(turns, "pass_turn");
  return mbarrier_arrive_warp(turns.bars[(party + 1) % turns.parties], after);
}

// ---- TMA ----

WgmmaSwizzle tma_swizzle(const st& t) {
  const std::string what = "a " + shape_text(t.rows, t.cols) + " " + t.dtype.name() + " tile";
  if (t.dtype.itemsize() != 1 && t.dtype.itemsize() != 2 && t.dtype.itemsize() != 4)
    throw Error("tma_swizzle: " + what + ": TMA's swizzles here take 1-, 2- and 4-byte elements");
  // A swizzled TMA box is one swizzle row wide; its rows are whole 8-row periods of the swizzle.
  const int64_t row_bytes = t.cols * t.dtype.itemsize();
  if (row_bytes != 128 && row_bytes != 64)
    throw Error("tma_swizzle: " + what + " has rows of " + std::to_string(row_bytes) +
                " bytes; a TMA/wgmma tile is one swizzle row wide (128 bytes in swizzle_128b, 64 in swizzle_64b): split K into tiles that wide");
  if (t.rows % 8 || t.rows > 256)
    throw Error("tma_swizzle: " + what + " has " + std::to_string(t.rows) + " rows; a TMA box has whole 8-row swizzle periods, at most 256 rows");
  const SharedSwizzle kind = row_bytes == 128 ? SharedSwizzle::swizzle_128b : SharedSwizzle::swizzle_64b;
  if (!(t.layout == shared_tile(kind, t.rows, t.cols, t.dtype)))
    throw Error("tma_swizzle: " + what + " with rows of " + std::to_string(row_bytes) + " bytes is not in " + std::string(swizzle_name(kind)) +
                ", the swizzle TMA writes and wgmma reads at that width");
  return kind == SharedSwizzle::swizzle_128b ? WgmmaSwizzle::B128 : WgmmaSwizzle::B64;
}

int64_t stage_bytes(const st& t) { return t.size() * t.dtype.itemsize(); }

MatrixLayoutArg wgmma_layout(const st& t) {
  const WgmmaSwizzle s = tma_swizzle(t);
  return {16, 8 * swizzle_row_bytes(s), s};
}

UOp load(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0, const UOp& bar,
         const std::vector<UOp>& after) {
  require_hopper(wg, "load(st, gl) by TMA");
  require_tma_source(src, "load(st, gl) by TMA");
  require_stage(dst, stage, "load(st, gl) by TMA");
  return tma_load(stage_row(dst, stage), src.buffer, bar, coordinate(row0), coordinate(col0), dst.rows, dst.cols, tma_swizzle(dst),
                  after);
}

UOp load_slice(const Workgroup& wg, const st& dst, const UOp& stage, const UOp& first, int64_t rows, const gl& src, const UOp& row0,
               const UOp& col0, const UOp& bar, const UOp& ctas, const std::vector<UOp>& after) {
  require_hopper(wg, "load_slice");
  require_tma_source(src, "load_slice");
  require_stage(dst, stage, "load_slice");
  const std::string tile = "a " + shape_text(dst.rows, dst.cols) + " tile";
  if (rows < 8 || rows % 8 || rows > dst.rows)
    throw Error("load_slice: a slice of " + std::to_string(rows) + " rows of " + tile + "; whole 8-row swizzle periods, inside the tile");
  if (first.is_const() && first.const_int() % 8)
    throw Error("load_slice: a slice from row " + wide_to_string(first.const_int()) + " of " + tile + " does not start a whole 8-row swizzle period");
  if (first.is_const() && (first.const_int() < 0 || first.const_int() + rows > dst.rows))
    throw Error("load_slice: rows " + wide_to_string(first.const_int()) + " .. " + wide_to_string(first.const_int() + rows - 1) + " lie outside " + tile);
  return tma_load_multicast(stage_row(dst, stage, first), src.buffer, bar, coordinate(row0) + coordinate(first), coordinate(col0), rows, dst.cols,
                            tma_swizzle(dst), ctas, after);
}

// ---- wgmma ----

acc warpgroup_accumulator(const Workgroup& wg, int64_t rows, int64_t cols) {
  warpgroup(wg);
  if (rows < 64 || rows % 64 || cols < 16 || cols > 256 || (cols & (cols - 1)))
    throw Error("warpgroup_accumulator: a " + shape_text(rows, cols) +
                " tile; a warpgroup's accumulator is 64-row slabs of m64nN wgmmas, N a power of two from 16 to 256");
  return accumulator(wg, rows / Warpgroup::warps, cols);
}

acc slab(const acc& c, int64_t h) { return subtile(c, 16 * h, 16, 0, c.cols); }

UOp warp_row(const Workgroup& wg, int64_t h) { return warpgroup(wg).warp * 16 + h * 64; }

UOp mma_ABt(const Workgroup& wg, const acc& c, const st& a, const UOp& a_stage, const UOp& a_row0, const st& b, const UOp& b_stage,
            const UOp& accumulate, const std::vector<UOp>& after) {
  warpgroup(wg);
  const auto refuse = [&](const std::string& why) {
    throw Error("mma_ABt (wgmma): " + why + " (A " + shape_text(a.rows, a.cols) + " " + a.dtype.name() + ", B " + shape_text(b.rows, b.cols) + " " +
                b.dtype.name() + ", the warpgroup's accumulator " + shape_text(c.rows * Warpgroup::warps, c.cols) + ")");
  };
  if (!(a.dtype == b.dtype)) refuse("A and B are of one dtype");
  if (!whole_warpgroup_accumulator(c)) refuse("the accumulator is a whole warpgroup_accumulator (wgmma writes a slab's registers in one run)");
  if (b.rows != c.cols) refuse("B's rows are the accumulator's columns");
  if (a.cols != b.cols) refuse("A and B have the same K");
  const int64_t slabs = c.rows / 16;  // 64-row slabs of the warpgroup's tile: one m64 wgmma each
  if (slabs * 64 > a.rows) refuse("A's tile has fewer rows than the accumulator's " + std::to_string(slabs * 64));
  // A descriptor starts at a whole 8-row period of the swizzle (its base offset field is 0).
  if (a_row0.is_const() && a_row0.const_int() % 8) refuse("A's rows from " + wide_to_string(a_row0.const_int()) + " do not start a whole 8-row swizzle period");
  if (a_row0.is_const() && (a_row0.const_int() < 0 || a_row0.const_int() + slabs * 64 > a.rows))
    refuse("A's rows " + wide_to_string(a_row0.const_int()) + " .. " + wide_to_string(a_row0.const_int() + slabs * 64 - 1) + " lie outside its tile");
  require_stage(a, a_stage, "mma_ABt (wgmma)");
  require_stage(b, b_stage, "mma_ABt (wgmma)");
  const MatrixLayoutArg a_layout = wgmma_layout(a), b_layout = wgmma_layout(b);
  const int64_t slice = 32 / a.dtype.itemsize();  // a wgmma's K: 32 bytes
  const UOp fence = wgmma_fence(after, /*shared_writes=*/false);
  const UOp kk = wg.range(a.cols / slice, AxisType::UNROLL);
  // Slice kk starts 32 bytes further into each row: the descriptor's start moves, the swizzle (a
  // function of the address bits) stays the hardware's.
  const UOp b_at = b.buffer.after(after)[b_stage * b.size() + kk * slice];
  const UOp scale_d = accumulate.is_null() ? UOp() : accumulate | (kk > 0);
  std::vector<UOp> mmas;
  for (int64_t slab = 0; slab < slabs; ++slab) {
    const UOp rows = slab == 0 ? a_row0 : a_row0 + slab * 64;
    const UOp a_at = a.buffer.after(after)[a_stage * a.size() + rows * a.cols + kk * slice];
    mmas.push_back(wgmma(c.element(slab, 0, 0), a_at, b_at, c.cols, a.dtype, a_layout, b_layout, {mmas.empty() ? fence : mmas.back()}, scale_d));
  }
  // The MMAs' loop and its commit, both: a when() around the returned group guards all of them.
  const UOp issued = group(mmas).end({kk});
  return group({issued, wgmma_commit({issued})});
}

UOp mma_ABt(const Workgroup& wg, const acc& c, const rt& a, const st& b, const UOp& b_stage, const UOp& accumulate, const std::vector<UOp>& after) {
  warpgroup(wg);
  const DType input = a.parts.empty() ? dtypes::void_ : a.parts[0].dtype().element();
  const auto refuse = [&](const std::string& why) {
    throw Error("mma_ABt (wgmma, A from registers): " + why + " (A " + shape_text(a.rows, a.cols) + " " + input.name() + " a warp, B " +
                shape_text(b.rows, b.cols) + " " + b.dtype.name() + ", the warpgroup's accumulator " + shape_text(c.rows * Warpgroup::warps, c.cols) + ")");
  };
  if (input.itemsize() != 2) refuse("A from registers takes 2-byte inputs here (bf16, f16)");
  if (!(input == b.dtype)) refuse("A and B are of one dtype");
  if (!whole_warpgroup_accumulator(c)) refuse("the accumulator is a whole warpgroup_accumulator (wgmma writes a slab's registers in one run)");
  if (b.rows != c.cols) refuse("B's rows are the accumulator's columns");
  if (a.major != Major::row || a.sub_rows != 16 || a.sub_cols != 16) refuse("A is a row-major register tile of 16 x 16 sub-tiles (M x K)");
  // One 64-row slab: a register tile does not say which rows it holds, and a warp's rows of two
  // slabs (16w .. and 64 + 16w ..) are not what one load of 32 rows gives (32w ..), so a
  // multi-slab A could be the wrong rows silently.
  if (c.rows != 16) refuse("A from registers takes a 64-row accumulator (one slab): a register tile does not record which rows of a taller A it holds");
  if (a.rows != c.rows) refuse("A holds the warp's 16 rows of the accumulator's slab");
  if (a.cols != b.cols) refuse("A and B have the same K");
  if (!(a.layout == operand_layout(wg, input, MatrixOperand::A))) refuse("A's registers are not in wgmma's A fragment layout (mma.sync's m16n8k16 A, per warp)");
  require_stage(b, b_stage, "mma_ABt (wgmma, A from registers)");
  const MatrixLayoutArg b_layout = wgmma_layout(b);
  const UOp fence = wgmma_fence(after, /*shared_writes=*/false);
  std::vector<UOp> mmas;
  for (int64_t kk = 0; kk < a.cols / 16; ++kk) {
    // Slice kk starts 32 bytes further into each of B's rows (the descriptor's start moves).
    const UOp b_at = b.buffer.after(after)[b_stage * b.size() + kk * 16];
    const UOp scale_d = kk == 0 ? accumulate : UOp();  // later slices always accumulate
    for (int64_t slab = 0; slab < c.rows / 16; ++slab)
      mmas.push_back(wgmma_registers(c.element(slab, 0, 0), a.operand(slab, kk), b_at, c.cols, input, b_layout, {mmas.empty() ? fence : mmas.back()}, scale_d));
  }
  const UOp issued = group(mmas);
  return group({issued, wgmma_commit({issued})});
}

UOp mma_wait(int64_t pending, const std::vector<UOp>& after) { return wgmma_wait(pending, after); }

// ---- TMA stores ----

UOp store(const Workgroup& wg, const gl& dst, const st& src, const UOp& stage, const UOp& row0, const UOp& col0, const std::vector<UOp>& after) {
  require_hopper(wg, "store(gl, st) by TMA");
  require_tma_source(dst, "store(gl, st) by TMA");
  require_stage(src, stage, "store(gl, st) by TMA");
  return tma_store(stage_row(src, stage), dst.buffer, coordinate(row0), coordinate(col0), src.rows, src.cols, tma_swizzle(src), after);
}

UOp store_wait(int64_t pending, const std::vector<UOp>& after) { return tma_store_wait(pending, after); }

}  // namespace weft::tile
