// 16-bit and 64-bit VALU: f16 and u16/i16 arithmetic with op_sel, packed f16 and f32 math
// (VOP3P, with op_sel/op_sel_hi/neg_lo/neg_hi), f64 arithmetic and conversions.
//
// gfx9 rule for 16-bit results (LLVM's GCNSubtarget::zeroesHigh16BitsOfDest): most 16-bit ops
// write the low half and zero the high half; v_mac/fmac/madak/madmk_f16 keep the high half; a
// VOP3 op_sel destination bit writes the high half and keeps the low one.
#include <algorithm>
#include <bit>
#include <cmath>

#include "lanes.h"
#include "semantics.h"

namespace weft::emu {

namespace {

float h2f(uint32_t bits) { return static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(bits))); }
uint32_t f2h(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
// f16 results of fused operations are computed in double and rounded once to f16 (exact for
// products; the sum is exact unless the operands' exponents are extremely far apart).
uint32_t d2h(double d) { return std::bit_cast<uint16_t>(static_cast<_Float16>(d)); }

// The 16-bit value of source i for each lane: its low or high half (VOP3 op_sel), with VOP3 neg
// and abs applied to f16 sign bits when `is_float`.
void half_sources(const Exec& e, const VectorOperands& o, int n, bool is_float, uint32_t (*h)[kLanes]) {
  for (int i = 0; i < n; ++i) {
    uint32_t room[kLanes];
    const uint32_t* p = source_lanes(e, o, i, room);
    const uint32_t shift = ((o.opsel >> i) & 1) ? 16 : 0;
    const uint32_t clear = is_float && ((o.abs >> i) & 1) ? 0x7fffu : 0xffffu;
    const uint32_t flip = is_float && ((o.neg >> i) & 1) ? 0x8000u : 0;
    for (int l = 0; l < kLanes; ++l) h[i][l] = (((p[l] >> shift) & 0xffff) & clear) ^ flip;
  }
}

// Writes 16-bit results by the gfx9 rule above.
void store_half(Exec& e, const VectorOperands& o, const uint32_t* r, bool keeps_high) {
  uint32_t* d = e.w.vreg(o.vdst);
  const bool high = (o.opsel >> 3) & 1;
  each_lane(e, [&](int l) {
    if (high) d[l] = (d[l] & 0xffff) | (r[l] << 16);
    else d[l] = keeps_high ? (d[l] & 0xffff0000u) | r[l] : r[l];
  });
}

template <uint32_t (*F)(uint32_t, uint32_t, uint32_t), int N, bool Float>
void half_op(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t h[3][kLanes] = {};
  half_sources(e, o, N, Float, h);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = F(h[0][l], h[1][l], h[2][l]) & 0xffff;
  if (Float && o.clamp)
    for (int l = 0; l < kLanes; ++l) r[l] = f2h(std::fmin(std::fmax(h2f(r[l]), 0.0f), 1.0f));
  store_half(e, o, r, false);
}

uint32_t add_h(uint32_t a, uint32_t b, uint32_t) { return f2h(h2f(a) + h2f(b)); }
uint32_t sub_h(uint32_t a, uint32_t b, uint32_t) { return f2h(h2f(a) - h2f(b)); }
uint32_t subrev_h(uint32_t a, uint32_t b, uint32_t) { return f2h(h2f(b) - h2f(a)); }
uint32_t mul_h(uint32_t a, uint32_t b, uint32_t) { return f2h(h2f(a) * h2f(b)); }
uint32_t max_h(uint32_t a, uint32_t b, uint32_t) { return f2h(std::fmax(h2f(a), h2f(b))); }
uint32_t min_h(uint32_t a, uint32_t b, uint32_t) { return f2h(std::fmin(h2f(a), h2f(b))); }
uint32_t fma_h(uint32_t a, uint32_t b, uint32_t c) {
  return d2h(std::fma(static_cast<double>(h2f(a)), static_cast<double>(h2f(b)), static_cast<double>(h2f(c))));
}
// v_div_fixup_f16(q, den, num), the last step of llc's f16 division: the special cases of
// num / den (AMD's V_DIV_FIXUP_F16 pseudocode: a NaN operand quieted, numerator first; 0/0 and
// inf/inf the default NaN; x/0 and inf/x infinity; x/inf and 0/x zero), else q with the
// quotient's sign.
uint32_t div_fixup_h(uint32_t q, uint32_t den, uint32_t num) {
  const uint32_t sign = (den ^ num) & 0x8000;
  const auto is_nan = [](uint32_t h) { return (h & 0x7fff) > 0x7c00; };
  const auto is_inf = [](uint32_t h) { return (h & 0x7fff) == 0x7c00; };
  const auto is_zero = [](uint32_t h) { return (h & 0x7fff) == 0; };
  if (is_nan(num)) return num | 0x200;
  if (is_nan(den)) return den | 0x200;
  if ((is_zero(den) && is_zero(num)) || (is_inf(den) && is_inf(num))) return 0x7e00;
  if (is_zero(den) || is_inf(num)) return sign | 0x7c00;
  if (is_inf(den) || is_zero(num)) return sign;
  return sign | (q & 0x7fff);
}
uint32_t add_u16(uint32_t a, uint32_t b, uint32_t) { return a + b; }
uint32_t sub_u16(uint32_t a, uint32_t b, uint32_t) { return a - b; }
uint32_t subrev_u16(uint32_t a, uint32_t b, uint32_t) { return b - a; }
uint32_t mul_lo_u16(uint32_t a, uint32_t b, uint32_t) { return a * b; }
uint32_t lshlrev_b16(uint32_t a, uint32_t b, uint32_t) { return b << (a & 15); }
uint32_t lshrrev_b16(uint32_t a, uint32_t b, uint32_t) { return b >> (a & 15); }
uint32_t ashrrev_i16(uint32_t a, uint32_t b, uint32_t) { return static_cast<uint32_t>(static_cast<int16_t>(b) >> (a & 15)); }
uint32_t max_u16(uint32_t a, uint32_t b, uint32_t) { return std::max(a, b); }
uint32_t min_u16(uint32_t a, uint32_t b, uint32_t) { return std::min(a, b); }
uint32_t max_i16(uint32_t a, uint32_t b, uint32_t) { return static_cast<int16_t>(a) > static_cast<int16_t>(b) ? a : b; }
uint32_t min_i16(uint32_t a, uint32_t b, uint32_t) { return static_cast<int16_t>(a) < static_cast<int16_t>(b) ? a : b; }

// v_mac_f16: d.lo = a * b + d.lo, the high half kept.
void v_mac_f16(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t h[3][kLanes] = {};
  half_sources(e, o, 2, true, h);
  const uint32_t* d = e.w.vreg(o.vdst);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = fma_h(h[0][l], h[1][l], d[l] & 0xffff);
  store_half(e, o, r, true);
}

// v_cvt_f32_f16 with op_sel: the source's high half when bit 0 is set.
void v_cvt_f32_f16(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t h[3][kLanes] = {};
  half_sources(e, o, 1, true, h);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = std::bit_cast<uint32_t>(h2f(h[0][l]));
  store_active(e, e.w.vreg(o.vdst), r);
}

// v_bitop3_b16 (gfx950; lanes.h's bitop3) on the halves op_sel picks, written by the gfx9 rule.
void v_bitop3_b16(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t h[3][kLanes] = {};
  half_sources(e, o, 3, false, h);  // the neg/abs fields hold the table: no float modifiers
  const uint32_t table = bitop3_table(o);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = bitop3(table, h[0][l], h[1][l], h[2][l]) & 0xffff;
  store_half(e, o, r, false);
}

// v_pack_b32_f16: d = src0.half | src1.half << 16 (halves chosen by op_sel).
void v_pack_b32_f16(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t h[3][kLanes] = {};
  half_sources(e, o, 2, true, h);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = h[0][l] | (h[1][l] << 16);
  store_active(e, e.w.vreg(o.vdst), r);
}

// v_cvt_pkrtz_f16_f32: two f32 to f16, rounding toward zero.
uint32_t f2h_rtz(float f) {
  const uint32_t rounded = f2h(f);
  const float back = h2f(rounded);
  if (std::isnan(f) || std::isinf(f) || std::fabs(back) <= std::fabs(f)) return rounded;
  return rounded - 1;  // one step toward zero (same sign, smaller magnitude)
}
void v_cvt_pkrtz_f16_f32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[2][kLanes];
  const uint32_t* a = float_lanes(e, o, 0, room[0]);
  const uint32_t* b = float_lanes(e, o, 1, room[1]);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = f2h_rtz(as_f(a[l])) | (f2h_rtz(as_f(b[l])) << 16);
  store_active(e, e.w.vreg(o.vdst), r);
}

// v_cvt_pk_f16_f32 (gfx950): two f32 to f16, rounding to nearest even.
void v_cvt_pk_f16_f32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[2][kLanes];
  const uint32_t* a = float_lanes(e, o, 0, room[0]);
  const uint32_t* b = float_lanes(e, o, 1, room[1]);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = f2h(as_f(a[l])) | (f2h(as_f(b[l])) << 16);
  store_active(e, e.w.vreg(o.vdst), r);
}

// Packed f16 (VOP3P): each result half takes, per source, the half op_sel (low result) or
// op_sel_hi (high result) names, negated by neg_lo / neg_hi.
template <uint32_t (*F)(uint32_t, uint32_t, uint32_t), int N>
void packed_half(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const uint32_t* p[3];
  uint32_t room[3][kLanes];
  for (int i = 0; i < N; ++i) p[i] = source_lanes(e, o, i, room[i]);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    uint32_t out = 0;
    for (int half = 0; half < 2; ++half) {
      const uint32_t sel = half ? o.opsel_hi : o.opsel, neg = half ? o.abs : o.neg;  // abs holds neg_hi
      uint32_t x[3] = {0, 0, 0};
      for (int i = 0; i < N; ++i) x[i] = ((p[i][l] >> (((sel >> i) & 1) * 16)) & 0xffff) ^ (((neg >> i) & 1) ? 0x8000u : 0);
      out |= (F(x[0], x[1], x[2]) & 0xffff) << (16 * half);
    }
    r[l] = out;
  }
  store_active(e, e.w.vreg(o.vdst), r);
}

// Packed f32 (gfx90a+): sources and destination are register pairs; op_sel bit i picks the dword
// of source i for the low result, op_sel_hi for the high one. v_pk_mov_b32 differs: the low
// result is source 0's dword op_sel[0] picks, the high result source 1's dword op_sel[1] picks
// (LLVM swaps a pair's halves with op_sel:[1,0]).
template <int Kind>  // 0 fma, 1 mul, 2 add, 3 mov
void packed_f32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  constexpr int n = Kind == 0 ? 3 : Kind == 3 ? 2 : 2;
  uint64_t v[3][kLanes] = {};
  for (int i = 0; i < n; ++i) read64(e, o.src[i], v[i]);
  uint32_t *lo = e.w.vreg(o.vdst), *hi = e.w.vreg(o.vdst + 1);
  each_lane(e, [&](int l) {
    uint32_t out[2];
    for (int half = 0; half < 2; ++half) {
      const uint32_t sel = half && Kind != 3 ? o.opsel_hi : o.opsel, neg = half ? o.abs : o.neg;
      float x[3] = {0, 0, 0};
      for (int i = 0; i < n; ++i) {
        const uint32_t bits = static_cast<uint32_t>(v[i][l] >> (((sel >> i) & 1) * 32));
        x[i] = as_f(bits ^ (((neg >> i) & 1) && Kind != 3 ? 0x80000000u : 0));
      }
      const float r = Kind == 0 ? std::fma(x[0], x[1], x[2]) : Kind == 1 ? x[0] * x[1] : Kind == 2 ? x[0] + x[1] : (half ? x[1] : x[0]);
      out[half] = as_u(r);
    }
    lo[l] = out[0];
    hi[l] = out[1];
  });
}

// v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16: a fused multiply-add in f32 whose sources
// are f32, or (op_sel_hi bit set) the f16 half op_sel picks; neg_hi takes the absolute value and
// neg_lo negates. mixlo/mixhi round the result to f16 into the low/high half, keeping the other.
template <int Kind>  // 0 f32 result, 1 low half, 2 high half
void v_fma_mix(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const uint32_t* p[3];
  uint32_t room[3][kLanes];
  for (int i = 0; i < 3; ++i) p[i] = source_lanes(e, o, i, room[i]);
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) {
    float x[3];
    for (int i = 0; i < 3; ++i) {
      float v = ((o.opsel_hi >> i) & 1) ? h2f(p[i][l] >> (((o.opsel >> i) & 1) * 16)) : as_f(p[i][l]);
      if ((o.abs >> i) & 1) v = std::fabs(v);  // neg_hi
      if ((o.neg >> i) & 1) v = -v;            // neg_lo
      x[i] = v;
    }
    float r = std::fma(x[0], x[1], x[2]);
    if (o.clamp) r = std::fmin(std::fmax(r, 0.0f), 1.0f);
    if (Kind == 0) d[l] = as_u(r);
    else if (Kind == 1) d[l] = (d[l] & 0xffff0000u) | f2h(r);
    else d[l] = (d[l] & 0xffffu) | (f2h(r) << 16);
  });
}

// f64: VOP3 neg/abs act on bit 63.
double as_d(uint64_t b) { return std::bit_cast<double>(b); }
uint64_t as_u64(double d) { return std::bit_cast<uint64_t>(d); }

void double_sources(const Exec& e, const VectorOperands& o, int n, double (*x)[kLanes]) {
  for (int i = 0; i < n; ++i) {
    uint64_t v[kLanes];
    read64(e, o.src[i], v, Operand64::F64);
    const uint64_t clear = ((o.abs >> i) & 1) ? ~(uint64_t{1} << 63) : ~uint64_t{0};
    const uint64_t flip = ((o.neg >> i) & 1) ? uint64_t{1} << 63 : 0;
    for (int l = 0; l < kLanes; ++l) x[i][l] = as_d((v[l] & clear) ^ flip);
  }
}

template <double (*F)(double, double, double), int N>
void double_op(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  double x[3][kLanes] = {};
  double_sources(e, o, N, x);
  store64(e, o.vdst, [&](int l) { return as_u64(F(x[0][l], x[1][l], x[2][l])); });
}
double add_d(double a, double b, double) { return a + b; }
double mul_d(double a, double b, double) { return a * b; }
double fma_d(double a, double b, double c) { return std::fma(a, b, c); }
double max_d(double a, double b, double) { return std::fmax(a, b); }
double min_d(double a, double b, double) { return std::fmin(a, b); }

// v_fmac_f64: d = a * b + d.
void v_fmac_f64(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  double x[3][kLanes] = {};
  double_sources(e, o, 2, x);
  const uint32_t *dlo = e.w.vreg(o.vdst), *dhi = e.w.vreg(o.vdst + 1);
  store64(e, o.vdst, [&](int l) { return as_u64(std::fma(x[0][l], x[1][l], as_d(dlo[l] | (uint64_t{dhi[l]} << 32)))); });
}

void v_cvt_f64_f32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[kLanes];
  const uint32_t* a = float_lanes(e, o, 0, room);
  store64(e, o.vdst, [&](int l) { return as_u64(static_cast<double>(as_f(a[l]))); });
}
template <bool Signed>
void v_cvt_f64_i32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[kLanes];
  const uint32_t* a = source_lanes(e, o, 0, room);
  store64(e, o.vdst, [&](int l) { return as_u64(Signed ? static_cast<double>(static_cast<int32_t>(a[l])) : static_cast<double>(a[l])); });
}
void v_cvt_f32_f64(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  double x[3][kLanes] = {};
  double_sources(e, o, 1, x);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = as_u(static_cast<float>(x[0][l]));
  store_active(e, e.w.vreg(o.vdst), r);
}
template <bool Signed>
void v_cvt_i32_f64(Exec& e, const Inst&) {  // toward zero, saturating, NaN -> 0
  const VectorOperands& o = e.step->vop;
  double x[3][kLanes] = {};
  double_sources(e, o, 1, x);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const double d = std::trunc(x[0][l]);
    if (std::isnan(d)) r[l] = 0;
    else if (Signed) r[l] = static_cast<uint32_t>(static_cast<int32_t>(std::clamp(d, -2147483648.0, 2147483647.0)));
    else r[l] = static_cast<uint32_t>(std::clamp(d, 0.0, 4294967295.0));
  }
  store_active(e, e.w.vreg(o.vdst), r);
}

}  // namespace

void register_half_semantics(SemanticsTable& t) {
  struct Op { const char* name; Handler h; };
  const Op ops[] = {
      {"v_add_f16", half_op<add_h, 2, true>}, {"v_sub_f16", half_op<sub_h, 2, true>},
      {"v_subrev_f16", half_op<subrev_h, 2, true>}, {"v_mul_f16", half_op<mul_h, 2, true>},
      {"v_max_f16", half_op<max_h, 2, true>}, {"v_min_f16", half_op<min_h, 2, true>},
      {"v_fma_f16", half_op<fma_h, 3, true>}, {"v_div_fixup_f16", half_op<div_fixup_h, 3, true>},
      {"v_add_u16", half_op<add_u16, 2, false>}, {"v_sub_u16", half_op<sub_u16, 2, false>},
      {"v_subrev_u16", half_op<subrev_u16, 2, false>}, {"v_mul_lo_u16", half_op<mul_lo_u16, 2, false>},
      {"v_lshlrev_b16", half_op<lshlrev_b16, 2, false>}, {"v_lshrrev_b16", half_op<lshrrev_b16, 2, false>},
      {"v_ashrrev_i16", half_op<ashrrev_i16, 2, false>}, {"v_max_u16", half_op<max_u16, 2, false>},
      {"v_min_u16", half_op<min_u16, 2, false>}, {"v_max_i16", half_op<max_i16, 2, false>},
      {"v_min_i16", half_op<min_i16, 2, false>},
      {"v_mac_f16", v_mac_f16}, {"v_cvt_f32_f16", v_cvt_f32_f16},
      {"v_add_f64", double_op<add_d, 2>}, {"v_mul_f64", double_op<mul_d, 2>}, {"v_fma_f64", double_op<fma_d, 3>},
      {"v_max_f64", double_op<max_d, 2>}, {"v_min_f64", double_op<min_d, 2>}, {"v_fmac_f64", v_fmac_f64},
      {"v_cvt_f64_f32", v_cvt_f64_f32}, {"v_cvt_f64_i32", v_cvt_f64_i32<true>}, {"v_cvt_f64_u32", v_cvt_f64_i32<false>},
      {"v_cvt_f32_f64", v_cvt_f32_f64}, {"v_cvt_i32_f64", v_cvt_i32_f64<true>}, {"v_cvt_u32_f64", v_cvt_i32_f64<false>},
  };
  for (const auto& [name, h] : ops) {
    t[name] = h;
    t[std::string(name) + "_e32"] = h;
    t[std::string(name) + "_e64"] = h;
  }
  t["v_pack_b32_f16"] = v_pack_b32_f16;
  t["v_bitop3_b16"] = v_bitop3_b16;
  t["v_cvt_pkrtz_f16_f32"] = v_cvt_pkrtz_f16_f32;
  t["v_cvt_pk_f16_f32"] = v_cvt_pk_f16_f32;
  t["v_cvt_pkrtz_f16_f32_e32"] = v_cvt_pkrtz_f16_f32;
  t["v_cvt_pkrtz_f16_f32_e64"] = v_cvt_pkrtz_f16_f32;
  t["v_pk_add_f16"] = packed_half<add_h, 2>;
  t["v_pk_mul_f16"] = packed_half<mul_h, 2>;
  t["v_pk_fma_f16"] = packed_half<fma_h, 3>;
  t["v_pk_max_f16"] = packed_half<max_h, 2>;
  t["v_pk_min_f16"] = packed_half<min_h, 2>;
  t["v_pk_add_u16"] = packed_half<add_u16, 2>;
  t["v_pk_sub_u16"] = packed_half<sub_u16, 2>;
  t["v_pk_mul_lo_u16"] = packed_half<mul_lo_u16, 2>;
  t["v_fma_mix_f32"] = v_fma_mix<0>;
  t["v_fma_mixlo_f16"] = v_fma_mix<1>;
  t["v_fma_mixhi_f16"] = v_fma_mix<2>;
  t["v_pk_fma_f32"] = packed_f32<0>;
  t["v_pk_mul_f32"] = packed_f32<1>;
  t["v_pk_add_f32"] = packed_f32<2>;
  t["v_pk_mov_b32"] = packed_f32<3>;
}

}  // namespace weft::emu
