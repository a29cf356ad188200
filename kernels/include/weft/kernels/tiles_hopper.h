// The tile layer on Hopper (sm_90a): the warpgroup scope, mbarrier rings as typed
// synchronization, TMA loads and stores of shared tiles, and warpgroup MMAs (wgmma) from shared
// tiles into accumulators. The same types as everywhere (gl, st, acc: tiles.h); what changes is
// how the operations lower: a shared tile in the 128-byte (or 64-byte) swizzle is a TMA box as it
// lands and a wgmma operand as its descriptor reads it, and a warpgroup's accumulator is, warp by
// warp, the acc the mma.sync kernels use.
//
//   Workgroup wg("sm_90", {ctas}, /*wave_rows=*/2, /*wave_cols=*/4, /*wave_size=*/32);
//   const Warpgroup g = warpgroup(wg);                          // row 0 produces, row 1 consumes
//   const st as = shared(128, 64, dtypes::bfloat16, SharedSwizzle::swizzle_128b, 4);
//   const Ring ring = stage_ring(4, /*readers=*/4);             // each consumer warp releases
//   const UOp ready = barrier({init(ring)});
//   // producer (one thread): acquire, expect, load
//   const Ring::Use use = ring.use(step);
//   const UOp freed = acquire(ring, use, {ready});
//   const UOp expect = expect_bytes(ring, use.stage, stage_bytes(as) + stage_bytes(bs), {freed});
//   const UOp fill = load(wg, as, use.stage, a, row0, k0, ring.full[use.stage], {expect});
//   // consumer warpgroup: wait, MMAs, release
//   const UOp landed = wait(ring, use, {ready});
//   const acc c = warpgroup_accumulator(wg, 64, 256);            // 16 x 256 a warp
//   const UOp issued = mma_ABt(wg, c, as, use.stage, a_row0, bs, use.stage, step > 0, {landed});
//   const UOp read = mma_wait(0, {issued});
//   release(ring, use.stage, {read});
//
// docs/tiles.md ("Hopper") walks through them; gemm/hopper_gemm.cpp is written with them.
#pragma once

#include <cstdint>
#include <vector>

#include "weft/kernels/tiles.h"

namespace weft::tile {

// ---- the warpgroup scope ----

// A warpgroup: 4 consecutive warps that issue wgmma together. On a workgroup whose wave grid is
// rows x 4 (32-lane warps, row-major, so a grid row is 4 consecutive warps), warpgroup i is grid
// row i. `index` and `warp` are warp-uniform.
struct Warpgroup {
  UOp index;   // which warpgroup of the workgroup (the grid row)
  UOp warp;    // the calling warp's index in it, 0..3 (the grid column)
  UOp thread;  // the calling thread's index in it, 0..127
  static constexpr int64_t warps = 4, threads = 128;
};
// Throws weft::Error unless the workgroup is an sm_90 one of 32-lane warps in rows of 4.
Warpgroup warpgroup(const Workgroup& wg);

// ---- mbarriers: typed synchronization ----

// `count` mbarrier objects in one LOCAL uint64 buffer (PTX: mbarrier). Each counts arrivals (and
// TMA's transaction bytes) per phase; a wait names the phase by its parity, so it tells apart only
// the barrier's current phase and the one before (a waiter must never run two phases ahead).
struct mbarriers {
  UOp buffer;
  int64_t count = 0;
  UOp operator[](const UOp& i) const { return buffer[i]; }
  UOp operator[](int64_t i) const;
};
mbarriers mbarrier_array(int64_t count);
// Every barrier of `bars` expects `arrivals` arrivals a phase. The inits, one statement each:
// publish them with a barrier() (or cluster_sync) before the barriers' first use.
std::vector<UOp> init(const mbarriers& bars, int64_t arrivals);

// A ring of `stages` stages that a producer fills asynchronously and consumers read: stage s's
// full[s] completes a phase when its copies have landed (one arrival, the producer's expect_bytes,
// plus the bytes), its empty[s] when its readers have released it (`readers` arrivals). Steps are
// counted over the whole kernel (across every block a persistent workgroup computes): step t uses
// stage t % stages for the (t / stages)-th time.
struct Ring {
  int64_t stages = 0, readers = 0;
  mbarriers full, empty;
  struct Use {
    UOp stage;   // index
    UOp parity;  // int32: the parity of the phase the stage's barriers are in for this use
  };
  Use use(const UOp& step) const;
  // The same for step trip * per_trip + k + offset (a persistent workgroup's K step k of its
  // trip-th block; offset a constant, -stages .. stages), computed from residues modulo
  // 2 * stages, which are all a stage and a parity depend on: every value stays below
  // (2 * stages)^2 + per_trip, so the arithmetic stays 32-bit where trip * per_trip itself may
  // not fit (lower_index_dtype widens what its bounds cannot prove).
  Use use(const UOp& trip, const UOp& per_trip, const UOp& k, int64_t offset = 0) const;
};
Ring stage_ring(int64_t stages, int64_t readers);
// The inits of the ring's barriers (full: 1 arrival, empty: `readers`).
std::vector<UOp> init(const Ring& ring);
// The producer's side. acquire: wait until the stage of a step's use (ring.use(step)) was
// released by its previous use (a fresh ring's first use of each stage waits for parity 1, which
// a fresh barrier reports complete). expect_bytes: the first thread arrives on full[stage] and
// announces `bytes` of copies (stage_bytes of every tile the step fills). Return the effects.
UOp acquire(const Ring& ring, const Ring::Use& use, const std::vector<UOp>& after);
UOp expect_bytes(const Ring& ring, const UOp& stage, int64_t bytes, const std::vector<UOp>& after);
// The consumers' side. wait: every thread waits until the stage of a step's use has landed. release: one
// arrival a warp on empty[stage], after `after` (the reads of the stage complete for the whole
// warp: an mma_wait, which is warp-collective); in a cluster of `cluster` CTAs, on the stage's
// empty barrier of every CTA of it (each refills part of the stage by multicast). Every arrival is
// returned: a when() around a release must list them all.
UOp wait(const Ring& ring, const Ring::Use& use, const std::vector<UOp>& after);
std::vector<UOp> release(const Ring& ring, const UOp& stage, const std::vector<UOp>& after, int64_t cluster = 1);

// Parties (warpgroups) that take turns in a fixed order, 0, 1, .., parties - 1, 0, 1, ..: CUTLASS's
// ordered sequence barrier. A ping-pong GEMM's consumers take turns at issuing a block's MMAs so
// that no consumer waits on a ring stage two phases ahead of it (a wait names a phase by parity).
// bars[p] completes a phase when party p - 1 (mod parties) passes a turn, with `arrivals`
// arrivals (the passing party's warps, one each).
struct TurnOrder {
  mbarriers bars;
  int64_t parties = 0, arrivals = 0;
};
TurnOrder turn_order(int64_t parties, int64_t arrivals);
std::vector<UOp> init(const TurnOrder& turns);
// Party `party` (warpgroup-uniform) waits for its turn number `turn` (its own count, from 0):
// until the party before it has passed the turn before. Party 0's first turn waits for nothing
// (parity 1 of a fresh barrier, complete at once).
UOp wait_turn(const TurnOrder& turns, const UOp& party, const UOp& turn, const std::vector<UOp>& after);
// Each warp of `party` arrives once on the next party's barrier, after `after`.
UOp pass_turn(const TurnOrder& turns, const UOp& party, const std::vector<UOp>& after);

// ---- TMA: shared tiles in a hardware swizzle ----

// The swizzle of a tile TMA and wgmma take: swizzle_128b (rows of 128 bytes: 64 bf16, 128 fp8)
// or swizzle_64b (rows of 64 bytes). Throws weft::Error naming the tile for another swizzle or a
// row of another width (a TMA box with a swizzle is at most one swizzle row wide; wider K tiles
// are several tiles side by side).
WgmmaSwizzle tma_swizzle(const st& t);
// The bytes of one stage of `t`: what a full barrier expects for a load of the whole stage.
int64_t stage_bytes(const st& t);
// The wgmma descriptor fields of a K-major tile in its swizzle: 8-row core-matrix groups one
// swizzle period (8 rows) apart.
MatrixLayoutArg wgmma_layout(const st& t);

// Stage `stage` of `dst` = src[row0 .., col0 ..] by one TMA copy (the workgroup's first thread
// issues it), completing on the mbarrier `bar` (ring.full[stage]), which must expect its
// stage_bytes. Elements past the tensor's edges land as zeros. row0 and col0 are index values
// that fit int32 (TMA's coordinates). The tensor's one tensor map serves every TMA copy of its
// buffer, so they all use one box: dst's rows x cols. Throws weft::Error off sm_90, for a tile
// tma_swizzle refuses, or a tensor that is a row window (TMA addresses the whole buffer).
UOp load(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0, const UOp& bar,
         const std::vector<UOp>& after = {});
// Rows [first, first + rows) of the same copy, multicast: they land at their place in stage
// `stage` of `dst` in every CTA of the cluster whose bit is set in `ctas` (int32 mask, bit r for
// rank r) and count on each one's `bar`. A cluster's CTAs that share a tile each load a slice of
// it; each full barrier still expects the whole stage. `first` (index) must be a multiple of 8
// rows (the swizzle's period, so that the slice lands as the whole box would); the tensor map's
// box is then rows x cols, the same for every TMA copy of the buffer.
UOp load_slice(const Workgroup& wg, const st& dst, const UOp& stage, const UOp& first, int64_t rows, const gl& src, const UOp& row0,
               const UOp& col0, const UOp& bar, const UOp& ctas, const std::vector<UOp>& after = {});

// ---- wgmma: warpgroup MMAs from shared tiles ----

// A warpgroup's fp32 accumulator of rows x cols (rows a multiple of 64, cols a power of two from
// 16 to 256): as wgmma holds it, warp w of the warpgroup holds rows 64h + 16w .. 64h + 16w + 15 of
// each 64-row slab h, in the layout of mma.sync's 16 x 16 C sub-tiles side by side (wgmma's
// accumulator register 8j + e is register e of sub-tile j; tests/kernels/test_tiles_hopper.cpp
// checks it against the catalog's wgmma_m64nNk16_accumulator). So the value is the calling warp's
// acc of rows / 4 x cols (tiles.h): the elementwise acc operations (maps, row and column
// statistics) apply to it as it is. The ones that place sub-tile row i at row0 + 16 i (store and
// load with a tensor or a shared tile, map_at) take it a slab at a time: slab(c, h) at
// row0 + warp_row(wg, h) (with 64 rows, the whole accumulator at row0 + warp_row(wg, 0)).
acc warpgroup_accumulator(const Workgroup& wg, int64_t rows, int64_t cols);
// The calling warp's 16 rows of 64-row slab `h` of a warpgroup accumulator (a subtile window), and
// where they lie in the warpgroup's tile: 64 * h + 16 * warp.
acc slab(const acc& c, int64_t h);
UOp warp_row(const Workgroup& wg, int64_t h);

// c (a warpgroup_accumulator) += A * B^T over one stage's K, by the calling warpgroup: A is rows [a_row0, a_row0 + 4 * c.rows) of stage `a_stage` of
// `a` (M x K), B stage `b_stage` of `b` (N x K, c.cols rows), both K-major in a TMA swizzle, read
// through descriptors. Issues wgmma.fence, one m64nNk16 (k32 for fp8) wgmma per 64-row slab and
// 32 bytes of K, and commits them as one group; returns the MMAs and the commit as one group (a
// when() around it guards them all). a_row0 starts a whole 8-row period of the swizzle (a
// descriptor's base offset is 0; a constant one is checked). `accumulate` (a bool value; null:
// true) is the step's scale-d: where false the first K slice overwrites c (no zeroing).
// The MMAs run asynchronously: read c, or release the stages, only after mma_wait. The fence is
// the register fence only: tiles TMA filled are published by their full barrier; tiles threads
// wrote need wgmma_fence() and a barrier first. Throws weft::Error naming the operation for
// shapes that do not make c, operands of different dtypes, a tile tma_swizzle refuses, or a
// constant stage outside a tile.
UOp mma_ABt(const Workgroup& wg, const acc& c, const st& a, const UOp& a_stage, const UOp& a_row0, const st& b, const UOp& b_stage,
            const UOp& accumulate, const std::vector<UOp>& after);
// The same with A from registers, for a 64-row accumulator (one slab): `a` is the calling warp's
// register tile of A, its 16 rows x K (warp w holds rows 16w .. 16w + 15, as wgmma's A fragment
// has it: per warp, mma.sync's m16n8k16 A layout, which load(rt, st) and load(rt, gl) with
// MatrixOperand::A at row0 + warp_row(wg, 0) give on NVIDIA, and as_operand gives from a 64-row
// warpgroup accumulator). Taller accumulators are refused: a register tile does not record
// which rows it holds, and a warp's rows of two slabs are not one load's consecutive rows.
// 2-byte inputs (bf16, f16); one wgmma.mma_async with A's four registers per slab and K slice of
// 16, B (c.cols x K) from stage `b_stage` of `b` through its descriptor. Returns the MMAs and the
// commit as one group. Throws weft::Error naming the operation for a tile of another shape,
// layout or dtype.
UOp mma_ABt(const Workgroup& wg, const acc& c, const rt& a, const st& b, const UOp& b_stage, const UOp& accumulate, const std::vector<UOp>& after);
// Wait until at most `pending` committed groups of this warpgroup's MMAs are still running.
UOp mma_wait(int64_t pending, const std::vector<UOp>& after);

// ---- TMA stores ----

// global[row0 .., col0 ..] = stage `stage` of `src` (a tile in a TMA swizzle, written by this
// warp's threads and ordered before through `after`), by a warp's TMA store: elements past the
// tensor's edges are not written. Every lane of the warp runs it (tma_store, builder.h). The
// store runs on asynchronously: store_wait(pending) before the tile is written again.
UOp store(const Workgroup& wg, const gl& dst, const st& src, const UOp& stage, const UOp& row0, const UOp& col0, const std::vector<UOp>& after);
UOp store_wait(int64_t pending, const std::vector<UOp>& after);

}  // namespace weft::tile
