#include "weft/gemm/hopper_gemm.h"

#include <optional>

#include "weft/gemm/block_gemm.h"
#include "weft/kernels/layout_expr.h"
#include "weft/kernels/layouts.h"
#include "weft/kernels/tiles.h"
#include "weft/kernels/tiles_hopper.h"

namespace weft::gemm {

namespace {

using S = HopperGemmShape;  // the schedule's constants; its block and ring come with each kernel
constexpr const char* kArch = "sm_90";

// The block (row, column) of linear block id `id`, in L2-friendly order: groups of group_rows
// block rows (fewer in the last group), walked column by column, so that the blocks running at
// once share A's rows and B's columns in L2. (A walk never reaches a group past C's last block
// row; the max says so, so that `rows` is a provably positive divisor, which the linearizer
// hoists out of the K loop with the rest of the block's origin.)
std::pair<UOp, UOp> grouped_block(const UOp& id, const UOp& tiles_m, const UOp& tiles_n) {
  const UOp per_group = tiles_n * S::group_rows;
  const UOp first_row = (id / per_group) * S::group_rows;
  const UOp rows = max(min(tiles_m - first_row, constant(Wide(S::group_rows))), constant(Wide(1)));
  const UOp in_group = id % per_group;
  return {first_row + in_group % rows, in_group / rows};
}

// One K step's elements of `input`: k_step_bytes of a row.
int64_t k_step(const HopperGemmShape& shape, DType input) { return shape.k_step_bytes / input.itemsize(); }

// The ring of shared-memory stages between the producer and the consumers (tiles_hopper.h): A's
// and B's K-step tiles, each row one K step's k_step_bytes in the swizzle of that width
// (swizzle_128b or swizzle_64b: TMA writes them, wgmma reads them through descriptors), and a
// full and an empty mbarrier per stage.
struct Ring {
  tile::st a, b;     // stages x block_m x k_step, stages x block_n x k_step
  tile::Ring sync;   // full[s]: the producer's arrival and the bytes; empty[s]: the readers' warps
  // Ping-pong only (no barriers otherwise): the consumers' turns at issuing a block's MMAs.
  tile::TurnOrder turns;
  int64_t cluster;   // CTAs sharing B's box (HopperGemmSpec::cluster); each loads 1/cluster of it
  HopperGemmShape shape;
  int64_t b_box_rows() const { return shape.block_n / cluster; }
};

// full[s] expects one arrival (the producer's expect_bytes) plus the TMA bytes (in a cluster, B's
// share from every CTA of it); empty[s] every warp of the consumers that read the stage (both, or
// one in ping-pong), of every CTA of the cluster, since the stage's B box is refilled by all of
// them; a turn is passed by the consumer's 4 warps.
Ring make_ring(DType input, int64_t cluster, const HopperGemmShape& shape) {
  const tile::SharedSwizzle swizzle = shape.k_step_bytes == 128 ? tile::SharedSwizzle::swizzle_128b : tile::SharedSwizzle::swizzle_64b;
  const int64_t k = k_step(shape, input), readers = shape.ping_pong ? 1 : S::consumers;
  const tile::st a = tile::shared(shape.block_m, k, input, swizzle, shape.stages), b = tile::shared(shape.block_n, k, input, swizzle, shape.stages);
  const tile::Ring sync = tile::stage_ring(shape.stages, cluster * readers * S::warpgroup / 32);
  return {a, b, sync, shape.ping_pong ? tile::turn_order(S::consumers, S::warpgroup / 32) : tile::TurnOrder{}, cluster, shape};
}

// A barrier (a cluster barrier, where the other CTAs' copies and arrivals will reach this CTA's
// barriers) publishes the initialized mbarriers.
UOp init_ring(const Ring& ring) {
  std::vector<UOp> inits = tile::init(ring.sync);
  for (const UOp& i : tile::init(ring.turns)) inits.push_back(i);
  return ring.cluster > 1 ? cluster_sync({group(inits)}) : barrier({group(inits)});
}

// The grouped form's plan (HopperGemmSpec::grouped_block_rows): the expert of each row block.
struct Experts {
  UOp block_expert;  // GLOBAL int32 [ROWS / block_rows]; null: not grouped
  UOp n;             // B's rows per expert
  int64_t block_rows = 0;
};

// The workgroups' walk over the blocks of C. The walk's unit is `cluster` blocks stacked in one
// block column (a cluster's CTAs take one each, rank r the r-th, and share B's box): cluster c
// (of CTAS / cluster) takes units c, c + CTAS / cluster, ... (CTAS workgroups, as many as the GPU
// runs at once), each unit's place from grouped_block over the units. A unit past C's last block
// row computes zeros and stores nothing (C's edges clip it), so that every CTA of a cluster walks
// as many blocks. In the grouped form CTAS is the number of blocks: each workgroup takes its own
// block, or none where the block's expert is -1 (a walk that skipped blocks would lose the ring's
// stage parities).
struct Tiles {
  UOp units, steps;  // walk units (blocks of C, cluster per unit); K steps per block
  UOp tiles_m, tiles_n, ctas;
  int64_t cluster = 1;
  HopperGemmShape shape;
  Experts experts;
  UOp cluster_id(const tile::Workgroup& wg) const { return wg.block(0) / cluster; }
  UOp rank(const tile::Workgroup& wg) const { return wg.block(0) % cluster; }
  // C's (row, column) of the trip's block. A trip's unit is below `units` (trips() bounds the
  // walk), which the ranges cannot see: their bound on trip * CTAS passes 2^31. The min says it,
  // so the divisions of the block's place are 32-bit (lower_index_dtype narrows the min).
  std::pair<UOp, UOp> origin(const tile::Workgroup& wg, const UOp& trip) const {
    const UOp unit = min(cluster_id(wg) + trip * (ctas / cluster), units - 1);
    const auto [unit_row, col] = grouped_block(unit, tiles_of(tiles_m, cluster), tiles_n);
    return {(unit_row * cluster + rank(wg)) * shape.block_m, col * shape.block_n};
  }
  // The grouped form's expert of the block at C's row `row0`: one load, the same in every thread.
  UOp expert(const UOp& row0) const { return experts.block_expert[row0 / experts.block_rows].load(); }
  UOp trips(const tile::Workgroup& wg) const {
    if (experts.block_expert.is_null()) return (units - cluster_id(wg) + ctas / cluster - 1) / (ctas / cluster);
    const UOp e = expert(origin(wg, constant(Wide(0), dtypes::index)).first);
    return (e >= e.const_like(Wide(0))).cast(dtypes::index);
  }
  // The row of B's box for the block at (row0, col0): col0, past expert e's first row e * N in the
  // grouped form. The box may run into the next expert's rows (or zeros past the last): they feed
  // only C's columns >= N, which the TMA store clips.
  UOp b_row(const UOp& row0, const UOp& col0) const {
    if (experts.block_expert.is_null()) return col0;
    return expert(row0).cast(dtypes::index) * experts.n + col0;
  }
};

// The rank's slice of B's box for a K step, multicast to every CTA of the cluster (the swizzle is
// a function of the address: a slice at an offset of the stage that is a multiple of the
// swizzle's period, 1024 bytes for 128-byte rows and 512 for 64-byte ones, lands as the whole box
// would; a slice is 128 rows, 16 or 8 KiB).
UOp multicast_b(const tile::Workgroup& wg, const Ring& ring, const tile::gl& b, const Tiles& tiles, const UOp& stage, const UOp& b_row0, const UOp& k0,
                const UOp& expect) {
  const int64_t rows = ring.b_box_rows();
  const UOp every_cta = constant(Wide((int64_t{1} << ring.cluster) - 1), dtypes::int32);
  return tile::load_slice(wg, ring.b, stage, tiles.rank(wg) * rows, rows, b, b_row0, k0, ring.sync.full[stage], every_cta, {expect});
}

// The row of B's box for the block at (row0, col0), as the int32 TMA coordinate. In the grouped
// form it comes from a load of the block's expert, which the linearizer would write where it is
// first used, inside the K loop (a load is never hoisted out of a loop: the loop's effects might
// change what it reads), delaying every K step's TMA load of B by a global load; it is loaded
// once a block into a register instead.
UOp block_b_row(const Tiles& tiles, const UOp& row0, const UOp& col0) {
  const UOp b_row = tiles.b_row(row0, col0).cast(dtypes::int32);
  if (tiles.experts.block_expert.is_null()) return b_row;
  const UOp held = placeholder({1}, dtypes::int32, fresh_id(), AddrSpace::REG);
  const UOp zero = constant(Wide(0), dtypes::index);
  return held.after({held[zero].store(b_row)})[zero].load();
}

// The producer: for each block and K step, wait until the stage's previous contents were
// consumed (the first use of each stage waits for parity 1, which a fresh mbarrier reports
// complete), then load A's and B's boxes into it. It runs ahead of the consumers by up to
// `stages` steps, into the next block while they store this one. In a cluster, the CTA of rank r
// loads the r-th of B's `cluster` row slices and multicasts it into the stage of every CTA of
// the cluster (their blocks share B's columns); its full barrier counts the whole stage's bytes.
UOp produce(const tile::Workgroup& wg, const Ring& ring, const tile::gl& a, const tile::gl& b, const Tiles& tiles, const UOp& ready) {
  const UOp trip = wg.range(tiles.trips(wg), AxisType::LOOP);
  const auto [row0, col0] = tiles.origin(wg, trip);
  const UOp b_row0 = block_b_row(tiles, row0, col0);
  const UOp ks = wg.range(tiles.steps, AxisType::LOOP);
  const tile::Ring::Use use = ring.sync.use(trip, tiles.steps, ks);  // K step trip * steps + ks
  const UOp stage = use.stage;
  const UOp freed = tile::acquire(ring.sync, use, {ready});
  const UOp expect = tile::expect_bytes(ring.sync, stage, tile::stage_bytes(ring.a) + tile::stage_bytes(ring.b), {freed});
  const UOp k0 = ks * ring.a.cols;
  const UOp load_a = tile::load(wg, ring.a, stage, a, row0, k0, ring.sync.full[stage], {expect});
  const UOp load_b = ring.cluster == 1 ? tile::load(wg, ring.b, stage, b, b_row0, k0, ring.sync.full[stage], {expect})
                                       : multicast_b(wg, ring, b, tiles, stage, b_row0, k0, expect);
  return group({freed, expect, load_a, load_b}).end({ks, trip});
}

// A consumer's release of `stage` after `after` (its MMAs reading the stage waited): one arrival a
// warp, the MMAs being the warpgroup's, complete for every warp. In a cluster, on the stage's
// empty barrier of every CTA of it (each refills a slice of B here; mbarrier_arrive_cluster
// orders the stage's reads, all a release needs here). Every arrival is returned: a when() must
// list them all, since one only named by another would run unconditionally.
std::vector<UOp> release_stage(const Ring& ring, const UOp& stage, const UOp& after) { return tile::release(ring.sync, stage, {after}, ring.cluster); }

// Ping-pong's turns. A wait for a stage's full barrier names the phase by its parity, which tells
// apart only the barrier's current phase and the one before: a waiter must never be two phases
// ahead of the barrier. Cooperative consumers walk the K steps together, so they never are; in
// ping-pong, consumer 1's first K step is a whole block ahead of consumer 0's (at 4096^3 its wait
// passed on consumer 0's phase and the kernel hung). So the consumers take turns at issuing a
// block's MMAs (tile::TurnOrder, CUTLASS's ordered math barrier): consumer c waits for its turn
// before its block's K loop and passes it once it has issued the block's last MMAs. It has then
// waited on every full barrier of its block, so each stage's barrier is at most one phase behind
// the other consumer's next wait.

// One block's K loop of a consumer: wait for the stage; for each of the step's K slices of 32
// bytes (step_k / mma_k), an m64 x block_n MMA on each 64 rows of A the consumer computes (the
// block's first overwrites the accumulator: no zeroing); commit them as a group, wait until at
// most mma_groups groups are in flight and release the stage of the step mma_groups back.
// Returns the loop followed by the wait for the last group: the accumulator holds the block
// after it.
//
// Cooperative, the step released may be one of the previous block's last mma_groups steps,
// released here in the next block's first steps (with one group, 1-3% faster than releasing it
// after the loop, docs/nvidia.md; those stages stay held through the epilogue). In ping-pong the
// previous block's last step was the other consumer's, so a block releases its own last stage
// after its last wait, and passes the turn (wait_turn) once its MMAs are issued.
UOp consume_block(const tile::Workgroup& wg, const Ring& ring, const tile::acc& accumulator, const UOp& consumer, const UOp& trip, const Tiles& tiles,
                  const UOp& ready) {
  const HopperGemmShape& shape = ring.shape;
  const UOp ks = wg.range(tiles.steps, AxisType::LOOP);
  const tile::Ring::Use use = ring.sync.use(trip, tiles.steps, ks);  // K step trip * steps + ks
  const UOp stage = use.stage;
  const UOp landed = tile::wait(ring.sync, use, {ready});
  // The consumer's rows of the stage's A: its half of the block, or all of its own block.
  const UOp a_row0 = shape.ping_pong ? constant(Wide(0), dtypes::index) : consumer * 64;
  const UOp issued = tile::mma_ABt(wg, accumulator, ring.a, stage, a_row0, ring.b, stage, ks > 0, {landed});
  // Keep mma_groups groups in flight: the group mma_groups steps back has read its stage.
  const int64_t in_flight = shape.mma_groups;
  const UOp held = tile::mma_wait(in_flight, {issued});
  const UOp done = ring.sync.use(trip, tiles.steps, ks, -in_flight).stage;
  // step >= in_flight, with every value below 2 * in_flight^2 + steps: trip and steps are capped
  // at in_flight (a trip of in_flight or more steps is past it, as is a full trip of in_flight).
  const UOp capped = min(trip, ks.const_like(Wide(in_flight))) * min(tiles.steps, ks.const_like(Wide(in_flight))) + ks;
  const UOp loop = when(shape.ping_pong ? ks > 0 : capped >= in_flight, release_stage(ring, done, held)).end({ks});
  if (!shape.ping_pong) return tile::mma_wait(0, {loop});
  const UOp drained = tile::mma_wait(0, {tile::pass_turn(ring.turns, consumer, {loop})});
  return group(release_stage(ring, ring.sync.use(trip + 1, tiles.steps, ks.const_like(Wide(0)), -1).stage, drained));
}

// The epilogue's inputs (float32 GLOBAL buffers; null where absent).
struct EpilogueInputs {
  HopperEpilogue spec;
  UOp bias, scale_a, scale_b;  // [N]; [1] or [M]; [1] or [N]
};

// `columns`: B's rows (N, or E * N in the grouped form), the length of a per-column input.
EpilogueInputs epilogue_inputs(const HopperEpilogue& e, bool grouped, const UOp& m, const UOp& columns) {
  const HopperGemmSlots slots = hopper_gemm_slots(e, grouped);
  const UOp one = constant(Wide(1), dtypes::index);
  EpilogueInputs in{e, {}, {}, {}};
  if (e.bias) in.bias = placeholder(std::vector<UOp>{columns}, dtypes::float32, slots.bias);
  if (e.scale != OperandScale::None) {
    const bool per_row = e.scale == OperandScale::PerRow;
    in.scale_a = placeholder(std::vector<UOp>{per_row ? m : one}, dtypes::float32, slots.scale_a);
    in.scale_b = placeholder(std::vector<UOp>{per_row ? columns : one}, dtypes::float32, slots.scale_b);
  }
  return in;
}

// x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))), exp through exp2: x * sigmoid(2u).
UOp gelu_tanh(const UOp& x) {
  constexpr double two_sqrt_2_over_pi_log2e = 2.0 * 0.7978845608028654 * 1.4426950408889634;
  const UOp u = x * (1.0 + 0.044715 * x * x);
  return x * recip(1.0 + exp2(u * -two_sqrt_2_over_pi_log2e));
}

// The epilogue of one fp32 sum at C's row `row`, from B's row `b_row` (C's column, past the
// expert's first row in the grouped form), both inside their tensors (the loads need it).
UOp apply_epilogue(const EpilogueInputs& in, UOp v, const UOp& row, const UOp& b_row) {
  const UOp zero = constant(Wide(0), dtypes::index);
  if (in.spec.scale == OperandScale::PerTensor) v = v * (in.scale_a[zero].load() * in.scale_b[zero].load());
  if (in.spec.scale == OperandScale::PerRow) v = v * (in.scale_a[row].load() * in.scale_b[b_row].load());
  if (in.spec.bias) v = v + in.bias[b_row].load();
  if (in.spec.activation == Activation::Relu) v = max(v, v.const_like(0.0));
  if (in.spec.activation == Activation::Gelu) v = gelu_tanh(v);
  return v;
}

// The epilogue's staging in shared memory. A consumer warp holds 16 rows of each 64-row half of
// its accumulator; it stores them a chunk of columns at a time (128 bytes of C's dtype: a box TMA
// writes in the 128-byte swizzle), through two boxes of its own, 16 rows x 128 bytes each, which
// chunks take in turn: the warp fills one while TMA still reads the other. 32 KiB in all, so the
// ring keeps its 160-192 KiB (4 stages of 48 KiB or 40, 6 of 32, 8 of 24) within the 227 KiB a
// block may have.
struct Staging {
  static constexpr int64_t warp_rows = 16, boxes = 2;
  // A box is a 16-row tile of 128-byte rows of C's dtype in swizzle_128b; the tile's stages are
  // the boxes, consumers x 4 warps x 2.
  tile::st boxes_tile;
  int64_t cols;  // a box's columns
  explicit Staging(DType output)
      : boxes_tile(tile::shared(warp_rows, 128 / output.itemsize(), output, tile::SharedSwizzle::swizzle_128b, S::consumers * (S::warpgroup / 32) * boxes)),
        cols(boxes_tile.cols) {}
};

// Value v (0 .. cols / 2) of 64-row slab `slab` of a warpgroup accumulator, after `effects`:
// wgmma's register v is register v % 8 of the warp's 16 x 16 sub-tile v / 8 (tiles_hopper.h).
UOp slab_value(const tile::acc& c, const std::vector<UOp>& effects, const UOp& slab, const UOp& v) {
  return c.buffer.after(effects)[{slab, v / c.elements, v % c.elements}].load();
}

// Where a consumer's accumulator goes: C's (row, column) of its first element and the m64 x
// block_n fragment of each 64-row half (value e of half h is slab_value(h, e)).
struct BlockOrigin {
  UOp row0, col0;  // the consumer's rows of the block start at row0
  tile::Layout fragment;
  int64_t values;  // a half's registers, block_n / 2
};

// The consumer's accumulator into C, through the epilogue, converted to C's dtype. For each
// 64-row half, each warp writes a chunk of its 16 rows into a staging box and TMA stores the box
// (elements past C's edges are not written; the epilogue's loads there are clamped into C). The
// stores run on while the warpgroup starts its next block; a box is written again once its
// previous store has read it.
UOp store_block(const tile::Workgroup& wg, const tile::gl& c, const EpilogueInputs& epilogue, const Tiles& tiles, const tile::acc& accumulator,
                const Staging& staging, const UOp& consumer, const UOp& finished, const BlockOrigin& at) {
  const UOp warp_boxes = (consumer * (S::warpgroup / 32) + wg.wave_col()) * Staging::boxes;  // the warp's first box
  const int64_t chunks = tiles.shape.block_n / staging.cols;
  UOp last = finished;
  for (int64_t half = 0, written = 0; half < tiles.shape.halves(); ++half) {
    const UOp warp_row0 = at.row0 + tile::warp_row(wg, half);
    for (int64_t chunk = 0; chunk < chunks; ++chunk, ++written) {
      const UOp reusable = tile::store_wait(Staging::boxes - 1, {last});
      const UOp col0 = at.col0 + chunk * staging.cols;
      // (B's row from the block's first row: one load of its expert, not one an element.)
      const tile::ElementEpilogue finish = [&](const UOp& value, const UOp& row, const UOp& col) {
        if (!epilogue.spec.any()) return value;
        return apply_epilogue(epilogue, value, min(warp_row0 + row, c.rows - 1), tiles.b_row(at.row0, min(col0 + col, c.cols - 1)));
      };
      // The warp's 16 rows of the chunk's columns, into its box (2-byte C: stmatrix, tiles.h).
      const tile::acc part = tile::subtile(tile::slab(accumulator.after({reusable}), half), 0, Staging::warp_rows, chunk * staging.cols, staging.cols);
      const UOp box = warp_boxes + written % Staging::boxes;
      const UOp write = tile::store(wg, staging.boxes_tile, box, part, constant(Wide(0)), constant(Wide(0)), finish);
      last = tile::store(wg, c, staging.boxes_tile, box, warp_row0, col0, {write});
    }
  }
  return last;
}

// HopperStore::Direct: the consumer's accumulator into C, through the epilogue, converted to C's
// dtype, inside C only (elements outside C load nothing: their indices are clamped into it).
UOp store_block_direct(const tile::Workgroup& wg, const tile::gl& c, const EpilogueInputs& epilogue, const Tiles& tiles, const tile::acc& accumulator,
                       const UOp& finished, const BlockOrigin& at) {
  const UOp r = wg.range(tiles.shape.halves() * at.values, AxisType::UNROLL);
  const UOp thread = tile::warpgroup(wg).thread;
  const auto [row, col] = tile::operand_index(at.fragment, thread, r % at.values);
  const UOp at_row = at.row0 + (r / at.values) * 64 + row, at_col = at.col0 + col;
  const UOp inside = (at_row < c.rows) & (at_col < c.cols);
  UOp value = slab_value(accumulator, {finished}, r / at.values, r % at.values);
  if (epilogue.spec.any()) value = apply_epilogue(epilogue, value, min(at_row, c.rows - 1), tiles.b_row(at.row0, min(at_col, c.cols - 1)));
  return c.buffer[{at_row, at_col}].store(value.cast(c.buffer.dtype()), inside).end({r});
}

// A consumer's blocks: every block of the workgroup's walk (Cooperative, 64 rows of each), or
// every other one from the consumer's index on (ping-pong, the whole block).
struct ConsumerTrips {
  UOp loop;  // the LOOP range
  UOp trip;  // the workgroup's trip of its iteration
};
ConsumerTrips consumer_trips(const tile::Workgroup& wg, const Tiles& tiles, const UOp& consumer) {
  if (!tiles.shape.ping_pong) {
    const UOp trip = wg.range(tiles.trips(wg), AxisType::LOOP);
    return {trip, trip};
  }
  const UOp turn = wg.range((tiles.trips(wg) + (S::consumers - 1) - consumer) / S::consumers, AxisType::LOOP);
  return {turn, turn * S::consumers + consumer};
}

// A consumer: for each of its blocks, the K loop, then the store of its rows (through `staging`
// with TMA stores, or directly where it is null). With TMA stores its warps wait for their last
// stores to read shared memory before the kernel ends.
UOp consume(const tile::Workgroup& wg, const Ring& ring, const std::optional<Staging>& staging, const tile::gl& c, const EpilogueInputs& epilogue,
            const Tiles& tiles, const UOp& consumer, const UOp& ready) {
  const HopperGemmShape& shape = tiles.shape;
  const tile::acc accumulator = tile::warpgroup_accumulator(wg, shape.consumer_rows(), shape.block_n);
  const auto [loop, trip] = consumer_trips(wg, tiles, consumer);
  const auto [row0, col0] = tiles.origin(wg, trip);
  const UOp finished = consume_block(wg, ring, accumulator, consumer, trip, tiles, shape.ping_pong ? tile::wait_turn(ring.turns, consumer, loop, {ready}) : ready);
  const BlockOrigin at{shape.ping_pong ? row0 : row0 + consumer * 64, col0, tile::wgmma_m64nNk16_accumulator(shape.block_n), shape.block_n / 2};
  if (!staging) return store_block_direct(wg, c, epilogue, tiles, accumulator, finished, at).end({loop});
  const UOp blocks = store_block(wg, c, epilogue, tiles, accumulator, *staging, consumer, finished, at).end({loop});
  // Both are the role's effects: a when() around the wait alone would guard only the wait (its
  // region is its effects and the bodies of the loops they end), leaving the loop to every warp.
  return group({blocks, tile::store_wait(0, {blocks})});
}

}  // namespace

HopperGemmSlots hopper_gemm_slots(const HopperEpilogue& epilogue, bool grouped) {
  HopperGemmSlots slots;
  int64_t next = grouped ? 4 : 3;
  if (epilogue.bias) slots.bias = next++;
  if (epilogue.scale != OperandScale::None) slots.scale_a = next++, slots.scale_b = next++;
  return slots;
}

int64_t hopper_gemm_k_multiple(DType input) { return 16 / input.itemsize(); }

namespace {

void check_spec(const HopperGemmSpec& spec) {
  if (spec.output != dtypes::bfloat16 && spec.output != dtypes::float32)
    throw Error("hopper_gemm: the output is bfloat16 or float32, not " + spec.output.name());
  if (spec.input != dtypes::bfloat16 && spec.input != dtypes::fp8e4m3)
    throw Error("hopper_gemm: the inputs are bfloat16 or float8_e4m3fn, not " + spec.input.name());
  const int64_t block_m = spec.shape().block_m;
  if (spec.grouped_block_rows < 0 || spec.grouped_block_rows % block_m)
    throw Error("hopper_gemm: the grouped form's block rows (" + std::to_string(spec.grouped_block_rows) + ") must be a multiple of " +
                std::to_string(block_m) + ", so that no block of C holds rows of two experts");
  if (spec.cluster != 1 && spec.cluster != 2)
    throw Error("hopper_gemm: a cluster of " + std::to_string(spec.cluster) + " CTAs; it takes 1 or 2 (two CTAs sharing B's box)");
  if (spec.grouped_block_rows > 0 && spec.cluster != 1)
    throw Error("hopper_gemm: the grouped form runs one workgroup per block of its own expert, not in clusters (cluster " + std::to_string(spec.cluster) +
                ")");
  // (Ping-pong hands a workgroup's blocks to its consumers in turn: the grouped form has one block
  // a workgroup, and a cluster's CTAs would have to take turns alike.)
  // A consumer releases the stage mma_groups steps back: fewer groups in flight than stages.
  if (spec.shape().mma_groups < 1 || spec.shape().mma_groups >= spec.shape().stages)
    throw Error("hopper_gemm: " + std::to_string(spec.shape().mma_groups) + " MMA groups in flight over a ring of " + std::to_string(spec.shape().stages) +
                " stages; 1 .. stages - 1");
  if (spec.shape().ping_pong && (spec.grouped_block_rows > 0 || spec.cluster != 1))
    throw Error(std::string("hopper_gemm: the ping-pong schedules run ungrouped, in clusters of 1; this spec asks for ") +
                (spec.grouped_block_rows > 0 ? "the grouped form" : "clusters of " + std::to_string(spec.cluster)));
}

}  // namespace

UOp hopper_gemm(const HopperGemmSpec& spec) {
  check_spec(spec);
  const bool grouped = spec.grouped_block_rows > 0;
  const int64_t k_min = hopper_gemm_k_multiple(spec.input);
  const UOp m = grouped ? variable("ROWS", spec.grouped_block_rows, 1 << 24) : variable("M", 1, 1 << 20);
  // (The grouped form's B is E * N rows: N below 2^16 keeps every TMA row coordinate, which is
  // int32, below 2^28.)
  const UOp n = variable("N", 1, grouped ? 1 << 16 : 1 << 20), k = variable("K", k_min, 1 << 20);
  const UOp b_rows = grouped ? variable("E", 1, 1 << 12).cast(dtypes::index) * n.cast(dtypes::index) : n;  // [E, N, K] as [E * N, K]
  const tile::gl c = tile::global(0, m, n, spec.output), a = tile::global(1, m, k, spec.input), b = tile::global(2, b_rows, k, spec.input);
  const EpilogueInputs epilogue = epilogue_inputs(spec.epilogue, grouped, m, b_rows);
  const HopperGemmShape shape = spec.shape();
  Tiles tiles;
  tiles.shape = shape;
  tiles.tiles_m = tiles_of(m, shape.block_m), tiles.tiles_n = tiles_of(n, shape.block_n);
  tiles.cluster = spec.cluster;
  tiles.units = tiles_of(tiles.tiles_m, spec.cluster) * tiles.tiles_n, tiles.steps = tiles_of(k, k_step(shape, spec.input));
  tiles.ctas = grouped ? tiles.units : variable("CTAS", 1, 1 << 16).cast(dtypes::index);
  if (grouped)
    tiles.experts = {placeholder(std::vector<UOp>{m.cast(dtypes::index) / spec.grouped_block_rows}, dtypes::int32, 3), n.cast(dtypes::index),
                     spec.grouped_block_rows};
  // A warpgroup is 4 consecutive warps of the block. wave() is the hardware warp, row-major (the
  // lane is x, the wave grid's columns y, its rows z), so a warpgroup is a row of 4 columns: row
  // 0 the producer, rows 1 .. consumers the consumers.
  const tile::Workgroup wg(kArch, {tiles.ctas}, 1 + S::consumers, S::warpgroup / 32, 32);

  const Ring ring = make_ring(spec.input, spec.cluster, shape);
  const UOp ready = init_ring(ring);
  // With register budgets, the producer's whole warpgroup gives registers up (in a branch of its
  // own: the producer's role is its first warp only) before that warp produces, and each consumer
  // warpgroup takes them inside its role's branch before it consumes (every warp of a warpgroup
  // runs setmaxnreg).
  std::vector<UOp> roles_effects;
  UOp producer_ready = ready, consumer_ready = ready;
  if (shape.register_budgets) {
    producer_ready = when(wg.wave_row().eq(0), {set_max_registers(S::producer_registers, RegisterBudget::Lower, {ready})});
    consumer_ready = set_max_registers(S::consumer_registers, RegisterBudget::Raise, {ready});
    roles_effects.push_back(producer_ready);
  }
  roles_effects.push_back(when(wg.wave_row().eq(0) & wg.wave_col().eq(0), {produce(wg, ring, a, b, tiles, producer_ready)}));
  const std::optional<Staging> staging = spec.store == HopperStore::Tma ? std::optional<Staging>(Staging(spec.output)) : std::nullopt;
  const UOp consumed = consume(wg, ring, staging, c, epilogue, tiles, wg.wave_row() - 1, consumer_ready);
  roles_effects.push_back(when(wg.wave_row() >= 1, shape.register_budgets ? std::vector<UOp>{consumer_ready, consumed} : std::vector<UOp>{consumed}));
  // In a cluster, no CTA exits while the others' consumers may still arrive on its barriers.
  const UOp roles = group(roles_effects);
  const UOp body = spec.cluster > 1 ? group({roles, cluster_sync({roles})}) : roles;
  // The grouped form runs inside an MoE layer's chain of kernels: a dependent launch, as the
  // layer's other kernels (KernelInfo). The dense GEMM is left serialized, so that its benchmark
  // against cuBLAS (issue 15) stays comparable with the earlier sessions' measurements.
  return sink({.name = shape.ping_pong ? "hopper_gemm_ping_pong" : "hopper_gemm", .cluster = spec.cluster, .dependent_launch = grouped},
              {body.end(wg.hardware_ranges())});
}

int64_t hopper_gemm_ctas(const rt::Device& device, const HopperGemmSpec& spec, int64_t m, int64_t n) {
  const std::optional<int64_t> units = device.compute_units();
  if (!units) throw Error("hopper_gemm: device " + device.name() + " does not report its multiprocessors (the persistent grid's size)");
  const int64_t cluster = spec.cluster;
  if (cluster < 1) throw Error("hopper_gemm: a cluster of " + std::to_string(cluster) + " CTAs");
  // Walk units of `cluster` blocks in a block column; whole clusters, at most one a unit.
  const HopperGemmShape shape = spec.shape();
  const int64_t units_m = ((m + shape.block_m - 1) / shape.block_m + cluster - 1) / cluster;
  const int64_t walk_units = units_m * ((n + shape.block_n - 1) / shape.block_n);
  return std::min(walk_units, *units / cluster) * cluster;
}

HopperGemmShape HopperGemmShape::of(HopperSchedule schedule) {
  switch (schedule) {
    case HopperSchedule::Cooperative: return {128, 256, 4, false};
    case HopperSchedule::PingPong: return {128, 128, 6, true};
    case HopperSchedule::PingPongWide: return {64, 256, 4, true};
    case HopperSchedule::Cooperative64B: return {128, 256, 8, false, 64, 3};
  }
  throw Error("hopper_gemm: unknown schedule " + std::to_string(static_cast<int>(schedule)));
}

}  // namespace weft::gemm
