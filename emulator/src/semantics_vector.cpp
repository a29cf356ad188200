// Vector ALU instructions (VOP1, VOP2, VOPC, VOP3, VOP3P) including MFMA. Every handler reads
// its operands through VectorOperands, so the e32 and e64 forms of an opcode share one body.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "isa_fields.h"
#include "lanes.h"
#include "semantics.h"
#include "weft/emulator/mfma.h"

namespace weft::emu {

using namespace fields;

namespace {

// 32-bit integer / bitwise op on up to three sources.
template <uint32_t (*F)(uint32_t, uint32_t, uint32_t)>
void int_op(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const LaneSource s[3] = {lane_source(e, o, 0), lane_source(e, o, 1), lane_source(e, o, 2)};
  uint32_t* d = e.w.vreg(o.vdst);
  const bool every_lane = e.w.exec() == ~0ull;
  // With every lane active the results go straight into the destination: lane l reads only
  // lane l of the sources, so a destination that is also a source is read before it is written.
  uint32_t r[kLanes];
  uint32_t* out = every_lane ? d : r;
  with_sources(s, [&](auto a, auto b, auto c) {
    for (int l = 0; l < kLanes; ++l) out[l] = F(a[l], b[l], c[l]);  // all lanes: vectorizes
  });
  if (!every_lane) store_active(e, d, r);
}

// 32-bit float op with source and output modifiers.
template <float (*F)(float, float, float)>
void float_op(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[3][kLanes];
  const LaneSource s[3] = {float_lane_source(e, o, 0, room[0]), float_lane_source(e, o, 1, room[1]),
                           float_lane_source(e, o, 2, room[2])};
  uint32_t* d = e.w.vreg(o.vdst);
  const bool direct = e.w.exec() == ~0ull && !o.clamp && !o.omod;  // as in int_op
  uint32_t r[kLanes];
  uint32_t* out = direct ? d : r;
  with_sources(s, [&](auto a, auto b, auto c) {
    for (int l = 0; l < kLanes; ++l) out[l] = as_u(F(as_f(a[l]), as_f(b[l]), as_f(c[l])));  // all lanes: vectorizes
  });
  if (direct) return;
  if (o.clamp || o.omod)
    for (int l = 0; l < kLanes; ++l) r[l] = as_u(output_modifiers(o, as_f(r[l])));
  store_active(e, d, r);
}

// v_fmac_f32 / v_mac: the destination is also the addend. The common case (two VGPR sources, no
// modifiers, every lane active: a GEMM's inner loop) writes the destination in place and keeps
// the general case's scratch rows out of its stack frame.
[[gnu::noinline]] void v_fmac_f32_general(Exec& e) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[2][kLanes];
  const uint32_t* a = float_lanes(e, o, 0, room[0]);
  const uint32_t* b = float_lanes(e, o, 1, room[1]);
  uint32_t* d = e.w.vreg(o.vdst);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) r[l] = as_u(std::fma(as_f(a[l]), as_f(b[l]), as_f(d[l])));
  if (o.clamp || o.omod)
    for (int l = 0; l < kLanes; ++l) r[l] = as_u(output_modifiers(o, as_f(r[l])));
  store_active(e, d, r);
}
void v_fmac_f32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  if (o.src[0] < 256 || o.src[1] < 256 || o.abs || o.neg || o.clamp || o.omod || e.w.exec() != ~0ull) return v_fmac_f32_general(e);
  const uint32_t* a = e.w.vreg(o.src[0] - 256);
  const uint32_t* b = e.w.vreg(o.src[1] - 256);
  uint32_t* d = e.w.vreg(o.vdst);
  for (int l = 0; l < kLanes; ++l) d[l] = as_u(std::fma(as_f(a[l]), as_f(b[l]), as_f(d[l])));  // each lane reads its own d first
}

// v_fmamk_f32 d = a * K + b;  v_fmaak_f32 d = a * b + K.
void v_fmamk_f32(Exec& e, const Inst& in) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes], b[kLanes];
  read32(e, o.src[0], a);
  read32(e, o.src[1], b);
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) { d[l] = as_u(std::fma(as_f(a[l]), as_f(in.literal), as_f(b[l]))); });
}
void v_fmaak_f32(Exec& e, const Inst& in) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes], b[kLanes];
  read32(e, o.src[0], a);
  read32(e, o.src[1], b);
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) { d[l] = as_u(std::fma(as_f(a[l]), as_f(b[l]), as_f(in.literal))); });
}

uint32_t add_u(uint32_t a, uint32_t b, uint32_t) { return a + b; }
uint32_t sub_u(uint32_t a, uint32_t b, uint32_t) { return a - b; }
uint32_t subrev_u(uint32_t a, uint32_t b, uint32_t) { return b - a; }
uint32_t mul_lo(uint32_t a, uint32_t b, uint32_t) { return a * b; }
uint32_t mul_hi_u(uint32_t a, uint32_t b, uint32_t) { return static_cast<uint32_t>((uint64_t{a} * b) >> 32); }
uint32_t mul_hi_i(uint32_t a, uint32_t b, uint32_t) {
  return static_cast<uint32_t>(static_cast<uint64_t>(int64_t{static_cast<int32_t>(a)} * static_cast<int32_t>(b)) >> 32);
}
uint32_t mul_u24(uint32_t a, uint32_t b, uint32_t) { return (a & 0xffffff) * (b & 0xffffff); }
int32_t sext24(uint32_t x) { return static_cast<int32_t>(x << 8) >> 8; }
// The low 32 bits of the 48-bit product (in 64 bits: the 32-bit product can overflow).
uint32_t mul_i24(uint32_t a, uint32_t b, uint32_t) { return static_cast<uint32_t>(int64_t{sext24(a)} * sext24(b)); }
// The high 32 bits of the 48-bit product of the low 24 bits (v_mul_hi_u32_u24 / _i32_i24).
uint32_t mul_hi_u24(uint32_t a, uint32_t b, uint32_t) { return static_cast<uint32_t>((uint64_t{a & 0xffffff} * (b & 0xffffff)) >> 32); }
uint32_t mul_hi_i24(uint32_t a, uint32_t b, uint32_t) {
  return static_cast<uint32_t>(static_cast<uint64_t>(int64_t{sext24(a)} * int64_t{sext24(b)}) >> 32);
}
uint32_t and_b(uint32_t a, uint32_t b, uint32_t) { return a & b; }
uint32_t or_b(uint32_t a, uint32_t b, uint32_t) { return a | b; }
uint32_t xor_b(uint32_t a, uint32_t b, uint32_t) { return a ^ b; }
uint32_t xnor_b(uint32_t a, uint32_t b, uint32_t) { return ~(a ^ b); }
uint32_t lshlrev(uint32_t a, uint32_t b, uint32_t) { return b << (a & 31); }
uint32_t lshrrev(uint32_t a, uint32_t b, uint32_t) { return b >> (a & 31); }
uint32_t ashrrev(uint32_t a, uint32_t b, uint32_t) { return static_cast<uint32_t>(static_cast<int32_t>(b) >> (a & 31)); }
uint32_t min_i(uint32_t a, uint32_t b, uint32_t) { return static_cast<int32_t>(a) < static_cast<int32_t>(b) ? a : b; }
uint32_t max_i(uint32_t a, uint32_t b, uint32_t) { return static_cast<int32_t>(a) > static_cast<int32_t>(b) ? a : b; }
uint32_t min_u(uint32_t a, uint32_t b, uint32_t) { return a < b ? a : b; }
uint32_t max_u(uint32_t a, uint32_t b, uint32_t) { return a > b ? a : b; }
uint32_t lshl_add(uint32_t a, uint32_t b, uint32_t c) { return (a << (b & 31)) + c; }
uint32_t add_lshl(uint32_t a, uint32_t b, uint32_t c) { return (a + b) << (c & 31); }
uint32_t add3(uint32_t a, uint32_t b, uint32_t c) { return a + b + c; }
uint32_t lshl_or(uint32_t a, uint32_t b, uint32_t c) { return (a << (b & 31)) | c; }
uint32_t and_or(uint32_t a, uint32_t b, uint32_t c) { return (a & b) | c; }
uint32_t or3(uint32_t a, uint32_t b, uint32_t c) { return a | b | c; }
uint32_t xad(uint32_t a, uint32_t b, uint32_t c) { return (a ^ b) + c; }
uint32_t mad_u24(uint32_t a, uint32_t b, uint32_t c) { return (a & 0xffffff) * (b & 0xffffff) + c; }
uint32_t mad_i24(uint32_t a, uint32_t b, uint32_t c) { return static_cast<uint32_t>(sext24(a) * sext24(b)) + c; }
uint32_t bfe_u(uint32_t a, uint32_t b, uint32_t c) {
  const uint32_t off = b & 31, w = c & 31;
  return w ? (a >> off) & ((1u << w) - 1) : 0;
}
uint32_t bfe_i(uint32_t a, uint32_t b, uint32_t c) {
  const uint32_t off = b & 31, w = c & 31;
  if (!w) return 0;
  return static_cast<uint32_t>(static_cast<int32_t>(a << (32 - off - w)) >> (32 - w));
}
uint32_t bfi(uint32_t a, uint32_t b, uint32_t c) { return (a & b) | (~a & c); }
uint32_t alignbit(uint32_t a, uint32_t b, uint32_t c) { return static_cast<uint32_t>(((uint64_t{a} << 32) | b) >> (c & 31)); }
uint32_t min3_i(uint32_t a, uint32_t b, uint32_t c) { return min_i(min_i(a, b, 0), c, 0); }
uint32_t max3_i(uint32_t a, uint32_t b, uint32_t c) { return max_i(max_i(a, b, 0), c, 0); }
uint32_t min3_u(uint32_t a, uint32_t b, uint32_t c) { return std::min({a, b, c}); }
uint32_t max3_u(uint32_t a, uint32_t b, uint32_t c) { return std::max({a, b, c}); }
uint32_t med3_i(uint32_t a, uint32_t b, uint32_t c) { return max_i(min_i(a, b, 0), min_i(max_i(a, b, 0), c, 0), 0); }
uint32_t med3_u(uint32_t a, uint32_t b, uint32_t c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); }
uint32_t mov(uint32_t a, uint32_t, uint32_t) { return a; }
uint32_t not_b(uint32_t a, uint32_t, uint32_t) { return ~a; }
uint32_t bfrev(uint32_t a, uint32_t, uint32_t) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1) << (31 - i);
  return r;
}
uint32_t ffbh_u(uint32_t a, uint32_t, uint32_t) { return a ? static_cast<uint32_t>(std::countl_zero(a)) : ~0u; }
uint32_t ffbl(uint32_t a, uint32_t, uint32_t) { return a ? static_cast<uint32_t>(std::countr_zero(a)) : ~0u; }
uint32_t bcnt(uint32_t a, uint32_t b, uint32_t) { return static_cast<uint32_t>(std::popcount(a)) + b; }
template <int Byte>
uint32_t cvt_f32_ubyte(uint32_t a, uint32_t, uint32_t) { return as_u(static_cast<float>((a >> (8 * Byte)) & 0xFF)); }
uint32_t ffbh_i(uint32_t a, uint32_t, uint32_t) {
  const uint32_t x = (a >> 31) ? ~a : a;
  return x ? static_cast<uint32_t>(std::countl_zero(x)) : ~0u;
}
uint32_t cvt_f32_i32(uint32_t a, uint32_t, uint32_t) { return as_u(static_cast<float>(static_cast<int32_t>(a))); }
uint32_t cvt_f32_u32(uint32_t a, uint32_t, uint32_t) { return as_u(static_cast<float>(a)); }
uint32_t cvt_i32_f32(uint32_t a, uint32_t, uint32_t) {  // round toward zero, saturating, NaN -> 0
  const float f = as_f(a);
  if (std::isnan(f)) return 0;
  if (f >= 2147483648.0f) return 0x7fffffff;
  if (f <= -2147483648.0f) return 0x80000000u;
  return static_cast<uint32_t>(static_cast<int32_t>(f));
}
uint32_t cvt_u32_f32(uint32_t a, uint32_t, uint32_t) {
  const float f = as_f(a);
  if (std::isnan(f) || f <= 0) return 0;
  if (f >= 4294967296.0f) return ~0u;
  return static_cast<uint32_t>(f);
}
uint32_t cvt_f32_bf16(uint32_t a, uint32_t, uint32_t) { return a << 16; }
uint32_t cvt_f16_f32(uint32_t a, uint32_t, uint32_t) { return std::bit_cast<uint16_t>(static_cast<_Float16>(as_f(a))); }
uint32_t cvt_pk_bf16_f32(uint32_t a, uint32_t b, uint32_t) {  // round to nearest even, NaN kept quiet
  auto round = [](uint32_t x) -> uint32_t {
    if ((x & 0x7fffffff) > 0x7f800000) return (x >> 16) | 0x40;
    return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
  };
  return round(a) | (round(b) << 16);
}
uint32_t perm_b32(uint32_t a, uint32_t b, uint32_t sel) {
  const uint64_t bytes = (uint64_t{a} << 32) | b;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t s = (sel >> (8 * i)) & 0xff;
    uint32_t byte;
    if (s < 8) byte = (bytes >> (8 * s)) & 0xff;
    else if (s >= 8 && s <= 11) byte = ((bytes >> (16 * (s - 8) + 15)) & 1) ? 0xff : 0;
    else if (s == 12) byte = 0;
    else byte = 0xff;
    r |= byte << (8 * i);
  }
  return r;
}

float add_f(float a, float b, float) { return a + b; }
float sub_f(float a, float b, float) { return a - b; }
float subrev_f(float a, float b, float) { return b - a; }
float mul_f(float a, float b, float) { return a * b; }
float min_f(float a, float b, float) { return std::fmin(a, b); }
float max_f(float a, float b, float) { return std::fmax(a, b); }
float fma_f(float a, float b, float c) { return std::fma(a, b, c); }
float min3_f(float a, float b, float c) { return std::fmin(std::fmin(a, b), c); }
float max3_f(float a, float b, float c) { return std::fmax(std::fmax(a, b), c); }
float rcp_f(float a, float, float) { return 1.0f / a; }
float rsq_f(float a, float, float) { return 1.0f / std::sqrt(a); }
float sqrt_f(float a, float, float) { return std::sqrt(a); }
float exp_f(float a, float, float) { return std::exp2(a); }
float log_f(float a, float, float) { return std::log2(a); }
float sin_f(float a, float, float) { return std::sin(a * 6.283185307179586f); }  // input in revolutions
float cos_f(float a, float, float) { return std::cos(a * 6.283185307179586f); }
float trunc_f(float a, float, float) { return std::trunc(a); }
float floor_f(float a, float, float) { return std::floor(a); }
float ceil_f(float a, float, float) { return std::ceil(a); }
// Ties to even whatever MODE's rounding is (nearbyint would follow the host's rounding mode).
float rndne_f(float a, float, float) { return __builtin_roundevenf(a); }
// OpenCL's fract, which v_fract implements: the largest value below 1 stands in for a fraction
// that rounds up to 1 (fract(-tiny)); NaN and infinities give NaN.
float fract_f(float a, float, float) {
  const float f = a - std::floor(a);
  return std::isnan(f) ? f : std::fmin(f, 0x1.fffffep-1f);
}
// v_med3_f32 (CDNA3 ISA): with a NaN source, the least of the others (min ignores a quiet NaN);
// else the larger of the two sources that are not the maximum.
float med3_f(float a, float b, float c) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(c)) return std::fmin(std::fmin(a, b), c);
  const float top = std::fmax(std::fmax(a, b), c);
  if (top == a) return std::fmax(b, c);
  return top == b ? std::fmax(a, c) : std::fmax(a, b);
}
float ldexp_f(float a, float b, float) { return std::ldexp(a, static_cast<int>(std::bit_cast<int32_t>(b))); }

// v_cndmask_b32: d = mask[lane] ? src1 : src0, mask = VCC (e32) or an SGPR pair (e64).
void v_cndmask_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes], b[kLanes];
  read32(e, o.src[0], a);
  read32(e, o.src[1], b);
  float_modifiers(o, 0, a);
  float_modifiers(o, 1, b);
  const uint64_t mask = e.scalar64(o.src[2]);
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) { d[l] = ((mask >> l) & 1) ? b[l] : a[l]; });
}

// Carry-out adds and subtracts: VOP2 writes VCC, VOP3b its sdst; addc/subb read a carry-in mask.
template <int Kind, bool CarryIn>  // Kind 0 add, 1 sub, 2 subrev
void carry_op(Exec& e, const Inst& in) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes], b[kLanes];
  read32(e, o.src[0], a);
  read32(e, o.src[1], b);
  const uint64_t cin_mask = CarryIn ? e.scalar64(o.src[2]) : 0;
  const uint32_t sdst = in.family == Family::VOP2 ? kVcc : o.sdst;
  uint64_t carry = 0;
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) {
    const uint64_t cin = (cin_mask >> l) & 1;
    uint64_t x = a[l], y = b[l];
    if (Kind == 2) std::swap(x, y);
    bool c;
    if (Kind == 0) {
      const uint64_t r = x + y + cin;
      d[l] = static_cast<uint32_t>(r);
      c = r >> 32;
    } else {
      d[l] = static_cast<uint32_t>(x - y - cin);
      c = y + cin > x;
    }
    carry |= uint64_t{c} << l;
  });
  const uint64_t exec = e.w.exec();
  e.set_scalar64(sdst, (e.scalar64(sdst) & ~exec) | carry);
}

// Compares: write a lane mask (VCC for e32, the SGPR pair for e64); cmpx also writes EXEC.
enum class Cmp { F, LT, EQ, LE, GT, NE, GE, T, LG, O, U, NGE, NLG, NGT, NLE, NEQ, NLT, TRU };
template <typename T>
bool compare(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::F: return false;
    case Cmp::LT: return a < b;
    case Cmp::EQ: return a == b;
    case Cmp::LE: return a <= b;
    case Cmp::GT: return a > b;
    case Cmp::NE: case Cmp::LG: return a != b && !(a != a) && !(b != b);
    case Cmp::GE: return a >= b;
    case Cmp::T: case Cmp::TRU: return true;
    case Cmp::O: return a == a && b == b;
    case Cmp::U: return a != a || b != b;
    case Cmp::NGE: return !(a >= b);
    case Cmp::NLG: return !(a < b || a > b);
    case Cmp::NGT: return !(a > b);
    case Cmp::NLE: return !(a <= b);
    case Cmp::NEQ: return !(a == b);
    case Cmp::NLT: return !(a < b);
  }
  return false;
}
template <> bool compare<int32_t>(Cmp c, int32_t a, int32_t b) {
  return c == Cmp::NE ? a != b : compare<int64_t>(c, a, b);
}
template <> bool compare<uint32_t>(Cmp c, uint32_t a, uint32_t b) {
  return c == Cmp::NE ? a != b : compare<uint64_t>(c, a, b);
}

// VOP3 abs / neg on the sign bit of f64 lanes.
void double_modifiers(const VectorOperands& o, int i, uint64_t* x) {
  const uint64_t sign = uint64_t{1} << 63;
  const uint64_t clear = ((o.abs >> i) & 1) ? ~sign : ~uint64_t{0}, flip = ((o.neg >> i) & 1) ? sign : 0;
  for (int l = 0; l < kLanes; ++l) x[l] = (x[l] & clear) ^ flip;
}

template <typename T, Cmp C, bool X>
void v_cmp(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint64_t mask = 0;
  if constexpr (sizeof(T) == 8) {
    uint64_t a[kLanes], b[kLanes];
    constexpr Operand64 type = std::is_floating_point_v<T> ? Operand64::F64 : Operand64::Int;
    read64(e, o.src[0], a, type);
    read64(e, o.src[1], b, type);
    if constexpr (std::is_floating_point_v<T>) {
      double_modifiers(o, 0, a);
      double_modifiers(o, 1, b);
    }
    each_lane(e, [&](int l) { mask |= uint64_t{compare<T>(C, std::bit_cast<T>(a[l]), std::bit_cast<T>(b[l]))} << l; });
  } else if constexpr (sizeof(T) == 2) {
    // 16-bit compares: each source's low half, or its high half where VOP3 op_sel says so;
    // f16 neg/abs act on bit 15. Compared as wider values (exact for every 16-bit value).
    uint32_t x[2][kLanes];
    for (int i = 0; i < 2; ++i) {
      read32(e, o.src[i], x[i]);
      const uint32_t shift = (o.opsel >> i) & 1 ? 16 : 0;
      const uint32_t clear = std::is_same_v<T, _Float16> && ((o.abs >> i) & 1) ? 0x7fffu : 0xffffu;
      const uint32_t flip = std::is_same_v<T, _Float16> && ((o.neg >> i) & 1) ? 0x8000u : 0;
      for (int l = 0; l < kLanes; ++l) x[i][l] = (((x[i][l] >> shift) & 0xffffu) & clear) ^ flip;
    }
    using Wider = std::conditional_t<std::is_same_v<T, _Float16>, float, std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>>;
    auto widen = [](uint32_t h) { return static_cast<Wider>(std::bit_cast<T>(static_cast<uint16_t>(h))); };
    each_lane(e, [&](int l) { mask |= uint64_t{compare<Wider>(C, widen(x[0][l]), widen(x[1][l]))} << l; });
  } else {
    uint32_t a[kLanes], b[kLanes];
    read32(e, o.src[0], a);
    read32(e, o.src[1], b);
    if constexpr (std::is_floating_point_v<T>) {
      float_modifiers(o, 0, a);
      float_modifiers(o, 1, b);
    }
    each_lane(e, [&](int l) { mask |= uint64_t{compare<T>(C, std::bit_cast<T>(a[l]), std::bit_cast<T>(b[l]))} << l; });
  }
  // VCC for e32, the SGPR pair VOP3 or SDWA's SD field names otherwise (vector_operands and
  // prepare_sdwa put it in vdst).
  const uint32_t dst = o.vdst;
  e.set_scalar64(dst, mask);
  if (X) e.w.set_exec(mask);
}

// v_bitop3_b32 (lanes.h's bitop3): the modifier fields hold the table, so sources are read raw.
void v_bitop3_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[3][kLanes], r[kLanes];
  const uint32_t *a = source_lanes(e, o, 0, room[0]), *b = source_lanes(e, o, 1, room[1]), *c = source_lanes(e, o, 2, room[2]);
  const uint32_t table = bitop3_table(o);
  for (int l = 0; l < kLanes; ++l) r[l] = bitop3(table, a[l], b[l], c[l]);
  store_active(e, e.w.vreg(o.vdst), r);
}

void v_lshl_add_u64(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint64_t a[kLanes], c[kLanes];
  uint32_t b[kLanes];
  read64(e, o.src[0], a);
  read32(e, o.src[1], b);
  read64(e, o.src[2], c);
  store64(e, o.vdst, [&](int l) { return (a[l] << (b[l] & 63)) + c[l]; });
}
template <int Kind>  // 0 lshlrev, 1 lshrrev, 2 ashrrev
void shift64(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t s[kLanes];
  uint64_t v[kLanes];
  read32(e, o.src[0], s);
  read64(e, o.src[1], v);
  store64(e, o.vdst, [&](int l) {
    const uint32_t n = s[l] & 63;
    return Kind == 0 ? v[l] << n : Kind == 1 ? v[l] >> n : static_cast<uint64_t>(static_cast<int64_t>(v[l]) >> n);
  });
}
// v_mad_u64_u32 / v_mad_i64_i32: {vdst pair} = a * b + c (64-bit c), carry to sdst.
template <bool Signed>
void v_mad_64_32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes], b[kLanes];
  uint64_t c[kLanes];
  read32(e, o.src[0], a);
  read32(e, o.src[1], b);
  read64(e, o.src[2], c);
  store64(e, o.vdst, [&](int l) {
    const uint64_t p = Signed ? static_cast<uint64_t>(int64_t{static_cast<int32_t>(a[l])} * static_cast<int32_t>(b[l]))
                              : uint64_t{a[l]} * b[l];
    return p + c[l];
  });
  e.set_scalar64(o.sdst, 0);
}
void v_mov_b64(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint64_t a[kLanes];
  read64(e, o.src[0], a);
  store64(e, o.vdst, [&](int l) { return a[l]; });
}

// v_mbcnt_lo/hi: how many bits of a mask lie below the lane, in the mask's low or high half
// (the usual idiom: mbcnt_hi(exec_hi, mbcnt_lo(exec_lo, 0)) = the lane's rank among active lanes).
template <bool High>
void v_mbcnt(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t room[2][kLanes];
  const uint32_t* mask = source_lanes(e, o, 0, room[0]);
  const uint32_t* acc = source_lanes(e, o, 1, room[1]);
  uint32_t r[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const int below = High ? std::max(l - 32, 0) : std::min(l, 32);
    const uint64_t bits = below >= 32 ? mask[l] : (mask[l] & ((uint64_t{1} << below) - 1));
    r[l] = static_cast<uint32_t>(std::popcount(bits)) + acc[l];
  }
  store_active(e, e.w.vreg(o.vdst), r);
}

// Cross-lane: readfirstlane / readlane into an SGPR, writelane from one.
void v_readfirstlane_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes];
  read32(e, o.src[0], a);
  const uint64_t exec = e.w.exec();
  e.set_scalar(o.vdst, a[exec ? std::countr_zero(exec) : 0]);
}
void v_readlane_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes];
  read32(e, o.src[0], a);
  e.set_scalar(o.vdst, a[e.scalar(o.src[1]) & 63]);
}
void v_writelane_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  e.w.vreg(o.vdst)[e.scalar(o.src[1]) & 63] = e.scalar(o.src[0]);
}

// AGPR moves: the unified file puts a0 at register 256.
void v_accvgpr_write_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  uint32_t a[kLanes];
  read32(e, o.src[0], a);
  uint32_t* d = e.w.vreg(256 + o.vdst);
  each_lane(e, [&](int l) { d[l] = a[l]; });
}
void v_accvgpr_read_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const uint32_t* a = e.w.vreg(o.src[0]);  // src code 256+i names a_i, i.e. unified register 256+i
  uint32_t* d = e.w.vreg(o.vdst);
  each_lane(e, [&](int l) { d[l] = a[l]; });
}
void v_accvgpr_mov_b32(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  const uint32_t* a = e.w.vreg(o.src[0]);
  uint32_t* d = e.w.vreg(256 + o.vdst);
  each_lane(e, [&](int l) { d[l] = a[l]; });
}

// An MFMA's operands: A and B from VGPRs or AGPRs (acc bits), C and D in AGPRs when acc_cd is
// set; an inline-constant C is spread over `cd_dwords` registers of every lane.
struct MfmaOperands {
  const uint32_t* a = nullptr;
  const uint32_t* b = nullptr;
  const uint32_t* c = nullptr;
  uint32_t* d = nullptr;
  std::vector<uint32_t> c_const;
};

MfmaOperands mfma_operands(Exec& e, const Inst& in, int cd_dwords) {
  const uint32_t a_reg = vop3_src(in, 0), b_reg = vop3_src(in, 1), c_code = vop3_src(in, 2);
  if (a_reg < 256 || b_reg < 256) e.fail("MFMA with a scalar A or B operand");
  const uint32_t acc = mai_acc(in), cd_base = mai_acc_cd(in) ? 256 : 0;
  MfmaOperands o;
  o.a = e.w.vreg((a_reg - 256) + ((acc & 1) ? 256 : 0));
  o.b = e.w.vreg((b_reg - 256) + ((acc & 2) ? 256 : 0));
  if (c_code >= 256) {
    o.c = e.w.vreg(c_code - 256 + cd_base);
  } else {  // an inline constant C (0 for a fresh accumulator)
    o.c_const.assign(static_cast<size_t>(cd_dwords) * kLanes, e.scalar(c_code));
    o.c = o.c_const.data();
  }
  o.d = e.w.vreg(vop3_vdst(in) + cd_base);
  return o;
}

// The emulator runs every lane: an MFMA ignores EXEC.
void v_mfma(Exec& e, const Inst& in) {
  const MfmaOp* op = e.step->mfma;
  if (!op) e.fail("this MFMA has no semantics on " + std::string(arch_name(e.prog.arch)));
  if (mai_cbsz(in) || mai_abid(in) || mai_blgp(in)) e.fail("MFMA with cbsz/abid/blgp modifiers is not supported");
  const MfmaOperands o = mfma_operands(e, in, op->cd_dwords);
  execute_mfma(*op, e.prog.arch, o.a, o.b, o.c, o.d);
}

// gfx950's f8f6f4 MFMAs: A and B in the formats cbsz and blgp name (8, 6 or 4 registers), C/D
// as the other f32 MFMAs of the shape. The scaled form (16 bytes, docs/mfma-f8f6f4.md 1.4) also
// gives each lane an E8M0 scale of A and of B: one byte of its scale source, the byte
// op_sel_hi * 2 + op_sel names, for a VGPR; an SGPR or a constant gives every lane bits [30:23]
// of its value (what the hardware takes from them, by LLVM's ScaledMAIInst note; LLVM 22 emits
// VGPRs only).
template <int Size>
void v_mfma_f8f6f4(Exec& e, const Inst& in) {
  if (mai_cbsz(in) > 4 || mai_blgp(in) > 4)
    e.fail("cbsz:" + std::to_string(mai_cbsz(in)) + " blgp:" + std::to_string(mai_blgp(in)) + ": format codes above 4 are undefined");
  const MfmaOperands o = mfma_operands(e, in, Size * Size / kLanes);
  if (!is_scaled_mfma(in)) return execute_mfma_f8f6f4(Size, mai_cbsz(in), mai_blgp(in), o.a, o.b, o.c, o.d);
  uint8_t scales[2][kLanes];
  for (int i = 0; i < 2; ++i) {
    const uint32_t code = mfma_scale_src(in, i);
    for (int lane = 0; lane < kLanes; ++lane)
      scales[i][lane] = static_cast<uint8_t>(code >= 256 ? e.w.vreg(code - 256)[lane] >> (8 * mfma_scale_byte(in, i)) : e.scalar(code) >> 23);
  }
  execute_mfma_f8f6f4(Size, mai_cbsz(in), mai_blgp(in), o.a, o.b, o.c, o.d, scales[0], scales[1]);
}

}  // namespace

void register_vector_semantics(SemanticsTable& t) {
  struct IntOp { const char* name; Handler h; };
  const IntOp ints[] = {
      {"v_add_u32", int_op<add_u>}, {"v_sub_u32", int_op<sub_u>}, {"v_subrev_u32", int_op<subrev_u>},
      {"v_mul_lo_u32", int_op<mul_lo>}, {"v_mul_hi_u32", int_op<mul_hi_u>}, {"v_mul_hi_i32", int_op<mul_hi_i>},
      {"v_mul_u32_u24", int_op<mul_u24>}, {"v_mul_i32_i24", int_op<mul_i24>},
      {"v_mul_hi_u32_u24", int_op<mul_hi_u24>}, {"v_mul_hi_i32_i24", int_op<mul_hi_i24>},
      {"v_and_b32", int_op<and_b>}, {"v_or_b32", int_op<or_b>}, {"v_xor_b32", int_op<xor_b>}, {"v_xnor_b32", int_op<xnor_b>},
      {"v_lshlrev_b32", int_op<lshlrev>}, {"v_lshrrev_b32", int_op<lshrrev>}, {"v_ashrrev_i32", int_op<ashrrev>},
      {"v_min_i32", int_op<min_i>}, {"v_max_i32", int_op<max_i>}, {"v_min_u32", int_op<min_u>}, {"v_max_u32", int_op<max_u>},
      {"v_lshl_add_u32", int_op<lshl_add>}, {"v_add_lshl_u32", int_op<add_lshl>}, {"v_add3_u32", int_op<add3>},
      {"v_lshl_or_b32", int_op<lshl_or>}, {"v_and_or_b32", int_op<and_or>}, {"v_or3_b32", int_op<or3>}, {"v_xad_u32", int_op<xad>},
      {"v_mad_u32_u24", int_op<mad_u24>}, {"v_mad_i32_i24", int_op<mad_i24>}, {"v_bfe_u32", int_op<bfe_u>}, {"v_bfe_i32", int_op<bfe_i>},
      {"v_bfi_b32", int_op<bfi>}, {"v_alignbit_b32", int_op<alignbit>}, {"v_perm_b32", int_op<perm_b32>},
      {"v_min3_i32", int_op<min3_i>}, {"v_max3_i32", int_op<max3_i>}, {"v_min3_u32", int_op<min3_u>}, {"v_max3_u32", int_op<max3_u>},
      {"v_med3_i32", int_op<med3_i>}, {"v_med3_u32", int_op<med3_u>},
      {"v_mov_b32", int_op<mov>}, {"v_not_b32", int_op<not_b>}, {"v_bfrev_b32", int_op<bfrev>}, {"v_ffbh_u32", int_op<ffbh_u>},
      {"v_ffbl_b32", int_op<ffbl>}, {"v_ffbh_i32", int_op<ffbh_i>},
      {"v_cvt_f32_ubyte0", int_op<cvt_f32_ubyte<0>>}, {"v_cvt_f32_ubyte1", int_op<cvt_f32_ubyte<1>>},
      {"v_cvt_f32_ubyte2", int_op<cvt_f32_ubyte<2>>}, {"v_cvt_f32_ubyte3", int_op<cvt_f32_ubyte<3>>}, {"v_bcnt_u32_b32", int_op<bcnt>},
      {"v_cvt_f32_i32", int_op<cvt_f32_i32>}, {"v_cvt_f32_u32", int_op<cvt_f32_u32>}, {"v_cvt_i32_f32", int_op<cvt_i32_f32>},
      {"v_cvt_u32_f32", int_op<cvt_u32_f32>}, {"v_cvt_f32_bf16", int_op<cvt_f32_bf16>},
      {"v_cvt_f16_f32", int_op<cvt_f16_f32>}, {"v_cvt_pk_bf16_f32", int_op<cvt_pk_bf16_f32>},
  };
  struct FloatOp { const char* name; Handler h; };
  const FloatOp floats[] = {
      {"v_add_f32", float_op<add_f>}, {"v_sub_f32", float_op<sub_f>}, {"v_subrev_f32", float_op<subrev_f>},
      {"v_mul_f32", float_op<mul_f>}, {"v_min_f32", float_op<min_f>}, {"v_max_f32", float_op<max_f>},
      {"v_fma_f32", float_op<fma_f>}, {"v_min3_f32", float_op<min3_f>}, {"v_max3_f32", float_op<max3_f>},
      {"v_med3_f32", float_op<med3_f>},
      {"v_rcp_f32", float_op<rcp_f>}, {"v_rsq_f32", float_op<rsq_f>}, {"v_sqrt_f32", float_op<sqrt_f>},
      // The reciprocal LLVM's 32-bit integer division by a run-time divisor starts from: the same
      // result; only its exception flag differs (integer, not IEEE, divide by zero), not modelled.
      {"v_rcp_iflag_f32", float_op<rcp_f>},
      {"v_exp_f32", float_op<exp_f>}, {"v_log_f32", float_op<log_f>}, {"v_sin_f32", float_op<sin_f>}, {"v_cos_f32", float_op<cos_f>},
      {"v_trunc_f32", float_op<trunc_f>}, {"v_floor_f32", float_op<floor_f>}, {"v_ceil_f32", float_op<ceil_f>},
      {"v_rndne_f32", float_op<rndne_f>}, {"v_fract_f32", float_op<fract_f>}, {"v_ldexp_f32", float_op<ldexp_f>},
  };
  // e32 and e64 forms share a body.
  for (const auto& [name, h] : ints) {
    t[std::string(name) + "_e32"] = h;
    t[std::string(name) + "_e64"] = h;
    t[name] = h;
  }
  for (const auto& [name, h] : floats) {
    t[std::string(name) + "_e32"] = h;
    t[std::string(name) + "_e64"] = h;
    t[name] = h;
  }
  for (const char* suffix : {"_e32", "_e64"}) {
    const std::string s = suffix;
    t["v_fmac_f32" + s] = v_fmac_f32;
    t["v_cndmask_b32" + s] = v_cndmask_b32;
    t["v_add_co_u32" + s] = carry_op<0, false>;
    t["v_sub_co_u32" + s] = carry_op<1, false>;
    t["v_subrev_co_u32" + s] = carry_op<2, false>;
    t["v_addc_co_u32" + s] = carry_op<0, true>;
    t["v_subb_co_u32" + s] = carry_op<1, true>;
    t["v_subbrev_co_u32" + s] = carry_op<2, true>;
    t["v_mov_b64" + s] = v_mov_b64;
    t["v_lshlrev_b64" + s] = shift64<0>;
    t["v_lshrrev_b64" + s] = shift64<1>;
    t["v_ashrrev_i64" + s] = shift64<2>;
    t["v_readfirstlane_b32" + s] = v_readfirstlane_b32;
  }
  t["v_lshlrev_b64"] = shift64<0>;
  t["v_lshrrev_b64"] = shift64<1>;
  t["v_ashrrev_i64"] = shift64<2>;
  t["v_readfirstlane_b32"] = v_readfirstlane_b32;
  t["v_fmamk_f32"] = v_fmamk_f32;
  t["v_fmaak_f32"] = v_fmaak_f32;
  t["v_lshl_add_u64"] = v_lshl_add_u64;
  t["v_bitop3_b32"] = v_bitop3_b32;
  t["v_mad_u64_u32"] = v_mad_64_32<false>;
  t["v_mad_i64_i32"] = v_mad_64_32<true>;
  t["v_readlane_b32"] = v_readlane_b32;
  t["v_mbcnt_lo_u32_b32"] = v_mbcnt<false>;
  t["v_mbcnt_hi_u32_b32"] = v_mbcnt<true>;
  t["v_writelane_b32"] = v_writelane_b32;
  t["v_accvgpr_write_b32"] = v_accvgpr_write_b32;
  t["v_accvgpr_read_b32"] = v_accvgpr_read_b32;
  t["v_accvgpr_mov_b32"] = v_accvgpr_mov_b32;
  for (const MfmaOp& op : mfma_ops(Arch::Gfx942)) t[op.mnemonic] = v_mfma;
  for (const MfmaOp& op : mfma_ops(Arch::Gfx950)) t[op.mnemonic] = v_mfma;
  t["v_mfma_f32_16x16x128_f8f6f4"] = v_mfma_f8f6f4<16>;
  t["v_mfma_f32_32x32x64_f8f6f4"] = v_mfma_f8f6f4<32>;
  t["v_mfma_scale_f32_16x16x128_f8f6f4"] = v_mfma_f8f6f4<16>;
  t["v_mfma_scale_f32_32x32x64_f8f6f4"] = v_mfma_f8f6f4<32>;

#define WEFT_CMP(cond, COND, type, CTYPE)                                                  \
  for (const char* suffix : {"_e32", "_e64"}) {                                            \
    t[std::string("v_cmp_" cond "_" type) + suffix] = v_cmp<CTYPE, Cmp::COND, false>;      \
    t[std::string("v_cmpx_" cond "_" type) + suffix] = v_cmp<CTYPE, Cmp::COND, true>;      \
  }
#define WEFT_INT_CMPS(type, CTYPE)                                                                             \
  WEFT_CMP("f", F, type, CTYPE) WEFT_CMP("lt", LT, type, CTYPE) WEFT_CMP("eq", EQ, type, CTYPE)               \
  WEFT_CMP("le", LE, type, CTYPE) WEFT_CMP("gt", GT, type, CTYPE) WEFT_CMP("ne", NE, type, CTYPE)             \
  WEFT_CMP("ge", GE, type, CTYPE) WEFT_CMP("t", T, type, CTYPE)
#define WEFT_FLOAT_CMPS(type, CTYPE)                                                                            \
  WEFT_CMP("f", F, type, CTYPE) WEFT_CMP("lt", LT, type, CTYPE) WEFT_CMP("eq", EQ, type, CTYPE)                \
  WEFT_CMP("le", LE, type, CTYPE) WEFT_CMP("gt", GT, type, CTYPE) WEFT_CMP("lg", LG, type, CTYPE)              \
  WEFT_CMP("ge", GE, type, CTYPE) WEFT_CMP("o", O, type, CTYPE) WEFT_CMP("u", U, type, CTYPE)                  \
  WEFT_CMP("nge", NGE, type, CTYPE) WEFT_CMP("nlg", NLG, type, CTYPE) WEFT_CMP("ngt", NGT, type, CTYPE)        \
  WEFT_CMP("nle", NLE, type, CTYPE) WEFT_CMP("neq", NEQ, type, CTYPE) WEFT_CMP("nlt", NLT, type, CTYPE)        \
  WEFT_CMP("tru", TRU, type, CTYPE)
  WEFT_INT_CMPS("i16", int16_t)
  WEFT_INT_CMPS("u16", uint16_t)
  WEFT_INT_CMPS("i32", int32_t)
  WEFT_INT_CMPS("u32", uint32_t)
  WEFT_INT_CMPS("i64", int64_t)
  WEFT_INT_CMPS("u64", uint64_t)
  WEFT_FLOAT_CMPS("f16", _Float16)
  WEFT_FLOAT_CMPS("f32", float)
  WEFT_FLOAT_CMPS("f64", double)
#undef WEFT_FLOAT_CMPS
#undef WEFT_INT_CMPS
#undef WEFT_CMP
}

}  // namespace weft::emu
