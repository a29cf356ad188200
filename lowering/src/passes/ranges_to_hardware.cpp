// Pass 6: GLOBAL ranges to workgroup ids and LOCAL ranges to work-item ids. The first GLOBAL
// range (by id) is gidx0 (x), the next gidx1 (y), gidx2 (z); likewise LOCAL to lidx0..2. Their
// sizes are the launch's grid and block; ENDs and AFTERs stop naming them (there is no loop).
#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

bool is_hardware(const UOp& r) {
  return r.op() == Op::RANGE && (range_axis(r) == AxisType::GLOBAL || range_axis(r) == AxisType::LOCAL);
}

void assign(std::vector<UOp> ranges, const char* prefix, const char* what, std::array<UOp, 3>& dims,
            std::vector<std::pair<UOp, UOp>>& replace) {
  sort_ranges(ranges);
  if (ranges.size() > 3)
    throw Error("ranges_to_hardware: the kernel has " + std::to_string(ranges.size()) + " " + what +
                " ranges; the hardware has 3 dimensions (merge some, or make them LOOP)");
  for (size_t i = 0; i < 3; ++i) dims[i] = constant(Wide(1));
  for (size_t i = 0; i < ranges.size(); ++i) {
    dims[i] = ranges[i].src(0);
    replace.emplace_back(ranges[i], special(ranges[i].src(0), prefix + std::to_string(i)));
  }
}

}  // namespace

UOp ranges_to_hardware(const UOp& kernel, LaunchDims& launch) {
  std::vector<UOp> global, local;
  for (const UOp& u : toposort(kernel)) {
    if (!is_hardware(u)) continue;
    (range_axis(u) == AxisType::GLOBAL ? global : local).push_back(u);
  }
  std::vector<std::pair<UOp, UOp>> replace;
  assign(global, "gidx", "GLOBAL", launch.grid, replace);
  assign(local, "lidx", "LOCAL", launch.block, replace);
  int64_t threads = 1;
  for (const UOp& d : launch.block) {
    if (!d.is_const()) throw Error("ranges_to_hardware: LOCAL range of size " + expr_string(d) + "; a workgroup's size must be a constant");
    threads *= static_cast<int64_t>(d.const_int());
  }
  if (threads > 1024) throw Error("ranges_to_hardware: " + std::to_string(threads) + " work-items per workgroup; at most 1024");
  return transform(kernel, [&](const UOp& old, const UOp& u) -> std::optional<UOp> {
    for (const auto& [r, s] : replace)
      if (old.same(r)) return s;
    if (u.op() != Op::END && u.op() != Op::AFTER) return std::nullopt;
    std::vector<UOp> src{u.src(0)};
    for (size_t i = 1; i < u.src().size(); ++i)
      if (old.src(i).op() != Op::RANGE || !is_hardware(old.src(i))) src.push_back(u.src(i));
    if (src.size() == u.src().size()) return std::nullopt;
    if (src.size() == 1) return src[0];
    return u.with_src(std::move(src));
  });
}

}  // namespace weft::lower
