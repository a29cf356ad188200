// Pass 2: views to flat indices. An index into a view is rewritten, view by view from the
// outside in, into an index into the view's source, down to the base buffer, where the
// row-major strides give one flat index. PAD contributes a validity condition.
#include <cmath>

#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"
#include "weft/lowering/symbolic.h"

namespace weft::lower {
namespace {

struct Indexed {
  UOp buffer;               // the current buffer (a view, AFTER or placeholder)
  std::vector<UOp> idx;     // one index per dimension of `buffer`
  UOp valid;                // null while always valid
};

void add_condition(Indexed& x, const UOp& c) { x.valid = x.valid.is_null() ? c : (x.valid & c); }

UOp dim(const UOp& buffer, size_t i) { return buffer.shape().at(i); }

// Indices into a buffer of `shape`, from indices into a reshape of it to `new_shape`.
std::vector<UOp> unreshape(const std::vector<UOp>& idx, const std::vector<int64_t>& new_shape, const std::vector<UOp>& shape) {
  UOp flat = constant(Wide(0));
  for (size_t i = 0; i < idx.size(); ++i) flat = flat * new_shape[i] + idx[i];
  std::vector<UOp> out(shape.size());
  for (size_t j = shape.size(); j-- > 0;) {
    out[j] = j == 0 ? flat : flat % shape[j];
    if (j > 0) flat = flat / shape[j];
  }
  return out;
}

// One step inward: `x` indexes a view; return the same element as an index into its source.
Indexed step(const Indexed& x) {
  const UOp& v = x.buffer;
  const UOp& source = v.src(0);
  const std::vector<int64_t>& a = v.op() == Op::AFTER ? std::vector<int64_t>{} : v.arg_as<ShapeArg>().values;
  Indexed in{source, x.idx, x.valid};
  switch (v.op()) {
    case Op::RESHAPE: in.idx = unreshape(x.idx, a, source.shape()); break;
    case Op::PERMUTE:
      for (size_t i = 0; i < a.size(); ++i) in.idx[static_cast<size_t>(a[i])] = x.idx[i];
      break;
    case Op::SHRINK:
      for (size_t i = 0; i < x.idx.size(); ++i) in.idx[i] = x.idx[i] + a[2 * i];
      break;
    case Op::FLIP:
      for (int64_t axis : a) in.idx[static_cast<size_t>(axis)] = dim(source, static_cast<size_t>(axis)) - 1 - x.idx[static_cast<size_t>(axis)];
      break;
    case Op::PAD:
      if (v.src().size() > 1) {  // pad_to: the same index, valid below the source's size
        for (size_t i = 0; i < x.idx.size(); ++i)
          if (simplify(x.idx[i] < dim(source, i)).vmin() != 1) add_condition(in, x.idx[i] < dim(source, i));
        break;
      }
      for (size_t i = 0; i < x.idx.size(); ++i) {
        const int64_t before = a[2 * i], after = a[2 * i + 1];
        if (before == 0 && after == 0) continue;
        in.idx[i] = x.idx[i] - before;
        if (before > 0) add_condition(in, x.idx[i] >= before);
        if (after > 0) add_condition(in, x.idx[i] < dim(source, i) + before);
      }
      break;
    case Op::EXPAND:
      for (size_t i = 0; i < x.idx.size(); ++i)
        if (dim(source, i).is_const() && dim(source, i).const_int() == 1 && a[i] != 1) in.idx[i] = constant(Wide(0));
      break;
    default: throw Error("flatten_views: unexpected " + std::string(op_name(v.op())) + " under an index");
  }
  return in;
}

// The AFTERs between the index and the placeholder, kept around the placeholder.
UOp rewrap(const std::vector<UOp>& afters, UOp base) {
  for (size_t i = afters.size(); i-- > 0;) {
    std::vector<UOp> src = afters[i].src();
    src[0] = base;
    base = afters[i].with_src(std::move(src));
  }
  return base;
}


// An index whose access happens only where `valid` holds (and where it held before).
UOp guarded(const UOp& index, const UOp& valid) {
  std::vector<UOp> src = index.src();
  if (src.size() > 2) src[2] = src[2] & valid;
  else src.push_back(valid);
  return index.with_src(std::move(src));
}

// A masked LOAD {index, mask, fill} or STORE {index, value, mask}: the mask joins the index's
// validity; a load keeps its fill unless it is 0 (what an invalid index reads anyway).
std::optional<UOp> fold_mask(const UOp& u) {
  if (u.op() == Op::LOAD && u.src().size() == 3) {
    const UOp index = guarded(u.src(0), u.src(1)), fill = u.src(2);
    const bool zero = fill.is_const() && (fill.dtype().is_float() ? fill.const_float() == 0.0 && !std::signbit(fill.const_float())
                                                                  : fill.const_int() == 0);
    return zero ? UOp::make(Op::LOAD, u.dtype(), {index}) : UOp::make(Op::LOAD, u.dtype(), {index, fill});
  }
  if (u.op() == Op::STORE && u.src().size() == 3) return UOp::make(Op::STORE, dtypes::void_, {guarded(u.src(0), u.src(2)), u.src(1)});
  return std::nullopt;
}

}  // namespace

UOp flatten_views(const UOp& kernel) {
  return transform(kernel, [](const UOp&, const UOp& u) -> std::optional<UOp> {
    if (u.op() == Op::LOAD || u.op() == Op::STORE) return fold_mask(u);
    if (u.op() != Op::INDEX || (u.src().size() == 2 && u.src(0).op() == Op::PLACEHOLDER)) return std::nullopt;
    Indexed x{u.src(0), {u.src().begin() + 1, u.src().end()}, {}};
    std::vector<UOp> afters;
    while (x.buffer.op() != Op::PLACEHOLDER) {
      if (x.buffer.op() == Op::AFTER) {
        afters.push_back(x.buffer);
        x.buffer = x.buffer.src(0);
      } else {
        x = step(x);
      }
    }
    UOp flat = constant(Wide(0));
    for (size_t i = 0; i < x.idx.size(); ++i) flat = flat * dim(x.buffer, i) + x.idx[i];
    std::vector<UOp> src{rewrap(afters, x.buffer), flat};
    if (!x.valid.is_null()) src.push_back(x.valid);
    return UOp::make(Op::INDEX, u.dtype(), std::move(src));
  });
}

}  // namespace weft::lower
