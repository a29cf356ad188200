// Exact host conversions between double and the narrow floating-point formats weft's kernels
// use. Every conversion to a narrow format rounds to nearest, ties to even, including into the
// subnormal range; conversions from a narrow format to double are exact.
#pragma once

#include <cstdint>

namespace weft {

// The narrow formats. Field widths and special values:
//   Float16      IEEE binary16: 1.5.10, bias 15, inf and NaN.
//   BFloat16     1.8.7, bias 127, inf and NaN (the top half of a float32).
//   Fp8E4M3      OCP E4M3 ("e4m3fn", CDNA4 and Hopper): 1.4.3, bias 7, no inf,
//                NaN = S.1111.111, max 448.
//   Fp8E5M2      OCP E5M2 (CDNA4 and Hopper): 1.5.2, bias 15, inf and NaN, max 57344.
//   Fp8E4M3Fnuz  CDNA3 E4M3: 1.4.3, bias 8, no inf, no -0, the one NaN is 0x80, max 240.
//   Fp8E5M2Fnuz  CDNA3 E5M2: 1.5.2, bias 16, no inf, no -0, the one NaN is 0x80, max 57344.
enum class FloatFormat : uint8_t { Float16, BFloat16, Fp8E4M3, Fp8E5M2, Fp8E4M3Fnuz, Fp8E5M2Fnuz };

// What happens to a finite value whose rounded magnitude exceeds the largest finite value.
//   NonFinite: it becomes inf where the format has inf, otherwise NaN (IEEE behaviour; what
//              torch's .to(float8_e4m3fn) does).
//   Saturate:  it becomes the largest finite value of that sign (CUDA's __NV_SATFINITE, PTX's
//              .satfinite; what a cast to fp8 does in a kernel). Infinite inputs saturate
//              too; NaN stays NaN.
enum class Overflow : uint8_t { NonFinite, Saturate };

// The format's bit pattern (in the low 8 or 16 bits) nearest to `value`.
// NaN inputs give the format's canonical quiet NaN with the input's sign where the format has
// signed NaNs (0x7E00 / 0x7FC0 / 0x7F / 0x7E for positive fp16 / bf16 / e4m3 / e5m2, the sign
// bit added for negative ones), 0x80 for fnuz, whichever overflow mode is asked for.
// -0.0 gives the negative zero pattern, except for fnuz formats where it gives +0 (0x00).
uint16_t encode_float(FloatFormat format, double value, Overflow overflow = Overflow::NonFinite);

// The exact value of a bit pattern of `format` (only the low 8 or 16 bits are read).
double decode_float(FloatFormat format, uint16_t bits);

// Field layout of a format, for code that needs it (renderers, the emulator).
struct FloatFormatInfo {
  const char* name;     // e.g. "float8_e4m3fnuz"
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;
  bool fnuz;            // NaN is the single pattern 0x80 and there is no negative zero
  double max_finite;
};
const FloatFormatInfo& float_format_info(FloatFormat format);

// Convenience wrappers for the common cases.
inline uint16_t float_to_half(float v) { return encode_float(FloatFormat::Float16, v); }
inline float half_to_float(uint16_t h) { return static_cast<float>(decode_float(FloatFormat::Float16, h)); }
inline uint16_t float_to_bf16(float v) { return encode_float(FloatFormat::BFloat16, v); }
inline float bf16_to_float(uint16_t b) { return static_cast<float>(decode_float(FloatFormat::BFloat16, b)); }

}  // namespace weft
