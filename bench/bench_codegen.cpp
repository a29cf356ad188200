// Compile latency of the in-process AMDGPU code generator (LLVM IR text to a linked code
// object), split into parsing, LLVM's code generator and lld. The kernel is a 64x64-tile fp32
// matmul with an LDS-staged K loop: the shape of what weft's pipeline will hand to LLVM.
// Peers (issue 4): TileLang takes 8-21 s per kernel, CuTe DSL up to minutes.
#include <benchmark/benchmark.h>

#include "weft/lowering/amdgpu_codegen.h"

namespace {

const char* kTiledMatmul = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workgroup.id.y()
declare void @llvm.amdgcn.s.barrier()
declare float @llvm.fma.f32(float, float, float)
@As = internal addrspace(3) global [1024 x float] undef
@Bs = internal addrspace(3) global [1024 x float] undef
; C[M,N] = A[M,K] * B[K,N], 64x64 tiles, 256 threads each computing a 4x4 block, K in steps of 16
define amdgpu_kernel void @matmul(ptr addrspace(1) %A, ptr addrspace(1) %B, ptr addrspace(1) %C, i32 %M, i32 %N, i32 %K) {
entry:
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %bx = call i32 @llvm.amdgcn.workgroup.id.x()
  %by = call i32 @llvm.amdgcn.workgroup.id.y()
  %tr = lshr i32 %t, 4
  %tc = and i32 %t, 15
  %row0 = mul i32 %by, 64
  %col0 = mul i32 %bx, 64
  br label %kloop
kloop:
  %k0 = phi i32 [0, %entry], [%k1, %kend]
  %acc = phi <16 x float> [zeroinitializer, %entry], [%acc2, %kend]
  ; stage a 64x16 tile of A and a 16x64 tile of B (4 elements per thread each)
  br label %stage
stage:
  %s = phi i32 [0, %kloop], [%s1, %stage]
  %e = add i32 %t, 0
  %idx = mul i32 %s, 256
  %lin = add i32 %idx, %e
  %ar = lshr i32 %lin, 4
  %ac = and i32 %lin, 15
  %agr = add i32 %row0, %ar
  %agc = add i32 %k0, %ac
  %aoff = mul i32 %agr, %K
  %aidx = add i32 %aoff, %agc
  %pa = getelementptr float, ptr addrspace(1) %A, i32 %aidx
  %va = load float, ptr addrspace(1) %pa
  %las = getelementptr [1024 x float], ptr addrspace(3) @As, i32 0, i32 %lin
  store float %va, ptr addrspace(3) %las
  %br = lshr i32 %lin, 6
  %bc = and i32 %lin, 63
  %bgr = add i32 %k0, %br
  %bgc = add i32 %col0, %bc
  %boff = mul i32 %bgr, %N
  %bidx = add i32 %boff, %bgc
  %pb = getelementptr float, ptr addrspace(1) %B, i32 %bidx
  %vb = load float, ptr addrspace(1) %pb
  %lbs = getelementptr [1024 x float], ptr addrspace(3) @Bs, i32 0, i32 %lin
  store float %vb, ptr addrspace(3) %lbs
  %s1 = add i32 %s, 1
  %smore = icmp ult i32 %s1, 4
  br i1 %smore, label %stage, label %compute
compute:
  call void @llvm.amdgcn.s.barrier()
  br label %kk
kk:
  %j = phi i32 [0, %compute], [%j1, %kk]
  %acc1 = phi <16 x float> [%acc, %compute], [%accn, %kk]
  %r4 = mul i32 %tr, 4
  %c4 = mul i32 %tc, 4
  %a0i = mul i32 %r4, 16
  %a0 = add i32 %a0i, %j
  %pa0 = getelementptr [1024 x float], ptr addrspace(3) @As, i32 0, i32 %a0
  %x0 = load float, ptr addrspace(3) %pa0
  %a1 = add i32 %a0, 16
  %pa1 = getelementptr [1024 x float], ptr addrspace(3) @As, i32 0, i32 %a1
  %x1 = load float, ptr addrspace(3) %pa1
  %b0i = mul i32 %j, 64
  %b0 = add i32 %b0i, %c4
  %pb0 = getelementptr [1024 x float], ptr addrspace(3) @Bs, i32 0, i32 %b0
  %y = load <4 x float>, ptr addrspace(3) %pb0
  %xs0 = insertelement <16 x float> undef, float %x0, i32 0
  %xv0 = shufflevector <16 x float> %xs0, <16 x float> undef, <16 x i32> zeroinitializer
  %ys = shufflevector <4 x float> %y, <4 x float> undef, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %xs1 = insertelement <16 x float> undef, float %x1, i32 0
  %xv1 = shufflevector <16 x float> %xs1, <16 x float> undef, <16 x i32> zeroinitializer
  %xm = select <16 x i1> <i1 1, i1 1, i1 1, i1 1, i1 0, i1 0, i1 0, i1 0, i1 1, i1 1, i1 1, i1 1, i1 0, i1 0, i1 0, i1 0>, <16 x float> %xv0, <16 x float> %xv1
  %accn = call <16 x float> @llvm.fma.v16f32(<16 x float> %xm, <16 x float> %ys, <16 x float> %acc1)
  %j1 = add i32 %j, 1
  %jmore = icmp ult i32 %j1, 16
  br i1 %jmore, label %kk, label %kend
kend:
  %acc2 = phi <16 x float> [%accn, %kk]
  call void @llvm.amdgcn.s.barrier()
  %k1 = add i32 %k0, 16
  %kmore = icmp ult i32 %k1, %K
  br i1 %kmore, label %kloop, label %store
store:
  %orow = add i32 %row0, %tr
  %ocol = add i32 %col0, %tc
  %ooff = mul i32 %orow, %N
  %oidx = add i32 %ooff, %ocol
  %pc = getelementptr <16 x float>, ptr addrspace(1) %C, i32 %oidx
  store <16 x float> %acc2, ptr addrspace(1) %pc
  ret void
}
declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)
)";

void BM_CompileTiledMatmul(benchmark::State& state, const char* mcpu) {
  double parse = 0, llvm = 0, link = 0;
  for (auto _ : state) {
    weft::amdgpu::CompileTimes t;
    benchmark::DoNotOptimize(weft::amdgpu::compile_ir(kTiledMatmul, mcpu, &t));
    parse += t.parse_seconds;
    llvm += t.llvm_seconds;
    link += t.link_seconds;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["parse_ms"] = 1e3 * parse / n;
  state.counters["llvm_ms"] = 1e3 * llvm / n;
  state.counters["lld_ms"] = 1e3 * link / n;
}

}  // namespace

BENCHMARK_CAPTURE(BM_CompileTiledMatmul, gfx942, "gfx942")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileTiledMatmul, gfx950, "gfx950")->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
