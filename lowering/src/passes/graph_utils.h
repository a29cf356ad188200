// Small graph queries and transforms the lowering passes share.
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft::lower {

// Rebuilds the graph below `root` bottom-up: every node gets its sources' replacements first,
// then `visit(old, rebuilt)` may return a replacement for it (nullopt keeps `rebuilt`). Each
// node is visited once; what `visit` returns is not visited again.
UOp transform(const UOp& root, const std::function<std::optional<UOp>(const UOp& old, const UOp& rebuilt)>& visit);

// The ranges a node lies inside: those it depends on that no END, REDUCE or CONTRACT below it
// closes. Sorted by range id (outermost loop first). Memoized over one graph.
class OpenRanges {
 public:
  const std::vector<UOp>& of(const UOp& u);

 private:
  std::unordered_map<const Node*, std::vector<UOp>> memo_;
};

bool depends_on(const UOp& node, const UOp& target);

// The effects of a WHEN's region: those it lists and, inside each loop it holds, every effect of
// the loop's body (those that depend on the loop's range). Other effects the region's effects come
// after (their predecessors, the effects their values' AFTERs name) lie outside it.
std::unordered_set<const Node*> when_region(const UOp& when, OpenRanges& open);

// The effects a body lists (what linearize walks as the body): itself, a GROUP's members, the
// bodies of ENDs and the effects of WHENs among them, recursively.
std::unordered_set<const Node*> listed_effects(const UOp& body);

// The effects `body` depends on without listing them: those named through AFTER (and what the
// synchronization, Hopper and inline statements among them are ordered after), and the
// predecessors of the synchronization, Hopper and inline statements below it; in the order of a
// depth-first walk that visits a node's sources in order (an AFTER: only its buffer). `enter`, where
// given, prunes the walk: a node it refuses is neither reported nor walked below.
std::vector<UOp> reached_effects(const UOp& body, const std::function<bool(const UOp&)>& enter = {});

// The PLACEHOLDER under views and AFTERs of a buffer; a null UOp if there is none.
UOp buffer_root(const UOp& buffer);

// Whether a flat INDEX (buffer, index[, validity]) of a vector dtype is aligned to the whole
// vector: its index a provable multiple of the lane count (the tile layer writes vector indices
// as `granule * lanes`), the vector a power of two of at most 16 bytes. Both renderers emit
// one wide access for such an index and state its alignment; coalescing makes no other kind.
bool aligned_vector(const UOp& index);

int64_t range_id(const UOp& range);
AxisType range_axis(const UOp& range);
// Sorts ranges by id, outermost first.
void sort_ranges(std::vector<UOp>& ranges);
// One past the largest range id (and buffer slot, for REG/LOCAL) in the graph: fresh ids.
int64_t fresh_range_id(const UOp& root);
int64_t fresh_buffer_slot(const UOp& root);

}  // namespace weft::lower
