// Memory behaviour through compiled kernels on both targets: direct-to-LDS buffer loads (dword,
// and dwordx4 on gfx950), a private scratch segment per wave, global and LDS atomics from many
// waves and host threads, unaligned dword accesses, generic pointers into LDS, scratch and
// global memory. Fresh random inputs, poisoned outputs.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/listing.h"
#include "weft/dsl/error.h"
#include "weft/emulator/kernel_args.h"

using namespace weft::emu;

namespace {

const char* kKernels = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)
@tile = internal addrspace(3) global [256 x i32] undef
; out[tid] = in[(tid + 1) % 64] through an LDS tile filled by direct-to-LDS loads
define amdgpu_kernel void @lds_dma(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %rsrc = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 256, i32 159744)
  %voff = mul i32 %tid, 4
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %rsrc, ptr addrspace(3) @tile, i32 4, i32 %voff, i32 0, i32 0, i32 0)
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %n = add i32 %tid, 1
  %j = and i32 %n, 63
  %p = getelementptr [256 x i32], ptr addrspace(3) @tile, i32 0, i32 %j
  %v = load i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %q
  ret void
}
; per-lane private arrays: out[g] = sum over i of a[i] where a[i] = g * i, read back in a data-dependent order
define amdgpu_kernel void @scratch(ptr addrspace(1) %out, i32 %k) {
  %a = alloca [32 x i32], align 4, addrspace(5)
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %b = mul i32 %bid, 256
  %g = add i32 %b, %tid
  br label %fill
fill:
  %i = phi i32 [0, %0], [%i1, %fill]
  %pi = getelementptr [32 x i32], ptr addrspace(5) %a, i32 0, i32 %i
  %v = mul i32 %g, %i
  store volatile i32 %v, ptr addrspace(5) %pi
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, 32
  br i1 %more, label %fill, label %read
read:
  %j = phi i32 [0, %fill], [%j1, %read]
  %s = phi i32 [0, %fill], [%s1, %read]
  %jj = mul i32 %j, %k
  %idx = and i32 %jj, 31
  %pj = getelementptr [32 x i32], ptr addrspace(5) %a, i32 0, i32 %idx
  %x = load volatile i32, ptr addrspace(5) %pj
  %s1 = add i32 %s, %x
  %j1 = add i32 %j, 1
  %m = icmp ult i32 %j1, 32
  br i1 %m, label %read, label %done
done:
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %g
  store i32 %s1, ptr addrspace(1) %q
  ret void
}
; histogram with global atomics and an LDS atomic per workgroup
@count = internal addrspace(3) global i32 undef
define amdgpu_kernel void @atomics(ptr addrspace(1) %in, ptr addrspace(1) %hist, ptr addrspace(1) %per_group) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %z = icmp eq i32 %tid, 0
  br i1 %z, label %init, label %go
init:
  store i32 0, ptr addrspace(3) @count
  br label %go
go:
  call void @llvm.amdgcn.s.barrier()
  %b = mul i32 %bid, 256
  %g = add i32 %b, %tid
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %g
  %v = load i32, ptr addrspace(1) %p
  %bin = and i32 %v, 15
  %h = getelementptr i32, ptr addrspace(1) %hist, i32 %bin
  %old = atomicrmw add ptr addrspace(1) %h, i32 1 monotonic
  %odd = and i32 %v, 1
  %c = atomicrmw add ptr addrspace(3) @count, i32 %odd monotonic
  call void @llvm.amdgcn.s.barrier()
  br i1 %z, label %w, label %end
w:
  %n = load i32, ptr addrspace(3) @count
  %pg = getelementptr i32, ptr addrspace(1) %per_group, i32 %bid
  store i32 %n, ptr addrspace(1) %pg
  br label %end
end:
  ret void
}
; unaligned dword loads and stores: out[i] = in at byte offset 4*i + 1
define amdgpu_kernel void @unaligned(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %o = mul i32 %tid, 4
  %o1 = add i32 %o, 1
  %p = getelementptr i8, ptr addrspace(1) %in, i32 %o1
  %v = load i32, ptr addrspace(1) %p, align 1
  %q = getelementptr i8, ptr addrspace(1) %out, i32 %o1
  store i32 %v, ptr addrspace(1) %q, align 1
  ret void
}
attributes #0 = { "target-features"="+unaligned-access-mode" }
@stale = internal addrspace(3) global [64 x i32] undef
; every lane writes its slot, except lane 5; then each lane reads its own slot (a planted bug)
define amdgpu_kernel void @stale_lds(ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr [64 x i32], ptr addrspace(3) @stale, i32 0, i32 %tid
  %skip = icmp eq i32 %tid, 5
  br i1 %skip, label %read, label %write
write:
  store i32 %tid, ptr addrspace(3) %p
  br label %read
read:
  call void @llvm.amdgcn.s.barrier()
  %v = load i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %q
  ret void
}
declare void @llvm.amdgcn.global.load.lds(ptr addrspace(1), ptr addrspace(3), i32, i32, i32)
@tile2 = internal addrspace(3) global [256 x i32] undef
; the same through global_load_lds_dword: out[tid] = in[(tid + 5) % 64]
define amdgpu_kernel void @global_lds(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %src = getelementptr i32, ptr addrspace(1) %in, i32 %tid
  call void @llvm.amdgcn.global.load.lds(ptr addrspace(1) %src, ptr addrspace(3) @tile2, i32 4, i32 0, i32 0)
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %n = add i32 %tid, 5
  %j = and i32 %n, 63
  %p = getelementptr [256 x i32], ptr addrspace(3) @tile2, i32 0, i32 %j
  %v = load i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %q
  ret void
}
)";

// gfx950 only: 16 bytes per lane straight into LDS.
const char* kDma16 = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)
@tile = internal addrspace(3) global [256 x i32] undef
; out[4*t + e] = in[4*((t + 3) % 64) + e]
define amdgpu_kernel void @lds_dma16(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %rsrc = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 1024, i32 159744)
  %voff = mul i32 %tid, 16
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %rsrc, ptr addrspace(3) @tile, i32 16, i32 %voff, i32 0, i32 0, i32 0)
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %n = add i32 %tid, 3
  %j = and i32 %n, 63
  %j4 = mul i32 %j, 4
  %p = getelementptr i32, ptr addrspace(3) @tile, i32 %j4
  %v = load <4 x i32>, ptr addrspace(3) %p
  %q = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %tid
  store <4 x i32> %v, ptr addrspace(1) %q
  ret void
}
)";

// Generic (FLAT) pointers: one pointer per lane into LDS, the lane's scratch or global memory,
// chosen at run time, so LLVM must emit flat_load/flat_store with the apertures. out[i] = the
// value read through it; then 1000 + i is stored through it and read back from where it points.
const char* kGeneric = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
@shared = internal addrspace(3) global [64 x i32] undef
define amdgpu_kernel void @generic_pointers(ptr addrspace(1) %in, ptr addrspace(1) %out, ptr addrspace(1) %back, i32 %space) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %priv = alloca [16 x i32], align 4, addrspace(5)
  %pl = getelementptr [64 x i32], ptr addrspace(3) @shared, i32 0, i32 %i
  %l3 = mul i32 %i, 3
  store i32 %l3, ptr addrspace(3) %pl
  %k = and i32 %i, 15
  %pp = getelementptr [16 x i32], ptr addrspace(5) %priv, i32 0, i32 %k
  %l5 = mul i32 %i, 5
  store volatile i32 %l5, ptr addrspace(5) %pp
  %pg = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %fl = addrspacecast ptr addrspace(3) %pl to ptr
  %fp = addrspacecast ptr addrspace(5) %pp to ptr
  %fg = addrspacecast ptr addrspace(1) %pg to ptr
  %is_lds = icmp eq i32 %space, 0
  %is_priv = icmp eq i32 %space, 1
  %q = select i1 %is_priv, ptr %fp, ptr %fg
  %p = select i1 %is_lds, ptr %fl, ptr %q
  %v = load volatile i32, ptr %p
  %po = getelementptr i32, ptr addrspace(1) %out, i32 %i
  store i32 %v, ptr addrspace(1) %po
  %w = add i32 %i, 1000
  store volatile i32 %w, ptr %p
  %bl = load volatile i32, ptr addrspace(3) %pl
  %bp = load volatile i32, ptr addrspace(5) %pp
  %bg = load volatile i32, ptr addrspace(1) %pg
  %b1 = select i1 %is_priv, i32 %bp, i32 %bg
  %b = select i1 %is_lds, i32 %bl, i32 %b1
  %pb = getelementptr i32, ptr addrspace(1) %back, i32 %i
  store i32 %b, ptr addrspace(1) %pb
  ret void
}
)";

std::mt19937& rng() {
  static std::mt19937 r(std::random_device{}());
  return r;
}

std::vector<uint32_t> random_words(size_t n) {
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = static_cast<uint32_t>(rng()());
  return v;
}

using weft::testing::upload;

std::vector<uint32_t> download(GlobalMemory& mem, uint64_t a, size_t n) { return weft::testing::download<uint32_t>(mem, a, n); }

LaunchOptions launch(const CodeObject& code, const char* kernel, Dim3 grid, Dim3 block, std::vector<ArgValue> args) {
  LaunchOptions o;
  o.grid = grid;
  o.block = block;
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  return o;
}

const Arch kArchs[] = {Arch::Gfx942, Arch::Gfx950};
constexpr uint32_t kPoison = 0xCDCDCDCDu;

}  // namespace

TEST_CASE("direct-to-LDS buffer and global loads feed a workgroup's LDS tile") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kKernels, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    GlobalMemory mem;
    const auto in = random_words(64);
    const uint64_t pin = upload(mem, in, "in"), pout = upload(mem, std::vector<uint32_t>(64, kPoison), "out");
    run_kernel(code, "lds_dma", mem, launch(code, "lds_dma", {1, 1, 1}, {64, 1, 1}, {ArgValue::pointer(pin), ArgValue::pointer(pout)}));
    const auto out = download(mem, pout, 64);
    for (uint32_t t = 0; t < 64; ++t) REQUIRE(out[t] == in[(t + 1) % 64]);
    std::memset(mem.data(pout), 0xCD, 64 * 4);
    run_kernel(code, "global_lds", mem, launch(code, "global_lds", {1, 1, 1}, {64, 1, 1}, {ArgValue::pointer(pin), ArgValue::pointer(pout)}));
    const auto out2 = download(mem, pout, 64);
    for (uint32_t t = 0; t < 64; ++t) REQUIRE(out2[t] == in[(t + 5) % 64]);
  }
}

TEST_CASE("direct-to-LDS dwordx4 loads on gfx950") {
  const auto bytes = weft::testing::compile_ll(kDma16, "gfx950");
  weft::testing::check_listing_matches_objdump(bytes, Arch::Gfx950);
  const CodeObject code = CodeObject::load(bytes);
  GlobalMemory mem;
  const auto in = random_words(256);
  const uint64_t pin = upload(mem, in, "in"), pout = upload(mem, std::vector<uint32_t>(256, kPoison), "out");
  run_kernel(code, "lds_dma16", mem, launch(code, "lds_dma16", {1, 1, 1}, {64, 1, 1}, {ArgValue::pointer(pin), ArgValue::pointer(pout)}));
  const auto out = download(mem, pout, 256);
  for (uint32_t t = 0; t < 64; ++t)
    for (uint32_t e = 0; e < 4; ++e) REQUIRE(out[4 * t + e] == in[4 * ((t + 3) % 64) + e]);
}

TEST_CASE("every wave has its own scratch segment") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    CHECK(code.kernel("scratch").private_segment_fixed_size >= 128);
    GlobalMemory mem;
    const uint32_t groups = 3, k = 1 + 2 * (rng()() % 15);  // odd: a permutation of 0..31
    const uint64_t pout = upload(mem, std::vector<uint32_t>(groups * 256, kPoison), "out");
    run_kernel(code, "scratch", mem, launch(code, "scratch", {groups, 1, 1}, {256, 1, 1}, {ArgValue::pointer(pout), ArgValue::u32(k)}));
    const auto out = download(mem, pout, groups * 256);
    for (uint32_t g = 0; g < groups * 256; ++g) REQUIRE(out[g] == g * (31 * 32 / 2));
  }
}

TEST_CASE("global atomics from many workgroups on several host threads, LDS atomics within one") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    GlobalMemory mem;
    const uint32_t groups = 16;
    const auto in = random_words(groups * 256);
    const uint64_t pin = upload(mem, in, "in"), hist = upload(mem, std::vector<uint32_t>(16, 0), "hist");
    const uint64_t per_group = upload(mem, std::vector<uint32_t>(groups, kPoison), "per_group");
    LaunchOptions o = launch(code, "atomics", {groups, 1, 1}, {256, 1, 1},
                             {ArgValue::pointer(pin), ArgValue::pointer(hist), ArgValue::pointer(per_group)});
    o.host_threads = 4;
    run_kernel(code, "atomics", mem, o);
    std::vector<uint32_t> want_hist(16, 0), want_odd(groups, 0);
    for (size_t i = 0; i < in.size(); ++i) {
      ++want_hist[in[i] & 15];
      want_odd[i / 256] += in[i] & 1;
    }
    CHECK(download(mem, hist, 16) == want_hist);
    CHECK(download(mem, per_group, groups) == want_odd);
  }
}

TEST_CASE("unaligned dword loads and stores") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kKernels, arch_name(arch));
    const CodeObject code = CodeObject::load(bytes);
    GlobalMemory mem;
    const auto in = random_words(65);
    const uint64_t pin = upload(mem, in, "in"), pout = upload(mem, std::vector<uint32_t>(65, kPoison), "out");
    run_kernel(code, "unaligned", mem, launch(code, "unaligned", {1, 1, 1}, {64, 1, 1}, {ArgValue::pointer(pin), ArgValue::pointer(pout)}));
    std::vector<uint8_t> want(65 * 4), got(65 * 4);
    std::memcpy(want.data(), in.data(), want.size());
    std::memcpy(got.data(), mem.data(pout), got.size());
    for (size_t b = 0; b < want.size(); ++b) {
      const bool written = b >= 1 && b < 1 + 64 * 4;
      REQUIRE(got[b] == (written ? want[b] : 0xCD));
    }
  }
}

TEST_CASE("a read of LDS the workgroup never wrote is reported when asked for") {
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, "gfx950"));
  GlobalMemory mem;
  const uint64_t pout = upload(mem, std::vector<uint32_t>(64, kPoison), "out");
  LaunchOptions o = launch(code, "stale_lds", {1, 1, 1}, {64, 1, 1}, {ArgValue::pointer(pout)});
  run_kernel(code, "stale_lds", mem, o);  // unchecked: runs (the stale slot reads as zero)
  o.check_lds_reads = true;
  try {
    run_kernel(code, "stale_lds", mem, o);
    FAIL("the stale read was not reported");
  } catch (const weft::Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("read of LDS this workgroup never wrote: lane 5, address 0x14") != std::string::npos);
    CHECK(m.find("kernel stale_lds") != std::string::npos);
  }
}

TEST_CASE("generic pointers reach LDS, scratch and global memory through the apertures") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kGeneric, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    std::ostringstream listing;
    write_listing(code, listing);
    for (const char* m : {"flat_load_dword", "flat_store_dword", "src_shared_base", "src_private_base"})
      REQUIRE_MESSAGE(listing.str().find(m) != std::string::npos, "the kernel lacks " << m);
    for (uint32_t space = 0; space < 3; ++space) {
      INFO("space " << space);
      GlobalMemory mem;
      const auto in = random_words(64);
      const uint64_t pin = upload(mem, in, "in"), pout = upload(mem, std::vector<uint32_t>(64, kPoison), "out");
      const uint64_t pback = upload(mem, std::vector<uint32_t>(64, kPoison), "back");
      LaunchOptions o = launch(code, "generic_pointers", {1, 1, 1}, {64, 1, 1},
                               {ArgValue::pointer(pin), ArgValue::pointer(pout), ArgValue::pointer(pback), ArgValue::u32(space)});
      o.check_lds_reads = true;
      run_kernel(code, "generic_pointers", mem, o);
      const auto out = download(mem, pout, 64), back = download(mem, pback, 64);
      for (uint32_t t = 0; t < 64; ++t) {
        const uint32_t want = space == 0 ? 3 * t : space == 1 ? 5 * t : in[t];
        REQUIRE_MESSAGE(out[t] == want, "lane " << t);
        REQUIRE_MESSAGE(back[t] == 1000 + t, "lane " << t);
        if (space == 2) REQUIRE(download(mem, pin, 64)[t] == 1000 + t);  // the store went to global memory
      }
    }
  }
}
