#include "weft/kernels/mfma_layout.h"

#include "weft/dsl/builder.h"
#include "weft/kernels/layout_expr.h"

namespace weft::tile {
namespace {

int64_t registers(const Layout& l) { return int64_t{1} << l.in_dims().at(0).bits; }

}  // namespace

std::pair<UOp, UOp> MfmaLayout::a(const UOp& lane, const UOp& e) const { return operand_index(a_layout, lane, e); }
std::pair<UOp, UOp> MfmaLayout::b(const UOp& lane, const UOp& e) const { return operand_index(b_layout, lane, e); }
std::pair<UOp, UOp> MfmaLayout::d(const UOp& lane, const UOp& e) const { return operand_index(d_layout, lane, e); }

MfmaLayout mfma_layout(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input) {
  Layout a = mfma_operand(arch, m, n, k, input, MatrixOperand::A), b = mfma_operand(arch, m, n, k, input, MatrixOperand::B),
         d = mfma_operand(arch, m, n, k, input, MatrixOperand::C);
  return {WmmaArg{m, n, k, input, dtypes::float32, 64}, registers(a), registers(b), registers(d), std::move(a), std::move(b), std::move(d)};
}

}  // namespace weft::tile
