#include "weft/kernels/tile.h"

#include "weft/dsl/print.h"

namespace weft::tile {

TileBlock::TileBlock(std::vector<int64_t> grid, int64_t threads_y, int64_t threads_x)
    : threads_y_(threads_y), threads_x_(threads_x) {
  if (grid.empty() || grid.size() > 3) throw Error("TileBlock: a grid of 1 to 3 dimensions, got " + std::to_string(grid.size()));
  int64_t id = 0;
  for (int64_t g : grid) blocks_.push_back(weft::range(g, id++, AxisType::GLOBAL));
  tx_ = weft::range(threads_x, id++, AxisType::LOCAL);
  ty_ = weft::range(threads_y, id++, AxisType::LOCAL);
  next_id_ = id;
}

UOp TileBlock::range(int64_t size, AxisType axis) { return weft::range(size, next_id_++, axis); }
UOp TileBlock::range(const UOp& size, AxisType axis) { return weft::range(size, next_id_++, axis); }

TileBlock::Ownership TileBlock::ownership(const char* what, const UOp& tile) const {
  auto shape = tile.static_shape();
  if (shape.size() != 2) throw Error(std::string(what) + ": tiles are 2-D, got shape of rank " + std::to_string(shape.size()));
  if (shape[0] % threads_y_ != 0 || shape[1] % threads_x_ != 0)
    throw Error(std::string(what) + ": a " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + " tile does not divide over " +
                std::to_string(threads_y_) + "x" + std::to_string(threads_x_) + " threads");
  return {shape[0] / threads_y_, shape[1] / threads_x_};
}

UOp TileBlock::fragment(const std::vector<int64_t>& shape, DType dtype) {
  if (shape.size() != 2) throw Error("fragment: tiles are 2-D");
  return alloc_fragment(shape, dtype, {0, 1}, {ty_, tx_});
}

UOp TileBlock::clear(const UOp& frag) {
  auto own = ownership("clear", frag);
  UOp i = range(own.rows_per_thread, AxisType::LOOP), j = range(own.cols_per_thread, AxisType::UPCAST);
  return frag[{i * threads_y_ + ty_, tx_ * own.cols_per_thread + j}].set(constant(0.0, frag.dtype()), {i, j});
}

UOp TileBlock::copy_to_shared(const UOp& shared, const UOp& global, const UOp& row0, const UOp& col0) {
  auto own = ownership("copy_to_shared", shared);
  if (!(shared.dtype() == global.dtype()))
    throw Error("copy_to_shared: the shared tile is " + shared.dtype().name() + ", the global buffer " + global.dtype().name());
  UOp i = range(own.rows_per_thread, AxisType::LOOP), j = range(own.cols_per_thread, AxisType::UPCAST);
  UOp r = i * threads_y_ + ty_, c = tx_ * own.cols_per_thread + j;
  return shared[{r, c}].store(global[{row0 + r, col0 + c}].load()).end({i, j});
}

UOp TileBlock::copy_to_fragment(const UOp& frag, const UOp& source, const UOp& row0, const UOp& col0) {
  auto own = ownership("copy_to_fragment", frag);
  UOp i = range(own.rows_per_thread, AxisType::LOOP), j = range(own.cols_per_thread, AxisType::UPCAST);
  UOp r = i * threads_y_ + ty_, c = tx_ * own.cols_per_thread + j;
  return frag[{r, c}].set(source[{row0 + r, col0 + c}].load().cast(frag.dtype()), {i, j});
}

UOp TileBlock::gemm(const UOp& a, const UOp& b, const UOp& c, const std::vector<UOp>& outer) {
  auto own = ownership("gemm", c);
  auto as = a.static_shape(), bs = b.static_shape(), cs = c.static_shape();
  if (as.size() != 2 || bs.size() != 2 || as[1] != bs[0] || as[0] != cs[0] || bs[1] != cs[1])
    throw Error("gemm: shapes do not chain: A " + std::to_string(as.at(0)) + "x" + std::to_string(as.at(1)) + ", B " +
                std::to_string(bs.at(0)) + "x" + std::to_string(bs.at(1)) + ", C " + std::to_string(cs[0]) + "x" + std::to_string(cs[1]));
  UOp k = range(as[1], AxisType::LOOP);
  UOp i = range(own.rows_per_thread, AxisType::LOOP), j = range(own.cols_per_thread, AxisType::UPCAST);
  UOp r = i * threads_y_ + ty_, col = tx_ * own.cols_per_thread + j;
  // One fused multiply-add per step (MULACC: one rounding), as tilelang's T.gemm and the
  // hardware's FMA units do.
  UOp acc = mulacc(a[{r, k}].load().cast(c.dtype()), b[{k, col}].load().cast(c.dtype()), c.after({k})[{r, col}].load());
  std::vector<UOp> ends{k, i, j};
  ends.insert(ends.end(), outer.begin(), outer.end());
  return c[{r, col}].set(acc, ends);
}

UOp TileBlock::copy_from_fragment(const UOp& frag, const UOp& global, const UOp& row0, const UOp& col0,
                                  const std::function<UOp(const UOp&)>& epilogue) {
  auto own = ownership("copy_from_fragment", frag);
  UOp i = range(own.rows_per_thread, AxisType::LOOP), j = range(own.cols_per_thread, AxisType::UPCAST);
  UOp r = i * threads_y_ + ty_, c = tx_ * own.cols_per_thread + j;
  UOp v = frag[{r, c}].load();
  if (epilogue) v = epilogue(v);
  std::vector<UOp> ends{i, j, tx_, ty_};
  ends.insert(ends.end(), blocks_.begin(), blocks_.end());
  return global[{row0 + r, col0 + c}].store(v.cast(global.dtype())).end(ends);
}

UOp relu(const UOp& x) { return max(x, x.const_like(0.0)); }

}  // namespace weft::tile
