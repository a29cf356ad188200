// Typed buffer access as llc-22 compiles the tbuffer and buffer-format intrinsics, on both
// targets: MTBUF loads and stores in several data and number formats (format in the
// instruction), MUBUF buffer_load_format_xyzw (format in the V#), with num_records cutting lanes
// short; host references from the conversion rules in emulator/src/semantics_typed_buffer.cpp.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "test_seed.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;
using weft::testing::download;
using weft::testing::upload;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 gen = weft::testing::seeded_rng("emulator typed buffer tests");
  return gen;
}

// %n: num_records of the input resource. Lane t, 4-byte loads at 4t, 8-byte ones at 8t; out gets
// 24 dwords per lane: 8_8_8_8 UNORM xyzw, 8_8_8_8 SNORM xyzw, 16_16 FLOAT xyzw, 8 UINT xyzw (at
// 4t + 1), 16_16_16_16 SINT xyzw and 32_32 SSCALED xy, then buffer_load_format_xyzw through a
// V# whose format is 8_8_8_8 UNORM (dwords 24..27, 28 per lane).
// Word 3 of the V#s: DST_SEL x, y, z, w (0xFAC), then NUM_FORMAT << 12 | DATA_FORMAT << 15.
const char* kTyped = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare <4 x float> @llvm.amdgcn.raw.ptr.tbuffer.load.v4f32(ptr addrspace(8), i32, i32, i32, i32)
declare <4 x i32> @llvm.amdgcn.raw.ptr.tbuffer.load.v4i32(ptr addrspace(8), i32, i32, i32, i32)
declare <2 x float> @llvm.amdgcn.raw.ptr.tbuffer.load.v2f32(ptr addrspace(8), i32, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.raw.ptr.buffer.load.format.v4f32(ptr addrspace(8), i32, i32, i32)
declare void @llvm.amdgcn.raw.ptr.tbuffer.store.v4f32(<4 x float>, ptr addrspace(8), i32, i32, i32, i32)
declare void @llvm.amdgcn.raw.ptr.tbuffer.store.v2f32(<2 x float>, ptr addrspace(8), i32, i32, i32, i32)
declare void @llvm.amdgcn.raw.ptr.tbuffer.store.v4i32(<4 x i32>, ptr addrspace(8), i32, i32, i32, i32)

define amdgpu_kernel void @typed_loads(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %n64 = zext i32 %n to i64
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 %n64, i32 331692)
  %o4 = mul i32 %t, 4
  %o41 = add i32 %o4, 1
  %o8 = mul i32 %t, 8
  %a = call <4 x float> @llvm.amdgcn.raw.ptr.tbuffer.load.v4f32(ptr addrspace(8) %r, i32 %o4, i32 0, i32 10, i32 0)
  %b = call <4 x float> @llvm.amdgcn.raw.ptr.tbuffer.load.v4f32(ptr addrspace(8) %r, i32 %o4, i32 0, i32 26, i32 0)
  %c = call <4 x float> @llvm.amdgcn.raw.ptr.tbuffer.load.v4f32(ptr addrspace(8) %r, i32 %o4, i32 0, i32 117, i32 0)
  %d = call <4 x i32> @llvm.amdgcn.raw.ptr.tbuffer.load.v4i32(ptr addrspace(8) %r, i32 %o41, i32 0, i32 65, i32 0)
  %e = call <4 x i32> @llvm.amdgcn.raw.ptr.tbuffer.load.v4i32(ptr addrspace(8) %r, i32 %o8, i32 0, i32 92, i32 0)
  %f = call <2 x float> @llvm.amdgcn.raw.ptr.tbuffer.load.v2f32(ptr addrspace(8) %r, i32 %o8, i32 0, i32 59, i32 0)
  %g = call <4 x float> @llvm.amdgcn.raw.ptr.buffer.load.format.v4f32(ptr addrspace(8) %r, i32 %o4, i32 0, i32 0)
  %base = mul i32 %t, 28
  %p0 = getelementptr i32, ptr addrspace(1) %out, i32 %base
  store <4 x float> %a, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %p0, i32 4
  store <4 x float> %b, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %p0, i32 8
  store <4 x float> %c, ptr addrspace(1) %p2
  %p3 = getelementptr i32, ptr addrspace(1) %p0, i32 12
  store <4 x i32> %d, ptr addrspace(1) %p3
  %p4 = getelementptr i32, ptr addrspace(1) %p0, i32 16
  store <4 x i32> %e, ptr addrspace(1) %p4
  %p5 = getelementptr i32, ptr addrspace(1) %p0, i32 20
  store <2 x float> %f, ptr addrspace(1) %p5
  %p6 = getelementptr i32, ptr addrspace(1) %p0, i32 24
  store <4 x float> %g, ptr addrspace(1) %p6
  ret void
}

; Lane t stores src[4t .. 4t + 3] (floats) as 8_8_8_8 UNORM at 4t of u8, as 16_16 FLOAT (x, y) at
; 4t of h16, as 16_16_16_16 SNORM at 8t of s16, and isrc[4t ..] as 8_8_8_8 UINT at 4t of i8.
define amdgpu_kernel void @typed_stores(ptr addrspace(1) %src, ptr addrspace(1) %isrc, ptr addrspace(1) %u8, ptr addrspace(1) %h16,
                                        ptr addrspace(1) %s16, ptr addrspace(1) %i8) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %ps = getelementptr <4 x float>, ptr addrspace(1) %src, i32 %t
  %v = load <4 x float>, ptr addrspace(1) %ps
  %pi = getelementptr <4 x i32>, ptr addrspace(1) %isrc, i32 %t
  %vi = load <4 x i32>, ptr addrspace(1) %pi
  %r1 = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %u8, i16 0, i64 256, i32 331692)
  %r2 = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %h16, i16 0, i64 256, i32 331692)
  %r3 = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %s16, i16 0, i64 512, i32 331692)
  %r4 = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %i8, i16 0, i64 256, i32 331692)
  %o4 = mul i32 %t, 4
  %o8 = mul i32 %t, 8
  call void @llvm.amdgcn.raw.ptr.tbuffer.store.v4f32(<4 x float> %v, ptr addrspace(8) %r1, i32 %o4, i32 0, i32 10, i32 0)
  %xy = shufflevector <4 x float> %v, <4 x float> poison, <2 x i32> <i32 0, i32 1>
  call void @llvm.amdgcn.raw.ptr.tbuffer.store.v2f32(<2 x float> %xy, ptr addrspace(8) %r2, i32 %o4, i32 0, i32 117, i32 0)
  call void @llvm.amdgcn.raw.ptr.tbuffer.store.v4f32(<4 x float> %v, ptr addrspace(8) %r3, i32 %o8, i32 0, i32 28, i32 0)
  call void @llvm.amdgcn.raw.ptr.tbuffer.store.v4i32(<4 x i32> %vi, ptr addrspace(8) %r4, i32 %o4, i32 0, i32 74, i32 0)
  ret void
}

; A packed format (10_11_11 FLOAT), which the emulator does not convert.
define amdgpu_kernel void @packed_format(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 256, i32 331692)
  %o4 = mul i32 %t, 4
  %v = call <4 x float> @llvm.amdgcn.raw.ptr.tbuffer.load.v4f32(ptr addrspace(8) %r, i32 %o4, i32 0, i32 118, i32 0)
  %p = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %t
  store <4 x float> %v, ptr addrspace(1) %p
  ret void
}
)";

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float half_to_float(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }

}  // namespace

TEST_CASE("tbuffer_load_format and buffer_load_format convert each format's components, zero past num_records") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kTyped, arch_name(arch));
    std::ostringstream listing;
    write_listing(CodeObject::load(bytes), listing);
    for (const char* form : {"tbuffer_load_format_xyzw", "tbuffer_load_format_xy", "buffer_load_format_xyzw", "tbuffer_store_format_xyzw",
                             "tbuffer_store_format_xy"})
      REQUIRE_MESSAGE(listing.str().find(form) != std::string::npos, form);
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    std::vector<uint8_t> in(512);
    for (auto& b : in) b = static_cast<uint8_t>(rng()());
    const uint32_t n = 128 + static_cast<uint32_t>(rng()() % 300);  // some lanes partly or wholly out of range
    INFO("num_records " << n);
    GlobalMemory mem;
    const uint64_t pin = upload(mem, in, "in"), pout = upload(mem, std::vector<uint8_t>(64 * 28 * 4, 0xCD), "out");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(pin), ArgValue::pointer(pout), ArgValue::u32(n)};
    o.kernarg = pack_kernel_args(code.kernel("typed_loads"), args);
    run_kernel(code, "typed_loads", mem, o);
    const auto out = download<uint32_t>(mem, pout, 64 * 28);
    // Component c of size `size` at `offset` + c * size, if in range (its last byte below n).
    const auto raw = [&](uint32_t offset, uint32_t c, uint32_t size) -> uint32_t {
      const uint32_t at = offset + c * size;
      if (at + size > n) return 0;
      uint32_t v = 0;
      std::memcpy(&v, &in[at], size);
      return v;
    };
    const auto sext = [](uint32_t v, int bits) { return static_cast<int32_t>(v << (32 - bits)) >> (32 - bits); };
    for (uint32_t t = 0; t < 64; ++t) {
      const uint32_t* got = &out[28 * t];
      for (uint32_t c = 0; c < 4; ++c) {
        INFO("lane " << t << ", component " << c);
        const uint32_t b = raw(4 * t, c, 1);
        CHECK(got[c] == bits_of(float(b / 255.0)));                                           // 8_8_8_8 UNORM
        CHECK(got[4 + c] == bits_of(float(std::max(sext(b, 8) / 127.0, -1.0))));             // 8_8_8_8 SNORM
        const float h = c < 2 ? half_to_float(static_cast<uint16_t>(raw(4 * t, c, 2))) : c == 3 ? 1.0f : 0.0f;
        CHECK(got[8 + c] == bits_of(h));                                                      // 16_16 FLOAT, z 0, w 1.0
        CHECK(got[12 + c] == (c == 0 ? raw(4 * t + 1, 0, 1) : c == 3 ? 1u : 0u));            // 8 UINT, w 1
        CHECK(got[16 + c] == static_cast<uint32_t>(sext(raw(8 * t, c, 2), 16)));              // 16_16_16_16 SINT
        if (c < 2) CHECK(got[20 + c] == bits_of(float(static_cast<int32_t>(raw(8 * t, c, 4)))));  // 32_32 SSCALED
        CHECK(got[24 + c] == bits_of(float(b / 255.0)));                                      // the V#'s 8_8_8_8 UNORM
      }
    }
  }
}

TEST_CASE("tbuffer_store_format converts to UNORM, FLOAT, SNORM and UINT components") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kTyped, arch_name(arch)));
    std::vector<float> src(256);
    std::uniform_real_distribution<float> wide(-1.5f, 1.5f);
    for (size_t i = 0; i < src.size(); ++i) src[i] = i % 17 == 0 ? std::nanf("") : wide(rng());
    std::vector<uint32_t> isrc(256);
    for (auto& x : isrc) x = static_cast<uint32_t>(rng()());
    GlobalMemory mem;
    const uint64_t ps = upload(mem, src, "src"), pi = upload(mem, isrc, "isrc");
    const uint64_t pu8 = upload(mem, std::vector<uint8_t>(256, 0xCD), "u8"), ph16 = upload(mem, std::vector<uint8_t>(256, 0xCD), "h16");
    const uint64_t ps16 = upload(mem, std::vector<uint8_t>(512, 0xCD), "s16"), pi8 = upload(mem, std::vector<uint8_t>(256, 0xCD), "i8");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(ps), ArgValue::pointer(pi), ArgValue::pointer(pu8), ArgValue::pointer(ph16),
                             ArgValue::pointer(ps16), ArgValue::pointer(pi8)};
    o.kernarg = pack_kernel_args(code.kernel("typed_stores"), args);
    run_kernel(code, "typed_stores", mem, o);
    const auto u8 = download<uint8_t>(mem, pu8, 256);
    const auto h16 = download<uint16_t>(mem, ph16, 128);
    const auto s16 = download<int16_t>(mem, ps16, 256);
    const auto i8 = download<uint8_t>(mem, pi8, 256);
    const auto clamp_or_zero = [](float x, double lo) { return std::isnan(x) ? 0.0 : std::clamp(double(x), lo, 1.0); };
    for (size_t t = 0; t < 64; ++t)
      for (size_t c = 0; c < 4; ++c) {
        INFO("lane " << t << ", component " << c);
        const float x = src[4 * t + c];
        CHECK(u8[4 * t + c] == static_cast<uint8_t>(std::nearbyint(clamp_or_zero(x, 0.0) * 255)));
        if (c < 2) CHECK(h16[2 * t + c] == std::bit_cast<uint16_t>(static_cast<_Float16>(x)));
        CHECK(s16[4 * t + c] == static_cast<int16_t>(std::nearbyint(clamp_or_zero(x, -1.0) * 32767)));
        CHECK(i8[4 * t + c] == (isrc[4 * t + c] & 0xFF));
      }
  }
}

TEST_CASE("a typed buffer access in a format the emulator does not convert stops with an error naming it") {
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kTyped, "gfx942"));
  GlobalMemory mem;
  const uint64_t pin = upload(mem, std::vector<uint8_t>(256, 0), "in"), pout = upload(mem, std::vector<uint8_t>(1024, 0xCD), "out");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(pin), ArgValue::pointer(pout)};
  o.kernarg = pack_kernel_args(code.kernel("packed_format"), args);
  const std::string error = weft::testing::error_of([&] { run_kernel(code, "packed_format", mem, o); });
  CHECK_MESSAGE(error.find("BUF_DATA_FORMAT_10_11_11 with number format 7: this data format is not emulated") != std::string::npos, error);
  CHECK_MESSAGE(error.find("tbuffer_load_format_xyzw") != std::string::npos, error);
}
