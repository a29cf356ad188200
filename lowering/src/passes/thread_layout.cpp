#include "thread_layout.h"

#include <algorithm>

#include "graph_utils.h"
#include "weft/dsl/print.h"

namespace weft::lower {

std::vector<ThreadDim> thread_layout(const UOp& kernel) {
  std::vector<UOp> lanes, warps;
  for (const UOp& u : toposort(kernel)) {
    if (u.op() != Op::RANGE || !axis_is_thread(range_axis(u))) continue;
    if (!u.src(0).is_const())
      throw Error("range " + std::to_string(range_id(u)) + " (" + std::string(axis_name(range_axis(u))) + ") has size " +
                  expr_string(u.src(0)) + "; a workgroup's size must be a constant");
    (range_axis(u) == AxisType::WARP ? warps : lanes).push_back(u);
  }
  sort_ranges(lanes);
  sort_ranges(warps);
  lanes.insert(lanes.end(), warps.begin(), warps.end());
  std::vector<ThreadDim> out;
  int64_t stride = 1;
  for (const UOp& r : lanes) {
    const auto size = static_cast<int64_t>(r.src(0).const_int());
    out.push_back({r, size, stride});
    stride *= size;
  }
  return out;
}

}  // namespace weft::lower
