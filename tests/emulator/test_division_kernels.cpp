// Float code as LLVM 22 lowers it without fast-math, compiled by llc-22 and run on both targets:
// IEEE f32 and f64 division (v_div_scale, v_rcp, v_div_fmas, v_div_fixup), f64 square root
// (v_rsq_f64, v_ldexp_f64, v_cmp_class_f64), class tests, med3, frexp and f64 rounding. Every run
// draws fresh inputs mixed with special values, poisons the outputs and checks each lane against
// the host.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "kernel_io.h"
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
