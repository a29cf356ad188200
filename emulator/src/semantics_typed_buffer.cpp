// Typed buffer access: MTBUF (tbuffer_load/store_format_x..xyzw, the format in the instruction)
// and MUBUF's buffer_load/store_format_x..xyzw (the format in the V#'s word 3). Each component of
// the format is read from memory and converted to a 32-bit register value, or converted back.
//
// Sources: AMD's CDNA3/CDNA4 ISA guides, "Buffer Instructions" (the MTBUF DFMT/NFMT fields and
// the V# DST_SEL_X..W [11:0], NUM_FORMAT [14:12], DATA_FORMAT [18:15]); the data and number
// format tables (gfx9 values, as LLVM's assembler prints them in format:[BUF_DATA_FORMAT_*,
// BUF_NUM_FORMAT_*]); the conversions of the D3D/Vulkan rules the hardware follows (UNORM x / (2^b - 1),
// SNORM max(x / (2^(b-1) - 1), -1), the scaled formats as plain int-to-float, UINT/SINT extended,
// FLOAT f16 widened). A load of more components than the format has fills y and z with 0 and w
// with 1 (1.0 for the float-valued formats). The range check (num_records) is per component, as
// for dwordx2..x4; an out-of-range component reads 0 and is not stored.
//
// Not emulated (the run stops with an error naming the format): the packed formats
// (10_11_11, 11_11_10, 10_10_10_2, 2_10_10_10), stores in the scaled formats, 8-bit FLOAT,
// a V# DST_SEL other than x, y, z, w, and the d16 variants.
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "buffer_access.h"
#include "semantics.h"

namespace weft::emu {

namespace {

enum NumFormat : uint32_t { Unorm = 0, Snorm = 1, Uscaled = 2, Sscaled = 3, Uint = 4, Sint = 5, Float = 7 };

struct TypedFormat {
  uint32_t components = 0, bits = 0;
  uint32_t nfmt = 0;
};

const char* data_format_name(uint32_t dfmt) {
  static const char* const names[16] = {"INVALID", "8", "16", "8_8", "32", "16_16", "10_11_11", "11_11_10",
                                        "10_10_10_2", "2_10_10_10", "8_8_8_8", "32_32", "16_16_16_16", "32_32_32",
                                        "32_32_32_32", "RESERVED_15"};
  return names[dfmt & 15];
}

TypedFormat typed_format(const Exec& e, uint32_t dfmt, uint32_t nfmt, bool store) {
  struct Shape {
    uint32_t components, bits;
  };
  static const Shape shapes[16] = {{0, 0}, {1, 8}, {1, 16}, {2, 8},  {1, 32}, {2, 16}, {0, 0}, {0, 0},
                                   {0, 0}, {0, 0}, {4, 8},  {2, 32}, {4, 16}, {3, 32}, {4, 32}, {0, 0}};
  const Shape s = shapes[dfmt & 15];
  const std::string what = std::string("buffer format BUF_DATA_FORMAT_") + data_format_name(dfmt) + " with number format " +
                           std::to_string(nfmt);
  if (s.components == 0) e.fail(what + ": this data format is not emulated");
  if (nfmt == 6) e.fail(what + ": an invalid number format");
  if (nfmt == Float && s.bits == 8) e.fail(what + ": 8-bit FLOAT is not a format");
  if (store && (nfmt == Uscaled || nfmt == Sscaled)) e.fail(what + ": stores in the scaled formats are not emulated");
  return {s.components, s.bits, nfmt};
}

int64_t sign_extend(uint32_t raw, uint32_t bits) { return bits == 32 ? int64_t{static_cast<int32_t>(raw)} : int64_t(raw << (32 - bits)) << 32 >> (64 - bits); }

uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }

// The register value of one component read from memory.
uint32_t from_memory(const TypedFormat& f, uint32_t raw) {
  const double umax = std::ldexp(1.0, static_cast<int>(f.bits)) - 1, smax = std::ldexp(1.0, static_cast<int>(f.bits) - 1) - 1;
  switch (f.nfmt) {
    case Unorm: return f32_bits(static_cast<float>(raw / umax));
    case Snorm: return f32_bits(static_cast<float>(std::max(double(sign_extend(raw, f.bits)) / smax, -1.0)));
    case Uscaled: return f32_bits(static_cast<float>(raw));
    case Sscaled: return f32_bits(static_cast<float>(sign_extend(raw, f.bits)));
    case Uint: return raw;
    case Sint: return static_cast<uint32_t>(sign_extend(raw, f.bits));
    default:  // Float
      return f.bits == 16 ? f32_bits(static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(raw)))) : raw;
  }
}

// What memory receives for one component's register value.
uint32_t to_memory(const TypedFormat& f, uint32_t reg) {
  const uint32_t mask = f.bits == 32 ? ~0u : (1u << f.bits) - 1;
  const double umax = std::ldexp(1.0, static_cast<int>(f.bits)) - 1, smax = std::ldexp(1.0, static_cast<int>(f.bits) - 1) - 1;
  const float x = std::bit_cast<float>(reg);
  switch (f.nfmt) {
    case Unorm: return static_cast<uint32_t>(std::nearbyint((std::isnan(x) ? 0.0 : std::clamp(double(x), 0.0, 1.0)) * umax));
    case Snorm:
      return static_cast<uint32_t>(static_cast<int64_t>(std::nearbyint((std::isnan(x) ? 0.0 : std::clamp(double(x), -1.0, 1.0)) * smax))) & mask;
    case Uint:
    case Sint: return reg & mask;
    default:  // Float
      return f.bits == 16 ? std::bit_cast<uint16_t>(static_cast<_Float16>(x)) : reg;
  }
}

uint32_t default_component(const TypedFormat& f, uint32_t c) {
  if (c != 3) return 0;
  return f.nfmt == Uint || f.nfmt == Sint ? 1u : f32_bits(1.0f);
}

// The format of a MUBUF *_format instruction: the V#'s word 3 (DST_SEL must be the identity).
TypedFormat resource_format(const Exec& e, const Inst& in, bool store) {
  const uint32_t w3 = e.w.s[mubuf_srsrc(in) + 3];
  if ((w3 & 0xfff) != (4 | 5 << 3 | 6 << 6 | 7 << 9))
    e.fail("buffer resource DST_SEL (word 3 bits 11:0 = " + std::to_string(w3 & 0xfff) + ") other than x, y, z, w: not emulated");
  return typed_format(e, (w3 >> 15) & 15, (w3 >> 12) & 7, store);
}

TypedFormat instruction_format(const Exec& e, const Inst& in, bool store) {
  return in.family == Family::MTBUF ? typed_format(e, mtbuf_dfmt(in), mtbuf_nfmt(in), store) : resource_format(e, in, store);
}

template <uint32_t N>
void typed_load(Exec& e, const Inst& in) {
  const BufferResource v = resource(e, in);
  const TypedFormat f = instruction_format(e, in, false);
  const uint32_t bytes = f.bits / 8, stored = std::min(N, f.components);
  const uint32_t dst = mubuf_vdata(in) + (mubuf_acc(in) ? 256 : 0);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const BufferLane a = buffer_lane(e, in, v, l);
    const uint32_t n = elements_in_range(in, v, a, bytes, stored);
    const uint8_t* p = n ? e.global(v.base + a.offset, n * bytes, l) : nullptr;
    for (uint32_t c = 0; c < N; ++c) {
      uint32_t raw = 0;
      if (c < n) std::memcpy(&raw, p + c * bytes, bytes);
      e.w.vreg(dst + c)[l] = c < stored ? from_memory(f, raw) : default_component(f, c);
    }
  }
}

template <uint32_t N>
void typed_store(Exec& e, const Inst& in) {
  const BufferResource v = resource(e, in);
  const TypedFormat f = instruction_format(e, in, true);
  const uint32_t bytes = f.bits / 8, stored = std::min(N, f.components);
  const uint32_t src = mubuf_vdata(in) + (mubuf_acc(in) ? 256 : 0);
  for (uint64_t m = e.w.exec(); m; m &= m - 1) {
    const int l = std::countr_zero(m);
    const BufferLane a = buffer_lane(e, in, v, l);
    const uint32_t n = elements_in_range(in, v, a, bytes, stored);
    if (n == 0) continue;
    uint8_t* p = e.global(v.base + a.offset, n * bytes, l);
    for (uint32_t c = 0; c < n; ++c) {
      const uint32_t raw = to_memory(f, e.w.vreg(src + c)[l]);
      std::memcpy(p + c * bytes, &raw, bytes);
    }
  }
}

}  // namespace

void register_typed_buffer_semantics(SemanticsTable& t) {
  for (const char* prefix : {"tbuffer_", "buffer_"}) {
    const std::string p = prefix;
    t[p + "load_format_x"] = typed_load<1>;
    t[p + "load_format_xy"] = typed_load<2>;
    t[p + "load_format_xyz"] = typed_load<3>;
    t[p + "load_format_xyzw"] = typed_load<4>;
    t[p + "store_format_x"] = typed_store<1>;
    t[p + "store_format_xy"] = typed_store<2>;
    t[p + "store_format_xyz"] = typed_store<3>;
    t[p + "store_format_xyzw"] = typed_store<4>;
  }
}

}  // namespace weft::emu
