// An index expression of a kernel's variables (a launch dimension, a buffer's extent) prepared
// once for evaluation at every launch: its nodes in dependency order as steps over a small value
// array, so that a launch walks no graph and, for expressions of up to kInlineSteps nodes,
// allocates nothing. A constant expression is one stored value. Prepared with the kernel's list
// of variables, it also evaluates from their values in that order, with no lookup by name.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft::lower {

class IndexProgram {
 public:
  static constexpr size_t kInlineSteps = 32;  // values kept on the stack during evaluate

  IndexProgram() = default;  // evaluates to 0
  explicit IndexProgram(const UOp& expr);
  // Also binds each variable to its position in `variables` (for evaluate_in_order).
  IndexProgram(const UOp& expr, std::span<const std::string> variables);

  // The value with the variables bound. Throws weft::Error naming a variable that is not bound, a
  // division by zero, or an op that cannot be evaluated at launch (a load, a range, a float); an
  // expression's errors show here, at the launch that evaluates it, not when it is prepared (an
  // op that cannot be evaluated is reported before an unbound variable).
  int64_t evaluate(const std::map<std::string, int64_t>& variables) const;
  // The same, with the values of the variables the program was prepared with, in that order. A
  // variable not among them is not bound.
  int64_t evaluate_in_order(std::span<const int64_t> values) const;
  bool is_constant() const { return steps_.empty(); }

 private:
  struct Step {
    Op op = Op::CONST;  // CONST, DEFINE_VAR or an integer ALU op
    DType operand;      // the dtype exec_int computes in (a comparison's operands' dtype)
    Wide value = 0;     // CONST
    std::string variable;  // DEFINE_VAR
    int64_t position = -1;  // DEFINE_VAR: its place in the prepared variables; -1 if not there
    std::vector<uint32_t> src;  // earlier steps
  };
  template <class Lookup>
  Wide run(const Lookup& variable, Wide* values) const;
  template <class Lookup>
  int64_t evaluate_with(const Lookup& variable) const;
  [[noreturn]] void unbound(const Step& s) const;

  std::vector<Step> steps_;  // empty: constant_ (or error_)
  Wide constant_ = 0;
  std::string text_;   // the expression, for errors
  std::string error_;  // an op no launch can evaluate
};

}  // namespace weft::lower
