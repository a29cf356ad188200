// fp8 conversions as integer arithmetic in the IR (see fp8_casts.h for the semantics).
//
// To fp8, the fact the arithmetic leans on (the same one as the host converter's): a positive
// pattern is ((biased exponent - 1) << mantissa_bits) + significand, where the significand is
// the value over the grid step of its binade, hidden bit included. So the source's significand
// (hidden bit included) shifted right by the right amount and rounded is the significand of
// the result, subnormal results included (their binade is the smallest normal one, their
// significand below the hidden bit), and a significand that rounds up to the next power of two
// carries into the exponent by plain addition. Overflow is then a comparison of patterns.
#include "weft/lowering/fp8_casts.h"

#include <cmath>
#include <limits>
#include <unordered_set>

#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"

namespace weft::lower {
namespace {

// The bit layout of a float32 or float64 source.
struct SourceLayout {
  DType bits;         // the unsigned integer of its width
  int width;          // 32 or 64
  int mantissa_bits;  // 23 or 52
  int bias;           // 127 or 1023
};

SourceLayout source_layout(const UOp& x) {
  if (x.dtype() == dtypes::float32) return {dtypes::uint32, 32, 23, 127};
  if (x.dtype() == dtypes::float64) return {dtypes::uint64, 64, 52, 1023};
  throw Error("fp8 conversion: the source of a software conversion to fp8 is float32 or float64, got " + x.dtype().name() +
              " (" + expr_string(x) + ")");
}

const FloatFormatInfo& fp8_info(DType d, const char* what) {
  if (!d.is_fp8() || d.is_vector()) throw Error(std::string("fp8 conversion: ") + what + " must be a scalar fp8 dtype, got " + d.name());
  return float_format_info(*d.float_format());
}

// A pattern of the format, from the host converter (one home for the format's facts).
uint64_t pattern(DType d, double value) { return encode_float(*d.float_format(), value, Overflow::Saturate); }

UOp u8(uint64_t v) { return constant(Wide(v), dtypes::uint8); }

}  // namespace

UOp fp8_from_float(const UOp& x, DType to) {
  const FloatFormatInfo& f = fp8_info(to, "the destination");
  const SourceLayout s = source_layout(x);
  const UOp u = x.bitcast(s.bits);
  auto k = [&](uint64_t v) { return u.const_like(Wide(v)); };
  const UOp zero = k(0);
  const uint64_t sign_bit = uint64_t{1} << (s.width - 1);
  const UOp magnitude = u & k(sign_bit - 1);
  const UOp negative = (u & k(sign_bit)).ne(zero);
  const uint64_t infinity = (sign_bit - 1) & ~((uint64_t{1} << s.mantissa_bits) - 1);
  const UOp is_nan = magnitude > k(infinity);

  const UOp biased = magnitude >> s.mantissa_bits;  // the source's biased exponent
  const UOp significand = (magnitude & k((uint64_t{1} << s.mantissa_bits) - 1)) |
                          where(biased.ne(zero), k(uint64_t{1} << s.mantissa_bits), zero);
  // The source's biased exponent of fp8's smallest normal binade; the result's binade is that
  // or the value's own, whichever is larger (a source subnormal has exponent 1 - bias).
  const auto min_normal = static_cast<uint64_t>(1 - f.bias + s.bias);
  const UOp exponent = max(biased, k(min_normal));
  // The shift that leaves fp8's mantissa bits; past mantissa_bits + 2 every significand rounds
  // to 0, and the cap keeps the shift below the width.
  const UOp shift = min(k(static_cast<uint64_t>(s.mantissa_bits - f.mantissa_bits)) + exponent - max(biased, k(1)),
                        k(static_cast<uint64_t>(s.mantissa_bits + 2)));
  // Round to nearest, ties to even: add half a step less one, plus the kept lowest bit.
  const UOp rounded = (significand + (k(1) << (shift - k(1))) - k(1) + ((significand >> shift) & k(1))) >> shift;
  const UOp result = ((exponent - k(min_normal)) << f.mantissa_bits) + rounded;
  // Saturation (infinities land here too: their exponent is the largest).
  const UOp finite = min(result, k(pattern(to, f.max_finite))).cast(dtypes::uint8);

  // fnuz formats have no negative zero: its pattern is the NaN.
  const UOp signed_result = f.fnuz ? negative & finite.ne(u8(0)) : negative;
  const UOp bits = where(signed_result, u8(0x80), u8(0)) | finite;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const UOp nan_bits = where(negative, u8(pattern(to, -nan)), u8(pattern(to, nan)));
  return where(is_nan, nan_bits, bits).bitcast(to);
}

UOp fp8_to_float32(const UOp& q) {
  const FloatFormatInfo& f = fp8_info(q.dtype(), "the source");
  const int m = f.mantissa_bits;
  const UOp v = q.bitcast(dtypes::uint8).cast(dtypes::uint32);
  auto k = [](uint64_t x) { return constant(Wide(x), dtypes::uint32); };
  const UOp sign = (v >> 7) << 31;
  const UOp magnitude = v & k(0x7F);
  // Normal: the fp8 exponent field rebiased in place, then the fields moved to float32's.
  const UOp normal = sign | ((magnitude + k(static_cast<uint64_t>(127 - f.bias) << m)) << (23 - m));
  // Subnormal: the mantissa field times the smallest subnormal (exact: a small integer times a
  // power of two that float32 holds as a normal number).
  const UOp mantissa = magnitude & k((uint64_t{1} << m) - 1);
  const UOp step = constant(std::ldexp(1.0, 1 - f.bias - m), dtypes::float32);
  const UOp subnormal = (mantissa.cast(dtypes::float32) * step).bitcast(dtypes::uint32) | sign;
  UOp bits = where(magnitude < k(uint64_t{1} << m), subnormal, normal);
  const UOp top = k(((uint64_t{1} << f.exponent_bits) - 1) << m);  // the all-ones exponent field
  UOp is_nan;
  if (f.fnuz) {
    is_nan = v.eq(k(0x80));
  } else if (f.has_infinity) {
    bits = where(magnitude.eq(top), sign | k(0x7F800000), bits);
    is_nan = magnitude > top;
  } else {
    is_nan = magnitude.eq(top | k((uint64_t{1} << m) - 1));
  }
  return where(is_nan, k(0x7FC00000), bits).bitcast(dtypes::float32);
}

bool is_fp8_conversion(const UOp& cast) {
  if (cast.op() != Op::CAST || cast.dtype().is_vector()) return false;
  const DType from = cast.src(0).dtype(), to = cast.dtype();
  if (to.is_fp8()) return from == dtypes::float32 || from == dtypes::float64;
  return from.is_fp8() && to == dtypes::float32;
}

UOp fp8_cast_through_float32(const UOp& cast) {
  const UOp& x = cast.src(0);
  const DType to = cast.dtype();
  if (!to.is_fp8() && !x.dtype().is_fp8())
    throw Error("fp8 conversion: " + expr_string(cast) + " has no fp8 side");
  if (x.dtype().is_vector()) {
    std::vector<UOp> lanes;
    for (int i = 0; i < x.dtype().lanes; ++i) lanes.push_back(fp8_cast_through_float32(x.gep(i).cast(to.element())));
    return vectorize(lanes);
  }
  if (is_fp8_conversion(cast)) return cast;
  return x.cast(dtypes::float32).cast(to);
}

UOp fp8_cast_in_software(const UOp& cast) {
  if (!is_fp8_conversion(cast))
    throw Error("fp8 conversion: " + expr_string(cast) + " is not a scalar float32/float64 <-> fp8 CAST");
  return cast.dtype().is_fp8() ? fp8_from_float(cast.src(0), cast.dtype()) : fp8_to_float32(cast.src(0));
}

std::vector<UOp> expansion_order(const UOp& expansion, const UOp& input) {
  std::vector<UOp> order;
  std::unordered_set<const Node*> seen{input.node()};
  // Iterative post-order: a node is emitted once all its sources are.
  std::vector<std::pair<UOp, size_t>> stack{{expansion, 0}};
  if (!seen.insert(expansion.node()).second) return order;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node.src().size()) {
      const UOp s = node.src(next++);
      if (seen.insert(s.node()).second) stack.push_back({s, 0});
      continue;
    }
    order.push_back(node);
    stack.pop_back();
  }
  return order;
}

}  // namespace weft::lower
