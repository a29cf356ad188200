// Hopper's operations (builder.h, "Hopper"): mbarrier, wgmma and dynamic shared memory above
// 48 KiB. Without a GPU: rendered and compiled by NVRTC for sm_90a, and rejected for other
// targets. On an H200 ("[cuda]"): a wgmma tile and a K loop against a host reference (identity
// bit-exact), an mbarrier phase exchange, a 64 KiB shared-memory copy.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "hopper_roles.h"
#include "kernel_harness.h"
#include "skip.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/dsl/verify.h"
#include "weft/kernels/layout_expr.h"
#include "weft/kernels/layouts.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/inspect.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;
using weft::testing::rng;

namespace {

constexpr int64_t kWarpgroup = 128;

// Where element (row, k) of a K-major 64-or-N x K tile lies in shared memory (in elements), for
// the descriptor fields `layout` returns: without swizzle, 8 x 8 core matrices (8 rows of 16
// bytes) with K-adjacent ones 128 bytes apart (leading) and row-adjacent ones K/8 * 128 bytes
// apart (stride); with the 128-byte swizzle (K = 64: one row is 128 bytes), row r's 16-byte
// chunk c lies at chunk c ^ (r % 8), 8 rows = 1024 bytes apart (stride).
UOp smem_offset(const UOp& row, const UOp& k, int64_t K, WgmmaSwizzle swizzle) {
  if (swizzle == WgmmaSwizzle::B128) return row * 64 + (((k / 8) ^ (row % 8)) * 8) + k % 8;
  return (row / 8) * (K / 8 * 64) + (k / 8) * 64 + (row % 8) * 8 + k % 8;
}
MatrixLayoutArg layout(int64_t K, WgmmaSwizzle swizzle) {
  if (swizzle == WgmmaSwizzle::B128) return {16, 1024, WgmmaSwizzle::B128};
  return {128, K / 8 * 128, WgmmaSwizzle::None};
}
// The element offset of k-step `kk` (16 deep) in a tile laid out as above.
UOp kstep_offset(const UOp& kk, WgmmaSwizzle swizzle) { return swizzle == WgmmaSwizzle::B128 ? kk * 16 : kk * 128; }

// Thread t's fragment of A's 64 x 16 k step `kk` read from global memory, as PTX lays out
// wgmma's A in registers ("WGMMA .m64nNk16 register fragment layout for matrix A", written out
// here rather than taken from weft's layout catalog): warp w = t / 32 holds rows 16w .. 16w + 15,
// lane L value i row 16w + L/4 + 8 (i/2 % 2), column 2 (L%4) + i%2 + 8 (i/4).
UOp a_fragment(const UOp& a, const UOp& t, const UOp& kk, int64_t K) {
  const UOp warp = t / 32, lane = t % 32;
  std::vector<UOp> values;
  for (int64_t i = 0; i < 8; ++i) {
    const UOp row = warp * 16 + lane / 4 + 8 * (i / 2 % 2), col = kk * 16 + (lane % 4) * 2 + i % 2 + 8 * (i / 4);
    values.push_back(a[row * K + col].load());
  }
  return vectorize(values);
}

// One warpgroup: C (64 x N, fp32) = A (64 x K, row-major) * B^T (B stored N x K, row-major),
// K / 16 wgmma steps accumulating in registers; A from shared memory or, with `a_registers`,
// each thread's fragment read from global memory. Slots: 0 C, 1 A, 2 B.
UOp wgmma_kernel(int64_t N, int64_t K, DType input, WgmmaSwizzle swizzle, bool a_registers = false) {
  auto c = placeholder({64 * N}, dtypes::float32, 0);
  auto a = placeholder({64 * K}, input, 1);
  auto b = placeholder({N * K}, input, 2);
  auto a_s = alloc_shared({64 * K}, input);
  auto b_s = alloc_shared({N * K}, input);
  auto acc = placeholder({N / 2}, dtypes::float32, fresh_id(), AddrSpace::REG);
  auto t = range(kWarpgroup, 0, AxisType::LOCAL);
  // Fill the tiles: element e = t + 128 i of A (row e / K, column e % K), likewise B.
  auto ia = range(64 * K / kWarpgroup, 1, AxisType::LOOP);
  auto ea = t + ia * kWarpgroup;
  auto fill_a = a_s[smem_offset(ea / K, ea % K, K, swizzle)].store(a[ea].load()).end({ia});
  auto ib = range(N * K / kWarpgroup, 2, AxisType::LOOP);
  auto eb = t + ib * kWarpgroup;
  auto fill_b = b_s[smem_offset(eb / K, eb % K, K, swizzle)].store(b[eb].load()).end({ib});
  auto j = range(N / 2, 3, AxisType::UNROLL);
  auto zero = acc[j].store(constant(0.0, dtypes::float32)).end({j});
  // The fills are published to the async proxy (wgmma_fence), then to the other threads.
  auto fence = wgmma_fence(a_registers ? std::vector<UOp>{fill_b, zero} : std::vector<UOp>{fill_a, fill_b, zero});
  auto published = barrier({fence});
  auto kk = range(K / 16, 4, AxisType::LOOP);
  const UOp b_step = b_s.after({published})[kstep_offset(kk, swizzle)];
  auto mma = (a_registers ? wgmma_registers(acc[constant(Wide(0))], a_fragment(a, t, kk, K), b_step, N, input, layout(K, swizzle), {published})
                          : wgmma(acc[constant(Wide(0))], a_s.after({published})[kstep_offset(kk, swizzle)], b_step, N, input, layout(K, swizzle),
                                  layout(K, swizzle), {published}))
                 .end({kk});
  auto done = wgmma_wait(0, {wgmma_commit({mma})});
  // The accumulator fragment as the layout catalog states it (the run checks the catalog).
  auto r = range(N / 2, 5, AxisType::UNROLL);
  const auto [row, col] = tile::operand_index(tile::wgmma_m64nNk16_accumulator(N), t, r);
  auto out = c[row * N + col].store(acc.after({done})[r].load()).end({r, t});
  return sink({"wgmma_" + std::to_string(N) + "x" + std::to_string(K) + (swizzle == WgmmaSwizzle::B128 ? "_sw128" : "") + (a_registers ? "_rs" : "")}, {out});
}

// Every thread stores its input in shared memory, arrives at an mbarrier and waits for the phase
// to complete, then reads its neighbour's value; a second phase (parity 1) repeats with the
// values doubled. Slots: 0 out (2 x threads), 1 in.
UOp mbarrier_kernel(int64_t threads) {
  auto out = placeholder({2 * threads}, dtypes::int32, 0);
  auto in = placeholder({threads}, dtypes::int32, 1);
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto data = alloc_shared({2 * threads}, dtypes::int32);
  auto t = range(threads, 0, AxisType::LOCAL);
  auto init = mbarrier_init(bar[constant(Wide(0))], threads);
  auto ready = barrier({init});
  auto put0 = data[t].store(in[t].load()).end({t});
  auto wait0 = mbarrier_wait(bar[constant(Wide(0))], constant(Wide(0), dtypes::int32), {mbarrier_arrive(bar[constant(Wide(0))], {ready, put0})});
  auto put1 = data[t + threads].store(in[t].load() * 2).end({t});
  auto wait1 = mbarrier_wait(bar[constant(Wide(0))], constant(Wide(1), dtypes::int32), {mbarrier_arrive(bar[constant(Wide(0))], {wait0, put1})});
  auto u = range(threads, 0, AxisType::LOCAL);
  auto next = (u + 1) % threads;
  auto get0 = out[u].store(data.after({wait0})[next].load()).end({u});
  auto get1 = out[u + threads].store(data.after({wait1})[next + threads].load()).end({u});
  return sink({"mbarrier_phases"}, {get0, get1});
}

// Copies `n` float32 values through one shared buffer of n elements (n * 4 bytes, past 48 KiB:
// dynamic shared memory). Slots: 0 out, 1 in. The read is reversed so that threads read what
// others wrote.
UOp big_shared_copy(int64_t n, int64_t threads) {
  auto out = placeholder({n}, dtypes::float32, 0);
  auto in = placeholder({n}, dtypes::float32, 1);
  auto s = alloc_shared({n}, dtypes::float32);
  auto t = range(threads, 0, AxisType::LOCAL);
  auto i = range(n / threads, 1, AxisType::LOOP);
  auto fill = s[t + i * threads].store(in[t + i * threads].load()).end({i, t});
  auto u = range(threads, 0, AxisType::LOCAL);
  auto i2 = range(n / threads, 2, AxisType::LOOP);
  auto e = u + i2 * threads;
  auto drain = out[e].store(s.after({fill})[n - 1 - e].load()).end({i2, u});
  return sink({"big_shared_copy"}, {drain});
}

// One workgroup per box of a rows x cols float32 tensor (boxes past the edges included): the
// first thread loads the box with TMA, counted on an mbarrier; every thread waits for the phase,
// then copies the box (un-swizzled) to out[box][r][c]. Slots: 0 out, 1 the tensor.
struct TmaCase {
  int64_t rows, cols, box_rows, box_cols;
  WgmmaSwizzle swizzle;
  int64_t tiles_r() const { return (rows + box_rows - 1) / box_rows; }
  int64_t tiles_c() const { return (cols + box_cols - 1) / box_cols; }
  int64_t out_elements() const { return tiles_r() * tiles_c() * box_rows * box_cols; }
};

UOp tma_kernel(const TmaCase& c) {
  const int64_t box = c.box_rows * c.box_cols, threads = 128;
  auto out = placeholder({c.out_elements()}, dtypes::float32, 0);
  auto in = placeholder({c.rows, c.cols}, dtypes::float32, 1);
  auto tile = alloc_shared({box}, dtypes::float32);
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto zero = constant(Wide(0));
  auto g = range(c.tiles_r() * c.tiles_c(), 0, AxisType::GLOBAL);
  auto ready = barrier({mbarrier_init(bar[zero], 1)});
  auto expect = mbarrier_arrive_expect_tx(bar[zero], constant(Wide(box * 4), dtypes::int32), {ready});
  auto row0 = ((g / c.tiles_c()) * c.box_rows).cast(dtypes::int32), col0 = ((g % c.tiles_c()) * c.box_cols).cast(dtypes::int32);
  auto load = tma_load(tile[zero], in, bar[zero], row0, col0, c.box_rows, c.box_cols, c.swizzle, {expect});
  auto landed = mbarrier_wait(bar[zero], constant(Wide(0), dtypes::int32), {load});
  auto t = range(threads, 1, AxisType::LOCAL);
  auto i = range(box / threads, 2, AxisType::LOOP);
  auto e = t + i * threads;
  auto r = e / c.box_cols, col = e % c.box_cols;
  // The 128-byte swizzle (rows of 128 bytes = 32 floats): 16-byte chunk k of row r at k ^ (r % 8).
  auto at = c.swizzle == WgmmaSwizzle::B128 ? r * c.box_cols + ((col / 4) ^ (r % 8)) * 4 + col % 4 : e;
  auto copy = out[g * box + e].store(tile.after({landed})[at].load()).end({i, t, g});
  return sink({c.swizzle == WgmmaSwizzle::B128 ? "tma_box_sw128" : "tma_box"}, {copy});
}

// The other way: one warp per workgroup stores the boxes g, g + groups, ... of a rows x cols
// float32 tensor (boxes past the edges clipped by TMA), box b's values being in[b * box ..]. The
// warp writes each box into one of two staging boxes in turn (with the swizzle if asked), once the
// store that last read it is done (tma_store_wait(1)), then TMA stores it. Slots: 0 the tensor, 1 in.
UOp tma_store_kernel(const TmaCase& c, int64_t groups) {
  const int64_t box = c.box_rows * c.box_cols, boxes = c.tiles_r() * c.tiles_c();
  REQUIRE(boxes % groups == 0);
  auto out = placeholder({c.rows, c.cols}, dtypes::float32, 0);
  auto in = placeholder({c.out_elements()}, dtypes::float32, 1);
  auto staging = alloc_shared({2 * box}, dtypes::float32);
  auto g = range(groups, 0, AxisType::GLOBAL);
  auto lane = range(32, 1, AxisType::LOCAL);
  UOp last;
  for (int64_t i = 0; i < boxes / groups; ++i) {
    const UOp b = g + i * groups;
    const UOp reusable = tma_store_wait(1, last.is_null() ? std::vector<UOp>{} : std::vector<UOp>{last});
    auto j = range(box / 32, 2 + i, AxisType::LOOP);
    auto e = lane + j * 32;
    auto r = e / c.box_cols, col = e % c.box_cols;
    auto at = c.swizzle == WgmmaSwizzle::B128 ? r * c.box_cols + ((col / 4) ^ (r % 8)) * 4 + col % 4 : e;
    // Ordered after the wait through the value (builder.h, tma_store: not through the LOCAL buffer).
    auto write = staging[(i % 2) * box + at].store(in.after({reusable})[b * box + e].load()).end({j});
    const UOp row0 = ((b / c.tiles_c()) * c.box_rows).cast(dtypes::int32), col0 = ((b % c.tiles_c()) * c.box_cols).cast(dtypes::int32);
    last = tma_store(staging[constant(Wide((i % 2) * box))], out, row0, col0, c.box_rows, c.box_cols, c.swizzle, {write});
  }
  return sink({c.swizzle == WgmmaSwizzle::B128 ? "tma_store_sw128" : "tma_store"}, {tma_store_wait(0, {last}).end({lane, g})});
}

// Clusters of two CTAs sharing one tile by multicast. Cluster c's tile is rows [c * 2B, c * 2B + 2B)
// of a rows x cols float32 tensor; the CTA of rank r (workgroup g, r = g % 2) multicasts the box of
// its B rows into both CTAs' shared memory (mask 0b11), at offset r * B rows, so each CTA's
// barrier counts the whole tile's bytes, half of them from the other CTA. Every CTA copies the
// whole tile out to out[g] (rows past the tensor read as zeros). Then each warp releases both
// CTAs' `done` barrier (8 arrivals each: 4 warps of each CTA) and waits on its own, and the cluster
// synchronizes before exiting. Slots: 0 out (2 * clusters tiles), 1 the tensor.
struct ClusterCase {
  int64_t clusters, rows, box_rows, cols;
  int64_t tile() const { return 2 * box_rows * cols; }
};

UOp cluster_multicast_kernel(const ClusterCase& c, int64_t workgroups) {
  const int64_t threads = 128, warps = threads / 32;
  auto out = placeholder({workgroups * c.tile()}, dtypes::float32, 0);
  auto in = placeholder({c.rows, c.cols}, dtypes::float32, 1);
  auto tile = alloc_shared({c.tile()}, dtypes::float32);
  auto bars = alloc_shared({2}, dtypes::uint64);
  auto full = bars[constant(Wide(0))], done = bars[constant(Wide(1))];
  auto i32 = [](int64_t v) { return constant(Wide(v), dtypes::int32); };
  auto g = range(workgroups, 0, AxisType::GLOBAL);
  auto rank = g % 2;
  // Both CTAs' barriers are initialized before either's copy or arrival reaches them.
  auto ready = cluster_sync({mbarrier_init(full, 1), mbarrier_init(done, 2 * warps)});
  auto expect = mbarrier_arrive_expect_tx(full, i32(c.tile() * 4), {ready});
  auto row0 = ((g / 2) * (2 * c.box_rows) + rank * c.box_rows).cast(dtypes::int32);
  auto load = tma_load_multicast(tile[rank * (c.box_rows * c.cols)], in, full, row0, i32(0), c.box_rows, c.cols, WgmmaSwizzle::None, i32(3),
                                 {expect});
  auto landed = mbarrier_wait(full, i32(0), {load});
  auto t = range(threads, 1, AxisType::LOCAL);
  auto i = range(c.tile() / threads, 2, AxisType::LOOP);
  auto e = t + i * threads;
  auto copy = out[g * c.tile() + e].store(tile.after({landed})[e].load()).end({i, t, g});
  auto released = mbarrier_arrive_cluster(done, i32(1), {mbarrier_arrive_cluster(done, i32(0), {copy})});
  auto finished = cluster_sync({mbarrier_wait(done, i32(0), {released})});
  return sink({"cluster_multicast", 2}, {finished});
}

lower::LoweredKernel lowered_for_warps(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  return lower::lower(lower::canonical_allocations(kernel), options);
}

// Renders for sm_90, checks the text, and compiles for the architecture nvrtc_arch picks.
std::string compiles_sm90(const UOp& kernel, const std::vector<std::string>& must_contain, const std::string& arch) {
  const lower::LoweredKernel k = lowered_for_warps(kernel);
  const std::string src = cuda::render_cuda(k, 90);
  INFO(src);
  for (const std::string& m : must_contain) CHECK_MESSAGE(src.find(m) != std::string::npos, m);
  CHECK(cuda::nvrtc_arch(k, 90) == arch);
  CHECK(rt::nvrtc_compile(src, k.name, arch).size() > 0);
  return src;
}

// The kernel's last parameter is the tensor map of buffer `slot`, for a 32 x 32 box with `sw`.
void check_tensor_map(const lower::LoweredKernel& k, int64_t slot, WgmmaSwizzle sw) {
  const auto& p = k.params.back();
  CHECK(p.kind == lower::KernelParam::Kind::TensorMap);
  CHECK(p.slot == slot);
  CHECK(p.box.rows == 32);
  CHECK(p.box.cols == 32);
  CHECK(p.box.swizzle == sw);
}

constexpr const char* kNoNvrtc = "NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here";

}  // namespace

TEST_CASE("Hopper: wgmma m64nNk16 (no swizzle, 128-byte swizzle) renders and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  for (DType input : {dtypes::bfloat16, dtypes::float16}) {
    const std::string in = input == dtypes::float16 ? "f16" : "bf16";
    compiles_sm90(wgmma_kernel(64, 16, input, WgmmaSwizzle::None),
                  {"wgmma.fence.sync.aligned", "wgmma.mma_async.sync.aligned.m64n64k16.f32." + in + "." + in, "wgmma.commit_group.sync.aligned",
                   "wgmma.wait_group.sync.aligned 0"},
                  "sm_90a");
  }
  // The 128-byte swizzle: the descriptor's fixed fields are mode 1 in bits 62-63, stride 1024 >> 4
  // in bits 32-45, leading 16 >> 4 in bits 16-29.
  const uint64_t fixed = (uint64_t{1} << 62) | (uint64_t{1024 >> 4} << 32) | (uint64_t{16 >> 4} << 16);
  compiles_sm90(wgmma_kernel(128, 64, dtypes::bfloat16, WgmmaSwizzle::B128), {"m64n128k16", std::to_string(fixed) + "ull"}, "sm_90a");
}

TEST_CASE("Hopper: wgmma with A from registers renders the fragment as four words, fenced in the same statement, and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  for (DType input : {dtypes::bfloat16, dtypes::float16}) {
    const std::string in = input == dtypes::float16 ? "f16" : "bf16";
    const std::string src = compiles_sm90(wgmma_kernel(64, 32, input, WgmmaSwizzle::None, true), {"wgmma.mma_async.sync.aligned.m64n64k16.f32." + in + "." + in}, "sm_90a");
    // {d0..d31}, {a0..a3} (%32..%35), the B descriptor (%36), scale-d (%37), scales 1, 1, B not transposed.
    CHECK(src.find("wgmma.fence.sync.aligned;\\n\\twgmma.mma_async.sync.aligned.m64n64k16.f32." + in + "." + in + " {%0, %1") != std::string::npos);
    CHECK(src.find("}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;") != std::string::npos);
    CHECK(src.find("setp.ne.b32 p, %37, 0;") != std::string::npos);
  }
  compiles_sm90(wgmma_kernel(128, 64, dtypes::bfloat16, WgmmaSwizzle::B128, true), {"m64n128k16", "p, 1, 1, 0;"}, "sm_90a");
  // The builder: A from registers is 8 values of a 16-bit input.
  auto b_s = alloc_shared({1024}, dtypes::bfloat16);
  auto acc = placeholder({32}, dtypes::float32, fresh_id(), AddrSpace::REG);
  const UOp four = vectorize({constant(1.0, dtypes::bfloat16), constant(1.0, dtypes::bfloat16), constant(1.0, dtypes::bfloat16), constant(1.0, dtypes::bfloat16)});
  CHECK_THROWS_WITH_AS(wgmma_registers(acc[constant(Wide(0))], four, b_s[constant(Wide(0))], 64, dtypes::bfloat16, {128, 256}),
                       doctest::Contains("A from registers is 8 values of bfloat16 a thread (bfloat16.vec8), got bfloat16.vec4"), Error);
  CHECK_THROWS_WITH_AS(wgmma_registers(acc[constant(Wide(0))], b_s[constant(Wide(0))].vec(8), b_s[constant(Wide(0))], 64, dtypes::bfloat16, {128, 256}),
                       doctest::Contains("A from registers is a value (the thread's fragment), not an INDEX"), Error);
  // The verifier: the arg and the A source agree.
  const UOp fragment = vectorize(std::vector<UOp>(8, constant(1.0, dtypes::bfloat16)));
  const UOp rs = wgmma_registers(acc[constant(Wide(0))], fragment, b_s[constant(Wide(0))], 64, dtypes::bfloat16, {128, 256});
  WgmmaArg as_shared = rs.arg_as<WgmmaArg>();
  as_shared.a_registers = false;
  CHECK_THROWS_WITH_AS(verify(UOp::make(Op::WGMMA, dtypes::void_, rs.src(), as_shared)), doctest::Contains("takes A from shared memory but its A is not an INDEX"), Error);
}

TEST_CASE("Hopper: wgmma with fp8 A from registers packs four values a word and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  // One k32 step: thread t's 16 e4m3 values of A from global memory (any 16: this checks the
  // operand form, the GPU case above the values), B 64 x 32 in shared memory, no swizzle.
  const DType e4m3 = dtypes::fp8e4m3;
  auto c = placeholder({64 * 64}, dtypes::float32, 0), a = placeholder({64 * 32}, e4m3, 1), b = placeholder({64 * 32}, e4m3, 2);
  auto b_s = alloc_shared({64 * 32}, e4m3);
  auto acc = placeholder({32}, dtypes::float32, fresh_id(), AddrSpace::REG);
  auto t = range(kWarpgroup, 0, AxisType::LOCAL);
  auto i = range(64 * 32 / kWarpgroup, 1, AxisType::LOOP);
  auto fill = b_s[t + i * kWarpgroup].store(b[t + i * kWarpgroup].load()).end({i});
  std::vector<UOp> values;
  for (int64_t v = 0; v < 16; ++v) values.push_back(a[t * 16 + v].load());
  auto published = barrier({wgmma_fence({fill})});
  auto mma = wgmma_registers(acc[constant(Wide(0))], vectorize(values), b_s.after({published})[constant(Wide(0))], 64, e4m3, {128, 256}, {published},
                             constant(Wide(0), dtypes::bool_));
  auto done = wgmma_wait(0, {wgmma_commit({mma})});
  auto r = range(32, 2, AxisType::UNROLL);
  auto out = c[t * 32 + r].store(acc.after({done})[r].load()).end({r, t});
  const std::string src = compiles_sm90(sink({"wgmma_fp8_rs"}, {out}), {"wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"}, "sm_90a");
  CHECK(src.find("}, {%32, %33, %34, %35}, %36, p, 1, 1;") != std::string::npos);  // no transpose operand for fp8
  CHECK(src.find(".v[3] << 24)") != std::string::npos);  // four values a word, the fourth in the top byte
}

namespace {

// One warp's stmatrix.x4: lane l writes its 8 values in[8l .. 8l + 7] at row l of a 256-element
// shared buffer (row l is lane l's address: row l % 8 of matrix l / 8), which is then copied out.
// Guarded: the stmatrix under when(n > 0), a warp-uniform condition (launched with n = 1).
UOp stmatrix_kernel(bool guarded = false) {
  UOp lds = alloc_shared({256}, dtypes::uint16), in = placeholder({256}, dtypes::uint16, 1), out = placeholder({256}, dtypes::uint16, 0);
  UOp l = range(32, 0, AxisType::LOCAL);
  UOp written = lds[l * 8].vec(8).store_matrix(in[l * 8].vec(8).load());
  if (guarded) written = when(variable("n", 0, 1) > 0, {written});
  return sink({guarded ? "stmatrix_x4_when" : "stmatrix_x4"}, {out[l * 8].vec(8).store(lds.after({barrier({written})})[l * 8].vec(8).load()).end({l})});
}

// Where stmatrix.x4 puts lane L's value v: element 2(L%4) + v%2 of row L/4 of matrix v/2, and
// matrix m's row r is lane 8m + r's address, row 8m + r of stmatrix_kernel's buffer.
size_t stmatrix_destination(int lane, int value) { return static_cast<size_t>((8 * (value / 2) + lane / 4) * 8 + 2 * (lane % 4) + value % 2); }

}  // namespace

TEST_CASE("Hopper: stmatrix takes rows of 8 lanes of a 2-byte type into a LOCAL buffer, by every lane, and compiles for sm_90") {
  UOp lds = alloc_shared({256}, dtypes::bfloat16), wide = alloc_shared({256}, dtypes::float32), g = placeholder({256}, dtypes::bfloat16, 0);
  const UOp zero = constant(Wide(0));
  CHECK_THROWS_WITH_AS(lds[zero].vec(4).store_matrix(g[zero].vec(4).load()), doctest::Contains("stmatrix takes 8 lanes of a 2-byte type, not"), Error);
  CHECK_THROWS_WITH_AS(wide[zero].vec(8).store_matrix(wide[zero].vec(8).load()), doctest::Contains("stmatrix takes 8 lanes of a 2-byte type, not"), Error);
  CHECK_THROWS_WITH_AS(g[zero].vec(8).store_matrix(g[zero].vec(8).load()), doctest::Contains("stmatrix writes a LOCAL buffer"), Error);
  // The verifier checks a node built by hand.
  const UOp raw = UOp::make(Op::STORE, dtypes::void_, {g[zero].vec(8), g[zero].vec(8).load()}, std::string(kMatrixWrite16));
  CHECK_THROWS_WITH_AS(verify(raw), doctest::Contains("stmatrix writes a LOCAL buffer"), Error);
  const UOp other = UOp::make(Op::STORE, dtypes::void_, {lds[zero], g[zero].load()}, std::string("sideways"));
  CHECK_THROWS_WITH_AS(verify(other), doctest::Contains("the only one a store takes is stmatrix_b16"), Error);
  // Inside when() on a lane-varying condition a masked lane would drop the others' values: an error.
  UOp l = range(32, 0, AxisType::LOCAL);
  UOp varying = sink({"when_stmatrix"}, {when(l < 16, {lds[l * 8].vec(8).store_matrix(g[l * 8].vec(8).load())}).end({l})});
  CHECK_THROWS_WITH_AS(lowered_for_warps(varying), doctest::Contains("stmatrix needs every lane of the warp"), Error);
  // A row not known to start on 16 bytes: the CUDA renderer refuses it.
  UOp skewed = sink({"stmatrix_skewed"}, {lds[l * 8 + 4].vec(8).store_matrix(g[l * 8].vec(8).load()).end({l})});
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lowered_for_warps(skewed), 90), doctest::Contains("is not known to be a multiple of 8 elements (16 bytes)"), Error);
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lowered_for_warps(stmatrix_kernel()), 80), doctest::Contains("stmatrix needs sm_90 or newer"), Error);
#ifdef WEFT_HAVE_LLVM
  CHECK_THROWS_WITH_AS(rt::inspect(stmatrix_kernel(), "gfx950"), doctest::Contains("stmatrix (a cross-lane shared-memory write) is NVIDIA's; AMDGPU has none"), Error);
#endif
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  compiles_sm90(stmatrix_kernel(), {"stmatrix.sync.aligned.m8n8.x4.shared.b16"}, "sm_90");
  // A signed 2-byte type packs as its bits (an int16 value is not sign-extended into the word).
  UOp lds16 = alloc_shared({256}, dtypes::int16), g16 = placeholder({256}, dtypes::int16, 0);
  const std::string signed_src =
      compiles_sm90(sink({"stmatrix_int16"}, {lds16[l * 8].vec(8).store_matrix(g16[l * 8].vec(8).load()).end({l})}), {"stmatrix.sync"}, "sm_90");
  CHECK(signed_src.find("weft_pack((unsigned short)") != std::string::npos);
  // Under a warp-uniform when(), the whole warp branches around it.
  const std::string src = compiles_sm90(stmatrix_kernel(true), {"stmatrix.sync.aligned.m8n8.x4.shared.b16"}, "sm_90");
  const size_t at = src.find("stmatrix.sync"), line = src.rfind('\n', at), before = src.rfind('\n', line - 1);
  CHECK(src.substr(before + 1, line - before - 1).find("if (") != std::string::npos);  // the line before it opens the branch
}

TEST_CASE("Hopper: stmatrix puts each lane's values where ldmatrix reads them from, bit for bit [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (const bool guarded : {false, true}) {
    CAPTURE(guarded);
    const auto k = rt::CompiledKernel::compile(*dev, stmatrix_kernel(guarded));
    const std::vector<int32_t> drawn = weft::testing::random_ints(256, 0, 0xffff);
    const std::vector<uint16_t> in(drawn.begin(), drawn.end());
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::uint16, 256), weft::testing::put(*dev, dtypes::uint16, in)};
    if (guarded) k.launch(*dev, args, {{"n", int64_t{1}}});
    else k.launch(*dev, args);
    const std::vector<uint16_t> got = weft::testing::get<uint16_t>(*dev, args[0]);
    int bad = 0;
    for (int lane = 0; lane < 32; ++lane)
      for (int v = 0; v < 8; ++v) {
        const uint16_t want = in[static_cast<size_t>(8 * lane + v)], have = got[stmatrix_destination(lane, v)];
        if (have != want && bad++ < 5) FAIL_CHECK("lane " << lane << " value " << v << ": " << have << " at " << stmatrix_destination(lane, v) << ", want " << want);
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("Hopper: mbarrier init, arrive, expect_tx and try_wait.parity render and compile for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  compiles_sm90(mbarrier_kernel(128), {"mbarrier.init.shared::cta.b64", "mbarrier.arrive.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64"},
                "sm_90a");
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto expect = mbarrier_arrive_expect_tx(bar[constant(Wide(0))], constant(Wide(4096), dtypes::int32), {barrier({mbarrier_init(bar[constant(Wide(0))], 1)})});
  compiles_sm90(sink({"expect_tx"}, {expect}), {"mbarrier.arrive.expect_tx.shared::cta.b64"}, "sm_90a");
  // One arrival a warp: lane 0 of the block's linear thread index.
  auto per_warp = mbarrier_arrive_warp(bar[constant(Wide(0))], {barrier({mbarrier_init(bar[constant(Wide(0))], 4)})});
  compiles_sm90(sink({"arrive_warp"}, {per_warp}), {"& 31u) == 0u) asm volatile(\"{\\n\\t.reg .b64 state;\\n\\tmbarrier.arrive.shared::cta.b64"}, "sm_90a");
}

TEST_CASE("Hopper: a TMA load takes a __grid_constant__ tensor map and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  for (WgmmaSwizzle sw : {WgmmaSwizzle::None, WgmmaSwizzle::B128}) {
    const UOp k = tma_kernel({100, 72, 32, 32, sw});
    compiles_sm90(k, {"const __grid_constant__ weft_tensor_map tmap1", "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                      "mbarrier.arrive.expect_tx"},
                  "sm_90a");
    check_tensor_map(lowered_for_warps(k), 1, sw);
  }
  // One tensor map per buffer: two boxes of one buffer are an error.
  auto in = placeholder({64, 64}, dtypes::float32, 0);
  auto tile = alloc_shared({1024}, dtypes::float32);
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto zero = constant(Wide(0));
  auto z = constant(Wide(0), dtypes::int32);
  auto a = tma_load(tile[zero], in, bar[zero], z, z, 32, 32);
  auto b = tma_load(tile[zero], in, bar[zero], z, z, 16, 32, WgmmaSwizzle::None, {a});
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"two_boxes"}, {b})), doctest::Contains("two boxes"), Error);
  CHECK_THROWS_WITH_AS(tma_load(tile[zero], in, bar[zero], z, z, 32, 3), doctest::Contains("multiple of 16 bytes"), Error);
  CHECK_THROWS_WITH_AS(tma_load(tile[zero], in, bar[zero], z, z, 8, 64, WgmmaSwizzle::B128), doctest::Contains("at most 128 bytes"), Error);
  CHECK_THROWS_WITH_AS(tma_load(tile[zero], tile, bar[zero], z, z, 8, 32), doctest::Contains("2-D GLOBAL"), Error);
}

TEST_CASE("Hopper: a warp's TMA stores through two staging boxes render, compile for sm_90a and check their operands") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  for (WgmmaSwizzle sw : {WgmmaSwizzle::None, WgmmaSwizzle::B128}) {
    const UOp k = tma_store_kernel({100, 72, 32, 32, sw}, 4);
    const std::string src = compiles_sm90(k, {"const __grid_constant__ weft_tensor_map tmap0", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
                                              "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 1;", "cp.async.bulk.wait_group.read 0;",
                                              "fence.proxy.async.shared::cta", "__syncwarp()"},
                                          "sm_90a");
    // No block-wide barrier: the warp orders its own writes and stores.
    CHECK(src.find("__syncthreads") == std::string::npos);
    check_tensor_map(lowered_for_warps(k), 0, sw);
  }
  auto out = placeholder({64, 64}, dtypes::float32, 0);
  auto tile = alloc_shared({1024}, dtypes::float32);
  auto ints = alloc_shared({1024}, dtypes::int32);
  auto zero = constant(Wide(0));
  auto z = constant(Wide(0), dtypes::int32);
  CHECK_THROWS_WITH_AS(tma_store(tile[zero], out, z, z, 32, 3), doctest::Contains("TMA_STORE: a box of 32 x 3"), Error);
  CHECK_THROWS_WITH_AS(tma_store(tile[zero], out, z, z, 8, 64, WgmmaSwizzle::B128), doctest::Contains("at most 128 bytes"), Error);
  CHECK_THROWS_WITH_AS(tma_store(ints[zero], out, z, z, 8, 32), doctest::Contains("TMA_STORE"), Error);
  CHECK_THROWS_WITH_AS(tma_store(tile[zero], out, zero, z, 8, 32), doctest::Contains("int32"), Error);
  auto flat = placeholder({64}, dtypes::float32, 1);
  CHECK_THROWS_WITH_AS(tma_store(flat[zero], out, z, z, 8, 32), doctest::Contains("LOCAL"), Error);
  CHECK_THROWS_WITH_AS(tma_store_wait(8), doctest::Contains("TMA_STORE_WAIT: pending group count 8"), Error);
  // A load and a store of one buffer share its tensor map: two boxes are an error.
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto load = tma_load(tile[zero], out, bar[zero], z, z, 32, 32);
  auto store = tma_store(tile[zero], out, z, z, 16, 32, WgmmaSwizzle::None, {load});
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"two_boxes"}, {store})), doctest::Contains("two boxes"), Error);
#ifdef WEFT_HAVE_LLVM
  auto emu = rt::open_device("emu:gfx950");
  CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*emu, tma_store_kernel({64, 64, 32, 32, WgmmaSwizzle::None}, 4)),
                       doctest::Contains("AMDGPU renderer: TMA_STORE"), Error);
#endif
}

TEST_CASE("Hopper: clusters of two CTAs (multicast TMA, remote mbarrier arrivals, cluster barriers) render and compile for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  const UOp k = cluster_multicast_kernel({3, 90, 16, 32}, 6);
  compiles_sm90(k, {"__cluster_dims__(2, 1, 1) cluster_multicast(", "mbarrier::complete_tx::bytes.multicast::cluster", "mapa.shared::cluster.u32",
                    "mbarrier.arrive.shared::cluster.b64 _, [remote]", "barrier.cluster.arrive.release.aligned",
                    "barrier.cluster.wait.acquire.aligned"},
                "sm_90a");
  CHECK(lowered_for_warps(k).cluster == 2);
  CHECK(graph_string(k).find("name=cluster_multicast cluster=2") != std::string::npos);
  // The multicast loads' tensor map: one box of 32 x 32.
  check_tensor_map(lowered_for_warps(cluster_multicast_kernel({3, 180, 32, 32}, 6)), 1, WgmmaSwizzle::None);
}

TEST_CASE("Hopper: clusters are checked: their size, the multicast mask, the target") {
  auto out = placeholder({64}, dtypes::float32, 0);
  auto store = out[constant(Wide(0))].store(constant(1.0, dtypes::float32));
  CHECK_THROWS_WITH_AS(sink({"k", 0}, {store}), doctest::Contains("SINK: kernel k: a cluster of 0 CTAs; clusters hold 1..8"), Error);
  CHECK_THROWS_WITH_AS(sink({"k", 9}, {store}), doctest::Contains("a cluster of 9 CTAs"), Error);
  CHECK(graph_string(sink({"k", 1}, {store})).find("cluster=") == std::string::npos);
  CHECK(sink({"k", 1}, {store}).hash() != sink({"k", 2}, {store}).hash());
  auto in = placeholder({64, 32}, dtypes::float32, 1);
  auto tile = alloc_shared({1024}, dtypes::float32);
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto zero = constant(Wide(0));
  auto z = constant(Wide(0), dtypes::int32);
  CHECK_THROWS_WITH_AS(tma_load_multicast(tile[zero], in, bar[zero], z, z, 32, 32, WgmmaSwizzle::None, zero),
                       doctest::Contains("TMA_LOAD: the CTA mask is an int32 value"), Error);
  CHECK_THROWS_WITH_AS(tma_load_multicast(tile[zero], in, bar[zero], z, z, 32, 32, WgmmaSwizzle::None, z),
                       doctest::Contains("the CTA mask 0 names no CTA"), Error);
  CHECK_THROWS_WITH_AS(tma_load_multicast(tile[zero], in, bar[zero], z, z, 32, 32, WgmmaSwizzle::None, constant(Wide(256), dtypes::int32)),
                       doctest::Contains("the CTA mask 256"), Error);
  CHECK_THROWS_WITH_AS(mbarrier_arrive_cluster(bar[zero], zero), doctest::Contains("MBARRIER arrive_cluster: takes an int32 operand"), Error);
  // The verifier: cluster statements need a cluster, and name CTAs inside it.
  const auto i32 = [](int64_t v) { return constant(Wide(v), dtypes::int32); };
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"unclustered"}, {cluster_sync({mbarrier_init(bar[zero], 1)})})),
                       doctest::Contains("CLUSTER_SYNC: a cluster statement in kernel unclustered, which runs in no cluster"), Error);
  auto in0 = placeholder({64, 32}, dtypes::float32, 0);  // (slot 0: the kernel's only buffer)
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"wide_mask", 2}, {tma_load_multicast(tile[zero], in0, bar[zero], z, z, 32, 32, WgmmaSwizzle::None, i32(4))})),
                       doctest::Contains("the CTA mask 4 names no CTA or one past the cluster of 2"), Error);
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"far_rank", 2}, {mbarrier_arrive_cluster(bar[zero], i32(2))})),
                       doctest::Contains("CTA rank 2 is not in the cluster of 2"), Error);
  // A cluster barrier under a condition: not every thread would arrive.
  auto wg = range(4, 0, AxisType::GLOBAL);
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"conditional_sync", 2}, {when(wg < 2, {cluster_sync()}).end({wg})})),
                       doctest::Contains("CLUSTER_SYNC inside when("), Error);
  // Only sm_90 has clusters: a kernel of no Hopper statement in clusters is refused elsewhere too.
  const lower::LoweredKernel clustered = lowered_for_warps(sink({"clustered", 2}, {out[range(64, 0, AxisType::GLOBAL)].store(constant(1.0, dtypes::float32))
                                                                                       .end({range(64, 0, AxisType::GLOBAL)})}));
  CHECK_THROWS_WITH_AS(cuda::render_cuda(clustered, 80), doctest::Contains("runs in clusters of 2 CTAs, which need sm_90"), Error);
  CHECK(cuda::render_cuda(clustered, 90).find("__cluster_dims__(2, 1, 1)") != std::string::npos);
#ifdef WEFT_HAVE_LLVM
  auto emu = rt::open_device("emu:gfx950");
  CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*emu, sink({"clustered", 2}, {out[range(64, 0, AxisType::GLOBAL)].store(constant(1.0, dtypes::float32))
                                                                                     .end({range(64, 0, AxisType::GLOBAL)})})),
                       doctest::Contains("AMDGPU renderer: kernel clustered runs in thread-block clusters of 2 workgroups"), Error);
#endif
}

TEST_CASE("Hopper: shared memory past 48 KiB is dynamic, sized for the launch") {
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  const UOp big = big_shared_copy(16384, 256);  // 64 KiB
  const std::string src = compiles_sm90(big, {"extern __shared__", "weft_dynamic_shared_big_shared_copy = 65536ull"}, "sm_90");
  CHECK(cuda::dynamic_shared_bytes(lowered_for_warps(big)) == 65536);
  // 32 KiB stays static.
  const lower::LoweredKernel small = lowered_for_warps(big_shared_copy(8192, 256));
  CHECK(cuda::dynamic_shared_bytes(small) == 0);
  const std::string small_src = cuda::render_cuda(small, 90);
  CHECK(small_src.find("extern __shared__") == std::string::npos);
  // Every kernel names its dynamic size, 0 here, so the device's lookup of it never fails.
  CHECK(small_src.find("weft_dynamic_shared_big_shared_copy = 0ull") != std::string::npos);
}

TEST_CASE("Hopper: other targets reject mbarrier and wgmma, naming the node, and the builder checks operands") {
  const lower::LoweredKernel k = lowered_for_warps(wgmma_kernel(64, 16, dtypes::bfloat16, WgmmaSwizzle::None));
  CHECK_THROWS_WITH_AS(cuda::render_cuda(k, 80), doctest::Contains("needs sm_90a"), Error);
  CHECK_THROWS_WITH_AS(cuda::nvrtc_arch(k, 80), doctest::Contains("WGMMA"), Error);
  CHECK_THROWS_WITH_AS(cuda::nvrtc_arch(lowered_for_warps(mbarrier_kernel(64)), 100), doctest::Contains("MBARRIER"), Error);
  auto bar32 = alloc_shared({1}, dtypes::int32);
  CHECK_THROWS_WITH_AS(mbarrier_arrive(bar32[constant(Wide(0))]), doctest::Contains("uint64"), Error);
  auto g = placeholder({1}, dtypes::uint64, 0);
  CHECK_THROWS_WITH_AS(mbarrier_init(g[constant(Wide(0))], 1), doctest::Contains("LOCAL"), Error);
  auto bar = alloc_shared({1}, dtypes::uint64);
  CHECK_THROWS_WITH_AS(mbarrier_init(bar[constant(Wide(0))], 0), doctest::Contains("arrival count"), Error);
  auto a_s = alloc_shared({1024}, dtypes::bfloat16);
  auto acc = placeholder({32}, dtypes::float32, fresh_id(), AddrSpace::REG);
  const MatrixLayoutArg plain{128, 256, WgmmaSwizzle::None};
  CHECK_THROWS_WITH_AS(wgmma(acc[constant(Wide(0))], a_s[constant(Wide(0))], a_s[constant(Wide(0))], 12, dtypes::bfloat16, plain, plain),
                       doctest::Contains("steps of 8"), Error);
  CHECK_THROWS_WITH_AS(wgmma(acc[constant(Wide(0))], a_s[constant(Wide(0))], a_s[constant(Wide(0))], 128, dtypes::bfloat16, plain, plain),
                       doctest::Contains("needs 64"), Error);
  CHECK_THROWS_WITH_AS(wgmma(acc[constant(Wide(8))], a_s[constant(Wide(0))], a_s[constant(Wide(0))], 64, dtypes::bfloat16, plain, plain),
                       doctest::Contains("registers 8 .. 39 lie outside its buffer of 32 floats per thread"), Error);
  CHECK_THROWS_WITH_AS(wgmma(acc[constant(Wide(0))], a_s[constant(Wide(0))], a_s[constant(Wide(0))], 64, dtypes::float16, plain, plain),
                       doctest::Contains("A must index"), Error);
  CHECK_THROWS_WITH_AS(wgmma(acc[constant(Wide(0))], a_s[constant(Wide(0))], a_s[constant(Wide(0))], 64, dtypes::bfloat16, {100, 256}, plain),
                       doctest::Contains("multiple of 16"), Error);
  CHECK_THROWS_WITH_AS(wgmma_wait(8), doctest::Contains("0..7"), Error);
  // A swizzled TMA box's rows fit the swizzle's span: 128 or 64 bytes.
  auto tensor = placeholder({256, 256}, dtypes::bfloat16, 1);
  const UOp zero32 = constant(Wide(0), dtypes::int32);
  CHECK_THROWS_WITH_AS(tma_load(a_s[constant(Wide(0))], tensor, bar[constant(Wide(0))], zero32, zero32, 8, 128, WgmmaSwizzle::B128),
                       doctest::Contains("a 128-byte swizzle takes rows of at most 128 bytes, the box's are 256"), Error);
  CHECK_THROWS_WITH_AS(tma_load(a_s[constant(Wide(0))], tensor, bar[constant(Wide(0))], zero32, zero32, 8, 64, WgmmaSwizzle::B64),
                       doctest::Contains("a 64-byte swizzle takes rows of at most 64 bytes, the box's are 128"), Error);
  const UOp load64 = tma_load(a_s[constant(Wide(0))], tensor, bar[constant(Wide(0))], zero32, zero32, 8, 32, WgmmaSwizzle::B64);
  CHECK(graph_string(load64).find("box=8x32 swizzle=64B") != std::string::npos);
#ifdef WEFT_HAVE_LLVM
  // The AMD renderer names the node.
  auto emu = rt::open_device("emu:gfx950");
  CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*emu, mbarrier_kernel(64)), doctest::Contains("AMDGPU renderer: MBARRIER"), Error);
#endif
}

namespace {

struct WgmmaCase {
  int64_t n, k;
  WgmmaSwizzle swizzle;
};

void check_wgmma(rt::Device& dev, const WgmmaCase& c, DType input, bool identity, bool a_registers = false) {
  CAPTURE(a_registers);
  CAPTURE(c.n);
  CAPTURE(c.k);
  CAPTURE(static_cast<int>(c.swizzle));
  CAPTURE(input.name());
  CAPTURE(identity);
  const auto k = rt::CompiledKernel::compile(dev, wgmma_kernel(c.n, c.k, input, c.swizzle, a_registers));
  const FloatFormat format = input == dtypes::float16 ? FloatFormat::Float16 : FloatFormat::BFloat16;
  auto random_tile = [&](size_t n, std::vector<double>& values) {
    std::vector<uint16_t> bits(n);
    values.resize(n);
    const std::vector<float> f = weft::testing::random_floats(n, -2.0f, 2.0f);
    for (size_t i = 0; i < n; ++i) {
      bits[i] = static_cast<uint16_t>(encode_float(format, f[i]));
      values[i] = decode_float(format, bits[i]);
    }
    return bits;
  };
  std::vector<double> av, bv;
  const std::vector<uint16_t> a = random_tile(static_cast<size_t>(64 * c.k), av);
  std::vector<uint16_t> b = random_tile(static_cast<size_t>(c.n * c.k), bv);
  if (identity)  // B[n][k] = (n == k): C[m][n] = A[m][n] for n < K, exactly
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t kk = 0; kk < c.k; ++kk) {
        bv[n * c.k + kk] = n == kk ? 1.0 : 0.0;
        b[n * c.k + kk] = static_cast<uint16_t>(encode_float(format, bv[n * c.k + kk]));
      }
  const rt::DeviceArray args[] = {weft::testing::poisoned(dev, dtypes::float32, 64 * c.n), weft::testing::put(dev, input, a),
                                  weft::testing::put(dev, input, b)};
  k.launch(dev, args);
  const std::vector<float> got = weft::testing::get<float>(dev, args[0]);
  weft::testing::check_product_abt(got, av, bv, 64, c.n, c.k, identity);
}

}  // namespace

TEST_CASE("Hopper: wgmma tiles and K loops against a host reference on an H200 [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (const WgmmaCase& c : {WgmmaCase{64, 16, WgmmaSwizzle::None}, WgmmaCase{128, 16, WgmmaSwizzle::None}, WgmmaCase{64, 64, WgmmaSwizzle::None},
                             WgmmaCase{128, 64, WgmmaSwizzle::B128}, WgmmaCase{256, 64, WgmmaSwizzle::B128}})
    for (DType input : {dtypes::bfloat16, dtypes::float16})
      for (bool identity : {true, false}) check_wgmma(*dev, c, input, identity);
}

TEST_CASE("Hopper: wgmma with A from registers against a host reference (identity bit-exact) [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (const WgmmaCase& c : {WgmmaCase{64, 16, WgmmaSwizzle::None}, WgmmaCase{64, 64, WgmmaSwizzle::None}, WgmmaCase{128, 64, WgmmaSwizzle::B128}})
    for (DType input : {dtypes::bfloat16, dtypes::float16})
      for (bool identity : {true, false}) check_wgmma(*dev, c, input, identity, true);
}

TEST_CASE("Hopper: TMA loads of 2-D boxes with ragged edges (zeros past them), with and without the 128-byte swizzle [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (WgmmaSwizzle sw : {WgmmaSwizzle::None, WgmmaSwizzle::B128}) {
    const TmaCase c{100, 72, 32, 32, sw};
    CAPTURE(static_cast<int>(sw));
    const auto k = rt::CompiledKernel::compile(*dev, tma_kernel(c));
    const std::vector<float> in = weft::testing::random_floats(static_cast<size_t>(c.rows * c.cols));
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, c.out_elements()), weft::testing::put(*dev, dtypes::float32, in)};
    k.launch(*dev, args);
    const std::vector<float> got = weft::testing::get<float>(*dev, args[0]);
    int bad = 0;
    for (int64_t g = 0; g < c.tiles_r() * c.tiles_c(); ++g)
      for (int64_t r = 0; r < c.box_rows; ++r)
        for (int64_t col = 0; col < c.box_cols; ++col) {
          const int64_t gr = g / c.tiles_c() * c.box_rows + r, gc = g % c.tiles_c() * c.box_cols + col;
          const float want = gr < c.rows && gc < c.cols ? in[gr * c.cols + gc] : 0.0f;
          const float have = got[(g * c.box_rows + r) * c.box_cols + col];
          if (std::memcmp(&want, &have, 4) != 0 && bad++ < 5) FAIL_CHECK("box " << g << " (" << r << ", " << col << ") = " << have << ", expected " << want);
        }
    CHECK(bad == 0);
  }
}

TEST_CASE("Hopper: TMA stores of 2-D boxes, ragged edges clipped, through two staging boxes, with and without the 128-byte swizzle [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (WgmmaSwizzle sw : {WgmmaSwizzle::None, WgmmaSwizzle::B128}) {
    const TmaCase c{100, 72, 32, 32, sw};
    CAPTURE(static_cast<int>(sw));
    const auto k = rt::CompiledKernel::compile(*dev, tma_store_kernel(c, 4));
    const std::vector<float> in = weft::testing::random_floats(static_cast<size_t>(c.out_elements()));
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, c.rows * c.cols), weft::testing::put(*dev, dtypes::float32, in)};
    k.launch(*dev, args);
    const std::vector<float> got = weft::testing::get<float>(*dev, args[0]);
    int bad = 0;
    for (int64_t gr = 0; gr < c.rows; ++gr)
      for (int64_t gc = 0; gc < c.cols; ++gc) {
        const int64_t b = gr / c.box_rows * c.tiles_c() + gc / c.box_cols;
        const float want = in[b * c.box_rows * c.box_cols + gr % c.box_rows * c.box_cols + gc % c.box_cols];
        const float have = got[gr * c.cols + gc];
        if (std::memcmp(&want, &have, 4) != 0 && bad++ < 5) FAIL_CHECK("(" << gr << ", " << gc << ") = " << have << ", expected " << want);
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("Hopper: clusters of two CTAs share a tile by multicast TMA, ragged rows zero-filled, and release each other's barriers [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const ClusterCase c{3, 90, 16, 32};  // 3 clusters of 2 x 16 rows: the last 6 rows past the tensor
  const auto k = rt::CompiledKernel::compile(*dev, cluster_multicast_kernel(c, 2 * c.clusters));
  const std::vector<float> in = weft::testing::random_floats(static_cast<size_t>(c.rows * c.cols));
  const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, 2 * c.clusters * c.tile()), weft::testing::put(*dev, dtypes::float32, in)};
  k.launch(*dev, args);
  const std::vector<float> got = weft::testing::get<float>(*dev, args[0]);
  int bad = 0;
  for (int64_t g = 0; g < 2 * c.clusters; ++g)  // both CTAs of a cluster hold its whole tile
    for (int64_t e = 0; e < c.tile(); ++e) {
      const int64_t row = g / 2 * 2 * c.box_rows + e / c.cols;
      const float want = row < c.rows ? in[row * c.cols + e % c.cols] : 0.0f;
      const float have = got[g * c.tile() + e];
      if (std::memcmp(&want, &have, 4) != 0 && bad++ < 5) FAIL_CHECK("CTA " << g << " element " << e << " = " << have << ", expected " << want);
    }
  CHECK(bad == 0);
  // A grid that is not a multiple of the cluster is refused before the launch.
  const auto odd = rt::CompiledKernel::compile(*dev, cluster_multicast_kernel(c, 5));
  const rt::DeviceArray odd_args[] = {weft::testing::poisoned(*dev, dtypes::float32, 5 * c.tile()), weft::testing::put(*dev, dtypes::float32, in)};
  CHECK_THROWS_WITH_AS(odd.launch(*dev, odd_args), doctest::Contains("grid dimension 0 is 5, not a multiple of its cluster of 2 CTAs"), Error);
}

TEST_CASE("Hopper: two mbarrier phases order shared-memory writes between threads [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const int64_t threads = 128;
  const auto k = rt::CompiledKernel::compile(*dev, mbarrier_kernel(threads));
  const std::vector<int32_t> in = weft::testing::random_ints(threads, -1000000, 1000000);
  const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::int32, 2 * threads), weft::testing::put(*dev, dtypes::int32, in)};
  k.launch(*dev, args);
  const std::vector<int32_t> got = weft::testing::get<int32_t>(*dev, args[0]);
  for (int64_t t = 0; t < threads; ++t) {
    CHECK(got[t] == in[(t + 1) % threads]);
    CHECK(got[t + threads] == in[(t + 1) % threads] * 2);
  }
}

TEST_CASE("Hopper: a 64 KiB shared buffer (dynamic shared memory) copies exactly [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const int64_t n = 16384;
  const auto k = rt::CompiledKernel::compile(*dev, big_shared_copy(n, 256));
  const std::vector<float> in = weft::testing::random_floats(n);
  const std::vector<float> got = weft::testing::run_float_kernel(*dev, k, in, n);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != in[n - 1 - i] && bad++ < 5) FAIL_CHECK("out[" << i << "] = " << got[i] << ", expected " << in[n - 1 - i]);
  CHECK(bad == 0);
}

namespace {

// A producer loop in one warp (mbarrier waits and arrivals over `steps`), another warp's loop
// waiting on it: two warp-uniform when() regions holding Hopper statements. Slots: 0 out.
UOp two_roles(int64_t steps, int64_t wave = 32) {
  auto out = placeholder({2 * wave}, dtypes::int32, 0);
  auto bar = alloc_shared({2}, dtypes::uint64);
  auto lane = range(wave, 0, AxisType::LOCAL);
  auto warp = range(2, 1, AxisType::WARP);
  auto zero = constant(Wide(0)), one = constant(Wide(1));
  auto ready = barrier({group({mbarrier_init(bar[zero], wave), mbarrier_init(bar[one], wave)})});
  auto i = range(steps, 2, AxisType::LOOP);
  auto parity = (i % 2).cast(dtypes::int32);
  auto freed = mbarrier_wait(bar[one], parity ^ 1, {ready});
  auto produced = mbarrier_arrive(bar[zero], {freed}).end({i});
  auto j = range(steps, 3, AxisType::LOOP);
  auto landed = mbarrier_wait(bar[zero], (j % 2).cast(dtypes::int32), {ready});
  auto consumed = mbarrier_arrive(bar[one], {landed}).end({j});
  auto store = out[warp * wave + lane].store(constant(Wide(7), dtypes::int32));
  return sink({"two_roles"}, {group({when(warp.eq(0), {produced}), when(warp.eq(1), {consumed}), store}).end({lane, warp})});
}

}  // namespace

namespace {

// Three warpgroups (12 warps of 32 lanes, hopper_gemm's shape): the first lowers its register
// budget to `low`, the other two raise theirs to `high`, each inside its role. Then every thread
// writes its index. Slots: 0 out [384] int32.
UOp register_budgets(int64_t low, int64_t high) {
  auto out = placeholder({384}, dtypes::int32, 0);
  auto lane = range(32, 0, AxisType::LOCAL);
  auto warp = range(12, 1, AxisType::WARP);
  auto thread = warp * 32 + lane;
  const UOp lower_budget = set_max_registers(low, RegisterBudget::Lower), raise_budget = set_max_registers(high, RegisterBudget::Raise);
  auto lowered = when(warp < 4, {lower_budget});
  auto raised = when(warp >= 4, {raise_budget});
  auto ids = out.after({lowered, raised})[thread].store(thread.cast(dtypes::int32));
  return sink({"register_budgets"}, {group({lowered, raised, ids}).end({lane, warp})});
}

}  // namespace

TEST_CASE("Hopper: setmaxnreg lowers one warpgroup's register budget and raises the others', inside their roles, and compiles for sm_90a") {
  const lower::LoweredKernel k = lowered_for_warps(register_budgets(40, 232));
  CHECK(weft::testing::hopper_statements_outside_roles(k) == 0);
  CHECK_THROWS_WITH_AS(set_max_registers(20, RegisterBudget::Lower), doctest::Contains("a budget of 20 registers a thread; setmaxnreg takes 24 .. 256 in steps of 8"),
                       Error);
  CHECK_THROWS_WITH_AS(set_max_registers(236, RegisterBudget::Raise), doctest::Contains("24 .. 256 in steps of 8"), Error);
  CHECK_THROWS_WITH_AS(set_max_registers(264, RegisterBudget::Raise), doctest::Contains("264"), Error);
  CHECK_THROWS_WITH_AS(set_max_registers(-40, RegisterBudget::Raise), doctest::Contains("a budget of -40 registers"), Error);
  CHECK(graph_string(set_max_registers(40, RegisterBudget::Lower)).find("SETMAXNREG") != std::string::npos);
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  // One block a multiprocessor fixes the budget at entry (65536 / 384 = 168 registers a thread),
  // so ptxas applies both statements; where it cannot tell that budget it drops them with a note
  // (C7508) that its verbose log shows, as for the same statements under a plain launch bound.
  const std::string src = compiles_sm90(register_budgets(40, 232),
                                        {"__launch_bounds__(384, 1)", "setmaxnreg.dec.sync.aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 232;"}, "sm_90a");
  const std::vector<std::string> verbose{"--ptxas-options=-v"};
  CHECK(rt::nvrtc_compile_with_log(src, k.name, "sm_90a", verbose).log.find("C7508") == std::string::npos);
  const std::string plain_bound = R"(extern "C" __global__ void __launch_bounds__(384) dropped(int* out) {
  if (threadIdx.x < 128) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
  else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
  out[threadIdx.x] = threadIdx.x;
})";
  CHECK(rt::nvrtc_compile_with_log(plain_bound, "dropped", "sm_90a", verbose).log.find("C7508") != std::string::npos);
}

TEST_CASE("Hopper: a kernel that lowers and raises warpgroups' register budgets runs [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const auto k = rt::CompiledKernel::compile(*dev, register_budgets(40, 232));
  const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::int32, 384)};
  k.launch(*dev, args);
  const std::vector<int32_t> got = weft::testing::get<int32_t>(*dev, args[0]);
  for (int32_t t = 0; t < 384; ++t) CHECK(got[t] == t);
}

TEST_CASE("when(): a warp-uniform region holding Hopper statements is one branch around its loops") {
  const lower::LoweredKernel k = lowered_for_warps(two_roles(5));
  int depth = 0, branches = 0, loops_inside = 0, mbarrier_ops = 0;
  for (const lower::LinearOp& s : k.program) {
    if (s.kind == lower::LinearOp::Kind::BranchBegin) ++depth, ++branches;
    if (s.kind == lower::LinearOp::Kind::BranchEnd) --depth;
    if (s.kind == lower::LinearOp::Kind::LoopBegin && depth > 0) ++loops_inside;
    if (s.kind == lower::LinearOp::Kind::Effect && s.op.op() == Op::MBARRIER) ++mbarrier_ops;
    CHECK(depth >= 0);
  }
  CHECK(depth == 0);
  CHECK(branches == 2);
  CHECK(loops_inside == 2);
  CHECK(mbarrier_ops == 6);  // 2 inits, then each role's wait and arrival, written once
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  compiles_sm90(two_roles(5), {"mbarrier.try_wait.parity"}, "sm_90a");
}

TEST_CASE("when(): a role's loop-invariant value is written before the role's loop, inside its region") {
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto lane = range(32, 0, AxisType::LOCAL);
  auto warp = range(2, 1, AxisType::WARP);
  auto zero = constant(Wide(0));
  auto ready = barrier({mbarrier_init(bar[zero], 32)});
  auto i = range(4, 2, AxisType::LOOP);
  auto offset = (variable("role_rows", 1, 64) * 3 / variable("role_cols", 1, 64)).cast(dtypes::index);  // invariant in i
  auto loop = mbarrier_wait(bar[zero], ((i + offset) % 2).cast(dtypes::int32), {ready}).end({i});
  const lower::LoweredKernel k = lowered_for_warps(sink({"role_invariant"}, {when(warp.eq(0), {loop}).end({lane, warp})}));
  int branch_depth = 0, loop_depth = 0, divisions = 0;
  for (const lower::LinearOp& s : k.program) {
    if (s.kind == lower::LinearOp::Kind::BranchBegin) ++branch_depth;
    if (s.kind == lower::LinearOp::Kind::BranchEnd) --branch_depth;
    if (s.kind == lower::LinearOp::Kind::LoopBegin) ++loop_depth;
    if (s.kind == lower::LinearOp::Kind::LoopEnd) --loop_depth;
    if (s.kind != lower::LinearOp::Kind::Value || s.op.op() != Op::IDIV) continue;
    ++divisions;
    CHECK(branch_depth == 1);  // not hoisted out of the role: other warps never compute it
    CHECK(loop_depth == 0);    // but before the role's loop, once
  }
  CHECK(divisions == 1);
  if (!rt::nvrtc_available()) WEFT_SKIP(kNoNvrtc);
  compiles_sm90(sink({"role_invariant"}, {when(warp.eq(0), {loop}).end({lane, warp})}), {"mbarrier.try_wait.parity"}, "sm_90a");
}

TEST_CASE("when(): Hopper statements on a lane-varying condition, and a region's effect named outside it, are errors") {
  auto bar = alloc_shared({1}, dtypes::uint64);
  auto lane = range(32, 0, AxisType::LOCAL);
  auto zero = constant(Wide(0));
  auto ready = barrier({mbarrier_init(bar[zero], 32)});
  auto arrive = mbarrier_arrive(bar[zero], {ready});
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"lane_role"}, {when(lane < 16, {arrive}).end({lane})})),
                       doctest::Contains("not wave-uniform"), Error);
  auto warp = range(2, 1, AxisType::WARP);
  auto i = range(3, 2, AxisType::LOOP);
  auto loop = mbarrier_wait(bar[zero], (i % 2).cast(dtypes::int32), {ready}).end({i});
  // The loop is the region's, and a barrier outside the region comes after it too.
  auto outside = barrier({loop});
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"named_outside"}, {group({when(warp.eq(0), {loop}), outside}).end({lane, warp})})),
                       doctest::Contains("named outside it"), Error);
  // Either order: named outside first, then by the region.
  CHECK_THROWS_WITH_AS(lowered_for_warps(sink({"named_outside_first"}, {group({outside, when(warp.eq(0), {loop})}).end({lane, warp})})),
                       doctest::Contains("named outside it"), Error);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("when(): the AMD renderer rejects a kernel of Hopper roles, naming what it cannot render") {
  // Its first Hopper statement (an mbarrier init before the regions) or a region kept as one branch.
  auto emu = rt::open_device("emu:gfx950");
  CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*emu, two_roles(3, 64)), doctest::Contains("sm_90a"), Error);
}
#endif
