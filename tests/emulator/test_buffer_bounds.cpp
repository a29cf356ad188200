// Buffer instructions and the resource's num_records, through compiled kernels on both targets:
// an out-of-range load returns zeros (per dword for dwordx2..x4, soffset counted in the offset),
// an out-of-range store is dropped, a direct-to-LDS fill writes zeros for an out-of-range lane,
// a scalar buffer load reads zeros for its out-of-range dwords,
// an atomic out of range leaves memory alone and returns 0; an access inside num_records but
// outside every allocated buffer is still an error. Fresh random sizes and data (seed printed,
// WEFT_TEST_SEED replays it), poisoned outputs, and a host model of the range check as oracle.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;
using weft::testing::download;
using weft::testing::error_of;
using weft::testing::upload;

namespace {

// %n is num_records in bytes, %soff the soffset operand; lane t accesses bytes from t * 16 (x4),
// t * 4 (dword, dword store and atomic) and t * 4 + 3 (ubyte) of the buffer.
const char* kKernels = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare <4 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v4i32(ptr addrspace(8), i32, i32, i32)
declare i32 @llvm.amdgcn.raw.ptr.buffer.load.i32(ptr addrspace(8), i32, i32, i32)
declare i8 @llvm.amdgcn.raw.ptr.buffer.load.i8(ptr addrspace(8), i32, i32, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.store.v4i32(<4 x i32>, ptr addrspace(8), i32, i32, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.store.i32(i32, ptr addrspace(8), i32, i32, i32)
declare i32 @llvm.amdgcn.raw.ptr.buffer.atomic.add.i32(i32, ptr addrspace(8), i32, i32, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)

define amdgpu_kernel void @loads(ptr addrspace(1) %in, ptr addrspace(1) %out4, ptr addrspace(1) %out1, ptr addrspace(1) %outb, i32 %n, i32 %soff) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %n64 = zext i32 %n to i64
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 %n64, i32 159744)
  %o16 = mul i32 %t, 16
  %v4 = call <4 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v4i32(ptr addrspace(8) %r, i32 %o16, i32 %soff, i32 0)
  %p4 = getelementptr <4 x i32>, ptr addrspace(1) %out4, i32 %t
  store <4 x i32> %v4, ptr addrspace(1) %p4
  %o4 = mul i32 %t, 4
  %v1 = call i32 @llvm.amdgcn.raw.ptr.buffer.load.i32(ptr addrspace(8) %r, i32 %o4, i32 %soff, i32 0)
  %p1 = getelementptr i32, ptr addrspace(1) %out1, i32 %t
  store i32 %v1, ptr addrspace(1) %p1
  %o3 = add i32 %o4, 3
  %vb = call i8 @llvm.amdgcn.raw.ptr.buffer.load.i8(ptr addrspace(8) %r, i32 %o3, i32 %soff, i32 0)
  %vz = zext i8 %vb to i32
  %pb = getelementptr i32, ptr addrspace(1) %outb, i32 %t
  store i32 %vz, ptr addrspace(1) %pb
  ret void
}

; src4 and src1 are plain global memory; dst4 and dst1 are written through resources of n bytes.
define amdgpu_kernel void @stores(ptr addrspace(1) %src4, ptr addrspace(1) %src1, ptr addrspace(1) %dst4, ptr addrspace(1) %dst1, i32 %n, i32 %soff) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %n64 = zext i32 %n to i64
  %r4 = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %dst4, i16 0, i64 %n64, i32 159744)
  %r1 = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %dst1, i16 0, i64 %n64, i32 159744)
  %ps4 = getelementptr <4 x i32>, ptr addrspace(1) %src4, i32 %t
  %v4 = load <4 x i32>, ptr addrspace(1) %ps4
  %o16 = mul i32 %t, 16
  call void @llvm.amdgcn.raw.ptr.buffer.store.v4i32(<4 x i32> %v4, ptr addrspace(8) %r4, i32 %o16, i32 %soff, i32 0)
  %ps1 = getelementptr i32, ptr addrspace(1) %src1, i32 %t
  %v1 = load i32, ptr addrspace(1) %ps1
  %o4 = mul i32 %t, 4
  call void @llvm.amdgcn.raw.ptr.buffer.store.i32(i32 %v1, ptr addrspace(8) %r1, i32 %o4, i32 %soff, i32 0)
  ret void
}

; acc[t] += add[t] through a resource of n bytes; old[t] = what the atomic returned.
define amdgpu_kernel void @atomics(ptr addrspace(1) %acc, ptr addrspace(1) %add, ptr addrspace(1) %old, i32 %n) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %n64 = zext i32 %n to i64
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %acc, i16 0, i64 %n64, i32 159744)
  %pa = getelementptr i32, ptr addrspace(1) %add, i32 %t
  %a = load i32, ptr addrspace(1) %pa
  %o4 = mul i32 %t, 4
  %v = call i32 @llvm.amdgcn.raw.ptr.buffer.atomic.add.i32(i32 %a, ptr addrspace(8) %r, i32 %o4, i32 0, i32 0)
  %po = getelementptr i32, ptr addrspace(1) %old, i32 %t
  store i32 %v, ptr addrspace(1) %po
  ret void
}

; The LDS tile is first filled with 0xCDCDCDCD, then each lane's dword comes by LDS DMA from a
; resource of n bytes; out = the tile.
@tile = internal addrspace(3) global [64 x i32] undef
define amdgpu_kernel void @lds_dma(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %pt = getelementptr [64 x i32], ptr addrspace(3) @tile, i32 0, i32 %t
  store i32 -842150451, ptr addrspace(3) %pt
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %n64 = zext i32 %n to i64
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 %n64, i32 159744)
  %o4 = mul i32 %t, 4
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %r, ptr addrspace(3) @tile, i32 4, i32 %o4, i32 0, i32 0, i32 0)
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %v = load i32, ptr addrspace(3) %pt
  %po = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %po
  ret void
}
)";

// gfx950: 16 bytes per lane by LDS DMA (buffer_load_dwordx4 ... lds), checked per dword.
const char* kDma16 = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)
@tile = internal addrspace(3) global [256 x i32] undef
define amdgpu_kernel void @lds_dma16(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %t4 = mul i32 %t, 4
  %pt = getelementptr i32, ptr addrspace(3) @tile, i32 %t4
  store <4 x i32> <i32 -842150451, i32 -842150451, i32 -842150451, i32 -842150451>, ptr addrspace(3) %pt
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %n64 = zext i32 %n to i64
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 %n64, i32 159744)
  %o16 = mul i32 %t, 16
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %r, ptr addrspace(3) @tile, i32 16, i32 %o16, i32 0, i32 0, i32 0)
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %v = load <4 x i32>, ptr addrspace(3) %pt
  %po = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %t
  store <4 x i32> %v, ptr addrspace(1) %po
  ret void
}
)";

// Scalar buffer loads through a V# built from %in (stride 0, num_records %n): out = {dword at
// %off, dword at 8, dwords at %off .. %off + 12}, an SGPR offset, an immediate one and a dwordx4.
const char* kScalarLoads = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.s.buffer.load.i32(<4 x i32>, i32, i32)
declare <4 x i32> @llvm.amdgcn.s.buffer.load.v4i32(<4 x i32>, i32, i32)
define amdgpu_kernel void @scalar_loads(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n, i32 %off) {
  %address = ptrtoint ptr addrspace(1) %in to i64
  %lo = trunc i64 %address to i32
  %high = lshr i64 %address, 32
  %hi = trunc i64 %high to i32
  %base_hi = and i32 %hi, 65535
  %r0 = insertelement <4 x i32> poison, i32 %lo, i32 0
  %r1 = insertelement <4 x i32> %r0, i32 %base_hi, i32 1
  %r2 = insertelement <4 x i32> %r1, i32 %n, i32 2
  %rsrc = insertelement <4 x i32> %r2, i32 159744, i32 3
  %a = call i32 @llvm.amdgcn.s.buffer.load.i32(<4 x i32> %rsrc, i32 %off, i32 0)
  %b = call i32 @llvm.amdgcn.s.buffer.load.i32(<4 x i32> %rsrc, i32 8, i32 0)
  %c = call <4 x i32> @llvm.amdgcn.s.buffer.load.v4i32(<4 x i32> %rsrc, i32 %off, i32 0)
  store i32 %a, ptr addrspace(1) %out
  %q1 = getelementptr i32, ptr addrspace(1) %out, i32 1
  store i32 %b, ptr addrspace(1) %q1
  %q2 = getelementptr i32, ptr addrspace(1) %out, i32 2
  store <4 x i32> %c, ptr addrspace(1) %q2
  ret void
}
)";

constexpr uint32_t kPoison = 0xCDCDCDCDu;
constexpr uint32_t kLanes = 64;
const Arch kArchs[] = {Arch::Gfx942, Arch::Gfx950};

std::mt19937_64& rng() {
  static std::mt19937_64 r = [] {
    uint64_t seed = std::random_device{}();
    if (const char* s = std::getenv("WEFT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    std::cerr << "buffer bounds tests: random seed " << seed << " (WEFT_TEST_SEED replays it)\n";
    return std::mt19937_64(seed);
  }();
  return r;
}

std::vector<uint32_t> random_words(size_t n) {
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = static_cast<uint32_t>(rng()());
  return v;
}

uint32_t uniform(uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng()); }

// The host model of the raw-buffer range check: `bytes` at byte `offset` are in range when their
// last byte is below num_records.
bool in_range(uint64_t offset, uint32_t bytes, uint32_t num_records) { return offset + bytes <= num_records; }

LaunchOptions one_wave(const CodeObject& code, const char* kernel, std::vector<ArgValue> args) {
  LaunchOptions o;
  o.grid = {1, 1, 1};
  o.block = {kLanes, 1, 1};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  return o;
}

const CodeObject& compiled(Arch arch) {
  static const CodeObject gfx942 = CodeObject::load(weft::testing::compile_ll(kKernels, "gfx942"));
  static const CodeObject gfx950 = CodeObject::load(weft::testing::compile_ll(kKernels, "gfx950"));
  return arch == Arch::Gfx942 ? gfx942 : gfx950;
}

}  // namespace

TEST_CASE("the buffer kernels decode as llvm-objdump prints them") {
  for (Arch arch : kArchs) {
    INFO(arch_name(arch));
    weft::testing::check_listing_matches_objdump(weft::testing::compile_ll(kKernels, arch_name(arch)), arch);
  }
  weft::testing::check_listing_matches_objdump(weft::testing::compile_ll(kDma16, "gfx950"), Arch::Gfx950);
}

TEST_CASE("buffer loads past num_records return zeros, per dword, with soffset counted") {
  for (Arch arch : kArchs) {
    const CodeObject& code = compiled(arch);
    for (int trial = 0; trial < 4; ++trial) {
      const uint32_t bytes = kLanes * 16 + 64;
      const uint32_t n = uniform(0, bytes), soff = 4 * uniform(0, 16);  // aligned, so dword d is word (offset / 4)
      INFO(arch_name(arch) << ": num_records " << n << ", soffset " << soff);
      GlobalMemory mem;
      const auto data = random_words(bytes / 4);
      const uint64_t in = upload(mem, data, "in");
      const uint64_t out4 = upload(mem, std::vector<uint32_t>(kLanes * 4, kPoison), "out4");
      const uint64_t out1 = upload(mem, std::vector<uint32_t>(kLanes, kPoison), "out1");
      const uint64_t outb = upload(mem, std::vector<uint32_t>(kLanes, kPoison), "outb");
      run_kernel(code, "loads", mem,
                 one_wave(code, "loads", {ArgValue::pointer(in), ArgValue::pointer(out4), ArgValue::pointer(out1), ArgValue::pointer(outb),
                                          ArgValue::u32(n), ArgValue::u32(soff)}));
      const auto got4 = download<uint32_t>(mem, out4, kLanes * 4), got1 = download<uint32_t>(mem, out1, kLanes),
                 gotb = download<uint32_t>(mem, outb, kLanes);
      const auto* in_bytes = reinterpret_cast<const uint8_t*>(data.data());
      for (uint32_t t = 0; t < kLanes; ++t) {
        INFO("lane " << t);
        for (uint32_t d = 0; d < 4; ++d) {
          const uint64_t off = uint64_t{t} * 16 + soff + 4 * d;
          CHECK(got4[4 * t + d] == (in_range(off, 4, n) ? data[off / 4] : 0u));
        }
        const uint64_t off1 = uint64_t{t} * 4 + soff, offb = off1 + 3;
        CHECK(got1[t] == (in_range(off1, 4, n) ? data[off1 / 4] : 0u));
        CHECK(gotb[t] == (in_range(offb, 1, n) ? in_bytes[offb] : 0u));
      }
    }
  }
}

TEST_CASE("scalar buffer loads (s_buffer_load, SGPR and immediate offsets) past num_records return zeros, per dword") {
  for (Arch arch : kArchs) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kScalarLoads, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    std::ostringstream listing;
    write_listing(code, listing);
    INFO(listing.str());
    REQUIRE(listing.str().find("s_buffer_load_dwordx4") != std::string::npos);
    REQUIRE(listing.str().find("], 0x8") != std::string::npos);     // the immediate offset
    REQUIRE(listing.str().find("offset:0x0") != std::string::npos);  // an SGPR offset (with a zero immediate)
    for (int trial = 0; trial < 6; ++trial) {
      const uint32_t size = 256, n = uniform(0, size), off = 4 * uniform(0, size / 4 - 4);
      INFO("num_records " << n << ", offset " << off);
      GlobalMemory mem;
      const auto data = random_words(size / 4);
      const uint64_t in = upload(mem, data, "in"), out = upload(mem, std::vector<uint32_t>(6, kPoison), "out");
      run_kernel(code, "scalar_loads", mem, one_wave(code, "scalar_loads", {ArgValue::pointer(in), ArgValue::pointer(out), ArgValue::u32(n), ArgValue::u32(off)}));
      const auto got = download<uint32_t>(mem, out, 6);
      const auto word = [&](uint64_t at) { return in_range(at, 4, n) ? data[at / 4] : 0u; };
      CHECK(got[0] == word(off));
      CHECK(got[1] == word(8));
      for (uint32_t d = 0; d < 4; ++d) CHECK(got[2 + d] == word(off + 4 * d));
    }
  }
}

TEST_CASE("buffer stores past num_records are dropped, per dword") {
  for (Arch arch : kArchs) {
    const CodeObject& code = compiled(arch);
    for (int trial = 0; trial < 4; ++trial) {
      const uint32_t bytes = kLanes * 16 + 64;
      const uint32_t n = uniform(0, kLanes * 16), soff = 4 * uniform(0, 16);
      INFO(arch_name(arch) << ": num_records " << n << ", soffset " << soff);
      GlobalMemory mem;
      const auto src4 = random_words(kLanes * 4), src1 = random_words(kLanes);
      const uint64_t ps4 = upload(mem, src4, "src4"), ps1 = upload(mem, src1, "src1");
      const uint64_t pd4 = upload(mem, std::vector<uint32_t>(bytes / 4, kPoison), "dst4");
      const uint64_t pd1 = upload(mem, std::vector<uint32_t>(bytes / 4, kPoison), "dst1");
      run_kernel(code, "stores", mem,
                 one_wave(code, "stores", {ArgValue::pointer(ps4), ArgValue::pointer(ps1), ArgValue::pointer(pd4), ArgValue::pointer(pd1),
                                           ArgValue::u32(n), ArgValue::u32(soff)}));
      std::vector<uint32_t> want4(bytes / 4, kPoison), want1(bytes / 4, kPoison);
      for (uint32_t t = 0; t < kLanes; ++t) {
        for (uint32_t d = 0; d < 4; ++d) {
          const uint64_t off = uint64_t{t} * 16 + soff + 4 * d;
          if (in_range(off, 4, n)) want4[off / 4] = src4[4 * t + d];
        }
        const uint64_t off1 = uint64_t{t} * 4 + soff;
        if (in_range(off1, 4, n)) want1[off1 / 4] = src1[t];
      }
      CHECK(download<uint32_t>(mem, pd4, bytes / 4) == want4);
      CHECK(download<uint32_t>(mem, pd1, bytes / 4) == want1);
    }
  }
}

TEST_CASE("a buffer atomic past num_records leaves memory alone and returns 0") {
  for (Arch arch : kArchs) {
    const CodeObject& code = compiled(arch);
    const uint32_t n = uniform(1, kLanes * 4 - 1);
    INFO(arch_name(arch) << ": num_records " << n);
    GlobalMemory mem;
    const auto init = random_words(kLanes), add = random_words(kLanes);
    const uint64_t acc = upload(mem, init, "acc"), padd = upload(mem, add, "add");
    const uint64_t old = upload(mem, std::vector<uint32_t>(kLanes, kPoison), "old");
    run_kernel(code, "atomics", mem, one_wave(code, "atomics", {ArgValue::pointer(acc), ArgValue::pointer(padd), ArgValue::pointer(old), ArgValue::u32(n)}));
    const auto got_acc = download<uint32_t>(mem, acc, kLanes), got_old = download<uint32_t>(mem, old, kLanes);
    for (uint32_t t = 0; t < kLanes; ++t) {
      INFO("lane " << t);
      const bool ok = in_range(uint64_t{t} * 4, 4, n);
      CHECK(got_acc[t] == (ok ? init[t] + add[t] : init[t]));
      CHECK(got_old[t] == (ok ? init[t] : 0u));
    }
  }
}

TEST_CASE("direct-to-LDS buffer loads write zeros to LDS for lanes past num_records") {
  for (Arch arch : kArchs) {
    const CodeObject& code = compiled(arch);
    const uint32_t n = uniform(0, kLanes * 4);
    INFO(arch_name(arch) << ": num_records " << n);
    GlobalMemory mem;
    const auto data = random_words(kLanes);
    const uint64_t in = upload(mem, data, "in"), out = upload(mem, std::vector<uint32_t>(kLanes, kPoison), "out");
    run_kernel(code, "lds_dma", mem, one_wave(code, "lds_dma", {ArgValue::pointer(in), ArgValue::pointer(out), ArgValue::u32(n)}));
    const auto got = download<uint32_t>(mem, out, kLanes);
    for (uint32_t t = 0; t < kLanes; ++t) CHECK_MESSAGE(got[t] == (in_range(uint64_t{t} * 4, 4, n) ? data[t] : 0u), "lane " << t);
  }
}

TEST_CASE("gfx950 dwordx4 LDS DMA past num_records: zeros per dword") {
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kDma16, "gfx950"));
  for (int trial = 0; trial < 3; ++trial) {
    const uint32_t n = uniform(0, kLanes * 16);
    INFO("num_records " << n);
    GlobalMemory mem;
    const auto data = random_words(kLanes * 4);
    const uint64_t in = upload(mem, data, "in"), out = upload(mem, std::vector<uint32_t>(kLanes * 4, kPoison), "out");
    run_kernel(code, "lds_dma16", mem, one_wave(code, "lds_dma16", {ArgValue::pointer(in), ArgValue::pointer(out), ArgValue::u32(n)}));
    const auto got = download<uint32_t>(mem, out, kLanes * 4);
    for (uint32_t w = 0; w < kLanes * 4; ++w) CHECK_MESSAGE(got[w] == (in_range(uint64_t{w} * 4, 4, n) ? data[w] : 0u), "dword " << w);
  }
}

TEST_CASE("a buffer access inside num_records but outside every allocation is an error") {
  for (Arch arch : kArchs) {
    INFO(arch_name(arch));
    const CodeObject& code = compiled(arch);
    GlobalMemory mem;
    // 64 bytes allocated, num_records claims 1 MiB: lanes 4.. read past the allocation.
    const uint64_t in = upload(mem, random_words(16), "in");
    const uint64_t out4 = mem.allocate(kLanes * 16, "out4"), out1 = mem.allocate(kLanes * 4, "out1"), outb = mem.allocate(kLanes * 4, "outb");
    const std::string e = error_of([&] {
      run_kernel(code, "loads", mem,
                 one_wave(code, "loads", {ArgValue::pointer(in), ArgValue::pointer(out4), ArgValue::pointer(out1), ArgValue::pointer(outb),
                                          ArgValue::u32(1u << 20), ArgValue::u32(0)}));
    });
    INFO(e);
    CHECK(e.find("out-of-bounds global access") != std::string::npos);
    CHECK(e.find("buffer 'in'") != std::string::npos);
    CHECK(e.find("buffer_load_dwordx4") != std::string::npos);
  }
}
