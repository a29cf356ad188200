// Pass 1: pin_loop_bodies. The linearizer writes an effect inside a loop where the loop's body
// lists it (GROUP, nested END, WHEN region) or where the effect depends on the loop's range: an
// effect the body only reaches (through AFTER, or as a statement's predecessor) and that does
// not use the range is written once, before the loop opens (a prologue). That second rule reads
// values, and the passes after this one fold values: with a trip count that may be 0 or 1, `r // 2`
// folds to 0, and an effect that used `r` only so would leave the loop, running when the loop
// runs no iteration (or once where it ran n times). Before any fold, this pass lists in each
// loop's body every effect the body reaches that lies in the loop (it uses one of the END's
// ranges and no range open only elsewhere), so that where an effect runs no longer depends on what
// the simplifier proves.
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

// The effects `body` lists: itself, a GROUP's members, the bodies of ENDs and the effects of WHEN
// regions among them (what the linearizer walks as the body).
std::unordered_set<const Node*> listed(const UOp& body) {
  std::unordered_set<const Node*> out;
  std::vector<UOp> todo{body};
  while (!todo.empty()) {
    const UOp e = todo.back();
    todo.pop_back();
    if (!out.insert(e.node()).second) continue;
    if (e.op() == Op::GROUP) todo.insert(todo.end(), e.src().begin(), e.src().end());
    else if (e.op() == Op::END) todo.push_back(e.src(0));
    else if (e.op() == Op::WHEN) todo.insert(todo.end(), e.src().begin() + 1, e.src().end());
  }
  return out;
}

bool contains(const std::vector<UOp>& ranges, const UOp& r) {
  return std::any_of(ranges.begin(), ranges.end(), [&](const UOp& o) { return o.same(r); });
}

// The effects below `end`'s body that the body reaches without listing them and that lie in its
// loop: each uses every range the END closes, and every range it uses is open at the body.
std::vector<UOp> reached_in_loop(const UOp& end, OpenRanges& open) {
  const UOp& body = end.src(0);
  const std::unordered_set<const Node*> in_body = listed(body);
  const std::vector<UOp> at_body = open.of(body);
  std::vector<UOp> out;
  for (const UOp& e : toposort(body)) {
    if (!e.is_effect() || e.op() == Op::SINK || in_body.count(e.node())) continue;
    const std::vector<UOp>& uses = open.of(e);
    const bool in_every_loop = std::all_of(end.src().begin() + 1, end.src().end(), [&](const UOp& r) { return contains(uses, r); });
    const bool nothing_foreign = std::all_of(uses.begin(), uses.end(), [&](const UOp& r) { return contains(at_body, r); });
    if (in_every_loop && nothing_foreign) out.push_back(e);
  }
  return out;
}

}  // namespace

UOp pin_loop_bodies(const UOp& kernel) {
  OpenRanges open;  // over the input graph: every node below is an input node
  std::unordered_map<const Node*, std::vector<UOp>> pins;
  for (const UOp& u : toposort(kernel))
    if (u.op() == Op::END && std::all_of(u.src().begin() + 1, u.src().end(), is_loop))
      if (std::vector<UOp> p = reached_in_loop(u, open); !p.empty()) pins.emplace(u.node(), std::move(p));
  if (pins.empty()) return kernel;
  // Rebuilt bottom-up, so a pinned effect is already its rebuilt self when its END is reached.
  std::unordered_map<const Node*, UOp> rebuilt_of;
  return transform(kernel, [&](const UOp& old, const UOp& rebuilt) -> std::optional<UOp> {
    UOp out = rebuilt;
    if (auto it = pins.find(old.node()); it != pins.end()) {
      std::vector<UOp> members{rebuilt.src(0)};
      for (const UOp& p : it->second) members.push_back(rebuilt_of.at(p.node()));
      std::vector<UOp> ranges(rebuilt.src().begin() + 1, rebuilt.src().end());
      out = group(members).end(ranges);
    }
    rebuilt_of.emplace(old.node(), out);
    return out;
  });
}

}  // namespace weft::lower
