#include "weft/kernels/tiles.h"

#include <bit>

#include "weft/kernels/layout_expr.h"

namespace weft::tile {
namespace {

int log2_exact(int64_t v, const std::string& what) {
  if (v <= 0 || !std::has_single_bit(static_cast<uint64_t>(v))) throw Error(what + ": " + std::to_string(v) + " is not a power of two");
  return std::countr_zero(static_cast<uint64_t>(v));
}

std::string shape_text(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// Bytes one lane moves into LDS per direct-to-LDS instruction: buffer_load_dwordx4 ... lds on
// gfx950, a dword on gfx942 (CDNA3 has no wider LDS DMA); cp.async.cg's 16 on NVIDIA.
int64_t dma_bytes(const std::string& arch) { return arch == "gfx950" || is_nvidia(arch) ? 16 : 4; }

// Lanes [first, first + count) of vector v (v itself when that is all of it).
UOp lanes_of(const UOp& v, int64_t first, int64_t count) {
  if (first == 0 && count == v.dtype().lanes) return v;
  std::vector<UOp> out;
  for (int64_t e = first; e < first + count; ++e) out.push_back(v.gep(e));
  return vectorize(out);
}

// Where register e of sub-tile (i, j) of the calling lane's accumulator sits, as (row0 + row,
// col0 + col).
std::pair<UOp, UOp> acc_position(const Workgroup& wg, const acc& c, int64_t i, int64_t j, int64_t e, const UOp& row0, const UOp& col0) {
  const LayoutInputs at{{"register", constant(Wide(e))}, {"lane", wg.lane()}};
  return {row0 + i * 16 + layout_index(c.layout, at, "row"), col0 + j * 16 + layout_index(c.layout, at, "col")};
}

}  // namespace

Workgroup::Workgroup(std::string arch, const std::vector<UOp>& grid, int64_t wave_rows, int64_t wave_cols, int64_t wave_size)
    : arch_(std::move(arch)), wave_rows_(wave_rows), wave_cols_(wave_cols), wave_size_(wave_size) {
  if (grid.empty() || grid.size() > 3) throw Error("Workgroup: a grid of 1 to 3 dimensions, got " + std::to_string(grid.size()));
  if (wave_rows < 1 || wave_cols < 1 || wave_rows * wave_cols * wave_size > 1024)
    throw Error("Workgroup: " + std::to_string(wave_rows) + " x " + std::to_string(wave_cols) + " waves of " + std::to_string(wave_size) +
                " lanes; at most 1024 work-items");
  int64_t id = 0;
  for (const UOp& g : grid) blocks_.push_back(weft::range(g, id++, AxisType::GLOBAL));
  lane_ = weft::range(wave_size, id++, AxisType::LOCAL);
  wave_row_ = weft::range(wave_rows, id++, AxisType::WARP);
  wave_col_ = weft::range(wave_cols, id++, AxisType::WARP);
  next_id_ = id;
}

UOp Workgroup::range(int64_t size, AxisType axis) const { return weft::range(size, next_id_++, axis); }
UOp Workgroup::range(const UOp& size, AxisType axis) const { return weft::range(size, next_id_++, axis); }

std::vector<UOp> Workgroup::hardware_ranges() const {
  std::vector<UOp> r{lane_, wave_row_, wave_col_};
  r.insert(r.end(), blocks_.begin(), blocks_.end());
  return r;
}

gl global(int64_t slot, const UOp& rows, const UOp& cols, DType dtype) {
  const UOp r = rows.dtype() == dtypes::index ? rows : rows.cast(dtypes::index), c = cols.dtype() == dtypes::index ? cols : cols.cast(dtypes::index);
  return {placeholder(std::vector<UOp>{r, c}, dtype, slot), r, c};
}

st st::after(const std::vector<UOp>& effects) const {
  st out = *this;
  out.buffer = buffer.after(effects);
  return out;
}

st shared(int64_t rows, int64_t cols, DType dtype, SharedSwizzle swizzle, int64_t stages) {
  if (stages < 1) throw Error("shared: a tile has at least one stage, got " + std::to_string(stages));
  Layout layout = shared_tile(swizzle, rows, cols, dtype);
  return {alloc_shared({stages * rows * cols}, dtype), rows, cols, stages, dtype, std::move(layout)};
}

WmmaArg mma_shape(const Workgroup& wg, DType input) {
  if (input != dtypes::bfloat16 && input != dtypes::float16)
    throw Error("mma_shape: the tile layer's matrix instructions take bfloat16 or float16 inputs, not " + input.name());
  const bool nvidia = is_nvidia(wg.arch());
  if (!nvidia && wg.arch() != "gfx950" && wg.arch() != "gfx942")
    throw Error("mma_shape: no MFMA or mma.sync on target '" + wg.arch() + "' (gfx942, gfx950, sm_XY)");
  if (wg.wave_size() != (nvidia ? 32 : 64))
    throw Error("mma_shape: " + std::string(nvidia ? "mma.sync on " : "an MFMA on ") + wg.arch() + " runs on " + (nvidia ? "32-lane warps" : "64-lane waves") +
                ", not waves of " + std::to_string(wg.wave_size()));
  if (nvidia) return WmmaArg{16, 8, 16, input, dtypes::float32, 32};  // mma.sync.aligned.m16n8k16 (mma_m16n8k16_operand)
  return WmmaArg{16, 16, wg.arch() == "gfx950" ? 32 : 16, input, dtypes::float32, wg.wave_size()};
}

Layout operand_layout(const Workgroup& wg, DType input, MatrixOperand which) {
  const WmmaArg shape = mma_shape(wg, input);
  if (!is_nvidia(wg.arch())) return mfma_operand(wg.arch(), 16, 16, shape.k, input, which);
  const Layout one = mma_m16n8k16_operand(input, which);
  // B is k x 8 and C 16 x 8: a second instruction's 8 columns above the first's.
  return which == MatrixOperand::A ? one : one * Layout::identity("register", "col", 1);
}

acc accumulator(const Workgroup& wg, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0 || rows % 16 || cols % 16) throw Error("accumulator: a " + shape_text(rows, cols) + " tile is not made of 16x16 sub-tiles");
  Layout layout = operand_layout(wg, dtypes::bfloat16, MatrixOperand::C);
  const int64_t elements = 16 * 16 / wg.wave_size();
  return {placeholder({rows / 16, cols / 16, elements}, dtypes::float32, fresh_id(), AddrSpace::REG), rows, cols, elements, std::move(layout)};
}

UOp load(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0) {
  if (!(src.buffer.dtype() == dst.dtype))
    throw Error("load(st, gl): the shared tile holds " + dst.dtype.name() + ", the global tensor " + src.buffer.dtype().name());
  const int64_t vec = dma_bytes(wg.arch()) / dst.dtype.itemsize();
  const int64_t per_instruction = wg.threads() * vec;
  if (dst.size() % per_instruction)
    throw Error("load(st, gl): a " + shape_text(dst.rows, dst.cols) + " tile is not a whole number of direct-to-LDS rounds of " +
                std::to_string(per_instruction) + " elements (" + std::to_string(wg.threads()) + " threads x " + std::to_string(vec) + ")");
  const int64_t rounds = dst.size() / per_instruction;
  // Lane-linear destination: element e of lane l of wave w in round i is at offset
  // ((i * waves + w) * wave_size + l) * vec + e. The shared layout's inverse says which (row,
  // col) lives there, so that is what the lane reads from global memory.
  const Layout destination = Layout::identity("element", "offset", log2_exact(vec, "elements per lane")) *
                             Layout::identity("lane", "offset", log2_exact(wg.wave_size(), "wave size")) *
                             Layout::identity("wave", "offset", log2_exact(wg.waves(), "waves")) *
                             Layout::identity("round", "offset", log2_exact(rounds, "rounds"));
  const Layout to_tile = destination.then(dst.layout.invert());
  if (to_tile.contiguous("element", "col") < vec)
    throw Error("load(st, gl): the shared layout splits a lane's " + std::to_string(vec) + " consecutive elements across columns");
  const UOp round = wg.range(rounds, AxisType::UNROLL);
  const LayoutInputs at{{"element", constant(Wide(0))}, {"lane", wg.lane()}, {"wave", wg.wave()}, {"round", round}};
  const UOp row = layout_index(to_tile, at, "row"), col = layout_index(to_tile, at, "col");
  // Whole tiles past the tensor's end read zeros: the padded view's validity becomes the
  // buffer range check of each lane.
  const UOp padded_rows = (src.rows + (dst.rows - 1)) / dst.rows * dst.rows, padded_cols = (src.cols + (dst.cols - 1)) / dst.cols * dst.cols;
  const UOp from = src.buffer.pad_to({padded_rows, padded_cols})[{row0 + row, col0 + col}];
  const UOp to = dst.buffer[stage * dst.size() + ((round * wg.waves() + wg.wave()) * wg.wave_size() + wg.lane()) * vec];
  return async_copy(to, from, vec).end({round});
}

int64_t fill_instructions(const Workgroup& wg, const st& dst) { return dst.size() / (wg.threads() * (dma_bytes(wg.arch()) / dst.dtype.itemsize())); }

Layout transposed(const Layout& l) {
  const int rb = l.out_dims().at(0).bits, cb = l.out_dims().at(1).bits;
  std::vector<Layout::Coords> images;
  for (int b = 0; b < rb; ++b) images.push_back({{"col", int64_t{1} << b}});
  for (int b = 0; b < cb; ++b) images.push_back({{"row", int64_t{1} << b}});
  return l.then(Layout({{"row", rb}, {"col", cb}}, {{"row", cb}, {"col", rb}}, images));
}

UOp read_operand_part(const Workgroup& wg, const st& src, const UOp& stage, const Layout& to_offset, int64_t i, int64_t j, const UOp& block) {
  const int64_t registers = int64_t{1} << to_offset.in_dims().at(0).bits;
  const int64_t width = aligned_vector_width(to_offset, "register", "offset", std::min<int64_t>(registers, 16 / src.dtype.itemsize()));
  std::vector<UOp> reads, lanes;
  for (int64_t r = 0; r < registers; r += width) {
    const LayoutInputs at{{"register", constant(Wide(r))}, {"lane", wg.lane()}, {"sub_row", constant(Wide(i))},
                          {"sub_col", constant(Wide(j))}, {"block", block}};
    const UOp granule = layout_granule(to_offset, at, "register", "offset", width);
    reads.push_back(src.buffer[stage * src.size() + granule * width].vec(width).load());
    for (int64_t e = 0; e < width; ++e) lanes.push_back(width == 1 ? reads.back() : reads.back().gep(e));
  }
  return reads.size() == 1 ? reads[0] : vectorize(lanes);
}

rt load(const Workgroup& wg, const st& src, const UOp& stage, MatrixOperand operand, int64_t rows, const UOp& block) {
  const WmmaArg shape = mma_shape(wg, src.dtype);
  if (operand == MatrixOperand::C) throw Error("load(rt, st): an accumulator is not loaded from shared memory");
  if (rows % 16 || src.rows % rows || src.cols % shape.k)
    throw Error("load(rt, st): " + std::to_string(rows) + " rows of a " + shape_text(src.rows, src.cols) + " tile in 16 x " +
                std::to_string(shape.k) + " operand sub-tiles");
  Layout sub = operand_layout(wg, src.dtype, operand);
  if (operand == MatrixOperand::B) sub = transposed(sub);
  // The whole tile: sub-tile rows and k steps above the operand's own bits, the wave's block of
  // rows above those.
  const Layout place = sub * Layout::identity("sub_row", "row", log2_exact(rows / 16, "sub-tile rows")) *
                       Layout::identity("sub_col", "col", log2_exact(src.cols / shape.k, "k steps")) *
                       Layout::identity("block", "row", log2_exact(src.rows / rows, "row blocks"));
  const Layout to_offset = place.then(src.layout);
  rt out{{}, rows, src.cols, 16, shape.k, sub};
  for (int64_t i = 0; i < rows / 16; ++i)
    for (int64_t j = 0; j < src.cols / shape.k; ++j) out.parts.push_back(read_operand_part(wg, src, stage, to_offset, i, j, block));
  return out;
}

acc zero(const acc& c, const Workgroup& wg) {
  (void)wg;
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) stores.push_back(c.buffer[{constant(Wide(i)), constant(Wide(j)), constant(Wide(e))}].store(constant(0.0, dtypes::float32)));
  acc out = c;
  out.buffer = c.buffer.after({group(stores)});
  return out;
}

acc mma_ABt(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority) {
  const WmmaArg shape = mma_shape(wg, a.parts.empty() ? dtypes::bfloat16 : a.parts[0].dtype().element());
  if (a.rows != c.rows || b.rows != c.cols || a.cols != b.cols || a.sub_cols != shape.k || b.sub_cols != shape.k)
    throw Error("mma_ABt: A " + shape_text(a.rows, a.cols) + " and B " + shape_text(b.rows, b.cols) + " (as N x K) do not make the " +
                shape_text(c.rows, c.cols) + " accumulator");
  const UOp current = loops.empty() ? c.buffer : c.buffer.after(loops);
  // Instructions per 16x16 sub-tile (operand_layout): 1 MFMA, or 2 mma.sync each on its half of
  // B's and C's registers.
  const int64_t pieces = 16 * 16 / (shape.m * shape.n), c_per = c.elements / pieces;
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j) {
      std::vector<UOp> d(static_cast<size_t>(pieces));
      for (int64_t p = 0; p < pieces; ++p) {
        std::vector<UOp> lanes;
        for (int64_t e = p * c_per; e < (p + 1) * c_per; ++e) lanes.push_back(current[{constant(Wide(i)), constant(Wide(j)), constant(Wide(e))}].load());
        d[static_cast<size_t>(p)] = vectorize(lanes);
      }
      for (int64_t kk = 0; kk < a.cols / shape.k; ++kk) {
        const UOp bp = b.part(j, kk);
        const int64_t b_per = bp.dtype().lanes / pieces;
        for (int64_t p = 0; p < pieces; ++p) d[static_cast<size_t>(p)] = wmma(a.part(i, kk), lanes_of(bp, p * b_per, b_per), d[static_cast<size_t>(p)], shape);
      }
      for (int64_t e = 0; e < c.elements; ++e)
        stores.push_back(c.buffer[{constant(Wide(i)), constant(Wide(j)), constant(Wide(e))}].store(d[static_cast<size_t>(e / c_per)].gep(e % c_per)));
    }
  if (priority >= 0) {
    stores.insert(stores.begin(), wave_priority(priority));
    stores.push_back(wave_priority(0));
  }
  acc out = c;
  out.buffer = c.buffer.after({loops.empty() ? group(stores) : group(stores).end(loops)});  // no loops: one update
  return out;
}

namespace {

UOp element(const UOp& buffer, int64_t i, int64_t j, int64_t e) {
  return buffer[{constant(Wide(i)), constant(Wide(j)), constant(Wide(e))}];
}

// c with a fresh REG buffer of its shape, holding f(i, e, c[i][j][e]).
acc rebuild(const acc& c, const std::function<UOp(int64_t i, int64_t e, const UOp& x)>& f) {
  acc out = c;
  out.buffer = placeholder({c.tiles_m(), c.tiles_n(), c.elements}, dtypes::float32, fresh_id(), AddrSpace::REG);
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) stores.push_back(element(out.buffer, i, j, e).store(f(i, e, element(c.buffer, i, j, e).load())));
  out.buffer = out.buffer.after({group(stores)});
  return out;
}

// Where an accumulator sub-tile's rows live: which lane bits map to columns only (the lanes
// that share a row), checking that every register and lane bit is a row bit or a column bit,
// never both, and that registers hold rows only (one row value per register).
struct RowLanes {
  std::vector<int64_t> column_bits;  // lane masks
};

RowLanes row_lanes(const Layout& layout, const std::string& tile, const std::string& what) {
  RowLanes out;
  const int reg_bits = layout.in_dims().at(0).bits, lane_bits = layout.in_dims().at(1).bits;
  for (int b = 0; b < reg_bits; ++b)
    if (layout.apply({{"register", int64_t{1} << b}, {"lane", 0}}).at("col") != 0)
      throw Error(what + ": the " + tile + "'s register bit " + std::to_string(b) + " selects a column; a row vector needs every register in one row");
  for (int b = 0; b < lane_bits; ++b) {
    const Layout::Coords image = layout.apply({{"register", 0}, {"lane", int64_t{1} << b}});
    if (image.at("row") != 0 && image.at("col") != 0)
      throw Error(what + ": the " + tile + "'s lane bit " + std::to_string(b) + " selects both a row and a column");
    if (image.at("col") != 0) out.column_bits.push_back(int64_t{1} << b);
  }
  return out;
}

rv reduce_rows(const Workgroup& wg, const acc& c, Op op, const std::string& what) {
  const RowLanes lanes = row_lanes(c.layout, shape_text(c.rows, c.cols) + " accumulator", what);
  rv out{{}, c.rows, c.elements, c.layout};
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t e = 0; e < c.elements; ++e) {
      UOp v = element(c.buffer, i, 0, e).load();
      for (int64_t j = 1; j < c.tiles_n(); ++j) v = v.alu(op, {element(c.buffer, i, j, e).load()});
      for (int64_t mask : lanes.column_bits) v = v.alu(op, {shuffle_xor(v, mask, wg.wave_size())});
      out.values.push_back(v);
    }
  return out;
}

acc row_op(const acc& c, const rv& v, const std::string& what, const std::function<UOp(const UOp&, const UOp&)>& f) {
  if (v.rows != c.rows || v.elements != c.elements || !(v.layout == c.layout))
    throw Error(what + ": a row vector of " + std::to_string(v.rows) + " rows (" + std::to_string(v.elements) +
                " values a lane per 16 rows) does not fit the " + shape_text(c.rows, c.cols) + " accumulator");
  return rebuild(c, [&](int64_t i, int64_t e, const UOp& x) { return f(x, v.at(i, e)); });
}

}  // namespace

acc load(const Workgroup& wg, const acc& c, const gl& src, const UOp& row0, const UOp& col0) {
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) {
        const auto [r, col] = acc_position(wg, c, i, j, e, row0, col0);
        const UOp inside = (r < src.rows) & (col < src.cols);
        const UOp v = src.buffer[{r, col}].load(inside, constant(0.0, src.buffer.dtype()));
        stores.push_back(element(c.buffer, i, j, e).store(v.cast(dtypes::float32)));
      }
  acc out = c;
  out.buffer = c.buffer.after({group(stores)});
  return out;
}

UOp load_transposed(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0) {
  if (!(src.buffer.dtype() == dst.dtype))
    throw Error("load_transposed: the shared tile holds " + dst.dtype.name() + ", the global tensor " + src.buffer.dtype().name());
  if (dst.size() % wg.threads())
    throw Error("load_transposed: a " + shape_text(dst.rows, dst.cols) + " tile is not a whole number of rounds of " +
                std::to_string(wg.threads()) + " threads");
  // Round i, thread t: element f = i * threads + t of the source block (dst.cols rows of
  // dst.rows columns, row-major), so neighbouring lanes read neighbouring columns.
  const UOp round = wg.range(dst.size() / wg.threads(), AxisType::UNROLL);
  const UOp f = round * wg.threads() + wg.thread();
  const UOp r = f / dst.rows, c = f % dst.rows;
  const UOp gr = row0 + r, gc = col0 + c;
  const UOp v = src.buffer[{gr, gc}].load((gr < src.rows) & (gc < src.cols), constant(0.0, dst.dtype));
  const UOp offset = layout_index(dst.layout, {{"row", c}, {"col", r}}, "offset");
  return dst.buffer[stage * dst.size() + offset].store(v).end({round});
}

UOp store(const Workgroup& wg, const st& dst, const UOp& stage, const acc& c, const UOp& row0, const UOp& col0) {
  if (c.rows > dst.rows || c.cols > dst.cols)
    throw Error("store(st, acc): a " + shape_text(c.rows, c.cols) + " accumulator does not fit in a " + shape_text(dst.rows, dst.cols) + " tile");
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) {
        const auto [r, col] = acc_position(wg, c, i, j, e, row0, col0);
        const UOp offset = layout_index(dst.layout, {{"row", r}, {"col", col}}, "offset");
        stores.push_back(dst.buffer[stage * dst.size() + offset].store(element(c.buffer, i, j, e).load().cast(dst.dtype)));
      }
  return group(stores);
}

rv row_max(const Workgroup& wg, const acc& c) { return reduce_rows(wg, c, Op::MAX, "row_max"); }
rv row_sum(const Workgroup& wg, const acc& c) { return reduce_rows(wg, c, Op::ADD, "row_sum"); }

acc map(const acc& c, const std::function<UOp(const UOp&)>& f) {
  return rebuild(c, [&](int64_t, int64_t, const UOp& x) { return f(x); });
}
acc sub_row(const acc& c, const rv& v) { return row_op(c, v, "sub_row", [](const UOp& x, const UOp& r) { return x - r; }); }
acc mul_row(const acc& c, const rv& v) { return row_op(c, v, "mul_row", [](const UOp& x, const UOp& r) { return x * r; }); }
acc div_row(const acc& c, const rv& v) { return row_op(c, v, "div_row", [](const UOp& x, const UOp& r) { return x / r; }); }
acc exp2(const acc& c) {
  return map(c, [](const UOp& x) { return weft::exp2(x); });
}

UOp store(const Workgroup& wg, const gl& dst, const rv& v, const UOp& row0, const UOp& col0) {
  const RowLanes lanes = row_lanes(v.layout, std::to_string(v.rows) + "-row vector", "store(gl, rv)");
  // The lane of each row group with every column lane bit zero writes.
  int64_t column_mask = 0;
  for (int64_t m : lanes.column_bits) column_mask |= m;
  const UOp writer = (wg.lane() & column_mask).eq(wg.lane().const_like(Wide(0)));
  std::vector<UOp> stores;
  for (int64_t i = 0; i < v.rows / 16; ++i)
    for (int64_t e = 0; e < v.elements; ++e) {
      const UOp r = row0 + i * 16 + layout_index(v.layout, {{"register", constant(Wide(e))}, {"lane", wg.lane()}}, "row");
      stores.push_back(dst.buffer[{r, col0}].store(v.at(i, e).cast(dst.buffer.dtype()), writer & (r < dst.rows) & (col0 < dst.cols)));
    }
  return group(stores).end(wg.hardware_ranges());
}

UOp store(const Workgroup& wg, const gl& dst, const acc& c, const UOp& row0, const UOp& col0, const std::function<UOp(const UOp&)>& epilogue) {
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) {
        const auto [r, col] = acc_position(wg, c, i, j, e, row0, col0);
        UOp v = c.buffer[{constant(Wide(i)), constant(Wide(j)), constant(Wide(e))}].load();
        if (epilogue) v = epilogue(v);
        stores.push_back(dst.buffer[{r, col}].store(v.cast(dst.buffer.dtype()), (r < dst.rows) & (col < dst.cols)));
      }
  return group(stores).end(wg.hardware_ranges());
}

}  // namespace weft::tile
