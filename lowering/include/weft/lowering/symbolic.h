// The symbolic simplifier: constant folding, algebraic identities, canonical sums and
// products, division/modulo folding with value ranges, comparison folding, and range
// simplification. Every rule keeps the value of the expression for every assignment of its
// variables under the IR's C-like integer semantics (tests/lowering/test_symbolic_fuzz.cpp
// checks this by brute force).
#pragma once

#include "weft/lowering/pattern.h"

namespace weft {

// The rules, in the order they are tried.
const PatternSet& symbolic_rules();

// graph_rewrite(root, symbolic_rules()), bottom-up to a fixed point.
UOp simplify(const UOp& root);

// The order terms of canonical sums and factors of canonical products are kept in: variables
// by name, then special indices, then ranges by id, then other nodes by structure. It depends
// only on content, so simplified graphs print the same in every run.
bool canonical_less(const UOp& a, const UOp& b);

}  // namespace weft
