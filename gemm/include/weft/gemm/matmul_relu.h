// matmul_relu: the tilelang kernel of the seed (extra/gemm_fragment.py) in weft's tile layer.
// C[M, N] = relu(A[M, K] @ B[K, N]): one 64x64 tile of C per workgroup; 128 threads as an
// 8 x 16 grid, each owning an 8 x 4 fragment of the fp32 accumulator; A and B tiles (64 x 64)
// staged through shared memory; relu fused into the store. Inputs and output are float16 or
// float32. Buffers: slot 0 is C, 1 is A, 2 is B.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "weft/dsl/uop.h"
#include "weft/runtime/compile_cache.h"
#include "weft/runtime/device.h"
#include "weft/runtime/kernel.h"

namespace weft::gemm {

inline constexpr int64_t kMatmulReluTile = 64;

// Throws weft::Error if a dimension is not a multiple of the 64-wide tile, or for a dtype other
// than float16/float32.
UOp matmul_relu(int64_t m, int64_t n, int64_t k, DType dtype);

// A comparison of a device result with a higher-precision host reference.
struct Check {
  size_t count = 0, bad = 0;
  double max_error = 0;     // the largest |device - reference|
  double worst_ratio = 0;   // the largest error / tolerance (passing: <= 1)
  std::string first_bad;    // "C[i, j] = x, expected y" for the first element out of tolerance
  bool passed() const { return count > 0 && bad == 0; }
  // Folds another check into this one: counts add up, the worst errors stay, and the first fault
  // named stays first (`context` goes in front of the other's).
  void merge(const Check& other, const std::string& context = "") {
    if (other.bad && bad == 0) first_bad = context + other.first_bad;
    count += other.count;
    bad += other.bad;
    max_error = std::max(max_error, other.max_error);
    worst_ratio = std::max(worst_ratio, other.worst_ratio);
  }
};

struct RunResult {
  Check check;
  rt::CompileTimes compile;
  double run_seconds = 0;        // the launch on the device
  double reference_seconds = 0;  // the host reference (Eigen, double precision)
};

// Fresh random inputs in [-1, 1] (`seed`), a poisoned output, a launch, and a check against
// relu(A @ B) computed by Eigen in double precision.
RunResult run_matmul_relu(rt::Device& device, int64_t m, int64_t n, int64_t k, DType dtype, uint64_t seed,
                          rt::CompileCache* cache = nullptr);

}  // namespace weft::gemm
