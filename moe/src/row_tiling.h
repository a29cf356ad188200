// How the kernels of permute.cpp spread one row of D elements over a workgroup: each lane moves
// `vector` consecutive elements per access (16 bytes where D allows; every row must start on a
// whole vector, so the vector is the largest power of two up to 16 bytes that divides D), and a
// row's D / vector accesses are dealt to `threads` lanes, `steps` each, unrolled.
//
//   D = 4096, bfloat16: vector 8, 512 accesses, 256 threads x 2 steps
//   D = 7168, bfloat16: vector 8, 896 accesses, 128 threads x 7 steps
//   D = 100,  bfloat16: vector 4, 25 accesses,   64 threads x 1 step (lanes 25..63 masked)
#pragma once

#include "weft/dsl/builder.h"

namespace weft::moe::detail {

struct RowTiling {
  int64_t d = 0, vector = 1, threads = 64, steps = 1;
  int64_t accesses() const { return d / vector; }
  bool ragged() const { return threads * steps != accesses(); }
};

RowTiling row_tiling(int64_t d, DType dtype);

// The index ranges of one row's accesses: lane `lane` (a LOCAL range) at step `step` (an
// UNROLL range, or a LOOP for long rows) reads the access `step * threads + lane`, elements
// [column, column + vector) of the row; `inside` is false for the masked tail (null when the
// row has no tail).
struct RowAccess {
  UOp lane, step, access, column, inside;
  std::vector<UOp> ranges() const { return {lane, step}; }
};
RowAccess row_access(const RowTiling& t, int64_t first_range_id);

// `v` lanes of `value` (a vector of zeros: the fill of a masked load).
UOp splat(const UOp& value, int64_t lanes);

// inside && extra, where either may be null (always true).
UOp both(const UOp& a, const UOp& b);

// A scalar of the index dtype from a loaded int32 (a row or token id).
inline UOp as_index(const UOp& id) { return id.cast(dtypes::index); }

// The variables every permute kernel binds, as index expressions: T tokens and R rows
// (R = MoeShape::max_rows()), bounded so that a row offset of a [T or R, D] buffer fits int32.
UOp tokens_variable(int64_t d);
UOp rows_variable(int64_t d);

// A GLOBAL buffer (kernel parameter `slot`) of dimensions given as index expressions.
UOp global_buffer(std::vector<UOp> shape, DType dtype, int64_t slot);

}  // namespace weft::moe::detail
