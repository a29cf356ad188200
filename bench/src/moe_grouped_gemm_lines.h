// The moe suite's grouped GEMM lines (moe_grouped_gemm_lines.cpp).
#pragma once

#include <string>
#include <vector>

#include "weft/bench/result.h"
#include "weft/bench/suites.h"
#include "weft/moe/plan.h"
#include "weft/runtime/device.h"

namespace weft::bench {

// moe::GroupedGemm on a random plan of `shape` with expert weights N x K (`distinct` of them
// drawn, dividing E; expert e takes those of e % distinct), checked against the
// host in double precision (each expert's first row). On NVIDIA (`nvidia`) two lines: against a
// loop of cuBLAS GEMMs over each expert's rows (which also checks every real row), and against
// PyTorch's grouped matmul; elsewhere one line without a peer. TFLOP/s count the real rows only.
std::vector<Result> grouped_gemm_lines(rt::Device& device, const std::string& name, const moe::MoeShape& shape, int64_t n, int64_t k,
                                       int64_t distinct, bool nvidia, const Options& options);

}  // namespace weft::bench
