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
  X(SINK) X(WHEN) X(ATOMIC) X(WAIT) X(ASYNC_COMMIT) X(SCHED_BARRIER) X(SCHED_GROUP_BARRIER)  \
  X(GRID_BARRIER)                                                                          \
  /* Hopper (sm_90a): shared-memory barriers with transaction counts, warpgroup MMA */     \
  X(MBARRIER) X(WGMMA) X(WGMMA_FENCE) X(WGMMA_COMMIT) X(WGMMA_WAIT) X(TMA_LOAD)           \
  X(TMA_STORE) X(TMA_STORE_WAIT) X(CLUSTER_SYNC) X(SETMAXNREG)                             \
  /* across the lanes of a wave (warp) */                                                  \
  X(SHUFFLE) X(BROADCAST) X(VOTE)                                                          \
  /* unary ALU */                                                                          \
  X(NEG) X(RECIP) X(SQRT) X(EXP2) X(LOG2) X(SIN) X(TRUNC) X(CAST) X(BITCAST) X(POPCOUNT)   \
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
extern const OpSet effect;       // STORE ASYNC_COPY END BARRIER PRIORITY GROUP SINK WHEN ATOMIC CUSTOM GRID_BARRIER,
                                 // and the synchronization statements below
// Statements of synchronization and scheduling: BARRIER PRIORITY WAIT ASYNC_COMMIT
// SCHED_BARRIER SCHED_GROUP_BARRIER. Each has a site; they read and write no value, so a
// wave-uniform `when` may branch around them (resolve_when).
extern const OpSet sync;
extern const OpSet lanes;        // SHUFFLE BROADCAST VOTE: values exchanged between the lanes of a wave
// Hopper's statements: MBARRIER WGMMA WGMMA_FENCE WGMMA_COMMIT WGMMA_WAIT TMA_LOAD TMA_STORE
// TMA_STORE_WAIT CLUSTER_SYNC SETMAXNREG. Each has a site and,
// like CUSTOM, value operands first and then the effects it comes after. NVIDIA sm_90a only; every
// other target rejects them naming the node.
extern const OpSet hopper;
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
// LOCAL, GROUP_REDUCE and WARP: the threads of a workgroup. A REDUCE over them is a reduction
// across threads.
bool axis_is_thread(AxisType a);

// What a SHUFFLE or VOTE does (its arg, a LaneArg).
enum class LaneOp : uint8_t {
  Xor,     // SHUFFLE: the value of lane (l ^ m)
  Up,      // SHUFFLE: the value of lane l - d, or l's own where that leaves its group of `width`
  Down,    // SHUFFLE: the value of lane l + d, or l's own where that leaves its group
  Index,   // SHUFFLE: the value of lane i of l's group
  Ballot,  // VOTE: a uint64 mask, bit l set where lane l's predicate holds
  Any,     // VOTE: whether the predicate holds in any lane
  All,     // VOTE: whether the predicate holds in every lane
};
std::string_view lane_op_name(LaneOp k);

// Atomic read-modify-write operations (ATOMIC's arg, an AtomicArg).
enum class AtomicOp : uint8_t { Add, Min, Max, Exchange, CompareSwap };
std::string_view atomic_op_name(AtomicOp k);
// Which threads an atomic is atomic with respect to (and a release/acquire would order).
enum class Scope : uint8_t { Workgroup, Device, System };
std::string_view scope_name(Scope s);

// What a BARRIER orders besides the threads' arrival (its EffectArg::value).
enum class BarrierFence : uint8_t {
  Workgroup = 0,  // release and acquire fences at workgroup scope: memory written before it is visible after it
  None = 1,       // the bare hardware barrier (AMD s_barrier); the kernel orders memory with explicit waits
};

// What an MBARRIER statement does (its EffectArg::value). The barrier object is 8 bytes of shared
// memory (a uint64 element of a LOCAL buffer); PTX ISA, "Parallel synchronization: mbarrier".
enum class MbarrierOp : uint8_t {
  Init = 0,            // the first thread of the workgroup sets the expected arrival count (operand 1)
  Arrive = 1,          // every thread that runs it arrives once
  ArriveExpectTx = 2,  // the first thread arrives and adds operand 1 bytes to the transactions awaited
  Wait = 3,            // every thread waits until the phase of parity operand 1 has completed
  ArriveWarp = 4,      // the first lane of every warp that runs it arrives once (one arrival a warp)
  ArriveCluster = 5,   // as ArriveWarp, on the barrier at the same offset in CTA operand 1 of the cluster
};
std::string_view mbarrier_op_name(MbarrierOp k);

// The swizzle of a wgmma matrix descriptor (bits 62-63 of the descriptor; PTX ISA, "Matrix
// Descriptor Format": 0 none, 1 128-byte, 2 64-byte, 3 32-byte).
// A Hopper shared tile's swizzle, for wgmma's matrix descriptors and TMA's tensor maps: none,
// 128-byte (16-byte chunk c of a 128-byte row r at c ^ (r % 8)) or 64-byte (chunk c of a 64-byte
// row r at c ^ ((r / 2) % 4)). The values are the descriptor's swizzle-mode bits (62-63).
enum class WgmmaSwizzle : uint8_t { None = 0, B128 = 1, B64 = 2 };
// The row width a swizzle spans (0 for None): a swizzled TMA box's rows are at most this wide.
inline int64_t swizzle_row_bytes(WgmmaSwizzle s) { return s == WgmmaSwizzle::B128 ? 128 : s == WgmmaSwizzle::B64 ? 64 : 0; }

// Instruction classes for SCHED_BARRIER and SCHED_GROUP_BARRIER (LLVM's sched.barrier and
// sched.group.barrier masks, AMDGPUUsage / IntrinsicsAMDGPU.td). For sched_barrier the mask names
// what may be scheduled across it (None: nothing); for sched_group_barrier what the group holds.
enum class SchedMask : uint32_t {
  None = 0,
  ALU = 0x1,  // every non-memory instruction without side effects
  VALU = 0x2,
  SALU = 0x4,
  MFMA = 0x8,  // MFMA/WMMA
  VMEM = 0x10,  // every vector memory instruction
  VMEMRead = 0x20,
  VMEMWrite = 0x40,
  DS = 0x80,  // every LDS instruction
  DSRead = 0x100,
  DSWrite = 0x200,
  Transcendental = 0x400,
};
inline constexpr uint32_t kSchedMaskAll = 0x7FF;  // the bits above
constexpr SchedMask operator|(SchedMask a, SchedMask b) {
  return static_cast<SchedMask>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

}  // namespace weft
