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

MfmaAccumulator TileBlock::mfma_accumulator(int64_t rows, int64_t cols, const MfmaLayout& layout, int64_t id) {
  if (threads_x_ != 16 || threads_y_ != 4)
    throw Error("mfma_accumulator: the block must be one wave as 16 x 4 threads, not " + std::to_string(threads_x_) + " x " +
                std::to_string(threads_y_));
  if (layout.shape.m != 16 || layout.shape.n != 16)
    throw Error("mfma_accumulator: the tile layer accumulates in 16x16 MFMA layouts, not " + std::to_string(layout.shape.m) + "x" +
                std::to_string(layout.shape.n));
  if (rows % 16 || cols % 16 || rows <= 0 || cols <= 0)
    throw Error("mfma_accumulator: a " + std::to_string(rows) + "x" + std::to_string(cols) + " tile is not made of 16x16 sub-tiles");
  MfmaAccumulator c{alloc_fragment({rows / 16, cols / 16, 16, 16}, dtypes::float32, {2, 3}, {ty_, tx_}, id), layout, rows / 16, cols / 16};
  return c;
}

MfmaAccumulator TileBlock::clear(const MfmaAccumulator& c) {
  UOp tm = range(c.tiles_m, AxisType::UNROLL), tn = range(c.tiles_n, AxisType::UNROLL), e = range(4, AxisType::UPCAST);
  MfmaAccumulator out = c;
  out.frag = c.frag[{tm, tn, ty_ * 4 + e, tx_}].set(constant(0.0, dtypes::float32), {tm, tn, e});
  return out;
}

MfmaAccumulator TileBlock::gemm(const UOp& a, const UOp& b, const MfmaAccumulator& c, const std::vector<UOp>& outer) {
  auto as = a.static_shape(), bs = b.static_shape();
  const int64_t k = c.layout.shape.k;
  if (as.size() != 2 || bs.size() != 2 || as[1] != bs[0] || as[0] != 16 * c.tiles_m || bs[1] != 16 * c.tiles_n || as[1] % k)
    throw Error("gemm (wmma): A " + std::to_string(as.at(0)) + "x" + std::to_string(as.at(1)) + " and B " + std::to_string(bs.at(0)) + "x" +
                std::to_string(bs.at(1)) + " do not chain into the " + std::to_string(16 * c.tiles_m) + "x" + std::to_string(16 * c.tiles_n) +
                " accumulator in steps of k=" + std::to_string(k));
  const UOp lane = tx_ + ty_ * 16;
  UOp ks = range(as[1] / k, AxisType::LOOP);
  UOp tm = range(c.tiles_m, AxisType::UNROLL), tn = range(c.tiles_n, AxisType::UNROLL);
  UOp ea = range(c.layout.a_elements, AxisType::UPCAST), eb = range(c.layout.b_elements, AxisType::UPCAST);
  auto [ar, ac] = c.layout.a(lane, ea);
  auto [br, bc] = c.layout.b(lane, eb);
  UOp a_frag = a[{tm * 16 + ar, ks * k + ac}].load().contract({ea});
  UOp b_frag = b[{ks * k + br, tn * 16 + bc}].load().contract({eb});
  const UOp acc = c.frag.after({ks});
  std::vector<UOp> lanes;
  for (int64_t e = 0; e < 4; ++e) lanes.push_back(acc[{tm, tn, ty_ * 4 + e, tx_}].load());
  UOp d = wmma(a_frag, b_frag, vectorize(lanes), c.layout.shape);
  std::vector<UOp> stores;
  for (int64_t e = 0; e < 4; ++e) stores.push_back(c.frag[{tm, tn, ty_ * 4 + e, tx_}].store(d.gep(e)));
  std::vector<UOp> ends{ks, tm, tn};
  ends.insert(ends.end(), outer.begin(), outer.end());
  MfmaAccumulator out = c;
  out.frag = c.frag.after({group(stores).end(ends)});
  return out;
}

UOp TileBlock::copy_from_fragment(const MfmaAccumulator& c, const UOp& global, const UOp& row0, const UOp& col0) {
  UOp tm = range(c.tiles_m, AxisType::UNROLL), tn = range(c.tiles_n, AxisType::UNROLL), e = range(4, AxisType::UPCAST);
  UOp v = c.frag[{tm, tn, ty_ * 4 + e, tx_}].load();
  std::vector<UOp> ends{tm, tn, e, tx_, ty_};
  ends.insert(ends.end(), blocks_.begin(), blocks_.end());
  return global[{row0 + tm * 16 + ty_ * 4 + e, col0 + tn * 16 + tx_}].store(v.cast(global.dtype())).end(ends);
}

UOp relu(const UOp& x) { return max(x, x.const_like(0.0)); }

}  // namespace weft::tile
