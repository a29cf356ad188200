// The fluent C++ API kernel authors build graphs with. Methods on UOp (indexing, load/store,
// views, casts) are declared in uop.h; this header adds the free functions and the operators.
//
//   auto a = placeholder({64, 64}, dtypes::float32, 0);
//   auto out = placeholder({64, 64}, dtypes::float32, 1);
//   auto i = range(64, 0, AxisType::GLOBAL), j = range(64, 1, AxisType::LOCAL);
//   auto k = sink({"add_one"}, {out[{i, j}].store(a[{i, j}].load() + 1.0f).end({i, j})});
//
// Every function checks its arguments and throws weft::Error naming the op and the problem.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft {

// ---- definitions ----
UOp constant(Wide value, DType dtype = dtypes::index);
UOp constant(double value, DType dtype);
UOp range(int64_t end, int64_t id, AxisType axis = AxisType::LOOP);
UOp range(const UOp& end, int64_t id, AxisType axis = AxisType::LOOP);
// A hardware index: "gidx0".."gidx2" (workgroup id), "lidx0".."lidx2" (thread in workgroup).
UOp special(int64_t end, const std::string& name);
UOp special(const UOp& end, const std::string& name);
// A scalar kernel parameter bound at launch: int32, int64 or float32 (or index, lowered to
// int32/int64 by the pipeline; symbolic tests use it). Integer values are
// promised to lie in [min, max]; ranges and index math use these bounds.
UOp variable(const std::string& name, int64_t min, int64_t max, DType dtype = dtypes::int32);
UOp variable_f32(const std::string& name);

// A buffer: GLOBAL is a kernel parameter in position `slot`; LOCAL and REG slots identify the
// allocation. Dimensions may be integers or index expressions of variables.
UOp placeholder(const std::vector<int64_t>& shape, DType dtype, int64_t slot, AddrSpace space = AddrSpace::GLOBAL);
UOp placeholder(std::span<const UOp> shape, DType dtype, int64_t slot, AddrSpace space = AddrSpace::GLOBAL);
// Shared memory of one workgroup. Without an id, a fresh one is taken from a per-thread counter.
UOp alloc_shared(const std::vector<int64_t>& shape, DType dtype, std::optional<int64_t> id = std::nullopt);
// A fragment: each thread holds shape/ranges of the tile in registers; the result is the whole
// tile (a REG shard unsharded over the thread ranges along `axes`).
UOp alloc_fragment(const std::vector<int64_t>& shape, DType dtype, const std::vector<int64_t>& axes,
                   const std::vector<UOp>& thread_ranges, std::optional<int64_t> id = std::nullopt);

// ---- effects ----
UOp barrier();
// The issuing wave's scheduling priority from here on, 0 (lowest, the default) to 3: AMD's
// s_setprio, which HipKittens-style kernels raise around their matrix-core bursts. A no-op on
// targets without wave priorities. `after`: effects it comes after (nodes are hash-consed, so
// two priority changes at different points of a kernel must name different predecessors).
UOp wave_priority(int64_t level, const std::vector<UOp>& after = {});
UOp group(const std::vector<UOp>& effects);
UOp sink(const KernelInfo& info, const std::vector<UOp>& effects);
// Copies global memory straight into shared memory without passing through registers
// (AMD buffer_load ... lds, NVIDIA cp.async). `dst` indexes a LOCAL buffer, `src` a GLOBAL one;
// `elements` consecutive elements are copied per thread.
UOp async_copy(const UOp& dst, const UOp& src, int64_t elements = 1);

// ---- values ----
UOp where(const UOp& cond, const UOp& if_true, const UOp& if_false);
UOp max(const UOp& a, const UOp& b);
UOp min(const UOp& a, const UOp& b);
UOp sqrt(const UOp& x);
UOp exp2(const UOp& x);
UOp log2(const UOp& x);
UOp sin(const UOp& x);
UOp recip(const UOp& x);
UOp trunc(const UOp& x);
UOp pow(const UOp& x, const UOp& y);
UOp mulacc(const UOp& a, const UOp& b, const UOp& c);
UOp vectorize(const std::vector<UOp>& lanes);
// C-like integer division (truncating) and modulo (sign of the dividend), also via / and %.
UOp idiv(const UOp& a, const UOp& b);
UOp mod(const UOp& a, const UOp& b);
// One warp-level D = A*B + C on fragments: A holds m*k/threads, B k*n/threads and C
// m*n/threads elements per lane.
UOp wmma(const UOp& a, const UOp& b, const UOp& acc, const WmmaArg& shape);
// Escape hatches: one statement (custom) or one expression (customi) of target source text,
// with operands referenced as {0}, {1}, ... Use sparingly; typed ops are the normal path.
UOp custom(const std::string& text, const std::vector<UOp>& operands = {});
UOp customi(const std::string& text, DType dtype, const std::vector<UOp>& operands = {});

// ---- operators: IR arithmetic. Scalars adopt the other side's dtype. ----
UOp operator+(const UOp& a, const UOp& b);
UOp operator-(const UOp& a, const UOp& b);
UOp operator*(const UOp& a, const UOp& b);
UOp operator/(const UOp& a, const UOp& b);  // IDIV for integers, FDIV for floats
UOp operator%(const UOp& a, const UOp& b);
UOp operator<(const UOp& a, const UOp& b);
UOp operator>(const UOp& a, const UOp& b);
UOp operator<=(const UOp& a, const UOp& b);
UOp operator>=(const UOp& a, const UOp& b);
UOp operator&(const UOp& a, const UOp& b);
UOp operator|(const UOp& a, const UOp& b);
UOp operator^(const UOp& a, const UOp& b);
UOp operator<<(const UOp& a, const UOp& b);
UOp operator>>(const UOp& a, const UOp& b);
UOp operator-(const UOp& a);
UOp operator!(const UOp& a);  // logical not of a bool
UOp operator~(const UOp& a);  // bitwise not of an integer

#define WEFT_SCALAR_OPERATOR(sym)                                                                   \
  inline UOp operator sym(const UOp& a, int64_t b) { return a sym a.const_like(Wide(b)); }           \
  inline UOp operator sym(int64_t a, const UOp& b) { return b.const_like(Wide(a)) sym b; }           \
  inline UOp operator sym(const UOp& a, int b) { return a sym a.const_like(Wide(b)); }               \
  inline UOp operator sym(int a, const UOp& b) { return b.const_like(Wide(a)) sym b; }               \
  inline UOp operator sym(const UOp& a, double b) { return a sym a.const_like(b); }                  \
  inline UOp operator sym(double a, const UOp& b) { return b.const_like(a) sym b; }
WEFT_SCALAR_OPERATOR(+)
WEFT_SCALAR_OPERATOR(-)
WEFT_SCALAR_OPERATOR(*)
WEFT_SCALAR_OPERATOR(/)
WEFT_SCALAR_OPERATOR(%)
WEFT_SCALAR_OPERATOR(<)
WEFT_SCALAR_OPERATOR(>)
WEFT_SCALAR_OPERATOR(<=)
WEFT_SCALAR_OPERATOR(>=)
WEFT_SCALAR_OPERATOR(&)
WEFT_SCALAR_OPERATOR(|)
WEFT_SCALAR_OPERATOR(^)
WEFT_SCALAR_OPERATOR(<<)
WEFT_SCALAR_OPERATOR(>>)
#undef WEFT_SCALAR_OPERATOR

}  // namespace weft
