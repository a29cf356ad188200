// A reference interpreter for integer expressions, for brute-force tests of the simplifier.
// It evaluates with the same ALU semantics (weft/dsl/alu.h) the IR defines.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "weft/dsl/alu.h"
#include "weft/dsl/uop.h"

namespace weft::testing {

// Values of variables (by name) and ranges (by id).
struct Assignment {
  std::map<std::string, Wide> vars;
  std::map<int64_t, Wide> ranges;
};

// The value of `u`, or nullopt where the expression is undefined (division by zero).
inline std::optional<Wide> evaluate(const UOp& u, const Assignment& env,
                                    std::unordered_map<const Node*, std::optional<Wide>>& memo) {
  if (auto it = memo.find(u.node()); it != memo.end()) return it->second;
  std::optional<Wide> r;
  switch (u.op()) {
    case Op::CONST: r = u.const_int(); break;
    case Op::DEFINE_VAR: r = env.vars.at(u.arg_as<VarArg>().name); break;
    case Op::RANGE: r = env.ranges.at(u.arg_as<RangeArg>().id); break;
    default: {
      std::vector<Wide> args;
      for (const UOp& s : u.src()) {
        auto v = evaluate(s, env, memo);
        if (!v) return memo[u.node()] = std::nullopt;
        args.push_back(*v);
      }
      DType operand = opsets::comparison.contains(u.op()) ? u.src(0).dtype() : u.dtype();
      r = exec_int(u.op(), operand, args);
    }
  }
  return memo[u.node()] = r;
}

inline std::optional<Wide> evaluate(const UOp& u, const Assignment& env) {
  std::unordered_map<const Node*, std::optional<Wide>> memo;
  return evaluate(u, env, memo);
}

}  // namespace weft::testing
