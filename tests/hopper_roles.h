// Warp-specialized Hopper kernels (hopper_gemm and its grouped form) keep every wgmma and TMA
// statement (and register budget) inside a role's branch (a producer or consumer warpgroup's when()). One outside runs
// in every warp: the H200 hang of session 16 (a consumer loop outside its role) and the H100's
// illegal shared-memory reads of session 18 (a trip loop of 0 or 1 iterations folded away, its
// body left to every warp).
#pragma once

#include <cstddef>

#include "weft/lowering/pipeline.h"

namespace weft::testing {

inline size_t hopper_statements_outside_roles(const lower::LoweredKernel& k) {
  int depth = 0;
  size_t outside = 0;
  for (const lower::LinearOp& op : k.program) {
    if (op.kind == lower::LinearOp::Kind::BranchBegin) ++depth;
    if (op.kind == lower::LinearOp::Kind::BranchEnd) --depth;
    const Op o = op.op.op();  // a when() around one statement is a role of its own (its statement is not counted)
    const bool role_statement = o == Op::WGMMA || o == Op::WGMMA_COMMIT || o == Op::WGMMA_WAIT || o == Op::TMA_LOAD || o == Op::TMA_STORE || o == Op::SETMAXNREG;
    if (op.kind == lower::LinearOp::Kind::Effect && depth == 0 && role_statement) ++outside;
  }
  return outside;
}

}  // namespace weft::testing
