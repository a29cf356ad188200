// Reading a VALU instruction's 64 lanes of operands and writing its results, shared by the
// files of vector semantics.
#pragma once

#include <bit>
#include <cmath>
#include <cstring>

#include "wave.h"

namespace weft::emu {

// Reads operand `code` for every lane into out[64] (a VGPR row, or a broadcast scalar).
inline void read32(const Exec& e, uint32_t code, uint32_t* out) {
  if (code >= 256) {
    std::memcpy(out, e.w.vreg(code - 256), kLanes * 4);
  } else {
    const uint32_t v = e.scalar(code);
    for (int l = 0; l < kLanes; ++l) out[l] = v;
  }
}

// The 64 lanes of source i without copying a VGPR row: scalars (constants resolved when the
// program was built) are broadcast into `room`.
[[gnu::always_inline]] inline const uint32_t* source_lanes(const Exec& e, const VectorOperands& o, int i, uint32_t* room) {
  const uint32_t code = o.src[i];
  if (code >= 256) return e.w.vreg(code - 256);
  const uint32_t v = o.is_constant[i] ? o.constant[i] : code < 128 ? e.w.s[code] : e.scalar(code);
  for (int l = 0; l < kLanes; ++l) room[l] = v;
  return room;
}
// What a 64-bit source is: the 32-bit literal of an f64 operand is the high half of the double
// (its low half zero); an integer operand zero-extends it.
enum class Operand64 { Int, F64 };
inline void read64(const Exec& e, uint32_t code, uint64_t* out, Operand64 type = Operand64::Int) {
  if (code >= 256) {
    const uint32_t* lo = e.w.vreg(code - 256);
    const uint32_t* hi = e.w.vreg(code - 255);
    for (int l = 0; l < kLanes; ++l) out[l] = lo[l] | (uint64_t{hi[l]} << 32);
  } else {
    const uint64_t v = code == 255 && type == Operand64::F64 ? e.scalar64(code) << 32 : e.scalar64(code);
    for (int l = 0; l < kLanes; ++l) out[l] = v;
  }
}

inline float as_f(uint32_t b) { return std::bit_cast<float>(b); }
inline uint32_t as_u(float f) { return std::bit_cast<uint32_t>(f); }

// Applies VOP3 float source modifiers (abs, then neg) to the 32-bit lanes of source i.
inline void float_modifiers(const VectorOperands& o, int i, uint32_t* x) {
  const uint32_t clear = ((o.abs >> i) & 1) ? 0x7fffffffu : ~0u, flip = ((o.neg >> i) & 1) ? 0x80000000u : 0;
  if (clear == ~0u && !flip) return;
  for (int l = 0; l < kLanes; ++l) x[l] = (x[l] & clear) ^ flip;
}

inline float output_modifiers(const VectorOperands& o, float r) {
  static const float scale[] = {1.0f, 2.0f, 4.0f, 0.5f};
  r *= scale[o.omod];
  if (o.clamp) r = std::fmin(std::fmax(r, 0.0f), 1.0f);
  return r;
}

// d[l] = r[l] for the active lanes.
inline void store_active(const Exec& e, uint32_t* d, const uint32_t* r) {
  const uint64_t exec = e.w.exec();
  if (exec == ~0ull) {
    std::memcpy(d, r, kLanes * 4);
  } else {
    for (int l = 0; l < kLanes; ++l)
      if ((exec >> l) & 1) d[l] = r[l];
  }
}

template <typename F>
inline void each_lane(const Exec& e, F&& f) {
  const uint64_t exec = e.w.exec();
  if (exec == ~0ull) {
    for (int l = 0; l < kLanes; ++l) f(l);
  } else {
    for (uint64_t m = exec; m; m &= m - 1) f(std::countr_zero(m));
  }
}

// The sources of a float op with VOP3 abs/neg applied (copied only when a modifier is set).
[[gnu::always_inline]] inline const uint32_t* float_lanes(const Exec& e, const VectorOperands& o, int i, uint32_t* room) {
  const uint32_t* p = source_lanes(e, o, i, room);
  if (!(((o.abs | o.neg) >> i) & 1)) return p;
  if (p != room) std::memcpy(room, p, kLanes * 4);
  float_modifiers(o, i, room);
  return room;
}

// A source as the lane loops read it: a VGPR row, or one value every lane reads (an SGPR or a
// constant), which the loops keep in a register instead of reading a broadcast row.
struct LaneSource {
  const uint32_t* row;  // null when the source is uniform
  uint32_t value;
};
struct RowReader {
  const uint32_t* p;
  uint32_t operator[](int l) const { return p[l]; }
};
struct UniformReader {
  uint32_t v;
  uint32_t operator[](int) const { return v; }
};

[[gnu::always_inline]] inline LaneSource lane_source(const Exec& e, const VectorOperands& o, int i) {
  const uint32_t code = o.src[i];
  if (code >= 256) return {e.w.vreg(code - 256), 0};
  return {nullptr, o.is_constant[i] ? o.constant[i] : code < 128 ? e.w.s[code] : e.scalar(code)};
}

// Source i with its VOP3 float modifiers applied; a modified VGPR row is copied into `room`.
[[gnu::always_inline]] inline LaneSource float_lane_source(const Exec& e, const VectorOperands& o, int i, uint32_t* room) {
  LaneSource s = lane_source(e, o, i);
  if (!(((o.abs | o.neg) >> i) & 1)) return s;
  if (!s.row) {
    const uint32_t clear = ((o.abs >> i) & 1) ? 0x7fffffffu : ~0u, flip = ((o.neg >> i) & 1) ? 0x80000000u : 0;
    s.value = (s.value & clear) ^ flip;
    return s;
  }
  std::memcpy(room, s.row, kLanes * 4);
  float_modifiers(o, i, room);
  s.row = room;
  return s;
}

// Calls body(a, b, c) with a RowReader or a UniformReader for each source, so that each mix gets
// a lane loop of its own.
template <class Body>
[[gnu::always_inline]] inline void with_sources(const LaneSource (&s)[3], Body&& body) {
  const auto row = [&](int i) { return RowReader{s[i].row}; };
  const auto one = [&](int i) { return UniformReader{s[i].value}; };
  switch ((s[0].row ? 0 : 1) | (s[1].row ? 0 : 2) | (s[2].row ? 0 : 4)) {
    case 0: return body(row(0), row(1), row(2));
    case 1: return body(one(0), row(1), row(2));
    case 2: return body(row(0), one(1), row(2));
    case 3: return body(one(0), one(1), row(2));
    case 4: return body(row(0), row(1), one(2));
    case 5: return body(one(0), row(1), one(2));
    case 6: return body(row(0), one(1), one(2));
    default: return body(one(0), one(1), one(2));
  }
}

// v_bitop3 (gfx950): each result bit is the truth table's entry for the sources' bits at index
// S0:S1:S2; the 8-bit table is kept in the VOP3 omod (7:6), abs (5:3) and neg (2:0) fields.
inline uint32_t bitop3_table(const VectorOperands& o) { return o.neg | o.abs << 3 | o.omod << 6; }
inline uint32_t bitop3(uint32_t table, uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r = 0;
  for (uint32_t i = 0; i < 8; ++i)
    if ((table >> i) & 1) r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  return r;
}

// 64-bit VALU ops write the register pair vdst, vdst+1 with r(l) for every active lane.
template <typename F>
inline void store64(Exec& e, uint32_t vdst, F&& r) {
  uint32_t *lo = e.w.vreg(vdst), *hi = e.w.vreg(vdst + 1);
  each_lane(e, [&](int l) {
    const uint64_t v = r(l);
    lo[l] = static_cast<uint32_t>(v);
    hi[l] = static_cast<uint32_t>(v >> 32);
  });
}

}  // namespace weft::emu
