// The tile layer: tilelang's vocabulary (alloc_shared, alloc_fragment, copy, clear, gemm) on
// weft's DSL. A TileBlock is one workgroup: GLOBAL ranges for the block's position in the grid
// and a 2-D grid of threads (LOCAL ranges ty, tx). Tiles are 2-D; thread (ty, tx) of a TY x TX
// grid owns, in an R x C tile, the rows {ty, ty+TY, ty+2*TY, ...} (strided) and the C/TX
// consecutive columns from tx*C/TX (contiguous, unrolled into vector lanes):
//
//   TileBlock blk({N/64, M/64}, /*threads_y=*/8, /*threads_x=*/16);
//   UOp a_s = alloc_shared({64, 64}, dtypes::float16);
//   UOp c = blk.fragment({64, 64}, dtypes::float32);
//   c = blk.clear(c);
//   UOp ko = blk.range(K/64, AxisType::LOOP);
//   UOp a_st = blk.copy_to_shared(a_s, a, by*64, ko*64);   ...
//   c = blk.gemm(a_s.after({a_st, b_st}), b_s.after({a_st, b_st}), c, {ko});
//   UOp out = blk.copy_from_fragment(c, C, by*64, bx*64, relu);
//
// Each function checks that the tile divides over the threads and names the tile and shape
// that do not.
#pragma once

#include <functional>
#include <vector>

#include "weft/dsl/builder.h"

namespace weft::tile {

class TileBlock {
 public:
  // `grid`: workgroups along x, y (GLOBAL ranges, ids 0 and 1); threads_y x threads_x
  // work-items as LOCAL ranges (tx the fast axis, lidx0).
  TileBlock(std::vector<int64_t> grid, int64_t threads_y, int64_t threads_x);

  UOp block(size_t axis) const { return blocks_.at(axis); }  // GLOBAL range: the block's index
  UOp ty() const { return ty_; }
  UOp tx() const { return tx_; }
  int64_t threads() const { return threads_y_ * threads_x_; }

  // A fresh range (ids continue after the block's own).
  UOp range(int64_t size, AxisType axis);
  UOp range(const UOp& size, AxisType axis);

  // A fragment: the whole R x C tile, held thread by thread as the class comment says.
  UOp fragment(const std::vector<int64_t>& shape, DType dtype);
  // frag = 0 on every element each thread owns; returns the fragment after the stores.
  UOp clear(const UOp& frag);
  // One tile global[row0 .., col0 ..] into `shared` (R x C), each thread its own elements;
  // returns the store effect (the shared tile is read after it: shared.after({effect})).
  UOp copy_to_shared(const UOp& shared, const UOp& global, const UOp& row0, const UOp& col0);
  // A tile of `source` (a shared tile, or a global buffer at row0, col0) into the fragment, each
  // thread its own elements, cast to the fragment's dtype; returns the fragment after the copy.
  UOp copy_to_fragment(const UOp& frag, const UOp& source, const UOp& row0, const UOp& col0);
  // C += A * B with A (R x K) and B (K x C) shared tiles and C a fragment (R x C), scalar FMA
  // in C's dtype. The stores are also ended over `outer` (e.g. the loop over K tiles). Returns
  // the fragment after the update.
  UOp gemm(const UOp& a_shared, const UOp& b_shared, const UOp& c_frag, const std::vector<UOp>& outer = {});
  // global[row0 + i, col0 + j] = epilogue(frag[i, j]) cast to global's dtype; the store effect,
  // ended over its own loops and the block's ranges (the kernel's last statement).
  UOp copy_from_fragment(const UOp& frag, const UOp& global, const UOp& row0, const UOp& col0,
                         const std::function<UOp(const UOp&)>& epilogue = nullptr);

 private:
  struct Ownership {
    int64_t rows_per_thread, cols_per_thread;
  };
  Ownership ownership(const char* what, const UOp& tile) const;

  std::vector<UOp> blocks_;
  int64_t threads_y_, threads_x_;
  UOp ty_, tx_;
  int64_t next_id_;
};

// relu: max(x, 0).
UOp relu(const UOp& x);

}  // namespace weft::tile
