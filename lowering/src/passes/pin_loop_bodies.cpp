// Pass 1: pin_loop_bodies. The linearizer writes an effect inside a loop where the loop's body
// lists it (GROUP, nested END, WHEN region) or where the effect depends on the loop's range: an
// effect the body only reaches (through AFTER, or as a statement's predecessor) and that does
// not use the range is written once, before the loop opens (a prologue). That second rule reads
// values, and the passes after this one fold values: with a trip count that may be 0 or 1, `r // 2`
// folds to 0, and an effect that used `r` only so would leave the loop, running when the loop
// runs no iteration (or once where it ran n times). Before any fold, this pass lists in each
// loop's body every effect the body reaches that lies in the loop (it uses each loop range the
// END closes and no range closed elsewhere), so that where an effect runs no longer depends on what
// the simplifier proves. An END of several loop ranges is seen nested (one loop range an END,
// the smallest id outermost, as nest_loops will), so an effect that uses only the outer range is
// pinned in the outer loop's body, beside the inner loop, not in the inner one (where it would
// repeat); it stays nested only where something was pinned. Limit: an unrolled range stays with
// the innermost loop, so an effect that uses it and an outer loop's range but not the inner
// one's is not pinned (the fold can still move it).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/passes.h"

namespace weft::lower {

namespace {

// Loop axes: the ranges that become loops in the program (hardware ranges are thread and
// workgroup ids; UPCAST and UNROLL are expanded, their effects repeated per value).
bool is_loop(const UOp& range) {
  const AxisType axis = range_axis(range);
  return axis == AxisType::LOOP || axis == AxisType::WEAK || axis == AxisType::REDUCE;
}

bool contains(const std::vector<UOp>& ranges, const UOp& r) {
  return std::any_of(ranges.begin(), ranges.end(), [&](const UOp& o) { return o.same(r); });
}

// The effects `end`'s body reaches without listing them (reached_effects) that lie in its loops:
// each uses every loop range the END closes (`loops`), and every range it uses is open at the
// body. The walk enters only nodes that use those ranges: nothing below the others can be in the
// loop. An effect inside a GROUP, END or WHEN that is itself pinned stays in it (pinning it too
// would run it outside its container: unguarded, or once more).
std::vector<UOp> reached_in_loop(const UOp& end, const std::vector<UOp>& loops, OpenRanges& open) {
  const UOp& body = end.src(0);
  const std::vector<UOp> at_body = open.of(body);
  const auto in_loops = [&](const UOp& n) {
    const std::vector<UOp>& uses = open.of(n);
    return std::all_of(loops.begin(), loops.end(), [&](const UOp& r) { return contains(uses, r); });
  };
  std::vector<UOp> candidates;
  for (const UOp& e : reached_effects(body, in_loops)) {
    const std::vector<UOp>& uses = open.of(e);
    if (std::all_of(uses.begin(), uses.end(), [&](const UOp& r) { return contains(at_body, r); })) candidates.push_back(e);
  }
  std::unordered_set<const Node*> skip = listed_effects(body);
  for (const UOp& c : candidates)
    if (c.op() == Op::GROUP || c.op() == Op::END || c.op() == Op::WHEN)
      for (const Node* inner : listed_effects(c))
        if (inner != c.node()) skip.insert(inner);
  std::vector<UOp> out;
  for (const UOp& c : candidates)
    if (skip.insert(c.node()).second) out.push_back(c);  // once each, in the walk's order
  return out;
}

// The loop ranges an END closes (empty: it opens no loop).
std::vector<UOp> loop_ranges(const UOp& end) {
  std::vector<UOp> loops;
  for (size_t i = 1; i < end.src().size(); ++i)
    if (is_loop(end.src(i))) loops.push_back(end.src(i));
  return loops;
}

bool is_unrolled(const UOp& range) {
  const AxisType axis = range_axis(range);
  return axis == AxisType::UNROLL || axis == AxisType::UPCAST;
}

// ENDs of several loop ranges (those in `only`, where given) as ENDs of one loop range each,
// nested by id (the smallest outermost). Unrolled ranges stay with the innermost (expand repeats
// the same code as before); the others (workgroups, threads, devices: no order) with the
// outermost, so that an effect using them and an outer loop's range is open in that loop's body.
// `levels`, where given, receives each nested END's ENDs.
using Levels = std::unordered_map<const Node*, std::vector<UOp>>;
UOp nest_loop_ranges(const UOp& kernel, const std::unordered_set<const Node*>* only, Levels* levels) {
  return transform(kernel, [&](const UOp& old, const UOp& u) -> std::optional<UOp> {
    if (u.op() != Op::END || (only && !only->count(old.node()))) return std::nullopt;
    std::vector<UOp> loops = loop_ranges(u);
    if (loops.size() < 2) return std::nullopt;
    sort_ranges(loops);
    std::vector<UOp> innermost{loops.back()}, outermost{loops.front()};
    for (size_t i = 1; i < u.src().size(); ++i)
      if (!is_loop(u.src(i))) (is_unrolled(u.src(i)) ? innermost : outermost).push_back(u.src(i));
    std::vector<UOp> chain{u.src(0).end(innermost)};
    for (size_t i = loops.size() - 1; i-- > 1;) chain.push_back(chain.back().end({loops[i]}));
    chain.push_back(chain.back().end(outermost));
    if (levels) (*levels)[old.node()] = chain;
    return chain.back();
  });
}

using Pins = std::unordered_map<const Node*, std::vector<UOp>>;

// What each END of `kernel` that closes loop ranges pins (ENDs that pin nothing are absent).
Pins find_pins(const UOp& kernel) {
  OpenRanges open;  // over `kernel`: every node below is one of its nodes
  Pins pins;
  for (const UOp& u : toposort(kernel)) {
    if (u.op() != Op::END) continue;
    const std::vector<UOp> loops = loop_ranges(u);
    if (loops.empty()) continue;
    if (std::vector<UOp> p = reached_in_loop(u, loops, open); !p.empty()) pins.emplace(u.node(), std::move(p));
  }
  return pins;
}

}  // namespace

// Pins are found with every END of several loop ranges nested; only the ENDs that pin something
// at one of their levels stay nested (insert_barriers treats the loops of one END as one: a
// nested END it did not need would get a write-after-read barrier per level).
UOp pin_loop_bodies(const UOp& input) {
  Levels levels;
  UOp kernel = nest_loop_ranges(input, nullptr, &levels);
  Pins pins = find_pins(kernel);
  if (pins.empty()) return input;
  std::unordered_set<const Node*> needed;
  for (const auto& [end, chain] : levels)
    if (std::any_of(chain.begin(), chain.end(), [&](const UOp& level) { return pins.count(level.node()) > 0; })) needed.insert(end);
  if (needed.size() < levels.size()) {
    kernel = nest_loop_ranges(input, &needed, nullptr);
    pins = find_pins(kernel);
  }
  // Rebuilt bottom-up, so a pinned effect is already its rebuilt self when its END is reached.
  std::unordered_map<const Node*, UOp> rebuilt_of;
  return transform(kernel, [&](const UOp& old, const UOp& rebuilt) -> std::optional<UOp> {
    UOp out = rebuilt;
    if (auto it = pins.find(old.node()); it != pins.end()) {
      std::vector<UOp> members{rebuilt.src(0)};
      for (const UOp& p : it->second) members.push_back(rebuilt_of.at(p.node()));
      out = group(members).end(std::vector<UOp>(rebuilt.src().begin() + 1, rebuilt.src().end()));
    }
    rebuilt_of.emplace(old.node(), out);
    return out;
  });
}

}  // namespace weft::lower
