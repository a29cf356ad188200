// One table-driven implementation for every narrow format. The key fact it leans on: for a
// positive value, the bit pattern is ((biased exponent - 1) << mantissa_bits) + significand,
// where the significand is the value divided by the grid step of its binade, hidden bit
// included. Subnormals fit the same formula with the smallest normal binade's step and a
// significand below the hidden bit, and a significand that rounds up to 2^(mantissa_bits + 1)
// carries into the next exponent by plain addition. So rounding is a single nearbyint on an
// exactly scaled double, and overflow is a comparison of patterns. All arithmetic is exact:
// the input is a double, every grid step is a power of two and every significand a small
// integer.
#include "weft/dsl/float_formats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace weft {
namespace {

// Indexed by FloatFormat. max_finite is the value of max_pattern() below; the tests check it.
constexpr std::array<FloatFormatInfo, 6> kFormats{{
    {"float16", 5, 10, 15, true, false, 65504.0},                   // (2 - 2^-10) * 2^15
    {"bfloat16", 8, 7, 127, true, false, 3.3895313892515355e38},    // (2 - 2^-7) * 2^127
    {"float8_e4m3", 4, 3, 7, false, false, 448.0},                  // 1.75 * 2^8: S.1111.111 is NaN
    {"float8_e5m2", 5, 2, 15, true, false, 57344.0},                // 1.75 * 2^15
    {"float8_e4m3fnuz", 4, 3, 8, false, true, 240.0},               // 1.875 * 2^7: 0x7F
    {"float8_e5m2fnuz", 5, 2, 16, false, true, 57344.0},            // 1.75 * 2^15: 0x7F
}};

uint32_t sign_mask(const FloatFormatInfo& f) { return 1u << (f.exponent_bits + f.mantissa_bits); }
uint32_t mantissa_mask(const FloatFormatInfo& f) { return (1u << f.mantissa_bits) - 1; }
// The all-ones exponent field, shifted into place: inf (with a zero mantissa) where it exists.
uint32_t top_exponent(const FloatFormatInfo& f) { return ((1u << f.exponent_bits) - 1) << f.mantissa_bits; }
// Exponent of the smallest normal binade; subnormals use its grid step. The same formula holds
// for fnuz formats, whose larger bias is what shifts their range down by one binade.
int min_normal_exponent(const FloatFormatInfo& f) { return 1 - f.bias; }

// Positive patterns are ordered like their values, and the finite ones form a prefix ending just
// below the first special one: inf (IEEE-like), the all-ones NaN (OCP E4M3), or the sign bit
// (fnuz, where every positive pattern is finite).
uint32_t max_pattern(const FloatFormatInfo& f) {
  if (f.fnuz) return sign_mask(f) - 1;
  if (f.has_infinity) return top_exponent(f) - 1;
  return (top_exponent(f) | mantissa_mask(f)) - 1;
}

uint16_t with_sign(const FloatFormatInfo& f, bool negative, uint32_t magnitude) {
  return static_cast<uint16_t>((negative ? sign_mask(f) : 0) | magnitude);
}

uint16_t nan_bits(const FloatFormatInfo& f, bool negative) {
  if (f.fnuz) return static_cast<uint16_t>(sign_mask(f));  // the would-be -0 is the one NaN
  // With inf, the quiet NaN has only the top mantissa bit set (0x7E00, 0x7FC0, 0x7E); OCP E4M3's
  // only NaN has every mantissa bit set.
  const uint32_t mantissa = f.has_infinity ? 1u << (f.mantissa_bits - 1) : mantissa_mask(f);
  return with_sign(f, negative, top_exponent(f) | mantissa);
}

uint16_t overflow_bits(const FloatFormatInfo& f, bool negative, Overflow overflow) {
  if (overflow == Overflow::Saturate) return with_sign(f, negative, max_pattern(f));
  return f.has_infinity ? with_sign(f, negative, top_exponent(f)) : nan_bits(f, negative);
}

// The positive pattern nearest to the finite magnitude `mag`, ties to even, as if the exponent
// field were unbounded above; the caller compares it with max_pattern(). std::nearbyint rounds
// ties to even under the default rounding mode (and, unlike rint, raises no inexact flag).
uint32_t round_magnitude(const FloatFormatInfo& f, double mag) {
  if (mag == 0) return 0;  // frexp gives no binade for zero
  int e;
  std::frexp(mag, &e);  // mag in [2^(e-1), 2^e); double subnormals included
  const int exponent = std::max(e - 1, min_normal_exponent(f));
  // Exact: scaling by a power of two; the scaled value lies below 2^(mantissa_bits + 1).
  const double significand = std::nearbyint(std::ldexp(mag, f.mantissa_bits - exponent));
  const auto biased_minus_one = static_cast<uint32_t>(exponent - min_normal_exponent(f));
  return (biased_minus_one << f.mantissa_bits) + static_cast<uint32_t>(significand);
}

bool is_nan_pattern(const FloatFormatInfo& f, uint32_t bits) {
  if (f.fnuz) return bits == sign_mask(f);
  const uint32_t magnitude = bits & (sign_mask(f) - 1);
  if (f.has_infinity) return magnitude > top_exponent(f);
  return magnitude == (top_exponent(f) | mantissa_mask(f));
}

}  // namespace

const FloatFormatInfo& float_format_info(FloatFormat format) { return kFormats[static_cast<size_t>(format)]; }

uint16_t encode_float(FloatFormat format, double value, Overflow overflow) {
  const FloatFormatInfo& f = float_format_info(format);
  const bool negative = std::signbit(value);
  if (std::isnan(value)) return nan_bits(f, negative);  // NaN stays NaN, even when saturating
  if (std::isinf(value)) return overflow_bits(f, negative, overflow);
  const uint32_t magnitude = round_magnitude(f, std::fabs(value));
  if (magnitude > max_pattern(f)) return overflow_bits(f, negative, overflow);
  if (magnitude == 0 && f.fnuz) return 0;  // no negative zero: its pattern is the NaN
  return with_sign(f, negative, magnitude);
}

double decode_float(FloatFormat format, uint16_t bits) {
  const FloatFormatInfo& f = float_format_info(format);
  const uint32_t b = bits & ((sign_mask(f) << 1) - 1);  // only the format's width counts
  if (is_nan_pattern(f, b)) return std::numeric_limits<double>::quiet_NaN();
  const bool negative = b & sign_mask(f);
  const uint32_t magnitude = b & (sign_mask(f) - 1);
  if (f.has_infinity && magnitude == top_exponent(f))
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  // Inverse of round_magnitude: a zero exponent field (subnormal) uses the smallest normal
  // binade's step without the hidden bit.
  const int field = static_cast<int>(magnitude >> f.mantissa_bits);
  const uint32_t significand = (magnitude & mantissa_mask(f)) | (field ? mantissa_mask(f) + 1 : 0);
  const int exponent = std::max(field, 1) - f.bias;
  const double mag = std::ldexp(static_cast<double>(significand), exponent - f.mantissa_bits);
  return negative ? -mag : mag;
}

}  // namespace weft
