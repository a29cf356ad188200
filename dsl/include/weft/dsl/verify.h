// The verifier: checks a graph before lowering and names each offending node and the rule it
// breaks, numbered as graph_string() numbers nodes.
#pragma once

#include <string>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft {

struct Violation {
  size_t node_number;  // position in graph_string(root)
  UOp node;
  std::string rule;    // what is wrong, in plain words
  std::string to_string() const;
};

// Every rule broken anywhere in the graph reachable from `root`.
std::vector<Violation> find_violations(const UOp& root);

// Throws weft::Error listing the violations (the first few) if there are any. A kernel (a SINK
// root) is also checked for buffer slots and range ids used twice with different meanings.
void verify(const UOp& root);

}  // namespace weft
