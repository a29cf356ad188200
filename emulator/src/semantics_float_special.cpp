// Float VALU ops beyond plain arithmetic, as LLVM emits them for ordinary float code: the helpers
// of the IEEE division macro (v_div_scale, v_div_fmas, v_div_fixup, f32 and f64), f64 reciprocal,
// square root and rounding, frexp, v_ldexp_f64 and the v_cmp_class compares.
//
// The division helpers follow the pseudocode of AMD's ISA guides, with two corrections that the
// macro needs to produce the correctly rounded quotient (the published text is known to be wrong
// there): v_div_fmas scales by 2^64 (f32) / 2^128 (f64), the factor v_div_scale used, upwards
// when the quotient estimate is at least 2 (the denominator was scaled up) and downwards
// otherwise (the numerator was up or the denominator down); v_div_scale_f64 scales a denominator
// above 2^1022 down, not up, when the quotient is denormal (the text's scaling overflows to
// infinity); v_div_fixup turns a NaN estimate for ordinary inputs into the overflowed infinity.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "lanes.h"
#include "semantics.h"

namespace weft::emu {

namespace {

// Encoding facts per format, and the wider format in which a fused multiply-add of it is exact.
template <class T>
struct Format;
template <>
struct Format<float> {
  using Bits = uint32_t;
  using Wide = double;  // a product of two floats is exact in a double
  using WideBits = uint64_t;
  static constexpr int kMantissa = 23, kExponentMax = 255, kBias = 127;
  // v_div_scale: the scale factor and its thresholds (exponent gaps and a tiny numerator).
  static constexpr int kScale = 64, kFarGap = 96, kTinyNumerator = 23, kUnderflowGap = -150;
};
template <>
struct Format<double> {
  using Bits = uint64_t;
  using Wide = __float128;  // 113-bit significand: a product of two doubles is exact
  using WideBits = unsigned __int128;
  static constexpr int kMantissa = 52, kExponentMax = 2047, kBias = 1023;
  static constexpr int kScale = 128, kFarGap = 768, kTinyNumerator = 53, kUnderflowGap = -1075;
};

template <class T>
using BitsOf = typename Format<T>::Bits;

// The biased exponent field (0 for zeros and denormals).
template <class T>
int exponent_field(T x) {
  return static_cast<int>((std::bit_cast<BitsOf<T>>(x) >> Format<T>::kMantissa) & Format<T>::kExponentMax);
}
template <class T>
bool is_denormal(T x) { return std::fpclassify(x) == FP_SUBNORMAL; }
template <class T>
T quieted(T x) { return std::bit_cast<T>(std::bit_cast<BitsOf<T>>(x) | (BitsOf<T>{1} << (Format<T>::kMantissa - 1))); }
// The NaN the hardware writes for 0/0 and inf/inf: negative, quiet, empty payload.
template <class T>
T default_nan() { return -std::numeric_limits<T>::quiet_NaN(); }

// Source i of every lane as T, with VOP3 abs and neg applied to the sign bit.
template <class T>
void float_sources(const Exec& e, const VectorOperands& o, int n, T (*x)[kLanes]) {
  using Bits = BitsOf<T>;
  constexpr Bits sign = Bits{1} << (8 * sizeof(T) - 1);
  for (int i = 0; i < n; ++i) {
    Bits v[kLanes];
    if constexpr (sizeof(T) == 8) read64(e, o.src[i], v, Operand64::F64);
    else read32(e, o.src[i], v);
    const Bits clear = ((o.abs >> i) & 1) ? ~sign : ~Bits{0}, flip = ((o.neg >> i) & 1) ? sign : 0;
    for (int l = 0; l < kLanes; ++l) x[i][l] = std::bit_cast<T>((v[l] & clear) ^ flip);
  }
}

// VOP3 output modifiers: omod scales, clamp limits to [0, 1] (NaN becomes 0).
template <class T>
T output_modified(const VectorOperands& o, T r) {
  static const T scale[] = {1, 2, 4, 0.5};
  r *= scale[o.omod];
  return o.clamp ? std::fmin(std::fmax(r, T{0}), T{1}) : r;
}

// Writes r(l) with output modifiers to vdst (a register pair for f64) in every active lane.
template <class T, class R>
void store_floats(Exec& e, const VectorOperands& o, R&& r) {
  if constexpr (sizeof(T) == 8) {
    store64(e, o.vdst, [&](int l) { return std::bit_cast<uint64_t>(output_modified<T>(o, r(l))); });
  } else {
    uint32_t* d = e.w.vreg(o.vdst);
    each_lane(e, [&](int l) { d[l] = std::bit_cast<uint32_t>(output_modified<T>(o, r(l))); });
  }
}

template <class T, T (*F)(T)>
void unary_op(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  T x[1][kLanes];
  float_sources<T>(e, o, 1, x);
  store_floats<T>(e, o, [&](int l) { return F(x[0][l]); });
}

double rcp_d(double a) { return 1.0 / a; }
double rsq_d(double a) { return 1.0 / std::sqrt(a); }
double sqrt_d(double a) { return std::sqrt(a); }
double trunc_d(double a) { return std::trunc(a); }
double floor_d(double a) { return std::floor(a); }
double ceil_d(double a) { return std::ceil(a); }
double rndne_d(double a) { return __builtin_roundeven(a); }  // ties to even in every MODE
// OpenCL's fract, which v_fract implements: the largest value below 1 stands in for a fraction
// that rounds up to 1 (fract(-tiny)); NaN and infinities give NaN.
double fract_d(double a) {
  const double f = a - std::floor(a);
  return std::isnan(f) ? f : std::fmin(f, 0x1.fffffffffffffp-1);
}
// frexp's mantissa in [0.5, 1) with the input's sign; infinities and NaN pass through.
template <class T>
T frexp_mant(T a) {
  int unused;
  return std::isfinite(a) ? std::frexp(a, &unused) : a;
}

// v_frexp_exp_i32: frexp's exponent; 0 for infinities and NaN.
template <class T>
void v_frexp_exp(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  T x[1][kLanes];
  float_sources<T>(e, o, 1, x);
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) {
    int exp = 0;
    if (std::isfinite(x[0][l])) std::frexp(x[0][l], &exp);
    d[l] = static_cast<uint32_t>(exp);
  });
}

// v_ldexp_f64: src0 * 2^src1, src1 a signed 32-bit integer.
void v_ldexp_f64(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  double x[1][kLanes];
  float_sources<double>(e, o, 1, x);
  uint32_t room[kLanes];
  const uint32_t* n = source_lanes(e, o, 1, room);
  store_floats<double>(e, o, [&](int l) { return std::ldexp(x[0][l], static_cast<int32_t>(n[l])); });
}

// ---- the division macro ----

// v_div_scale(s0, den, num): s0 (den or num) scaled by 2^±kScale when the division would meet
// denormals in its Newton-Raphson steps; `post` says the quotient needs scaling back by div_fmas.
template <class T>
T div_scale(T s0, T den, T num, bool& post) {
  using F = Format<T>;
  post = false;
  if (num == 0 || den == 0) return std::numeric_limits<T>::quiet_NaN();
  const T up = std::ldexp(s0, F::kScale);
  if (exponent_field(num) - exponent_field(den) >= F::kFarGap) {  // quotient near the largest value
    post = true;
    return s0 == den ? up : s0;
  }
  if (is_denormal(den)) return up;
  const bool tiny_rcp = is_denormal(1.0 / static_cast<double>(den)), tiny_quotient = is_denormal(num / den);
  if (tiny_rcp && tiny_quotient) {  // f64 only: the text scales den up here, to infinity; down is what works
    post = true;
    return s0 == den ? std::ldexp(s0, -F::kScale) : s0;
  }
  if (tiny_rcp) return std::ldexp(s0, -F::kScale);
  if (tiny_quotient) {
    post = true;
    return s0 == num ? up : s0;
  }
  return exponent_field(num) <= F::kTinyNumerator ? up : s0;
}

// Rounds s + err (the exact value, err the rounding error of s) to odd: truncated toward zero,
// lowest bit set when inexact. Rounding that once more to a narrower format is then correct.
template <class W, class WB>
W round_to_odd(W s, W err) {
  if (err == 0 || err != err) return s;  // exact, or s is infinite
  WB bits = std::bit_cast<WB>(s);
  if ((err < 0) != (s < 0)) --bits;  // s lies beyond the exact value: one step toward zero
  return std::bit_cast<W>(bits | 1);
}

// fma(a, b, c) * 2^scale rounded once to T, also when the result is denormal: the sum is formed
// exactly (a product exact in the wide format, then Knuth's two-sum) and rounded to odd first.
template <class T>
T scaled_fma(T a, T b, T c, int scale) {
  using W = typename Format<T>::Wide;
  const W p = static_cast<W>(a) * static_cast<W>(b), wc = static_cast<W>(c);
  const W s = p + wc, pv = s - wc;
  const W err = (p - pv) + (wc - (s - pv));
  const W odd = round_to_odd<W, typename Format<T>::WideBits>(s, err);
  return static_cast<T>(odd * static_cast<W>(std::ldexp(1.0, scale)));
}

template <class T>
T div_fmas(T a, T b, T c, bool post) {
  if (!post) return std::fma(a, b, c);
  const int scale = exponent_field(c) > Format<T>::kBias ? Format<T>::kScale : -Format<T>::kScale;
  return scaled_fma(a, b, c, scale);
}

// v_div_fixup(q, den, num): the special cases of num / den, else q with the quotient's sign.
template <class T>
T div_fixup(T q, T den, T num) {
  const bool negative = std::signbit(den) != std::signbit(num);
  const T inf = negative ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  const T zero = negative ? T{-0.0} : T{0.0};
  if (std::isnan(num)) return quieted(num);
  if (std::isnan(den)) return quieted(den);
  if ((den == 0 && num == 0) || (std::isinf(den) && std::isinf(num))) return default_nan<T>();
  if (den == 0 || std::isinf(num)) return inf;
  if (std::isinf(den) || num == 0) return zero;
  if (exponent_field(num) - exponent_field(den) < Format<T>::kUnderflowGap) return zero;  // below half the least denormal
  if (std::isnan(q)) return inf;
  return negative ? -std::fabs(q) : std::fabs(q);
}

// VOP3b: the abs field holds sdst, so only neg applies; the flag goes to sdst (VCC or an SGPR
// pair), its inactive lanes kept as the carry-out ops keep them.
template <class T>
void v_div_scale(Exec& e, const Inst&) {
  VectorOperands o = e.step->vop;
  o.abs = 0;
  T x[3][kLanes];
  float_sources<T>(e, o, 3, x);
  T r[kLanes];
  uint64_t flags = 0;
  each_lane(e, [&](int l) {
    bool post;
    r[l] = div_scale(x[0][l], x[1][l], x[2][l], post);
    flags |= uint64_t{post} << l;
  });
  store_floats<T>(e, o, [&](int l) { return r[l]; });
  e.set_scalar64(o.sdst, (e.scalar64(o.sdst) & ~e.w.exec()) | flags);
}

// v_div_fmas reads VCC in both encodings.
template <class T>
void v_div_fmas(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  T x[3][kLanes];
  float_sources<T>(e, o, 3, x);
  const uint64_t vcc = e.w.vcc();
  store_floats<T>(e, o, [&](int l) { return div_fmas(x[0][l], x[1][l], x[2][l], (vcc >> l) & 1); });
}

template <class T>
void v_div_fixup(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  T x[3][kLanes];
  float_sources<T>(e, o, 3, x);
  store_floats<T>(e, o, [&](int l) { return div_fixup(x[0][l], x[1][l], x[2][l]); });
}

// ---- class compares ----

// The v_cmp_class mask bit of a value of `Bits` bits with `Mantissa` fraction bits: 0 signaling
// NaN, 1 quiet NaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf.
template <int Bits, int Mantissa>
int class_bit(uint64_t v) {
  const uint64_t fraction = v & ((uint64_t{1} << Mantissa) - 1);
  const uint64_t exp = (v >> Mantissa) & ((uint64_t{1} << (Bits - 1 - Mantissa)) - 1);
  const uint64_t exp_max = (uint64_t{1} << (Bits - 1 - Mantissa)) - 1;
  const bool negative = (v >> (Bits - 1)) & 1;
  if (exp == exp_max && fraction) return (fraction >> (Mantissa - 1)) ? 1 : 0;
  const int positive_class = exp == exp_max ? 9 : exp ? 8 : fraction ? 7 : 6;
  return negative ? 11 - positive_class : positive_class;  // the negative classes mirror the positive ones
}

// The tested value's bits with abs / neg applied (VOP3); f16 takes the low half.
template <int Bits>
void class_values(const Exec& e, const VectorOperands& o, uint64_t* v) {
  if constexpr (Bits == 64) read64(e, o.src[0], v, Operand64::F64);
  else {
    uint32_t x[kLanes];
    read32(e, o.src[0], x);
    for (int l = 0; l < kLanes; ++l) v[l] = Bits == 16 ? (x[l] & 0xffff) : x[l];
  }
  const uint64_t sign = uint64_t{1} << (Bits - 1);
  const uint64_t clear = (o.abs & 1) ? ~sign : ~uint64_t{0}, flip = (o.neg & 1) ? sign : 0;
  for (int l = 0; l < kLanes; ++l) v[l] = (v[l] & clear) ^ flip;
}

// Lane l's result is the bit of the value's class in the mask src1[l]; e32 writes VCC, e64 the
// SGPR pair it names; cmpx also writes EXEC. Inactive lanes read 0, as in the other compares.
template <int Bits, int Mantissa, bool X>
void v_cmp_class(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint64_t v[kLanes];
  class_values<Bits>(e, o, v);
  uint32_t room[kLanes];
  const uint32_t* classes = source_lanes(e, o, 1, room);
  uint64_t mask = 0;
  each_lane(e, [&](int l) { mask |= uint64_t{(classes[l] >> class_bit<Bits, Mantissa>(v[l])) & 1} << l; });
  e.set_scalar64(o.vdst, mask);  // VCC, or the SGPR pair of VOP3 / SDWA (see v_cmp)
  if (X) e.w.set_exec(mask);
}

}  // namespace

void register_float_special_semantics(SemanticsTable& t) {
  struct Op { const char* name; Handler h; };
  const Op ops[] = {
      {"v_rcp_f64", unary_op<double, rcp_d>}, {"v_rsq_f64", unary_op<double, rsq_d>},
      {"v_sqrt_f64", unary_op<double, sqrt_d>}, {"v_trunc_f64", unary_op<double, trunc_d>},
      {"v_floor_f64", unary_op<double, floor_d>}, {"v_ceil_f64", unary_op<double, ceil_d>},
      {"v_rndne_f64", unary_op<double, rndne_d>}, {"v_fract_f64", unary_op<double, fract_d>},
      {"v_frexp_mant_f64", unary_op<double, frexp_mant<double>>}, {"v_frexp_mant_f32", unary_op<float, frexp_mant<float>>},
      {"v_frexp_exp_i32_f64", v_frexp_exp<double>}, {"v_frexp_exp_i32_f32", v_frexp_exp<float>},
      {"v_ldexp_f64", v_ldexp_f64},
      {"v_div_scale_f32", v_div_scale<float>}, {"v_div_scale_f64", v_div_scale<double>},
      {"v_div_fmas_f32", v_div_fmas<float>}, {"v_div_fmas_f64", v_div_fmas<double>},
      {"v_div_fixup_f32", v_div_fixup<float>}, {"v_div_fixup_f64", v_div_fixup<double>},
      {"v_cmp_class_f32", v_cmp_class<32, 23, false>}, {"v_cmpx_class_f32", v_cmp_class<32, 23, true>},
      {"v_cmp_class_f64", v_cmp_class<64, 52, false>}, {"v_cmpx_class_f64", v_cmp_class<64, 52, true>},
      {"v_cmp_class_f16", v_cmp_class<16, 10, false>}, {"v_cmpx_class_f16", v_cmp_class<16, 10, true>},
  };
  // VOP1/VOPC opcodes are named with their encoding suffix, VOP3-only ones without.
  for (const auto& [name, h] : ops) {
    t[name] = h;
    t[std::string(name) + "_e32"] = h;
    t[std::string(name) + "_e64"] = h;
  }
}

}  // namespace weft::emu
