// Host float conversions: known bit patterns written from each format's definition, round
// trips over every pattern, and independent oracles (the compiler's _Float16, a bit-trick
// bfloat16 rounding) on random inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "weft/dsl/float_formats.h"

using namespace weft;
using F = FloatFormat;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr F kAll[] = {F::Float16, F::BFloat16, F::Fp8E4M3, F::Fp8E5M2, F::Fp8E4M3Fnuz, F::Fp8E5M2Fnuz};
int pattern_count(F f) { return f == F::Float16 || f == F::BFloat16 ? 65536 : 256; }
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST_CASE("float16 known patterns") {
  CHECK(encode_float(F::Float16, 1.0) == 0x3C00);
  CHECK(encode_float(F::Float16, -2.0) == 0xC000);
  CHECK(encode_float(F::Float16, 65504.0) == 0x7BFF);
  CHECK(encode_float(F::Float16, 65519.0) == 0x7BFF);  // below the midpoint to 2^16
  CHECK(encode_float(F::Float16, 65520.0) == 0x7C00);  // the midpoint rounds to even: overflow
  CHECK(encode_float(F::Float16, 65520.0, Overflow::Saturate) == 0x7BFF);
  CHECK(encode_float(F::Float16, std::ldexp(1.0, -24)) == 0x0001);
  CHECK(encode_float(F::Float16, std::ldexp(1.0, -25)) == 0x0000);  // tie to even (0)
  CHECK(encode_float(F::Float16, 1.5 * std::ldexp(1.0, -24)) == 0x0002);  // tie to even (2)
  CHECK(encode_float(F::Float16, std::ldexp(1.0, -14)) == 0x0400);  // smallest normal
  CHECK(encode_float(F::Float16, 1.0 + std::ldexp(1.0, -11)) == 0x3C00);  // tie to even
  CHECK(encode_float(F::Float16, 1.0 + 3 * std::ldexp(1.0, -11)) == 0x3C02);
  CHECK(encode_float(F::Float16, -0.0) == 0x8000);
  CHECK(encode_float(F::Float16, kInf) == 0x7C00);
  CHECK(encode_float(F::Float16, -kInf, Overflow::Saturate) == 0xFBFF);
  CHECK(encode_float(F::Float16, kNaN) == 0x7E00);
  CHECK(std::isnan(decode_float(F::Float16, 0x7C01)));
  CHECK(decode_float(F::Float16, 0xFC00) == -kInf);
}

TEST_CASE("bfloat16 known patterns") {
  CHECK(encode_float(F::BFloat16, 1.0) == 0x3F80);
  CHECK(encode_float(F::BFloat16, -1.0) == 0xBF80);
  CHECK(encode_float(F::BFloat16, 3.140625) == 0x4049);
  CHECK(encode_float(F::BFloat16, 1.0 + std::ldexp(1.0, -8)) == 0x3F80);      // tie to even
  CHECK(encode_float(F::BFloat16, 1.0 + 3 * std::ldexp(1.0, -8)) == 0x3F82);  // tie to even
  CHECK(encode_float(F::BFloat16, 3.4e38) == 0x7F80);
  CHECK(encode_float(F::BFloat16, kNaN) == 0x7FC0);
  CHECK(decode_float(F::BFloat16, 0x0001) == std::ldexp(1.0, -133));
}

TEST_CASE("OCP fp8 e4m3 and e5m2 known patterns") {
  CHECK(encode_float(F::Fp8E4M3, 1.0) == 0x38);
  CHECK(encode_float(F::Fp8E4M3, 448.0) == 0x7E);
  CHECK(encode_float(F::Fp8E4M3, -448.0) == 0xFE);
  CHECK(encode_float(F::Fp8E4M3, 464.0) == 0x7E);  // tie between 448 and 480 goes to 448
  CHECK(encode_float(F::Fp8E4M3, 465.0) == 0x7F);  // overflow: NaN (no infinity)
  CHECK(encode_float(F::Fp8E4M3, 465.0, Overflow::Saturate) == 0x7E);
  CHECK(encode_float(F::Fp8E4M3, kInf) == 0x7F);
  CHECK(encode_float(F::Fp8E4M3, -kInf, Overflow::Saturate) == 0xFE);
  CHECK(encode_float(F::Fp8E4M3, std::ldexp(1.0, -9)) == 0x01);
  CHECK(encode_float(F::Fp8E4M3, std::ldexp(1.0, -10)) == 0x00);  // tie to even
  CHECK(encode_float(F::Fp8E4M3, kNaN) == 0x7F);
  CHECK(std::isnan(decode_float(F::Fp8E4M3, 0xFF)));
  CHECK(decode_float(F::Fp8E4M3, 0x7E) == 448.0);
  CHECK(decode_float(F::Fp8E4M3, 0x78) == 256.0);  // exponent 15 is a normal binade
  CHECK(encode_float(F::Fp8E5M2, 1.0) == 0x3C);
  CHECK(encode_float(F::Fp8E5M2, 57344.0) == 0x7B);
  CHECK(encode_float(F::Fp8E5M2, 61440.0) == 0x7C);  // tie to even above max: infinity
  CHECK(encode_float(F::Fp8E5M2, 61440.0, Overflow::Saturate) == 0x7B);
  CHECK(encode_float(F::Fp8E5M2, kInf) == 0x7C);
  CHECK(encode_float(F::Fp8E5M2, std::ldexp(1.0, -16)) == 0x01);
  CHECK(encode_float(F::Fp8E5M2, -0.0) == 0x80);
  CHECK(std::isnan(decode_float(F::Fp8E5M2, 0x7D)));
}

TEST_CASE("CDNA3 fnuz fp8 known patterns") {
  CHECK(encode_float(F::Fp8E4M3Fnuz, 1.0) == 0x40);
  CHECK(encode_float(F::Fp8E4M3Fnuz, 240.0) == 0x7F);
  CHECK(encode_float(F::Fp8E4M3Fnuz, 248.0) == 0x80);  // tie above max goes up: NaN
  CHECK(encode_float(F::Fp8E4M3Fnuz, 248.0, Overflow::Saturate) == 0x7F);
  CHECK(encode_float(F::Fp8E4M3Fnuz, -240.0) == 0xFF);
  CHECK(encode_float(F::Fp8E4M3Fnuz, -0.0) == 0x00);  // no negative zero
  CHECK(encode_float(F::Fp8E4M3Fnuz, kNaN) == 0x80);
  CHECK(encode_float(F::Fp8E4M3Fnuz, std::ldexp(1.0, -10)) == 0x01);
  CHECK(std::isnan(decode_float(F::Fp8E4M3Fnuz, 0x80)));
  CHECK(encode_float(F::Fp8E5M2Fnuz, 1.0) == 0x40);
  CHECK(encode_float(F::Fp8E5M2Fnuz, 57344.0) == 0x7F);
  CHECK(encode_float(F::Fp8E5M2Fnuz, kInf) == 0x80);
  CHECK(encode_float(F::Fp8E5M2Fnuz, -kInf, Overflow::Saturate) == 0xFF);
  CHECK(encode_float(F::Fp8E5M2Fnuz, std::ldexp(1.0, -17)) == 0x01);
  CHECK(decode_float(F::Fp8E5M2Fnuz, 0xC0) == -1.0);
}

TEST_CASE("every pattern decodes and encodes back to itself") {
  for (F f : kAll) {
    CAPTURE(float_format_info(f).name);
    for (int b = 0; b < pattern_count(f); ++b) {
      double v = decode_float(f, static_cast<uint16_t>(b));
      if (std::isnan(v)) continue;
      CAPTURE(b);
      REQUIRE(encode_float(f, v) == b);
    }
  }
}

TEST_CASE("independent oracles on random inputs") {
  std::mt19937 rng(20261202);
#if defined(__FLT16_MAX__)
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    float x = bits_float(u);
    if (std::isnan(x)) continue;
    _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    CAPTURE(x);
    REQUIRE(encode_float(F::Float16, x) == want);
    // Magnitudes near fp16's range exercise rounding and subnormals far more often.
    float small = std::ldexp(static_cast<float>(rng() % 100000) / 100000.0f, -static_cast<int>(rng() % 28));
    _Float16 hs = static_cast<_Float16>(small);
    std::memcpy(&want, &hs, 2);
    CAPTURE(small);
    REQUIRE(encode_float(F::Float16, small) == want);
  }
#else
  MESSAGE("no _Float16 in this compiler: the fp16 oracle comparison is skipped");
#endif
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    if (std::isnan(bits_float(u))) continue;
    uint32_t rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16;  // RNE on the bit pattern
    CAPTURE(u);
    REQUIRE(encode_float(F::BFloat16, bits_float(u)) == rounded);
  }
}

TEST_CASE("encoding is monotone") {
  std::mt19937_64 rng(7);
  for (F f : kAll) {
    const double top = float_format_info(f).max_finite * 1.1;
    std::vector<double> xs;
    for (int i = 0; i < 20000; ++i) xs.push_back(std::ldexp(static_cast<double>(rng() % 1000000) / 1e6, -static_cast<int>(rng() % 40)) * top);
    std::sort(xs.begin(), xs.end());
    double prev = -1;
    for (double x : xs) {
      double v = decode_float(f, encode_float(f, x, Overflow::Saturate));
      CAPTURE(x);
      REQUIRE(v >= prev);
      prev = v;
    }
  }
}
