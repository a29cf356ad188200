// The MODE register as compiled kernels use it: s_getreg reads it (llvm.amdgcn.s.getreg,
// llvm.get.rounding), s_setreg writes it (llvm.set.rounding), a wave starts with the kernel
// descriptor's float modes, and the VALU executes them: directed rounding (constrained
// intrinsics under llvm.set.rounding) and flushed denormals ("denormal-fp-math-f32" kernels, whose
// fdiv toggles the mode with s_setreg) against host references computed exactly and rounded or
// flushed by hand. What the emulator does not execute in such a mode (f16 with flushed
// denormals, MFMA) stops the run with an error naming the instruction and the mode.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>
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

// out = {MODE, get.rounding(), get.rounding() after set.rounding(%r)}.
const char* kModes = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.get.rounding()
declare void @llvm.set.rounding(i32)
declare i32 @llvm.amdgcn.s.getreg(i32)
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
)";

// Lane i, after set.rounding(%r): out[6i..6i+5] = {a+b, a*b, fma(a, b, b), sitofp(n), fptrunc(d0),
// roundeven(a)} in f32 and outd[2i..2i+1] = {d0+d1, d0*d1} in f64, all with dynamic rounding
// (roundeven, v_rndne_f32, rounds ties to even in every mode).
const char* kRounded = R"(
target triple = "amdgcn-amd-amdhsa"
declare void @llvm.set.rounding(i32)
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.experimental.constrained.fadd.f32(float, float, metadata, metadata)
declare float @llvm.experimental.constrained.fmul.f32(float, float, metadata, metadata)
declare float @llvm.experimental.constrained.fma.f32(float, float, float, metadata, metadata)
declare float @llvm.experimental.constrained.sitofp.f32.i32(i32, metadata, metadata)
declare float @llvm.experimental.constrained.fptrunc.f32.f64(double, metadata, metadata)
declare double @llvm.experimental.constrained.fadd.f64(double, double, metadata, metadata)
declare double @llvm.experimental.constrained.fmul.f64(double, double, metadata, metadata)
declare float @llvm.experimental.constrained.roundeven.f32(float, metadata)
define amdgpu_kernel void @rounded(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %n, ptr addrspace(1) %d,
                                   ptr addrspace(1) %out, ptr addrspace(1) %outd, i32 %r) #0 {
  call void @llvm.set.rounding(i32 %r) #0
  %i = call i32 @llvm.amdgcn.workitem.id.x() #0
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %va = load float, ptr addrspace(1) %pa
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %vb = load float, ptr addrspace(1) %pb
  %pn = getelementptr i32, ptr addrspace(1) %n, i32 %i
  %vn = load i32, ptr addrspace(1) %pn
  %i2 = shl i32 %i, 1
  %pd0 = getelementptr double, ptr addrspace(1) %d, i32 %i2
  %vd0 = load double, ptr addrspace(1) %pd0
  %pd1 = getelementptr double, ptr addrspace(1) %pd0, i32 1
  %vd1 = load double, ptr addrspace(1) %pd1
  %add = call float @llvm.experimental.constrained.fadd.f32(float %va, float %vb, metadata !"round.dynamic", metadata !"fpexcept.ignore") #0
  %mul = call float @llvm.experimental.constrained.fmul.f32(float %va, float %vb, metadata !"round.dynamic", metadata !"fpexcept.ignore") #0
  %fma = call float @llvm.experimental.constrained.fma.f32(float %va, float %vb, float %vb, metadata !"round.dynamic", metadata !"fpexcept.ignore") #0
  %cvt = call float @llvm.experimental.constrained.sitofp.f32.i32(i32 %vn, metadata !"round.dynamic", metadata !"fpexcept.ignore") #0
  %trn = call float @llvm.experimental.constrained.fptrunc.f32.f64(double %vd0, metadata !"round.dynamic", metadata !"fpexcept.ignore") #0
  %dad = call double @llvm.experimental.constrained.fadd.f64(double %vd0, double %vd1, metadata !"round.dynamic", metadata !"fpexcept.ignore") #0
  %dmu = call double @llvm.experimental.constrained.fmul.f64(double %vd0, double %vd1, metadata !"round.dynamic", metadata !"fpexcept.ignore") #0
  %rne = call float @llvm.experimental.constrained.roundeven.f32(float %va, metadata !"fpexcept.ignore") #0
  %i5 = mul i32 %i, 6
  %o0 = getelementptr float, ptr addrspace(1) %out, i32 %i5
  store float %add, ptr addrspace(1) %o0
  %o1 = getelementptr float, ptr addrspace(1) %o0, i32 1
  store float %mul, ptr addrspace(1) %o1
  %o2 = getelementptr float, ptr addrspace(1) %o0, i32 2
  store float %fma, ptr addrspace(1) %o2
  %o3 = getelementptr float, ptr addrspace(1) %o0, i32 3
  store float %cvt, ptr addrspace(1) %o3
  %o4 = getelementptr float, ptr addrspace(1) %o0, i32 4
  store float %trn, ptr addrspace(1) %o4
  %o5 = getelementptr float, ptr addrspace(1) %o0, i32 5
  store float %rne, ptr addrspace(1) %o5
  %q0 = getelementptr double, ptr addrspace(1) %outd, i32 %i2
  store double %dad, ptr addrspace(1) %q0
  %q1 = getelementptr double, ptr addrspace(1) %q0, i32 1
  store double %dmu, ptr addrspace(1) %q1
  ret void
}
attributes #0 = { strictfp }
)";

// Lane i of a kernel whose f32 denormal mode is the attribute's: out[11i..11i+10] = {a*b, a+b,
// fma(a, b, a), a/b or a-b, a < b ? 1 : 0, fptrunc(d0), ldexp(a, 20), canonicalize(a),
// frexp(a)'s mantissa and exponent (an int32), log2|a|} and outd[i] = d0*d1 (f64 keeps its
// denormals).
// canonicalize and frexp (v_max_f32 of a value with itself, v_frexp_mant/exp_f32) return or read
// the bits themselves, past the host's DAZ and FTZ. fdiv keeps denormals for its refinement steps and then writes MODE's f32 field back
// as 0 (flush both) whatever the kernel started with, so only a kernel that flushes both has one.
std::string flushing_kernel(const std::string& name, const std::string& denormal_attribute, bool divides) {
  return R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.fma.f32(float, float, float)
declare float @llvm.ldexp.f32.i32(float, i32)
declare float @llvm.canonicalize.f32(float)
declare { float, i32 } @llvm.frexp.f32.i32(float)
declare float @llvm.log2.f32(float)
declare float @llvm.fabs.f32(float)
define amdgpu_kernel void @)" + name + R"((ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %d,
                                   ptr addrspace(1) %out, ptr addrspace(1) %outd) #0 {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %va = load float, ptr addrspace(1) %pa
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %vb = load float, ptr addrspace(1) %pb
  %i2 = shl i32 %i, 1
  %pd0 = getelementptr double, ptr addrspace(1) %d, i32 %i2
  %vd0 = load double, ptr addrspace(1) %pd0
  %pd1 = getelementptr double, ptr addrspace(1) %pd0, i32 1
  %vd1 = load double, ptr addrspace(1) %pd1
  %mul = fmul float %va, %vb
  %add = fadd float %va, %vb
  %fma = call float @llvm.fma.f32(float %va, float %vb, float %va)
  %div = )" + (divides ? "fdiv" : "fsub") + R"( float %va, %vb
  %lt = fcmp olt float %va, %vb
  %ltf = select i1 %lt, float 1.0, float 0.0
  %trn = fptrunc double %vd0 to float
  %dmu = fmul double %vd0, %vd1
  %ldx = call float @llvm.ldexp.f32.i32(float %va, i32 20)
  %can = call float @llvm.canonicalize.f32(float %va)
  %fr = call { float, i32 } @llvm.frexp.f32.i32(float %va)
  %mant = extractvalue { float, i32 } %fr, 0
  %expo = extractvalue { float, i32 } %fr, 1
  %mag = call float @llvm.fabs.f32(float %va)
  %lg = call float @llvm.log2.f32(float %mag)
  %i6 = mul i32 %i, 11
  %o0 = getelementptr float, ptr addrspace(1) %out, i32 %i6
  store float %mul, ptr addrspace(1) %o0
  %o1 = getelementptr float, ptr addrspace(1) %o0, i32 1
  store float %add, ptr addrspace(1) %o1
  %o2 = getelementptr float, ptr addrspace(1) %o0, i32 2
  store float %fma, ptr addrspace(1) %o2
  %o3 = getelementptr float, ptr addrspace(1) %o0, i32 3
  store float %div, ptr addrspace(1) %o3
  %o4 = getelementptr float, ptr addrspace(1) %o0, i32 4
  store float %ltf, ptr addrspace(1) %o4
  %o5 = getelementptr float, ptr addrspace(1) %o0, i32 5
  store float %trn, ptr addrspace(1) %o5
  %o6 = getelementptr float, ptr addrspace(1) %o0, i32 6
  store float %ldx, ptr addrspace(1) %o6
  %o7 = getelementptr float, ptr addrspace(1) %o0, i32 7
  store float %can, ptr addrspace(1) %o7
  %o8 = getelementptr float, ptr addrspace(1) %o0, i32 8
  store float %mant, ptr addrspace(1) %o8
  %o9 = getelementptr float, ptr addrspace(1) %o0, i32 9
  store i32 %expo, ptr addrspace(1) %o9
  %o10 = getelementptr float, ptr addrspace(1) %o0, i32 10
  store float %lg, ptr addrspace(1) %o10
  %q = getelementptr double, ptr addrspace(1) %outd, i32 %i
  store double %dmu, ptr addrspace(1) %q
  ret void
}
attributes #0 = { "denormal-fp-math-f32"=")" + denormal_attribute + R"(" }
)";
}

// What the emulator does not execute in a flushing mode: f16 arithmetic when f16 denormals are
// flushed ("denormal-fp-math" covers f16 and f64), and an MFMA in any mode but the default.
const char* kRefused = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, i32, i32, i32)
define amdgpu_kernel void @half_flushed(ptr addrspace(1) %a, ptr addrspace(1) %out) #0 {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr half, ptr addrspace(1) %a, i32 %i
  %va = load half, ptr addrspace(1) %pa
  %r = fmul half %va, %va
  %po = getelementptr half, ptr addrspace(1) %out, i32 %i
  store half %r, ptr addrspace(1) %po
  ret void
}
define amdgpu_kernel void @mfma_flushed(ptr addrspace(1) %a, ptr addrspace(1) %out) #1 {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <4 x half>, ptr addrspace(1) %a, i32 %i
  %va = load <4 x half>, ptr addrspace(1) %pa
  %r = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %va, <4 x half> %va, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %po = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %i
  store <4 x float> %r, ptr addrspace(1) %po
  ret void
}
attributes #0 = { "denormal-fp-math"="preserve-sign,preserve-sign" }
attributes #1 = { "denormal-fp-math-f32"="preserve-sign,preserve-sign" }
)";

std::string run_modes(const CodeObject& code, GlobalMemory& mem, uint64_t out, uint32_t rounding) {
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(out), ArgValue::u32(rounding)};
  o.kernarg = pack_kernel_args(code.kernel("modes"), args);
  return weft::testing::error_of([&] { run_kernel(code, "modes", mem, o); });
}

void launch(const CodeObject& code, const std::string& kernel, GlobalMemory& mem, std::span<const ArgValue> args, uint32_t lanes) {
  LaunchOptions o;
  o.block = {lanes, 1, 1};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  run_kernel(code, kernel, mem, o);
}

// ---- host references: exact values rounded or flushed by hand ----

using Exact = __float128;  // holds the sums and products below exactly (or to 113 bits, far past a tie)

// x rounded to T in one of MODE's rounding encodings (0 nearest even, 1 toward +infinity, 2
// toward -infinity, 3 toward zero): the nearest T, stepped once where it lies on the wrong side.
template <class T>
T rounded(Exact x, uint32_t rounding) {
  T r = static_cast<T>(x);  // to nearest even
  if (std::isinf(r) || std::isnan(r) || static_cast<Exact>(r) == x) return r;
  const bool above = static_cast<Exact>(r) > x;
  const T inf = std::numeric_limits<T>::infinity();
  if (rounding == 1 && !above) r = std::nextafter(r, inf);
  if (rounding == 2 && above) r = std::nextafter(r, -inf);
  if (rounding == 3 && (above == (x > 0))) r = std::nextafter(r, x > 0 ? -inf : inf);
  return r;
}

template <class T>
T flushed(T x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(T{0}, x) : x; }

// Random values of random sign with exponents in [lo, hi): each exponent as likely.
float random_float(std::mt19937_64& rng, int lo, int hi) {
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(lo, hi - 1), sign(0, 1);
  const float v = std::ldexp(mantissa(rng), exponent(rng));
  return sign(rng) ? -v : v;
}
double random_double(std::mt19937_64& rng, int lo, int hi) {
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(lo, hi - 1), sign(0, 1);
  const double v = std::ldexp(mantissa(rng), exponent(rng));
  return sign(rng) ? -v : v;
}

bool same_bits(float x, float y) { return std::bit_cast<uint32_t>(x) == std::bit_cast<uint32_t>(y); }
bool same_bits(double x, double y) { return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y); }

}  // namespace

TEST_CASE("s_getreg/s_setreg on HW_REG_MODE: the descriptor's modes and get/set.rounding in every rounding mode") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kModes, arch_name(arch));
    std::ostringstream listing;
    write_listing(CodeObject::load(bytes), listing);
    for (const char* form : {"s_getreg_b32", "s_setreg_b32"})
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
    // FLT_ROUNDS: 0 toward zero, 1 to nearest, 2 toward +infinity, 3 toward -infinity.
    for (uint32_t flt_rounds : {1u, 0u, 2u, 3u}) {
      INFO("set.rounding(" << flt_rounds << ")");
      REQUIRE(run_modes(code, mem, out, flt_rounds) == "");
      const auto got = download<uint32_t>(mem, out, 3);
      CHECK((got[0] & 0x3FF) == want_mode);
      CHECK(got[1] == 1);
      CHECK(got[2] == flt_rounds);
    }
  }
}

TEST_CASE("directed rounding under llvm.set.rounding: f32 and f64 add, mul, fma and conversions against exact references") {
  std::mt19937_64 rng = weft::testing::seeded_rng("emulator rounding-mode test");
  constexpr uint32_t kLanes = 64;
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kRounded, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    // FLT_ROUNDS and the MODE encoding it sets.
    for (const auto& [flt_rounds, rounding] : {std::pair{1u, 0u}, {2u, 1u}, {3u, 2u}, {0u, 3u}}) {
      INFO("set.rounding(" << flt_rounds << ")");
      std::vector<float> a(kLanes), b(kLanes);
      std::vector<int32_t> n(kLanes);
      std::vector<double> d(2 * kLanes);
      for (uint32_t l = 0; l < kLanes; ++l) {
        a[l] = random_float(rng, -8, 8);
        b[l] = random_float(rng, -8, 8);
        n[l] = static_cast<int32_t>(rng());  // most need rounding to 24 bits
        d[2 * l] = random_double(rng, -30, 30);
        d[2 * l + 1] = random_double(rng, -30, 30);
      }
      GlobalMemory mem;
      const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b"), pn = upload(mem, n, "n"), pd = upload(mem, d, "d");
      const uint64_t out = upload(mem, std::vector<float>(6 * kLanes, std::nanf("")), "out");
      const uint64_t outd = upload(mem, std::vector<double>(2 * kLanes, std::nan("")), "outd");
      const ArgValue args[] = {ArgValue::pointer(pa),  ArgValue::pointer(pb),   ArgValue::pointer(pn), ArgValue::pointer(pd),
                               ArgValue::pointer(out), ArgValue::pointer(outd), ArgValue::u32(flt_rounds)};
      launch(code, "rounded", mem, args, kLanes);
      const auto got = download<float>(mem, out, 6 * kLanes);
      const auto gotd = download<double>(mem, outd, 2 * kLanes);
      int wrong = 0;
      for (uint32_t l = 0; l < kLanes; ++l) {
        const Exact x = a[l], y = b[l], d0 = d[2 * l], d1 = d[2 * l + 1];
        const float want[6] = {rounded<float>(x + y, rounding), rounded<float>(x * y, rounding), rounded<float>(x * y + y, rounding),
                               rounded<float>(static_cast<Exact>(n[l]), rounding), rounded<float>(d0, rounding), __builtin_roundevenf(a[l])};
        for (int k = 0; k < 6; ++k)
          if (!same_bits(got[6 * l + k], want[k]) && wrong++ < 8)
            FAIL_CHECK("lane " << l << " f32 op " << k << ": got " << got[6 * l + k] << ", want " << want[k]);
        const double wantd[2] = {rounded<double>(d0 + d1, rounding), rounded<double>(d0 * d1, rounding)};
        for (int k = 0; k < 2; ++k)
          if (!same_bits(gotd[2 * l + k], wantd[k]) && wrong++ < 8)
            FAIL_CHECK("lane " << l << " f64 op " << k << ": got " << gotd[2 * l + k] << ", want " << wantd[k]);
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("f32 denormals flushed on input, output or both, f64's kept: products, sums, fma, fdiv, compares and conversions") {
  std::mt19937_64 rng = weft::testing::seeded_rng("emulator denormal-mode test");
  constexpr uint32_t kLanes = 256;
  // The attribute ("output,input"), and whether it flushes f32 inputs and outputs.
  struct Mode {
    const char* attribute;
    bool flush_in, flush_out;
  };
  for (const Mode m : {Mode{"preserve-sign,preserve-sign", true, true}, Mode{"preserve-sign,ieee", false, true},
                       Mode{"ieee,preserve-sign", true, false}, Mode{"ieee,ieee", false, false}}) {
    INFO(std::string(m.attribute));
    for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
      INFO(std::string(arch_name(arch)));
      const auto bytes = weft::testing::compile_ll(flushing_kernel("flushing", m.attribute, m.flush_in && m.flush_out), arch_name(arch));
      weft::testing::check_listing_matches_objdump(bytes, arch);
      const CodeObject code = CodeObject::load(bytes);
      if (m.flush_in && m.flush_out) {  // fdiv keeps denormals for its refinement steps: MODE written mid-kernel
        std::ostringstream listing;
        write_listing(code, listing);
        REQUIRE(listing.str().find("s_setreg_imm32_b32") != std::string::npos);
      }
      const uint32_t denorm = (code.kernel("flushing").descriptor.rsrc1 >> 16) & 3;  // FLOAT_DENORM_MODE_32
      REQUIRE(denorm == (m.flush_in ? 0u : 1u) + (m.flush_out ? 0u : 2u));  // 0 both, 1 outputs, 2 inputs, 3 neither
      // Denormals, tiny normals (their products and quotients underflow), ordinary values.
      std::vector<float> a(kLanes), b(kLanes);
      std::vector<double> d(2 * kLanes);
      const auto draw = [&] {
        switch (rng() % 3) {
          case 0: return random_float(rng, -149, -126);
          case 1: return random_float(rng, -126, -100);
          default: return random_float(rng, -30, 30);
        }
      };
      for (uint32_t l = 0; l < kLanes; ++l) {
        a[l] = draw();
        b[l] = draw();
        d[2 * l] = rng() % 2 ? random_double(rng, -160, -120) : random_double(rng, -1074, -1000);  // f32 denormals; f64 denormal products
        d[2 * l + 1] = random_double(rng, -40, 0);
      }
      GlobalMemory mem;
      const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b"), pd = upload(mem, d, "d");
      const uint64_t out = upload(mem, std::vector<float>(11 * kLanes, std::nanf("")), "out");
      const uint64_t outd = upload(mem, std::vector<double>(kLanes, std::nan("")), "outd");
      const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(pd), ArgValue::pointer(out),
                               ArgValue::pointer(outd)};
      launch(code, "flushing", mem, args, kLanes);
      const auto got = download<float>(mem, out, 11 * kLanes);
      const auto gotd = download<double>(mem, outd, kLanes);
      const auto in = [&](float v) { return m.flush_in ? flushed(v) : v; };
      const auto result = [&](Exact v) { return m.flush_out ? flushed(static_cast<float>(v)) : static_cast<float>(v); };
      int wrong = 0;
      for (uint32_t l = 0; l < kLanes; ++l) {
        const Exact x = in(a[l]), y = in(b[l]);
        const Exact quotient_or_difference = m.flush_in && m.flush_out ? x / y : x - y;
        int exponent = 0;
        const float mantissa = std::frexp(in(a[l]), &exponent);
        const float want[10] = {result(x * y), result(x + y), result(x * y + x), result(quotient_or_difference), x < y ? 1.0f : 0.0f,
                                result(static_cast<Exact>(d[2 * l])), result(x * 0x1p20), result(x), result(mantissa),
                                std::bit_cast<float>(exponent)};
        for (int k = 0; k < 10; ++k)
          if (!same_bits(got[11 * l + k], want[k]) && wrong++ < 8)
            FAIL_CHECK("lane " << l << " op " << k << " of a = " << a[l] << ", b = " << b[l] << ": got " << got[11 * l + k] << ", want "
                               << want[k]);
        // log2: -infinity exactly for a flushed input, else within v_log_f32's 1 ulp (and the
        // expansion LLVM wraps around it where denormal inputs are kept).
        const double log_want = std::log2(std::fabs(static_cast<double>(in(a[l])))), log_got = got[11 * l + 10];
        const bool log_ok = std::isinf(log_want) ? log_got == log_want : std::fabs(log_got - log_want) <= std::ldexp(std::fabs(log_want), -20) + 1e-6;
        if (!log_ok && wrong++ < 8) FAIL_CHECK("lane " << l << " log2|a| of a = " << a[l] << ": got " << log_got << ", want " << log_want);
        const double wantd = static_cast<double>(static_cast<Exact>(d[2 * l]) * d[2 * l + 1]);
        if (!same_bits(gotd[l], wantd) && wrong++ < 8) FAIL_CHECK("lane " << l << " f64 product: got " << gotd[l] << ", want " << wantd);
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("a flushing mode the emulator does not execute stops the run naming the instruction and the mode") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kRefused, arch_name(arch)));
    GlobalMemory mem;
    const uint64_t a = upload(mem, std::vector<uint16_t>(256, 0x3C00), "a");
    const uint64_t out = upload(mem, std::vector<float>(256, 0.0f), "out");
    const ArgValue args[] = {ArgValue::pointer(a), ArgValue::pointer(out)};
    const std::string half = weft::testing::error_of([&] { launch(code, "half_flushed", mem, args, 64); });
    CHECK_MESSAGE(half.find("v_mul_f16") != std::string::npos, half);
    CHECK_MESSAGE(half.find("f16/f64 denormals flushed on input and output") != std::string::npos, half);
    CHECK_MESSAGE(half.find("flushing f16 denormals is not executed") != std::string::npos, half);
    const std::string mfma = weft::testing::error_of([&] { launch(code, "mfma_flushed", mem, args, 64); });
    CHECK_MESSAGE(mfma.find("v_mfma_f32_16x16x16") != std::string::npos, mfma);
    CHECK_MESSAGE(mfma.find("f32 denormals flushed on input and output") != std::string::npos, mfma);
    CHECK_MESSAGE(mfma.find("executes it in no other mode") != std::string::npos, mfma);
  }
}
