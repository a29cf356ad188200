// The op set of weft's IR, the address spaces of buffers and the meanings of loop axes.
// docs/ir.md describes every op; keep the two in step.
#pragma once

#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace weft {

#define WEFT_OPS(X)                                                                        \
  /* definitions */                                                                        \
  X(CONST) X(DEFINE_VAR) X(PLACEHOLDER) X(RANGE) X(SPECIAL)                      \
  /* views of buffers (resolved to flat indices by the pipeline) */                        \
  X(RESHAPE) X(PERMUTE) X(SHRINK) X(FLIP) X(PAD) X(EXPAND) X(UNSHARD)                      \
  /* memory and effects */                                                                 \
  X(INDEX) X(LOAD) X(STORE) X(ASYNC_COPY) X(END) X(AFTER) X(BARRIER) X(PRIORITY) X(GROUP)  \
  X(SINK)                                                                                  \
  /* unary ALU */                                                                          \
  X(NEG) X(RECIP) X(SQRT) X(EXP2) X(LOG2) X(SIN) X(TRUNC) X(CAST) X(BITCAST)               \
  /* binary ALU */                                                                         \
  X(ADD) X(SUB) X(MUL) X(IDIV) X(MOD) X(FDIV) X(MAX) X(MIN) X(POW)                         \
  X(CMPLT) X(CMPNE) X(CMPEQ) X(AND) X(OR) X(XOR) X(SHL) X(SHR)                             \
  /* ternary ALU */                                                                        \
  X(WHERE) X(MULACC)                                                                       \
  /* vectors, reductions, matrix units */                                                  \
  X(VECTORIZE) X(GEP) X(CONTRACT) X(REDUCE) X(WMMA)                                        \
  /* escape hatch */                                                                       \
  X(CUSTOM) X(CUSTOMI)

enum class Op : uint8_t {
#define WEFT_OP_ENUM(name) name,
  WEFT_OPS(WEFT_OP_ENUM)
#undef WEFT_OP_ENUM
};

#define WEFT_OP_COUNT(name) +1
inline constexpr int kOpCount = 0 WEFT_OPS(WEFT_OP_COUNT);
#undef WEFT_OP_COUNT

std::string_view op_name(Op op);
std::optional<Op> parse_op(std::string_view name);

// A set of ops, cheap to test membership in.
class OpSet {
 public:
  OpSet() = default;
  OpSet(std::initializer_list<Op> ops) {
    for (Op op : ops) bits_.set(static_cast<size_t>(op));
  }
  bool contains(Op op) const { return bits_.test(static_cast<size_t>(op)); }
  OpSet operator|(const OpSet& o) const { OpSet r; r.bits_ = bits_ | o.bits_; return r; }
  bool empty() const { return bits_.none(); }
  static OpSet all() { OpSet r; r.bits_.set(); return r; }

 private:
  std::bitset<kOpCount> bits_;
};

namespace opsets {
extern const OpSet unary;        // ALU ops with one source (CAST and BITCAST included)
extern const OpSet binary;       // ALU ops with two sources
extern const OpSet ternary;      // WHERE, MULACC
extern const OpSet alu;          // all of the above
extern const OpSet commutative;  // ADD MUL MAX MIN CMPNE CMPEQ AND OR XOR
extern const OpSet comparison;   // CMPLT CMPNE CMPEQ (result is bool)
extern const OpSet movement;     // RESHAPE PERMUTE SHRINK FLIP PAD EXPAND
extern const OpSet buffer_like;  // nodes whose value is a buffer: PLACEHOLDER, views, UNSHARD, AFTER of one
extern const OpSet effect;       // STORE ASYNC_COPY END BARRIER PRIORITY GROUP SINK CUSTOM
}  // namespace opsets

// Where a buffer lives.
enum class AddrSpace : uint8_t {
  GLOBAL,  // device memory: a kernel parameter
  LOCAL,   // shared memory / LDS, one copy per workgroup
  REG,     // registers, one copy per thread
  ALU,     // not a buffer: a value computed in registers (the address space of ALU results)
};
std::string_view addrspace_name(AddrSpace a);

// What a loop axis means. Only WEAK, REDUCE and LOOP may be split by passes.
enum class AxisType : uint8_t {
  DEVICE,        // one shard per device
  GLOBAL,        // workgroups of the grid
  WARP,          // waves of a workgroup
  LOCAL,         // threads of a workgroup
  WEAK,          // a plain loop the pipeline may reshape
  LOOP,          // a loop kept as the author wrote it
  GROUP_REDUCE,  // a reduction spread over the threads of a workgroup
  REDUCE,        // a reduction loop
  UPCAST,        // unrolled into vector lanes (a per-thread fragment)
  UNROLL,        // unrolled into straight-line code
  THREAD,        // host threads (CPU backends)
};
std::string_view axis_name(AxisType a);
std::optional<AxisType> parse_axis(std::string_view name);
// Axes that map to hardware (launch dimensions, vector lanes) are never split or merged.
bool axis_is_splittable(AxisType a);

}  // namespace weft
