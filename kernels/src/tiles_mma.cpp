// Register operand tiles and the matrix products: load(rt, st) in either orientation,
// load(rt, gl), transpose(rt) and mma_AB / mma_ABt / mma_AtB / mma_AtBt, all four one
// implementation over operand orientations.
#include "tiles_internal.h"

namespace weft::tile {

using detail::log2_exact;
using detail::shape_text;

namespace {

std::string major_name(Major m) { return m == Major::row ? "row" : "col"; }

// One operand sub-tile in tile coordinates: ("register", "lane") -> ("row", "col"), in
// orientation `major` (row: 16 x k, col: k x 16). operand_layout gives A as M x K and B as
// K x N; the other orientation is its transpose. On CDNA the A and B operand layouts are one
// another's transpose, so either operand gives the same registers and `operand` may be left
// out; on NVIDIA mma.sync's A and B differ and it may not.
Layout operand_sub_tile(const Workgroup& wg, DType dtype, Major major, std::optional<MatrixOperand> operand, const std::string& what) {
  if (!operand && is_nvidia(wg.arch()))
    throw Error(what + ": on " + wg.arch() + " mma.sync's A and B operands have different layouts; say which operand the tile is for");
  const MatrixOperand which = operand.value_or(MatrixOperand::A);
  if (which == MatrixOperand::C) throw Error(what + ": an accumulator is not a register operand tile");
  const Layout natural = operand_layout(wg, dtype, which);
  const Major natural_major = which == MatrixOperand::A ? Major::row : Major::col;
  return major == natural_major ? natural : transposed(natural);
}

// Lanes [first, first + count) of vector v (v itself when that is all of it).
UOp lanes_of(const UOp& v, int64_t first, int64_t count) {
  if (first == 0 && count == v.dtype().lanes) return v;
  std::vector<UOp> out;
  for (int64_t e = first; e < first + count; ++e) out.push_back(v.gep(e));
  return vectorize(out);
}

// parts in the tile's grid order for the sub-tiles (mn_tiles x k_steps of the operand), read
// by `part(i, kk)` (M or N sub-tile i, k step kk).
std::vector<UOp> in_grid_order(Major major, int64_t mn_tiles, int64_t k_steps, const std::function<UOp(int64_t, int64_t)>& part) {
  std::vector<UOp> parts;
  const bool row = major == Major::row;
  for (int64_t a = 0; a < (row ? mn_tiles : k_steps); ++a)
    for (int64_t b = 0; b < (row ? k_steps : mn_tiles); ++b) parts.push_back(row ? part(a, b) : part(b, a));
  return parts;
}

// The register tile for operand sub-tiles of 16 x k in orientation `major`, given the parts.
rt make_rt(std::vector<UOp> parts, Major major, int64_t mn, int64_t k_extent, int64_t k, Layout sub) {
  if (major == Major::row) return {std::move(parts), mn, k_extent, 16, k, std::move(sub), major};
  return {std::move(parts), k_extent, mn, k, 16, std::move(sub), major};
}

// c += op(a) * op(b), the body of the four products: `a` must lie as `a_major`, `b` as
// `b_major` (the variant's contract); then a.operand(i, kk) is the A operand of C sub-tile row i
// at k step kk, b.operand(j, kk) the B operand of C sub-tile column j.
acc product(const Workgroup& wg, const acc& c, const rt& a, Major a_major, const rt& b, Major b_major, const std::vector<UOp>& loops,
            int64_t priority, LoopEnd end, const std::string& what) {
  const auto orientation = [&](const rt& t, Major want, const char* name) {
    if (t.major == want) return;
    const char* along = want == Major::row ? "k along its columns" : "k along its rows";
    throw Error(what + ": " + name + " is a " + shape_text(t.rows, t.cols) + " register tile in " + major_name(t.major) +
                " layout; this product takes it in " + major_name(want) + " layout (" + along + ")");
  };
  orientation(a, a_major, "A");
  orientation(b, b_major, "B");
  if (a.parts.empty() || b.parts.empty()) throw Error(what + ": an operand without sub-tiles");
  const DType input = a.parts[0].dtype().element();
  if (!(b.parts[0].dtype().element() == input))
    throw Error(what + ": A holds " + input.name() + ", B " + b.parts[0].dtype().element().name() + "; one MFMA takes one input type");
  const WmmaArg shape = mma_shape(wg, input);
  if (a.mn() != c.rows || b.mn() != c.cols || a.k() != b.k() || a.k_step() != shape.k || b.k_step() != shape.k)
    throw Error(what + ": A " + shape_text(a.rows, a.cols) + (a_major == Major::row ? " (M x K)" : " (K x M)") + " and B " +
                shape_text(b.rows, b.cols) + (b_major == Major::row ? " (N x K)" : " (K x N)") + " do not make the " +
                shape_text(c.rows, c.cols) + " accumulator");
  acc current = c;  // the accumulator's registers as the loads of this update read them
  if (!loops.empty()) current.buffer = c.buffer.after(loops);
  // Instructions per 16x16 sub-tile (operand_layout): 1 MFMA, or 2 mma.sync each on its half of
  // B's and C's registers.
  const int64_t pieces = 16 * 16 / (shape.m * shape.n), c_per = c.elements / pieces;
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j) {
      std::vector<UOp> d(static_cast<size_t>(pieces));
      for (int64_t p = 0; p < pieces; ++p) {
        std::vector<UOp> lanes;
        for (int64_t e = p * c_per; e < (p + 1) * c_per; ++e) lanes.push_back(current.element(i, j, e).load());
        d[static_cast<size_t>(p)] = vectorize(lanes);
      }
      for (int64_t kk = 0; kk < a.k() / shape.k; ++kk) {
        const UOp bp = b.operand(j, kk);
        const int64_t b_per = bp.dtype().lanes / pieces;
        for (int64_t p = 0; p < pieces; ++p)
          d[static_cast<size_t>(p)] = wmma(a.operand(i, kk), lanes_of(bp, p * b_per, b_per), d[static_cast<size_t>(p)], shape);
      }
      for (int64_t e = 0; e < c.elements; ++e) stores.push_back(c.element(i, j, e).store(d[static_cast<size_t>(e / c_per)].gep(e % c_per)));
    }
  if (priority >= 0) {
    stores.insert(stores.begin(), wave_priority(priority));
    stores.push_back(wave_priority(0));
  }
  acc out = c;
  // No loops, or the caller's loop: one update, not ended here.
  out.buffer = c.buffer.after({loops.empty() || end == LoopEnd::open ? group(stores) : group(stores).end(loops)});
  return out;
}

}  // namespace

Layout transposed(const Layout& l) {
  const int rb = l.out_dims().at(0).bits, cb = l.out_dims().at(1).bits;
  std::vector<Layout::Coords> images;
  for (int b = 0; b < rb; ++b) images.push_back({{"col", int64_t{1} << b}});
  for (int b = 0; b < cb; ++b) images.push_back({{"row", int64_t{1} << b}});
  return l.then(Layout({{"row", rb}, {"col", cb}}, {{"row", cb}, {"col", rb}}, images));
}

rt rt::after(const std::vector<UOp>& effects) const {
  rt out = *this;
  for (UOp& p : out.parts) p = p.after(effects);
  return out;
}

rt k_slice(const rt& t, int64_t first, int64_t count) {
  const int64_t steps = t.k() / t.k_step();
  if (first < 0 || count < 1 || first + count > steps)
    throw Error("k_slice: k steps [" + std::to_string(first) + ", " + std::to_string(first + count) + ") of a register tile of " +
                std::to_string(steps) + " k steps of " + std::to_string(t.k_step()));
  const int64_t mn_tiles = t.mn() / 16;
  std::vector<UOp> parts = in_grid_order(t.major, mn_tiles, count, [&](int64_t i, int64_t kk) { return t.operand(i, first + kk); });
  return make_rt(std::move(parts), t.major, t.mn(), count * t.k_step(), t.k_step(), t.layout);
}

rt mn_slice(const rt& t, int64_t first, int64_t count) {
  const int64_t tiles = t.mn() / 16;
  if (first < 0 || count < 1 || first + count > tiles)
    throw Error("mn_slice: sub-tiles [" + std::to_string(first) + ", " + std::to_string(first + count) + ") of a register tile of " +
                std::to_string(tiles) + " M/N sub-tiles");
  const int64_t k_steps = t.k() / t.k_step();
  std::vector<UOp> parts = in_grid_order(t.major, count, k_steps, [&](int64_t i, int64_t kk) { return t.operand(first + i, kk); });
  return make_rt(std::move(parts), t.major, count * 16, t.k(), t.k_step(), t.layout);
}

rt transpose(const rt& t) {
  const Major other = t.major == Major::row ? Major::col : Major::row;
  std::vector<UOp> parts = in_grid_order(other, t.mn() / 16, t.k() / t.k_step(), [&](int64_t i, int64_t kk) { return t.operand(i, kk); });
  return make_rt(std::move(parts), other, t.mn(), t.k(), t.k_step(), transposed(t.layout));
}

namespace {

// The inputs of a register tile's read layout (load(rt, st)'s `to_offset`, or a read's own) at
// register `reg` of sub-tile (i, j) of the wave's `block`, for this lane.
LayoutInputs part_inputs(const Workgroup& wg, int64_t reg, int64_t i, int64_t j, const UOp& block) {
  return {{"register", constant(Wide(reg))}, {"lane", wg.lane()}, {"sub_row", constant(Wide(i))}, {"sub_col", constant(Wide(j))}, {"block", block}};
}

// `to_offset` after a map of its own input bits, the layout a cross-lane read reads with:
// `image(dim, bit)` is where that input bit lands (nullopt: on itself). nullopt where the result
// does not move "register" bits to `width` aligned consecutive offsets (the read does not fit).
std::optional<Layout> read_layout(const Layout& to_offset, int64_t width,
                                  const std::function<std::optional<Layout::Coords>(const std::string&, int)>& image) {
  std::vector<Layout::Coords> images;
  for (const LayoutDim& d : to_offset.in_dims())
    for (int b = 0; b < d.bits; ++b) images.push_back(image(d.name, b).value_or(Layout::Coords{{d.name, int64_t{1} << b}}));
  const Layout read = Layout(to_offset.in_dims(), to_offset.in_dims(), images).then(to_offset);
  if (aligned_vector_width(read, "register", "offset", width) != width) return std::nullopt;
  return read;
}

// What one transposing read (gfx950's ds_read_b64_tr_b16) needs of the layout it reads with,
// `to_offset`: ("register", "lane", ...) -> "offset" of the registers the lanes want. Within
// each group of 16 lanes, lane L reads 4 values at its own address and value p lands in lane
// 4*(L%4) + p of the group as its register L/4 (of the 4 the read fills). So the read's own
// layout, ("register" p, "lane" L, ...) -> "offset", is `to_offset` after the bit permutation
//   source register bits 0,1 -> lane bits 0,1     source lane bits 0,1 -> lane bits 2,3
//   source lane bits 2,3     -> register bits 0,1 every other bit      -> itself
// and the read fits where that layout moves register bits 0,1 to 4 aligned consecutive offsets
// (aligned_vector_width 4). Example, B of the 16x16x32 MFMA from a row-major K x N tile: lane
// L (in group g) reads row k = 8g + 4h + L/4, columns 4(L%4) .. +3, and lane i gets column i.
std::optional<Layout> transposed_read_layout(const Layout& to_offset) {
  for (const LayoutDim& d : to_offset.in_dims())
    if ((d.name == "register" && d.bits < 2) || (d.name == "lane" && d.bits < 4)) return std::nullopt;  // fewer than 4 registers or 16 lanes
  return read_layout(to_offset, 4, [](const std::string& dim, int b) -> std::optional<Layout::Coords> {
    if (dim == "register" && b < 2) return Layout::Coords{{"lane", int64_t{1} << b}};
    if (dim == "lane" && b < 2) return Layout::Coords{{"lane", int64_t{4} << b}};
    if (dim == "lane" && b < 4) return Layout::Coords{{"register", int64_t{1} << (b - 2)}};
    return std::nullopt;
  });
}

// A lane's registers of sub-tile (i, j) read with transposing reads of `read`
// (transposed_read_layout), 4 registers each.
UOp read_transposed(const Workgroup& wg, const st& src, const UOp& stage, const Layout& read, int64_t registers, int64_t i, int64_t j,
                    const UOp& block) {
  std::vector<UOp> reads, lanes;
  for (int64_t r = 0; r < registers; r += 4) {
    const LayoutInputs at = part_inputs(wg, r, i, j, block);
    const UOp granule = layout_granule(read, at, "register", "offset", 4);
    reads.push_back(src.buffer[stage * src.size() + granule * 4].vec(4).load_transposed());
    for (int64_t e = 0; e < 4; ++e) lanes.push_back(reads.back().gep(e));
  }
  return reads.size() == 1 ? reads[0] : vectorize(lanes);
}

// A lane's 8 registers of sub-tile (i, j) as one ldmatrix.x4 of `read` (matrix_read_layout):
// lane t names the 16 bytes its register 0 .. 7 give in `read`.
UOp read_matrix(const Workgroup& wg, const st& src, const UOp& stage, const Layout& read, bool transposed, int64_t i, int64_t j,
                const UOp& block) {
  const LayoutInputs at = part_inputs(wg, 0, i, j, block);
  const UOp granule = layout_granule(read, at, "register", "offset", 8);
  return src.buffer[stage * src.size() + granule * 8].vec(8).load_matrix(transposed);
}

}  // namespace

// ldmatrix.x4 as a layout (UOp::load_matrix): lane t names row t%8 of matrix t/8, 8 values;
// value e of that row lands, as stored, in lane 4(t%8) + e/2 as register 2(t/8) + e%2, and
// transposed, in lane 4e + (t%8)/2 as register 2(t/8) + t%2. So the read's own layout,
// ("register" e, "lane" t, ...) -> "offset", is `to_offset` after the bit map
//   as stored:  register bit 0 -> register bit 0   register bits 1,2 -> lane bits 0,1
//               lane bits 0-2  -> lane bits 2-4
//   transposed: register bits 0-2 -> lane bits 2-4 lane bit 0 -> register bit 0
//               lane bits 1,2  -> lane bits 0,1
//   both:       lane bits 3,4  -> register bits 1,2, every other dimension -> itself
// and the read fits where that layout moves register bits 0-2 to 8 aligned consecutive offsets
// (one 16-byte row per lane). It needs exactly 8 registers and 32 lanes.
std::optional<Layout> matrix_read_layout(const Layout& to_offset, bool transposed) {
  for (const LayoutDim& d : to_offset.in_dims())
    if ((d.name == "register" && d.bits != 3) || (d.name == "lane" && d.bits != 5)) return std::nullopt;
  // The bits that move within a row's matrix: a row's elements (as stored) or its rows (transposed).
  const auto within = [](int b) { return b == 0 ? Layout::Coords{{"register", 1}} : Layout::Coords{{"lane", int64_t{1} << (b - 1)}}; };
  return read_layout(to_offset, 8, [&](const std::string& dim, int b) -> std::optional<Layout::Coords> {
    if (dim == "register") return transposed ? Layout::Coords{{"lane", int64_t{4} << b}} : within(b);
    if (dim == "lane" && b < 3) return transposed ? within(b) : Layout::Coords{{"lane", int64_t{4} << b}};
    if (dim == "lane") return Layout::Coords{{"register", int64_t{2} << (b - 3)}};
    return std::nullopt;
  });
}

namespace {

// stmatrix is sm_90's (PTX ISA 7.8): "sm_90", "sm_90a" and newer.
bool has_stmatrix(const std::string& arch) { return is_nvidia(arch) && std::atoi(arch.c_str() + 3) >= 90; }

}  // namespace

namespace detail {

std::optional<UOp> store_matrix_rows(const Workgroup& wg, const st& dst, const UOp& stage, const acc& c, const UOp& row0, const UOp& col0,
                                     const std::function<UOp(int64_t, int64_t, int64_t)>& value) {
  if (!has_stmatrix(wg.arch()) || dst.dtype.itemsize() != 2 || c.elements != 8) return std::nullopt;
  // Each lane's row must be 8 consecutive, 16-byte aligned elements of the tile.
  if (!col0.is_const() || static_cast<int64_t>(col0.const_int()) % 8 != 0 || aligned_vector_width(dst.layout, "col", "offset", 8) != 8)
    return std::nullopt;
  // The sub-tile's registers as offsets of a row-major 16 x 16 tile: stmatrix writes the lane's
  // registers where an ldmatrix of that layout would read them from.
  const std::vector<LayoutDim>& at = c.layout.out_dims();
  const Layout row_major = Layout::linear(at, {{"offset", 8}}, [](const Layout::Coords& x) { return Layout::Coords{{"offset", x.at("row") * 16 + x.at("col")}}; });
  const std::optional<Layout> rows = matrix_read_layout(c.layout.then(row_major), false);
  if (!rows) return std::nullopt;
  // Lane t's row of each sub-tile, where its value 0 lands.
  const UOp start = layout_index(*rows, {{"register", constant(Wide(0))}, {"lane", wg.lane()}}, "offset");
  const UOp row = start / 16, col = start % 16;
  std::vector<UOp> writes;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j) {
      std::vector<UOp> values;
      for (int64_t e = 0; e < 8; ++e) values.push_back(value(i, j, e));
      const UOp granule = layout_granule(dst.layout, {{"row", row0 + i * 16 + row}, {"col", col0 + j * 16 + col}}, "col", "offset", 8);
      writes.push_back(dst.buffer[stage * dst.size() + granule * 8].vec(8).store_matrix(vectorize(values)));
    }
  return group(writes);
}

}  // namespace detail

UOp read_operand_part(const Workgroup& wg, const st& src, const UOp& stage, const Layout& to_offset, int64_t i, int64_t j, const UOp& block) {
  const int64_t registers = int64_t{1} << to_offset.in_dims().at(0).bits;
  const int64_t width = aligned_vector_width(to_offset, "register", "offset", std::min<int64_t>(registers, 16 / src.dtype.itemsize()));
  // Fewer than 4 values a read where gfx950's transposing read fits: that read instead.
  if (wg.arch() == "gfx950" && src.dtype.itemsize() == 2 && width < 4 && registers % 4 == 0)
    if (const std::optional<Layout> read = transposed_read_layout(to_offset)) return read_transposed(wg, src, stage, *read, registers, i, j, block);
  // On NVIDIA, a 2-byte operand of 8 registers narrower than one 16-byte read: one ldmatrix.x4,
  // as stored where the layouts fit it, else transposed.
  if (is_nvidia(wg.arch()) && src.dtype.itemsize() == 2 && width < 8)
    for (const bool transposed : {false, true})
      if (const std::optional<Layout> read = matrix_read_layout(to_offset, transposed))
        return read_matrix(wg, src, stage, *read, transposed, i, j, block);
  std::vector<UOp> reads, lanes;
  for (int64_t r = 0; r < registers; r += width) {
    const LayoutInputs at = part_inputs(wg, r, i, j, block);
    const UOp granule = layout_granule(to_offset, at, "register", "offset", width);
    reads.push_back(src.buffer[stage * src.size() + granule * width].vec(width).load());
    for (int64_t e = 0; e < width; ++e) lanes.push_back(width == 1 ? reads.back() : reads.back().gep(e));
  }
  return reads.size() == 1 ? reads[0] : vectorize(lanes);
}

rt load(const Workgroup& wg, const st& src, const UOp& stage, Major major, int64_t extent, const UOp& block, std::optional<MatrixOperand> operand) {
  const WmmaArg shape = mma_shape(wg, src.dtype);
  const bool row = major == Major::row;
  const int64_t mn_total = row ? src.rows : src.cols, k_total = row ? src.cols : src.rows;
  if (extent <= 0 || extent % 16 || mn_total % extent || k_total % shape.k)
    throw Error("load(rt, st): " + std::to_string(extent) + (row ? " rows" : " columns") + " of a " + shape_text(src.rows, src.cols) +
                (row ? " (M or N) x K tile in 16 x " + std::to_string(shape.k) : " K x (M or N) tile in " + std::to_string(shape.k) + " x 16") +
                " operand sub-tiles");
  // The whole tile: M/N sub-tiles and k steps above the operand's own bits, the wave's block
  // above those; a col-major tile has M/N along its columns.
  const std::string mn_dim = row ? "row" : "col", k_dim = row ? "col" : "row";
  const Layout sub = operand_sub_tile(wg, src.dtype, major, operand, "load(rt, st)");
  const Layout place = sub * Layout::identity("sub_row", mn_dim, log2_exact(extent / 16, "load(rt, st): M/N sub-tiles")) *
                       Layout::identity("sub_col", k_dim, log2_exact(k_total / shape.k, "load(rt, st): k steps")) *
                       Layout::identity("block", mn_dim, log2_exact(mn_total / extent, "load(rt, st): blocks"));
  // A col-major tile of a row-major src: a lane's k values are a row apart, aligned_vector_width
  // is 1; on gfx950 read_operand_part reads 4 at once with ds_read_b64_tr_b16 (the LDS read
  // that transposes across lanes) where the layouts allow it, elsewhere one by one (ds_read_u16).
  const Layout to_offset = place.then(src.layout);
  std::vector<UOp> parts = in_grid_order(major, extent / 16, k_total / shape.k,
                                         [&](int64_t i, int64_t kk) { return read_operand_part(wg, src, stage, to_offset, i, kk, block); });
  return make_rt(std::move(parts), major, extent, k_total, shape.k, sub);
}

rt load(const Workgroup& wg, const st& src, const UOp& stage, MatrixOperand operand, int64_t rows, const UOp& block) {
  if (operand == MatrixOperand::C) throw Error("load(rt, st): an accumulator is not loaded from shared memory");
  return load(wg, src, stage, Major::row, rows, block, operand);  // B as N x K
}

rt load(const Workgroup& wg, const gl& src, Major major, int64_t rows, int64_t cols, const UOp& row0, const UOp& col0,
        std::optional<MatrixOperand> operand) {
  const DType dtype = src.buffer.dtype();
  const WmmaArg shape = mma_shape(wg, dtype);
  const bool row = major == Major::row;
  const int64_t mn = row ? rows : cols, k_extent = row ? cols : rows;
  if (mn <= 0 || mn % 16 || k_extent <= 0 || k_extent % shape.k)
    throw Error("load(rt, gl): a " + shape_text(rows, cols) + " " + major_name(major) + "-major tile is not whole " +
                (row ? "16 x " + std::to_string(shape.k) : std::to_string(shape.k) + " x 16") + " operand sub-tiles");
  const Layout sub = operand_sub_tile(wg, dtype, major, operand, "load(rt, gl)");
  const int64_t registers = int64_t{1} << sub.in_dims().at(0).bits;
  const int64_t sub_rows = row ? 16 : shape.k, sub_cols = row ? shape.k : 16;
  // Sub-tile (i, kk) of the operand is sub-tile (i, kk) or (kk, i) of the tile's grid.
  const auto part = [&](int64_t i, int64_t kk) {
    const int64_t gi = row ? i : kk, gj = row ? kk : i;
    std::vector<UOp> lanes;
    for (int64_t e = 0; e < registers; ++e) {
      const LayoutInputs at{{"register", constant(Wide(e))}, {"lane", wg.lane()}};
      const UOp r = row0 + gi * sub_rows + layout_index(sub, at, "row"), c = col0 + gj * sub_cols + layout_index(sub, at, "col");
      lanes.push_back(src.at(r, c).load(src.inside(r, c), constant(0.0, dtype)));
    }
    return vectorize(lanes);
  };
  return make_rt(in_grid_order(major, mn / 16, k_extent / shape.k, part), major, mn, k_extent, shape.k, sub);
}

namespace {

// Where operand register r of a lane lies in an accumulator: sub-tile `tile` of the operand's k
// sub-tiles (counting along k), register `element` there, in the same lane.
struct AccumulatorRegister {
  int64_t tile = 0, element = 0;
};

// The accumulator registers that hold an operand sub-tile of `input`, where the C layout of k/16
// sub-tiles side by side (A: along the columns; B: down the rows) gives every lane exactly the
// values the operand layout asks of it, each operand register one accumulator register whatever
// the lane. nullopt where it does not (another lane holds some value, or the register depends on
// the lane).
std::optional<std::vector<AccumulatorRegister>> operand_in_accumulator(const Workgroup& wg, const Layout& c_layout, DType input, MatrixOperand which) {
  const WmmaArg shape = mma_shape(wg, input);
  const Layout natural = operand_layout(wg, input, which);
  if (shape.k % 16 || natural.in_dims().size() != 2) return std::nullopt;
  const Layout stacked = c_layout * Layout::identity("tile", which == MatrixOperand::A ? "col" : "row", log2_exact(shape.k / 16, "k sub-tiles"));
  if (!(stacked.out_dims() == natural.out_dims()) || !stacked.bijective()) return std::nullopt;
  const Layout to_acc = natural.then(stacked.invert());  // (register, lane) -> (register, lane, tile)
  const int lane_bits = natural.in_dims().at(1).bits;
  for (int b = 0; b < lane_bits; ++b) {
    const Layout::Coords at = to_acc.apply({{"register", 0}, {"lane", int64_t{1} << b}});
    if (at.at("lane") != int64_t{1} << b || at.at("register") != 0 || at.at("tile") != 0) return std::nullopt;
  }
  std::vector<AccumulatorRegister> out;
  for (int64_t r = 0; r < int64_t{1} << natural.in_dims().at(0).bits; ++r) {
    const Layout::Coords at = to_acc.apply({{"register", r}, {"lane", 0}});
    if (at.at("lane") != 0) return std::nullopt;
    out.push_back({at.at("tile"), at.at("register")});
  }
  return out;
}

}  // namespace

bool accumulator_feeds_operand(const Workgroup& wg, DType input, MatrixOperand which) {
  const Layout c_layout = operand_layout(wg, dtypes::bfloat16, MatrixOperand::C);  // accumulator()'s
  return which != MatrixOperand::C && operand_in_accumulator(wg, c_layout, input, which).has_value();
}

rt as_operand(const Workgroup& wg, const acc& c, DType input, MatrixOperand which) {
  if (which == MatrixOperand::C) throw Error("as_operand: an accumulator is not a register operand of itself");
  const std::optional<std::vector<AccumulatorRegister>> registers = operand_in_accumulator(wg, c.layout, input, which);
  const char* name = which == MatrixOperand::A ? "A" : "B";
  if (!registers)
    throw Error(std::string("as_operand: on ") + wg.arch() + " the accumulator's C layout does not hold the " + name + " operand of " + input.name() +
                " in the same lanes; store it to a shared tile and load(rt, st) it instead");
  const int64_t k = mma_shape(wg, input).k, spans = k / 16;
  const bool a = which == MatrixOperand::A;
  const int64_t mn = a ? c.rows : c.cols, k_extent = a ? c.cols : c.rows;
  if (k_extent % k)
    throw Error(std::string("as_operand: a ") + shape_text(c.rows, c.cols) + " accumulator is not whole k steps of " + std::to_string(k) + " for the " +
                name + " operand");
  // A is M x K (row-major, the accumulator's rows are M); B is K x N (col-major, its columns N).
  const auto part = [&](int64_t i, int64_t kk) {
    std::vector<UOp> values;
    for (const AccumulatorRegister& r : *registers) {
      const int64_t k_tile = kk * spans + r.tile;
      values.push_back((a ? c.element(i, k_tile, r.element) : c.element(k_tile, i, r.element)).load().cast(input));
    }
    return vectorize(values);
  };
  const Major major = a ? Major::row : Major::col;
  return make_rt(in_grid_order(major, mn / 16, k_extent / k, part), major, mn, k_extent, k, operand_layout(wg, input, which));
}

acc mma_AB(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority, LoopEnd end) {
  return product(wg, c, a, Major::row, b, Major::col, loops, priority, end, "mma_AB");
}
acc mma_ABt(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority, LoopEnd end) {
  return product(wg, c, a, Major::row, b, Major::row, loops, priority, end, "mma_ABt");
}
acc mma_AtB(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority, LoopEnd end) {
  return product(wg, c, a, Major::col, b, Major::col, loops, priority, end, "mma_AtB");
}
acc mma_AtBt(const Workgroup& wg, const acc& c, const rt& a, const rt& b, const std::vector<UOp>& loops, int64_t priority, LoopEnd end) {
  return product(wg, c, a, Major::col, b, Major::row, loops, priority, end, "mma_AtBt");
}

}  // namespace weft::tile
