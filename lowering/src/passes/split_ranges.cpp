// Pass 3a: range splitting. A loop r over [0, n) whose every use is r//c or r%c (one c that
// divides n) is the same as two loops, r_hi over n/c and r_lo over c; splitting it removes the
// division and modulo from the index math. Only WEAK, REDUCE and LOOP ranges may be split:
// GLOBAL, LOCAL and the other hardware axes keep the shape the author gave them.
#include <map>

#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/passes.h"
#include "weft/lowering/symbolic.h"

namespace weft::lower {
namespace {

bool lists_ranges(Op op) { return op == Op::END || op == Op::REDUCE || op == Op::CONTRACT || op == Op::AFTER || op == Op::UNSHARD; }

// The divisor every use of `r` divides or takes the modulo by, or 0 if the uses differ.
int64_t common_divisor(const UOp& r, const std::vector<UOp>& users) {
  int64_t c = 0;
  for (const UOp& u : users) {
    if (lists_ranges(u.op())) {
      if (!u.src(0).same(r)) continue;  // a range named in a list of ranges, not a value use
      return 0;
    }
    if ((u.op() != Op::IDIV && u.op() != Op::MOD) || !u.src(0).same(r) || !u.src(1).is_const()) return 0;
    const auto d = static_cast<int64_t>(u.src(1).const_int());
    if (c != 0 && d != c) return 0;
    c = d;
  }
  return c;
}

}  // namespace

UOp split_ranges(const UOp& kernel) {
  std::map<const Node*, std::vector<UOp>> users;
  std::vector<UOp> order = toposort(kernel);
  for (const UOp& u : order)
    for (const UOp& s : u.src()) users[s.node()].push_back(u);
  int64_t next_id = fresh_range_id(kernel);
  std::map<const Node*, std::pair<UOp, UOp>> split;  // range -> (hi, lo)
  for (const UOp& r : order) {
    if (r.op() != Op::RANGE || !axis_is_splittable(range_axis(r)) || !r.src(0).is_const()) continue;
    const auto n = static_cast<int64_t>(r.src(0).const_int());
    const int64_t c = common_divisor(r, users[r.node()]);
    if (c <= 1 || c >= n || n % c != 0) continue;
    split[r.node()] = {range(n / c, next_id, range_axis(r)), range(c, next_id + 1, range_axis(r))};
    next_id += 2;
  }
  if (split.empty()) return kernel;
  UOp out = transform(kernel, [&](const UOp& old, const UOp& u) -> std::optional<UOp> {
    if (auto it = split.find(old.node()); it != split.end()) return it->second.first * static_cast<int64_t>(it->second.second.src(0).const_int()) + it->second.second;
    if (!lists_ranges(u.op())) return std::nullopt;
    // Lists of ranges name the two new ranges where they named the split one.
    std::vector<UOp> src{u.src(0)};
    bool changed = false;
    for (size_t i = 1; i < old.src().size(); ++i) {
      if (auto it = split.find(old.src(i).node()); it != split.end()) {
        src.push_back(it->second.first);
        src.push_back(it->second.second);
        changed = true;
      } else {
        src.push_back(u.src(i));
      }
    }
    return changed ? std::optional<UOp>(u.with_src(std::move(src))) : std::nullopt;
  });
  return simplify(out);
}

}  // namespace weft::lower
