// gfx950's v_mfma_f32_16x16x128_f8f6f4 and v_mfma_f32_32x32x64_f8f6f4 as LLVM 22 compiles them
// (llvm.amdgcn.mfma.scale.f32.*.f8f6f4 with constant zero scales, which LLVM emits as the
// unscaled instructions), run on the emulator for fp8, bf8, fp6, bf6 and fp4 operands in several
// pairings, and checked against a double-precision product of the same matrices. The test packs
// the operands by the register maps of AMD Composable Kernel's hardware-run tests
// (test/mx_mfma_op): fp8/bf8 lanes hold two runs of 16 k's, fp6/bf6/fp4 lanes 32 consecutive.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_io.h"
#include "listing_check.h"
#include "test_seed.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"
#include "weft/emulator/mfma.h"

using namespace weft::emu;

namespace {

// A format as the test knows it: element bits, exponent bits, mantissa bits, bias, and whether
// the all-ones exponent is special (E5M2: inf/NaN) or only S.1111.111 is (E4M3FN: NaN).
struct Format {
  int bits, exponent, mantissa, bias;
  const char* name;
};
const Format kFormats[] = {{8, 4, 3, 7, "fp8"}, {8, 5, 2, 15, "bf8"}, {6, 2, 3, 1, "fp6"}, {6, 3, 2, 3, "bf6"}, {4, 2, 1, 1, "fp4"}};

double value_of(const Format& f, uint32_t code) {
  const uint32_t m = code & ((1u << f.mantissa) - 1), e = (code >> f.mantissa) & ((1u << f.exponent) - 1);
  const double magnitude = e == 0 ? std::ldexp(m, 1 - f.bias - f.mantissa) : std::ldexp(m + (1u << f.mantissa), static_cast<int>(e) - f.bias - f.mantissa);
  return (code >> (f.bits - 1)) & 1 ? -magnitude : magnitude;
}

// A random code that is a finite number (no E5M2 inf/NaN, no E4M3FN NaN).
uint32_t random_code(const Format& f, std::mt19937_64& rng) {
  for (;;) {
    const uint32_t code = static_cast<uint32_t>(rng()) & ((1u << f.bits) - 1);
    const uint32_t e = (code >> f.mantissa) & ((1u << f.exponent) - 1), m = code & ((1u << f.mantissa) - 1);
    if (f.bits == 8 && f.exponent == 5 && e == 31) continue;
    if (f.bits == 8 && f.exponent == 4 && e == 15 && m == 7) continue;
    return code;
  }
}

// Which k element e of lane group g holds (Composable Kernel's register maps).
int k_of(const Format& f, int size, int group, int e) {
  const int k_size = size == 16 ? 128 : 64;
  return f.bits == 8 ? (e / 16) * (k_size / 2) + 16 * group + e % 16 : 32 * group + e;
}

// A kernel: the shape, A's and B's formats and, for the scaled form, the byte of each lane's
// scale word the kernel selects for A and B (op_sel); byte_a < 0: unscaled (constant zero
// scales, which LLVM emits as the unscaled instruction).
struct Case {
  int size, format_a, format_b;
  int byte_a = -1, byte_b = -1;
  bool scaled() const { return byte_a >= 0; }
  std::string kernel() const {
    return std::string(scaled() ? "scaled_" : "f8f6f4_") + std::to_string(size) + "_" + std::to_string(format_a) + "_" + std::to_string(format_b) +
           (scaled() ? "_" + std::to_string(byte_a) + std::to_string(byte_b) : "");
  }
};
const Case kCases[] = {{16, 0, 0}, {16, 1, 1}, {16, 0, 1}, {16, 2, 3}, {16, 3, 2}, {16, 4, 4}, {16, 0, 4}, {16, 4, 2},
                       {32, 0, 0}, {32, 2, 2}, {32, 4, 4}, {32, 1, 3}};
// v_mfma_scale_f32_*_f8f6f4 (16 bytes): each lane's A and B scales are one byte of a VGPR.
const Case kScaledCases[] = {{16, 0, 0, 1, 2}, {16, 4, 2, 3, 0}, {16, 1, 3, 0, 0}, {32, 1, 4, 0, 3}, {32, 2, 3, 2, 1}};

int registers(int format) { return kFormats[format].bits; }

// One kernel per case: lane t loads its A, B and C registers from rows t of three arrays (and,
// scaled, its scale words from rows t of two more), runs the MFMA and stores D's registers to
// row t.
std::string kernels_ir(std::span<const Case> cases) {
  std::string ir = "target triple = \"amdgcn-amd-amdhsa\"\ndeclare i32 @llvm.amdgcn.workitem.id.x()\n";
  std::set<std::string> declared;
  for (const Case& c : cases) {
    const std::string ra = std::to_string(registers(c.format_a)), rb = std::to_string(registers(c.format_b));
    const std::string shape = c.size == 16 ? "16x16x128" : "32x32x64", acc = std::to_string(c.size * c.size / 64);
    const std::string ta = "<" + ra + " x i32>", tb = "<" + rb + " x i32>", tc = "<" + acc + " x float>";
    const std::string name = "@llvm.amdgcn.mfma.scale.f32." + shape + ".f8f6f4.v" + ra + "i32.v" + rb + "i32";
    if (declared.insert(name).second) ir += "declare " + tc + " " + name + "(" + ta + ", " + tb + ", " + tc + ", i32, i32, i32, i32, i32, i32)\n";
    const std::string scale_args = c.scaled() ? ", ptr addrspace(1) %sa, ptr addrspace(1) %sb" : "";
    const std::string scale_loads = c.scaled() ? "  %psa = getelementptr i32, ptr addrspace(1) %sa, i32 %t\n  %vsa = load i32, ptr addrspace(1) %psa, align 4\n"
                                                 "  %psb = getelementptr i32, ptr addrspace(1) %sb, i32 %t\n  %vsb = load i32, ptr addrspace(1) %psb, align 4\n"
                                               : "";
    const std::string scales = c.scaled() ? "i32 " + std::to_string(c.byte_a) + ", i32 %vsa, i32 " + std::to_string(c.byte_b) + ", i32 %vsb"
                                          : "i32 0, i32 0, i32 0, i32 0";
    ir += "define amdgpu_kernel void @" + c.kernel() + "(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %d" +
          scale_args + ") {\n"
          "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n"
          "  %ia = mul i32 %t, " + ra + "\n  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %ia\n"
          "  %va = load " + ta + ", ptr addrspace(1) %pa, align 4\n"
          "  %ib = mul i32 %t, " + rb + "\n  %pb = getelementptr i32, ptr addrspace(1) %b, i32 %ib\n"
          "  %vb = load " + tb + ", ptr addrspace(1) %pb, align 4\n"
          "  %ic = mul i32 %t, " + acc + "\n  %pc = getelementptr float, ptr addrspace(1) %c, i32 %ic\n"
          "  %vc = load " + tc + ", ptr addrspace(1) %pc, align 4\n" + scale_loads +
          "  %r = call " + tc + " " + name + "(" + ta + " %va, " + tb + " %vb, " + tc + " %vc, i32 " + std::to_string(c.format_a) +
          ", i32 " + std::to_string(c.format_b) + ", " + scales + ")\n"
          "  %pd = getelementptr float, ptr addrspace(1) %d, i32 %ic\n"
          "  store " + tc + " %r, ptr addrspace(1) %pd, align 4\n  ret void\n}\n";
  }
  return ir;
}

// Lane-major registers (lane t's register r at t * count + r) holding `codes`, [outer][k], by the
// register map.
std::vector<uint32_t> pack(const std::vector<uint32_t>& codes, const Format& f, int size) {
  const int k_size = size == 16 ? 128 : 64, count = f.bits;
  std::vector<uint32_t> regs(static_cast<size_t>(64 * count), 0);
  for (int lane = 0; lane < 64; ++lane)
    for (int e = 0; e < 32; ++e) {
      const uint64_t code = codes[static_cast<size_t>((lane % size) * k_size + k_of(f, size, lane / size, e))];
      const int bit = e * f.bits;
      regs[static_cast<size_t>(lane * count + bit / 32)] |= static_cast<uint32_t>(code << (bit % 32));
      if (bit % 32 + f.bits > 32) regs[static_cast<size_t>(lane * count + bit / 32 + 1)] |= static_cast<uint32_t>(code >> (32 - bit % 32));
    }
  return regs;
}

// D[i][j] of lane `lane`'s accumulator register r (16x16: i = 4 (l / 16) + r; 32x32:
// i = 8 (r / 4) + 4 (l / 32) + r % 4; j = l % size).
std::pair<int, int> accumulator_element(int size, int lane, int r) {
  if (size == 16) return {4 * (lane / 16) + r, lane % 16};
  return {8 * (r / 4) + 4 * (lane / 32) + r % 4, lane % 32};
}


// Runs case `c` of `code` on fresh random operands (and, scaled, random scale words whose every
// byte is an E8M0 scale from 2^-7 to 2^7) and checks D against a double-precision product:
// C + the sum over k of 2^(scale exponents of its K block) * A[i][k] * B[j][k].
void run_and_check(const CodeObject& code, const Case& c, std::mt19937_64& rng) {
  CAPTURE(c.kernel());
  const Format &fa = kFormats[c.format_a], &fb = kFormats[c.format_b];
  const int size = c.size, k_size = size == 16 ? 128 : 64, acc = size * size / 64;
  std::vector<uint32_t> a_codes(static_cast<size_t>(size * k_size)), b_codes(a_codes.size());  // [i][k], [j][k]
  for (uint32_t& x : a_codes) x = random_code(fa, rng);
  for (uint32_t& x : b_codes) x = random_code(fb, rng);
  std::vector<float> c_in(static_cast<size_t>(64 * acc));
  for (float& x : c_in) x = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng);
  std::vector<uint32_t> scale_a(64), scale_b(64);
  if (c.scaled())
    for (uint32_t* words : {scale_a.data(), scale_b.data()})
      for (int lane = 0; lane < 64; ++lane)
        for (int byte = 0; byte < 4; ++byte) words[lane] |= static_cast<uint32_t>(120 + rng() % 15) << (8 * byte);
  GlobalMemory mem;
  const uint64_t a = weft::testing::upload(mem, pack(a_codes, fa, size), "A"), b = weft::testing::upload(mem, pack(b_codes, fb, size), "B");
  const uint64_t cc = weft::testing::upload(mem, c_in, "C"), d = weft::testing::upload(mem, std::vector<uint32_t>(c_in.size(), 0xCDCDCDCDu), "D");
  std::vector<ArgValue> args = {ArgValue::pointer(a), ArgValue::pointer(b), ArgValue::pointer(cc), ArgValue::pointer(d)};
  if (c.scaled()) {
    args.push_back(ArgValue::pointer(weft::testing::upload(mem, scale_a, "scale A")));
    args.push_back(ArgValue::pointer(weft::testing::upload(mem, scale_b, "scale B")));
  }
  LaunchOptions o;
  o.block = {64, 1, 1};
  o.kernarg = pack_kernel_args(code.kernel(c.kernel()), args);
  run_kernel(code, c.kernel(), mem, o);
  const std::vector<float> got = weft::testing::download<float>(mem, d, c_in.size());
  // The scale exponent of row i (column j) in K block kb: byte `byte` of lane i + size * kb's word.
  const auto exponent = [&](const std::vector<uint32_t>& words, int byte, int outer, int block) {
    return c.scaled() ? static_cast<int>((words[static_cast<size_t>(outer + size * block)] >> (8 * byte)) & 0xFF) - 127 : 0;
  };
  int wrong = 0;
  for (int lane = 0; lane < 64; ++lane)
    for (int r = 0; r < acc; ++r) {
      const auto [i, j] = accumulator_element(size, lane, r);
      const double c_value = c_in[static_cast<size_t>(lane * acc + r)];
      double want = c_value, magnitude = std::abs(c_value);
      for (int k = 0; k < k_size; ++k) {
        const int block = k / 32;
        const double scale = std::ldexp(1.0, exponent(scale_a, c.byte_a, i, block) + exponent(scale_b, c.byte_b, j, block));
        const double p = scale * value_of(fa, a_codes[static_cast<size_t>(i * k_size + k)]) * value_of(fb, b_codes[static_cast<size_t>(j * k_size + k)]);
        want += p;
        magnitude += std::abs(p);
      }
      // fp32 accumulation: a few roundings of at most half an ulp of the running magnitude.
      const double tolerance = 1e-6 * magnitude + 1e-30;
      const double g = got[static_cast<size_t>(lane * acc + r)];
      if (!(std::abs(g - want) <= tolerance) && wrong++ < 4)
        FAIL_CHECK("D[" << i << "][" << j << "] = " << g << ", want " << want << " (lane " << lane << ", register " << r << ")");
    }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("gfx950 f8f6f4 MFMAs: fp8, bf8, fp6, bf6 and fp4 operands against a double-precision product") {
  std::mt19937_64 rng = weft::testing::seeded_rng("test_mfma_f8f6f4");
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kernels_ir(kCases), "gfx950"));
  for (const Case& c : kCases) run_and_check(code, c, rng);
}

TEST_CASE("f8f6f4 MFMA: format codes above 4 are errors, and the formats' widths are 8, 6 and 4 bits") {
  CHECK(f8f6f4_element_bits(0) == 8);
  CHECK(f8f6f4_element_bits(3) == 6);
  CHECK(f8f6f4_element_bits(4) == 4);
  std::vector<uint32_t> regs(8 * 64, 0), acc(4 * 64, 0);
  CHECK_THROWS_WITH_AS(execute_mfma_f8f6f4(16, 5, 0, regs.data(), regs.data(), acc.data(), acc.data()),
                       doctest::Contains("format code 5 (cbsz/blgp) is undefined"), weft::Error);
}

TEST_CASE("f8f6f4 MFMA scales: per 32-wide K block, from lane outer + size * block, as 2^(E - 127)") {
  // All-ones operands (fp8 1.0 = 0x38), C = 0: each of the four K blocks adds 32 * scale_a * scale_b.
  std::vector<uint32_t> ones(8 * 64, 0x38383838u), zero(4 * 64, 0), d(4 * 64);
  std::vector<uint8_t> scale_a(64, 127), scale_b(64, 127);
  scale_a[0 + 16 * 2] = 128;  // row 0, block 2: x2
  scale_b[5 + 16 * 3] = 125;  // column 5, block 3: x1/4
  execute_mfma_f8f6f4(16, 0, 0, ones.data(), ones.data(), zero.data(), d.data(), scale_a.data(), scale_b.data());
  const auto at = [&](int i, int j) { return std::bit_cast<float>(d[static_cast<size_t>((i % 4) * 64 + 16 * (i / 4) + j)]); };
  CHECK(at(1, 1) == 128.0f);
  CHECK(at(0, 1) == 32.0f * 5);                // blocks 0, 1, 3 once, block 2 twice
  CHECK(at(1, 5) == 32.0f * 3 + 8.0f);         // block 3 at a quarter
  CHECK(at(0, 5) == 32.0f * 1 + 64.0f + 8.0f + 32.0f);
}

TEST_CASE("gfx950 scaled f8f6f4 MFMAs (16-byte v_mfma_scale_f32_*): E8M0 scales per 32-wide K block from a VGPR byte") {
  std::mt19937_64 rng = weft::testing::seeded_rng("test_mfma_f8f6f4 scaled");
  const std::vector<uint8_t> bytes = weft::testing::compile_ll(kernels_ir(kScaledCases), "gfx950");
  std::ostringstream listing;
  write_listing(CodeObject::load(bytes), listing);
  REQUIRE(listing.str().find("v_mfma_scale_f32_16x16x128_f8f6f4") != std::string::npos);
  REQUIRE(listing.str().find("v_mfma_scale_f32_32x32x64_f8f6f4") != std::string::npos);
  weft::testing::check_listing_matches_objdump(bytes, Arch::Gfx950);
  const CodeObject code = CodeObject::load(bytes);
  for (const Case& c : kScaledCases) run_and_check(code, c, rng);
}
