// The DS lane loops' paths (semantics_memory.cpp, LdsLanes): an LDS read whose destination
// registers include its own address register must read every lane's data from the addresses as
// they were before any lane's result landed, in the plain path (every lane active and in range),
// with a partial EXEC, and in the checked modes (--check-lds, hazard mode).
#include <doctest/doctest.h>

#include "kernel_io.h"
#include "test_seed.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"

using namespace weft::emu;
using weft::testing::download;
using weft::testing::upload;

namespace {

constexpr int kDwords = 512;  // the kernel's LDS array

// Each lane fills dwords l, l+64, ... of LDS from `in`, then (lanes below `active` only) reads
// with v40 as both the address and the first destination register: `read` is the instruction.
std::string kernel(const std::string& read) {
  return R"(
target triple = "amdgcn-amd-amdhsa"
@lds = internal addrspace(3) global [512 x i32] poison, align 16
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
define amdgpu_kernel void @lanes(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %active) {
entry:
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  br label %fill
fill:
  %i = phi i32 [0, %entry], [%i1, %fill]
  %d = add i32 %l, %i
  %src = getelementptr i32, ptr addrspace(1) %in, i32 %d
  %v = load i32, ptr addrspace(1) %src
  %dst = getelementptr [512 x i32], ptr addrspace(3) @lds, i32 0, i32 %d
  store i32 %v, ptr addrspace(3) %dst
  %i1 = add i32 %i, 64
  %more = icmp ult i32 %i1, 512
  br i1 %more, label %fill, label %filled
filled:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %on = icmp ult i32 %l, %active
  br i1 %on, label %read, label %done
read:
  %addr = shl i32 %l, 4
  %r = call { i32, i32, i32, i32 } asm sideeffect "v_mov_b32 v40, $4\0A)" +
         read +
         R"(\0As_waitcnt lgkmcnt(0)\0Av_mov_b32 $0, v40\0Av_mov_b32 $1, v41\0Av_mov_b32 $2, v42\0Av_mov_b32 $3, v43", "=v,=v,=v,=v,v,~{v40},~{v41},~{v42},~{v43}"(i32 %addr)
  %base = shl i32 %l, 2
  %r0 = extractvalue { i32, i32, i32, i32 } %r, 0
  %r1 = extractvalue { i32, i32, i32, i32 } %r, 1
  %r2 = extractvalue { i32, i32, i32, i32 } %r, 2
  %r3 = extractvalue { i32, i32, i32, i32 } %r, 3
  %p0 = getelementptr i32, ptr addrspace(1) %out, i32 %base
  store i32 %r0, ptr addrspace(1) %p0
  %b1 = add i32 %base, 1
  %p1 = getelementptr i32, ptr addrspace(1) %out, i32 %b1
  store i32 %r1, ptr addrspace(1) %p1
  %b2 = add i32 %base, 2
  %p2 = getelementptr i32, ptr addrspace(1) %out, i32 %b2
  store i32 %r2, ptr addrspace(1) %p2
  %b3 = add i32 %base, 3
  %p3 = getelementptr i32, ptr addrspace(1) %out, i32 %b3
  store i32 %r3, ptr addrspace(1) %p3
  br label %done
done:
  ret void
}
)";
}

struct Form {
  const char* read;
  int second;  // the dword of the second element, from the first (the instruction's offset1)
};

}  // namespace

TEST_CASE("an LDS read into its own address register reads every lane from the original addresses") {
  auto rng = weft::testing::seeded_rng("emulator lds lanes");
  // ds_read2_b64 offset1:1: dwords 4l..4l+3; ds_read2st64_b64 offset1:1: 4l, 4l+1 and 4l+128,
  // 4l+129 (64 x 8 bytes on); ds_read_b128: 4l..4l+3.
  for (const Form& f : {Form{"ds_read2_b64 v[40:43], v40 offset1:1", 2}, Form{"ds_read2st64_b64 v[40:43], v40 offset1:1", 128},
                        Form{"ds_read_b128 v[40:43], v40", 2}})
    for (const char* arch : {"gfx942", "gfx950"}) {
      CAPTURE(f.read);
      CAPTURE(arch);
      const CodeObject code = CodeObject::load(weft::testing::compile_ll(kernel(f.read), arch));
      std::vector<uint32_t> lds(kDwords);
      for (uint32_t& x : lds) x = static_cast<uint32_t>(rng());
      std::vector<uint8_t> in(lds.size() * 4);
      std::memcpy(in.data(), lds.data(), in.size());
      for (int active : {64, 37})
        for (int mode = 0; mode < 3; ++mode) {  // plain, --check-lds, hazard mode
          CAPTURE(active);
          CAPTURE(mode);
          GlobalMemory mem;
          const uint64_t pin = upload(mem, in, "in"), pout = upload(mem, std::vector<uint8_t>(64 * 16, 0xCD), "out");
          LaunchOptions o;
          o.block = {64, 1, 1};
          o.check_lds_reads = mode == 1;
          o.sanitize = mode == 2;
          const ArgValue args[] = {ArgValue::pointer(pin), ArgValue::pointer(pout), ArgValue::u32(static_cast<uint32_t>(active))};
          o.kernarg = pack_kernel_args(code.kernel("lanes"), args);
          run_kernel(code, "lanes", mem, o);
          const auto out = download<uint32_t>(mem, pout, 64 * 4);
          for (int l = 0; l < 64; ++l) {
            CAPTURE(l);
            const size_t at = static_cast<size_t>(4 * l);
            if (l >= active) {
              CHECK(out[at] == 0xCDCDCDCDu);  // an inactive lane stores nothing
              continue;
            }
            CHECK(out[at] == lds[at]);
            CHECK(out[at + 1] == lds[at + 1]);
            CHECK(out[at + 2] == lds[at + static_cast<size_t>(f.second)]);
            CHECK(out[at + 3] == lds[at + static_cast<size_t>(f.second) + 1]);
          }
        }
    }
}
