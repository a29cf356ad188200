// Text forms of graphs: a compact expression for messages and symbolic tests, and a stable
// numbered listing of a whole graph for dumps.
#pragma once

#include <string>

#include "weft/dsl/uop.h"

namespace weft {

// An infix rendering of a value: "((a*-1)<4)", "(r0*64+r1)", "buf0[(r0*16+r1)]". Effects and
// structural nodes render as their op name. Long expressions are cut with "...".
std::string expr_string(const UOp& u, size_t max_length = 400);

// The whole graph reachable from `root`, one node per line in dependency order:
//   %3 = RANGE index (%0) id=0 axis=GLOBAL
// Numbering follows the order of a depth-first walk, so the same graph always prints the same.
std::string graph_string(const UOp& root);

}  // namespace weft
