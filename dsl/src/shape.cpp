// Shapes of buffer-like nodes. The builder validates arguments before a node is made
// (builder.cpp) and the verifier checks graphs made by other means, so this only derives,
// and on malformed input it gives up quietly (an empty or partial shape) instead of throwing.
#include "weft/dsl/uop.h"

namespace weft {
namespace {

UOp index_const(int64_t v) { return UOp::make(Op::CONST, dtypes::index, {}, Wide(v)); }

std::vector<UOp> consts(const std::vector<int64_t>& values) {
  std::vector<UOp> out;
  for (int64_t v : values) out.push_back(index_const(v));
  return out;
}

UOp times(const UOp& a, const UOp& b) {
  if (a.is_const() && b.is_const()) return index_const(static_cast<int64_t>(a.const_int() * b.const_int()));
  return UOp::make(Op::MUL, dtypes::index, {a, b});
}

std::vector<UOp> base_static(const UOp& base) {
  std::vector<UOp> s = base.shape();
  for (const UOp& d : s)
    if (!d.is_const()) return {};
  return s;
}

}  // namespace

std::vector<UOp> compute_shape(Op op, const std::vector<UOp>& src, const Arg& arg) {
  if (op == Op::PLACEHOLDER) return src;
  if (src.empty()) return {};
  if (op == Op::AFTER) return src[0].shape();
  if (op == Op::PAD && src.size() > 1) return {src.begin() + 1, src.end()};  // pad_to: the new sizes
  if (!std::holds_alternative<ShapeArg>(arg)) return {};
  auto values = [&]() -> const std::vector<int64_t>& { return std::get<ShapeArg>(arg).values; };
  switch (op) {
    case Op::RESHAPE:
    case Op::EXPAND: return consts(values());
    case Op::FLIP: return src[0].shape();
    case Op::PERMUTE: {
      std::vector<UOp> out;
      for (int64_t axis : values()) {
        if (axis < 0 || static_cast<size_t>(axis) >= src[0].shape().size()) return {};  // the verifier reports it
        out.push_back(src[0].shape()[static_cast<size_t>(axis)]);
      }
      return out;
    }
    case Op::SHRINK: {
      std::vector<int64_t> out;
      for (size_t i = 0; i + 1 < values().size(); i += 2) out.push_back(values()[i + 1] - values()[i]);
      return consts(out);
    }
    case Op::PAD: {
      std::vector<UOp> in = base_static(src[0]);
      std::vector<int64_t> out;
      for (size_t i = 0; i < in.size() && 2 * i + 1 < values().size(); ++i)
        out.push_back(static_cast<int64_t>(in[i].const_int()) + values()[2 * i] + values()[2 * i + 1]);
      return consts(out);
    }
    case Op::UNSHARD: {
      std::vector<UOp> out = src[0].shape();
      const auto& axes = values();
      for (size_t k = 0; k < axes.size() && k + 1 < src.size(); ++k) {
        auto axis = static_cast<size_t>(axes[k]);
        if (axis < out.size() && src[k + 1].op() == Op::RANGE) out[axis] = times(out[axis], src[k + 1].src(0));
      }
      return out;
    }
    default: return {};
  }
}

}  // namespace weft
