// Elementwise maps on accumulators and the vectors of row and column statistics: rv (one value
// per row), cv (one per column), their reductions, broadcasts and stores, and sv (a shared
// vector several waves exchange statistics through).
#include "tiles_internal.h"

namespace weft::tile {

using detail::shape_text;

namespace {

// c with a fresh REG buffer of its shape, holding f(i, j, e, c[i][j][e]).
acc rebuild(const acc& c, const std::function<UOp(int64_t i, int64_t j, int64_t e, const UOp& x)>& f) {
  acc out = c;
  out.buffer = placeholder({c.tiles_m(), c.tiles_n(), c.elements}, dtypes::float32, fresh_id(), AddrSpace::REG);
  out.first_tile_row = out.first_tile_col = 0;  // a buffer of its own, even for a window of another
  std::vector<UOp> stores;
  for (int64_t i = 0; i < c.tiles_m(); ++i)
    for (int64_t j = 0; j < c.tiles_n(); ++j)
      for (int64_t e = 0; e < c.elements; ++e) stores.push_back(out.element(i, j, e).store(f(i, j, e, c.element(i, j, e).load())));
  out.buffer = out.buffer.after({group(stores)});
  return out;
}

// Which lane bits of an accumulator sub-tile's layout select rows and which select columns, and
// which register bits select columns, checking that no bit selects both. A row vector allows
// registers that select columns (NVIDIA's mma.sync C layout: a lane holds pairs of columns of two
// rows): its value for register e is the value of e's row, the same for every register that
// differs from e only in column bits. A column vector needs every register of a lane in one
// column (one column value per lane).
struct LaneBits {
  std::vector<int64_t> row_bits, column_bits;  // lane masks
  int64_t register_columns = 0;                 // the register bits that select columns
  int64_t column_mask() const { return mask(column_bits); }
  int64_t row_mask() const { return mask(row_bits); }
  // Whether register e is its row's first: the one whose column bits are zero.
  bool first_of_row(int64_t e) const { return (e & register_columns) == 0; }
  static int64_t mask(const std::vector<int64_t>& bits) {
    int64_t m = 0;
    for (int64_t b : bits) m |= b;
    return m;
  }
};

LaneBits lane_bits(const Layout& layout, const std::string& tile, const std::string& what, const char* vector) {
  LaneBits out;
  const bool rows = std::string(vector) == "row";
  const int reg_bits = layout.in_dims().at(0).bits, lanes = layout.in_dims().at(1).bits;
  for (int b = 0; b < reg_bits; ++b) {
    const Layout::Coords image = layout.apply({{"register", int64_t{1} << b}, {"lane", 0}});
    if (image.at("col") == 0) continue;
    if (!rows || image.at("row") != 0)
      throw Error(what + ": the " + tile + "'s register bit " + std::to_string(b) + " selects a column" +
                  (rows ? " and a row" : "; a column vector needs every register of a lane in one column"));
    out.register_columns |= int64_t{1} << b;
  }
  for (int b = 0; b < lanes; ++b) {
    const Layout::Coords image = layout.apply({{"register", 0}, {"lane", int64_t{1} << b}});
    if (image.at("row") != 0 && image.at("col") != 0)
      throw Error(what + ": the " + tile + "'s lane bit " + std::to_string(b) + " selects both a row and a column");
    (image.at("col") != 0 ? out.column_bits : out.row_bits).push_back(int64_t{1} << b);
  }
  return out;
}

// The row (column) of register e of the calling lane within its 16-row (16-column) sub-tile.
UOp row_in_sub_tile(const Workgroup& wg, const Layout& layout, int64_t e) {
  return layout_index(layout, {{"register", constant(Wide(e))}, {"lane", wg.lane()}}, "row");
}
UOp col_in_sub_tile(const Workgroup& wg, const Layout& layout) {
  return layout_index(layout, {{"register", constant(Wide(0))}, {"lane", wg.lane()}}, "col");
}

// Whether lane bits `mask` of the calling lane are all zero: the one lane of each group that
// holds the same values and writes them.
UOp first_of_group(const Workgroup& wg, int64_t mask) { return (wg.lane() & mask).eq(wg.lane().const_like(Wide(0))); }

rv reduce_rows(const Workgroup& wg, const acc& c, Op op, const std::string& what) {
  const LaneBits lanes = lane_bits(c.layout, shape_text(c.rows, c.cols) + " accumulator", what, "row");
  rv out{{}, c.rows, c.elements, c.layout};
  for (int64_t i = 0; i < c.tiles_m(); ++i) {
    // Over the lane's own sub-tiles, then its registers of the same row, then across the lanes
    // that hold the row; the row's other registers take its first's value.
    std::vector<UOp> partial;
    for (int64_t e = 0; e < c.elements; ++e) {
      UOp v = c.element(i, 0, e).load();
      for (int64_t j = 1; j < c.tiles_n(); ++j) v = v.alu(op, {c.element(i, j, e).load()});
      partial.push_back(v);
    }
    for (int64_t e = 0; e < c.elements; ++e) {
      const int64_t first = e & ~lanes.register_columns;
      if (first != e) {
        out.values.push_back(out.values[static_cast<size_t>(i * c.elements + first)]);
        continue;
      }
      UOp v = partial[static_cast<size_t>(e)];
      for (int64_t other = e + 1; other < c.elements; ++other)
        if ((other & ~lanes.register_columns) == e) v = v.alu(op, {partial[static_cast<size_t>(other)]});
      for (int64_t mask : lanes.column_bits) v = v.alu(op, {shuffle_xor(v, mask, wg.wave_size())});
      out.values.push_back(v);
    }
  }
  return out;
}

cv reduce_cols(const Workgroup& wg, const acc& c, Op op, const std::string& what) {
  const LaneBits lanes = lane_bits(c.layout, shape_text(c.rows, c.cols) + " accumulator", what, "column");
  cv out{{}, c.cols, c.layout};
  for (int64_t j = 0; j < c.tiles_n(); ++j) {
    UOp v = c.element(0, j, 0).load();
    for (int64_t i = 0; i < c.tiles_m(); ++i)
      for (int64_t e = i == 0 ? 1 : 0; e < c.elements; ++e) v = v.alu(op, {c.element(i, j, e).load()});
    for (int64_t mask : lanes.row_bits) v = v.alu(op, {shuffle_xor(v, mask, wg.wave_size())});
    out.values.push_back(v);
  }
  return out;
}

acc row_op(const acc& c, const rv& v, const std::string& what, const std::function<UOp(const UOp&, const UOp&)>& f) {
  if (v.rows != c.rows || v.elements != c.elements || !(v.layout == c.layout))
    throw Error(what + ": a row vector of " + std::to_string(v.rows) + " rows (" + std::to_string(v.elements) +
                " values a lane per 16 rows) does not fit the " + shape_text(c.rows, c.cols) + " accumulator");
  return rebuild(c, [&](int64_t i, int64_t, int64_t e, const UOp& x) { return f(x, v.at(i, e)); });
}

acc col_op(const acc& c, const cv& v, const std::string& what, const std::function<UOp(const UOp&, const UOp&)>& f) {
  if (v.cols != c.cols || !(v.layout == c.layout))
    throw Error(what + ": a column vector of " + std::to_string(v.cols) + " columns does not fit the " + shape_text(c.rows, c.cols) + " accumulator");
  return rebuild(c, [&](int64_t, int64_t j, int64_t, const UOp& x) { return f(x, v.at(j)); });
}

// offset + extent must fit in a vector of `length` where the offset is known.
void check_fits(const std::string& what, int64_t extent, const UOp& offset, int64_t length) {
  const int64_t first = offset.is_const() ? static_cast<int64_t>(offset.const_int()) : 0;
  if (first < 0 || first + extent > length)
    throw Error(what + ": " + std::to_string(extent) + " values at offset " + std::to_string(first) + " do not fit a shared vector of " +
                std::to_string(length));
}

}  // namespace

rv row_max(const Workgroup& wg, const acc& c) { return reduce_rows(wg, c, Op::MAX, "row_max"); }
rv row_sum(const Workgroup& wg, const acc& c) { return reduce_rows(wg, c, Op::ADD, "row_sum"); }
cv col_max(const Workgroup& wg, const acc& c) { return reduce_cols(wg, c, Op::MAX, "col_max"); }
cv col_sum(const Workgroup& wg, const acc& c) { return reduce_cols(wg, c, Op::ADD, "col_sum"); }

acc map(const acc& c, const std::function<UOp(const UOp&)>& f) {
  return rebuild(c, [&](int64_t, int64_t, int64_t, const UOp& x) { return f(x); });
}
acc sub_row(const acc& c, const rv& v) { return row_op(c, v, "sub_row", [](const UOp& x, const UOp& r) { return x - r; }); }
acc mul_row(const acc& c, const rv& v) { return row_op(c, v, "mul_row", [](const UOp& x, const UOp& r) { return x * r; }); }
acc div_row(const acc& c, const rv& v) { return row_op(c, v, "div_row", [](const UOp& x, const UOp& r) { return x / r; }); }
acc sub_col(const acc& c, const cv& v) { return col_op(c, v, "sub_col", [](const UOp& x, const UOp& r) { return x - r; }); }
acc mul_col(const acc& c, const cv& v) { return col_op(c, v, "mul_col", [](const UOp& x, const UOp& r) { return x * r; }); }
acc div_col(const acc& c, const cv& v) { return col_op(c, v, "div_col", [](const UOp& x, const UOp& r) { return x / r; }); }
acc exp2(const acc& c) {
  return map(c, [](const UOp& x) { return weft::exp2(x); });
}

acc map_at(const Workgroup& wg, const acc& c, const UOp& row0, const UOp& col0,
           const std::function<UOp(const UOp& x, const UOp& row, const UOp& col)>& f) {
  return rebuild(c, [&](int64_t i, int64_t j, int64_t e, const UOp& x) {
    const auto [r, col] = detail::acc_position(wg, c, i, j, e, row0, col0);
    return f(x, r, col);
  });
}

namespace {

void check_same_rows(const std::string& what, const rv& a, int64_t rows, int64_t elements, const Layout& layout) {
  if (a.rows != rows || a.elements != elements || !(a.layout == layout))
    throw Error(what + ": a row vector of " + std::to_string(a.rows) + " rows (" + std::to_string(a.elements) + " values a lane per 16 rows) and one of " +
                std::to_string(rows) + " rows (" + std::to_string(elements) + ")" + (a.rows == rows && a.elements == elements ? " in another layout" : ""));
}

// Value e of 16-row group i in a row_state's buffer.
UOp state_element(const UOp& buffer, int64_t i, int64_t e) { return buffer[{constant(Wide(i)), constant(Wide(e))}]; }

}  // namespace

rv map(const rv& v, const std::function<UOp(const UOp&)>& f) {
  rv out = v;
  for (UOp& x : out.values) x = f(x);
  return out;
}

rv map(const rv& a, const rv& b, const std::function<UOp(const UOp&, const UOp&)>& f) {
  check_same_rows("map(rv, rv)", b, a.rows, a.elements, a.layout);
  rv out = a;
  for (size_t i = 0; i < out.values.size(); ++i) out.values[i] = f(a.values[i], b.values[i]);
  return out;
}

rv fill_rows(const acc& rows_of, double value) {
  (void)lane_bits(rows_of.layout, shape_text(rows_of.rows, rows_of.cols) + " accumulator", "fill_rows", "row");
  return {std::vector<UOp>(static_cast<size_t>(rows_of.tiles_m() * rows_of.elements), constant(value, dtypes::float32)), rows_of.rows,
          rows_of.elements, rows_of.layout};
}

row_state row_state::after(const std::vector<UOp>& effects) const {
  row_state out = *this;
  out.buffer = buffer.after(effects);
  return out;
}

row_state hold(const rv& init) {
  row_state s{placeholder({init.rows / 16, init.elements}, dtypes::float32, fresh_id(), AddrSpace::REG), init.rows, init.elements, init.layout};
  return s.after({assign(s, init)});
}

rv read(const row_state& s) {
  rv out{{}, s.rows, s.elements, s.layout};
  for (int64_t i = 0; i < s.rows / 16; ++i)
    for (int64_t e = 0; e < s.elements; ++e) out.values.push_back(state_element(s.buffer, i, e).load());
  return out;
}

UOp assign(const row_state& s, const rv& v) {
  check_same_rows("assign(row_state, rv)", v, s.rows, s.elements, s.layout);
  std::vector<UOp> stores;
  for (int64_t i = 0; i < s.rows / 16; ++i)
    for (int64_t e = 0; e < s.elements; ++e) stores.push_back(state_element(s.buffer, i, e).store(v.at(i, e).cast(dtypes::float32)));
  return group(stores);
}

UOp assign(const acc& dst, const acc& src) {
  if (dst.rows != src.rows || dst.cols != src.cols || dst.elements != src.elements || !(dst.layout == src.layout))
    throw Error("assign(acc, acc): a " + shape_text(src.rows, src.cols) + " accumulator into a " + shape_text(dst.rows, dst.cols) + " one" +
                (dst.rows == src.rows && dst.cols == src.cols ? " of another layout" : ""));
  std::vector<UOp> stores;
  for (int64_t i = 0; i < dst.tiles_m(); ++i)
    for (int64_t j = 0; j < dst.tiles_n(); ++j)
      for (int64_t e = 0; e < dst.elements; ++e) stores.push_back(dst.element(i, j, e).store(src.element(i, j, e).load()));
  return group(stores);
}

UOp store(const Workgroup& wg, const gl& dst, const rv& v, const UOp& row0, const UOp& col0) {
  const LaneBits lanes = lane_bits(v.layout, std::to_string(v.rows) + "-row vector", "store(gl, rv)", "row");
  const UOp writer = first_of_group(wg, lanes.column_mask());
  std::vector<UOp> stores;
  for (int64_t i = 0; i < v.rows / 16; ++i)
    for (int64_t e = 0; e < v.elements; ++e) {
      if (!lanes.first_of_row(e)) continue;
      const UOp r = row0 + i * 16 + row_in_sub_tile(wg, v.layout, e);
      stores.push_back(dst.at(r, col0).store(v.at(i, e).cast(dst.buffer.dtype()), writer & dst.inside(r, col0)));
    }
  return group(stores).end(wg.hardware_ranges());
}

UOp store(const Workgroup& wg, const gl& dst, const cv& v, const UOp& row0, const UOp& col0) {
  const LaneBits lanes = lane_bits(v.layout, std::to_string(v.cols) + "-column vector", "store(gl, cv)", "column");
  const UOp writer = first_of_group(wg, lanes.row_mask());
  std::vector<UOp> stores;
  for (int64_t j = 0; j < v.cols / 16; ++j) {
    const UOp c = col0 + j * 16 + col_in_sub_tile(wg, v.layout);
    stores.push_back(dst.at(row0, c).store(v.at(j).cast(dst.buffer.dtype()), writer & dst.inside(row0, c)));
  }
  return group(stores).end(wg.hardware_ranges());
}

// ---- shared vectors ----

sv sv::after(const std::vector<UOp>& effects) const {
  sv out = *this;
  out.buffer = buffer.after(effects);
  return out;
}

sv shared_vector(int64_t length, DType dtype, int64_t stages) {
  if (length < 1 || stages < 1)
    throw Error("shared_vector: " + std::to_string(stages) + " stages of " + std::to_string(length) + " elements; at least one of each");
  return {alloc_shared({stages * length}, dtype), length, stages, dtype};
}

UOp store(const Workgroup& wg, const sv& dst, const UOp& stage, const rv& v, const UOp& offset) {
  check_fits("store(sv, rv)", v.rows, offset, dst.length);
  const LaneBits lanes = lane_bits(v.layout, std::to_string(v.rows) + "-row vector", "store(sv, rv)", "row");
  const UOp writer = first_of_group(wg, lanes.column_mask());
  std::vector<UOp> stores;
  for (int64_t i = 0; i < v.rows / 16; ++i)
    for (int64_t e = 0; e < v.elements; ++e)
      if (lanes.first_of_row(e))
        stores.push_back(dst.buffer[stage * dst.length + offset + i * 16 + row_in_sub_tile(wg, v.layout, e)].store(v.at(i, e).cast(dst.dtype), writer));
  return group(stores);
}

UOp store(const Workgroup& wg, const sv& dst, const UOp& stage, const cv& v, const UOp& offset) {
  check_fits("store(sv, cv)", v.cols, offset, dst.length);
  const UOp writer = first_of_group(wg, lane_bits(v.layout, std::to_string(v.cols) + "-column vector", "store(sv, cv)", "column").row_mask());
  std::vector<UOp> stores;
  for (int64_t j = 0; j < v.cols / 16; ++j)
    stores.push_back(dst.buffer[stage * dst.length + offset + j * 16 + col_in_sub_tile(wg, v.layout)].store(v.at(j).cast(dst.dtype), writer));
  return group(stores);
}

rv load_rows(const Workgroup& wg, const sv& src, const UOp& stage, const acc& rows_of, const UOp& offset) {
  check_fits("load_rows(sv)", rows_of.rows, offset, src.length);
  (void)lane_bits(rows_of.layout, shape_text(rows_of.rows, rows_of.cols) + " accumulator", "load_rows(sv)", "row");
  rv out{{}, rows_of.rows, rows_of.elements, rows_of.layout};
  for (int64_t i = 0; i < rows_of.tiles_m(); ++i)
    for (int64_t e = 0; e < rows_of.elements; ++e)
      out.values.push_back(src.buffer[stage * src.length + offset + i * 16 + row_in_sub_tile(wg, rows_of.layout, e)].load().cast(dtypes::float32));
  return out;
}

cv load_cols(const Workgroup& wg, const sv& src, const UOp& stage, const acc& cols_of, const UOp& offset) {
  check_fits("load_cols(sv)", cols_of.cols, offset, src.length);
  (void)lane_bits(cols_of.layout, shape_text(cols_of.rows, cols_of.cols) + " accumulator", "load_cols(sv)", "column");
  cv out{{}, cols_of.cols, cols_of.layout};
  for (int64_t j = 0; j < cols_of.tiles_n(); ++j)
    out.values.push_back(src.buffer[stage * src.length + offset + j * 16 + col_in_sub_tile(wg, cols_of.layout)].load().cast(dtypes::float32));
  return out;
}

rv load_rows(const Workgroup& wg, const gl& src, const acc& rows_of, const UOp& row0, const UOp& col0) {
  (void)lane_bits(rows_of.layout, shape_text(rows_of.rows, rows_of.cols) + " accumulator", "load_rows(gl)", "row");
  rv out{{}, rows_of.rows, rows_of.elements, rows_of.layout};
  const UOp zero = constant(0.0, src.buffer.dtype());
  for (int64_t i = 0; i < rows_of.tiles_m(); ++i)
    for (int64_t e = 0; e < rows_of.elements; ++e) {
      const UOp r = row0 + i * 16 + row_in_sub_tile(wg, rows_of.layout, e);
      out.values.push_back(src.at(r, col0).load(src.inside(r, col0), zero).cast(dtypes::float32));
    }
  return out;
}

cv load_cols(const Workgroup& wg, const gl& src, const acc& cols_of, const UOp& row0, const UOp& col0) {
  (void)lane_bits(cols_of.layout, shape_text(cols_of.rows, cols_of.cols) + " accumulator", "load_cols(gl)", "column");
  cv out{{}, cols_of.cols, cols_of.layout};
  const UOp zero = constant(0.0, src.buffer.dtype());
  for (int64_t j = 0; j < cols_of.tiles_n(); ++j) {
    const UOp c = col0 + j * 16 + col_in_sub_tile(wg, cols_of.layout);
    out.values.push_back(src.at(row0, c).load(src.inside(row0, c), zero).cast(dtypes::float32));
  }
  return out;
}

UOp load(const Workgroup& wg, const sv& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0) {
  // Round k, thread t: element k * threads + t, so neighbouring lanes read neighbouring rows.
  const UOp round = wg.range((dst.length + wg.threads() - 1) / wg.threads(), AxisType::LOOP);
  const UOp i = round * wg.threads() + wg.thread(), r = row0 + i, mine = i < dst.length;
  const UOp v = src.at(r, col0).load(mine & src.inside(r, col0), constant(0.0, src.buffer.dtype()));
  return dst.buffer[stage * dst.length + i].store(v.cast(dst.dtype), mine).end({round});
}

UOp store(const Workgroup& wg, const gl& dst, const sv& src, const UOp& stage, const UOp& row0, const UOp& col0) {
  const UOp round = wg.range((src.length + wg.threads() - 1) / wg.threads(), AxisType::LOOP);
  const UOp i = round * wg.threads() + wg.thread(), r = row0 + i, mine = i < src.length;
  const UOp v = src.buffer[stage * src.length + i].load(mine, constant(0.0, src.dtype));
  return dst.at(r, col0).store(v.cast(dst.buffer.dtype()), mine & dst.inside(r, col0)).end({round}).end(wg.hardware_ranges());
}

}  // namespace weft::tile
