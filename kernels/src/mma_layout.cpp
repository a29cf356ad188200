#include "weft/kernels/mma_layout.h"

#include "weft/dsl/builder.h"

namespace weft::tile {

std::pair<UOp, UOp> MmaLayout::a(const UOp& lane, const UOp& e) const {
  UOp g = lane / 4, t = lane % 4;
  return {g + ((e / 2) % 2) * 8, t * 2 + e % 2 + (e / 4) * 8};
}

std::pair<UOp, UOp> MmaLayout::b(const UOp& lane, const UOp& e) const {
  UOp g = lane / 4, t = lane % 4;
  return {t * 2 + e % 2 + (e / 2) * 8, g};
}

std::pair<UOp, UOp> MmaLayout::d(const UOp& lane, const UOp& e) const {
  UOp g = lane / 4, t = lane % 4;
  return {g + (e / 2) * 8, t * 2 + e % 2};
}

MmaLayout mma_m16n8k16(DType input) {
  if (input != dtypes::float16 && input != dtypes::bfloat16)
    throw Error("mma_m16n8k16: inputs are float16 or bfloat16, not " + input.name());
  MmaLayout l;
  l.shape = WmmaArg{16, 8, 16, input, dtypes::float32, 32};
  return l;
}

}  // namespace weft::tile
