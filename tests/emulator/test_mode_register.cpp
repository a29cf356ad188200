// The MODE register as compiled kernels use it: s_getreg reads it (llvm.amdgcn.s.getreg,
// llvm.get.rounding), s_setreg writes it (llvm.set.rounding), a wave starts with the kernel
// descriptor's float modes; a mode the emulator does not execute (directed rounding, flushed
// denormals) stops the run, or the launch, with an error naming it.
#include <doctest/doctest.h>

#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;
using weft::testing::download;
using weft::testing::upload;

namespace {

// out = {MODE, get.rounding(), get.rounding() after set.rounding(%r)}. ftz_div: an f32 kernel
// whose descriptor flushes f32 denormals (its fdiv toggles the mode with s_setreg).
const char* kModes = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.get.rounding()
declare void @llvm.set.rounding(i32)
declare i32 @llvm.amdgcn.s.getreg(i32)
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @modes(ptr addrspace(1) %out, i32 %r) {
  %m = call i32 @llvm.amdgcn.s.getreg(i32 63489)
  %g0 = call i32 @llvm.get.rounding()
  call void @llvm.set.rounding(i32 %r)
  %g1 = call i32 @llvm.get.rounding()
  store i32 %m, ptr addrspace(1) %out
  %q1 = getelementptr i32, ptr addrspace(1) %out, i32 1
  store i32 %g0, ptr addrspace(1) %q1
  %q2 = getelementptr i32, ptr addrspace(1) %out, i32 2
  store i32 %g1, ptr addrspace(1) %q2
  ret void
}
define amdgpu_kernel void @ftz_div(ptr addrspace(1) %a, ptr addrspace(1) %out) #0 {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %va = load float, ptr addrspace(1) %pa
  %r = fdiv float 1.0, %va
  %po = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %r, ptr addrspace(1) %po
  ret void
}
attributes #0 = { "denormal-fp-math-f32"="preserve-sign,preserve-sign" }
)";

std::string run_modes(const CodeObject& code, GlobalMemory& mem, uint64_t out, uint32_t rounding) {
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(out), ArgValue::u32(rounding)};
  o.kernarg = pack_kernel_args(code.kernel("modes"), args);
  return weft::testing::error_of([&] { run_kernel(code, "modes", mem, o); });
}

}  // namespace

TEST_CASE("s_getreg/s_setreg on HW_REG_MODE: the descriptor's modes, get/set.rounding, unemulated modes refused") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kModes, arch_name(arch));
    std::ostringstream listing;
    write_listing(CodeObject::load(bytes), listing);
    for (const char* form : {"s_getreg_b32", "s_setreg_b32", "s_setreg_imm32_b32"})
      REQUIRE_MESSAGE(listing.str().find(form) != std::string::npos, form);
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    // The descriptor of `modes`: rounding to nearest even, denormals kept, DX10 clamp and IEEE on
    // (COMPUTE_PGM_RSRC1 [19:12], [21], [23]; LLVM's defaults for a kernel).
    const uint32_t rsrc1 = code.kernel("modes").descriptor.rsrc1;
    REQUIRE(((rsrc1 >> 12) & 0xFF) == 0xF0);
    const uint32_t want_mode = 0xF0 | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9;
    GlobalMemory mem;
    const uint64_t out = upload(mem, std::vector<uint8_t>(12, 0xCD), "out");
    REQUIRE(run_modes(code, mem, out, 1) == "");  // FLT_ROUNDS 1: to nearest
    const auto got = download<uint32_t>(mem, out, 3);
    CHECK((got[0] & 0x3FF) == want_mode);
    CHECK(got[1] == 1);
    CHECK(got[2] == 1);
    // FLT_ROUNDS 0 (toward zero) and 2 (toward +infinity) are modes the emulator does not execute.
    const std::string zero = run_modes(code, mem, out, 0), up = run_modes(code, mem, out, 2);
    CHECK_MESSAGE(zero.find("s_setreg would set MODE") != std::string::npos, zero);
    CHECK_MESSAGE(zero.find("f32 rounding to zero") != std::string::npos, zero);
    CHECK_MESSAGE(up.find("f32 rounding to +infinity") != std::string::npos, up);
    // A flush-to-zero kernel is refused at launch, naming the mode.
    const uint64_t a = upload(mem, std::vector<float>(64, 2.0f), "a");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(a), ArgValue::pointer(a)};
    o.kernarg = pack_kernel_args(code.kernel("ftz_div"), args);
    const std::string ftz = weft::testing::error_of([&] { run_kernel(code, "ftz_div", mem, o); });
    CHECK_MESSAGE(ftz.find("launch of ftz_div: its kernel descriptor's float mode") != std::string::npos, ftz);
    CHECK_MESSAGE(ftz.find("f32 denormals flush inputs and outputs") != std::string::npos, ftz);
  }
}
