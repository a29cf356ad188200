#include "weft/kernels/layout_expr.h"

#include <bit>

#include "weft/dsl/builder.h"

namespace weft::tile {
namespace {

struct Term {
  UOp value;
  uint64_t bits;  // the output bits the term can set
};

// The image of bit `bit` of input `dim` in output `out`.
uint64_t image(const Layout& l, const std::string& dim, int bit, const std::string& out) {
  return static_cast<uint64_t>(l.apply({{dim, int64_t{1} << bit}}).at(out));
}

int dim_bits(const Layout& l, const std::string& dim) {
  for (const LayoutDim& d : l.in_dims())
    if (d.name == dim) return d.bits;
  throw Error("layout_index: the layout has no input dimension '" + dim + "'");
}

void check_inputs(const Layout& l, const LayoutInputs& inputs, const std::string& out) {
  bool has_out = false;
  for (const LayoutDim& d : l.out_dims()) has_out |= d.name == out;
  if (!has_out) throw Error("layout_index: the layout has no output dimension '" + out + "'");
  for (const LayoutDim& d : l.in_dims())
    if (!inputs.contains(d.name)) throw Error("layout_index: no value given for input dimension '" + d.name + "'");
  for (const auto& [name, v] : inputs) (void)dim_bits(l, name);
}

// The terms of one variable input x whose bits from..bits-1 have `images` (shifted right by
// `shift` output bits): runs of bits mapping to consecutive single output bits become fields.
void variable_terms(const UOp& x, const std::vector<uint64_t>& images, int from, std::vector<Term>& terms) {
  const int n = static_cast<int>(images.size());
  for (int b = from; b < n;) {
    const uint64_t img = images[static_cast<size_t>(b)];
    if (img == 0) {
      ++b;
      continue;
    }
    int len = 1;
    if (std::has_single_bit(img))
      while (b + len < n && images[static_cast<size_t>(b + len)] == img << len) ++len;
    UOp field = x;
    if (b > 0) field = field / (int64_t{1} << b);
    if (b + len < n) field = field % (int64_t{1} << len);
    if (std::has_single_bit(img)) {
      if (img > 1) field = field * static_cast<int64_t>(img);
      terms.push_back({field, ((uint64_t{1} << len) - 1) * img});
    } else {
      terms.push_back({field * static_cast<int64_t>(img), img});
    }
    b += len;
  }
}

// Adds terms that cannot set a common bit; XORs the rest. The constant goes last, so that an
// add of it can fold into an instruction's offset.
UOp combine(const std::vector<Term>& terms, uint64_t constant) {
  UOp acc;
  uint64_t seen = 0;
  for (const Term& t : terms) {
    if (!acc.node()) acc = t.value;
    else acc = (seen & t.bits) ? (acc ^ t.value) : (acc + t.value);
    seen |= t.bits;
  }
  const UOp c = weft::constant(Wide(static_cast<int64_t>(constant)));
  if (!acc.node()) return c;
  if (constant == 0) return acc;
  return (seen & constant) ? (acc ^ c) : (acc + c);
}

// The output `out` of `l` at `inputs`, shifted right by `shift` bits, leaving out the low
// `skip` bits of input `skip_dim`.
UOp emit(const Layout& l, const LayoutInputs& inputs, const std::string& out, const std::string& skip_dim, int skip, int shift) {
  check_inputs(l, inputs, out);
  std::vector<Term> terms;
  uint64_t constant = 0;
  for (const LayoutDim& d : l.in_dims()) {
    const UOp& x = inputs.at(d.name);
    const int from = d.name == skip_dim ? skip : 0;
    if (x.is_const()) {
      const int64_t v = x.const_int();
      if (v < 0 || v >= (int64_t{1} << d.bits))
        throw Error("layout_index: " + std::to_string(v) + " is outside input dimension '" + d.name + "' (" + std::to_string(int64_t{1} << d.bits) + " values)");
      for (int b = from; b < d.bits; ++b)
        if ((v >> b) & 1) constant ^= image(l, d.name, b, out) >> shift;
      continue;
    }
    std::vector<uint64_t> images;
    for (int b = 0; b < d.bits; ++b) images.push_back(image(l, d.name, b, out) >> shift);
    variable_terms(x.dtype() == dtypes::index ? x : x.cast(dtypes::index), images, from, terms);
  }
  return combine(terms, constant);
}

}  // namespace

UOp layout_index(const Layout& layout, const LayoutInputs& inputs, const std::string& out) {
  return emit(layout, inputs, out, "", 0, 0);
}

int64_t aligned_vector_width(const Layout& layout, const std::string& in, const std::string& out, int64_t max_lanes) {
  const int in_bits = dim_bits(layout, in);
  int k = 0;
  while ((int64_t{1} << (k + 1)) <= max_lanes && k < in_bits && image(layout, in, k, out) == (uint64_t{1} << k)) {
    // bit k of `in` must reach nothing else, and no other input bit may reach bit k of `out`.
    bool clean = true;
    for (const LayoutDim& od : layout.out_dims())
      if (od.name != out && layout.apply({{in, int64_t{1} << k}}).at(od.name) != 0) clean = false;
    for (const LayoutDim& d : layout.in_dims())
      for (int b = 0; b < d.bits && clean; ++b)
        if (!(d.name == in && b <= k) && (image(layout, d.name, b, out) & (uint64_t{1} << k))) clean = false;
    if (!clean) break;
    ++k;
  }
  return int64_t{1} << k;
}

UOp layout_granule(const Layout& layout, const LayoutInputs& inputs, const std::string& in, const std::string& out, int64_t lanes) {
  const int64_t allowed = aligned_vector_width(layout, in, out, lanes);
  if (lanes < 1 || !std::has_single_bit(static_cast<uint64_t>(lanes)) || allowed < lanes)
    throw Error("layout_granule: the layout moves at most " + std::to_string(allowed) + " consecutive elements of '" + out + "' along '" + in +
                "' as one aligned vector, not " + std::to_string(lanes));
  const int k = std::countr_zero(static_cast<uint64_t>(lanes));
  return emit(layout, inputs, out, in, k, k);
}

std::pair<UOp, UOp> operand_index(const Layout& layout, const UOp& lane, const UOp& e) {
  const LayoutInputs at{{"register", e}, {"lane", lane}};
  return {layout_index(layout, at, "row"), layout_index(layout, at, "col")};
}

}  // namespace weft::tile
