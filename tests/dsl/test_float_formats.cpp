// Host float conversions. The expected values come from each format's definition (written out in
// kSpecs and the known-pattern cases), not from the implementation: known bit patterns, the
// rounding decision at the midpoint between every pair of neighbouring values, round trips over
// every pattern, independent oracles on random inputs (the compiler's _Float16, bit-trick
// bfloat16 rounding, a nearest-value search over the decoded table) and monotonicity.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "weft/dsl/float_formats.h"

using namespace weft;
using F = FloatFormat;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
double p2(int e) { return std::ldexp(1.0, e); }

// Each format's facts, from its definition.
struct Spec {
  F format;
  int width;              // bits in a pattern
  uint16_t max_bits;      // largest finite positive pattern
  uint16_t qnan;          // canonical positive quiet NaN (the only NaN for fnuz)
  int nan_patterns;       // how many patterns decode to NaN
  double max_finite;
  double top_ulp;         // the grid step at max_finite
  double min_subnormal;
  double min_normal;
  bool has_infinity;
  bool fnuz;
  uint16_t sign() const { return static_cast<uint16_t>(1u << (width - 1)); }
  uint16_t inf() const { return static_cast<uint16_t>(max_bits + 1); }  // valid where has_infinity
  int patterns() const { return 1 << width; }
};

// NaN counts: IEEE-like = 2 * (2^m - 1) (all-ones exponent, nonzero mantissa, both signs);
// OCP E4M3 = 2 (S.1111.111); fnuz = 1 (0x80).
const Spec kSpecs[] = {
    {F::Float16, 16, 0x7BFF, 0x7E00, 2046, 65504.0, 32.0, p2(-24), p2(-14), true, false},
    {F::BFloat16, 16, 0x7F7F, 0x7FC0, 254, (2 - p2(-7)) * p2(127), p2(120), p2(-133), p2(-126), true, false},
    {F::Fp8E4M3, 8, 0x7E, 0x7F, 2, 448.0, 32.0, p2(-9), p2(-6), false, false},
    {F::Fp8E5M2, 8, 0x7B, 0x7E, 6, 57344.0, 8192.0, p2(-16), p2(-14), true, false},
    {F::Fp8E4M3Fnuz, 8, 0x7F, 0x80, 1, 240.0, 16.0, p2(-10), p2(-7), false, true},
    {F::Fp8E5M2Fnuz, 8, 0x7F, 0x80, 1, 57344.0, 8192.0, p2(-17), p2(-15), false, true},
};

// The pattern of -x given the pattern of x (> 0 or overflowed): fnuz has no -0, and its NaN is
// unsigned (0x80 | 0x80 == 0x80, so only zero needs a case).
uint16_t negated(const Spec& s, uint16_t positive) {
  if (s.fnuz && positive == 0) return 0;
  return static_cast<uint16_t>(positive | s.sign());
}

// What a positive value beyond max_finite becomes.
uint16_t overflowed(const Spec& s, Overflow o) {
  if (o == Overflow::Saturate) return s.max_bits;
  return s.has_infinity ? s.inf() : s.qnan;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A random double of either sign, log-uniform over [2^lo, 2^hi). Every fourth value is cut to
// `keep` significant bits so that exact ties between format values come up often.
double random_double(std::mt19937_64& rng, int lo, int hi, int keep) {
  const double frac = std::ldexp(static_cast<double>(rng() >> 12), -52);  // [0, 1)
  const int e = lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo));
  double x = std::ldexp(1.0 + frac, e);
  if (rng() % 4 == 0) x = std::ldexp(std::trunc(std::ldexp(1.0 + frac, keep)), e - keep);
  return rng() % 2 ? -x : x;
}

}  // namespace

TEST_CASE("format info table") {
  for (const Spec& s : kSpecs) {
    const FloatFormatInfo& info = float_format_info(s.format);
    CAPTURE(info.name);
    CHECK(1 + info.exponent_bits + info.mantissa_bits == s.width);
    CHECK(info.has_infinity == s.has_infinity);
    CHECK(info.fnuz == s.fnuz);
    CHECK(info.max_finite == s.max_finite);
    CHECK(decode_float(s.format, s.max_bits) == s.max_finite);
    CHECK(decode_float(s.format, 1) == s.min_subnormal);
    // The smallest normal is the first pattern with exponent field 1.
    CHECK(decode_float(s.format, static_cast<uint16_t>(1u << info.mantissa_bits)) == s.min_normal);
    CHECK(s.min_normal == p2(1 - info.bias));
  }
  CHECK(std::string(float_format_info(F::Float16).name) == "float16");
  CHECK(std::string(float_format_info(F::BFloat16).name) == "bfloat16");
  CHECK(std::string(float_format_info(F::Fp8E4M3).name) == "float8_e4m3");
  CHECK(std::string(float_format_info(F::Fp8E5M2).name) == "float8_e5m2");
  CHECK(std::string(float_format_info(F::Fp8E4M3Fnuz).name) == "float8_e4m3fnuz");
  CHECK(std::string(float_format_info(F::Fp8E5M2Fnuz).name) == "float8_e5m2fnuz");
  CHECK(float_format_info(F::Fp8E4M3Fnuz).bias == 8);
  CHECK(float_format_info(F::Fp8E5M2Fnuz).bias == 16);
}

TEST_CASE("float16 known patterns") {
  CHECK(encode_float(F::Float16, 1.0) == 0x3C00);
  CHECK(encode_float(F::Float16, -2.0) == 0xC000);
  CHECK(encode_float(F::Float16, 0.333251953125) == 0x3555);
  CHECK(encode_float(F::Float16, 65504.0) == 0x7BFF);
  CHECK(encode_float(F::Float16, 65519.0) == 0x7BFF);  // below the midpoint to 2^16
  CHECK(encode_float(F::Float16, 65520.0) == 0x7C00);  // the midpoint: even is 2^16, so inf
  CHECK(encode_float(F::Float16, 65520.0, Overflow::Saturate) == 0x7BFF);
  CHECK(encode_float(F::Float16, p2(-14)) == 0x0400);  // smallest normal
  CHECK(encode_float(F::Float16, p2(-24)) == 0x0001);  // smallest subnormal
  CHECK(encode_float(F::Float16, p2(-25)) == 0x0000);  // tie: to even (zero)
  CHECK(encode_float(F::Float16, p2(-25) + p2(-60)) == 0x0001);
  CHECK(encode_float(F::Float16, 1.5 * p2(-24)) == 0x0002);  // tie: to even (2)
  CHECK(encode_float(F::Float16, 2.5 * p2(-24)) == 0x0002);  // tie: to even (2)
  CHECK(encode_float(F::Float16, p2(-14) - p2(-25)) == 0x0400);  // tie: subnormal carries to normal
  CHECK(encode_float(F::Float16, 1.0 + p2(-11)) == 0x3C00);      // tie: to even
  CHECK(encode_float(F::Float16, 1.0 + 3 * p2(-11)) == 0x3C02);  // tie: to even
  CHECK(encode_float(F::Float16, 2.0 - p2(-11)) == 0x4000);      // tie: carries into next binade
  CHECK(encode_float(F::Float16, 2.0 - p2(-12)) == 0x4000);      // rounds up into next binade
  // A double just above a tie: rounding through float first would lose the 2^-40 and tie down.
  CHECK(encode_float(F::Float16, 1.0 + p2(-11) + p2(-40)) == 0x3C01);
  CHECK(decode_float(F::Float16, 0x3555) == 0.333251953125);
  CHECK(decode_float(F::Float16, 0x8001) == -p2(-24));
  CHECK(decode_float(F::Float16, 0xFC00) == -kInf);
  CHECK(std::isnan(decode_float(F::Float16, 0x7C01)));
  CHECK(std::isnan(decode_float(F::Float16, 0xFFFF)));
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(half_to_float(0xC000) == -2.0f);
}

TEST_CASE("bfloat16 known patterns") {
  CHECK(encode_float(F::BFloat16, 1.0) == 0x3F80);
  CHECK(encode_float(F::BFloat16, -1.0) == 0xBF80);
  CHECK(encode_float(F::BFloat16, 3.14159265358979) == 0x4049);  // 3.140625
  CHECK(encode_float(F::BFloat16, 1.0 + p2(-8)) == 0x3F80);      // tie: to even
  CHECK(encode_float(F::BFloat16, 1.0 + 3 * p2(-8)) == 0x3F82);  // tie: to even
  CHECK(encode_float(F::BFloat16, p2(-126)) == 0x0080);
  CHECK(encode_float(F::BFloat16, p2(-133)) == 0x0001);
  CHECK(encode_float(F::BFloat16, p2(-134)) == 0x0000);        // tie: to even (zero)
  CHECK(encode_float(F::BFloat16, 1.5 * p2(-133)) == 0x0002);  // tie: to even (2)
  CHECK(encode_float(F::BFloat16, 3.3895313892515355e38) == 0x7F7F);
  CHECK(encode_float(F::BFloat16, 3.4e38) == 0x7F80);  // above max + half ulp: inf
  CHECK(encode_float(F::BFloat16, 3.4e38, Overflow::Saturate) == 0x7F7F);
  CHECK(encode_float(F::BFloat16, 1e300) == 0x7F80);
  CHECK(encode_float(F::BFloat16, -1e300, Overflow::Saturate) == 0xFF7F);
  CHECK(encode_float(F::BFloat16, 1e-300) == 0x0000);
  CHECK(encode_float(F::BFloat16, -std::numeric_limits<double>::denorm_min()) == 0x8000);
  CHECK(decode_float(F::BFloat16, 0x0001) == p2(-133));
  CHECK(decode_float(F::BFloat16, 0xFF80) == -kInf);
  CHECK(float_to_bf16(-2.0f) == 0xC000);
  CHECK(bf16_to_float(0x3FC0) == 1.5f);
}

TEST_CASE("OCP fp8 e4m3 known patterns") {
  CHECK(encode_float(F::Fp8E4M3, 1.0) == 0x38);
  CHECK(encode_float(F::Fp8E4M3, 0.5) == 0x30);
  CHECK(encode_float(F::Fp8E4M3, -1.75) == 0xBE);
  CHECK(encode_float(F::Fp8E4M3, 256.0) == 0x78);  // exponent field 15 is an ordinary binade
  CHECK(encode_float(F::Fp8E4M3, 448.0) == 0x7E);  // S.1111.110 is finite
  CHECK(encode_float(F::Fp8E4M3, -448.0) == 0xFE);
  CHECK(encode_float(F::Fp8E4M3, 464.0) == 0x7E);  // tie between 448 and (NaN) 480: 448 is even
  CHECK(encode_float(F::Fp8E4M3, 464.0 + p2(-40)) == 0x7F);  // past the tie: NaN (no inf)
  CHECK(encode_float(F::Fp8E4M3, 465.0) == 0x7F);
  CHECK(encode_float(F::Fp8E4M3, -465.0) == 0xFF);
  CHECK(encode_float(F::Fp8E4M3, 465.0, Overflow::Saturate) == 0x7E);
  CHECK(encode_float(F::Fp8E4M3, 1e30, Overflow::Saturate) == 0x7E);
  CHECK(encode_float(F::Fp8E4M3, p2(-6)) == 0x08);       // smallest normal
  CHECK(encode_float(F::Fp8E4M3, 7 * p2(-9)) == 0x07);   // largest subnormal
  CHECK(encode_float(F::Fp8E4M3, 7.5 * p2(-9)) == 0x08); // tie: subnormal carries to normal
  CHECK(encode_float(F::Fp8E4M3, p2(-9)) == 0x01);
  CHECK(encode_float(F::Fp8E4M3, p2(-10)) == 0x00);      // tie: to even (zero)
  CHECK(encode_float(F::Fp8E4M3, 3 * p2(-10)) == 0x02);  // tie: to even (2)
  CHECK(encode_float(F::Fp8E4M3, 1.0625) == 0x38);       // tie: to even
  CHECK(encode_float(F::Fp8E4M3, 1.1875) == 0x3A);       // tie: to even
  CHECK(encode_float(F::Fp8E4M3, 15.5) == 0x58);         // tie: carries into 16
  CHECK(decode_float(F::Fp8E4M3, 0x7E) == 448.0);
  CHECK(decode_float(F::Fp8E4M3, 0x78) == 256.0);
  CHECK(decode_float(F::Fp8E4M3, 0x01) == p2(-9));
  CHECK(std::isnan(decode_float(F::Fp8E4M3, 0x7F)));
  CHECK(std::isnan(decode_float(F::Fp8E4M3, 0xFF)));
  CHECK(decode_float(F::Fp8E4M3, 0x1238) == 1.0);  // only the low 8 bits are read
}

TEST_CASE("OCP fp8 e5m2 known patterns") {
  CHECK(encode_float(F::Fp8E5M2, 1.0) == 0x3C);
  CHECK(encode_float(F::Fp8E5M2, 1.25) == 0x3D);
  CHECK(encode_float(F::Fp8E5M2, 1.125) == 0x3C);  // tie: to even
  CHECK(encode_float(F::Fp8E5M2, 1.375) == 0x3E);  // tie: to even
  CHECK(encode_float(F::Fp8E5M2, -3.5) == 0xC3);
  CHECK(encode_float(F::Fp8E5M2, 57344.0) == 0x7B);
  CHECK(encode_float(F::Fp8E5M2, 61439.0) == 0x7B);
  CHECK(encode_float(F::Fp8E5M2, 61440.0) == 0x7C);  // tie above max: even is 2^16, so inf
  CHECK(encode_float(F::Fp8E5M2, 61440.0, Overflow::Saturate) == 0x7B);
  CHECK(encode_float(F::Fp8E5M2, -1e9) == 0xFC);
  CHECK(encode_float(F::Fp8E5M2, p2(-14)) == 0x04);
  CHECK(encode_float(F::Fp8E5M2, p2(-16)) == 0x01);
  CHECK(encode_float(F::Fp8E5M2, p2(-17)) == 0x00);  // tie: to even (zero)
  CHECK(encode_float(F::Fp8E5M2, -p2(-17)) == 0x80);
  CHECK(decode_float(F::Fp8E5M2, 0x7C) == kInf);
  CHECK(decode_float(F::Fp8E5M2, 0x03) == 3 * p2(-16));
  CHECK(std::isnan(decode_float(F::Fp8E5M2, 0x7D)));
  CHECK(std::isnan(decode_float(F::Fp8E5M2, 0xFF)));
}

TEST_CASE("CDNA3 fnuz fp8 known patterns") {
  CHECK(encode_float(F::Fp8E4M3Fnuz, 1.0) == 0x40);
  CHECK(encode_float(F::Fp8E4M3Fnuz, 0.5) == 0x38);
  CHECK(encode_float(F::Fp8E4M3Fnuz, -1.0) == 0xC0);
  CHECK(encode_float(F::Fp8E4M3Fnuz, 240.0) == 0x7F);
  CHECK(encode_float(F::Fp8E4M3Fnuz, -240.0) == 0xFF);
  CHECK(encode_float(F::Fp8E4M3Fnuz, 247.0) == 0x7F);
  CHECK(encode_float(F::Fp8E4M3Fnuz, 248.0) == 0x80);  // tie above max: even is 256, so NaN
  CHECK(encode_float(F::Fp8E4M3Fnuz, -248.0) == 0x80);
  CHECK(encode_float(F::Fp8E4M3Fnuz, 248.0, Overflow::Saturate) == 0x7F);
  CHECK(encode_float(F::Fp8E4M3Fnuz, p2(-7)) == 0x08);  // smallest normal
  CHECK(encode_float(F::Fp8E4M3Fnuz, p2(-10)) == 0x01);
  CHECK(encode_float(F::Fp8E4M3Fnuz, p2(-11)) == 0x00);   // tie: to even (zero)
  CHECK(encode_float(F::Fp8E4M3Fnuz, -p2(-11)) == 0x00);  // and no negative zero
  CHECK(encode_float(F::Fp8E4M3Fnuz, -p2(-10)) == 0x81);
  CHECK(decode_float(F::Fp8E4M3Fnuz, 0x81) == -p2(-10));
  CHECK(std::isnan(decode_float(F::Fp8E4M3Fnuz, 0x80)));
  CHECK(encode_float(F::Fp8E5M2Fnuz, 1.0) == 0x40);
  CHECK(encode_float(F::Fp8E5M2Fnuz, 57344.0) == 0x7F);
  CHECK(encode_float(F::Fp8E5M2Fnuz, 61440.0) == 0x80);  // tie above max: NaN
  CHECK(encode_float(F::Fp8E5M2Fnuz, -57344.0) == 0xFF);
  CHECK(encode_float(F::Fp8E5M2Fnuz, p2(-15)) == 0x04);
  CHECK(encode_float(F::Fp8E5M2Fnuz, p2(-17)) == 0x01);
  CHECK(encode_float(F::Fp8E5M2Fnuz, 1.5 * p2(-17)) == 0x02);  // tie: to even (2)
  CHECK(decode_float(F::Fp8E5M2Fnuz, 0xC0) == -1.0);
  CHECK(decode_float(F::Fp8E5M2Fnuz, 0x7C) == 32768.0);  // the top exponent is finite
  CHECK(std::isnan(decode_float(F::Fp8E5M2Fnuz, 0x80)));
}

TEST_CASE("NaN, infinity and signed zero in every format") {
  for (const Spec& s : kSpecs) {
    CAPTURE(float_format_info(s.format).name);
    for (Overflow o : {Overflow::NonFinite, Overflow::Saturate}) {
      // NaN stays NaN whatever the overflow mode; the sign is kept except for fnuz.
      CHECK(encode_float(s.format, kNaN, o) == s.qnan);
      CHECK(encode_float(s.format, std::copysign(kNaN, -1.0), o) == negated(s, s.qnan));
      CHECK(encode_float(s.format, kInf, o) == overflowed(s, o));
      CHECK(encode_float(s.format, -kInf, o) == negated(s, overflowed(s, o)));
      CHECK(encode_float(s.format, 0.0, o) == 0);
      CHECK(encode_float(s.format, -0.0, o) == (s.fnuz ? 0 : s.sign()));
      // Below half the smallest subnormal: zero of the input's sign (fnuz: +0).
      CHECK(encode_float(s.format, 0.4 * s.min_subnormal, o) == 0);
      CHECK(encode_float(s.format, -0.4 * s.min_subnormal, o) == (s.fnuz ? 0 : s.sign()));
      CHECK(encode_float(s.format, std::numeric_limits<double>::denorm_min(), o) == 0);
    }
    CHECK(std::isnan(decode_float(s.format, s.qnan)));
    CHECK(decode_float(s.format, 0) == 0.0);
    CHECK_FALSE(std::signbit(decode_float(s.format, 0)));
    if (!s.fnuz) {
      CHECK(decode_float(s.format, s.sign()) == 0.0);
      CHECK(std::signbit(decode_float(s.format, s.sign())));
    }
    if (s.has_infinity) {
      CHECK(decode_float(s.format, s.inf()) == kInf);
      CHECK(decode_float(s.format, negated(s, s.inf())) == -kInf);
    }
  }
}

TEST_CASE("overflow thresholds in both modes") {
  for (const Spec& s : kSpecs) {
    CAPTURE(float_format_info(s.format).name);
    const double tie = s.max_finite + s.top_ulp / 2;
    // At the tie the even neighbour wins: max_finite if its pattern is even (OCP E4M3's 0x7E),
    // otherwise the pattern past it, which overflows.
    const bool tie_overflows = s.max_bits % 2 == 1;
    for (Overflow o : {Overflow::NonFinite, Overflow::Saturate}) {
      CAPTURE(static_cast<int>(o));
      for (bool neg : {false, true}) {
        auto enc = [&](double x) { return encode_float(s.format, neg ? -x : x, o); };
        auto want = [&](uint16_t b) { return neg ? negated(s, b) : b; };
        CHECK(enc(s.max_finite) == want(s.max_bits));
        CHECK(enc(std::nextafter(tie, 0.0)) == want(s.max_bits));
        CHECK(enc(tie) == want(tie_overflows ? overflowed(s, o) : s.max_bits));
        CHECK(enc(std::nextafter(tie, kInf)) == want(overflowed(s, o)));
        CHECK(enc(s.max_finite * 4) == want(overflowed(s, o)));
        CHECK(enc(std::numeric_limits<double>::max()) == want(overflowed(s, o)));
      }
    }
  }
}

TEST_CASE("every pattern decodes exactly and encodes back to itself") {
  for (const Spec& s : kSpecs) {
    CAPTURE(float_format_info(s.format).name);
    int nans = 0;
    double previous = -1;
    for (int b = 0; b < s.patterns(); ++b) {
      CAPTURE(b);
      const auto bits = static_cast<uint16_t>(b);
      const double v = decode_float(s.format, bits);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      for (Overflow o : {Overflow::NonFinite, Overflow::Saturate})
        if (!std::isinf(v)) REQUIRE(encode_float(s.format, v, o) == bits);
      REQUIRE(encode_float(s.format, v) == bits);  // inf included, in NonFinite mode
      // Positive patterns ascend in value; a negative pattern mirrors its positive one.
      if (b < s.sign()) {
        REQUIRE(v > previous);
        previous = v;
      } else {
        REQUIRE(v == -decode_float(s.format, static_cast<uint16_t>(b - s.sign())));
      }
    }
    CHECK(nans == s.nan_patterns);
  }
}

TEST_CASE("the midpoint between every pair of neighbours rounds to the even one") {
  for (const Spec& s : kSpecs) {
    CAPTURE(float_format_info(s.format).name);
    // Finite positive values in pattern order, plus the value one step past max_finite, where
    // an unbounded exponent would put the next pattern.
    std::vector<double> v(s.max_bits + 2u);
    for (unsigned b = 0; b <= s.max_bits; ++b) v[b] = decode_float(s.format, static_cast<uint16_t>(b));
    v[s.max_bits + 1u] = s.max_finite + s.top_ulp;
    for (Overflow o : {Overflow::NonFinite, Overflow::Saturate}) {
      auto expect = [&](unsigned b) { return b <= s.max_bits ? static_cast<uint16_t>(b) : overflowed(s, o); };
      for (unsigned b = 0; b <= s.max_bits; ++b) {
        CAPTURE(b);
        const double mid = (v[b] + v[b + 1]) / 2;  // exact: both have few significant bits
        const uint16_t at_mid = expect(b % 2 == 0 ? b : b + 1);
        const uint16_t above = expect(b + 1);
        REQUIRE(encode_float(s.format, mid, o) == at_mid);
        REQUIRE(encode_float(s.format, std::nextafter(mid, 0.0), o) == b);
        REQUIRE(encode_float(s.format, std::nextafter(mid, kInf), o) == above);
        REQUIRE(encode_float(s.format, -mid, o) == negated(s, at_mid));
        REQUIRE(encode_float(s.format, -std::nextafter(mid, 0.0), o) == negated(s, static_cast<uint16_t>(b)));
        REQUIRE(encode_float(s.format, -std::nextafter(mid, kInf), o) == negated(s, above));
      }
    }
  }
}

TEST_CASE("random doubles round to the nearest value found by search") {
  std::mt19937_64 rng(0x5eed);
  for (const Spec& s : kSpecs) {
    CAPTURE(float_format_info(s.format).name);
    const FloatFormatInfo& info = float_format_info(s.format);
    std::vector<double> v;
    for (unsigned b = 0; b <= s.max_bits; ++b) v.push_back(decode_float(s.format, static_cast<uint16_t>(b)));
    const int lo = static_cast<int>(std::log2(s.min_subnormal)) - 3;
    const int hi = static_cast<int>(std::log2(s.max_finite)) + 2;  // overflows included
    for (int i = 0; i < 50000; ++i) {
      const double x = random_double(rng, lo, hi, info.mantissa_bits + 2);
      const double mag = std::fabs(x);
      CAPTURE(x);
      // The neighbours a <= mag < c; the nearer wins, a tie goes to the even pattern.
      const auto c = static_cast<unsigned>(std::upper_bound(v.begin(), v.end(), mag) - v.begin());
      uint16_t want;
      if (c == v.size()) {  // past max_finite: its neighbour above is the overflow pattern
        const double below = mag - s.max_finite, above = s.top_ulp - below;
        const bool keep_max = below < above || (below == above && s.max_bits % 2 == 0);
        want = keep_max ? s.max_bits : overflowed(s, Overflow::NonFinite);
      } else {
        const double below = mag - v[c - 1], above = v[c] - mag;
        const bool pick_c = above < below || (above == below && c % 2 == 0);
        want = static_cast<uint16_t>(pick_c ? c : c - 1);
      }
      REQUIRE(encode_float(s.format, x) == (x < 0 ? negated(s, want) : want));
    }
  }
}

TEST_CASE("float16 matches the compiler's _Float16") {
#if defined(__FLT16_MAX__)
  std::mt19937_64 rng(20261202);
  auto oracle = [](auto x) {
    const auto h = static_cast<_Float16>(x);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  };
  for (int i = 0; i < 200000; ++i) {
    // Any float32 bits: mostly far out of range (inf or zero), NaNs skipped.
    const float any = bits_float(static_cast<uint32_t>(rng()));
    if (!std::isnan(any)) {
      CAPTURE(any);
      REQUIRE(encode_float(F::Float16, any) == oracle(any));
    }
    // float32 with exponents around fp16's range, subnormals included; a quarter of them with
    // the 13 bits below fp16's precision forced to an exact tie.
    uint32_t u = static_cast<uint32_t>(rng());
    u = (u & 0x807FFFFFu) | (static_cast<uint32_t>(127 - 27 + rng() % 45) << 23);
    if (rng() % 4 == 0) u = (u & ~0x1FFFu) | 0x1000u;
    const float near = bits_float(u);
    CAPTURE(near);
    REQUIRE(encode_float(F::Float16, near) == oracle(near));
    // doubles: the compiler converts them in one rounding too.
    const double d = random_double(rng, -27, 17, 12);
    CAPTURE(d);
    REQUIRE(encode_float(F::Float16, d) == oracle(d));
  }
#else
  MESSAGE("no _Float16 in this compiler: the fp16 oracle comparison is skipped");
#endif
}

TEST_CASE("bfloat16 matches bit-trick rounding of float32") {
  // Round to nearest even on the float32 pattern: add just under half of the dropped part's
  // range, plus one more when the kept part is odd, then drop the low 16 bits. Correct for
  // every non-NaN float, carries into the exponent and up to inf included.
  auto oracle = [](uint32_t u) { return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); };
  auto check = [&](uint32_t u) {
    if (std::isnan(bits_float(u))) return;
    CAPTURE(u);
    REQUIRE(encode_float(F::BFloat16, bits_float(u)) == oracle(u));
  };
  // Every upper half with the low halves that matter: exact, just below / at / just above the
  // tie, and the top.
  for (uint32_t high = 0; high < 0x10000u; ++high)
    for (uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) check(high << 16 | low);
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) check(rng());
}

TEST_CASE("encoding is monotone") {
  std::mt19937_64 rng(7);
  for (const Spec& s : kSpecs) {
    CAPTURE(float_format_info(s.format).name);
    const int lo = static_cast<int>(std::log2(s.min_subnormal)) - 4;
    const int hi = static_cast<int>(std::log2(s.max_finite)) + 3;
    std::vector<double> xs{-kInf, kInf, 0.0, -0.0};
    for (int i = 0; i < 40000; ++i) xs.push_back(random_double(rng, lo, hi, 60));
    std::sort(xs.begin(), xs.end());
    for (Overflow o : {Overflow::NonFinite, Overflow::Saturate}) {
      if (o == Overflow::NonFinite && !s.has_infinity) continue;  // overflow gives unordered NaN
      double previous = -kInf;
      for (double x : xs) {
        const double v = decode_float(s.format, encode_float(s.format, x, o));
        CAPTURE(x);
        REQUIRE(v >= previous);
        previous = v;
      }
    }
  }
}
