// One table-driven implementation for every narrow format: a value is rounded on the grid of
// its binade (or the subnormal grid) with nearbyint, which rounds ties to even under the
// default rounding mode. All arithmetic is exact in double: every narrow value and every
// grid step is a power of two times a small integer.
#include "weft/dsl/float_formats.h"

#include <array>
#include <cmath>
#include <limits>

namespace weft {
namespace {

// max_finite = (2 - 2^-m) * 2^(emax) for IEEE-like formats; OCP E4M3 reserves only the
// all-ones mantissa of the top exponent (max 1.75 * 2^8 = 448); fnuz formats use the whole
// top exponent (e4m3fnuz: 1.875 * 2^7 = 240, e5m2fnuz: 1.75 * 2^15 = 57344).
constexpr std::array<FloatFormatInfo, 6> kFormats{{
    {"float16", 5, 10, 15, true, false, 65504.0},
    {"bfloat16", 8, 7, 127, true, false, 3.3895313892515355e38},
    {"float8_e4m3", 4, 3, 7, false, false, 448.0},
    {"float8_e5m2", 5, 2, 15, true, false, 57344.0},
    {"float8_e4m3fnuz", 4, 3, 8, false, true, 240.0},
    {"float8_e5m2fnuz", 5, 2, 16, false, true, 57344.0},
}};

int total_bits(const FloatFormatInfo& f) { return 1 + f.exponent_bits + f.mantissa_bits; }
uint16_t sign_bit(const FloatFormatInfo& f) { return static_cast<uint16_t>(1u << (total_bits(f) - 1)); }
// Smallest normal exponent: 1 - bias for IEEE-like formats (fnuz as well).
int min_exponent(const FloatFormatInfo& f) { return 1 - f.bias; }

uint16_t nan_bits(const FloatFormatInfo& f, bool negative) {
  if (f.fnuz) return 0x80;
  const uint16_t exp_all = static_cast<uint16_t>(((1u << f.exponent_bits) - 1) << f.mantissa_bits);
  // Quiet NaN: top mantissa bit set; OCP E4M3's only NaN has every mantissa bit set.
  uint16_t mant = f.has_infinity ? static_cast<uint16_t>(1u << (f.mantissa_bits - 1))
                                 : static_cast<uint16_t>((1u << f.mantissa_bits) - 1);
  return static_cast<uint16_t>((negative ? sign_bit(f) : 0) | exp_all | mant);
}

uint16_t inf_bits(const FloatFormatInfo& f, bool negative) {
  const uint16_t exp_all = static_cast<uint16_t>(((1u << f.exponent_bits) - 1) << f.mantissa_bits);
  return static_cast<uint16_t>((negative ? sign_bit(f) : 0) | exp_all);
}

// The pattern of a finite magnitude that is already on the format's grid and <= max_finite.
uint16_t encode_magnitude(const FloatFormatInfo& f, double mag) {
  if (mag == 0) return 0;
  int e;
  std::frexp(mag, &e);  // mag = frac * 2^e, frac in [0.5, 1)
  int exponent = e - 1;
  if (exponent < min_exponent(f)) {  // subnormal: exponent field 0
    return static_cast<uint16_t>(std::ldexp(mag, f.mantissa_bits - min_exponent(f)));
  }
  auto field = static_cast<uint16_t>(exponent + f.bias);
  auto mant = static_cast<uint16_t>(std::ldexp(mag, f.mantissa_bits - exponent) - std::ldexp(1.0, f.mantissa_bits));
  return static_cast<uint16_t>((field << f.mantissa_bits) | mant);
}

// Rounds a finite magnitude to the nearest grid value (ties to even); may exceed max_finite.
double round_magnitude(const FloatFormatInfo& f, double mag) {
  if (mag == 0) return 0;
  int e;
  std::frexp(mag, &e);
  int exponent = std::max(e - 1, min_exponent(f));
  double step = std::ldexp(1.0, exponent - f.mantissa_bits);
  return std::nearbyint(mag / step) * step;
}

}  // namespace

const FloatFormatInfo& float_format_info(FloatFormat format) { return kFormats[static_cast<size_t>(format)]; }

uint16_t encode_float(FloatFormat format, double value, Overflow overflow) {
  const FloatFormatInfo& f = float_format_info(format);
  const bool negative = std::signbit(value);
  if (std::isnan(value)) return nan_bits(f, negative);
  double mag = std::isinf(value) ? std::numeric_limits<double>::infinity() : round_magnitude(f, std::fabs(value));
  uint16_t sign = negative ? sign_bit(f) : 0;
  if (mag > f.max_finite) {
    if (overflow == Overflow::Saturate) return static_cast<uint16_t>(sign | encode_magnitude(f, f.max_finite));
    return f.has_infinity ? inf_bits(f, negative) : nan_bits(f, negative);
  }
  if (mag == 0 && f.fnuz) return 0;  // no negative zero: 0x80 is NaN
  return static_cast<uint16_t>(sign | encode_magnitude(f, mag));
}

double decode_float(FloatFormat format, uint16_t bits) {
  const FloatFormatInfo& f = float_format_info(format);
  bits = static_cast<uint16_t>(bits & ((1u << total_bits(f)) - 1));
  const bool negative = bits & sign_bit(f);
  const int field = (bits >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int mant = bits & ((1 << f.mantissa_bits) - 1);
  const int top = (1 << f.exponent_bits) - 1;
  if (f.fnuz && bits == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (f.has_infinity && field == top)
    return mant ? std::numeric_limits<double>::quiet_NaN() : (negative ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
  if (!f.has_infinity && !f.fnuz && field == top && mant == (1 << f.mantissa_bits) - 1)
    return std::numeric_limits<double>::quiet_NaN();  // OCP E4M3
  double mag = field == 0 ? std::ldexp(mant, min_exponent(f) - f.mantissa_bits)
                          : std::ldexp(mant + (1 << f.mantissa_bits), field - f.bias - f.mantissa_bits);
  return negative ? -mag : mag;
}

}  // namespace weft
