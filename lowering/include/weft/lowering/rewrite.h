// graph_rewrite: apply a PatternSet to a whole graph.
#pragma once

#include "weft/lowering/pattern.h"

namespace weft {

enum class RewriteMode {
  // Sources first, then the node; every node a rewrite produces is rewritten again, so the
  // result is a fixed point: no rule matches anywhere in it.
  BottomUp,
  // The node first (to a fixed point), then its sources; a node whose sources changed is
  // rewritten again. Also reaches a fixed point.
  TopDown,
  // One bottom-up walk: each node of the input gets one chance; what the rules produce is
  // not rewritten again. For passes whose rules must fire exactly once per node.
  SingleWalk,
};

struct RewriteOptions {
  RewriteMode mode = RewriteMode::BottomUp;
  void* ctx = nullptr;  // handed to every rule as Match::ctx()
  // A guard against rule sets that never settle: the rewrite fails once rule applications
  // exceed this many per node visited so far.
  size_t max_rewrites_per_node = 1000;
};

// The graph rooted at `root` with `rules` applied. Throws weft::Error if the rules lead a node
// back to itself or do not settle.
UOp graph_rewrite(const UOp& root, const PatternSet& rules, const RewriteOptions& options = {});

// Replaces nodes by others everywhere below `root` (no rule matching): a substitution.
UOp substitute(const UOp& root, const std::vector<std::pair<UOp, UOp>>& replacements);

}  // namespace weft
