// The fluent builder: every function checks what it is given and throws weft::Error that names
// the op and the problem, so malformed graphs are stopped where they are written.
#include "weft/dsl/builder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <set>

#include "weft/dsl/print.h"

namespace weft {
namespace {

[[noreturn]] void fail(std::string_view what, const std::string& problem) {
  throw Error(std::string(what) + ": " + problem);
}

// Whether an INDEX addresses a LOCAL buffer itself (or an AFTER of one): what the cross-lane
// shared-memory accesses (ldmatrix, stmatrix, the transposing read) take.
bool into_local_buffer(const UOp& index) {
  UOp base = index.src(0);
  while (base.op() == Op::AFTER) base = base.src(0);
  return base.op() == Op::PLACEHOLDER && base.arg_as<BufferArg>().space == AddrSpace::LOCAL;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string shape_text(const UOp& buf) {
  std::string out = "[";
  for (size_t i = 0; i < buf.shape().size(); ++i) out += (i ? ", " : "") + expr_string(buf.shape()[i]);
  return out + "]";
}

UOp as_index(const UOp& x, std::string_view what) {
  if (x.dtype() == dtypes::index) return x;
  if (!x.dtype().is_int() || x.dtype().is_vector())
    fail(what, "expected an integer index, got " + x.dtype().name() + " " + expr_string(x));
  return UOp::make(Op::CAST, dtypes::index, {x});
}

thread_local int64_t next_alloc_id = 1 << 20;  // far from ids authors pick by hand

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

void check_dims(std::string_view what, const std::vector<int64_t>& shape) {
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] <= 0) fail(what, "dimension " + std::to_string(i) + " of shape " + shape_text(shape) + " is not positive");
}

const UOp& buffer_base_checked(const UOp& buf, std::string_view what) {
  if (!buf.is_buffer()) fail(what, "expected a buffer or a view of one, got " + std::string(op_name(buf.op())));
  return buf;
}

UOp view(const UOp& base, Op op, std::vector<int64_t> values) {
  return UOp::make(op, base.dtype(), {base}, ShapeArg{std::move(values)});
}

std::vector<int64_t> flatten_pairs(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::vector<int64_t> out;
  for (auto [a, b] : pairs) {
    out.push_back(a);
    out.push_back(b);
  }
  return out;
}

void check_same_dtype(Op op, const UOp& a, const UOp& b) {
  if (!(a.dtype() == b.dtype()))
    fail(op_name(op), "operands have different dtypes, " + a.dtype().name() + " (" + expr_string(a) + ") and " +
                          b.dtype().name() + " (" + expr_string(b) + "); cast one of them");
}

void check_value(Op op, const UOp& x) {
  if ((x.is_effect() && !x.is_valued_effect()) || x.dtype().is_void())
    fail(op_name(op), "operand " + std::string(op_name(x.op())) + " is an effect, not a value");
  if (x.op() == Op::PLACEHOLDER || opsets::movement.contains(x.op()) || x.op() == Op::UNSHARD)
    fail(op_name(op), "operand is a buffer; index and load it first");
}

DType alu_result(Op op, const UOp& a, const UOp& b) {
  check_value(op, a);
  check_value(op, b);
  check_same_dtype(op, a, b);
  DType dt = a.dtype();
  const bool intlike = dt.is_integral();
  switch (op) {
    case Op::IDIV:
    case Op::MOD:
    case Op::SHL:
    case Op::SHR:
      if (!dt.is_int()) fail(op_name(op), "needs integer operands, got " + dt.name());
      break;
    case Op::AND:
    case Op::OR:
    case Op::XOR:
      if (!intlike) fail(op_name(op), "needs integer or bool operands, got " + dt.name());
      break;
    case Op::FDIV:
    case Op::POW:
      if (!dt.is_float()) fail(op_name(op), "needs float operands, got " + dt.name());
      break;
    default: break;
  }
  if (opsets::comparison.contains(op)) return dtypes::bool_.vec(dt.lanes);
  return dt;
}

UOp binary(Op op, const UOp& a, const UOp& b) { return UOp::make(op, alu_result(op, a, b), {a, b}); }

UOp unary_float(Op op, const UOp& x) {
  check_value(op, x);
  if (!x.dtype().is_float()) fail(op_name(op), "needs a float operand, got " + x.dtype().name());
  return UOp::make(op, x.dtype(), {x});
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

// ---- UOp methods ------------------------------------------------------------------------------

UOp UOp::to_index(int64_t v) { return constant(Wide(v)); }

UOp UOp::const_like(Wide value) const {
  if (dtype().is_float()) return constant(static_cast<double>(value), dtype().element());
  if (!dtype().is_integral()) fail("constant", "no constant of dtype " + dtype().name());
  return constant(value, dtype().element());
}

UOp UOp::const_like(double value) const {
  if (dtype().is_float()) return constant(value, dtype().element());
  if (std::trunc(value) != value || !std::isfinite(value))
    fail("constant", "float constant " + std::to_string(value) + " combined with " + dtype().name() + " value " + expr_string(*this));
  return const_like(static_cast<Wide>(value));
}

UOp UOp::operator[](const UOp& i) const { return index({i}); }
UOp UOp::operator[](std::initializer_list<UOp> idx) const { return index(std::vector<UOp>(idx)); }

UOp UOp::index(std::vector<UOp> idx) const {
  buffer_base_checked(*this, "INDEX");
  if (idx.size() != shape().size())
    fail("INDEX", std::to_string(idx.size()) + " indices into a " + std::to_string(shape().size()) +
                      "-dimensional buffer of shape " + shape_text(*this));
  std::vector<UOp> src{*this};
  for (const UOp& i : idx) src.push_back(as_index(i, "INDEX"));
  return make(Op::INDEX, dtype(), std::move(src));
}

UOp UOp::vec(int64_t lanes) const {
  if (op() != Op::INDEX) fail("INDEX", "only an index widens to a vector, not " + std::string(op_name(op())));
  if (dtype().is_vector()) fail("INDEX", "the index is a vector already (" + dtype().name() + ")");
  if (lanes < 1 || lanes > 64 || (lanes & (lanes - 1)) != 0) fail("INDEX", "a vector of " + std::to_string(lanes) + " lanes; 1 to 64, a power of two");
  UOp base = src(0);
  while (base.op() == Op::AFTER) base = base.src(0);
  if (base.op() != Op::PLACEHOLDER)
    fail("INDEX", "a vector index into a view (" + std::string(op_name(base.op())) + "): consecutive elements are consecutive only in a buffer itself");
  return lanes == 1 ? *this : make(Op::INDEX, dtype().vec(static_cast<int>(lanes)), src());
}

UOp UOp::load() const {
  if (op() != Op::INDEX) fail("LOAD", "can only load through an index into a buffer, got " + std::string(op_name(op())));
  return make(Op::LOAD, dtype(), {*this});
}

UOp UOp::load_transposed() const { return cross_lane_read(4, kTransposeRead16, "a transposing LDS read"); }

UOp UOp::load_matrix(bool transposed) const { return cross_lane_read(8, transposed ? kMatrixReadTransposed16 : kMatrixRead16, "ldmatrix"); }

UOp UOp::store_matrix(const UOp& value) const {
  (void)store(value);  // the checks of a store
  const DType d = dtype();
  if (d.lanes != 8 || d.element().itemsize() != 2) fail("STORE", "stmatrix takes 8 lanes of a 2-byte type, not " + d.name());
  if (!into_local_buffer(*this)) fail("STORE", "stmatrix writes a LOCAL buffer (shared memory)");
  return make(Op::STORE, dtypes::void_, {*this, value}, std::string(kMatrixWrite16));
}

// A LOAD with `arg` through this INDEX: `lanes` lanes of a 2-byte type from a LOCAL buffer.
UOp UOp::cross_lane_read(int lanes, const char* arg, const std::string& what) const {
  (void)load();  // the checks of a load
  const DType d = dtype();
  if (d.lanes != lanes || d.element().itemsize() != 2)
    fail("LOAD", what + " takes " + std::to_string(lanes) + " lanes of a 2-byte type, not " + d.name());
  if (!into_local_buffer(*this)) fail("LOAD", what + " reads a LOCAL buffer (shared memory, LDS)");
  return make(Op::LOAD, d, {*this}, std::string(arg));
}

namespace {

bool load_with_arg(const UOp& u, const char* arg) {
  return u.op() == Op::LOAD && std::holds_alternative<std::string>(u.arg()) && std::get<std::string>(u.arg()) == arg;
}

}  // namespace

bool is_transposed_read(const UOp& u) { return load_with_arg(u, kTransposeRead16); }
bool is_transposed_matrix_read(const UOp& u) { return load_with_arg(u, kMatrixReadTransposed16); }
bool is_matrix_read(const UOp& u) { return load_with_arg(u, kMatrixRead16) || is_transposed_matrix_read(u); }
bool is_cross_lane_read(const UOp& u) { return is_transposed_read(u) || is_matrix_read(u); }
bool is_matrix_write(const UOp& u) {
  return u.op() == Op::STORE && std::holds_alternative<std::string>(u.arg()) && std::get<std::string>(u.arg()) == kMatrixWrite16;
}

UOp UOp::store(const UOp& value) const {
  if (op() != Op::INDEX)
    fail("STORE", "can only store through an index into a buffer, not into " + std::string(op_name(op())) + " " + expr_string(*this));
  check_value(Op::STORE, value);
  if (!(value.dtype() == dtype()))
    fail("STORE", "value of dtype " + value.dtype().name() + " stored into a buffer of " + dtype().name());
  return make(Op::STORE, dtypes::void_, {*this, value});
}

UOp UOp::load(const UOp& valid, const UOp& fill) const {
  (void)load();  // the checks of an unmasked load
  if (!(valid.dtype() == dtypes::bool_)) fail("LOAD", "a mask is a bool, got " + valid.dtype().name() + " " + expr_string(valid));
  check_value(Op::LOAD, fill);
  if (!(fill.dtype() == dtype())) fail("LOAD", "fill value of dtype " + fill.dtype().name() + " for a load of " + dtype().name());
  return make(Op::LOAD, dtype(), {*this, valid, fill});
}

UOp UOp::store(const UOp& value, const UOp& valid) const {
  (void)store(value);  // the checks of an unmasked store
  if (!(valid.dtype() == dtypes::bool_)) fail("STORE", "a mask is a bool, got " + valid.dtype().name() + " " + expr_string(valid));
  return make(Op::STORE, dtypes::void_, {*this, value, valid});
}

UOp UOp::end(std::vector<UOp> ranges) const {
  if (!is_effect()) fail("END", "ends an effect (a store or a group), got " + std::string(op_name(op())));
  std::vector<UOp> src{*this};
  for (const UOp& r : ranges) {
    if (r.op() != Op::RANGE) fail("END", "can only end a range, got " + std::string(op_name(r.op())) + " " + expr_string(r));
    src.push_back(r);
  }
  return make(Op::END, dtypes::void_, std::move(src));
}

UOp UOp::after(std::vector<UOp> deps) const {
  std::vector<UOp> src{*this};
  for (const UOp& d : deps) {
    if (!d.is_effect() && d.op() != Op::RANGE)
      fail("AFTER", "depends on effects (stores, ends, barriers) or on a range (the buffer within that loop), got " +
                        std::string(op_name(d.op())));
    src.push_back(d);
  }
  return make(Op::AFTER, dtype(), std::move(src));
}

UOp UOp::set(const UOp& value, std::vector<UOp> ranges) const {
  UOp effect = store(value);
  if (!ranges.empty()) effect = effect.end(std::move(ranges));
  return src(0).after({effect});
}

UOp UOp::reshape(std::vector<int64_t> new_shape) const {
  auto old = buffer_base_checked(*this, "RESHAPE").static_shape();
  check_dims("RESHAPE", new_shape);
  if (product(old) != product(new_shape))
    fail("RESHAPE", "cannot reshape " + shape_text(old) + " (" + std::to_string(product(old)) + " elements) to " +
                        shape_text(new_shape) + " (" + std::to_string(product(new_shape)) + " elements)");
  return view(*this, Op::RESHAPE, std::move(new_shape));
}

UOp UOp::permute(std::vector<int64_t> order) const {
  auto old = buffer_base_checked(*this, "PERMUTE").shape();
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expect(old.size());
  std::iota(expect.begin(), expect.end(), 0);
  if (sorted != expect)
    fail("PERMUTE", "order " + shape_text(order) + " is not a permutation of the " + std::to_string(old.size()) + " axes of " + shape_text(*this));
  return view(*this, Op::PERMUTE, std::move(order));
}

UOp UOp::shrink(std::vector<std::pair<int64_t, int64_t>> bounds) const {
  auto old = buffer_base_checked(*this, "SHRINK").static_shape();
  if (bounds.size() != old.size())
    fail("SHRINK", std::to_string(bounds.size()) + " bounds for the " + std::to_string(old.size()) + " axes of " + shape_text(old));
  for (size_t i = 0; i < bounds.size(); ++i)
    if (bounds[i].first < 0 || bounds[i].second > old[i] || bounds[i].first >= bounds[i].second)
      fail("SHRINK", "axis " + std::to_string(i) + " bounds [" + std::to_string(bounds[i].first) + ", " +
                         std::to_string(bounds[i].second) + ") are not a non-empty part of [0, " + std::to_string(old[i]) + ")");
  return view(*this, Op::SHRINK, flatten_pairs(bounds));
}

UOp UOp::flip(std::vector<int64_t> axes) const {
  auto rank = static_cast<int64_t>(buffer_base_checked(*this, "FLIP").shape().size());
  std::set<int64_t> seen;
  for (int64_t a : axes)
    if (a < 0 || a >= rank || !seen.insert(a).second)
      fail("FLIP", "axis " + std::to_string(a) + " is repeated or not one of the " + std::to_string(rank) + " axes");
  std::sort(axes.begin(), axes.end());
  return view(*this, Op::FLIP, std::move(axes));
}

UOp UOp::pad(std::vector<std::pair<int64_t, int64_t>> padding) const {
  auto old = buffer_base_checked(*this, "PAD").static_shape();
  if (padding.size() != old.size())
    fail("PAD", std::to_string(padding.size()) + " paddings for the " + std::to_string(old.size()) + " axes of " + shape_text(old));
  for (auto [before, after] : padding)
    if (before < 0 || after < 0) fail("PAD", "padding must not be negative");
  return view(*this, Op::PAD, flatten_pairs(padding));
}

UOp UOp::pad_to(std::vector<UOp> new_shape) const {
  const auto& old = buffer_base_checked(*this, "PAD").shape();
  if (new_shape.size() != old.size())
    fail("PAD", std::to_string(new_shape.size()) + " sizes for the " + std::to_string(old.size()) + " axes of " + shape_text(*this));
  std::vector<UOp> src{*this};
  for (size_t i = 0; i < new_shape.size(); ++i) {
    UOp d = as_index(new_shape[i], "PAD");
    if (d.vmax() < 1) fail("PAD", "size " + std::to_string(i) + " (" + expr_string(d) + ") is never positive");
    src.push_back(d);
  }
  return make(Op::PAD, dtype(), std::move(src), ShapeArg{});
}

UOp UOp::expand(std::vector<int64_t> new_shape) const {
  auto old = buffer_base_checked(*this, "EXPAND").static_shape();
  if (new_shape.size() != old.size())
    fail("EXPAND", "shape " + shape_text(new_shape) + " has a different rank from " + shape_text(old));
  for (size_t i = 0; i < old.size(); ++i)
    if (old[i] != new_shape[i] && old[i] != 1)
      fail("EXPAND", "axis " + std::to_string(i) + " of size " + std::to_string(old[i]) + " cannot expand to " + std::to_string(new_shape[i]));
  return view(*this, Op::EXPAND, std::move(new_shape));
}

UOp UOp::unshard(std::vector<int64_t> axes, std::vector<UOp> ranges) const {
  auto rank = static_cast<int64_t>(buffer_base_checked(*this, "UNSHARD").shape().size());
  if (axes.size() != ranges.size())
    fail("UNSHARD", std::to_string(axes.size()) + " axes but " + std::to_string(ranges.size()) + " ranges; give one range per axis");
  std::set<int64_t> seen;
  for (int64_t a : axes)
    if (a < 0 || a >= rank || !seen.insert(a).second)
      fail("UNSHARD", "axis " + std::to_string(a) + " is repeated or not one of the " + std::to_string(rank) + " axes");
  std::vector<UOp> src{*this};
  for (const UOp& r : ranges) {
    if (r.op() != Op::RANGE) fail("UNSHARD", "shards over ranges, got " + std::string(op_name(r.op())));
    src.push_back(r);
  }
  return make(Op::UNSHARD, dtype(), std::move(src), ShapeArg{std::move(axes)});
}

UOp UOp::cast(DType to) const {
  check_value(Op::CAST, *this);
  if (to.lanes != dtype().lanes) fail("CAST", "from " + dtype().name() + " to " + to.name() + " changes the vector width");
  if (to == dtype()) return *this;
  return make(Op::CAST, to, {*this});
}

UOp UOp::bitcast(DType to) const {
  check_value(Op::BITCAST, *this);
  if (to.itemsize() != dtype().itemsize())
    fail("BITCAST", "from " + dtype().name() + " (" + std::to_string(dtype().itemsize()) + " bytes) to " + to.name() + " (" +
                        std::to_string(to.itemsize()) + " bytes) changes the size");
  return make(Op::BITCAST, to, {*this});
}

UOp UOp::contract(std::vector<UOp> ranges) const {
  check_value(Op::CONTRACT, *this);
  int64_t lanes = dtype().lanes;
  std::vector<UOp> src{*this};
  for (const UOp& r : ranges) {
    if (r.op() != Op::RANGE || !r.src(0).is_const())
      fail("CONTRACT", "contracts ranges of constant size, got " + std::string(op_name(r.op())) + " " + expr_string(r));
    lanes *= static_cast<int64_t>(r.src(0).const_int());
    src.push_back(r);
  }
  if (lanes > 65535) fail("CONTRACT", "vector of " + std::to_string(lanes) + " lanes is too wide");
  return make(Op::CONTRACT, dtype().vec(static_cast<int>(lanes)), std::move(src));
}

UOp UOp::reduce(Op red, std::vector<UOp> ranges) const {
  check_value(Op::REDUCE, *this);
  if (red != Op::ADD && red != Op::MUL && red != Op::MAX && red != Op::MIN)
    fail("REDUCE", "reduces with ADD, MUL, MAX or MIN, not " + std::string(op_name(red)));
  std::vector<UOp> src{*this};
  for (const UOp& r : ranges) {
    if (r.op() != Op::RANGE) fail("REDUCE", "reduces over ranges, got " + std::string(op_name(r.op())));
    src.push_back(r);
  }
  return make(Op::REDUCE, dtype(), std::move(src), red);
}

UOp UOp::gep(int64_t lane) const {
  if (lane < 0 || lane >= dtype().lanes)
    fail("GEP", "lane " + std::to_string(lane) + " of a " + std::to_string(dtype().lanes) + "-lane " + dtype().name());
  return make(Op::GEP, dtype().element(), {*this}, ShapeArg{{lane}});
}

UOp UOp::eq(const UOp& o) const { return binary(Op::CMPEQ, *this, o); }
UOp UOp::ne(const UOp& o) const { return binary(Op::CMPNE, *this, o); }
UOp UOp::eq(double o) const { return eq(const_like(o)); }
UOp UOp::ne(double o) const { return ne(const_like(o)); }
UOp UOp::where(const UOp& t, const UOp& f) const { return weft::where(*this, t, f); }

UOp UOp::alu(Op op, std::vector<UOp> others) const {
  if (opsets::unary.contains(op) && others.empty()) {
    if (op == Op::NEG) return -*this;
    if (op == Op::POPCOUNT) return popcount(*this);
    return unary_float(op, *this);
  }
  if (opsets::binary.contains(op) && others.size() == 1) return binary(op, *this, others[0]);
  if (op == Op::WHERE && others.size() == 2) return weft::where(*this, others[0], others[1]);
  if (op == Op::MULACC && others.size() == 2) return mulacc(*this, others[0], others[1]);
  fail(op_name(op), "is not an ALU op with " + std::to_string(others.size() + 1) + " operands");
}

// ---- free functions ---------------------------------------------------------------------------

UOp constant(Wide value, DType dtype) {
  if (dtype.is_vector()) fail("CONST", "a constant is a scalar; vectorize constants for a vector");
  if (dtype.is_float()) return constant(static_cast<double>(value), dtype);
  if (!dtype.is_integral()) fail("CONST", "no constant of dtype " + dtype.name());
  if (value < dtype.min_value() || value > dtype.max_value())
    fail("CONST", wide_to_string(value) + " does not fit in " + dtype.name());
  return UOp::make(Op::CONST, dtype, {}, value);
}

UOp constant(double value, DType dtype) {
  if (!dtype.is_float()) {
    if (std::trunc(value) != value) fail("CONST", std::to_string(value) + " is not a value of " + dtype.name());
    return constant(static_cast<Wide>(value), dtype);
  }
  if (dtype.is_vector()) fail("CONST", "a constant is a scalar; vectorize constants for a vector");
  return UOp::make(Op::CONST, dtype, {}, FloatConst{round_to(dtype, value)});
}

UOp range(int64_t end, int64_t id, AxisType axis) { return range(constant(Wide(end)), id, axis); }

UOp range(const UOp& end, int64_t id, AxisType axis) {
  UOp e = as_index(end, "RANGE");
  if (e.vmax() < 1) fail("RANGE", "range " + std::to_string(id) + " has end " + expr_string(end) + ", which is never positive");
  return UOp::make(Op::RANGE, dtypes::index, {e}, RangeArg{id, axis});
}

UOp special(int64_t end, const std::string& name) { return special(constant(Wide(end)), name); }

UOp special(const UOp& end, const std::string& name) {
  // widx: a work-item id along a dimension whose threads below fill whole waves (a WARP range),
  // so that it is the same in every lane of a wave.
  static const std::set<std::string> kNames{"gidx0", "gidx1", "gidx2", "lidx0", "lidx1", "lidx2", "widx0", "widx1", "widx2"};
  if (!kNames.count(name)) fail("SPECIAL", "unknown hardware index '" + name + "' (expected gidx0-2, lidx0-2 or widx0-2)");
  return UOp::make(Op::SPECIAL, dtypes::index, {as_index(end, "SPECIAL")}, name);
}

UOp variable(const std::string& name, int64_t min, int64_t max, DType dtype) {
  if (!is_identifier(name)) fail("DEFINE_VAR", "'" + name + "' is not an identifier");
  if (dtype != dtypes::int32 && dtype != dtypes::int64 && dtype != dtypes::index)
    fail("DEFINE_VAR", "variable " + name + " has dtype " + dtype.name() + "; integer variables are int32, int64 or index");
  if (min > max) fail("DEFINE_VAR", "variable " + name + " has min " + std::to_string(min) + " > max " + std::to_string(max));
  if (min < dtype.min_value() || max > dtype.max_value())
    fail("DEFINE_VAR", "bounds of variable " + name + " do not fit in " + dtype.name());
  return UOp::make(Op::DEFINE_VAR, dtype, {}, VarArg{name, min, max});
}

UOp variable_f32(const std::string& name) {
  if (!is_identifier(name)) fail("DEFINE_VAR", "'" + name + "' is not an identifier");
  return UOp::make(Op::DEFINE_VAR, dtypes::float32, {}, VarArg{name, 0, 0});
}

UOp placeholder(const std::vector<int64_t>& shape, DType dtype, int64_t slot, AddrSpace space) {
  check_dims("PLACEHOLDER", shape);
  std::vector<UOp> dims;
  for (int64_t d : shape) dims.push_back(constant(Wide(d)));
  return placeholder(dims, dtype, slot, space);
}

UOp placeholder(std::span<const UOp> shape, DType dtype, int64_t slot, AddrSpace space) {
  if (shape.empty()) fail("PLACEHOLDER", "a buffer needs at least one dimension");
  if (dtype.is_void()) fail("PLACEHOLDER", "a buffer of void");
  if (space == AddrSpace::ALU) fail("PLACEHOLDER", "a buffer lives in GLOBAL, LOCAL or REG memory, not ALU");
  if (slot < 0) fail("PLACEHOLDER", "slot " + std::to_string(slot) + " is negative");
  std::vector<UOp> dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    UOp d = as_index(shape[i], "PLACEHOLDER");
    if (d.vmax() < 1) fail("PLACEHOLDER", "dimension " + std::to_string(i) + " (" + expr_string(d) + ") is never positive");
    if (space != AddrSpace::GLOBAL && !d.is_const())
      fail("PLACEHOLDER", std::string(addrspace_name(space)) + " buffers need constant dimensions, dimension " +
                              std::to_string(i) + " is " + expr_string(d));
    dims.push_back(d);
  }
  return UOp::make(Op::PLACEHOLDER, dtype, std::move(dims), BufferArg{slot, space});
}

UOp alloc_shared(const std::vector<int64_t>& shape, DType dtype, std::optional<int64_t> id) {
  return placeholder(shape, dtype, id ? *id : next_alloc_id++, AddrSpace::LOCAL);
}

UOp alloc_fragment(const std::vector<int64_t>& shape, DType dtype, const std::vector<int64_t>& axes,
                   const std::vector<UOp>& thread_ranges, std::optional<int64_t> id) {
  if (axes.size() != thread_ranges.size())
    fail("alloc_fragment", std::to_string(axes.size()) + " axes but " + std::to_string(thread_ranges.size()) + " thread ranges");
  std::vector<int64_t> shard = shape;
  for (size_t k = 0; k < axes.size(); ++k) {
    const UOp& r = thread_ranges[k];
    if (r.op() != Op::RANGE || !r.src(0).is_const())
      fail("alloc_fragment", "thread range " + std::to_string(k) + " is not a range of constant size");
    auto threads = static_cast<int64_t>(r.src(0).const_int());
    if (axes[k] < 0 || axes[k] >= static_cast<int64_t>(shape.size()))
      fail("alloc_fragment", "axis " + std::to_string(axes[k]) + " is not one of the axes of " + shape_text(shape));
    auto& dim = shard[static_cast<size_t>(axes[k])];
    if (dim % threads != 0)
      fail("alloc_fragment", "axis " + std::to_string(axes[k]) + " of size " + std::to_string(dim) + " does not divide over " +
                                 std::to_string(threads) + " threads of range " + std::to_string(r.arg_as<RangeArg>().id));
    dim /= threads;
  }
  UOp reg = placeholder(shard, dtype, id ? *id : next_alloc_id++, AddrSpace::REG);
  return reg.unshard(axes, thread_ranges);
}

// One counter for every identity the builder hands out (LOCAL/REG allocation ids and effect
// sites), renumbered canonically by the pipeline (lower::canonical_allocations).
int64_t fresh_id() { return next_alloc_id++; }

namespace {

// A synchronization statement comes after effects, and after values it has computed first (a
// memory cluster's loads); a buffer or an element's place is neither.
void check_predecessors(std::string_view what, const std::vector<UOp>& after) {
  for (const UOp& e : after) {
    UOp root = e;
    while (root.op() == Op::AFTER) root = root.src(0);
    if (root.op() == Op::PLACEHOLDER || root.op() == Op::INDEX)
      fail(what, "comes after effects (stores, barriers, ends) and values computed before it, got " + std::string(op_name(e.op())) + " " +
                     expr_string(e) + ", which is a buffer or a place in one: name its load or the effect that wrote it");
  }
}

}  // namespace

Prefetched prefetch(const std::vector<UOp>& values) {
  std::vector<UOp> stores, registers;
  for (const UOp& v : values) {
    if (v.is_effect() || v.dtype() == dtypes::index || v.dtype().is_vector())
      fail("prefetch", "takes scalar values of a concrete dtype, got " + std::string(op_name(v.op())) + " of " + v.dtype().name());
    registers.push_back(placeholder({1}, v.dtype(), fresh_id(), AddrSpace::REG));
    stores.push_back(registers.back()[constant(Wide(0))].store(v));
  }
  Prefetched out{group(stores), {}};
  for (const UOp& r : registers) out.values.push_back(r.after({out.issued})[constant(Wide(0))].load());
  return out;
}

UOp barrier(const std::vector<UOp>& after, BarrierFence fence) {
  check_predecessors("BARRIER", after);
  return UOp::make(Op::BARRIER, dtypes::void_, after, EffectArg{fresh_id(), static_cast<Wide>(fence), {}});
}

UOp wait_counts(WaitCounts counts, const std::vector<UOp>& after) {
  for (const auto& [name, n] : {std::pair{"vm", counts.vm}, std::pair{"lgkm", counts.lgkm}})
    if (n && *n < 0) fail("WAIT", std::string(name) + " count " + std::to_string(*n) + " is negative");
  if (!counts.vm && !counts.lgkm) fail("WAIT", "waits on no counter; give vm, lgkm or both");
  check_predecessors("WAIT", after);
  return UOp::make(Op::WAIT, dtypes::void_, after, WaitArg{fresh_id(), counts.vm.value_or(-1), counts.lgkm.value_or(-1)});
}

UOp async_commit(const std::vector<UOp>& after) {
  check_predecessors("ASYNC_COMMIT", after);
  return UOp::make(Op::ASYNC_COMMIT, dtypes::void_, after, EffectArg{fresh_id(), 0, {}});
}

namespace {
void check_sched_mask(std::string_view what, SchedMask mask) {
  if ((static_cast<uint32_t>(mask) & ~kSchedMaskAll) != 0) fail(what, "mask " + std::to_string(static_cast<uint32_t>(mask)) + " has unknown bits");
}
}  // namespace

UOp sched_barrier(SchedMask mask, const std::vector<UOp>& after) {
  check_sched_mask("SCHED_BARRIER", mask);
  check_predecessors("SCHED_BARRIER", after);
  return UOp::make(Op::SCHED_BARRIER, dtypes::void_, after, SchedArg{fresh_id(), mask, 0, 0});
}

UOp sched_group_barrier(SchedMask mask, int64_t size, int64_t sync_id, const std::vector<UOp>& after) {
  check_sched_mask("SCHED_GROUP_BARRIER", mask);
  if (size < 1) fail("SCHED_GROUP_BARRIER", "a group of " + std::to_string(size) + " instructions; give at least 1");
  if (sync_id < 0) fail("SCHED_GROUP_BARRIER", "sync id " + std::to_string(sync_id) + " is negative");
  check_predecessors("SCHED_GROUP_BARRIER", after);
  return UOp::make(Op::SCHED_GROUP_BARRIER, dtypes::void_, after, SchedArg{fresh_id(), mask, size, sync_id});
}

UOp wave_priority(int64_t level, const std::vector<UOp>& after) {
  if (level < 0 || level > 3) fail("PRIORITY", "wave priority " + std::to_string(level) + " is not 0, 1, 2 or 3");
  check_predecessors("PRIORITY", after);
  return UOp::make(Op::PRIORITY, dtypes::void_, after, EffectArg{fresh_id(), level, {}});
}

// ---- Hopper ----------------------------------------------------------------------------------

namespace {

// The root placeholder of an INDEX's buffer (through views and AFTER), if it is one.
std::optional<UOp> indexed_buffer(const UOp& index) {
  if (index.op() != Op::INDEX) return std::nullopt;
  UOp b = index.src(0);
  while (b.op() != Op::PLACEHOLDER && !b.src().empty()) b = b.src(0);
  if (b.op() != Op::PLACEHOLDER) return std::nullopt;
  return b;
}

void check_indexed(std::string_view what, const char* role, const UOp& index, AddrSpace space, const std::vector<DType>& dtypes) {
  const auto b = indexed_buffer(index);
  const bool dtype_ok = std::any_of(dtypes.begin(), dtypes.end(), [&](DType d) { return index.dtype() == d; });
  if (!b || b->arg_as<BufferArg>().space != space || !dtype_ok) {
    std::string names;
    for (DType d : dtypes) names += (names.empty() ? "" : " or ") + d.name();
    fail(what, std::string(role) + " must index a " + std::string(addrspace_name(space)) + " buffer of " + names + ", got " +
                   std::string(op_name(index.op())) + " " + index.dtype().name() + " " + expr_string(index, 80));
  }
}

UOp mbarrier(MbarrierOp kind, const UOp& bar, std::optional<UOp> operand, const std::vector<UOp>& after) {
  const std::string what = "MBARRIER " + std::string(mbarrier_op_name(kind));
  check_indexed(what, "the barrier", bar, AddrSpace::LOCAL, {dtypes::uint64});
  std::vector<UOp> src{bar};
  if (operand) {
    check_value(Op::MBARRIER, *operand);
    if (!(operand->dtype() == dtypes::int32)) fail(what, "takes an int32 operand, got " + operand->dtype().name() + " " + expr_string(*operand, 80));
    src.push_back(*operand);
  }
  check_predecessors(what, after);
  src.insert(src.end(), after.begin(), after.end());
  return UOp::make(Op::MBARRIER, dtypes::void_, std::move(src), EffectArg{fresh_id(), static_cast<Wide>(kind), {}});
}

void check_matrix_layout(const char* role, const MatrixLayoutArg& m) {
  for (const auto& [name, bytes] : {std::pair{"leading", m.leading_bytes}, std::pair{"stride", m.stride_bytes}})
    if (bytes < 0 || bytes % 16 != 0 || bytes >= (int64_t{1} << 18))
      fail("WGMMA", std::string(role) + "'s " + name + " byte offset " + std::to_string(bytes) + " is not a multiple of 16 in [0, 2^18)");
}

}  // namespace

UOp mbarrier_init(const UOp& bar, int64_t count, const std::vector<UOp>& after) {
  if (count < 1 || count >= (int64_t{1} << 20)) fail("MBARRIER init", "arrival count " + std::to_string(count) + " is not in 1..2^20-1");
  return mbarrier(MbarrierOp::Init, bar, constant(Wide(count), dtypes::int32), after);
}
UOp mbarrier_arrive(const UOp& bar, const std::vector<UOp>& after) { return mbarrier(MbarrierOp::Arrive, bar, std::nullopt, after); }
UOp mbarrier_arrive_warp(const UOp& bar, const std::vector<UOp>& after) { return mbarrier(MbarrierOp::ArriveWarp, bar, std::nullopt, after); }
UOp mbarrier_arrive_expect_tx(const UOp& bar, const UOp& bytes, const std::vector<UOp>& after) {
  return mbarrier(MbarrierOp::ArriveExpectTx, bar, bytes, after);
}
UOp mbarrier_wait(const UOp& bar, const UOp& parity, const std::vector<UOp>& after) {
  return mbarrier(MbarrierOp::Wait, bar, parity, after);
}
UOp mbarrier_arrive_cluster(const UOp& bar, const UOp& cta, const std::vector<UOp>& after) {
  return mbarrier(MbarrierOp::ArriveCluster, bar, cta, after);
}

namespace {

// The WGMMA node and the checks both forms share; `a` is checked by the caller.
UOp wgmma_node(const UOp& acc, const UOp& a, const UOp& b, int64_t n, DType input, const MatrixLayoutArg& a_layout, bool a_registers,
               const MatrixLayoutArg& b_layout, const std::vector<UOp>& after, const UOp& accumulate) {
  check_indexed("WGMMA", "the accumulator", acc, AddrSpace::REG, {dtypes::float32});
  check_indexed("WGMMA", "B", b, AddrSpace::LOCAL, {input});
  const std::vector<int64_t> shape = indexed_buffer(acc)->static_shape();
  int64_t held = 1;
  for (int64_t d : shape) held *= d;
  if (held < n / 2) fail("WGMMA", "the accumulator buffer holds " + std::to_string(held) + " floats per thread; m64n" + std::to_string(n) + "k16 needs " + std::to_string(n / 2));
  // A constant first register (a second 64-row slab starts at n / 2; in a multi-dimensional
  // buffer, the row-major offset of constant indices) must leave the n / 2 registers inside the
  // buffer; the CUDA renderer refuses a first register that is not constant.
  UOp base = acc.src(0);
  while (base.op() == Op::AFTER) base = base.src(0);
  std::optional<int64_t> first = base.op() == Op::PLACEHOLDER && acc.src().size() == shape.size() + 1 ? std::optional<int64_t>(0) : std::nullopt;  // not through a view
  for (size_t d = 0; d < shape.size() && first; ++d) {
    const UOp& i = acc.src(d + 1);
    first = i.is_const() ? std::optional<int64_t>(*first * shape[d] + static_cast<int64_t>(i.const_int())) : std::nullopt;
  }
  if (first && (*first < 0 || *first + n / 2 > held))
    fail("WGMMA", "the accumulator's registers " + std::to_string(*first) + " .. " + std::to_string(*first + n / 2 - 1) +
                      " lie outside its buffer of " + std::to_string(held) + " floats per thread");
  check_matrix_layout("B", b_layout);
  check_predecessors("WGMMA", after);
  const UOp scale_d = accumulate.is_null() ? constant(Wide(1), dtypes::bool_) : accumulate;
  check_value(Op::WGMMA, scale_d);
  if (!(scale_d.dtype() == dtypes::bool_)) fail("WGMMA", "accumulate is a bool, got " + scale_d.dtype().name() + " " + expr_string(scale_d));
  std::vector<UOp> src{acc, a, b, scale_d};
  src.insert(src.end(), after.begin(), after.end());
  return UOp::make(Op::WGMMA, dtypes::void_, std::move(src), WgmmaArg{fresh_id(), n, input, a_layout, b_layout, a_registers});
}

void check_wgmma_shape(int64_t n, DType input) {
  if (n < 8 || n > 256 || n % 8 != 0) fail("WGMMA", "n = " + std::to_string(n) + "; wgmma m64nNkK takes n from 8 to 256 in steps of 8");
  if (!(input == dtypes::float16 || input == dtypes::bfloat16 || input == dtypes::fp8e4m3 || input == dtypes::fp8e5m2))
    fail("WGMMA", "inputs are float16, bfloat16, float8_e4m3fn or float8_e5m2, got " + input.name());
}

}  // namespace

UOp wgmma(const UOp& acc, const UOp& a, const UOp& b, int64_t n, DType input, const MatrixLayoutArg& a_layout,
          const MatrixLayoutArg& b_layout, const std::vector<UOp>& after, const UOp& accumulate) {
  check_wgmma_shape(n, input);
  check_indexed("WGMMA", "A", a, AddrSpace::LOCAL, {input});
  check_matrix_layout("A", a_layout);
  return wgmma_node(acc, a, b, n, input, a_layout, false, b_layout, after, accumulate);
}

UOp wgmma_registers(const UOp& acc, const UOp& a, const UOp& b, int64_t n, DType input, const MatrixLayoutArg& b_layout,
                    const std::vector<UOp>& after, const UOp& accumulate) {
  check_wgmma_shape(n, input);
  if (a.op() == Op::INDEX) fail("WGMMA", "A from registers is a value (the thread's fragment), not an INDEX " + expr_string(a, 80) + "; load it first");
  check_value(Op::WGMMA, a);
  // Four 32-bit registers a thread: 8 values of a 2-byte type, 16 of an fp8 format.
  const int64_t lanes = 16 / input.itemsize();
  if (!(a.dtype() == input.vec(static_cast<int>(lanes))))
    fail("WGMMA", "A from registers is " + std::to_string(lanes) + " values of " + input.name() + " a thread (" + input.vec(static_cast<int>(lanes)).name() +
                      "), got " + a.dtype().name() + " " + expr_string(a, 80));
  return wgmma_node(acc, a, b, n, input, {}, true, b_layout, after, accumulate);
}

namespace {

// The checks a TMA copy's operands share: a 2-D GLOBAL tensor, the shared-memory side an INDEX
// into a LOCAL buffer of its dtype, int32 coordinates, a box TMA takes.
void check_tma(Op kind, const char* shared_role, const UOp& shared, const UOp& tensor, const UOp& row, const UOp& col, int64_t box_rows,
               int64_t box_cols, WgmmaSwizzle swizzle) {
  const std::string_view op = op_name(kind);
  if (tensor.op() != Op::PLACEHOLDER || tensor.arg_as<BufferArg>().space != AddrSpace::GLOBAL || tensor.shape().size() != 2)
    fail(op, "the tensor is a 2-D GLOBAL buffer, got " + std::string(op_name(tensor.op())) + " " + expr_string(tensor, 80));
  check_indexed(op, shared_role, shared, AddrSpace::LOCAL, {tensor.dtype()});
  for (const UOp& x : {row, col}) {
    check_value(kind, x);
    if (!(x.dtype() == dtypes::int32)) fail(op, "coordinates are int32 values, got " + x.dtype().name() + " " + expr_string(x, 80));
  }
  const int64_t item = tensor.dtype().itemsize();
  if (box_rows < 1 || box_rows > 256 || box_cols < 1 || box_cols > 256 || (box_cols * item) % 16 != 0)
    fail(op, "a box of " + std::to_string(box_rows) + " x " + std::to_string(box_cols) + "; each side is 1..256 elements and a row a multiple of 16 bytes");
  const int64_t span = swizzle_row_bytes(swizzle);
  if (span > 0 && box_cols * item > span)
    fail(op, "a " + std::to_string(span) + "-byte swizzle takes rows of at most " + std::to_string(span) + " bytes, the box's are " +
                 std::to_string(box_cols * item));
}

}  // namespace

UOp tma_load(const UOp& dst, const UOp& tensor, const UOp& bar, const UOp& row, const UOp& col, int64_t box_rows, int64_t box_cols,
             WgmmaSwizzle swizzle, const std::vector<UOp>& after) {
  check_tma(Op::TMA_LOAD, "the destination", dst, tensor, row, col, box_rows, box_cols, swizzle);
  check_indexed("TMA_LOAD", "the barrier", bar, AddrSpace::LOCAL, {dtypes::uint64});
  check_predecessors("TMA_LOAD", after);
  std::vector<UOp> src{dst, tensor, bar, row, col};
  src.insert(src.end(), after.begin(), after.end());
  return UOp::make(Op::TMA_LOAD, dtypes::void_, std::move(src), TmaArg{fresh_id(), box_rows, box_cols, swizzle});
}

UOp tma_load_multicast(const UOp& dst, const UOp& tensor, const UOp& bar, const UOp& row, const UOp& col, int64_t box_rows, int64_t box_cols,
                       WgmmaSwizzle swizzle, const UOp& ctas, const std::vector<UOp>& after) {
  check_tma(Op::TMA_LOAD, "the destination", dst, tensor, row, col, box_rows, box_cols, swizzle);
  check_indexed("TMA_LOAD", "the barrier", bar, AddrSpace::LOCAL, {dtypes::uint64});
  check_value(Op::TMA_LOAD, ctas);
  if (!(ctas.dtype() == dtypes::int32)) fail("TMA_LOAD", "the CTA mask is an int32 value, got " + ctas.dtype().name() + " " + expr_string(ctas, 80));
  if (ctas.is_const() && (ctas.const_int() < 1 || ctas.const_int() >= (Wide{1} << kMaxCluster)))
    fail("TMA_LOAD", "the CTA mask " + wide_to_string(ctas.const_int()) + " names no CTA, or one past a cluster's " + std::to_string(kMaxCluster));
  check_predecessors("TMA_LOAD", after);
  std::vector<UOp> src{dst, tensor, bar, row, col, ctas};
  src.insert(src.end(), after.begin(), after.end());
  return UOp::make(Op::TMA_LOAD, dtypes::void_, std::move(src), TmaArg{fresh_id(), box_rows, box_cols, swizzle, true});
}

UOp tma_store(const UOp& src, const UOp& tensor, const UOp& row, const UOp& col, int64_t box_rows, int64_t box_cols, WgmmaSwizzle swizzle,
              const std::vector<UOp>& after) {
  check_tma(Op::TMA_STORE, "the source", src, tensor, row, col, box_rows, box_cols, swizzle);
  check_predecessors("TMA_STORE", after);
  std::vector<UOp> sources{src, tensor, row, col};
  sources.insert(sources.end(), after.begin(), after.end());
  return UOp::make(Op::TMA_STORE, dtypes::void_, std::move(sources), TmaArg{fresh_id(), box_rows, box_cols, swizzle});
}

UOp tma_store_wait(int64_t pending, const std::vector<UOp>& after) {
  if (pending < 0 || pending > 7) fail("TMA_STORE_WAIT", "pending group count " + std::to_string(pending) + " is not in 0..7");
  check_predecessors("TMA_STORE_WAIT", after);
  return UOp::make(Op::TMA_STORE_WAIT, dtypes::void_, after, EffectArg{fresh_id(), pending, {}});
}

UOp set_max_registers(int64_t count, RegisterBudget change, const std::vector<UOp>& after) {
  if (!valid_register_budget(count))
    fail("SETMAXNREG", "a budget of " + std::to_string(count) + " registers a thread; setmaxnreg takes 24 .. 256 in steps of 8");
  check_predecessors("SETMAXNREG", after);
  return UOp::make(Op::SETMAXNREG, dtypes::void_, after, EffectArg{fresh_id(), change == RegisterBudget::Raise ? count : -count, {}});
}

UOp grid_barrier(const UOp& counter, const std::vector<UOp>& after) {
  check_indexed("GRID_BARRIER", "the counter", counter, AddrSpace::GLOBAL, {dtypes::uint32});
  // One counter for the whole grid: a workgroup arriving on a counter of its own would wait forever.
  for (const UOp& u : toposort(counter))
    if (u.op() == Op::RANGE || u.op() == Op::SPECIAL)
      fail("GRID_BARRIER", "the counter must be one element for every thread of the grid; its index depends on " + expr_string(u, 60) +
                               " (" + expr_string(counter, 80) + ")");
  check_predecessors("GRID_BARRIER", after);
  std::vector<UOp> src{counter};
  src.insert(src.end(), after.begin(), after.end());
  return UOp::make(Op::GRID_BARRIER, dtypes::void_, std::move(src), EffectArg{fresh_id(), 0, {}});
}

UOp cluster_sync(const std::vector<UOp>& after) {
  check_predecessors("CLUSTER_SYNC", after);
  return UOp::make(Op::CLUSTER_SYNC, dtypes::void_, after, EffectArg{fresh_id(), 0, {}});
}

UOp wgmma_fence(const std::vector<UOp>& after, bool shared_writes) {
  check_predecessors("WGMMA_FENCE", after);
  return UOp::make(Op::WGMMA_FENCE, dtypes::void_, after, EffectArg{fresh_id(), shared_writes ? 1 : 0, {}});
}
UOp wgmma_commit(const std::vector<UOp>& after) {
  check_predecessors("WGMMA_COMMIT", after);
  return UOp::make(Op::WGMMA_COMMIT, dtypes::void_, after, EffectArg{fresh_id(), 0, {}});
}
UOp wgmma_wait(int64_t pending, const std::vector<UOp>& after) {
  if (pending < 0 || pending > 7) fail("WGMMA_WAIT", "pending group count " + std::to_string(pending) + " is not in 0..7");
  check_predecessors("WGMMA_WAIT", after);
  return UOp::make(Op::WGMMA_WAIT, dtypes::void_, after, EffectArg{fresh_id(), pending, {}});
}

UOp when(const UOp& cond, const std::vector<UOp>& effects) {
  check_value(Op::WHEN, cond);
  if (!(cond.dtype() == dtypes::bool_)) fail("WHEN", "the condition is a bool, got " + cond.dtype().name() + " " + expr_string(cond));
  if (effects.empty()) fail("WHEN", "guards at least one effect");
  std::vector<UOp> src{cond};
  for (const UOp& e : effects) {
    if (!e.is_effect()) fail("WHEN", "guards effects, got " + std::string(op_name(e.op())));
    src.push_back(e);
  }
  return UOp::make(Op::WHEN, dtypes::void_, std::move(src));
}

namespace {

bool atomic_dtype_ok(AtomicOp op, DType d) {
  const bool int32_64 = d == dtypes::int32 || d == dtypes::uint32 || d == dtypes::int64 || d == dtypes::uint64;
  switch (op) {
    case AtomicOp::Add:
      return int32_64 || d == dtypes::float32 || d == dtypes::float16.vec(2) || d == dtypes::bfloat16.vec(2);
    case AtomicOp::Exchange: return int32_64 || d == dtypes::float32;
    default: return int32_64;
  }
}

UOp make_atomic(AtomicOp op, const UOp& index, std::vector<UOp> values, Scope scope) {
  const std::string what = "ATOMIC " + std::string(atomic_op_name(op));
  if (index.op() != Op::INDEX) fail(what, "works through an index into a buffer, got " + std::string(op_name(index.op())));
  for (const UOp& v : values) check_value(Op::ATOMIC, v);
  const DType d = values.back().dtype();
  if (!atomic_dtype_ok(op, d)) fail(what, "is not defined for " + d.name());
  if (!(d.element() == index.dtype())) fail(what, "of " + d.name() + " into a buffer of " + index.dtype().name());
  for (const UOp& v : values)
    if (!(v.dtype() == d)) fail(what, "operands of dtypes " + values[0].dtype().name() + " and " + d.name());
  std::vector<UOp> src{index};
  src.insert(src.end(), values.begin(), values.end());
  return UOp::make(Op::ATOMIC, d, std::move(src), AtomicArg{op, scope, fresh_id()});
}

void check_width(std::string_view what, int64_t width) {
  if (width < 1 || width > 64 || (width & (width - 1)) != 0)
    fail(what, "lane groups of " + std::to_string(width) + "; a width is a power of two up to 64");
}

UOp lane_op(LaneOp op, const UOp& x, const UOp& operand, int64_t width) {
  const std::string what = "SHUFFLE " + std::string(lane_op_name(op));
  check_value(Op::SHUFFLE, x);
  if (x.dtype().is_vector()) fail(what, "moves scalars, got " + x.dtype().name());
  check_width(what, width);
  return UOp::make(Op::SHUFFLE, x.dtype(), {x, operand}, LaneArg{op, width});
}

UOp vote(LaneOp op, const UOp& pred, int64_t wave) {
  check_value(Op::VOTE, pred);
  if (!(pred.dtype() == dtypes::bool_)) fail("VOTE", "votes on a bool, got " + pred.dtype().name());
  check_width("VOTE", wave);
  return UOp::make(Op::VOTE, op == LaneOp::Ballot ? dtypes::uint64 : dtypes::bool_, {pred}, LaneArg{op, wave});
}

UOp lane_number(std::string_view what, int64_t v, int64_t width) {
  if (v < 0 || v >= width) fail(what, std::to_string(v) + " is not a lane offset within a group of " + std::to_string(width));
  return constant(Wide(v), dtypes::int32);
}

}  // namespace

UOp atomic(AtomicOp op, const UOp& index, const UOp& value, Scope scope) {
  if (op == AtomicOp::CompareSwap) fail("ATOMIC", "compare_swap takes a comparand: use atomic_compare_swap");
  return make_atomic(op, index, {value}, scope);
}

UOp atomic_compare_swap(const UOp& index, const UOp& compare, const UOp& value, Scope scope) {
  return make_atomic(AtomicOp::CompareSwap, index, {compare, value}, scope);
}

UOp shuffle_xor(const UOp& x, int64_t mask, int64_t width) { return lane_op(LaneOp::Xor, x, lane_number("SHUFFLE xor", mask, width), width); }
UOp shuffle_up(const UOp& x, int64_t delta, int64_t width) { return lane_op(LaneOp::Up, x, lane_number("SHUFFLE up", delta, width), width); }
UOp shuffle_down(const UOp& x, int64_t delta, int64_t width) {
  return lane_op(LaneOp::Down, x, lane_number("SHUFFLE down", delta, width), width);
}
UOp shuffle(const UOp& x, const UOp& lane, int64_t width) {
  if (!(lane.dtype() == dtypes::int32)) fail("SHUFFLE index", "the source lane is an int32, got " + lane.dtype().name());
  return lane_op(LaneOp::Index, x, lane, width);
}

UOp broadcast(const UOp& x) {
  check_value(Op::BROADCAST, x);
  if (x.dtype().is_vector()) fail("BROADCAST", "moves scalars, got " + x.dtype().name());
  return UOp::make(Op::BROADCAST, x.dtype(), {x});
}

UOp broadcast(const UOp& x, const UOp& lane) {
  check_value(Op::BROADCAST, x);
  if (x.dtype().is_vector()) fail("BROADCAST", "moves scalars, got " + x.dtype().name());
  if (!(lane.dtype() == dtypes::int32)) fail("BROADCAST", "the source lane is an int32, got " + lane.dtype().name());
  return UOp::make(Op::BROADCAST, x.dtype(), {x, lane});
}

UOp ballot(const UOp& pred, int64_t wave) { return vote(LaneOp::Ballot, pred, wave); }
UOp any(const UOp& pred, int64_t wave) { return vote(LaneOp::Any, pred, wave); }
UOp all(const UOp& pred, int64_t wave) { return vote(LaneOp::All, pred, wave); }

UOp wave_reduce(const UOp& x, Op op, int64_t width) {
  if (op != Op::ADD && op != Op::MUL && op != Op::MAX && op != Op::MIN)
    fail("wave_reduce", "reduces with ADD, MUL, MAX or MIN, not " + std::string(op_name(op)));
  check_width("wave_reduce", width);
  UOp v = x;
  for (int64_t m = 1; m < width; m *= 2) v = v.alu(op, {shuffle_xor(v, m, width)});
  return v;
}

UOp group(const std::vector<UOp>& effects) {
  for (const UOp& e : effects)
    if (!e.is_effect()) fail("GROUP", "groups effects, got " + std::string(op_name(e.op())));
  return UOp::make(Op::GROUP, dtypes::void_, effects);
}

UOp sink(const KernelInfo& info, const std::vector<UOp>& effects) {
  if (!is_identifier(info.name)) fail("SINK", "kernel name '" + info.name + "' is not an identifier");
  if (info.cluster < 1 || info.cluster > kMaxCluster)
    fail("SINK", "kernel " + info.name + ": a cluster of " + std::to_string(info.cluster) + " CTAs; clusters hold 1.." + std::to_string(kMaxCluster));
  for (const UOp& e : effects)
    if (!e.is_effect()) fail("SINK", "kernel " + info.name + " sinks effects, got " + std::string(op_name(e.op())));
  return UOp::make(Op::SINK, dtypes::void_, effects, info);
}

UOp async_copy(const UOp& dst, const UOp& src, int64_t elements) {
  if (dst.op() != Op::INDEX || src.op() != Op::INDEX) fail("ASYNC_COPY", "copies between two indexed buffers");
  if (!(dst.dtype() == src.dtype())) fail("ASYNC_COPY", "from " + src.dtype().name() + " to " + dst.dtype().name());
  if (elements < 1) fail("ASYNC_COPY", "copies at least one element");
  return UOp::make(Op::ASYNC_COPY, dst.dtype().vec(static_cast<int>(elements)), {dst, src});
}

UOp where(const UOp& cond, const UOp& t, const UOp& f) {
  check_value(Op::WHERE, cond);
  if (!cond.dtype().element().is_bool()) fail("WHERE", "condition has dtype " + cond.dtype().name() + ", not bool");
  check_value(Op::WHERE, t);
  check_value(Op::WHERE, f);
  check_same_dtype(Op::WHERE, t, f);
  return UOp::make(Op::WHERE, t.dtype(), {cond, t, f});
}

UOp max(const UOp& a, const UOp& b) { return binary(Op::MAX, a, b); }
UOp min(const UOp& a, const UOp& b) { return binary(Op::MIN, a, b); }
UOp sqrt(const UOp& x) { return unary_float(Op::SQRT, x); }
UOp exp2(const UOp& x) { return unary_float(Op::EXP2, x); }
UOp log2(const UOp& x) { return unary_float(Op::LOG2, x); }
UOp sin(const UOp& x) { return unary_float(Op::SIN, x); }
UOp recip(const UOp& x) { return unary_float(Op::RECIP, x); }
UOp trunc(const UOp& x) { return unary_float(Op::TRUNC, x); }
UOp popcount(const UOp& x) {
  check_value(Op::POPCOUNT, x);
  if (!x.dtype().is_int() || !x.dtype().is_unsigned()) fail("POPCOUNT", "needs an unsigned integer operand, got " + x.dtype().name());
  return UOp::make(Op::POPCOUNT, x.dtype(), {x});
}
UOp pow(const UOp& x, const UOp& y) { return binary(Op::POW, x, y); }

UOp mulacc(const UOp& a, const UOp& b, const UOp& c) {
  DType dt = alu_result(Op::MUL, a, b);
  check_same_dtype(Op::MULACC, a, c);
  return UOp::make(Op::MULACC, dt, {a, b, c});
}

UOp vectorize(const std::vector<UOp>& lanes) {
  if (lanes.empty()) fail("VECTORIZE", "needs at least one lane");
  for (const UOp& l : lanes) {
    check_value(Op::VECTORIZE, l);
    if (l.dtype().is_vector() || !(l.dtype() == lanes[0].dtype()))
      fail("VECTORIZE", "lanes must be scalars of one dtype, got " + lanes[0].dtype().name() + " and " + l.dtype().name());
  }
  return UOp::make(Op::VECTORIZE, lanes[0].dtype().vec(static_cast<int>(lanes.size())), lanes);
}

UOp idiv(const UOp& a, const UOp& b) { return binary(Op::IDIV, a, b); }
UOp mod(const UOp& a, const UOp& b) { return binary(Op::MOD, a, b); }

UOp wmma(const UOp& a, const UOp& b, const UOp& acc, const WmmaArg& s) {
  auto expect = [&](const UOp& x, const char* which, DType el, int64_t elems) {
    if (s.threads <= 0 || elems % s.threads != 0)
      fail("WMMA", std::string(which) + " fragment of " + std::to_string(elems) + " elements does not divide over " + std::to_string(s.threads) + " lanes");
    DType want = el.vec(static_cast<int>(elems / s.threads));
    if (!(x.dtype() == want))
      fail("WMMA", std::string(which) + " has dtype " + x.dtype().name() + "; a " + std::to_string(s.m) + "x" + std::to_string(s.n) +
                       "x" + std::to_string(s.k) + " wmma over " + std::to_string(s.threads) + " lanes needs " + want.name());
  };
  expect(a, "A", s.input, s.m * s.k);
  expect(b, "B", s.input, s.k * s.n);
  expect(acc, "C", s.accum, s.m * s.n);
  return UOp::make(Op::WMMA, acc.dtype(), {a, b, acc}, s);
}

UOp custom(const std::string& text, const std::vector<UOp>& operands, const std::vector<UOp>& after) {
  if (text.empty()) fail("CUSTOM", "empty statement");
  for (const UOp& x : operands) check_value(Op::CUSTOM, x);
  check_predecessors("CUSTOM", after);
  std::vector<UOp> src = operands;
  src.insert(src.end(), after.begin(), after.end());
  return UOp::make(Op::CUSTOM, dtypes::void_, std::move(src), EffectArg{fresh_id(), 0, text});
}

UOp customi(const std::string& text, DType dtype, const std::vector<UOp>& operands) {
  if (text.empty()) fail("CUSTOMI", "empty expression");
  if (dtype.is_void()) fail("CUSTOMI", "an inline expression needs a dtype");
  for (const UOp& x : operands) check_value(Op::CUSTOMI, x);
  return UOp::make(Op::CUSTOMI, dtype, operands, EffectArg{fresh_id(), 0, text});
}

// ---- operators --------------------------------------------------------------------------------

UOp operator+(const UOp& a, const UOp& b) { return binary(Op::ADD, a, b); }
UOp operator-(const UOp& a, const UOp& b) { return binary(Op::SUB, a, b); }
UOp operator*(const UOp& a, const UOp& b) { return binary(Op::MUL, a, b); }
UOp operator/(const UOp& a, const UOp& b) { return binary(a.dtype().is_float() ? Op::FDIV : Op::IDIV, a, b); }
UOp operator%(const UOp& a, const UOp& b) { return binary(Op::MOD, a, b); }
UOp operator<(const UOp& a, const UOp& b) { return binary(Op::CMPLT, a, b); }
UOp operator>(const UOp& a, const UOp& b) { return binary(Op::CMPLT, b, a); }
// For floats, !(b < a) would be true when either side is NaN; (a < b) | (a == b) is false then.
UOp operator<=(const UOp& a, const UOp& b) { return a.dtype().is_float() ? (a < b) | a.eq(b) : !(b < a); }
UOp operator>=(const UOp& a, const UOp& b) { return b <= a; }
UOp operator&(const UOp& a, const UOp& b) { return binary(Op::AND, a, b); }
UOp operator|(const UOp& a, const UOp& b) { return binary(Op::OR, a, b); }
UOp operator^(const UOp& a, const UOp& b) { return binary(Op::XOR, a, b); }
UOp operator<<(const UOp& a, const UOp& b) { return binary(Op::SHL, a, b); }
UOp operator>>(const UOp& a, const UOp& b) { return binary(Op::SHR, a, b); }

UOp operator-(const UOp& a) {
  check_value(Op::NEG, a);
  if (a.dtype().is_bool()) fail("NEG", "of a bool");
  return UOp::make(Op::NEG, a.dtype(), {a});
}

UOp operator!(const UOp& a) {
  if (!a.dtype().element().is_bool()) fail("NOT", "logical not of " + a.dtype().name() + "; compare with 0 instead");
  return a.ne(a.const_like(Wide(1)));
}

UOp operator~(const UOp& a) {
  if (!a.dtype().is_int()) fail("XOR", "bitwise not of " + a.dtype().name());
  return a ^ a.const_like(a.dtype().is_unsigned() ? a.dtype().element().max_value() : Wide(-1));
}

}  // namespace weft
