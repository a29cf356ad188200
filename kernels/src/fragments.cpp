#include "weft/kernels/fragments.h"

#include <bit>

#include "weft/kernels/layout_expr.h"

namespace weft::tile {
namespace {

int bits_of(int64_t v, const std::string& what, const char* who) {
  if (v <= 0 || !std::has_single_bit(static_cast<uint64_t>(v))) throw Error(std::string(who) + ": " + std::to_string(v) + " " + what + " is not a power of two");
  return std::countr_zero(static_cast<uint64_t>(v));
}

std::string shape_text(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// Where register e of the calling thread sits in c: (row, col) as index values.
std::pair<UOp, UOp> element_at(const Workgroup& wg, const rf& c, int64_t e) {
  const LayoutInputs at{{"register", constant(Wide(e))}, {"lane", wg.lane()}, {"wave", wg.wave()}};
  return {layout_index(c.layout, at, "row"), layout_index(c.layout, at, "col")};
}

UOp reg(const rf& c, int64_t e) { return c.buffer[constant(Wide(e))]; }

}  // namespace

rt load_kn(const Workgroup& wg, const st& src, const UOp& stage, int64_t cols, const UOp& block) {
  const WmmaArg shape = mma_shape(wg, src.dtype);
  if (cols % 16 || src.cols % cols || src.rows % shape.k)
    throw Error("load_kn: " + std::to_string(cols) + " columns of a " + std::to_string(src.rows) + "x" + std::to_string(src.cols) +
                " K x N tile in " + std::to_string(shape.k) + " x 16 operand sub-tiles");
  // The col-major K x N tile seen as the N x K tile mma_ABt takes (the same registers).
  return transpose(load(wg, src, stage, Major::col, cols, block, MatrixOperand::B));
}

rf fragment(const Workgroup& wg, int64_t rows, int64_t cols, DType dtype, int64_t threads_x, std::optional<int64_t> id) {
  const std::string what = "a " + shape_text(rows, cols) + " fragment over " + std::to_string(wg.threads()) + " threads, " + std::to_string(threads_x) + " across";
  if (threads_x <= 0 || wg.threads() % threads_x || cols % threads_x || rows % (wg.threads() / threads_x))
    throw Error("fragment: " + what + ": the tile does not divide over the threads");
  const int64_t threads_y = wg.threads() / threads_x, per_col = cols / threads_x, elements = rows * cols / wg.threads();
  const char* who = "fragment";
  const int ebits = bits_of(elements, "elements per thread", who), lbits = bits_of(wg.wave_size(), "lanes", who), wbits = bits_of(wg.waves(), "waves", who);
  (void)bits_of(threads_x, "threads across", who);
  (void)bits_of(per_col, "columns per thread", who);
  Layout layout = Layout::linear({{"register", ebits}, {"lane", lbits}, {"wave", wbits}}, {{"row", bits_of(rows, "rows", who)}, {"col", bits_of(cols, "columns", who)}},
                                 [&](const Layout::Coords& x) {
                                   const int64_t t = x.at("wave") * wg.wave_size() + x.at("lane"), e = x.at("register");
                                   return Layout::Coords{{"row", (e / per_col) * threads_y + t / threads_x}, {"col", (t % threads_x) * per_col + e % per_col}};
                                 });
  const UOp buffer = placeholder({elements}, dtype, id ? *id : fresh_id(), AddrSpace::REG);
  return {buffer, rows, cols, elements, dtype, std::move(layout)};
}

rf zero(const rf& c) {
  std::vector<UOp> stores;
  for (int64_t e = 0; e < c.elements; ++e) stores.push_back(reg(c, e).store(constant(0.0, c.dtype)));
  rf out = c;
  out.buffer = c.buffer.after({group(stores)});
  return out;
}

UOp copy(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0) {
  if (!(src.buffer.dtype() == dst.dtype))
    throw Error("copy(st, gl): the shared tile holds " + dst.dtype.name() + ", the global tensor " + src.buffer.dtype().name());
  const int64_t vec = std::min<int64_t>(16 / dst.dtype.itemsize(), dst.cols), per_round = wg.threads() * vec;
  if (vec < 1 || dst.cols % vec || dst.size() % per_round)
    throw Error("copy(st, gl): a " + shape_text(dst.rows, dst.cols) + " tile is not a whole number of rounds of " + std::to_string(wg.threads()) +
                " threads x " + std::to_string(vec) + " consecutive elements");
  // Round r, thread t: chunk r * threads + t of `vec` consecutive columns, row-major.
  const UOp round = wg.range(dst.size() / per_round, AxisType::LOOP), j = wg.range(vec, AxisType::UPCAST);
  const UOp chunk = round * wg.threads() + wg.thread();
  const UOp row = chunk / (dst.cols / vec), col = chunk % (dst.cols / vec) * vec + j;
  const UOp to = dst.buffer[stage * dst.size() + layout_index(dst.layout, {{"row", row}, {"col", col}}, "offset")];
  return to.store(src.at(row0 + row, col0 + col).load()).end({round, j});
}

rf load(const Workgroup& wg, const rf& dst, const st& src) {
  if (src.rows != dst.rows || src.cols != dst.cols)
    throw Error("load(rf, st): a " + shape_text(src.rows, src.cols) + " shared tile into a " + shape_text(dst.rows, dst.cols) + " fragment");
  std::vector<UOp> stores;
  for (int64_t e = 0; e < dst.elements; ++e) {
    const auto [row, col] = element_at(wg, dst, e);
    stores.push_back(reg(dst, e).store(src.buffer[layout_index(src.layout, {{"row", row}, {"col", col}}, "offset")].load().cast(dst.dtype)));
  }
  rf out = dst;
  out.buffer = dst.buffer.after({group(stores)});
  return out;
}

rf fma_AB(const Workgroup& wg, const rf& c, const st& a, const st& b, const std::vector<UOp>& loops) {
  if (a.stages != 1 || b.stages != 1) throw Error("fma_AB: the shared tiles have one stage each, not " + std::to_string(a.stages) + " and " + std::to_string(b.stages));
  if (a.rows != c.rows || b.cols != c.cols || a.cols != b.rows)
    throw Error("fma_AB: A " + shape_text(a.rows, a.cols) + " and B " + shape_text(b.rows, b.cols) + " do not make the " + shape_text(c.rows, c.cols) +
                " tile");
  // A thread's registers hold runs of consecutive columns (register bits -> column bits); b's
  // layout says how many of them are one aligned vector.
  int64_t run = 1;
  while (run < c.elements && run < 16 / b.dtype.itemsize() && c.layout.apply({{"register", run}}).at("col") == run &&
         c.layout.apply({{"register", run}}).at("row") == 0)
    run *= 2;
  const int64_t width = std::min(run, aligned_vector_width(b.layout, "col", "offset", run));
  const UOp kk = wg.range(a.cols, AxisType::LOOP);
  std::vector<UOp> all{kk};
  all.insert(all.end(), loops.begin(), loops.end());
  const UOp current = c.buffer.after(all);
  std::vector<UOp> stores;
  UOp b_vec;
  for (int64_t e = 0; e < c.elements; ++e) {
    const auto [row, col] = element_at(wg, c, e);
    if (e % width == 0) {
      const UOp granule = layout_granule(b.layout, {{"row", kk}, {"col", col}}, "col", "offset", width);
      b_vec = b.buffer[granule * width].vec(width).load();
    }
    const UOp bv = width == 1 ? b_vec : b_vec.gep(e % width);
    const UOp av = a.buffer[layout_index(a.layout, {{"row", row}, {"col", kk}}, "offset")].load();
    stores.push_back(reg(c, e).store(mulacc(av.cast(c.dtype), bv.cast(c.dtype), current[constant(Wide(e))].load())));
  }
  rf out = c;
  out.buffer = c.buffer.after({group(stores).end(all)});
  return out;
}

UOp store(const Workgroup& wg, const gl& dst, const rf& c, const UOp& row0, const UOp& col0, const std::function<UOp(const UOp&)>& epilogue) {
  std::vector<UOp> stores;
  for (int64_t e = 0; e < c.elements; ++e) {
    const auto [row, col] = element_at(wg, c, e);
    const UOp r = row0 + row, k = col0 + col;
    UOp v = reg(c, e).load();
    if (epilogue) v = epilogue(v);
    stores.push_back(dst.at(r, k).store(v.cast(dst.buffer.dtype()), dst.inside(r, k)));
  }
  return group(stores).end(wg.hardware_ranges());
}

UOp relu(const UOp& x) { return max(x, x.const_like(0.0)); }

}  // namespace weft::tile
