#include "weft/dsl/ops.h"

#include <array>

namespace weft {
namespace {

constexpr std::array<std::string_view, kOpCount> kOpNames{
#define WEFT_OP_NAME(name) #name,
    WEFT_OPS(WEFT_OP_NAME)
#undef WEFT_OP_NAME
};

constexpr std::array<std::string_view, 4> kAddrNames{"GLOBAL", "LOCAL", "REG", "ALU"};
constexpr std::array<std::string_view, 11> kAxisNames{"DEVICE", "GLOBAL", "WARP",   "LOCAL",  "WEAK",  "LOOP",
                                                      "GROUP_REDUCE", "REDUCE", "UPCAST", "UNROLL", "THREAD"};

}  // namespace

std::string_view op_name(Op op) { return kOpNames[static_cast<size_t>(op)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name) return static_cast<Op>(i);
  return std::nullopt;
}

std::string_view addrspace_name(AddrSpace a) { return kAddrNames[static_cast<size_t>(a)]; }
std::string_view axis_name(AxisType a) { return kAxisNames[static_cast<size_t>(a)]; }

std::optional<AxisType> parse_axis(std::string_view name) {
  for (size_t i = 0; i < kAxisNames.size(); ++i)
    if (kAxisNames[i] == name) return static_cast<AxisType>(i);
  return std::nullopt;
}

bool axis_is_splittable(AxisType a) {
  return a == AxisType::WEAK || a == AxisType::REDUCE || a == AxisType::LOOP;
}

bool axis_is_thread(AxisType a) { return a == AxisType::LOCAL || a == AxisType::GROUP_REDUCE || a == AxisType::WARP; }

std::string_view lane_op_name(LaneOp k) {
  static constexpr std::array<std::string_view, 7> names{"xor", "up", "down", "index", "ballot", "any", "all"};
  return names[static_cast<size_t>(k)];
}

std::string_view atomic_op_name(AtomicOp k) {
  static constexpr std::array<std::string_view, 5> names{"add", "min", "max", "exchange", "compare_swap"};
  return names[static_cast<size_t>(k)];
}

std::string_view scope_name(Scope s) {
  static constexpr std::array<std::string_view, 3> names{"workgroup", "device", "system"};
  return names[static_cast<size_t>(s)];
}

std::string_view mbarrier_op_name(MbarrierOp k) {
  static constexpr std::array<std::string_view, 6> names{"init", "arrive", "arrive_expect_tx", "wait", "arrive_warp", "arrive_cluster"};
  return names[static_cast<size_t>(k)];
}

namespace opsets {
const OpSet unary{Op::NEG, Op::RECIP, Op::SQRT, Op::EXP2, Op::LOG2, Op::SIN, Op::TRUNC, Op::CAST, Op::BITCAST, Op::POPCOUNT};
const OpSet binary{Op::ADD,   Op::SUB,   Op::MUL,   Op::IDIV, Op::MOD, Op::FDIV, Op::MAX, Op::MIN, Op::POW,
                   Op::CMPLT, Op::CMPNE, Op::CMPEQ, Op::AND,  Op::OR,  Op::XOR,  Op::SHL, Op::SHR};
const OpSet ternary{Op::WHERE, Op::MULACC};
const OpSet alu = unary | binary | ternary;
const OpSet commutative{Op::ADD, Op::MUL, Op::MAX, Op::MIN, Op::CMPNE, Op::CMPEQ, Op::AND, Op::OR, Op::XOR};
const OpSet comparison{Op::CMPLT, Op::CMPNE, Op::CMPEQ};
const OpSet movement{Op::RESHAPE, Op::PERMUTE, Op::SHRINK, Op::FLIP, Op::PAD, Op::EXPAND};
const OpSet buffer_like = movement | OpSet{Op::PLACEHOLDER, Op::UNSHARD, Op::AFTER};
const OpSet sync{Op::BARRIER, Op::PRIORITY, Op::WAIT, Op::ASYNC_COMMIT, Op::SCHED_BARRIER, Op::SCHED_GROUP_BARRIER};
const OpSet hopper{Op::MBARRIER, Op::WGMMA, Op::WGMMA_FENCE, Op::WGMMA_COMMIT, Op::WGMMA_WAIT, Op::TMA_LOAD, Op::TMA_STORE,
                   Op::TMA_STORE_WAIT, Op::CLUSTER_SYNC, Op::SETMAXNREG};
const OpSet effect = sync | hopper | OpSet{Op::STORE, Op::ASYNC_COPY, Op::END, Op::GROUP, Op::SINK, Op::WHEN, Op::ATOMIC, Op::CUSTOM, Op::GRID_BARRIER};
const OpSet lanes{Op::SHUFFLE, Op::BROADCAST, Op::VOTE};
}  // namespace opsets

}  // namespace weft
