// Pass 7: devectorize and coalesce. The expander leaves one scalar store per unrolled lane;
// here, stores of one group into consecutive elements of one GLOBAL or LOCAL buffer merge into
// vector stores of up to 16 bytes (register buffers are left to LLVM's SROA).
//
// A GROUP is ordered, and merging moves every store of a run to the position of its earliest
// one. So a run merges only when each store it moves jumps over nothing but stores provably
// disjoint from it (another buffer, a constant nonzero address difference, or value ranges
// that do not meet); a barrier, a copy or a store that may alias keeps program order. A store
// whose address another store of the group also writes (an aliased slot, e.g. a
// double-buffered LDS tile written in a prologue and in a loop body) stays scalar.
#include <algorithm>
#include <map>

#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/passes.h"
#include "weft/lowering/symbolic.h"

namespace weft::lower {
namespace {

struct Address {
  UOp base;      // the non-constant part of the flat index (null for a constant index)
  Wide offset;   // the constant part
};

Address split_address(const UOp& idx) {
  if (idx.is_const()) return {{}, idx.const_int()};
  if (idx.op() == Op::ADD && idx.src(1).is_const()) return {idx.src(0), idx.src(1).const_int()};
  if (idx.op() == Op::ADD && idx.src(0).is_const()) return {idx.src(1), idx.src(0).const_int()};
  return {idx, 0};
}


struct Candidate {
  UOp store;
  Address address;
  size_t position;  // in the group's order
};

// The elements [first, first + lanes) a store or copy writes.
struct Written {
  UOp root, first;
  int64_t lanes;
};

std::optional<Written> written(const UOp& e) {
  if (e.op() != Op::STORE && e.op() != Op::ASYNC_COPY) return std::nullopt;
  const UOp& idx = e.src(0);
  const int64_t lanes = e.op() == Op::STORE ? e.src(1).dtype().lanes : e.dtype().lanes;
  return Written{buffer_root(idx.src(0)), idx.src(1), lanes};
}

// Whether two stores provably write no element in common.
bool disjoint(const UOp& x, const UOp& y) {
  const auto a = written(x), b = written(y);
  if (!a || !b || !a->root.node() || !b->root.node()) return false;
  if (!a->root.same(b->root)) return true;  // distinct buffers (GLOBAL parameters do not alias)
  if (a->first.vmax() + a->lanes <= b->first.vmin() || b->first.vmax() + b->lanes <= a->first.vmin()) return true;
  const UOp diff = simplify(a->first - b->first);
  if (!diff.is_const()) return false;
  const Wide d = diff.const_int();
  return d >= b->lanes || -d >= a->lanes;
}

// Whether every store of the run can move to the position of the earliest one: nothing it
// jumps over may be anything but a store disjoint from it.
bool order_preserved(const std::vector<Candidate>& run, const std::vector<UOp>& effects) {
  size_t start = run[0].position;
  for (const Candidate& c : run) start = std::min(start, c.position);
  for (const Candidate& c : run)
    for (size_t p = start + 1; p < c.position; ++p) {
      const bool in_run = std::any_of(run.begin(), run.end(), [&](const Candidate& r) { return r.position == p; });
      if (!in_run && !disjoint(effects[p], c.store)) return false;
    }
  return true;
}

void flatten_group(const UOp& g, std::vector<UOp>& out) {
  for (const UOp& e : g.src()) {
    if (e.op() == Op::GROUP) flatten_group(e, out);
    else out.push_back(e);
  }
}

// Whether a store of the run reads (through its value) a buffer the group writes: merging moves
// the later stores of the run before the stores between them, so their values must not depend
// on any store of the group.
bool reads_written_buffer(const std::vector<Candidate>& run, const std::vector<UOp>& effects) {
  std::vector<UOp> written;
  for (const UOp& e : effects)
    if (e.op() == Op::STORE || e.op() == Op::ASYNC_COPY) written.push_back(buffer_root(e.src(0).src(0)));
  for (const Candidate& c : run)
    for (const UOp& n : toposort(c.store.src(1))) {
      if (n.op() != Op::LOAD) continue;
      const UOp root = buffer_root(n.src(0).src(0));
      if (std::any_of(written.begin(), written.end(), [&](const UOp& w) { return w.same(root); })) return true;
    }
  return false;
}

bool multiple_of(const UOp& index, size_t n) {
  const UOp rem = simplify(index % index.const_like(Wide(static_cast<int64_t>(n))));
  return rem.is_const() && rem.const_int() == 0;
}

UOp merge(const std::vector<Candidate>& run) {
  const UOp& first = run[0].store.src(0);
  std::vector<UOp> values;
  for (const Candidate& c : run) values.push_back(c.store.src(1));
  std::vector<UOp> idx_src = first.src();
  UOp index = UOp::make(Op::INDEX, first.dtype().vec(static_cast<int>(run.size())), std::move(idx_src));
  return UOp::make(Op::STORE, dtypes::void_, {index, vectorize(values)});
}

bool coalescable(const UOp& store) {
  if (store.op() != Op::STORE || store.src(1).dtype().is_vector()) return false;
  UOp root = buffer_root(store.src(0).src(0));
  return !root.is_null() && root.arg_as<BufferArg>().space != AddrSpace::REG;
}

std::optional<UOp> coalesce_group(const UOp& g) {
  std::vector<UOp> effects;
  flatten_group(g, effects);
  // Stores by (buffer, validity, base); addresses written twice are out.
  std::map<std::tuple<const Node*, const Node*, const Node*>, std::vector<Candidate>> by_key;
  std::map<std::pair<const Node*, const Node*>, int> writes;
  for (const UOp& e : effects) {
    if (!coalescable(e)) continue;
    writes[{e.src(0).src(0).node(), e.src(0).src(1).node()}]++;
  }
  for (size_t p = 0; p < effects.size(); ++p) {
    const UOp& e = effects[p];
    if (!coalescable(e) || writes[{e.src(0).src(0).node(), e.src(0).src(1).node()}] > 1) continue;
    const UOp& idx = e.src(0);
    Address a = split_address(idx.src(1));
    const Node* valid = idx.src().size() > 2 ? idx.src(2).node() : nullptr;
    by_key[{idx.src(0).node(), valid, a.base.node()}].push_back({e, a, p});
  }
  std::map<const Node*, UOp> merged_into;  // earliest store of a run -> vector store; others -> null
  for (auto& [key, cands] : by_key) {
    std::sort(cands.begin(), cands.end(), [](const Candidate& x, const Candidate& y) { return x.address.offset < y.address.offset; });
    const int elem_bytes = cands[0].store.src(1).dtype().itemsize();
    const size_t max_lanes = static_cast<size_t>(std::max(1, 16 / elem_bytes));
    for (size_t i = 0; i < cands.size();) {
      size_t n = 1;
      while (i + n < cands.size() && n < max_lanes && cands[i + n].address.offset == cands[i].address.offset + Wide(n)) ++n;
      size_t width = n >= 4 ? 4 : n >= 2 ? 2 : 1;
      width = std::min(width, max_lanes);
      // A vector store is aligned to its whole width (docs/ir.md): the run's first index a
      // multiple of it, or a narrower run.
      while (width > 1 && !multiple_of(cands[i].store.src(0).src(1), width)) width /= 2;
      std::vector<Candidate> run(cands.begin() + static_cast<long>(i), cands.begin() + static_cast<long>(i + width));
      if (width > 1 && !reads_written_buffer(run, effects) && order_preserved(run, effects)) {
        const auto earliest = std::min_element(run.begin(), run.end(), [](const Candidate& x, const Candidate& y) { return x.position < y.position; });
        for (const Candidate& c : run) merged_into[c.store.node()] = UOp();
        merged_into[earliest->store.node()] = merge(run);
        i += width;
      } else {
        ++i;  // the next store may still start a run
      }
    }
  }
  if (merged_into.empty()) return std::nullopt;
  std::vector<UOp> out;
  for (const UOp& e : effects) {
    auto it = merged_into.find(e.node());
    if (it == merged_into.end()) out.push_back(e);
    else if (!it->second.is_null()) out.push_back(it->second);
  }
  return out.size() == 1 ? out[0] : group(out);
}

// A vector of loads (a CONTRACT of unrolled loads): runs of lanes that load consecutive elements
// of one GLOBAL or LOCAL buffer, whose first index is a multiple of the run's length, become one vector load
// each (up to 16 bytes), the lanes taken back out with GEP.
std::optional<UOp> coalesce_loads(const UOp& vec) {
  const auto& lanes = vec.src();
  auto address_of = [](const UOp& l) -> std::optional<Address> {
    if (l.op() != Op::LOAD || l.dtype().is_vector() || l.src(0).src().size() != 2) return std::nullopt;
    const UOp root = buffer_root(l.src(0).src(0));
    if (!root.node() || root.arg_as<BufferArg>().space == AddrSpace::REG) return std::nullopt;  // registers: SROA's and nvcc's
    return split_address(l.src(0).src(1));
  };
  const int elem_bytes = vec.dtype().element().itemsize();
  const size_t max_lanes = static_cast<size_t>(std::max(1, 16 / elem_bytes));
  std::vector<UOp> out;
  bool changed = false;
  for (size_t i = 0; i < lanes.size();) {
    const auto first = address_of(lanes[i]);
    size_t n = 1;
    if (first)
      while (i + n < lanes.size() && n < max_lanes) {
        const auto next = address_of(lanes[i + n]);
        if (!next || !lanes[i + n].src(0).src(0).same(lanes[i].src(0).src(0)) || !(next->base.node() ? first->base.node() && next->base.same(first->base) : !first->base.node()) ||
            next->offset != first->offset + Wide(n))
          break;
        ++n;
      }
    size_t width = 1;
    while (width * 2 <= n) width *= 2;
    if (width > 1 && !multiple_of(lanes[i].src(0).src(1), width)) width = 1;  // aligned to the run
    if (width == 1) {
      out.push_back(lanes[i]);
      ++i;
      continue;
    }
    const UOp& idx = lanes[i].src(0);
    UOp vindex = UOp::make(Op::INDEX, idx.dtype().vec(static_cast<int>(width)), idx.src());
    UOp vload = UOp::make(Op::LOAD, vindex.dtype(), {vindex});
    for (size_t k = 0; k < width; ++k) out.push_back(vload.gep(static_cast<int64_t>(k)));
    i += width;
    changed = true;
  }
  if (!changed) return std::nullopt;
  return vectorize(out);
}

}  // namespace

UOp coalesce_stores(const UOp& kernel) {
  return transform(kernel, [](const UOp&, const UOp& u) -> std::optional<UOp> {
    if (u.op() == Op::GROUP) return coalesce_group(u);
    if (u.op() == Op::VECTORIZE) return coalesce_loads(u);
    return std::nullopt;
  });
}

}  // namespace weft::lower
