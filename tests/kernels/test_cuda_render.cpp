// The CUDA renderer and NVRTC, without a GPU: every kernel of the kernel tests renders to CUDA
// C++ that NVRTC compiles for sm_90 (and sm_80). Reported to ctest as skipped where NVRTC is
// absent.
#include <doctest/doctest.h>

#include <algorithm>

#include "occurrences.h"
#include "skip.h"
#include "weft/dsl/builder.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mma_tile.h"
#include "weft/kernels/tiles.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/nvrtc.h"

using weft::testing::occurrences;

using namespace weft;

namespace {

bool have_nvrtc() { return rt::nvrtc_available(); }
constexpr const char* kNoNvrtc = "NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here";

void compiles(const UOp& kernel, const char* must_contain = nullptr) {
  auto lowered = lower::lower(kernel);
  for (int sm : {80, 90}) {
    CAPTURE(sm);
    const std::string src = cuda::render_cuda(lowered, sm);
    INFO(src);
    if (must_contain) CHECK(src.find(must_contain) != std::string::npos);
    auto cubin = rt::nvrtc_compile(src, lowered.name, "sm_" + std::to_string(sm));
    CHECK(cubin.size() > 0);
  }
}

// Lowered for 32-lane warps, as CompiledKernel does for a CUDA device.
std::string compiles_for_warps(const UOp& kernel, const std::vector<const char*>& must_contain) {
  lower::LowerOptions options;
  options.wave_size = 32;
  auto lowered = lower::lower(kernel, options);
  const std::string src = cuda::render_cuda(lowered, 90);
  INFO(src);
  for (const char* m : must_contain) CHECK(src.find(m) != std::string::npos);
  CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
  return src;
}

}  // namespace

TEST_CASE("CUDA: matmul_relu (float32, float16) and the mma.sync tile render and compile with NVRTC") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  compiles(gemm::matmul_relu(256, 256, 256, dtypes::float32), "__syncthreads();");
  compiles(gemm::matmul_relu(512, 384, 320, dtypes::float16), "weft_f2h");
  compiles_for_warps(gemm::mma_tile(dtypes::float16), {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"});
  compiles_for_warps(gemm::mma_tile(dtypes::bfloat16), {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"});
}

namespace {

}  // namespace

TEST_CASE("CUDA: mma_gemm on the tile layer renders a two-stage cp.async pipeline of mma.sync and compiles for sm_90") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  for (DType input : {dtypes::bfloat16, dtypes::float16}) {
    CAPTURE(input.name());
    const std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") + (input == dtypes::bfloat16 ? "bf16.bf16" : "f16.f16") + ".f32";
    const std::string src = compiles_for_warps(gemm::mma_gemm(256, 256, 256, input), {mma.c_str()});
    // 16-byte copies: A's and B's 128 x 32 and 32 x 128 tiles are 2 rounds of 256 threads x 8
    // elements each, in the prologue and in the loop; the loop's read zeros past K (a zero source
    // size under the guard).
    CHECK(occurrences(src, "cp.async.cg.shared.global [%0], [%1], 16, %2;") == 8);
    CHECK(occurrences(src, "? 16u : 0u") == 4);
    CHECK(occurrences(src, "cp.async.ca") == 0);
    // One group per stage fill, committed by the kernel; the loop waits for all but the newest.
    CHECK(occurrences(src, "cp.async.commit_group;") == 2);
    CHECK(occurrences(src, "cp.async.wait_group 1;") == 1);
    CHECK(occurrences(src, "cp.async.wait_group 0;") == 1);
    CHECK(occurrences(src, "commit_group;\\n\\tcp.async.wait_group 0") == 0);  // no barrier drains the copies
    // Per warp and K step: 4 x 2 sub-tiles of 16 x 16, 2 k steps, 2 instructions each.
    CHECK(occurrences(src, mma) == 32);
    CHECK(occurrences(src, "__syncthreads();") == 2);
    // The order: prologue fills and commit, then in the loop the prefetch, its commit, wait 1,
    // the barrier, the MMAs, the write-after-read barrier; after the loop the drain.
    const size_t loop = src.find("for ("), first_commit = src.find("cp.async.commit_group;"),
                 commit = src.find("cp.async.commit_group;", first_commit + 1), wait1 = src.find("cp.async.wait_group 1;"),
                 bar = src.find("__syncthreads();"), first_mma = src.find(mma), last_mma = src.rfind(mma), war = src.rfind("__syncthreads();"),
                 drain = src.find("cp.async.wait_group 0;");
    CHECK(first_commit < loop);
    CHECK(loop < commit);
    CHECK(commit < wait1);
    CHECK(wait1 < bar);
    CHECK(bar < first_mma);
    CHECK(last_mma < war);
    CHECK(war < drain);
    CHECK(src.find("16u : 0u", loop) < commit);  // the prefetch is inside the loop, before its commit
    // Per warp and K step, A's 4 x 2 sub-tiles of 16 x 16 are 8 ldmatrix.x4 from the 64-byte
    // swizzled tile, and B's 2 x 2 (K x N, k down its rows) 4 ldmatrix.x4.trans: no 2-byte or
    // 4-byte shared reads.
    CHECK(occurrences(src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 8);
    CHECK(occurrences(src, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 4);
    CHECK(occurrences(src, "weft_unsigned_short_2*>") == 0);
  }
}

TEST_CASE("tile layer on NVIDIA: mma.sync m16n8k16 from the catalog, two per 16 x 16 sub-tile and wave sizes are checked") {
  using tile::MatrixOperand;
  const tile::Workgroup warps("sm_90", {constant(Wide(1))}, 2, 4, 32);
  CHECK(tile::mma_shape(warps, dtypes::bfloat16) == WmmaArg{16, 8, 16, dtypes::bfloat16, dtypes::float32, 32});
  CHECK(tile::operand_layout(warps, dtypes::float16, MatrixOperand::A) == tile::mma_m16n8k16_operand(dtypes::float16, MatrixOperand::A));
  // B (k x 16) and C (16 x 16): registers 0-3 are one instruction's (n 0-7), 4-7 the next one's.
  for (MatrixOperand which : {MatrixOperand::B, MatrixOperand::C}) {
    const tile::Layout one = tile::mma_m16n8k16_operand(dtypes::bfloat16, which), two = tile::operand_layout(warps, dtypes::bfloat16, which);
    REQUIRE(two.bijective());
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t e = 0; e < 8; ++e) {
        tile::Layout::Coords want = one.apply({{"register", e % 4}, {"lane", lane}});
        want["col"] += 8 * (e / 4);
        REQUIRE(two.apply({{"register", e}, {"lane", lane}}) == want);
      }
  }
  const tile::acc c = tile::accumulator(warps, 64, 32);
  CHECK(c.elements == 8);
  CHECK(c.tiles_m() == 4);
  CHECK(c.tiles_n() == 2);
  CHECK_THROWS_WITH_AS(tile::mma_shape(tile::Workgroup("sm_90", {constant(Wide(1))}, 1, 1), dtypes::bfloat16),
                       doctest::Contains("mma.sync on sm_90 runs on 32-lane warps, not waves of 64"), Error);
  CHECK_THROWS_WITH_AS(tile::mma_shape(tile::Workgroup("gfx950", {constant(Wide(1))}, 1, 1, 32), dtypes::bfloat16),
                       doctest::Contains("an MFMA on gfx950 runs on 64-lane waves, not waves of 32"), Error);
  CHECK_THROWS_WITH_AS(tile::mma_shape(warps, dtypes::float32), doctest::Contains("bfloat16 or float16 inputs, not float32"), Error);
  CHECK_THROWS_WITH_AS(tile::mma_shape(tile::Workgroup("gfx90a", {constant(Wide(1))}, 1, 1), dtypes::bfloat16),
                       doctest::Contains("no MFMA or mma.sync on target 'gfx90a'"), Error);
  CHECK_THROWS_WITH_AS(gemm::mma_gemm(128, 128, 48, dtypes::bfloat16), doctest::Contains("K of 32; got M=128, N=128, K=48"), Error);
}

TEST_CASE("CUDA: cp.async for global-to-shared copies, wave priority as a comment, views with padding") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  UOp in = placeholder({8, 256}, dtypes::float32, 1), out = placeholder({8, 256}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL), r = range(8, 1, AxisType::LOOP), r2 = range(8, 2, AxisType::LOOP);
  UOp lds = alloc_shared({8, 256}, dtypes::float32, 0);
  UOp copy = async_copy(lds[{r, l * 4}], in[{r, l * 4}], 4).end({r});
  UOp k = sink({"cp_async"}, {group({wave_priority(1), out[{r2, l}].store(lds.after({copy})[{r2, 255 - l}].load()).end({r2})}).end({l})});
  compiles(k, "cp.async.cg.shared.global");
  UOp x = placeholder({32}, dtypes::float32, 1);
  UOp v = x.shrink({{0, 4}}).pad({{0, 4}});
  UOp o = placeholder({8}, dtypes::float32, 0);
  UOp i = range(8, 0, AxisType::GLOBAL);
  compiles(sink({"pad"}, {o[i].store(v[i].load() + 1.0).end({i})}), " ? ");
}

TEST_CASE("CUDA: a fenced barrier drains cp.async copies, unless the kernel commits its own groups") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  auto kernel = [](bool commits) {
    UOp in = placeholder({256}, dtypes::float32, 1), out = placeholder({256}, dtypes::float32, 0);
    UOp lane = range(32, 0, AxisType::LOCAL), w = range(2, 1, AxisType::WARP);
    UOp t = w * 32 + lane;
    UOp lds = alloc_shared({256}, dtypes::float32, 0);
    UOp copy = async_copy(lds[t * 4], in[t * 4], 4);
    UOp landed = commits ? wait_counts({.vm = 0}, {async_commit({copy})}) : copy;
    UOp ready = barrier({landed});  // fenced
    return sink({commits ? "own_groups" : "barrier_groups"}, {out[t].store(lds.after({ready})[255 - t].load()).end({lane, w})});
  };
  const std::string drains = "cp.async.commit_group;\\n\\tcp.async.wait_group 0;";
  const std::string by_barrier = compiles_for_warps(kernel(false), {"__syncthreads();"});
  CHECK(occurrences(by_barrier, drains) == 1);
  const std::string own = compiles_for_warps(kernel(true), {"__syncthreads();"});
  CHECK(occurrences(own, drains) == 0);
  CHECK(occurrences(own, "cp.async.commit_group;") == 1);
  CHECK(occurrences(own, "cp.async.wait_group 0;") == 1);
}

TEST_CASE("CUDA: lane operations, thread reductions, WARP ranges, atomics, masks, when and inline PTX compile") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  UOp in = placeholder({256}, dtypes::int32, 1), out = placeholder({1024}, dtypes::int32, 0);
  UOp h = placeholder({4}, dtypes::bfloat16, 2), f = placeholder({4}, dtypes::float32, 3), wide = placeholder({4}, dtypes::int64, 4);
  UOp lane = range(32, 0, AxisType::LOCAL), w = range(8, 1, AxisType::WARP);
  UOp t = w * 32 + lane;
  UOp x = in[t].load();
  UOp zero = constant(Wide(0));
  std::vector<UOp> effects{
      out[t].store(shuffle_xor(x, 1, 32) + shuffle_up(x, 2, 16) + shuffle_down(x, 1, 8) + shuffle(x, x & 7, 32)),
      out[t + 256].store(broadcast(x) + broadcast(x, constant(Wide(5), dtypes::int32)) + wave_reduce(x, Op::MAX, 32)),
      out[t + 512].store(ballot(x > 0, 32).cast(dtypes::int32) + any(x > 9, 32).cast(dtypes::int32) + all(x > 9, 32).cast(dtypes::int32)),
      out[t + 768].store(x.reduce(Op::ADD, {lane, w}), x > 3),
      atomic(AtomicOp::Add, h[zero], vectorize({x.cast(dtypes::bfloat16), x.cast(dtypes::bfloat16)}), Scope::Device),
      atomic(AtomicOp::Add, f[zero], x.cast(dtypes::float32), Scope::System),
      atomic(AtomicOp::Max, wide[zero], x.cast(dtypes::int64), Scope::Workgroup),
      atomic_compare_swap(wide[constant(Wide(1))], constant(Wide(0), dtypes::int64), x.cast(dtypes::int64)),
      when(x < 100, {out[t].store(in[t].load(x > 5, constant(Wide(-1), dtypes::int32)) * 2)}),
      custom("membar.cta;"),
      out[t].store(customi("add.s32 {out}, {0}, {1};", dtypes::int32, {x, x})),
  };
  const std::string src = compiles_for_warps(sink({"cross_thread"}, {group(effects).end({lane, w})}),
                                             {"__shfl_xor_sync", "__shfl_up_sync", "__shfl_down_sync", "__ballot_sync", "__any_sync",
                                              "atomicAdd_system", "atomicMax_block", "atomicCAS", "atom.relaxed.gpu.add.noftz.bf16x2",
                                              "membar.cta;", "add.s32"});
  // A block of whole warps: every lane operation names all 32 lanes, no __activemask() each.
  CHECK(src.find("__activemask") == std::string::npos);
  CHECK(src.find("__shfl_xor_sync(0xffffffffu,") != std::string::npos);
}

TEST_CASE("CUDA: a lane operation's mask is every lane of a whole-warp block, the lanes there are of a smaller one, __activemask() otherwise") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  const auto rendered = [](int64_t threads) {
    UOp in = placeholder({threads}, dtypes::int32, 1), out = placeholder({threads}, dtypes::int32, 0);
    UOp t = range(threads, 0, AxisType::LOCAL);
    UOp x = in[t].load();
    return compiles_for_warps(sink({"lanes"}, {out[t].store(shuffle_xor(x, 1, 8) + ballot(x > 0, 32).cast(dtypes::int32)).end({t})}), {"__shfl_xor_sync"});
  };
  CHECK(rendered(64).find("__shfl_xor_sync(0xffffffffu,") != std::string::npos);
  CHECK(rendered(16).find("__shfl_xor_sync(65535u,") != std::string::npos);
  CHECK(rendered(16).find("__ballot_sync(65535u,") != std::string::npos);
  CHECK(rendered(48).find("__shfl_xor_sync(__activemask(),") != std::string::npos);
}

TEST_CASE("CUDA: an unsupported node is an error naming it") {
  UOp a = placeholder({16}, dtypes::float32, 1), out = placeholder({16}, dtypes::float32, 0);
  UOp lane = range(16, 0, AxisType::LOCAL);
  UOp v = a[lane].load();
  UOp bad = wmma(vectorize({v, v, v, v}), vectorize({v, v, v, v}), vectorize({v, v, v, v}), WmmaArg{8, 8, 8, dtypes::float32, dtypes::float32, 16});
  auto lowered = lower::lower(sink({"bad_mma"}, {out[lane].store(bad.gep(0)).end({lane})}));
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lowered, 90), doctest::Contains("CUDA renders wmma as mma.sync m16n8k16"), Error);
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lowered, 75), doctest::Contains("sm_75 is older than weft supports"), Error);
}

TEST_CASE("CUDA: a transposing LDS read (gfx950's ds_read_b64_tr_b16) is an error naming the load") {
  UOp in = placeholder({256}, dtypes::bfloat16, 1), out = placeholder({256}, dtypes::bfloat16, 0);
  UOp lds = alloc_shared({256}, dtypes::bfloat16);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp fill = lds[l * 4].vec(4).store(in[l * 4].vec(4).load());
  UOp ready = barrier({fill});
  UOp four = lds.after({ready})[l * 4].vec(4).load_transposed();
  auto lowered = lower::lower(sink({"transposed"}, {out[l * 4].vec(4).store(four).end({l})}));
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lowered, 90), doctest::Contains("CUDA renderer: LOAD bfloat16.vec4"), Error);
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lowered, 90), doctest::Contains("a transposing LDS read (gfx950's ds_read_b64_tr_b16) has no CUDA form"), Error);
}

TEST_CASE("NVRTC: a compile error names the kernel and shows NVRTC's log") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  try {
    rt::nvrtc_compile("extern \"C\" __global__ void broken() { undeclared_thing = 1; }", "broken", "sm_90");
    FAIL("NVRTC accepted a broken kernel");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("NVRTC could not compile kernel broken for sm_90") != std::string::npos);
    CHECK(m.find("undeclared_thing") != std::string::npos);  // from NVRTC's log
  }
}

namespace {

// A held load's rendering: the statement that fills element `lane` of the vector load whose
// register named `held...` precedes `at`, e.g. ".v[5] = (unsigned short)(held12w2 >> 16);".
std::string element_fill(const std::string& src, size_t at, int lane) {
  const size_t from = src.find(".v[" + std::to_string(lane) + "] = ", at);
  return from == std::string::npos ? "" : src.substr(from, src.find(';', from) - from);
}

// The CUDA source of a kernel lowered for 32-lane warps, compiled by NVRTC where it is present.
std::string rendered(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  const auto lowered = lower::lower(kernel, options);
  const std::string src = cuda::render_cuda(lowered, 90);
  INFO(src);
  if (have_nvrtc()) CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
  return src;
}

}  // namespace

TEST_CASE("CUDA: a prefetched global load is inline PTX ld.global, which ptxas keeps before later barriers, and other loads stay C++ loads") {
  UOp out = placeholder({64}, dtypes::float32, 0), a = placeholder({64}, dtypes::int32, 1), b = placeholder({64}, dtypes::float32, 2);
  UOp c = placeholder({64}, dtypes::bfloat16, 3), d = placeholder({64}, dtypes::int64, 4), plain = placeholder({64}, dtypes::float32, 5);
  UOp row = placeholder({64 * 8}, dtypes::bfloat16, 6), pairs = placeholder({64 * 2}, dtypes::float32, 7), bytes = placeholder({64 * 4}, dtypes::uint8, 8);
  UOp l = range(64, 0, AxisType::LOCAL);
  const auto zeros = [](int n, DType dt) { return vectorize(std::vector<UOp>(static_cast<size_t>(n), constant(0.0, dt))); };
  // Vector loads: 8 bfloat16 (16 bytes, four 32-bit words), 2 float32 (8 bytes), 4 uint8 (one
  // word); and 8 bfloat16 at an offset not known to be aligned, which stays a C++ load.
  const UOp v8 = row[l * 8].vec(8).load(l < 50, zeros(8, dtypes::bfloat16));
  const UOp v2 = pairs[l * 2].vec(2).load(), v4 = bytes[l * 4].vec(4).load();
  const UOp unaligned = row[l * 7 + 1].vec(2).load();
  const Prefetched held = prefetch({a[l].load(l < 40, constant(Wide(-1), dtypes::int32)), b[l].load(), c[l].load(), d[l].load(), v8.gep(0), v8.gep(5),
                                    v2.gep(1), v4.gep(0), v4.gep(3), unaligned.gep(1)});
  UOp shared = alloc_shared({64}, dtypes::float32, 0);
  UOp put = shared[l].store(plain[l].load() * 2.0);
  UOp sum = shared.after({put})[63 - l].load();
  for (const UOp& v : held.values) sum = sum + (v.dtype() == dtypes::float32 ? v : v.cast(dtypes::float32));
  const std::string src = rendered(sink({"held_loads"}, {group({held.issued, out[l].store(sum)}).end({l})}));
  for (const char* form : {"ld.global.b32 %0,", "ld.global.f32", "ld.global.b16", "ld.global.b64", "ld.global.v4.b32", "ld.global.v2.b32"}) {
    CAPTURE(form);
    CHECK(src.find(form) != std::string::npos);
  }
  CHECK(occurrences(src, "asm volatile(\"ld.global.") == 7);  // not the unaligned vector, nor `plain`
  // Elements from their words, little-endian: bfloat16 5 the high half of word 2, float32 1 word
  // 1's bits, uint8 3 the top byte of word 0.
  const size_t at_v4 = src.find("ld.global.v4.b32"), at_v2 = src.find("ld.global.v2.b32"), at_b8 = src.find("w0; asm volatile(\"ld.global.b32");
  CHECK(element_fill(src, at_v4, 0).find("= (unsigned short)held") != std::string::npos);
  CHECK(element_fill(src, at_v4, 0).ends_with("w0"));
  CHECK(element_fill(src, at_v4, 5).ends_with("w2 >> 16)"));
  CHECK(element_fill(src, at_v2, 1).find("= __uint_as_float(held") != std::string::npos);
  CHECK(element_fill(src, at_v2, 1).ends_with("w1)"));
  CHECK(element_fill(src, at_b8, 3).find("= (unsigned char)(held") != std::string::npos);
  CHECK(element_fill(src, at_b8, 3).ends_with("w0 >> 24)"));
  CHECK(src.find("ld.global.f32") < src.find("__syncthreads()"));
  CHECK(src.find(") { asm volatile(\"ld.global.b32") != std::string::npos);  // the masked one, under its mask (its fill set before)
}

TEST_CASE("CUDA: a masked load of bfloat16 (carried as unsigned short) fills with a zero C++ accepts") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  // Rendered once as `unsigned short{}`, which NVRTC rejects ("type name is not allowed").
  UOp in = placeholder({64}, dtypes::bfloat16, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp x = in[l].load(l < 40, constant(0.0, dtypes::bfloat16)).cast(dtypes::float32);
  compiles(sink({"masked_bf16_load"}, {out[l].store(x).end({l})}), "static_cast<unsigned short>(0)");
}
