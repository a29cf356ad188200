// How the thread ranges of a kernel (LOCAL, GROUP_REDUCE, WARP) become the hardware dimensions
// of a workgroup: one fact shared by ranges_to_hardware (which assigns lidx/widx) and
// reduce_across_threads (which needs each range's stride in the flat thread id).
//
// Order: LOCAL and GROUP_REDUCE ranges by id (the first is x, the fastest), then WARP ranges by
// id, so that a WARP coordinate changes only every stride-many threads: with strides that are a
// multiple of the wave size, every lane of a wave has the same WARP coordinate.
//
//   LOCAL r0 (64), WARP r1 (2), WARP r2 (4)  ->  x = r0 (stride 1), y = r1 (64), z = r2 (128)
#pragma once

#include <vector>

#include "weft/dsl/uop.h"

namespace weft::lower {

struct ThreadDim {
  UOp range;
  int64_t size;
  int64_t stride;  // in the flat thread id (x + X*(y + Y*z))
};

// Throws weft::Error for a thread range of non-constant size.
std::vector<ThreadDim> thread_layout(const UOp& kernel);

}  // namespace weft::lower
