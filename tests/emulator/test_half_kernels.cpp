// 16-bit, packed and 64-bit arithmetic through compiled kernels on both targets: f16 scalar and
// <2 x half> math (v_pk_*_f16, op_sel), <2 x float> math (v_pk_*_f32), f64 math and conversions.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
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
using weft::testing::upload;

namespace {

const char* kKernels = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare half @llvm.fma.f16(half, half, half)
declare <2 x half> @llvm.fma.v2f16(<2 x half>, <2 x half>, <2 x half>)
declare <2 x float> @llvm.fma.v2f32(<2 x float>, <2 x float>, <2 x float>)
declare double @llvm.fma.f64(double, double, double)
declare half @llvm.maxnum.f16(half, half)
; out[i] = max(fma(a, b, c) * a - b, c)   in f16
define amdgpu_kernel void @half_math(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr half, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr half, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr half, ptr addrspace(1) %c, i32 %i
  %va = load half, ptr addrspace(1) %pa
  %vb = load half, ptr addrspace(1) %pb
  %vc = load half, ptr addrspace(1) %pc
  %f = call half @llvm.fma.f16(half %va, half %vb, half %vc)
  %m = fmul half %f, %va
  %s = fsub half %m, %vb
  %r = call half @llvm.maxnum.f16(half %s, half %vc)
  %po = getelementptr half, ptr addrspace(1) %out, i32 %i
  store half %r, ptr addrspace(1) %po
  ret void
}
; out[i] = fma(a, b, c) + a * b.yx   on <2 x half>
define amdgpu_kernel void @half2_math(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <2 x half>, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr <2 x half>, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr <2 x half>, ptr addrspace(1) %c, i32 %i
  %va = load <2 x half>, ptr addrspace(1) %pa
  %vb = load <2 x half>, ptr addrspace(1) %pb
  %vc = load <2 x half>, ptr addrspace(1) %pc
  %f = call <2 x half> @llvm.fma.v2f16(<2 x half> %va, <2 x half> %vb, <2 x half> %vc)
  %sw = shufflevector <2 x half> %vb, <2 x half> undef, <2 x i32> <i32 1, i32 0>
  %m = fmul <2 x half> %va, %sw
  %r = fadd <2 x half> %f, %m
  %po = getelementptr <2 x half>, ptr addrspace(1) %out, i32 %i
  store <2 x half> %r, ptr addrspace(1) %po
  ret void
}
; out[i] = fma(a, b, c) * a + b   on <2 x float>
define amdgpu_kernel void @float2_math(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <2 x float>, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr <2 x float>, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr <2 x float>, ptr addrspace(1) %c, i32 %i
  %va = load <2 x float>, ptr addrspace(1) %pa
  %vb = load <2 x float>, ptr addrspace(1) %pb
  %vc = load <2 x float>, ptr addrspace(1) %pc
  %f = call <2 x float> @llvm.fma.v2f32(<2 x float> %va, <2 x float> %vb, <2 x float> %vc)
  %m = fmul <2 x float> %f, %va
  %r = fadd <2 x float> %m, %vb
  %po = getelementptr <2 x float>, ptr addrspace(1) %out, i32 %i
  store <2 x float> %r, ptr addrspace(1) %po
  ret void
}
; out[i] = fma(float(a), float(b), c) with half a, b and float c (gfx9: v_fma_mix_f32)
define amdgpu_kernel void @mixed_math(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <2 x half>, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr <2 x half>, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr float, ptr addrspace(1) %c, i32 %i
  %va = load <2 x half>, ptr addrspace(1) %pa
  %vb = load <2 x half>, ptr addrspace(1) %pb
  %vc = load float, ptr addrspace(1) %pc
  %a0 = extractelement <2 x half> %va, i32 1
  %b0 = extractelement <2 x half> %vb, i32 0
  %fa = fpext half %a0 to float
  %fb = fpext half %b0 to float
  %r = call float @llvm.fma.f32(float %fa, float %fb, float %vc)
  %po = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %r, ptr addrspace(1) %po
  ret void
}
declare float @llvm.fma.f32(float, float, float)
; out[i] = float(fma(a, b, c) * a + double(i))   in f64
define amdgpu_kernel void @double_math(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr double, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr double, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr double, ptr addrspace(1) %c, i32 %i
  %va = load double, ptr addrspace(1) %pa
  %vb = load double, ptr addrspace(1) %pb
  %vc = load double, ptr addrspace(1) %pc
  %f = call double @llvm.fma.f64(double %va, double %vb, double %vc)
  %m = fmul double %f, %va
  %di = sitofp i32 %i to double
  %s = fadd double %m, %di
  %r = fptrunc double %s to float
  %po = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %r, ptr addrspace(1) %po
  ret void
}
; out[i] = fma(a, 3.0, c) in f64: 3.0 is not an inline constant, so it becomes a 32-bit literal
; of v_fmac_f64_e32, which the hardware reads as the high half of the double
define amdgpu_kernel void @double_literal(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr double, ptr addrspace(1) %a, i32 %i
  %pc = getelementptr double, ptr addrspace(1) %c, i32 %i
  %va = load double, ptr addrspace(1) %pa
  %vc = load double, ptr addrspace(1) %pc
  %f = call double @llvm.fma.f64(double %va, double 3.0, double %vc)
  %po = getelementptr double, ptr addrspace(1) %out, i32 %i
  store double %f, ptr addrspace(1) %po
  ret void
}
)";

using Half = _Float16;

template <typename T>
std::vector<T> random_values(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<double> d(-2.0, 2.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <typename T>
std::vector<T> run(const CodeObject& code, const char* kernel, const std::vector<T>& a, const std::vector<T>& b,
                   const std::vector<T>& c, size_t out_elements, size_t out_size) {
  GlobalMemory mem;
  const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b"), pc = upload(mem, c, "c");
  const uint64_t po = upload(mem, std::vector<uint8_t>(out_elements * out_size, 0xCD), "out");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(pc), ArgValue::pointer(po)};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  run_kernel(code, kernel, mem, o);
  std::vector<T> out(out_elements * out_size / sizeof(T));
  std::memcpy(out.data(), mem.data(po), out.size() * sizeof(T));
  return out;
}

bool near(double got, double want, double rel) { return std::abs(got - want) <= rel * (1.0 + std::abs(want)); }

}  // namespace

TEST_CASE("f16, <2 x half>, <2 x float> and f64 kernels on both targets") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kKernels, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    {
      const auto a = random_values<Half>(rng, 64), b = random_values<Half>(rng, 64), c = random_values<Half>(rng, 64);
      const auto out = run(code, "half_math", a, b, c, 64, 2);
      for (int i = 0; i < 64; ++i) {
        const double f = std::fma(double(a[i]), double(b[i]), double(c[i]));
        const double want = std::fmax(double(Half(f)) * double(a[i]) - double(b[i]), double(c[i]));
        REQUIRE_MESSAGE(near(double(out[static_cast<size_t>(i)]), want, 4e-3), "lane " << i);
      }
    }
    {
      const auto a = random_values<Half>(rng, 128), b = random_values<Half>(rng, 128), c = random_values<Half>(rng, 128);
      const auto out = run(code, "half2_math", a, b, c, 64, 4);
      for (int i = 0; i < 128; ++i) {
        const int swapped = i ^ 1;
        const double want = std::fma(double(a[i]), double(b[i]), double(c[i])) + double(a[i]) * double(b[swapped]);
        REQUIRE_MESSAGE(near(double(out[static_cast<size_t>(i)]), want, 6e-3), "element " << i);
      }
    }
    {
      const auto a = random_values<float>(rng, 128), b = random_values<float>(rng, 128), c = random_values<float>(rng, 128);
      const auto out = run(code, "float2_math", a, b, c, 64, 8);
      for (int i = 0; i < 128; ++i) {
        const double want = std::fma(double(a[i]), double(b[i]), double(c[i])) * a[i] + b[i];
        REQUIRE_MESSAGE(near(out[static_cast<size_t>(i)], want, 1e-5), "element " << i);
      }
    }
    {
      const auto a = random_values<Half>(rng, 128), b = random_values<Half>(rng, 128);
      const auto cf = random_values<float>(rng, 64);
      std::vector<Half> c(128);
      std::memcpy(c.data(), cf.data(), 256);
      const auto out_bits = run(code, "mixed_math", a, b, c, 64, 4);
      std::vector<float> out(64);
      std::memcpy(out.data(), out_bits.data(), 256);
      for (int i = 0; i < 64; ++i) {
        const float want = std::fma(float(a[2 * i + 1]), float(b[2 * i]), cf[static_cast<size_t>(i)]);
        REQUIRE_MESSAGE(out[static_cast<size_t>(i)] == want, "lane " << i);
      }
    }
    {
      const auto a = random_values<double>(rng, 64), b = random_values<double>(rng, 64), c = random_values<double>(rng, 64);
      const auto out_bits = run(code, "double_math", a, b, c, 64, 4);
      std::vector<float> out(64);
      std::memcpy(out.data(), out_bits.data(), 64 * 4);
      for (int i = 0; i < 64; ++i) {
        const float want = static_cast<float>(std::fma(a[i], b[i], c[i]) * a[i] + i);
        REQUIRE_MESSAGE(out[static_cast<size_t>(i)] == want, "lane " << i);
      }
    }
    {
      std::ostringstream listing;
      write_listing(code, listing);
      const std::string text = listing.str();
      const size_t literal = text.find(", 0x40080000, v[");  // the instruction under test
      REQUIRE(literal != std::string::npos);
      const size_t mnemonic = text.rfind("v_fmac_f64_e32", literal);
      REQUIRE(mnemonic != std::string::npos);
      REQUIRE(text.find('\n', mnemonic) > literal);  // on the same line
      const auto a = random_values<double>(rng, 64), b = random_values<double>(rng, 64), c = random_values<double>(rng, 64);
      const auto out = run(code, "double_literal", a, b, c, 64, 8);
      for (int i = 0; i < 64; ++i) REQUIRE_MESSAGE(out[static_cast<size_t>(i)] == std::fma(a[i], 3.0, c[i]), "lane " << i);
    }
  }
}

namespace {

// 16-bit compares and the high-half store: out[i] = the compare bits of a[i] and b[i] as u16,
// i16 and f16 (VOPC and VOP3 forms), of byte i of w, and of w[i]'s low byte in an SDWA compare
// with an SGPR destination (inline assembly: llc picks that form only now and then); hi[i] =
// the high half of w[i] (global_store_short_d16_hi).
const char* kHalfCompares = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @half_compares(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %w, ptr addrspace(1) %out, ptr addrspace(1) %hi) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i16, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr i16, ptr addrspace(1) %b, i32 %i
  %pw2 = getelementptr i32, ptr addrspace(1) %w, i32 %i
  %pc = getelementptr i8, ptr addrspace(1) %w, i32 %i
  %vc = load i8, ptr addrspace(1) %pc
  %eq8 = icmp eq i8 %vc, -128
  %nz8 = icmp ne i8 %vc, 0
  %va = load i16, ptr addrspace(1) %pa
  %vb = load i16, ptr addrspace(1) %pb
  %ult = icmp ult i16 %va, %vb
  %slt = icmp slt i16 %va, %vb
  %ne = icmp ne i16 %va, 128
  %ha = bitcast i16 %va to half
  %hb = bitcast i16 %vb to half
  %uno = fcmp uno half %ha, %hb
  %olt = fcmp olt half %ha, %hb
  %b0 = zext i1 %ult to i32
  %b1 = zext i1 %slt to i32
  %ne2 = or i1 %ne, %eq8
  %ne3 = or i1 %ne2, %nz8
  %b2 = zext i1 %ne3 to i32
  %b3 = zext i1 %uno to i32
  %b4 = zext i1 %olt to i32
  %s1 = shl i32 %b1, 1
  %s2 = shl i32 %b2, 2
  %s3 = shl i32 %b3, 3
  %s4 = shl i32 %b4, 4
  %o1 = or i32 %b0, %s1
  %o2 = or i32 %o1, %s2
  %o3 = or i32 %o2, %s3
  %o4a = or i32 %o3, %s4
  %vwi = load i32, ptr addrspace(1) %pw2
  %mask = call i64 asm sideeffect "v_cmp_eq_u16_sdwa $0, $1, $2 src0_sel:BYTE_0 src1_sel:DWORD", "=s,v,s"(i32 %vwi, i32 128)
  %i64 = zext i32 %i to i64
  %mb = lshr i64 %mask, %i64
  %mb1 = and i64 %mb, 1
  %mb32 = trunc i64 %mb1 to i32
  %s5 = shl i32 %mb32, 5
  %o4 = or i32 %o4a, %s5
  %po = getelementptr i32, ptr addrspace(1) %out, i32 %i
  store i32 %o4, ptr addrspace(1) %po
  %pw = getelementptr <2 x i16>, ptr addrspace(1) %w, i32 %i
  %vw = load <2 x i16>, ptr addrspace(1) %pw
  %h = extractelement <2 x i16> %vw, i32 1
  %ph = getelementptr i16, ptr addrspace(1) %hi, i32 %i
  store i16 %h, ptr addrspace(1) %ph
  ret void
}
)";

}  // namespace

TEST_CASE("16-bit integer and f16 compares (VOPC, VOP3, SDWA with an SGPR destination) and d16_hi stores on both targets") {
  // The forms under test are in the code (llc's choices can change).
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    std::ostringstream listing;
    write_listing(CodeObject::load(weft::testing::compile_ll(kHalfCompares, arch_name(arch))), listing);
    for (const char* form : {"v_cmp_lt_u16_e64", "v_cmp_lt_i16_e64", "v_cmp_u_f16_e64", "v_cmp_eq_u16_e32", "v_cmp_eq_u16_sdwa s[",
                             "global_store_short_d16_hi"})
      CHECK_MESSAGE(listing.str().find(form) != std::string::npos, form << " on " << arch_name(arch));
  }
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<uint32_t> any;
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kHalfCompares, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    std::vector<uint16_t> a(64), b(64);
    std::vector<uint32_t> w(64);
    for (int i = 0; i < 64; ++i) {
      // Some equal pairs, some 128s, some NaNs (0x7e00, 0xfc01), the rest random.
      a[i] = i % 8 == 0 ? 128 : i % 8 == 1 ? 0x7e00 : static_cast<uint16_t>(any(rng));
      b[i] = i % 8 == 2 ? a[i] : i % 8 == 3 ? 0xfc01 : static_cast<uint16_t>(any(rng));
      w[i] = i % 4 == 0 ? (any(rng) & ~0xFFu) | 128 : i % 4 == 1 ? any(rng) & ~0xFFu : any(rng);
    }
    GlobalMemory mem;
    const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b"), pw = upload(mem, w, "w");
    const uint64_t po = upload(mem, std::vector<uint8_t>(256, 0xCD), "out"), ph = upload(mem, std::vector<uint8_t>(128, 0xCD), "hi");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(pw), ArgValue::pointer(po), ArgValue::pointer(ph)};
    o.kernarg = pack_kernel_args(code.kernel("half_compares"), args);
    run_kernel(code, "half_compares", mem, o);
    const auto out = download<uint32_t>(mem, po, 64);
    const auto hi = download<uint16_t>(mem, ph, 64);
    for (int i = 0; i < 64; ++i) {
      const double ha = double(std::bit_cast<Half>(a[i])), hb = double(std::bit_cast<Half>(b[i]));
      const uint8_t c = reinterpret_cast<const uint8_t*>(w.data())[i];
      const uint32_t want = uint32_t{a[i] < b[i]} | uint32_t{int16_t(a[i]) < int16_t(b[i])} << 1 |
                            uint32_t{a[i] != 128 || c == 128 || c != 0} << 2 | uint32_t{std::isnan(ha) || std::isnan(hb)} << 3 |
                            uint32_t{ha < hb} << 4 | uint32_t{(w[static_cast<size_t>(i)] & 0xFF) == 128} << 5;
      REQUIRE_MESSAGE(out[static_cast<size_t>(i)] == want, "lane " << i << ": a " << a[i] << ", b " << b[i]);
      REQUIRE_MESSAGE(hi[static_cast<size_t>(i)] == (w[static_cast<size_t>(i)] >> 16), "lane " << i);
    }
  }
}

namespace {

// The high-half LDS stores: lds16[i] = the high half of w[i] (ds_write_b16_d16_hi), lds8[i] =
// its byte 2 (ds_write_b8_d16_hi), read back (volatile, so the round trip through LDS stays)
// into out16 and out8.
const char* kLdsHighHalf = R"(
target triple = "amdgcn-amd-amdhsa"
@lds16 = internal addrspace(3) global [64 x i16] poison, align 2
@lds8 = internal addrspace(3) global [64 x i8] poison, align 1
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @lds_high_half(ptr addrspace(1) %w, ptr addrspace(1) %out16, ptr addrspace(1) %out8) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pw = getelementptr <2 x i16>, ptr addrspace(1) %w, i32 %i
  %vw = load <2 x i16>, ptr addrspace(1) %pw
  %h = extractelement <2 x i16> %vw, i32 1
  %p16 = getelementptr i16, ptr addrspace(3) @lds16, i32 %i
  store volatile i16 %h, ptr addrspace(3) %p16
  %pb = getelementptr <4 x i8>, ptr addrspace(1) %w, i32 %i
  %vb = load <4 x i8>, ptr addrspace(1) %pb
  %b2 = extractelement <4 x i8> %vb, i32 2
  %p8 = getelementptr i8, ptr addrspace(3) @lds8, i32 %i
  store volatile i8 %b2, ptr addrspace(3) %p8
  %r16 = load volatile i16, ptr addrspace(3) %p16
  %r8 = load volatile i8, ptr addrspace(3) %p8
  %q16 = getelementptr i16, ptr addrspace(1) %out16, i32 %i
  store i16 %r16, ptr addrspace(1) %q16
  %q8 = getelementptr i8, ptr addrspace(1) %out8, i32 %i
  store i8 %r8, ptr addrspace(1) %q8
  ret void
}
)";

}  // namespace

TEST_CASE("ds_write_b16_d16_hi and ds_write_b8_d16_hi store the high half on both targets") {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<uint32_t> any;
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kLdsHighHalf, arch_name(arch));
    std::ostringstream listing;
    write_listing(CodeObject::load(bytes), listing);
    for (const char* form : {"ds_write_b16_d16_hi", "ds_write_b8_d16_hi"})
      CHECK_MESSAGE(listing.str().find(form) != std::string::npos, form << " on " << arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    std::vector<uint32_t> w(64);
    for (uint32_t& x : w) x = any(rng);
    GlobalMemory mem;
    const uint64_t pw = upload(mem, w, "w"), p16 = upload(mem, std::vector<uint8_t>(128, 0xCD), "out16"),
                   p8 = upload(mem, std::vector<uint8_t>(64, 0xCD), "out8");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(pw), ArgValue::pointer(p16), ArgValue::pointer(p8)};
    o.kernarg = pack_kernel_args(code.kernel("lds_high_half"), args);
    run_kernel(code, "lds_high_half", mem, o);
    const auto out16 = download<uint16_t>(mem, p16, 64);
    const auto out8 = download<uint8_t>(mem, p8, 64);
    for (size_t i = 0; i < 64; ++i) {
      REQUIRE_MESSAGE(out16[i] == (w[i] >> 16), "lane " << i);
      REQUIRE_MESSAGE(out8[i] == ((w[i] >> 16) & 0xFF), "lane " << i);
    }
  }
}

namespace {

// v_bitop3_b32 and v_bitop3_b16 (gfx950) with a few truth tables, through inline assembly:
// out[3i + k] = bitop3(table k)(a[i], b[i], c[i]); the b16 form reads the high half of b (op_sel).
const char* kBitop3 = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @bitop3(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr i32, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr i32, ptr addrspace(1) %c, i32 %i
  %va = load i32, ptr addrspace(1) %pa
  %vb = load i32, ptr addrspace(1) %pb
  %vc = load i32, ptr addrspace(1) %pc
  %r0 = call i32 asm "v_bitop3_b32 $0, $1, $2, $3 bitop3:0xec", "=v,v,v,v"(i32 %va, i32 %vb, i32 %vc)
  %r1 = call i32 asm "v_bitop3_b32 $0, $1, $2, $3 bitop3:0x96", "=v,v,v,v"(i32 %va, i32 %vb, i32 %vc)
  %r2 = call i32 asm "v_bitop3_b16 $0, $1, $2, $3 bitop3:0x1b op_sel:[0,1,0,0]", "=v,v,v,v"(i32 %va, i32 %vb, i32 %vc)
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

// The truth table's result for one bit position of each source, spelled out.
uint32_t bitop3_reference(uint32_t table, uint32_t a, uint32_t b, uint32_t c, int width) {
  uint32_t r = 0;
  for (int bit = 0; bit < width; ++bit) {
    const uint32_t index = ((a >> bit) & 1) << 2 | ((b >> bit) & 1) << 1 | ((c >> bit) & 1);
    r |= ((table >> index) & 1) << bit;
  }
  return r;
}

}  // namespace

TEST_CASE("v_bitop3_b32 and v_bitop3_b16 (gfx950) apply their truth table bit by bit") {
  std::mt19937 rng(std::random_device{}());
  const auto bytes = weft::testing::compile_ll(kBitop3, "gfx950");
  weft::testing::check_listing_matches_objdump(bytes, Arch::Gfx950);
  const CodeObject code = CodeObject::load(bytes);
  std::vector<uint32_t> a(64), b(64), c(64);
  for (int i = 0; i < 64; ++i) a[i] = rng(), b[i] = rng(), c[i] = rng();
  GlobalMemory mem;
  const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b"), pc = upload(mem, c, "c");
  const uint64_t po = upload(mem, std::vector<uint8_t>(64 * 12, 0xCD), "out");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(pc), ArgValue::pointer(po)};
  o.kernarg = pack_kernel_args(code.kernel("bitop3"), args);
  run_kernel(code, "bitop3", mem, o);
  const auto out = download<uint32_t>(mem, po, 64 * 3);
  for (size_t i = 0; i < 64; ++i) {
    REQUIRE_MESSAGE(out[3 * i] == bitop3_reference(0xec, a[i], b[i], c[i], 32), "lane " << i);
    REQUIRE_MESSAGE(out[3 * i + 1] == bitop3_reference(0x96, a[i], b[i], c[i], 32), "lane " << i);
    // The 16-bit form: the low half of its result (op_sel picked b's high half).
    REQUIRE_MESSAGE((out[3 * i + 2] & 0xFFFF) == bitop3_reference(0x1b, a[i] & 0xFFFF, b[i] >> 16, c[i] & 0xFFFF, 16), "lane " << i);
  }
}
