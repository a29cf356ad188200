// s_sendmsg, s_sendmsghalt and the s_endpgm variants as compiled kernels emit them: messages that
// leave a compute wave alone run, the others (and halting) stop the run with an error naming them.
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

// msgs: out[l] = l + 1 after s_sendmsg(MSG_INTERRUPT); then s_endpgm_saved ends the wave before
// out[64 + l] is written. doorbell / halt: a message the emulator refuses, and s_sendmsghalt.
const char* kMessages = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.sendmsg(i32, i32)
declare void @llvm.amdgcn.s.sendmsghalt(i32, i32)
define amdgpu_kernel void @msgs(ptr addrspace(1) %out, i32 %m) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  call void @llvm.amdgcn.s.sendmsg(i32 1, i32 %m)
  %v = add i32 %l, 1
  %p = getelementptr i32, ptr addrspace(1) %out, i32 %l
  store i32 %v, ptr addrspace(1) %p
  call void asm sideeffect "s_waitcnt vmcnt(0)\0As_endpgm_saved", "~{memory}"()
  %q = getelementptr i32, ptr addrspace(1) %p, i32 64
  store i32 -1, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @doorbell(ptr addrspace(1) %out, i32 %m) {
  call void @llvm.amdgcn.s.sendmsg(i32 10, i32 %m)
  store i32 1, ptr addrspace(1) %out
  ret void
}
define amdgpu_kernel void @halt(ptr addrspace(1) %out, i32 %m) {
  call void @llvm.amdgcn.s.sendmsghalt(i32 1, i32 %m)
  store i32 1, ptr addrspace(1) %out
  ret void
}
)";

std::string run_messages(const CodeObject& code, const char* kernel, GlobalMemory& mem, uint64_t out) {
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(out), ArgValue::u32(7)};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  return weft::testing::error_of([&] { run_kernel(code, kernel, mem, o); });
}

}  // namespace

TEST_CASE("s_sendmsg MSG_INTERRUPT runs, s_endpgm_saved ends the wave, other messages and halts stop the run") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kMessages, arch_name(arch));
    std::ostringstream listing;
    write_listing(CodeObject::load(bytes), listing);
    for (const char* form : {"s_sendmsg sendmsg(MSG_INTERRUPT)", "s_endpgm_saved", "s_sendmsg sendmsg(MSG_GET_DOORBELL)", "s_sendmsghalt"})
      REQUIRE_MESSAGE(listing.str().find(form) != std::string::npos, form);
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    GlobalMemory mem;
    const uint64_t out = upload(mem, std::vector<uint8_t>(512, 0xCD), "out");
    CHECK(run_messages(code, "msgs", mem, out) == "");
    const auto got = download<uint32_t>(mem, out, 128);
    for (uint32_t l = 0; l < 64; ++l) {
      CHECK_MESSAGE(got[l] == l + 1, "lane " << l);
      CHECK_MESSAGE(got[64 + l] == 0xCDCDCDCDu, "lane " << l << ": written after s_endpgm_saved");
    }
    const std::string doorbell = run_messages(code, "doorbell", mem, out);
    CHECK_MESSAGE(doorbell.find("s_sendmsg MSG_GET_DOORBELL: this message is not emulated for compute waves") != std::string::npos, doorbell);
    const std::string halt = run_messages(code, "halt", mem, out);
    CHECK_MESSAGE(halt.find("s_sendmsghalt halts the wave") != std::string::npos, halt);
  }
}
