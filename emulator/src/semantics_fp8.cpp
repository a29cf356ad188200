// The fp8 conversions of the VALU (CDNA3 and CDNA4 ISA guides, "FP8 and BF8 conversions"):
//
//   v_cvt_f32_fp8, v_cvt_f32_bf8        D = float(S0.byte[0]); SDWA's src0_sel picks another
//                                       byte (sdwa.cpp moves it to byte 0 around this handler)
//   v_cvt_pk_f32_fp8, v_cvt_pk_f32_bf8  D[0] = float(S0.byte[0]), D[1] = float(S0.byte[1]);
//                                       SDWA's WORD_1 picks bytes 2 and 3
//   v_cvt_pk_fp8_f32, v_cvt_pk_bf8_f32  D.word[op_sel[3]] = {fp8(S1), fp8(S0)}, the other word
//                                       kept; VOP3 neg/abs apply to S0 and S1
//
// "fp8" is E4M3 and "bf8" E5M2. The same opcodes convert the fnuz formats on gfx942 (bias 8 and
// 16, 0x80 the only NaN, no negative zero, no infinity) and the OCP formats on gfx950 (bias 7
// and 15; E4M3's only NaNs are S.1111.111 and it has no infinity, E5M2 is IEEE-like).
// Conversions from fp8 are exact. Conversions to fp8 round to nearest even (whatever MODE's
// round mode says) and do not saturate: a value whose rounded magnitude is beyond the largest
// finite one, or an infinity, becomes infinity (OCP E5M2) or NaN (0x7F/0xFF for OCP E4M3, 0x80
// for fnuz), as on hardware; LLVM 22 rejects the clamp bit on these opcodes for gfx942/gfx950.
// The guides leave NaN payloads open: a NaN converts to the format's quiet NaN with the input's
// sign (0x7F / 0x7E, sign bit added; fnuz 0x80), and an fp8 NaN to float 0x7FC00000.
//
// This is weft's emulator's own reading of the ISA, written apart from the DSL's host
// converters (dsl/float_formats.h) so that tests can compare the two.
#include <cmath>

#include "lanes.h"
#include "semantics.h"

namespace weft::emu {
namespace {

struct Fp8Format {
  int exponent_bits, mantissa_bits, bias;
  bool fnuz;
};

Fp8Format format_of(Arch arch, bool bf8) {
  const bool fnuz = arch == Arch::Gfx942;
  if (bf8) return {5, 2, fnuz ? 16 : 15, fnuz};
  return {4, 3, fnuz ? 8 : 7, fnuz};
}

constexpr uint32_t kF32QuietNaN = 0x7FC00000;

uint32_t fp8_nan(const Fp8Format& f, uint32_t sign) {
  if (f.fnuz) return 0x80;
  return (sign << 7) | (f.exponent_bits == 4 ? 0x7F : 0x7E);
}

// What an overflow or an infinity becomes without saturation.
uint32_t fp8_overflow(const Fp8Format& f, uint32_t sign) {
  if (!f.fnuz && f.exponent_bits == 5) return (sign << 7) | 0x7C;  // infinity
  return fp8_nan(f, sign);
}

// The float32 bits of an fp8 byte, exactly.
uint32_t fp8_to_f32(const Fp8Format& f, uint32_t byte) {
  const int m = f.mantissa_bits;
  const uint32_t sign = (byte & 0x80) << 24;
  const uint32_t magnitude = byte & 0x7F;
  const int field = static_cast<int>(magnitude >> m);
  uint32_t mantissa = magnitude & ((1u << m) - 1);
  const int top = (1 << f.exponent_bits) - 1;
  if (f.fnuz && byte == 0x80) return kF32QuietNaN;
  if (!f.fnuz && f.exponent_bits == 5 && field == top) return mantissa ? kF32QuietNaN : sign | 0x7F800000;
  if (!f.fnuz && f.exponent_bits == 4 && magnitude == 0x7F) return kF32QuietNaN;
  if (magnitude == 0) return sign;
  int exponent = field - f.bias;
  if (field == 0) {  // subnormal: normalize until the hidden bit is set
    exponent = 1 - f.bias;
    while (!(mantissa & (1u << m))) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= (1u << m) - 1;
  }
  return sign | static_cast<uint32_t>(exponent + 127) << 23 | mantissa << (23 - m);
}

// An fp8 byte nearest to the float32 bits `x`, rounding to nearest even, without saturation.
uint32_t f32_to_fp8(const Fp8Format& f, uint32_t x) {
  const int m = f.mantissa_bits;
  const uint32_t sign = x >> 31;
  const uint32_t magnitude = x & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return fp8_nan(f, sign);
  if (magnitude == 0x7F800000) return fp8_overflow(f, sign);
  const uint32_t zero = f.fnuz ? 0 : sign << 7;
  // float32 subnormals are below 2^-126, far under half of fp8's smallest subnormal.
  if ((magnitude >> 23) == 0) return zero;
  const int exponent = static_cast<int>(magnitude >> 23) - 127;  // value = significand * 2^(exponent - 23)
  const uint32_t significand = (magnitude & 0x7FFFFF) | 0x800000;
  const int min_exponent = 1 - f.bias;
  int result_exponent = exponent < min_exponent ? min_exponent : exponent;
  const int shift = 23 - m + (result_exponent - exponent);
  if (shift > 25) return zero;  // below half the smallest subnormal
  uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1))) ++kept;
  uint32_t field, mantissa;
  if (kept < (1u << m)) {  // subnormal (or zero)
    if (kept == 0) return zero;
    field = 0;
    mantissa = kept;
  } else {
    if (kept == (2u << m)) {  // rounded up into the next binade
      kept >>= 1;
      ++result_exponent;
    }
    field = static_cast<uint32_t>(result_exponent + f.bias);
    mantissa = kept - (1u << m);
  }
  const uint32_t top = (1u << f.exponent_bits) - 1;
  const bool too_large = f.fnuz ? field > top
                                : f.exponent_bits == 5 ? field >= top : field > top || (field == top && mantissa == (1u << m) - 1);
  if (too_large) return fp8_overflow(f, sign);
  return (sign << 7) | field << m | mantissa;
}

template <bool Bf8>
void v_cvt_f32_fp8(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const Fp8Format f = format_of(e.prog.arch, Bf8);
  uint32_t room[kLanes], r[kLanes];
  const uint32_t* s = source_lanes(e, o, 0, room);
  for (int l = 0; l < kLanes; ++l) r[l] = fp8_to_f32(f, s[l] & 0xFF);
  if (o.clamp || o.omod)
    for (int l = 0; l < kLanes; ++l) r[l] = as_u(output_modifiers(o, as_f(r[l])));
  store_active(e, e.w.vreg(o.vdst), r);
}

template <bool Bf8>
void v_cvt_pk_f32_fp8(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const Fp8Format f = format_of(e.prog.arch, Bf8);
  uint32_t room[kLanes];
  const uint32_t* s = source_lanes(e, o, 0, room);
  store64(e, o.vdst, [&](int l) {
    uint32_t lo = fp8_to_f32(f, s[l] & 0xFF), hi = fp8_to_f32(f, (s[l] >> 8) & 0xFF);
    if (o.clamp || o.omod) {
      lo = as_u(output_modifiers(o, as_f(lo)));
      hi = as_u(output_modifiers(o, as_f(hi)));
    }
    return uint64_t{hi} << 32 | lo;
  });
}

template <bool Bf8>
void v_cvt_pk_fp8_f32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const Fp8Format f = format_of(e.prog.arch, Bf8);
  uint32_t room[2][kLanes];
  const uint32_t* a = float_lanes(e, o, 0, room[0]);
  const uint32_t* b = float_lanes(e, o, 1, room[1]);
  const bool high = (o.opsel >> 3) & 1;
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) {
    const uint32_t word = f32_to_fp8(f, a[l]) | f32_to_fp8(f, b[l]) << 8;
    d[l] = high ? (d[l] & 0xFFFF) | word << 16 : (d[l] & 0xFFFF0000u) | word;
  });
}

}  // namespace

void register_fp8_semantics(SemanticsTable& t) {
  for (const char* suffix : {"_e32", "_e64"}) {
    const std::string s = suffix;
    t["v_cvt_f32_fp8" + s] = v_cvt_f32_fp8<false>;
    t["v_cvt_f32_bf8" + s] = v_cvt_f32_fp8<true>;
    t["v_cvt_pk_f32_fp8" + s] = v_cvt_pk_f32_fp8<false>;
    t["v_cvt_pk_f32_bf8" + s] = v_cvt_pk_f32_fp8<true>;
  }
  t["v_cvt_pk_fp8_f32"] = v_cvt_pk_fp8_f32<false>;
  t["v_cvt_pk_bf8_f32"] = v_cvt_pk_fp8_f32<true>;
}

}  // namespace weft::emu
