// Value-range analysis: conservative [vmin, vmax] bounds of every integral node, computed once
// when the node is made. The simplifier folds divisions, modulos and comparisons with them, and
// index lowering picks 32-bit math from them, so every rule here must be sound: when in doubt,
// return the full range of the dtype.
#include <algorithm>
#include <limits>

#include "weft/dsl/uop.h"

namespace weft {
namespace {

using Range = std::pair<Wide, Wide>;

Range full(DType dt) {
  DType e = dt.element();
  if (e.is_integral()) return {e.min_value(), e.max_value()};
  return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
}

// Bounds that overflow the dtype may wrap, so they say nothing: widen to the full range.
Range fit(DType dt, Wide lo, Wide hi) {
  Range f = full(dt);
  if (lo < f.first || hi > f.second) return f;
  return {lo, hi};
}

constexpr Wide kMulSafe = Wide(1) << 63;  // |a|,|b| below this: a*b fits in 128 bits

bool mul_safe(const Range& a, const Range& b) {
  auto ok = [](Wide v) { return v > -kMulSafe && v < kMulSafe; };
  return ok(a.first) && ok(a.second) && ok(b.first) && ok(b.second);
}

Range corners(Wide a, Wide b, Wide c, Wide d) { return {std::min({a, b, c, d}), std::max({a, b, c, d})}; }

Range mul_range(DType dt, const Range& a, const Range& b) {
  if (!mul_safe(a, b)) return full(dt);
  auto r = corners(a.first * b.first, a.first * b.second, a.second * b.first, a.second * b.second);
  return fit(dt, r.first, r.second);
}

// Truncating division by a divisor range that does not contain 0.
Range div_one_sign(const Range& x, Wide dlo, Wide dhi) {
  return corners(x.first / dlo, x.first / dhi, x.second / dlo, x.second / dhi);
}

Range div_range(DType dt, const Range& x, const Range& d) {
  if (d.first == 0 && d.second == 0) return full(dt);  // always undefined
  Range r{0, 0};
  bool any = false;
  auto unite = [&](Range part) {
    r = any ? Range{std::min(r.first, part.first), std::max(r.second, part.second)} : part;
    any = true;
  };
  if (d.second >= 1) unite(div_one_sign(x, std::max<Wide>(d.first, 1), d.second));
  if (d.first <= -1) unite(div_one_sign(x, d.first, std::min<Wide>(d.second, -1)));
  return fit(dt, r.first, r.second);
}

Range mod_range(DType dt, const Range& x, const Range& d) {
  Wide largest = std::max(d.first < 0 ? -d.first : d.first, d.second < 0 ? -d.second : d.second);
  if (largest == 0) return full(dt);
  Wide smallest_mag = (d.first > 0) ? d.first : (d.second < 0 ? -d.second : 1);
  // |x % d| < |d|, with the sign of x; and x % d == x when |x| < |d|.
  if (x.first >= 0 && x.second < smallest_mag) return x;
  Wide m = largest - 1;
  Wide lo = x.first >= 0 ? 0 : std::max(x.first, -m);
  Wide hi = x.second <= 0 ? 0 : std::min(x.second, m);
  return {lo, hi};
}

Wide bit_ceil_minus_one(Wide v) {  // smallest 2^k-1 >= v, v >= 0
  Wide r = 0;
  while (r < v) r = r * 2 + 1;
  return r;
}

Range bitwise_range(Op op, DType dt, const Range& a, const Range& b) {
  if (dt.element().is_bool() || (a.first >= 0 && b.first >= 0)) {
    if (op == Op::AND) return {0, std::min(a.second, b.second)};
    Wide hi = bit_ceil_minus_one(std::max(a.second, b.second));
    return {op == Op::OR ? std::max(a.first, b.first) : 0, hi};
  }
  return full(dt);
}

Range shift_range(Op op, DType dt, const Range& x, const Range& s) {
  if (s.first != s.second || s.first < 0 || s.first >= dt.element().bits()) return full(dt);
  const int k = static_cast<int>(s.first);
  if (op == Op::SHL) return mul_range(dt, x, {Wide(1) << k, Wide(1) << k});
  // Arithmetic right shift is floor division: monotone, so the bounds map to bounds.
  auto floor_shift = [k](Wide v) { return v >= 0 ? v >> k : -((-v + (Wide(1) << k) - 1) >> k); };
  return {floor_shift(x.first), floor_shift(x.second)};
}

Range compare_range(Op op, const Range& a, const Range& b) {
  const bool disjoint = a.second < b.first || b.second < a.first;
  const bool equal_consts = a.first == a.second && b.first == b.second && a.first == b.first;
  switch (op) {
    case Op::CMPLT:
      if (a.second < b.first) return {1, 1};
      if (a.first >= b.second) return {0, 0};
      return {0, 1};
    case Op::CMPNE:
      if (disjoint) return {1, 1};
      if (equal_consts) return {0, 0};
      return {0, 1};
    default:  // CMPEQ
      if (disjoint) return {0, 0};
      if (equal_consts) return {1, 1};
      return {0, 1};
  }
}

size_t expected_sources(Op op) {
  if (opsets::unary.contains(op)) return 1;
  if (opsets::binary.contains(op)) return 2;
  return 3;
}

Range alu_range(Op op, DType dt, const std::vector<UOp>& src) {
  auto r = [&](size_t i) { return Range{src[i].vmin(), src[i].vmax()}; };
  if (opsets::comparison.contains(op)) {
    if (!src[0].dtype().is_integral()) return {0, 1};
    return compare_range(op, r(0), r(1));
  }
  switch (op) {
    case Op::ADD: return fit(dt, r(0).first + r(1).first, r(0).second + r(1).second);
    case Op::SUB: return fit(dt, r(0).first - r(1).second, r(0).second - r(1).first);
    case Op::MUL: return mul_range(dt, r(0), r(1));
    case Op::NEG: return fit(dt, -r(0).second, -r(0).first);
    case Op::POPCOUNT: return {0, dt.element().bits()};
    case Op::IDIV: return div_range(dt, r(0), r(1));
    case Op::MOD: return mod_range(dt, r(0), r(1));
    case Op::MAX: return {std::max(r(0).first, r(1).first), std::max(r(0).second, r(1).second)};
    case Op::MIN: return {std::min(r(0).first, r(1).first), std::min(r(0).second, r(1).second)};
    case Op::AND:
    case Op::OR:
    case Op::XOR: return bitwise_range(op, dt, r(0), r(1));
    case Op::SHL:
    case Op::SHR: return shift_range(op, dt, r(0), r(1));
    case Op::WHERE:
      if (r(0).first == 1) return r(1);
      if (r(0).second == 0) return r(2);
      return {std::min(r(1).first, r(2).first), std::max(r(1).second, r(2).second)};
    case Op::MULACC: {
      Range p = mul_range(dt, r(0), r(1));
      if (p == full(dt)) return p;
      return fit(dt, p.first + r(2).first, p.second + r(2).second);
    }
    default: return full(dt);
  }
}

Range cast_range(DType to, const UOp& x) {
  if (!x.dtype().is_integral()) return full(to);
  if (to.element().is_bool()) {
    if (x.vmin() == 0 && x.vmax() == 0) return {0, 0};
    if (x.vmin() > 0 || x.vmax() < 0) return {1, 1};
    return {0, 1};
  }
  return fit(to, x.vmin(), x.vmax());
}

}  // namespace

std::pair<Wide, Wide> compute_vrange(Op op, DType dtype, const std::vector<UOp>& src, const Arg& arg) {
  if (!dtype.element().is_integral()) return full(dtype);
  switch (op) {
    case Op::CONST: {
      const Wide* v = std::get_if<Wide>(&arg);
      return v ? Range{*v, *v} : full(dtype);
    }
    case Op::DEFINE_VAR: {
      const auto* v = std::get_if<VarArg>(&arg);
      return v ? fit(dtype, v->min, v->max) : full(dtype);
    }
    case Op::SPECIAL:
      if (src.empty()) return full(dtype);
      return {0, std::max<Wide>(src[0].vmax() - 1, 0)};
    case Op::RANGE: {
      if (src.empty()) return full(dtype);
      // A loop's body is what depends on its range. A range of exactly one iteration is 0 and may
      // fold away, its body then running once outside the loop. One whose bound may be 0 (a trip
      // count of 0 or 1 loaded from memory) must keep every dependence on it, or its body would
      // run once where it must not run: its range is [0, 1], which nothing folds.
      const Wide hi = std::max<Wide>(src[0].vmax() - 1, 0);
      return {0, hi == 0 && src[0].vmin() < 1 ? 1 : hi};
    }
    case Op::CAST: return src.size() == 1 ? cast_range(dtype, src[0]) : full(dtype);
    case Op::GEP:
    case Op::AFTER:
      if (src.empty()) return full(dtype);
      return {src[0].vmin(), src[0].vmax()};
    case Op::VECTORIZE: {
      if (src.empty()) return full(dtype);
      Range u{src[0].vmin(), src[0].vmax()};
      for (const UOp& s : src) u = {std::min(u.first, s.vmin()), std::max(u.second, s.vmax())};
      return u;
    }
    case Op::REDUCE: {
      const Op* red = std::get_if<Op>(&arg);
      if (red && (*red == Op::MAX || *red == Op::MIN) && !src.empty()) return {src[0].vmin(), src[0].vmax()};
      return full(dtype);
    }
    default:
      if (opsets::alu.contains(op) && src.size() == expected_sources(op)) return alu_range(op, dtype, src);
      return full(dtype);
  }
}

}  // namespace weft
