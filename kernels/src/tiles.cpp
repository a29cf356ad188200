#include "weft/kernels/tiles.h"

#include "tiles_internal.h"

namespace weft::tile {
using detail::acc_position;
using detail::log2_exact;
using detail::shape_text;

namespace {

// Bytes one lane moves into LDS per direct-to-LDS instruction: buffer_load_dwordx4 ... lds on
// gfx950, a dword on gfx942 (CDNA3 has no wider LDS DMA); cp.async.cg's 16 on NVIDIA.
int64_t dma_bytes(const std::string& arch) { return arch == "gfx950" || is_nvidia(arch) ? 16 : 4; }

// Where a fill's lane reads the tensor's (r, c): whole tiles past the tensor's end read zeros,
// the padded view's validity becoming the buffer range check of each lane. A window's rows
// outside it read row `buffer rows` of that view instead: past the buffer's own size, so invalid
// in the same way (an async copy takes no other mask).
UOp fill_source(const gl& src, const st& dst, const UOp& r, const UOp& c) {
  const UOp padded_cols = (src.cols + (dst.cols - 1)) / dst.cols * dst.cols;
  if (!src.first_row.node()) {
    const UOp padded_rows = (src.rows + (dst.rows - 1)) / dst.rows * dst.rows;
    return src.buffer.pad_to({padded_rows, padded_cols})[{r, c}];
  }
  const UOp buffer_rows = src.buffer.shape().at(0);
  return src.buffer.pad_to({buffer_rows + 1, padded_cols})[{(r < src.rows).where(src.first_row + r, buffer_rows), c}];
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
  // ranges_to_hardware orders WARP ranges by id, the first fastest: the column first makes
  // wave() the hardware wave index (row-major), so that on CDNA, where wave w runs on SIMD w % 4,
  // a SIMD's two waves of a 2 x 4 grid are one of each row (the ping-pong's pairs).
  wave_col_ = weft::range(wave_cols, id++, AxisType::WARP);
  wave_row_ = weft::range(wave_rows, id++, AxisType::WARP);
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
  return {placeholder(std::vector<UOp>{r, c}, dtype, slot), r, c, UOp()};
}

UOp gl::at(const UOp& r, const UOp& c) const { return buffer[{first_row.node() ? first_row + r : r, c}]; }
UOp gl::inside(const UOp& r, const UOp& c) const { return (r < rows) & (c < cols); }

gl row_window(const gl& t, const UOp& first, const UOp& count) {
  const UOp f = first.dtype() == dtypes::index ? first : first.cast(dtypes::index);
  const UOp n = count.dtype() == dtypes::index ? count : count.cast(dtypes::index);
  return {t.buffer, n, t.cols, t.first_row.node() ? t.first_row + f : f};
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

DType mfma_fp8(std::string_view arch) { return arch == "gfx942" ? dtypes::fp8e4m3fnuz : dtypes::fp8e4m3; }

WmmaArg mma_shape(const Workgroup& wg, DType input) {
  const bool nvidia = is_nvidia(wg.arch());
  if (!nvidia && wg.arch() != "gfx950" && wg.arch() != "gfx942")
    throw Error("mma_shape: no MFMA or mma.sync on target '" + wg.arch() + "' (gfx942, gfx950, sm_XY)");
  const bool fp8 = !nvidia && input == mfma_fp8(wg.arch());
  if (input != dtypes::bfloat16 && input != dtypes::float16 && !fp8)
    throw Error("mma_shape: the tile layer's matrix instructions take bfloat16 or float16 inputs" +
                std::string(nvidia ? "" : ", or " + mfma_fp8(wg.arch()).name() + " on " + wg.arch()) + ", not " + input.name());
  if (wg.wave_size() != (nvidia ? 32 : 64))
    throw Error("mma_shape: " + std::string(nvidia ? "mma.sync on " : "an MFMA on ") + wg.arch() + " runs on " + (nvidia ? "32-lane warps" : "64-lane waves") +
                ", not waves of " + std::to_string(wg.wave_size()));
  if (nvidia) return WmmaArg{16, 8, 16, input, dtypes::float32, 32};  // mma.sync.aligned.m16n8k16 (mma_m16n8k16_operand)
  // fp8: gfx950's f8f6f4 MFMA 16x16x128 (twice the rate of its 16x16x32 fp8), gfx942's 16x16x32.
  if (fp8) return WmmaArg{16, 16, wg.arch() == "gfx950" ? 128 : 32, input, dtypes::float32, wg.wave_size()};
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

WaveGroup all_waves(const Workgroup& wg) { return {constant(Wide(1), dtypes::bool_), wg.wave(), wg.waves()}; }

WaveGroup wave_rows(const Workgroup& wg, const UOp& first_row, int64_t rows) {
  if (rows < 1 || rows > wg.wave_rows())
    throw Error("wave_rows: " + std::to_string(rows) + " rows of a " + std::to_string(wg.wave_rows()) + " x " + std::to_string(wg.wave_cols()) + " wave grid");
  if (first_row.is_const()) {
    const int64_t first = static_cast<int64_t>(first_row.const_int());
    if (first < 0 || first + rows > wg.wave_rows())
      throw Error("wave_rows: rows " + std::to_string(first) + " .. " + std::to_string(first + rows - 1) + " are outside the " +
                  std::to_string(wg.wave_rows()) + " x " + std::to_string(wg.wave_cols()) + " wave grid");
    if (rows == wg.wave_rows()) return all_waves(wg);
  }
  const UOp first = first_row.dtype() == dtypes::index ? first_row : first_row.cast(dtypes::index);
  const UOp member = (wg.wave_row() >= first) & (wg.wave_row() < first + rows);
  // 0 outside the group, so that every wave's index stays in [0, waves) (layout_index's domain).
  const UOp wave = where(member, (wg.wave_row() - first) * wg.wave_cols() + wg.wave_col(), constant(Wide(0)));
  return {member, wave, rows * wg.wave_cols()};
}

UOp load(const Workgroup& wg, const WaveGroup& group, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0) {
  if (!(src.buffer.dtype() == dst.dtype))
    throw Error("load(st, gl): the shared tile holds " + dst.dtype.name() + ", the global tensor " + src.buffer.dtype().name());
  const int64_t vec = dma_bytes(wg.arch()) / dst.dtype.itemsize();
  const int64_t threads = group.waves * wg.wave_size(), per_instruction = threads * vec;
  if (dst.size() % per_instruction)
    throw Error("load(st, gl): a " + shape_text(dst.rows, dst.cols) + " tile is not a whole number of direct-to-LDS rounds of " +
                std::to_string(per_instruction) + " elements (" + std::to_string(threads) + " threads x " + std::to_string(vec) + ")");
  const int64_t rounds = dst.size() / per_instruction;
  // A lane copies `vec` consecutive elements of a row as one aligned access: a row that is not
  // whole vectors would leave every row after the first misaligned (on NVIDIA a fault). Known at
  // build time where the column count is a constant.
  if (src.cols.is_const() && static_cast<int64_t>(src.cols.const_int()) % vec)
    throw Error("load(st, gl): the tensor's rows are " + std::to_string(static_cast<int64_t>(src.cols.const_int())) + " elements; a fill copies " + std::to_string(vec) +
                " consecutive elements (" + std::to_string(dma_bytes(wg.arch())) + " bytes) a lane on " + wg.arch() +
                ", so the column count must be a multiple of " + std::to_string(vec));
  // Lane-linear destination: element e of lane l of wave w (of the group) in round i is at
  // offset ((i * waves + w) * wave_size + l) * vec + e. The shared layout's inverse says which
  // (row, col) lives there, so that is what the lane reads from global memory.
  const Layout destination = Layout::identity("element", "offset", log2_exact(vec, "load(st, gl): elements per lane")) *
                             Layout::identity("lane", "offset", log2_exact(wg.wave_size(), "load(st, gl): wave size")) *
                             Layout::identity("wave", "offset", log2_exact(group.waves, "load(st, gl): waves")) *
                             Layout::identity("round", "offset", log2_exact(rounds, "load(st, gl): rounds"));
  const Layout to_tile = destination.then(dst.layout.invert());
  if (to_tile.contiguous("element", "col") < vec)
    throw Error("load(st, gl): the shared layout splits a lane's " + std::to_string(vec) + " consecutive elements across columns");
  // The whole workgroup unrolls its rounds; a group loops over them, 0 times outside it (an
  // async copy cannot sit in a `when`: the trip count is the wave-uniform branch).
  const bool everyone = group.member.is_const() && group.waves == wg.waves();
  const UOp round = everyone ? wg.range(rounds, AxisType::UNROLL) : wg.range(group.member.cast(dtypes::index) * rounds, AxisType::LOOP);
  const LayoutInputs at{{"element", constant(Wide(0))}, {"lane", wg.lane()}, {"wave", group.wave}, {"round", round}};
  const UOp row = layout_index(to_tile, at, "row"), col = layout_index(to_tile, at, "col");
  const UOp from = fill_source(src, dst, row0 + row, col0 + col);
  const UOp to = dst.buffer[stage * dst.size() + ((round * group.waves + group.wave) * wg.wave_size() + wg.lane()) * vec];
  return async_copy(to, from, vec).end({round});
}

UOp load(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0) {
  return load(wg, all_waves(wg), dst, stage, src, row0, col0);
}

int64_t fill_instructions(const Workgroup& wg, const WaveGroup& group, const st& dst) {
  return dst.size() / (group.waves * wg.wave_size() * (dma_bytes(wg.arch()) / dst.dtype.itemsize()));
}
int64_t fill_instructions(const Workgroup& wg, const st& dst) { return fill_instructions(wg, all_waves(wg), dst); }
acc acc::after(const std::vector<UOp>& effects) const {
  acc out = *this;
  out.buffer = buffer.after(effects);
  return out;
}

UOp acc::written() const {
  if (buffer.op() != Op::AFTER || !buffer.src().back().is_effect())
    throw Error("acc::written: this accumulator was not written by a tile operation (zero, an mma, a load)");
  return buffer.src().back();
}

UOp acc::element(int64_t i, int64_t j, int64_t e) const { return detail::element(buffer, first_tile_row + i, first_tile_col + j, e); }

acc subtile(const acc& c, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
  if (row0 < 0 || col0 < 0 || rows <= 0 || cols <= 0 || row0 % 16 || col0 % 16 || rows % 16 || cols % 16 || row0 + rows > c.rows ||
      col0 + cols > c.cols)
    throw Error("subtile: rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) + ") and columns [" + std::to_string(col0) + ", " +
                std::to_string(col0 + cols) + ") are not whole 16x16 sub-tiles of a " + shape_text(c.rows, c.cols) + " accumulator");
  acc out = c;
  out.rows = rows, out.cols = cols;
  out.first_tile_row += row0 / 16, out.first_tile_col += col0 / 16;
  return out;
}

acc zero(const acc& c, const Workgroup& wg) {
  (void)wg;
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) stores.push_back(c.element(i, j, e).store(constant(0.0, dtypes::float32)));
  acc out = c;
  out.buffer = c.buffer.after({group(stores)});
  return out;
}

acc load(const Workgroup& wg, const acc& c, const gl& src, const UOp& row0, const UOp& col0) {
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) {
        const auto [r, col] = acc_position(wg, c, i, j, e, row0, col0);
        const UOp v = src.at(r, col).load(src.inside(r, col), constant(0.0, src.buffer.dtype()));
        stores.push_back(c.element(i, j, e).store(v.cast(dtypes::float32)));
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
  const UOp v = src.at(gr, gc).load(src.inside(gr, gc), constant(0.0, dst.dtype));
  const UOp offset = layout_index(dst.layout, {{"row", c}, {"col", r}}, "offset");
  return dst.buffer[stage * dst.size() + offset].store(v).end({round});
}

UOp store(const Workgroup& wg, const st& dst, const UOp& stage, const acc& c, const UOp& row0, const UOp& col0, const ElementEpilogue& epilogue) {
  if (c.rows > dst.rows || c.cols > dst.cols)
    throw Error("store(st, acc): a " + shape_text(c.rows, c.cols) + " accumulator does not fit in a " + shape_text(dst.rows, dst.cols) + " tile");
  const auto value = [&](int64_t i, int64_t j, int64_t e) {
    const auto [r, col] = acc_position(wg, c, i, j, e, row0, col0);
    const UOp v = c.element(i, j, e).load();
    return (epilogue ? epilogue(v, r, col) : v).cast(dst.dtype);
  };
  if (std::optional<UOp> rows = detail::store_matrix_rows(wg, dst, stage, c, row0, col0, value)) return *rows;
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) {
        const auto [r, col] = acc_position(wg, c, i, j, e, row0, col0);
        const UOp offset = layout_index(dst.layout, {{"row", r}, {"col", col}}, "offset");
        stores.push_back(dst.buffer[stage * dst.size() + offset].store(value(i, j, e)));
      }
  return group(stores);
}

UOp store(const Workgroup& wg, const gl& dst, const acc& c, const UOp& row0, const UOp& col0, const std::function<UOp(const UOp&)>& epilogue) {
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) {
        const auto [r, col] = acc_position(wg, c, i, j, e, row0, col0);
        UOp v = c.element(i, j, e).load();
        if (epilogue) v = epilogue(v);
        stores.push_back(dst.at(r, col).store(v.cast(dst.buffer.dtype()), dst.inside(r, col)));
      }
  return group(stores).end(wg.hardware_ranges());
}

}  // namespace weft::tile
