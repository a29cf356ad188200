#include "weft/kernels/mma_layout.h"

#include "weft/kernels/layout_expr.h"

namespace weft::tile {

std::pair<UOp, UOp> MmaLayout::a(const UOp& lane, const UOp& e) const { return operand_index(a_layout, lane, e); }
std::pair<UOp, UOp> MmaLayout::b(const UOp& lane, const UOp& e) const { return operand_index(b_layout, lane, e); }
std::pair<UOp, UOp> MmaLayout::d(const UOp& lane, const UOp& e) const { return operand_index(d_layout, lane, e); }

MmaLayout mma_m16n8k16(DType input) {
  Layout a = mma_m16n8k16_operand(input, MatrixOperand::A), b = mma_m16n8k16_operand(input, MatrixOperand::B),
         d = mma_m16n8k16_operand(input, MatrixOperand::C);
  return {WmmaArg{16, 8, 16, input, dtypes::float32, 32}, 8, 4, 4, std::move(a), std::move(b), std::move(d)};
}

}  // namespace weft::tile
