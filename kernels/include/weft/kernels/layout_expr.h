// Index expressions from layouts: the DSL values that compute where a layout puts an element,
// for hardware coordinates that are themselves DSL values (a lane range, a wave coordinate, a
// loop counter) or constants (a register number the C++ code unrolls).
//
// A layout is linear over GF(2), so an output is the XOR of the images of the input bits that
// are set. The expression is built from that, in the cheapest form that is still exact:
// - a run of input bits whose images are consecutive single output bits is one field,
//   (x / 2^b % 2^n) * 2^t, instead of n separate bits;
// - terms that can set no common output bit are added (XOR and + agree there, and an add with
//   a constant folds into the instruction's offset field); others are XORed;
// - constant inputs fold into one constant.
//
//   Layout st = shared_tile(...);                       // (row, col) -> offset
//   UOp off = layout_index(st, {{"row", r}, {"col", c}}, "offset");
#pragma once

#include <map>
#include <string>
#include <utility>

#include "weft/dsl/uop.h"
#include "weft/kernels/layout.h"

namespace weft::tile {

using LayoutInputs = std::map<std::string, UOp>;

// The value of output dimension `out` of `layout` at `inputs` (index dtype). Every input
// dimension of the layout must be given, as an index-typed value in [0, 2^bits) (the caller's
// promise: a range of that size, or a constant) . Throws weft::Error naming a missing or unknown
// dimension.
UOp layout_index(const Layout& layout, const LayoutInputs& inputs, const std::string& out);

// The widest vector (in elements, a power of two) that input dimension `in` moves through
// output `out` as one aligned access: bits 0..k-1 of `in` map to bits 0..k-1 of `out` and to
// nothing else, and no other input bit reaches those low bits of `out`. So a lane's
// 2^k consecutive values of `in` hold 2^k consecutive elements of `out`, starting at a multiple
// of 2^k. Capped at `max_lanes`.
int64_t aligned_vector_width(const Layout& layout, const std::string& in, const std::string& out, int64_t max_lanes);

// layout_index(...) / lanes, for an access `lanes` wide (a value aligned_vector_width allows):
// the vector's first element is `layout_granule(...) * lanes`, the form the renderers read
// alignment from. `inputs[in]` is the first of the vector's values of `in` (a multiple of
// `lanes`). Throws weft::Error if the layout does not allow the width.
UOp layout_granule(const Layout& layout, const LayoutInputs& inputs, const std::string& in, const std::string& out, int64_t lanes);

// (row, col) where a matrix operand layout (("register", "lane") -> ("row", "col"), an MFMA or
// mma.sync operand of the catalog) puts element `e` of `lane`: layout_index of both outputs.
std::pair<UOp, UOp> operand_index(const Layout& layout, const UOp& lane, const UOp& e);

}  // namespace weft::tile
