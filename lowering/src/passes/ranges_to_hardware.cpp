// Pass 6: GLOBAL ranges to workgroup ids and thread ranges to work-item ids. The first GLOBAL
// range (by id) is gidx0 (x), the next gidx1 (y), gidx2 (z). Thread ranges take the block's
// dimensions in thread_layout's order: LOCAL and GROUP_REDUCE ranges become lidxN, WARP ranges
// widxN (the same work-item id, known to be the same in every lane of a wave; the threads below
// a WARP dimension must fill whole waves). Their sizes are the launch's grid and block; ENDs
// and AFTERs stop naming them (there is no loop).
#include "graph_utils.h"
#include "thread_layout.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

bool is_hardware(const UOp& r) {
  return r.op() == Op::RANGE && (range_axis(r) == AxisType::GLOBAL || axis_is_thread(range_axis(r)));
}

using Replacements = std::vector<std::pair<UOp, UOp>>;

void assign_grid(const UOp& kernel, std::array<UOp, 3>& grid, Replacements& replace) {
  std::vector<UOp> ranges;
  for (const UOp& u : toposort(kernel))
    if (u.op() == Op::RANGE && range_axis(u) == AxisType::GLOBAL) ranges.push_back(u);
  sort_ranges(ranges);
  if (ranges.size() > 3)
    throw Error("ranges_to_hardware: the kernel has " + std::to_string(ranges.size()) +
                " GLOBAL ranges; the hardware has 3 dimensions (merge some, or make them LOOP)");
  for (size_t i = 0; i < 3; ++i) grid[i] = constant(Wide(1));
  for (size_t i = 0; i < ranges.size(); ++i) {
    grid[i] = ranges[i].src(0);
    replace.emplace_back(ranges[i], special(ranges[i].src(0), "gidx" + std::to_string(i)));
  }
}

void assign_block(const UOp& kernel, int64_t wave_size, std::array<UOp, 3>& block, Replacements& replace) {
  const std::vector<ThreadDim> dims = thread_layout(kernel);
  if (dims.size() > 3)
    throw Error("ranges_to_hardware: the kernel has " + std::to_string(dims.size()) +
                " thread ranges (LOCAL, GROUP_REDUCE, WARP); the hardware has 3 dimensions (merge some)");
  int64_t threads = 1;
  for (size_t i = 0; i < 3; ++i) block[i] = constant(Wide(1));
  for (size_t i = 0; i < dims.size(); ++i) {
    const ThreadDim& d = dims[i];
    const bool warp = range_axis(d.range) == AxisType::WARP;
    if (warp && d.stride % wave_size != 0)
      throw Error("ranges_to_hardware: WARP range " + std::to_string(range_id(d.range)) + " counts waves, but the threads below it (" +
                  std::to_string(d.stride) + ") are not a whole number of " + std::to_string(wave_size) + "-lane waves");
    block[i] = d.range.src(0);
    replace.emplace_back(d.range, special(d.range.src(0), (warp ? "widx" : "lidx") + std::to_string(i)));
    threads *= d.size;
  }
  if (threads > 1024) throw Error("ranges_to_hardware: " + std::to_string(threads) + " work-items per workgroup; at most 1024");
}

}  // namespace

UOp ranges_to_hardware(const UOp& kernel, LaunchDims& launch, int64_t wave_size) {
  Replacements replace;
  assign_grid(kernel, launch.grid, replace);
  assign_block(kernel, wave_size, launch.block, replace);
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
