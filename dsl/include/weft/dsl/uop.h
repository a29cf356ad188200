// UOp: the immutable, hash-consed node of weft's IR, and the handle kernel authors hold.
//
// A node is {op, dtype, sources, arg}. Building the same node twice yields the same node, so
// graphs compare and cache by pointer, and a node's content hash is stable across runs (it is
// computed from the content, never from addresses). Nodes live for the whole process.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "weft/dsl/dtype.h"
#include "weft/dsl/error.h"
#include "weft/dsl/ops.h"

namespace weft {

class UOp;
struct Node;

// ---- args: the non-graph payload of a node -------------------------------------------------

// A float constant, compared by bit pattern so NaN and -0.0 constants hash-cons too.
struct FloatConst {
  double value;
  bool operator==(const FloatConst& o) const;
};

struct RangeArg {  // RANGE
  int64_t id;
  AxisType axis;
  bool operator==(const RangeArg&) const = default;
};

struct BufferArg {  // PLACEHOLDER
  int64_t slot;     // kernel parameter position for GLOBAL; a unique id for LOCAL and REG
  AddrSpace space;
  bool operator==(const BufferArg&) const = default;
};

struct VarArg {  // DEFINE_VAR: a scalar kernel parameter bound at launch
  std::string name;
  Wide min, max;  // bounds the value is promised to lie in (ints); unused for float32
  bool operator==(const VarArg&) const = default;
};

// The most CTAs a thread-block cluster may portably hold (CUDA: 8; 16 only where a kernel opts in).
inline constexpr int64_t kMaxCluster = 8;

struct KernelInfo {  // SINK
  std::string name;
  // CTAs (workgroups) per thread-block cluster, consecutive along grid dimension 0 (NVIDIA sm_90;
  // 1: no cluster). A CTA's rank in its cluster is then its workgroup index modulo `cluster`.
  int64_t cluster = 1;
  // Programmatic dependent launch (CUDA, sm_90 and newer): the kernel waits at entry until the
  // kernel before it in the stream has completed and its writes are visible (griddepcontrol.wait),
  // lets the kernel after it start launching as its last statement (griddepcontrol.launch_dependents),
  // and the runtime launches it with programmatic stream serialization. Everything the kernel does
  // lies after the wait, so it computes what a serialized launch computes; what overlaps is its
  // launch and its workgroups' start with the end of the kernel before. Elsewhere (AMD, the
  // emulator, sm_80) the launch is serialized and the flag changes nothing.
  bool dependent_launch = false;
  // Workgroups that should fit on one multiprocessor (NVIDIA SM, AMD CU) at once; the compiler
  // keeps registers within their share (CUDA: __launch_bounds__'s second argument; AMDGPU:
  // amdgpu-waves-per-eu, 4 SIMDs a CU). For a latency-bound kernel whose grid would otherwise
  // spill into a second, mostly empty wave. 0: the compiler's choice.
  int64_t min_workgroups_per_processor = 0;
  bool operator==(const KernelInfo&) const = default;
};

struct WmmaArg {  // WMMA: D = A*B + C on one warp/wave's fragments
  int64_t m, n, k;
  DType input;    // element type of A and B
  DType accum;    // element type of C and D
  int64_t threads;  // lanes that hold the fragments (64 on CDNA, 32 on NVIDIA)
  bool operator==(const WmmaArg&) const = default;
};

struct ShapeArg {  // RESHAPE, EXPAND, PERMUTE, FLIP, UNSHARD axes; SHRINK/PAD pairs flattened
  std::vector<int64_t> values;
  bool operator==(const ShapeArg&) const = default;
};

// BARRIER, PRIORITY, ASYNC_COMMIT, CUSTOM, CUSTOMI: statements whose position matters. Hash-consing would make
// two identical ones one node (a second barrier would vanish), so the builder gives each a `site`
// of its own (a fresh id; `canonical_allocations` renumbers them so that cache keys do not depend
// on build order). Site 0 is for barriers the pipeline inserts, which are shared on purpose by
// every read after the same stores; the verifier rejects any other effect of these ops without
// a site.
struct EffectArg {
  int64_t site = 0;
  // PRIORITY: the level 0..3; BARRIER: a BarrierFence (0: fenced, 1: none); SETMAXNREG: the
  // register budget, negative where it lowers it
  Wide value = 0;
  std::string text;  // CUSTOM / CUSTOMI: the inline assembly
  bool operator==(const EffectArg&) const = default;
};

// A register budget setmaxnreg takes: 24..256 registers a thread in steps of 8.
inline bool valid_register_budget(Wide count) { return count >= 24 && count <= 256 && count % 8 == 0; }

// WAIT: wait until at most `vm` vector-memory operations (AMD vmcnt; NVIDIA cp.async groups) and
// at most `lgkm` LDS/scalar-memory operations (AMD lgkmcnt) of this wave are outstanding. -1: do
// not wait on that counter. `site` as in EffectArg.
struct WaitArg {
  int64_t site = 0;
  int64_t vm = -1;
  int64_t lgkm = -1;
  bool operator==(const WaitArg&) const = default;
};

// SCHED_BARRIER (mask only: what may cross it) and SCHED_GROUP_BARRIER (`size` instructions of
// the mask's classes form a group, ordered with the other groups of `sync_id`). `site` as in
// EffectArg.
struct SchedArg {
  int64_t site = 0;
  SchedMask mask = SchedMask::None;
  int64_t size = 0;
  int64_t sync_id = 0;
  bool operator==(const SchedArg&) const = default;
};

struct LaneArg {  // SHUFFLE, VOTE
  LaneOp op;
  int64_t width;  // lanes in a group: a power of two up to the wave (64 on CDNA, 32 on NVIDIA)
  bool operator==(const LaneArg&) const = default;
};

// The args of the LOADs where a lane's values come from other lanes' addresses (cross-lane
// reads of shared memory); a plain LOAD has none.
// - kTransposeRead16: gfx950's transposing LDS read (UOp::load_transposed): 16-bit elements,
//   4 a lane, transposed within each group of 16 lanes.
// - kMatrixRead16 / kMatrixReadTransposed16: NVIDIA's ldmatrix.x4 (UOp::load_matrix): four 8x8
//   matrices of 16-bit elements, each lane naming one 16-byte row, 8 values a lane, as stored or
//   transposed.
inline constexpr const char* kTransposeRead16 = "transpose_b16";
inline constexpr const char* kMatrixRead16 = "ldmatrix_b16";
inline constexpr const char* kMatrixReadTransposed16 = "ldmatrix_trans_b16";
// The arg of the STORE that is NVIDIA's stmatrix.x4 (UOp::store_matrix): ldmatrix's converse,
// each lane naming one 16-byte row of four 8x8 matrices of 16-bit elements and giving, as its
// values, the other lanes' elements. A plain STORE has none.
inline constexpr const char* kMatrixWrite16 = "stmatrix_b16";
// True for a LOAD with kTransposeRead16.
bool is_transposed_read(const UOp& u);
// True for a LOAD with kMatrixRead16 or kMatrixReadTransposed16; transposed_matrix_read for the
// second alone.
bool is_matrix_read(const UOp& u);
bool is_transposed_matrix_read(const UOp& u);
// True for any of the three: a LOAD whose result depends on other lanes' addresses, so every
// lane of the group must execute it.
bool is_cross_lane_read(const UOp& u);
// True for a STORE with kMatrixWrite16: what it writes at a lane's address comes from other
// lanes, so every lane of the warp must execute it.
bool is_matrix_write(const UOp& u);

// How a wgmma operand tile lies in shared memory: the fields of its matrix descriptor other than
// the start address, which the renderer takes from the operand's INDEX (PTX ISA, "Matrix
// Descriptor Format"). Core matrices are 8 rows of 16 bytes; `leading_bytes` is the distance
// between core matrices adjacent along K, `stride_bytes` along M (A) or N (B). Both are multiples
// of 16 below 2^18.
struct MatrixLayoutArg {
  int64_t leading_bytes = 0;
  int64_t stride_bytes = 0;
  WgmmaSwizzle swizzle = WgmmaSwizzle::None;
  bool operator==(const MatrixLayoutArg&) const = default;
};

// WGMMA: one warpgroup's D += A*B, m64 x n x k16, B from shared memory (K-major), A from shared
// memory (K-major, `a` its layout) or, where `a_registers`, from each thread's registers (a value;
// `a` unused), D fp32 in the registers of a REG buffer. `site` as in EffectArg.
struct WgmmaArg {
  int64_t site = 0;
  int64_t n = 0;  // 8..256, a multiple of 8
  DType input;    // float16 or bfloat16 (k16), float8_e4m3fn or float8_e5m2 (k32)
  MatrixLayoutArg a, b;
  bool a_registers = false;
  bool operator==(const WgmmaArg&) const = default;
};

// TMA_LOAD: a box of `rows` x `cols` elements of a 2-D GLOBAL tensor, copied by the tensor
// memory accelerator into shared memory (row-major, `swizzle` applied to its 16-byte chunks);
// elements past the tensor's edges are filled with zeros. `multicast` (TMA_LOAD only): the box
// lands at the same shared-memory offset in every CTA of the cluster named by the load's CTA mask
// operand, each counted on its own barrier at the same offset. `site` as in EffectArg.
struct TmaArg {
  int64_t site = 0;
  int64_t rows = 0, cols = 0;
  WgmmaSwizzle swizzle = WgmmaSwizzle::None;
  bool multicast = false;
  bool operator==(const TmaArg&) const = default;
};

struct AtomicArg {  // ATOMIC: relaxed ordering; `site` as in EffectArg
  AtomicOp op;
  Scope scope;
  int64_t site;
  bool operator==(const AtomicArg&) const = default;
};

using Arg = std::variant<std::monostate, Wide, FloatConst, std::string, ShapeArg, Op, RangeArg, BufferArg, VarArg,
                         KernelInfo, WmmaArg, EffectArg, LaneArg, AtomicArg, WaitArg, SchedArg, WgmmaArg, TmaArg>;

// The site of a position-sensitive statement's arg (EffectArg, WaitArg, SchedArg, WgmmaArg, TmaArg), or nullopt.
std::optional<int64_t> effect_site(const Arg& arg);

uint64_t hash_arg(const Arg& arg);
std::string arg_to_string(const Arg& arg);

// ---- the node --------------------------------------------------------------------------------

class UOp {
 public:
  UOp() = default;

  // The one way nodes come to exist: returns the unique node with this content. The
  // initializer-list form allocates nothing when the node already exists.
  static UOp make(Op op, DType dtype, std::vector<UOp> src = {}, Arg arg = {});
  static UOp make(Op op, DType dtype, std::initializer_list<UOp> src, Arg arg = {});

  Op op() const;
  DType dtype() const;
  const std::vector<UOp>& src() const;
  UOp src(size_t i) const;
  const Arg& arg() const;
  template <class T>
  const T& arg_as() const;
  uint64_t hash() const;  // content hash, stable across processes
  const Node* node() const { return n_; }
  // Whether this is the empty handle (a default-constructed UOp). There is no conversion to bool:
  // `!u` builds the IR's logical not (builder.h), so `if (!u)` would test a new node, never u.
  bool is_null() const { return n_ == nullptr; }

  // Value range: every value this node can take lies in [vmin, vmax]. Integral dtypes only;
  // for others the bounds are the widest int64 range.
  Wide vmin() const;
  Wide vmax() const;
  bool is_const() const { return op() == Op::CONST; }
  // The integer value of a CONST (throws for non-integral or non-const).
  Wide const_int() const;
  double const_float() const;
  bool is_effect() const;  // a store, end, barrier, group, sink, when, atomic or custom statement
  // An effect that also has a value (ATOMIC: the memory's old value), usable as an operand.
  bool is_valued_effect() const { return op() == Op::ATOMIC; }

  // Shape of a buffer-like node (PLACEHOLDER, views, UNSHARD, AFTER of a buffer); empty for
  // others. Dimensions are index-typed nodes: constants, or expressions of variables.
  const std::vector<UOp>& shape() const;
  // The shape as integers; throws if a dimension is not a constant.
  std::vector<int64_t> static_shape() const;
  bool is_buffer() const;  // buffer-like, with a shape

  // A new node with the same op/dtype/arg and other sources.
  UOp with_src(std::vector<UOp> src) const;
  UOp with_arg(Arg arg) const;

  // Identity comparison (same node). The IR's comparisons are .eq()/.ne() and < > <= >=.
  bool same(const UOp& o) const { return n_ == o.n_; }

  // ---- fluent builder: methods (free functions are in builder.h) ----
  UOp operator[](const UOp& i) const;
  UOp operator[](std::initializer_list<UOp> idx) const;
  UOp index(std::vector<UOp> idx) const;
  template <class... Ts>
  UOp operator()(const Ts&... idx) const { return index({to_index(idx)...}); }
  UOp load() const;
  UOp store(const UOp& value) const;
  // Masked access: the load reads `fill` and the store does nothing where `valid` (a bool) is
  // false; the address is not touched there.
  UOp load(const UOp& valid, const UOp& fill) const;
  UOp store(const UOp& value, const UOp& valid) const;
  // A transposing LDS read (gfx950's ds_read_b64_tr_b16): this INDEX, a 4-lane vector of a
  // 2-byte type into a LOCAL buffer, read by every lane of each group of 16 lanes at its own
  // address, and lane i of the group gets element j = (lane (16j+i)/4's 4 values)[(16j+i)%4].
  // A LOAD whose arg is kTransposeRead16. Only AMDGPU gfx950 renders it; the tile layer emits it
  // where the layouts say it fits. Not a per-lane load: a lane's result depends on its group's
  // addresses, so every lane of the wave must execute it.
  UOp load_transposed() const;
  // NVIDIA's ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: this INDEX, an 8-lane vector of a
  // 2-byte type (one 16-byte row) into a LOCAL buffer, read by every lane of the warp at its own
  // address. Lane t names row t % 8 of matrix t / 8; lane L gets, as its values 2m and 2m + 1,
  //   as stored:   elements 2(L%4) and 2(L%4) + 1 of row L/4 of matrix m,
  //   transposed:  element L/4 of rows 2(L%4) and 2(L%4) + 1 of matrix m.
  // A LOAD whose arg is kMatrixRead16 or kMatrixReadTransposed16. Only CUDA renders it; the tile
  // layer emits it where the layouts say it fits. Like load_transposed, not a per-lane load.
  UOp load_matrix(bool transposed) const;
  // NVIDIA's stmatrix.sync.aligned.m8n8.x4.shared.b16 (sm_90), ldmatrix.x4's converse: this
  // INDEX, an 8-lane vector of a 2-byte type (one 16-byte row) into a LOCAL buffer, written by
  // every lane of the warp at its own address with `value` (the same dtype). Lane t names row
  // t % 8 of matrix t / 8; lane L's values 2m and 2m + 1 become elements 2(L%4) and 2(L%4) + 1 of
  // row L/4 of matrix m (where ldmatrix.x4, as stored, reads them from). A STORE whose arg is
  // kMatrixWrite16. Only CUDA renders it; the tile layer emits it where the layouts say it fits
  // (store(st, acc)). Not a per-lane store: a lane's row holds other lanes' values.
  UOp store_matrix(const UOp& value) const;
  // This INDEX widened to `lanes` consecutive elements along the buffer's last axis, loaded or
  // stored as one vector access. The caller promises alignment: the flat index is a multiple of
  // `lanes` (write it as `granule * lanes`, as the tile layer does from a layout, and the
  // renderers see it). Only on a buffer itself (or AFTER of one), not on a view.
  UOp vec(int64_t lanes) const;
  UOp end(std::vector<UOp> ranges) const;
  UOp after(std::vector<UOp> deps) const;
  // store + end + after: the buffer as it is after `value` was stored at this index.
  UOp set(const UOp& value, std::vector<UOp> ranges = {}) const;

  UOp reshape(std::vector<int64_t> shape) const;
  UOp permute(std::vector<int64_t> order) const;
  UOp shrink(std::vector<std::pair<int64_t, int64_t>> bounds) const;
  UOp flip(std::vector<int64_t> axes) const;
  UOp pad(std::vector<std::pair<int64_t, int64_t>> padding) const;
  // The buffer seen as `shape` (index expressions: constants or run-time sizes), padded at the
  // end of each axis: elements past the buffer's own size read 0 and are not written. A ragged
  // M x K tensor as whole 128 x 64 tiles: `a.pad_to({tiles_m * 128, k})`.
  UOp pad_to(std::vector<UOp> shape) const;
  UOp expand(std::vector<int64_t> shape) const;
  UOp unshard(std::vector<int64_t> axes, std::vector<UOp> ranges) const;

  UOp cast(DType dtype) const;
  UOp bitcast(DType dtype) const;
  UOp contract(std::vector<UOp> ranges) const;
  UOp reduce(Op op, std::vector<UOp> ranges) const;
  UOp gep(int64_t lane) const;
  UOp eq(const UOp& o) const;
  UOp ne(const UOp& o) const;
  UOp eq(double o) const;
  UOp ne(double o) const;
  UOp where(const UOp& if_true, const UOp& if_false) const;  // this is the condition
  UOp alu(Op op, std::vector<UOp> others = {}) const;        // checked ALU node of this dtype
  UOp const_like(double value) const;                        // a constant of this node's dtype
  UOp const_like(Wide value) const;

 private:
  explicit UOp(const Node* n) : n_(n) {}
  UOp cross_lane_read(int lanes, const char* arg, const std::string& what) const;
  static UOp intern(Op op, DType dtype, std::span<const UOp> src, Arg&& arg);
  static UOp to_index(const UOp& u) { return u; }
  static UOp to_index(int64_t v);
  const Node* n_ = nullptr;
};

struct Node {
  Op op;
  DType dtype;
  std::vector<UOp> src;
  Arg arg;
  uint64_t hash;
  Wide vmin, vmax;
  std::vector<UOp> shape;
};

inline Op UOp::op() const { return n_->op; }
inline DType UOp::dtype() const { return n_->dtype; }
inline const std::vector<UOp>& UOp::src() const { return n_->src; }
inline UOp UOp::src(size_t i) const { return n_->src.at(i); }
inline const Arg& UOp::arg() const { return n_->arg; }
inline uint64_t UOp::hash() const { return n_->hash; }
inline Wide UOp::vmin() const { return n_->vmin; }
inline Wide UOp::vmax() const { return n_->vmax; }
inline const std::vector<UOp>& UOp::shape() const { return n_->shape; }

template <class T>
const T& UOp::arg_as() const {
  if (const T* p = std::get_if<T>(&n_->arg)) return *p;
  throw Error("internal: " + std::string(op_name(op())) + " node has an unexpected arg kind");
}

struct UOpHash {
  size_t operator()(const UOp& u) const { return static_cast<size_t>(u.hash()); }
};
struct UOpEq {
  bool operator()(const UOp& a, const UOp& b) const { return a.same(b); }
};

// Nodes reachable from `roots`, every node after all of its sources (iterative: deep graphs
// do not exhaust the stack).
std::vector<UOp> toposort(std::span<const UOp> roots);
inline std::vector<UOp> toposort(const UOp& root) { return toposort(std::span<const UOp>(&root, 1)); }

// Computed at construction; exposed for tests.
std::pair<Wide, Wide> compute_vrange(Op op, DType dtype, const std::vector<UOp>& src, const Arg& arg);
std::vector<UOp> compute_shape(Op op, const std::vector<UOp>& src, const Arg& arg);

}  // namespace weft
