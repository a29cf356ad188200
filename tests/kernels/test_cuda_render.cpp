// The CUDA renderer and NVRTC, without a GPU: every kernel of the kernel tests renders to CUDA
// C++ that NVRTC compiles for sm_90 (and sm_80). Reported to ctest as skipped where NVRTC is
// absent.
#include <doctest/doctest.h>


#include "skip.h"
#include "weft/dsl/builder.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mma_tile.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/nvrtc.h"

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

}  // namespace

TEST_CASE("CUDA: matmul_relu (float32, float16) and the mma.sync tile render and compile with NVRTC") {
  if (!have_nvrtc()) WEFT_SKIP(kNoNvrtc);
  compiles(gemm::matmul_relu(256, 256, 256, dtypes::float32), "__syncthreads();");
  compiles(gemm::matmul_relu(512, 384, 320, dtypes::float16), "weft_f2h");
  compiles(gemm::mma_tile(dtypes::float16), "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
  compiles(gemm::mma_tile(dtypes::bfloat16), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  compiles(gemm::mma_gemm(256, 256, 256, dtypes::bfloat16), "cp.async.cg.shared.global");
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

// Lowered for 32-lane warps, as CompiledKernel does for a CUDA device.
void compiles_for_warps(const UOp& kernel, const std::vector<const char*>& must_contain) {
  lower::LowerOptions options;
  options.wave_size = 32;
  auto lowered = lower::lower(kernel, options);
  const std::string src = cuda::render_cuda(lowered, 90);
  INFO(src);
  for (const char* m : must_contain) CHECK(src.find(m) != std::string::npos);
  CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
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
  compiles_for_warps(sink({"cross_thread"}, {group(effects).end({lane, w})}),
                     {"__shfl_xor_sync", "__shfl_up_sync", "__shfl_down_sync", "__ballot_sync", "__any_sync", "atomicAdd_system",
                      "atomicMax_block", "atomicCAS", "atom.relaxed.gpu.add.noftz.bf16x2", "membar.cta;", "add.s32"});
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
