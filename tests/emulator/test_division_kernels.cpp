// Float code as LLVM 22 lowers it without fast-math, compiled by llc-22 and run on both targets:
// IEEE f32 and f64 division (v_div_scale, v_rcp, v_div_fmas, v_div_fixup), f64 square root
// (v_rsq_f64, v_ldexp_f64, v_cmp_class_f64), class tests, med3, frexp and f64 rounding. Every run
// draws fresh inputs mixed with special values, poisons the outputs and checks each lane against
// the host.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "kernel_io.h"
#include "test_seed.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;

namespace {

constexpr size_t kItems = 256;  // one workgroup of four waves

const char* kKernels = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare double @llvm.sqrt.f64(double)
declare i1 @llvm.amdgcn.class.f32(float, i32)
declare i1 @llvm.amdgcn.class.f64(double, i32)
declare i1 @llvm.amdgcn.class.f16(half, i32)
declare float @llvm.amdgcn.fmed3.f32(float, float, float)
declare i32 @llvm.smax.i32(i32, i32)
declare i32 @llvm.smin.i32(i32, i32)
declare i32 @llvm.umax.i32(i32, i32)
declare i32 @llvm.umin.i32(i32, i32)
declare { float, i32 } @llvm.frexp.f32.i32(float)
declare { double, i32 } @llvm.frexp.f64.i32(double)
declare double @llvm.floor.f64(double)
declare double @llvm.ceil.f64(double)
declare double @llvm.trunc.f64(double)
declare double @llvm.rint.f64(double)
declare double @llvm.amdgcn.fract.f64(double)

define amdgpu_kernel void @div_f32(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %r = fdiv float %va, %vb
  %po = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %r, ptr addrspace(1) %po
  ret void
}
define amdgpu_kernel void @div_f64(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr double, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr double, ptr addrspace(1) %b, i32 %i
  %va = load double, ptr addrspace(1) %pa
  %vb = load double, ptr addrspace(1) %pb
  %r = fdiv double %va, %vb
  %po = getelementptr double, ptr addrspace(1) %out, i32 %i
  store double %r, ptr addrspace(1) %po
  ret void
}
define amdgpu_kernel void @sqrt_f64(ptr addrspace(1) %a, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr double, ptr addrspace(1) %a, i32 %i
  %va = load double, ptr addrspace(1) %pa
  %r = call double @llvm.sqrt.f64(double %va)
  %po = getelementptr double, ptr addrspace(1) %out, i32 %i
  store double %r, ptr addrspace(1) %po
  ret void
}
; out[i] = class(a[i], mask[i]) for f32, f64 and f16 values (three results per item)
define amdgpu_kernel void @classes(ptr addrspace(1) %a32, ptr addrspace(1) %a64, ptr addrspace(1) %a16, ptr addrspace(1) %mask, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pm = getelementptr i32, ptr addrspace(1) %mask, i32 %i
  %m = load i32, ptr addrspace(1) %pm
  %p32 = getelementptr float, ptr addrspace(1) %a32, i32 %i
  %v32 = load float, ptr addrspace(1) %p32
  %c32 = call i1 @llvm.amdgcn.class.f32(float %v32, i32 %m)
  %p64 = getelementptr double, ptr addrspace(1) %a64, i32 %i
  %v64 = load double, ptr addrspace(1) %p64
  %c64 = call i1 @llvm.amdgcn.class.f64(double %v64, i32 %m)
  %p16 = getelementptr half, ptr addrspace(1) %a16, i32 %i
  %v16 = load half, ptr addrspace(1) %p16
  %c16 = call i1 @llvm.amdgcn.class.f16(half %v16, i32 %m)
  %r32 = zext i1 %c32 to i32
  %r64 = zext i1 %c64 to i32
  %r16 = zext i1 %c16 to i32
  %j = mul i32 %i, 3
  %o0 = getelementptr i32, ptr addrspace(1) %out, i32 %j
  store i32 %r32, ptr addrspace(1) %o0
  %o1 = getelementptr i32, ptr addrspace(1) %o0, i32 1
  store i32 %r64, ptr addrspace(1) %o1
  %o2 = getelementptr i32, ptr addrspace(1) %o0, i32 2
  store i32 %r16, ptr addrspace(1) %o2
  ret void
}
; out = {fmed3(a, b, c), clamp_i32(bits a, -1000, 1000000), clamp_u32(bits b, 1000, 3000000000)}
define amdgpu_kernel void @med3(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr float, ptr addrspace(1) %c, i32 %i
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %vc = load float, ptr addrspace(1) %pc
  %f = call float @llvm.amdgcn.fmed3.f32(float %va, float %vb, float %vc)
  %ia = bitcast float %va to i32
  %s0 = call i32 @llvm.smax.i32(i32 %ia, i32 -1000)
  %s = call i32 @llvm.smin.i32(i32 %s0, i32 1000000)
  %ib = bitcast float %vb to i32
  %u0 = call i32 @llvm.umax.i32(i32 %ib, i32 1000)
  %u = call i32 @llvm.umin.i32(i32 %u0, i32 3000000000)
  %fi = bitcast float %f to i32
  %j = mul i32 %i, 3
  %o0 = getelementptr i32, ptr addrspace(1) %out, i32 %j
  store i32 %fi, ptr addrspace(1) %o0
  %o1 = getelementptr i32, ptr addrspace(1) %o0, i32 1
  store i32 %s, ptr addrspace(1) %o1
  %o2 = getelementptr i32, ptr addrspace(1) %o0, i32 2
  store i32 %u, ptr addrspace(1) %o2
  ret void
}
define amdgpu_kernel void @frexp_f32(ptr addrspace(1) %a, ptr addrspace(1) %mant, ptr addrspace(1) %exp) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %va = load float, ptr addrspace(1) %pa
  %r = call { float, i32 } @llvm.frexp.f32.i32(float %va)
  %m = extractvalue { float, i32 } %r, 0
  %e = extractvalue { float, i32 } %r, 1
  %pm = getelementptr float, ptr addrspace(1) %mant, i32 %i
  store float %m, ptr addrspace(1) %pm
  %pe = getelementptr i32, ptr addrspace(1) %exp, i32 %i
  store i32 %e, ptr addrspace(1) %pe
  ret void
}
define amdgpu_kernel void @frexp_f64(ptr addrspace(1) %a, ptr addrspace(1) %mant, ptr addrspace(1) %exp) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr double, ptr addrspace(1) %a, i32 %i
  %va = load double, ptr addrspace(1) %pa
  %r = call { double, i32 } @llvm.frexp.f64.i32(double %va)
  %m = extractvalue { double, i32 } %r, 0
  %e = extractvalue { double, i32 } %r, 1
  %pm = getelementptr double, ptr addrspace(1) %mant, i32 %i
  store double %m, ptr addrspace(1) %pm
  %pe = getelementptr i32, ptr addrspace(1) %exp, i32 %i
  store i32 %e, ptr addrspace(1) %pe
  ret void
}
; out = {floor, ceil, trunc, rint, fract} of a
define amdgpu_kernel void @round_f64(ptr addrspace(1) %a, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr double, ptr addrspace(1) %a, i32 %i
  %va = load double, ptr addrspace(1) %pa
  %r0 = call double @llvm.floor.f64(double %va)
  %r1 = call double @llvm.ceil.f64(double %va)
  %r2 = call double @llvm.trunc.f64(double %va)
  %r3 = call double @llvm.rint.f64(double %va)
  %r4 = call double @llvm.amdgcn.fract.f64(double %va)
  %j = mul i32 %i, 5
  %o0 = getelementptr double, ptr addrspace(1) %out, i32 %j
  store double %r0, ptr addrspace(1) %o0
  %o1 = getelementptr double, ptr addrspace(1) %o0, i32 1
  store double %r1, ptr addrspace(1) %o1
  %o2 = getelementptr double, ptr addrspace(1) %o0, i32 2
  store double %r2, ptr addrspace(1) %o2
  %o3 = getelementptr double, ptr addrspace(1) %o0, i32 3
  store double %r3, ptr addrspace(1) %o3
  %o4 = getelementptr double, ptr addrspace(1) %o0, i32 4
  store double %r4, ptr addrspace(1) %o4
  ret void
}
)";

using Bytes = std::vector<uint8_t>;

template <typename T>
Bytes bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> values_of(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}
// An output buffer of n T, filled with a pattern no kernel writes by accident.
template <typename T>
Bytes poisoned(size_t n) { return Bytes(n * sizeof(T), 0xCD); }

// Runs `kernel` on one workgroup of kItems work-items with the buffers as its pointer arguments,
// in order; returns every buffer's bytes afterwards.
std::vector<Bytes> run(const CodeObject& code, const char* kernel, std::vector<Bytes> buffers) {
  GlobalMemory mem;
  std::vector<ArgValue> args;
  std::vector<uint64_t> addresses;
  for (const Bytes& b : buffers) {
    addresses.push_back(weft::testing::upload(mem, b, "buffer"));
    args.push_back(ArgValue::pointer(addresses.back()));
  }
  LaunchOptions o;
  o.block = {static_cast<uint32_t>(kItems), 1, 1};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  run_kernel(code, kernel, mem, o);
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i] = weft::testing::download<uint8_t>(mem, addresses[i], buffers[i].size());
  return buffers;
}

// The instructions of one kernel as weft lists them: from its name's line to the next name's
// (a line ending in ':' that is not an instruction).
std::string kernel_listing(const CodeObject& code, const std::string& kernel) {
  std::ostringstream all;
  write_listing(code, all);
  std::istringstream lines(all.str());
  std::string line, listing;
  bool inside = false;
  while (std::getline(lines, line)) {
    const bool name = !line.empty() && line.back() == ':' && line.find(": ") == std::string::npos;
    if (name) inside = line == kernel + ":";
    else if (inside) listing += line + "\n";
  }
  return listing;
}

// The kernel must contain each instruction the test is about, or it would pass without them.
void require_instructions(const CodeObject& code, const std::string& kernel, std::initializer_list<const char*> mnemonics) {
  const std::string listing = kernel_listing(code, kernel);
  for (const char* m : mnemonics) REQUIRE_MESSAGE(listing.find(m) != std::string::npos, kernel << " lacks " << m);
}

// Random values of magnitudes in [2^(min_exp-1), 2^max_exp), each exponent as likely, random
// signs, about one in six replaced by a special value.
template <typename T>
std::vector<T> draw(std::mt19937& rng, size_t n, int min_exp, int max_exp) {
  using L = std::numeric_limits<T>;
  const T specials[] = {T(0), T(-0.0), L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
                        -L::min(), T(1), T(-1), std::ldexp(T(1), max_exp - 1)};
  std::uniform_int_distribution<int> exp(min_exp, max_exp), pick(0, 5), special(0, static_cast<int>(std::size(specials)) - 1);
  std::uniform_real_distribution<T> mant(T(0.5), T(1));
  std::vector<T> v(n);
  for (T& x : v) {
    x = pick(rng) == 0 ? specials[special(rng)] : std::ldexp(mant(rng), exp(rng));
    if (pick(rng) < 3) x = -x;
  }
  return v;
}

// Bit-equal, or both NaN.
template <typename T>
bool same(T got, T want) {
  return (std::isnan(got) && std::isnan(want)) || std::memcmp(&got, &want, sizeof(T)) == 0;
}

template <typename T>
void check_division(const CodeObject& code, const char* kernel, std::mt19937& rng, int min_exp, int max_exp) {
  const auto a = draw<T>(rng, kItems, min_exp, max_exp), b = draw<T>(rng, kItems, min_exp, max_exp);
  const auto out = values_of<T>(run(code, kernel, {bytes_of(a), bytes_of(b), poisoned<T>(kItems)})[2]);
  for (size_t i = 0; i < kItems; ++i)
    REQUIRE_MESSAGE(same(out[i], a[i] / b[i]), kernel << " " << a[i] << " / " << b[i] << ": got " << out[i]);
}

}  // namespace

TEST_CASE("IEEE f32 and f64 division on both targets") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    require_instructions(code, "div_f32", {"v_div_scale_f32", "v_rcp_f32", "v_div_fmas_f32", "v_div_fixup_f32"});
    require_instructions(code, "div_f64", {"v_div_scale_f64", "v_rcp_f64", "v_div_fmas_f64", "v_div_fixup_f64"});
    for (int round = 0; round < 8; ++round) {
      check_division<float>(code, "div_f32", rng, -149, 128);
      check_division<double>(code, "div_f64", rng, -1074, 1024);
    }
  }
}

TEST_CASE("f64 square root on both targets (v_rsq_f64, v_ldexp_f64, v_cmp_class_f64)") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    require_instructions(code, "sqrt_f64", {"v_rsq_f64", "v_ldexp_f64", "v_cmp_class_f64"});
    for (int round = 0; round < 4; ++round) {
      const auto a = draw<double>(rng, kItems, -1074, 1024);
      const auto out = values_of<double>(run(code, "sqrt_f64", {bytes_of(a), poisoned<double>(kItems)})[1]);
      for (size_t i = 0; i < kItems; ++i) REQUIRE_MESSAGE(same(out[i], std::sqrt(a[i])), "sqrt " << a[i] << ": got " << out[i]);
    }
  }
}

namespace {

// A NaN's quiet bit is its fraction's top bit; `fraction_bits` is the format's fraction width.
bool signaling(uint64_t bits, int fraction_bits) { return !((bits >> (fraction_bits - 1)) & 1); }

// The bit of the v_cmp_class mask that a value selects (0 signaling NaN, 1 quiet NaN, 2 -inf,
// 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf), from the host's view of
// the value as a double and whether its format holds it as a denormal.
int host_class(double x, bool denormal, bool signaling_nan) {
  if (std::isnan(x)) return signaling_nan ? 0 : 1;
  const bool negative = std::signbit(x);
  if (std::isinf(x)) return negative ? 2 : 9;
  if (x == 0) return negative ? 5 : 6;
  if (denormal) return negative ? 4 : 7;
  return negative ? 3 : 8;
}

// Puts a signaling NaN (random payload) in about one in eight places: loads keep it signaling.
template <typename T, typename Bits>
void add_signaling_nans(std::mt19937& rng, std::vector<T>& v, Bits exponent_mask, int fraction_bits) {
  std::uniform_int_distribution<uint64_t> payload(1, (uint64_t{1} << (fraction_bits - 1)) - 1);
  std::uniform_int_distribution<int> pick(0, 7);
  for (T& x : v)
    if (pick(rng) == 0) x = std::bit_cast<T>(static_cast<Bits>(exponent_mask | payload(rng) | (pick(rng) < 4 ? 0 : ~(~Bits{0} >> 1))));
}

template <typename T, typename Bits>
int class_of(T x, int fraction_bits, double least_normal) {
  const double d = static_cast<double>(x);
  const bool denormal = d != 0 && std::fabs(d) < least_normal;
  return host_class(d, denormal, signaling(std::bit_cast<Bits>(x), fraction_bits));
}

}  // namespace

TEST_CASE("v_cmp_class on f32, f64 and f16 values with random masks on both targets") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    require_instructions(code, "classes", {"v_cmp_class_f32", "v_cmp_class_f64", "v_cmp_class_f16"});
    for (int round = 0; round < 4; ++round) {
      auto a32 = draw<float>(rng, kItems, -149, 128);
      auto a64 = draw<double>(rng, kItems, -1074, 1024);
      std::vector<_Float16> a16;
      for (float x : draw<float>(rng, kItems, -24, 16)) a16.push_back(static_cast<_Float16>(x));
      add_signaling_nans(rng, a32, uint32_t{0x7f800000}, 23);
      add_signaling_nans(rng, a64, uint64_t{0x7ff0000000000000}, 52);
      add_signaling_nans(rng, a16, uint16_t{0x7c00}, 10);
      std::vector<uint32_t> mask(kItems);
      for (uint32_t& m : mask) m = static_cast<uint32_t>(rng());
      const auto out = values_of<uint32_t>(run(code, "classes", {bytes_of(a32), bytes_of(a64), bytes_of(a16), bytes_of(mask),
                                                                  poisoned<uint32_t>(3 * kItems)})[4]);
      for (size_t i = 0; i < kItems; ++i) {
        const int want[3] = {class_of<float, uint32_t>(a32[i], 23, 0x1p-126), class_of<double, uint64_t>(a64[i], 52, 0x1p-1022),
                             class_of<_Float16, uint16_t>(a16[i], 10, 0x1p-14)};
        for (int k = 0; k < 3; ++k)
          REQUIRE_MESSAGE(out[3 * i + k] == ((mask[i] >> want[k]) & 1), "item " << i << " format " << k << " class " << want[k]);
      }
    }
  }
}

namespace {

// v_med3_f32 by the CDNA3 ISA: with a NaN source, the least of the others; else the median.
float host_med3(float a, float b, float c) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(c)) return std::fmin(std::fmin(a, b), c);
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}

}  // namespace

TEST_CASE("v_med3_f32 (llvm.amdgcn.fmed3) and integer clamps to v_med3_i32 / v_med3_u32 on both targets") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    require_instructions(code, "med3", {"v_med3_f32", "v_med3_i32", "v_med3_u32"});
    for (int round = 0; round < 4; ++round) {
      const auto a = draw<float>(rng, kItems, -149, 128), b = draw<float>(rng, kItems, -149, 128), c = draw<float>(rng, kItems, -149, 128);
      const auto out = values_of<uint32_t>(run(code, "med3", {bytes_of(a), bytes_of(b), bytes_of(c), poisoned<uint32_t>(3 * kItems)})[3]);
      for (size_t i = 0; i < kItems; ++i) {
        const float want = host_med3(a[i], b[i], c[i]), got = std::bit_cast<float>(out[3 * i]);
        CHECK_MESSAGE((got == want || (std::isnan(got) && std::isnan(want))), a[i] << " " << b[i] << " " << c[i] << ": got " << got);
        const int32_t ia = std::bit_cast<int32_t>(a[i]);
        const uint32_t ub = std::bit_cast<uint32_t>(b[i]);
        CHECK(std::bit_cast<int32_t>(out[3 * i + 1]) == std::clamp(ia, -1000, 1000000));
        CHECK(out[3 * i + 2] == std::clamp(ub, 1000u, 3000000000u));
      }
    }
  }
}

namespace {

// frexp's mantissa and exponent against the host's; for infinities and NaN the ISA passes the
// value through as the mantissa and gives exponent 0.
template <typename T>
void check_frexp(const CodeObject& code, const char* kernel, const std::vector<T>& a) {
  const auto out = run(code, kernel, {bytes_of(a), poisoned<T>(kItems), poisoned<int32_t>(kItems)});
  const auto mant = values_of<T>(out[1]);
  const auto exp = values_of<int32_t>(out[2]);
  for (size_t i = 0; i < kItems; ++i) {
    int want_exp = 0;
    const T want = std::isfinite(a[i]) ? std::frexp(a[i], &want_exp) : a[i];
    REQUIRE_MESSAGE(same(mant[i], want), kernel << " " << a[i] << ": mantissa " << mant[i]);
    REQUIRE_MESSAGE(exp[i] == want_exp, kernel << " " << a[i] << ": exponent " << exp[i]);
  }
}

}  // namespace

TEST_CASE("frexp on f32 and f64 on both targets") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    require_instructions(code, "frexp_f32", {"v_frexp_mant_f32", "v_frexp_exp_i32_f32"});
    require_instructions(code, "frexp_f64", {"v_frexp_mant_f64", "v_frexp_exp_i32_f64"});
    for (int round = 0; round < 4; ++round) {
      check_frexp(code, "frexp_f32", draw<float>(rng, kItems, -149, 128));
      check_frexp(code, "frexp_f64", draw<double>(rng, kItems, -1074, 1024));
    }
  }
}

TEST_CASE("f64 floor, ceil, trunc, rint and fract on both targets") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    require_instructions(code, "round_f64", {"v_floor_f64", "v_ceil_f64", "v_trunc_f64", "v_rndne_f64", "v_fract_f64"});
    for (int round = 0; round < 4; ++round) {
      // Magnitudes around 2^-60 .. 2^60 put both integers and fractions in play.
      const auto a = draw<double>(rng, kItems, -60, 60);
      const auto out = values_of<double>(run(code, "round_f64", {bytes_of(a), poisoned<double>(5 * kItems)})[1]);
      for (size_t i = 0; i < kItems; ++i) {
        // OpenCL's fract: the largest double below 1 where x - floor(x) rounds to 1.
        const double fraction = a[i] - std::floor(a[i]);
        const double fract = std::isnan(fraction) ? fraction : std::fmin(fraction, 0x1.fffffffffffffp-1);
        const double want[5] = {std::floor(a[i]), std::ceil(a[i]), std::trunc(a[i]), std::nearbyint(a[i]), fract};
        for (int k = 0; k < 5; ++k) REQUIRE_MESSAGE(same(out[5 * i + k], want[k]), a[i] << " op " << k << ": got " << out[5 * i + k]);
      }
    }
  }
}

namespace {

// fdiv half as llc-22 lowers it: f32 reciprocal iterations (v_fma_mix_f32), then v_div_fixup_f16.
const char* kDivF16 = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @div_f16(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr half, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr half, ptr addrspace(1) %b, i32 %i
  %va = load half, ptr addrspace(1) %pa
  %vb = load half, ptr addrspace(1) %pb
  %q = fdiv half %va, %vb
  %po = getelementptr half, ptr addrspace(1) %out, i32 %i
  store half %q, ptr addrspace(1) %po
  ret void
}
)";

}  // namespace

TEST_CASE("f16 division (v_div_fixup_f16) on both targets, special values included") {
  std::mt19937_64 rng = weft::testing::seeded_rng("emulator f16 division test");
  // Zeros, infinities, NaNs (quiet and signalling), the largest and smallest values, denormals.
  const uint16_t special[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd00, 0x7bff, 0xfbff, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00};
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kDivF16, arch_name(arch));
    std::ostringstream listing;
    write_listing(CodeObject::load(bytes), listing);
    REQUIRE(listing.str().find("v_div_fixup_f16") != std::string::npos);
    const CodeObject code = CodeObject::load(bytes);
    std::vector<uint16_t> a(kItems), b(kItems);
    for (size_t i = 0; i < kItems; ++i) {
      a[i] = i < 196 ? special[i % 14] : static_cast<uint16_t>(rng());
      b[i] = i < 196 ? special[(i / 14) % 14] : static_cast<uint16_t>(rng());
    }
    GlobalMemory mem;
    const uint64_t pa = weft::testing::upload(mem, a, "a"), pb = weft::testing::upload(mem, b, "b");
    const uint64_t po = weft::testing::upload(mem, std::vector<uint8_t>(kItems * 2, 0xCD), "out");
    LaunchOptions o;
    o.block = {static_cast<uint32_t>(kItems), 1, 1};
    const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(po)};
    o.kernarg = pack_kernel_args(code.kernel("div_f16"), args);
    run_kernel(code, "div_f16", mem, o);
    const auto out = weft::testing::download<uint16_t>(mem, po, kItems);
    for (size_t i = 0; i < kItems; ++i) {
      const double x = double(std::bit_cast<_Float16>(a[i])), y = double(std::bit_cast<_Float16>(b[i]));
      const _Float16 want = static_cast<_Float16>(x / y);  // one rounding of the exact quotient's double
      const _Float16 got = std::bit_cast<_Float16>(out[i]);
      if (std::isnan(double(want)))
        CHECK_MESSAGE(std::isnan(double(got)), "a " << a[i] << ", b " << b[i] << ": got " << out[i]);
      else
        CHECK_MESSAGE(out[i] == std::bit_cast<uint16_t>(want), "a " << a[i] << ", b " << b[i] << ": got " << out[i] << ", want "
                                                                << std::bit_cast<uint16_t>(want));
    }
  }
}
