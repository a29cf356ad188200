// The in-process AMDGPU code generator: LLVM IR text to a code object with no subprocess, run on
// the emulator and checked against a host reference on both targets; errors name the problem.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "../emulator/kernel_io.h"
#include "weft/dsl/error.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/lowering/amdgpu_codegen.h"

using namespace weft::emu;

namespace {

const char* kScale = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
; y[i] = a * x[i] + b for i < n
define amdgpu_kernel void @scale(ptr addrspace(1) %x, ptr addrspace(1) %y, float %a, float %b, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %bid, 128
  %i = add i32 %base, %tid
  %ok = icmp slt i32 %i, %n
  br i1 %ok, label %body, label %done
body:
  %px = getelementptr float, ptr addrspace(1) %x, i32 %i
  %v = load float, ptr addrspace(1) %px
  %m = fmul float %v, %a
  %r = fadd float %m, %b
  %py = getelementptr float, ptr addrspace(1) %y, i32 %i
  store float %r, ptr addrspace(1) %py
  br label %done
done:
  ret void
}
)";

}  // namespace

TEST_CASE("IR compiled in-process runs on the emulator on both targets") {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (const char* mcpu : {"gfx942", "gfx950"}) {
    INFO(mcpu);
    weft::amdgpu::CompileTimes times;
    const CodeObject code = CodeObject::load(weft::amdgpu::compile_ir(kScale, mcpu, &times));
    CHECK(std::string(arch_name(code.arch())) == mcpu);
    CHECK(times.llvm_seconds > 0);
    const int n = 1000;
    std::vector<float> x(n);
    for (float& v : x) v = dist(rng);
    const float a = dist(rng), b = dist(rng);
    GlobalMemory mem;
    const uint64_t px = weft::testing::upload(mem, x, "x");
    const uint64_t py = weft::testing::upload(mem, std::vector<float>(n, std::nanf("")), "y");
    LaunchOptions o;
    o.grid = {(n + 127) / 128, 1, 1};
    o.block = {128, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(px), ArgValue::pointer(py), ArgValue::f32(a), ArgValue::f32(b), ArgValue::i32(n)};
    o.kernarg = pack_kernel_args(code.kernel("scale"), args);
    run_kernel(code, "scale", mem, o);
    const auto y = weft::testing::download<float>(mem, py, n);
    for (int i = 0; i < n; ++i) {
      const double want = static_cast<double>(x[static_cast<size_t>(i)]) * a + b;
      REQUIRE(std::abs(y[static_cast<size_t>(i)] - want) <= 1e-5 * (1 + std::abs(want)));
    }
  }
}

TEST_CASE("the code generator can run many times in one process (lld is reentrant enough)") {
  for (int i = 0; i < 5; ++i) CHECK_FALSE(weft::amdgpu::compile_ir(kScale, i % 2 ? "gfx942" : "gfx950").empty());
}

TEST_CASE("code generator errors name the problem") {
  try {
    weft::amdgpu::compile_ir("define void @f( {", "gfx950");
    FAIL("bad IR compiled");
  } catch (const weft::Error& e) {
    CHECK(std::string(e.what()).find("LLVM IR does not parse: line 1") != std::string::npos);
  }
  try {
    weft::amdgpu::compile_ir(kScale, "gfx9999");
    FAIL("an unknown target compiled");
  } catch (const weft::Error& e) {
    CHECK(std::string(e.what()).find("unknown AMDGPU target 'gfx9999'") != std::string::npos);
  }
  try {
    weft::amdgpu::compile_ir("define void @f() {\n  ret i32 0\n}\n", "gfx950");
    FAIL("invalid IR compiled");
  } catch (const weft::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("LLVM IR") != std::string::npos);
  }
}
