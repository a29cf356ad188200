// fp8 conversion instructions through kernels llc-22 compiles from the AMDGPU intrinsics, on
// both targets (gfx942: fnuz formats, gfx950: OCP formats), against the host converters
// (dsl/float_formats.h): every one of the 256 codes of each format decoded (v_cvt_f32_fp8/bf8
// in its e32 and SDWA byte-select forms, v_cvt_pk_f32_fp8/bf8 and its SDWA WORD_1 form), and
// encoded random and special values (v_cvt_pk_fp8/bf8_f32 with either destination word, and
// with VOP3 neg/abs): ties at every midpoint of the format and one float32 step either side,
// subnormals, overflow, infinities, NaNs, -0. Conversions to fp8 do not saturate.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "toolchain.h"
#include "weft/dsl/float_formats.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;
using weft::testing::download;
using weft::testing::upload;

namespace {

// @decode_F: each lane converts the four bytes of one dword: out[8i + j] for byte j (j < 4),
// then the two pairs of the packed form. @encode_F: out[3i] = pk(a, b) into word 0 of old,
// out[3i+1] = pk(a, b) into word 1, out[3i+2] = pk(-a, |b|) into word 0.
std::string kernels() {
  std::string ir = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare float @llvm.amdgcn.cvt.f32.fp8(i32, i32)
declare float @llvm.amdgcn.cvt.f32.bf8(i32, i32)
declare <2 x float> @llvm.amdgcn.cvt.pk.f32.fp8(i32, i1)
declare <2 x float> @llvm.amdgcn.cvt.pk.f32.bf8(i32, i1)
declare i32 @llvm.amdgcn.cvt.pk.fp8.f32(float, float, i32, i1)
declare i32 @llvm.amdgcn.cvt.pk.bf8.f32(float, float, i32, i1)
declare float @llvm.fabs.f32(float)
)";
  for (const char* f : {"fp8", "bf8"}) {
    std::string k = R"(
define amdgpu_kernel void @decode_F(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %g = call i32 @llvm.amdgcn.workgroup.id.x()
  %gb = shl i32 %g, 8
  %i = add i32 %gb, %l
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %w = load i32, ptr addrspace(1) %p
  %f0 = call float @llvm.amdgcn.cvt.f32.F(i32 %w, i32 0)
  %f1 = call float @llvm.amdgcn.cvt.f32.F(i32 %w, i32 1)
  %f2 = call float @llvm.amdgcn.cvt.f32.F(i32 %w, i32 2)
  %f3 = call float @llvm.amdgcn.cvt.f32.F(i32 %w, i32 3)
  %lo = call <2 x float> @llvm.amdgcn.cvt.pk.f32.F(i32 %w, i1 false)
  %hi = call <2 x float> @llvm.amdgcn.cvt.pk.f32.F(i32 %w, i1 true)
  %o = mul i32 %i, 8
  %q0 = getelementptr float, ptr addrspace(1) %out, i32 %o
  store float %f0, ptr addrspace(1) %q0
  %q1 = getelementptr float, ptr addrspace(1) %q0, i32 1
  store float %f1, ptr addrspace(1) %q1
  %q2 = getelementptr float, ptr addrspace(1) %q0, i32 2
  store float %f2, ptr addrspace(1) %q2
  %q3 = getelementptr float, ptr addrspace(1) %q0, i32 3
  store float %f3, ptr addrspace(1) %q3
  %q4 = getelementptr float, ptr addrspace(1) %q0, i32 4
  store <2 x float> %lo, ptr addrspace(1) %q4
  %q6 = getelementptr float, ptr addrspace(1) %q0, i32 6
  store <2 x float> %hi, ptr addrspace(1) %q6
  ret void
}
define amdgpu_kernel void @encode_F(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %old, ptr addrspace(1) %out) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %g = call i32 @llvm.amdgcn.workgroup.id.x()
  %gb = shl i32 %g, 8
  %i = add i32 %gb, %l
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %po = getelementptr i32, ptr addrspace(1) %old, i32 %i
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %vo = load i32, ptr addrspace(1) %po
  %r0 = call i32 @llvm.amdgcn.cvt.pk.F.f32(float %va, float %vb, i32 %vo, i1 false)
  %r1 = call i32 @llvm.amdgcn.cvt.pk.F.f32(float %va, float %vb, i32 %vo, i1 true)
  %na = fneg float %va
  %ab = call float @llvm.fabs.f32(float %vb)
  %r2 = call i32 @llvm.amdgcn.cvt.pk.F.f32(float %na, float %ab, i32 %vo, i1 false)
  %o = mul i32 %i, 3
  %q0 = getelementptr i32, ptr addrspace(1) %out, i32 %o
  store i32 %r0, ptr addrspace(1) %q0
  %q1 = getelementptr i32, ptr addrspace(1) %q0, i32 1
  store i32 %r1, ptr addrspace(1) %q1
  %q2 = getelementptr i32, ptr addrspace(1) %q0, i32 2
  store i32 %r2, ptr addrspace(1) %q2
  ret void
}
)";
    for (size_t at; (at = k.find("_F")) != std::string::npos;) k.replace(at, 2, std::string("_") + f);
    for (size_t at; (at = k.find(".F")) != std::string::npos;) k.replace(at, 2, std::string(".") + f);
    ir += k;
  }
  return ir;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// The format each target's instructions convert: fnuz on gfx942, OCP on gfx950.
weft::FloatFormat format_for(Arch arch, bool bf8) {
  using weft::FloatFormat;
  if (arch == Arch::Gfx942) return bf8 ? FloatFormat::Fp8E5M2Fnuz : FloatFormat::Fp8E4M3Fnuz;
  return bf8 ? FloatFormat::Fp8E5M2 : FloatFormat::Fp8E4M3;
}

LaunchOptions launch(const CodeObject& code, const char* kernel, std::span<const ArgValue> args, size_t items) {
  LaunchOptions o;
  o.block = {256, 1, 1};
  o.grid = {static_cast<uint32_t>(items / 256), 1, 1};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  return o;
}

// Values that probe a format's rounding: every midpoint between neighbouring finite values,
// one float32 step either side of it, both signs; the codes' own values; zeros, infinities,
// NaNs, float32 subnormals and values far out of range.
std::vector<float> special_values(weft::FloatFormat fmt) {
  std::vector<float> v;
  for (uint32_t c = 0; c <= 0x7F; ++c) {
    const double lo = weft::decode_float(fmt, static_cast<uint16_t>(c)), hi = weft::decode_float(fmt, static_cast<uint16_t>(c + 1));
    if (!std::isfinite(lo)) continue;
    const double mid = std::isfinite(hi) ? (lo + hi) / 2 : lo + (lo - weft::decode_float(fmt, static_cast<uint16_t>(c - 1))) / 2;
    for (double x : {lo, mid}) {
      const float f = static_cast<float>(x);  // exact: fp8 values and their midpoints are float32s
      for (float y : {f, std::nextafter(f, 0.0f), std::nextafter(f, INFINITY)}) {
        v.push_back(y);
        v.push_back(-y);
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, inf, -inf, 1e30f, -1e30f, 1e-30f, -1e-30f, std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::denorm_min(), from_bits(0x7FC00000), from_bits(0xFFC00000), from_bits(0x7F800001),
                  from_bits(0x7FFFFFFF), from_bits(0xFFA00000)})
    v.push_back(x);
  return v;
}

// Random float32s: most with exponents around the fp8 ranges, some with any bits at all.
std::vector<float> random_values(std::mt19937_64& rng, size_t n) {
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<int> exponent(127 - 30, 127 + 20);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = any(rng);
    v[i] = i % 8 == 0 ? from_bits(r) : from_bits((r & 0x807FFFFF) | static_cast<uint32_t>(exponent(rng)) << 23);
  }
  return v;
}

std::string hex(uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

TEST_CASE("fp8: v_cvt_f32_fp8/bf8 and v_cvt_pk_f32_fp8/bf8 decode all 256 codes exactly on both targets") {
  if (!weft::testing::have_llvm_tools()) return;
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto object = weft::testing::compile_ll(kernels(), arch_name(arch));
    weft::testing::check_listing_matches_objdump(object, arch);
    const CodeObject code = CodeObject::load(object);
    {
      std::ostringstream listing;
      write_listing(code, listing);
      CHECK(listing.str().find("_sdwa") != std::string::npos);  // the byte and word selects run as SDWA
    }
    for (bool bf8 : {false, true}) {
      const weft::FloatFormat fmt = format_for(arch, bf8);
      INFO(weft::float_format_info(fmt).name);
      // 256 lanes: lane i holds codes i, i+1, i+2, i+3 (mod 256), so each code sits in every byte.
      std::vector<uint32_t> words(256);
      for (uint32_t i = 0; i < 256; ++i)
        for (uint32_t j = 0; j < 4; ++j) words[i] |= ((i + j) & 0xFF) << (8 * j);
      GlobalMemory mem;
      const uint64_t in = upload(mem, words, "in");
      const uint64_t out = upload(mem, std::vector<uint8_t>(256 * 8 * 4, 0xCD), "out");
      const char* name = bf8 ? "decode_bf8" : "decode_fp8";
      const ArgValue args[] = {ArgValue::pointer(in), ArgValue::pointer(out)};
      run_kernel(code, name, mem, launch(code, name, args, 256));
      const auto got = download<float>(mem, out, 256 * 8);
      for (uint32_t i = 0; i < 256; ++i)
        for (uint32_t j = 0; j < 8; ++j) {
          const uint32_t code_ = (i + j % 4) & 0xFF;
          const double want = weft::decode_float(fmt, static_cast<uint16_t>(code_));
          const float g = got[i * 8 + j];
          INFO("code " << hex(code_) << ", form " << j << ": got " << g << " (" << hex(bits(g)) << "), want " << want);
          if (std::isnan(want)) REQUIRE(std::isnan(g));
          else REQUIRE(bits(g) == bits(static_cast<float>(want)));
        }
    }
  }
}

TEST_CASE("fp8: v_cvt_pk_fp8/bf8_f32 round to nearest even without saturation, on both targets") {
  if (!weft::testing::have_llvm_tools()) return;
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("WEFT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::cerr << "fp8 emulator tests: random seed " << seed << " (WEFT_TEST_SEED replays it)\n";
  std::mt19937_64 rng(seed);
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto object = weft::testing::compile_ll(kernels(), arch_name(arch));
    const CodeObject code = CodeObject::load(object);
    for (bool bf8 : {false, true}) {
      const weft::FloatFormat fmt = format_for(arch, bf8);
      INFO(weft::float_format_info(fmt).name);
      std::vector<float> a = special_values(fmt);
      const std::vector<float> more = random_values(rng, 16384);
      a.insert(a.end(), more.begin(), more.end());
      a.resize((a.size() + 255) / 256 * 256, 1.0f);
      std::vector<float> b(a.size());
      for (size_t i = 0; i < a.size(); ++i) b[i] = a[(i * 7919 + 13) % a.size()];
      std::vector<uint32_t> old(a.size());
      for (uint32_t& o : old) o = static_cast<uint32_t>(rng());
      GlobalMemory mem;
      const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b"), po = upload(mem, old, "old");
      const uint64_t out = upload(mem, std::vector<uint8_t>(a.size() * 3 * 4, 0xCD), "out");
      const char* name = bf8 ? "encode_bf8" : "encode_fp8";
      const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(po), ArgValue::pointer(out)};
      run_kernel(code, name, mem, launch(code, name, args, a.size()));
      const auto got = download<uint32_t>(mem, out, a.size() * 3);
      auto enc = [&](float x) { return static_cast<uint32_t>(weft::encode_float(fmt, x, weft::Overflow::NonFinite)); };
      for (size_t i = 0; i < a.size(); ++i) {
        const uint32_t pair = enc(a[i]) | enc(b[i]) << 8, modified = enc(-a[i]) | enc(std::fabs(b[i])) << 8;
        INFO("a " << a[i] << " (" << hex(bits(a[i])) << "), b " << b[i] << " (" << hex(bits(b[i])) << "), old " << hex(old[i]));
        REQUIRE(hex(got[3 * i]) == hex((old[i] & 0xFFFF0000u) | pair));
        REQUIRE(hex(got[3 * i + 1]) == hex((old[i] & 0xFFFF) | pair << 16));
        REQUIRE(hex(got[3 * i + 2]) == hex((old[i] & 0xFFFF0000u) | modified));
      }
    }
  }
}
