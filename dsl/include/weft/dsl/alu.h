// The exact semantics of the IR's ALU ops on host values. Constant folding, the simplifier's
// brute-force tests and the reference interpreter all use these, so the IR has one meaning.
//
// Integers are C-like with defined overflow: results wrap to the dtype's width (two's
// complement). IDIV truncates toward zero and MOD takes the sign of the dividend, so
// (a/b)*b + a%b == a for every b != 0. Division or modulo by zero, and shifts by a negative
// amount or by the width or more, are undefined: the functions return nullopt.
#pragma once

#include <optional>
#include <span>

#include "weft/dsl/dtype.h"
#include "weft/dsl/ops.h"

namespace weft {

// `operand` is the dtype of the sources (for comparisons the result is a bool 0/1; for CAST
// `operand` is the target dtype and args[0] is an integral source value). WHERE takes
// (condition, if_true, if_false).
std::optional<Wide> exec_int(Op op, DType operand, std::span<const Wide> args);

// Float ops (ADD SUB MUL FDIV MAX MIN NEG RECIP SQRT EXP2 LOG2 SIN TRUNC POW MULACC WHERE),
// computed in double and rounded to `dtype` as the device would store the result.
std::optional<double> exec_float(Op op, DType dtype, std::span<const double> args);

// Comparisons of float operands.
bool compare_float(Op op, double a, double b);

}  // namespace weft
