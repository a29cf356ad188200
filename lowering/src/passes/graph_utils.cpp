#include "graph_utils.h"

#include "weft/dsl/builder.h"
#include "weft/lowering/symbolic.h"

#include <algorithm>

namespace weft::lower {

UOp transform(const UOp& root, const std::function<std::optional<UOp>(const UOp&, const UOp&)>& visit) {
  std::unordered_map<const Node*, UOp> done;
  for (const UOp& u : toposort(root)) {
    std::vector<UOp> src;
    src.reserve(u.src().size());
    bool changed = false;
    for (const UOp& s : u.src()) {
      const UOp& n = done.at(s.node());
      changed |= !n.same(s);
      src.push_back(n);
    }
    UOp rebuilt = changed ? u.with_src(std::move(src)) : u;
    std::optional<UOp> replaced = visit(u, rebuilt);
    done.emplace(u.node(), replaced ? *replaced : rebuilt);
  }
  return done.at(root.node());
}

int64_t range_id(const UOp& range) { return range.arg_as<RangeArg>().id; }
AxisType range_axis(const UOp& range) { return range.arg_as<RangeArg>().axis; }

void sort_ranges(std::vector<UOp>& ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const UOp& a, const UOp& b) { return range_id(a) < range_id(b); });
  ranges.erase(std::unique(ranges.begin(), ranges.end(), [](const UOp& a, const UOp& b) { return a.same(b); }), ranges.end());
}

const std::vector<UOp>& OpenRanges::of(const UOp& root) {
  if (auto it = memo_.find(root.node()); it != memo_.end()) return it->second;
  for (const UOp& u : toposort(root)) {
    if (memo_.count(u.node())) continue;
    std::vector<UOp> open;
    for (const UOp& s : u.src()) {
      const auto& child = memo_.at(s.node());
      open.insert(open.end(), child.begin(), child.end());
    }
    if (u.op() == Op::RANGE) open.push_back(u);
    if (u.op() == Op::END || u.op() == Op::REDUCE || u.op() == Op::CONTRACT) {
      std::vector<UOp> closed(u.src().begin() + 1, u.src().end());
      std::erase_if(open, [&](const UOp& r) {
        return std::any_of(closed.begin(), closed.end(), [&](const UOp& c) { return c.same(r); });
      });
    }
    sort_ranges(open);
    memo_.emplace(u.node(), std::move(open));
  }
  return memo_.at(root.node());
}

bool depends_on(const UOp& node, const UOp& target) {
  for (const UOp& u : toposort(node))
    if (u.same(target)) return true;
  return false;
}

std::unordered_set<const Node*> listed_effects(const UOp& body) {
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

namespace {

// CUSTOM and Hopper's statements: value operands, then the effects they come after.
bool has_operands_then_predecessors(const UOp& x) { return x.op() == Op::CUSTOM || opsets::hopper.contains(x.op()); }
bool ordered_statement(const UOp& x) { return opsets::sync.contains(x.op()) || has_operands_then_predecessors(x); }

}  // namespace

std::vector<UOp> reached_effects(const UOp& body, const std::function<bool(const UOp&)>& enter) {
  std::vector<UOp> deps, todo{body};
  std::unordered_set<const Node*> seen;
  const auto report = [&](const UOp& e) {
    if (!enter || enter(e)) deps.push_back(e);
  };
  while (!todo.empty()) {
    const UOp x = todo.back();
    todo.pop_back();
    if (!seen.insert(x.node()).second || (enter && !enter(x))) continue;
    if (x.op() == Op::AFTER) {
      for (size_t i = 1; i < x.src().size(); ++i)
        if (x.src(i).is_effect()) report(x.src(i));
      todo.push_back(x.src(0));
      // What those effects are ordered after may lie outside the loop too (a barrier naming the
      // prologue's copies).
      for (size_t i = x.src().size(); i-- > 1;)
        if (ordered_statement(x.src(i))) todo.push_back(x.src(i));
      continue;
    }
    if (ordered_statement(x))
      for (const UOp& s : x.src())
        if (s.is_effect() && !s.is_valued_effect()) report(s);
    for (size_t i = x.src().size(); i-- > 0;) todo.push_back(x.src(i));
  }
  return deps;
}

namespace {

// The effects `e` comes after: its effect sources and those its values' AFTERs name.
std::vector<UOp> predecessors(const UOp& e) {
  std::vector<UOp> out, values;
  for (const UOp& s : e.src()) (s.is_effect() && !s.is_valued_effect() ? out : values).push_back(s);
  std::unordered_set<const Node*> seen;
  while (!values.empty()) {
    const UOp v = values.back();
    values.pop_back();
    if (!seen.insert(v.node()).second || (v.is_effect() && !v.is_valued_effect())) continue;
    if (v.op() == Op::AFTER) {
      for (size_t i = 1; i < v.src().size(); ++i) out.push_back(v.src(i));
      values.push_back(v.src(0));
      continue;
    }
    for (const UOp& s : v.src()) values.push_back(s);
  }
  return out;
}

bool inside(const UOp& effect, const std::vector<UOp>& loops, OpenRanges& open) {
  const std::vector<UOp>& ranges = open.of(effect);
  for (const UOp& r : loops)
    if (std::any_of(ranges.begin(), ranges.end(), [&](const UOp& o) { return o.same(r); })) return true;
  return false;
}

void collect_region(const UOp& e, std::vector<UOp> loops, OpenRanges& open, std::unordered_set<const Node*>& members) {
  if (!members.insert(e.node()).second) return;
  switch (e.op()) {
    case Op::END:
      for (size_t i = 1; i < e.src().size(); ++i) loops.push_back(e.src(i));
      return collect_region(e.src(0), loops, open, members);
    case Op::GROUP:
      for (const UOp& s : e.src()) collect_region(s, loops, open, members);
      return;
    default:
      for (const UOp& p : predecessors(e))
        if (inside(p, loops, open)) collect_region(p, loops, open, members);
  }
}

}  // namespace

std::unordered_set<const Node*> when_region(const UOp& when, OpenRanges& open) {
  std::unordered_set<const Node*> members;
  for (size_t i = 1; i < when.src().size(); ++i) collect_region(when.src(i), {}, open, members);
  return members;
}

UOp buffer_root(const UOp& buffer) {
  UOp b = buffer;
  while (b.op() != Op::PLACEHOLDER) {
    if (b.src().empty() || !b.src(0).is_buffer()) return {};
    b = b.src(0);
  }
  return b;
}

int64_t fresh_range_id(const UOp& root) {
  int64_t next = 0;
  for (const UOp& u : toposort(root))
    if (u.op() == Op::RANGE) next = std::max(next, range_id(u) + 1);
  return next;
}

int64_t fresh_buffer_slot(const UOp& root) {
  int64_t next = 0;
  for (const UOp& u : toposort(root))
    if (u.op() == Op::PLACEHOLDER) next = std::max(next, u.arg_as<BufferArg>().slot + 1);
  return next;
}

namespace {

// A power of two that every value of the integer `x` is a multiple of, up to 2^12 (more than any
// vector's lanes): from constants, sums, products, shifts by constants, selects and integer
// casts. Powers of two survive wrapping arithmetic, so no range is needed. 1 where unknown.
int64_t known_multiple(const UOp& x, std::unordered_map<const Node*, int64_t>& memo) {
  constexpr int64_t kCap = int64_t{1} << 12;
  if (!x.dtype().is_int()) return 1;
  if (auto it = memo.find(x.node()); it != memo.end()) return it->second;
  int64_t m = 1;
  const auto of = [&](size_t i) { return known_multiple(x.src(i), memo); };
  const auto power_of = [&](Wide v) {  // the largest power of two up to kCap that divides v
    int64_t m = 1;
    while (m < kCap && v % (2 * m) == 0) m *= 2;
    return m;
  };
  switch (x.op()) {
    case Op::CONST: m = power_of(x.const_int()); break;
    case Op::ADD: case Op::SUB:
      if ((m = of(0)) > 1) m = std::min(m, of(1));
      break;
    case Op::MUL: m = std::min(kCap, of(0) * of(1)); break;
    case Op::SHL:
      if (x.src(1).is_const() && x.src(1).const_int() >= 0 && x.src(1).const_int() < 12)
        m = std::min(kCap, of(0) << static_cast<int>(x.src(1).const_int()));
      break;
    case Op::WHERE:
      if ((m = of(1)) > 1) m = std::min(m, of(2));
      break;
    case Op::CAST: {  // truncating to n bits keeps a factor of 2^k for k <= n
      const int64_t bits = 8 * x.dtype().itemsize();
      m = std::min(of(0), bits >= 13 ? kCap : int64_t{1} << bits);
      break;
    }
    default: break;
  }
  memo.emplace(x.node(), m);
  return m;
}

}  // namespace

bool aligned_vector(const UOp& index) {
  const DType d = index.dtype();
  const int bytes = d.itemsize();
  if (!d.is_vector() || bytes > 16 || (bytes & (bytes - 1)) != 0 || index.src().size() < 2) return false;
  const UOp& flat = index.src(1);
  std::unordered_map<const Node*, int64_t> memo;  // (shared subexpressions are walked once)
  if (known_multiple(flat, memo) % d.lanes == 0) return true;  // e.g. a select between aligned bases plus aligned terms
  const UOp rem = simplify(flat % flat.const_like(Wide(d.lanes)));
  return rem.is_const() && rem.const_int() == 0;
}

}  // namespace weft::lower
