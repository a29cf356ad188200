// The tile layer on Hopper (kernels/tiles_hopper.h): the warpgroup scope, mbarrier rings, TMA
// loads of shared tiles, wgmma from them into a warpgroup accumulator, which the ordinary acc
// operations store. Without a GPU: the accumulator's layout against the catalog's wgmma
// fragment, a GEMM written only with tile operations rendered and compiled by NVRTC for sm_90a,
// and the errors. On an H200 ("[cuda]"): that GEMM against a double-precision host reference
// (identity bit-exact, random, ragged). hopper_gemm is written with the same operations
// (tests/kernels/test_hopper_gemm.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "kernel_harness.h"
#include "occurrences.h"
#include "skip.h"
#include "weft/dsl/print.h"
#include "weft/kernels/tiles_hopper.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/pipeline.h"
#include "weft/lowering/rewrite.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;
using namespace weft::tile;
using weft::testing::occurrences;

namespace {

UOp index_constant(int64_t v) { return constant(Wide(v), dtypes::index); }
int64_t tiles_of(int64_t n, int64_t block) { return (n + block - 1) / block; }

// C [m, n] (fp32) = A [m, k] * B [n, k]^T (bf16), one 128 x 128 block of C a workgroup of one
// warpgroup, K in steps of 64 through a 2-stage ring: for each step the first thread waits for
// the stage's previous use to be released, announces its bytes and issues A's and B's TMA loads;
// the warpgroup waits for them, issues the step's wgmmas (two 64-row slabs; the first step
// overwrites the accumulator), waits for them and releases the stage. The accumulator is stored by
// the ordinary store(gl, acc), a slab at a time: each warp its 16 rows of each, masked at the
// edges. Slots: 0 C, 1 A, 2 B.
constexpr int64_t kBlockM = 128, kBlockN = 128, kBlockK = 64, kStages = 2;

UOp tile_wgmma_gemm(int64_t m, int64_t n, int64_t k) {
  const Workgroup wg("sm_90", {index_constant(tiles_of(n, kBlockN)), index_constant(tiles_of(m, kBlockM))}, 1, Warpgroup::warps, 32);
  const gl c = global(0, index_constant(m), index_constant(n), dtypes::float32);
  const gl a = global(1, index_constant(m), index_constant(k), dtypes::bfloat16), b = global(2, index_constant(n), index_constant(k), dtypes::bfloat16);
  const st as = shared(kBlockM, kBlockK, dtypes::bfloat16, SharedSwizzle::swizzle_128b, kStages);
  const st bs = shared(kBlockN, kBlockK, dtypes::bfloat16, SharedSwizzle::swizzle_128b, kStages);
  const Ring ring = stage_ring(kStages, Warpgroup::warps);
  const UOp ready = barrier({group(init(ring))});
  const UOp row0 = wg.block(1) * kBlockM, col0 = wg.block(0) * kBlockN;
  const acc sum = warpgroup_accumulator(wg, kBlockM, kBlockN);
  const UOp ks = wg.range(tiles_of(k, kBlockK), AxisType::LOOP);
  const Ring::Use use = ring.use(ks);
  const UOp stage = use.stage;
  const UOp expect = expect_bytes(ring, stage, stage_bytes(as) + stage_bytes(bs), {acquire(ring, use, {ready})});
  const UOp fill_a = load(wg, as, stage, a, row0, ks * kBlockK, ring.full[stage], {expect});
  const UOp fill_b = load(wg, bs, stage, b, col0, ks * kBlockK, ring.full[stage], {expect});
  const UOp issued = mma_ABt(wg, sum, as, stage, index_constant(0), bs, stage, ks > 0, {wait(ring, use, {fill_a, fill_b})});
  const UOp step = group(release(ring, stage, {mma_wait(0, {issued})})).end({ks});
  std::vector<UOp> stores;
  for (int64_t h = 0; h < kBlockM / 64; ++h) stores.push_back(store(wg, c, slab(sum.after({step}), h), row0 + warp_row(wg, h), col0));
  return sink({"tile_wgmma_gemm"}, {group(stores)});
}

lower::LoweredKernel lowered(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  return lower::lower(lower::canonical_allocations(kernel), options);
}

const Workgroup& hopper_workgroup() {
  static const Workgroup wg("sm_90", {index_constant(1)}, 2, Warpgroup::warps, 32);
  return wg;
}

}  // namespace

TEST_CASE("tiles on Hopper: a warpgroup accumulator is, warp by warp, the mma.sync acc the tile layer stores, in wgmma's fragment layout") {
  const Workgroup& wg = hopper_workgroup();
  for (int64_t n = 16; n <= 256; n *= 2) {
    CAPTURE(n);
    const acc c = warpgroup_accumulator(wg, 128, n);
    CHECK(c.rows == 32);  // two 64-row slabs, 16 rows of each a warp
    CHECK(c.cols == n);
    CHECK(c.elements == 8);
    const Layout wgmma = wgmma_m64nNk16_accumulator(n);
    // wgmma's register v of thread t (warp t / 32) is register v % 8 of the warp's sub-tile v / 8,
    // 16 rows from 16 * warp.
    for (int64_t t = 0; t < Warpgroup::threads; ++t)
      for (int64_t v = 0; v < n / 2; ++v) {
        const Layout::Coords want = wgmma.apply({{"register", v}, {"lane", t}});
        const Layout::Coords have = c.layout.apply({{"register", v % 8}, {"lane", t % 32}});
        REQUIRE(want.at("row") == 16 * (t / 32) + have.at("row"));
        REQUIRE(want.at("col") == 16 * (v / 8) + have.at("col"));
      }
  }
  // Warp w's 16 rows of slab h start at 64 h + 16 w of the warpgroup's tile.
  const acc c = warpgroup_accumulator(wg, 128, 64);
  CHECK(slab(c, 1).first_tile_row == 1);
  CHECK(slab(c, 1).rows == 16);
  CHECK(slab(c, 1).cols == 64);
  CHECK_THROWS_WITH_AS(slab(c, 2), doctest::Contains("not whole 16x16 sub-tiles"), Error);
  const UOp row = warp_row(wg, 1);
  for (int64_t w = 0; w < Warpgroup::warps; ++w)
    CHECK(lower::evaluate_index(substitute(row, {{wg.wave_col(), index_constant(w)}}), {}) == 64 + 16 * w);
}

TEST_CASE("tiles on Hopper: a GEMM written with tile operations only renders TMA, an mbarrier ring and wgmma, and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  const lower::LoweredKernel k = lowered(tile_wgmma_gemm(200, 300, 136));
  const std::string src = cuda::render_cuda(k, 90);
  INFO(src);
  CHECK(cuda::nvrtc_arch(k, 90) == "sm_90a");
  // A's and B's tensor maps (C is stored by each thread), two stages' full and empty barriers.
  CHECK(occurrences(src, "__grid_constant__ weft_tensor_map") == 2);
  CHECK(occurrences(src, "mbarrier.init.shared::cta.b64") == 4);
  CHECK(occurrences(src, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") == 2);
  // One m64n128k16 a slab and 16-element K slice: 8 a 64-element step, unrolled; one group, waited for.
  CHECK(occurrences(src, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 8);
  CHECK(occurrences(src, "wgmma.commit_group.sync.aligned") == 1);
  CHECK(occurrences(src, "wgmma.wait_group.sync.aligned 0") == 1);
  // Each warp's release is one arrival (4 a phase, as stage_ring was told).
  CHECK(src.find("mbarrier.arrive.shared::cta.b64") != std::string::npos);
  CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
}

TEST_CASE("tiles on Hopper: the errors name the operation and what it needs") {
  const Workgroup& wg = hopper_workgroup();
  const Workgroup cdna("gfx950", {index_constant(1)}, 1, 4, 64);
  CHECK_THROWS_WITH_AS(warpgroup(cdna), doctest::Contains("need an sm_90 workgroup, not 'gfx950'"), Error);
  const Workgroup three_wide("sm_90", {index_constant(1)}, 1, 3, 32);
  CHECK_THROWS_WITH_AS(warpgroup(three_wide), doctest::Contains("a row of 4 warps of 32 lanes; this workgroup's wave grid is 1x3"), Error);
  CHECK_THROWS_WITH_AS(warpgroup_accumulator(wg, 96, 128), doctest::Contains("64-row slabs"), Error);
  CHECK_THROWS_WITH_AS(warpgroup_accumulator(wg, 64, 24), doctest::Contains("N a power of two from 16 to 256"), Error);

  // Shared tiles TMA and wgmma take: one swizzle row wide, in that swizzle.
  const st ok = shared(64, 64, dtypes::bfloat16, SharedSwizzle::swizzle_128b, 2);
  CHECK(tma_swizzle(ok) == WgmmaSwizzle::B128);
  CHECK(tma_swizzle(shared(64, 32, dtypes::bfloat16, SharedSwizzle::swizzle_64b)) == WgmmaSwizzle::B64);
  CHECK(tma_swizzle(shared(64, 64, dtypes::fp8e4m3, SharedSwizzle::swizzle_64b)) == WgmmaSwizzle::B64);
  CHECK(wgmma_layout(ok) == MatrixLayoutArg{16, 1024, WgmmaSwizzle::B128});
  CHECK(stage_bytes(ok) == 64 * 64 * 2);
  CHECK_THROWS_WITH_AS(tma_swizzle(shared(64, 128, dtypes::bfloat16, SharedSwizzle::swizzle_128b)), doctest::Contains("has rows of 256 bytes"), Error);
  CHECK_THROWS_WITH_AS(tma_swizzle(shared(64, 64, dtypes::bfloat16, SharedSwizzle::st_16x32)), doctest::Contains("is not in swizzle_128b"), Error);
  CHECK_THROWS_WITH_AS(tma_swizzle(shared(512, 64, dtypes::bfloat16, SharedSwizzle::swizzle_128b)), doctest::Contains("at most 256 rows"), Error);
  CHECK_THROWS_WITH_AS(tma_swizzle(shared(64, 16, dtypes::float64, SharedSwizzle::unswizzled)), doctest::Contains("tma_swizzle: a 64x16 float64 tile"), Error);

  // TMA copies: sm_90 only, whole tensors, slices of whole swizzle periods.
  const gl t = global(1, index_constant(256), index_constant(64), dtypes::bfloat16);
  const Ring ring = stage_ring(2, 4);
  const UOp zero = index_constant(0);
  CHECK_THROWS_WITH_AS(load(cdna, ok, zero, t, zero, zero, ring.full[0]), doctest::Contains("load(st, gl) by TMA: Hopper's"), Error);
  CHECK_THROWS_WITH_AS(load(wg, ok, zero, row_window(t, zero, index_constant(64)), zero, zero, ring.full[0]),
                       doctest::Contains("not a row window of it"), Error);
  const UOp all = constant(Wide(3), dtypes::int32);
  CHECK_THROWS_WITH_AS(load_slice(wg, ok, zero, zero, 12, t, zero, zero, ring.full[0], all), doctest::Contains("whole 8-row swizzle periods"), Error);
  CHECK_THROWS_WITH_AS(load_slice(wg, ok, zero, index_constant(60), 8, t, zero, zero, ring.full[0], all),
                       doctest::Contains("from row 60 of a 64x64 tile does not start a whole 8-row swizzle period"), Error);
  CHECK_THROWS_WITH_AS(load_slice(wg, ok, zero, index_constant(32), 64, t, zero, zero, ring.full[0], all), doctest::Contains("rows 32 .. 95 lie outside a 64x64 tile"),
                       Error);
  CHECK_THROWS_WITH_AS(load(wg, ok, index_constant(2), t, zero, zero, ring.full[0]), doctest::Contains("stage 2 of a tile of 2 stages"), Error);
  CHECK(graph_string(load_slice(wg, ok, zero, index_constant(32), 32, t, zero, zero, ring.full[0], all)).find("box=32x64") != std::string::npos);

  // Rings and their barriers.
  CHECK_THROWS_WITH_AS(stage_ring(0, 4), doctest::Contains("0 stages"), Error);
  CHECK_THROWS_WITH_AS(stage_ring(2, 0), doctest::Contains("0 readers"), Error);
  CHECK_THROWS_WITH_AS(expect_bytes(ring, zero, 1 << 20, {}), doctest::Contains("1 .. 2^20 - 1"), Error);
  CHECK(init(ring).size() == 4);
  CHECK(release(ring, zero, {}, 2).size() == 2);  // one arrival on each CTA of the cluster

  // wgmma: the accumulator's shape, B's rows, one K, one dtype, A's rows inside its tile.
  const acc c = warpgroup_accumulator(wg, 64, 128);
  const st b = shared(128, 64, dtypes::bfloat16, SharedSwizzle::swizzle_128b, 2);
  CHECK_NOTHROW(mma_ABt(wg, c, ok, zero, zero, b, zero, UOp(), {}));
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, ok, zero, index_constant(32), b, zero, UOp(), {}), doctest::Contains("A's rows 32 .. 95 lie outside its tile"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, ok, zero, index_constant(4), b, zero, UOp(), {}), doctest::Contains("A's rows from 4 do not start a whole 8-row"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, warpgroup_accumulator(wg, 128, 128), ok, zero, zero, b, zero, UOp(), {}),
                       doctest::Contains("A's tile has fewer rows than the accumulator's 128"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, ok, zero, zero, b, index_constant(5), UOp(), {}), doctest::Contains("stage 5 of a tile of 2 stages"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, ok, zero, zero, ok, zero, UOp(), {}), doctest::Contains("B's rows are the accumulator's columns"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, subtile(c, 0, 16, 0, 64), ok, zero, zero, b, zero, UOp(), {}),
                       doctest::Contains("a whole warpgroup_accumulator"), Error);
  const st b_fp8 = shared(128, 128, dtypes::fp8e4m3, SharedSwizzle::swizzle_128b, 2);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, ok, zero, zero, b_fp8, zero, UOp(), {}), doctest::Contains("A and B are of one dtype"), Error);
  // The builder reads a multi-dimensional accumulator index as its row-major offset (through a view
  // it leaves the registers to the renderer).
  const UOp acc3 = placeholder({1, 16, 8}, dtypes::float32, fresh_id(), AddrSpace::REG);
  CHECK_THROWS_WITH_AS(wgmma(acc3[{index_constant(0), index_constant(8), zero}], ok.buffer[zero], b.buffer[zero], 256, dtypes::bfloat16,
                             wgmma_layout(ok), wgmma_layout(b)),
                       doctest::Contains("registers 64 .. 191 lie outside its buffer of 128 floats per thread"), Error);
}

namespace {

// A GEMM kernel C [m, n] (fp32, slot 0) = A [m, k] * B [n, k]^T (bf16, slots 1 and 2) on the GPU:
// C against the double-precision product of the bf16 inputs; with `identity`, B[j][kk] =
// (j == kk) and C[i][j] = A[i][j] for j < k, bit for bit. C is poisoned first, or, for a kernel
// that adds to C (`accumulate`), holds random starting values the reference adds.
void check_abt_gemm(rt::Device& dev, const UOp& gemm, int64_t m, int64_t n, int64_t k, bool identity, bool accumulate = false) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(identity);
  CAPTURE(accumulate);
  const auto kernel = rt::CompiledKernel::compile(dev, gemm);
  std::vector<double> av, bv;
  const std::vector<uint16_t> a = weft::testing::random_bf16(static_cast<size_t>(m * k), -2.0f, 2.0f, av);
  std::vector<uint16_t> b = weft::testing::random_bf16(static_cast<size_t>(n * k), -2.0f, 2.0f, bv);
  if (identity)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk) {
        bv[j * k + kk] = j == kk ? 1.0 : 0.0;
        b[j * k + kk] = float_to_bf16(static_cast<float>(bv[j * k + kk]));
      }
  std::vector<double> c0;
  const std::vector<float> c_start = accumulate ? weft::testing::random_floats(static_cast<size_t>(m * n), -4.0f, 4.0f) : std::vector<float>{};
  for (const float v : c_start) c0.push_back(v);
  const rt::DeviceArray args[] = {accumulate ? weft::testing::put(dev, dtypes::float32, c_start)
                                             : weft::testing::poisoned(dev, dtypes::float32, static_cast<size_t>(m * n)),
                                  weft::testing::put(dev, dtypes::bfloat16, a), weft::testing::put(dev, dtypes::bfloat16, b)};
  kernel.launch(dev, args);
  const std::vector<float> got = weft::testing::get<float>(dev, args[0]);
  weft::testing::check_product_abt(got, av, bv, m, n, k, identity, c0);
}

}  // namespace

TEST_CASE("tiles on Hopper: the tile-operation GEMM against a host reference: identity bit-exact, random, ragged [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  check_abt_gemm(*dev, tile_wgmma_gemm(64, 128, 128), 64, 128, 128, true);
  check_abt_gemm(*dev, tile_wgmma_gemm(128, 256, 512), 128, 256, 512, false);  // 8 K steps: each stage's barriers through 4 phases
  check_abt_gemm(*dev, tile_wgmma_gemm(200, 300, 136), 200, 300, 136, false);  // ragged: TMA's zero fill, the store's masks
  check_abt_gemm(*dev, tile_wgmma_gemm(1, 1, 8), 1, 1, 8, false);
  check_abt_gemm(*dev, tile_wgmma_gemm(100, 72, 40), 100, 72, 40, true);
}

namespace {

// C [64, n] (fp32) = A [64, k] * B [n, k]^T (bf16), one warpgroup, A from registers: each warp
// loads its 16 rows of A straight from global memory as an mma.sync A register tile, B lands in
// one TMA stage (k = 64: one 128-byte swizzle row), and each warp stores its 16 rows. Without
// `accumulate` the accumulator is first filled with NaN and the MMAs overwrite it (scale-d false:
// a NaN left anywhere fails the check); with it, the accumulator starts as C's values (C is read,
// then written) and the MMAs add to them. Slots: 0 C, 1 A, 2 B.
UOp registers_a_gemm(int64_t n, int64_t k, bool accumulate = false) {
  const Workgroup wg("sm_90", {index_constant(1)}, 1, Warpgroup::warps, 32);
  const gl c = global(0, index_constant(64), index_constant(n), dtypes::float32);
  const gl a = global(1, index_constant(64), index_constant(k), dtypes::bfloat16), b = global(2, index_constant(n), index_constant(k), dtypes::bfloat16);
  const st bs = shared(n, k, dtypes::bfloat16, SharedSwizzle::swizzle_128b, 1);
  const Ring ring = stage_ring(1, Warpgroup::warps);
  const UOp ready = barrier({group(init(ring))});
  const Ring::Use use = ring.use(index_constant(0));
  const UOp expect = expect_bytes(ring, use.stage, stage_bytes(bs), {ready});
  const UOp fill_b = load(wg, bs, use.stage, b, index_constant(0), index_constant(0), ring.full[use.stage], {expect});
  const tile::rt a_regs = load(wg, a, Major::row, 16, k, warp_row(wg, 0), index_constant(0), MatrixOperand::A);
  const acc empty = warpgroup_accumulator(wg, 64, n);
  const acc start = accumulate ? empty.after({load(wg, slab(empty, 0), c, warp_row(wg, 0), index_constant(0)).written()})
                               : map(empty, [](const UOp&) { return constant(std::nan(""), dtypes::float32); });
  const UOp scale_d = accumulate ? index_constant(0) <= index_constant(0) : index_constant(0) > index_constant(0);
  const UOp done = mma_wait(0, {mma_ABt(wg, start, a_regs, bs, use.stage, scale_d, {wait(ring, use, {fill_b})})});
  return sink({"registers_a_gemm"}, {store(wg, c, slab(start.after({done}), 0), warp_row(wg, 0), index_constant(0))});
}

}  // namespace

TEST_CASE("tiles on Hopper: mma_ABt with A from registers names what it needs") {
  const Workgroup& wg = hopper_workgroup();
  const acc c = warpgroup_accumulator(wg, 64, 128);
  const st b = shared(128, 64, dtypes::bfloat16, SharedSwizzle::swizzle_128b, 1);
  const gl a = global(1, index_constant(64), index_constant(64), dtypes::bfloat16);
  const UOp zero = index_constant(0);
  const tile::rt a_regs = load(wg, a, Major::row, 16, 64, zero, zero, MatrixOperand::A);
  CHECK_NOTHROW(mma_ABt(wg, c, a_regs, b, zero, UOp(), {}));
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, load(wg, a, Major::row, 16, 64, zero, zero, MatrixOperand::B), b, zero, UOp(), {}),
                       doctest::Contains("not in wgmma's A fragment layout"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, load(wg, a, Major::row, 32, 64, zero, zero, MatrixOperand::A), b, zero, UOp(), {}),
                       doctest::Contains("the warp's 16 rows of the accumulator's slab"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, warpgroup_accumulator(wg, 128, 128), load(wg, a, Major::row, 32, 64, zero, zero, MatrixOperand::A), b, zero, UOp(), {}),
                       doctest::Contains("takes a 64-row accumulator (one slab)"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, load(wg, a, Major::row, 16, 32, zero, zero, MatrixOperand::A), b, zero, UOp(), {}),
                       doctest::Contains("A and B have the same K"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, a_regs, shared(64, 64, dtypes::bfloat16, SharedSwizzle::swizzle_128b, 1), zero, UOp(), {}),
                       doctest::Contains("B's rows are the accumulator's columns"), Error);
  const gl a16 = global(1, index_constant(64), index_constant(64), dtypes::float16);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, load(wg, a16, Major::row, 16, 64, zero, zero, MatrixOperand::A), b, zero, UOp(), {}),
                       doctest::Contains("A and B are of one dtype"), Error);
}

TEST_CASE("tiles on Hopper: mma_ABt with A from registers renders wgmma with A's four registers, overwriting or accumulating, and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  const lower::LoweredKernel k = lowered(registers_a_gemm(128, 64));
  const std::string src = cuda::render_cuda(k, 90);
  INFO(src);
  // One m64n128k16 a 16-wide K slice, each with A's four registers and its own fence; one commit.
  CHECK(occurrences(src, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 4);
  CHECK(occurrences(src, "wgmma.commit_group.sync.aligned") == 1);
  CHECK(rt::nvrtc_compile(src, k.name, cuda::nvrtc_arch(k, 90)).size() > 0);
  // The accumulating form reads C into the accumulator, and its wgmma adds (scale-d 1).
  const lower::LoweredKernel adds = lowered(registers_a_gemm(128, 64, true));
  const std::string adds_src = cuda::render_cuda(adds, 90);
  CHECK(rt::nvrtc_compile(adds_src, adds.name, cuda::nvrtc_arch(adds, 90)).size() > 0);
}

// A product's accumulator as the next product's A, in registers (attention's P * V): the first
// warpgroup accumulator (64 x 64) rounded to bf16 by as_operand is the second MMA's A.
TEST_CASE("tiles on Hopper: an accumulator made an operand (as_operand) is mma_ABt's A from registers") {
  const Workgroup& wg = hopper_workgroup();
  const UOp zero = index_constant(0);
  const acc first = warpgroup_accumulator(wg, 64, 64);
  const tile::rt p = as_operand(wg, first, dtypes::bfloat16, MatrixOperand::A);
  CHECK(p.rows == 16);
  CHECK(p.cols == 64);
  const st v = shared(128, 64, dtypes::bfloat16, SharedSwizzle::swizzle_128b, 1);
  CHECK_NOTHROW(mma_ABt(wg, warpgroup_accumulator(wg, 64, 128), p, v, zero, UOp(), {}));
}

TEST_CASE("tiles on Hopper: mma_ABt with A from registers against a host reference: identity bit-exact, random, over a NaN-filled or a starting accumulator [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (const int64_t n : {int64_t{64}, int64_t{128}, int64_t{256}})
    for (const bool identity : {true, false}) check_abt_gemm(*dev, registers_a_gemm(n, 64), 64, n, 64, identity);
  // scale-d true: C's random starting values plus the product.
  check_abt_gemm(*dev, registers_a_gemm(128, 64, true), 64, 128, 64, false, true);
}

namespace {

// One warp: its 32 x 64 accumulator from `in` (fp32, row-major), then store(st, acc) into stage 1
// of a two-stage 32 x 64 shared tile with the epilogue value + (row * 64 + col) (one fp32 add,
// rounded once to the tile's dtype), then stage 1's elements as they lie in shared memory, raw,
// into `out`. Slots: 0 out, 1 in.
UOp store_acc_kernel(DType dtype, SharedSwizzle swizzle, const std::string& arch = "sm_90") {
  const Workgroup wg(arch, {index_constant(1)}, 1, 1, 32);
  const gl in = global(1, index_constant(32), index_constant(64), dtypes::float32);
  const st tile = shared(32, 64, dtype, swizzle, 2);
  const acc loaded = load(wg, accumulator(wg, 32, 64), in, index_constant(0), index_constant(0));
  const ElementEpilogue position = [](const UOp& v, const UOp& row, const UOp& col) { return v + (row * 64 + col).cast(dtypes::float32); };
  const UOp written = store(wg, tile, index_constant(1), loaded, index_constant(0), index_constant(0), position);
  const UOp out = placeholder({32 * 64}, dtype, 0);
  const UOp i = wg.range(64, AxisType::LOOP);
  const UOp at = i * 32 + wg.lane();
  const UOp copy = out[at].store(tile.after({barrier({written})}).buffer[index_constant(tile.size()) + at].load()).end({i});
  return sink({"store_acc"}, {copy.end(wg.hardware_ranges())});
}

}  // namespace

TEST_CASE("tiles on Hopper: store(st, acc) writes a 2-byte tile with one stmatrix a sub-tile where the layout keeps 16-byte rows, else element by element") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  struct Case {
    DType dtype;
    SharedSwizzle swizzle;
    int sm;
    int stmatrix;  // 2 x 4 sub-tiles, or none
  };
  // (sm_80 has no stmatrix: element by element there.)
  for (const Case& c : {Case{dtypes::bfloat16, SharedSwizzle::swizzle_128b, 90, 8}, Case{dtypes::bfloat16, SharedSwizzle::unswizzled, 90, 8},
                        Case{dtypes::float32, SharedSwizzle::unswizzled, 90, 0}, Case{dtypes::bfloat16, SharedSwizzle::swizzle_128b, 80, 0}}) {
    CAPTURE(c.dtype.name());
    CAPTURE(c.sm);
    const lower::LoweredKernel k = lowered(store_acc_kernel(c.dtype, c.swizzle, "sm_" + std::to_string(c.sm)));
    const std::string src = cuda::render_cuda(k, c.sm);
    INFO(src);
    CHECK(occurrences(src, "stmatrix.sync.aligned.m8n8.x4.shared.b16") == c.stmatrix);
    CHECK(rt::nvrtc_compile(src, k.name, cuda::nvrtc_arch(k, c.sm)).size() > 0);
  }
}

TEST_CASE("tiles on Hopper: store(st, acc) puts every element where the tile's layout says, through its epilogue, bit for bit [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (const SharedSwizzle swizzle : {SharedSwizzle::swizzle_128b, SharedSwizzle::unswizzled})
    for (const DType dtype : {dtypes::bfloat16, dtypes::float32}) {
      CAPTURE(dtype.name());
      CAPTURE(static_cast<int>(swizzle));
      const st tile = shared(32, 64, dtype, swizzle, 2);
      const auto kernel = rt::CompiledKernel::compile(*dev, store_acc_kernel(dtype, swizzle));
      const std::vector<float> in = weft::testing::random_floats(32 * 64, -4.0f, 4.0f);
      const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtype, 32 * 64), weft::testing::put(*dev, dtypes::float32, in)};
      kernel.launch(*dev, args);
      const std::vector<uint8_t> got = rt::download(*dev, args[0]);
      int bad = 0;
      for (int64_t r = 0; r < 32; ++r)
        for (int64_t col = 0; col < 64; ++col) {
          const float sum = in[static_cast<size_t>(r * 64 + col)] + static_cast<float>(r * 64 + col);
          const int64_t at = tile.layout.apply({{"row", r}, {"col", col}}).at("offset");
          uint32_t want = 0, have = 0;
          if (dtype == dtypes::bfloat16) {
            want = float_to_bf16(sum);
            std::memcpy(&have, got.data() + at * 2, 2);
          } else {
            std::memcpy(&want, &sum, 4);
            std::memcpy(&have, got.data() + at * 4, 4);
          }
          if (want != have && bad++ < 5) FAIL_CHECK("(" << r << ", " << col << ") at " << at << ": 0x" << std::hex << have << ", want 0x" << want);
        }
      CHECK(bad == 0);
    }
}

// A model of the barriers: bars[p] counts its completed phases; a wait for parity q passes once
// the phase of parity q has completed, i.e. where q differs from the count's parity (a fresh
// barrier's phase before the first counts as complete, parity 1). Every party's turn, in the
// global order, must pass exactly when the party before it has passed its turn before.
TEST_CASE("tiles on Hopper: turn_order lets parties take turns in order, each wait passing once the party before has passed") {
  for (int64_t parties : {2, 3, 4}) {
    CAPTURE(parties);
    const TurnOrder turns = turn_order(parties, 4);
    const UOp party = range(index_constant(parties), 0, AxisType::LOOP), turn = range(index_constant(1000), 1, AxisType::LOOP);
    const UOp waited = wait_turn(turns, party, turn, {}), passed = pass_turn(turns, party, {});
    std::vector<int64_t> completed(static_cast<size_t>(parties), 0);
    for (int64_t g = 0; g < 8 * parties; ++g) {
      const int64_t p = g % parties, t = g / parties;
      CAPTURE(g);
      const auto at = [&](const UOp& x) { return lower::evaluate_index(substitute(x, {{party, index_constant(p)}, {turn, index_constant(t)}}), {}); };
      const int64_t bar = at(waited.src(0).src(1)), parity = at(waited.src(1).cast(dtypes::index));
      CHECK(bar == p);
      const int64_t before = completed[static_cast<size_t>(bar)];
      // Passes now, and (a parity alternating with each phase) not one phase earlier, before the
      // party before it passed.
      CHECK(parity != before % 2);
      const int64_t next = at(passed.src(0).src(1));
      CHECK(next == (p + 1) % parties);
      ++completed[static_cast<size_t>(next)];  // the party's warps arrive: one phase
    }
  }
  CHECK_THROWS_WITH_AS(turn_order(1, 4), doctest::Contains("turns need at least two"), Error);
  CHECK_THROWS_WITH_AS(turn_order(2, 0), doctest::Contains("at least one"), Error);
  CHECK_THROWS_WITH_AS(wait_turn(TurnOrder{}, index_constant(0), index_constant(0), {}), doctest::Contains("make it with turn_order(parties >= 2"), Error);
  CHECK_THROWS_WITH_AS(pass_turn(TurnOrder{}, index_constant(0), {}), doctest::Contains("a TurnOrder of 0 parties"), Error);
}

TEST_CASE("tiles on Hopper: a ring's stage and parity from residues equal the step's, and stay 32-bit") {
  const Ring ring = stage_ring(6, 4);
  const UOp trip = range(index_constant(1 << 25), 0, AxisType::LOOP), per_trip = variable("STEPS", 1, 1 << 14).cast(dtypes::index);
  const UOp k = range(per_trip, 1, AxisType::LOOP);
  std::mt19937_64& gen = weft::testing::rng();
  for (int64_t offset : {int64_t{0}, int64_t{-1}, int64_t{-3}, int64_t{-6}, int64_t{6}}) {
    const Ring::Use by_residue = ring.use(trip, per_trip, k, offset);
    for (int i = 0; i < 200; ++i) {
      const int64_t t = static_cast<int64_t>(gen() % (1 << 25)), steps = 1 + static_cast<int64_t>(gen() % (1 << 14)), kk = static_cast<int64_t>(gen() % steps);
      const int64_t step = t * steps + kk + offset;
      if (step < 0) continue;
      CAPTURE(t);
      CAPTURE(steps);
      CAPTURE(kk);
      CAPTURE(offset);
      const auto at = [&](const UOp& x) {
        return lower::evaluate_index(substitute(x, {{trip, index_constant(t)}, {k, index_constant(kk)}}), {{"STEPS", steps}});
      };
      CHECK(at(by_residue.stage) == step % 6);
      CHECK(at(by_residue.parity.cast(dtypes::index)) == (step / 6) % 2);
    }
    // Every value below 2^31: the index dtype pass can make all of it int32.
    for (const UOp& root : {by_residue.stage, by_residue.parity})
      for (const UOp& u : toposort(root)) CHECK(u.vmax() < (int64_t{1} << 31));
  }
  // Exhaustively where the offset's normalization matters: steps of a few stages, every k.
  const UOp small_steps = variable("SMALL", 1, 32).cast(dtypes::index), small_k = range(small_steps, 2, AxisType::LOOP);
  for (int64_t offset = -6; offset <= 6; ++offset) {
    const Ring::Use by_residue = ring.use(trip, small_steps, small_k, offset);
    for (int64_t t = 0; t <= 13; ++t)
      for (int64_t steps = 1; steps <= 13; ++steps)
        for (int64_t kk = 0; kk < steps; ++kk) {
          const int64_t step = t * steps + kk + offset;
          if (step < 0) continue;
          const auto at = [&](const UOp& x) {
            return lower::evaluate_index(substitute(x, {{trip, index_constant(t)}, {small_k, index_constant(kk)}}), {{"SMALL", steps}});
          };
          if (at(by_residue.stage) != step % 6 || at(by_residue.parity.cast(dtypes::index)) != (step / 6) % 2)
            FAIL_CHECK("step " << step << " (trip " << t << ", " << steps << " steps, k " << kk << ", offset " << offset << ")");
        }
  }
  CHECK_THROWS_WITH_AS(ring.use(trip, per_trip, k, -7), doctest::Contains("an offset of -7 steps; -6 .. 6"), Error);
}
