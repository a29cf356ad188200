// cuBLASLt, the fp8 GEMM peer on NVIDIA GPUs (cublasGemmEx takes no fp8), loaded with dlopen
// as cuBLAS is (cublas.h): weft builds and runs where it is absent, and `weft bench` then says
// so instead of a number. One plan (descriptors, layouts and the heuristic's best algorithm) is
// made once per shape, outside the timed launches.
#pragma once

#include <cstdint>
#include <memory>

#include "weft/dsl/dtype.h"

namespace weft::bench {

// Row-major C[M, N] = scale_a * scale_b * (A[M, K] * B[N, K]^T), A and B of `input` (bfloat16
// or float8_e4m3fn), C of `output`, fp32 compute. The scales are device pointers to one float
// each (fp8 only; 0 for none). `fast_accumulation`: cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM
// (fp8: accumulate in the MMA's accumulator throughout, as hopper_gemm does, instead of
// promoting partial sums to a separate fp32 sum).
struct LtGemm {
  int64_t m = 0, n = 0, k = 0;
  DType input, output;
  bool fast_accumulation = false;
};

class CublasLtPlan {
 public:
  // Throws weft::Error naming the library or the call that failed, or saying that cuBLASLt has
  // no algorithm for the shape.
  explicit CublasLtPlan(const LtGemm& gemm);
  ~CublasLtPlan();
  CublasLtPlan(const CublasLtPlan&) = delete;
  CublasLtPlan& operator=(const CublasLtPlan&) = delete;

  // The device workspace the chosen algorithm needs, in bytes.
  uint64_t workspace_bytes() const;
  // Runs on the default stream. Addresses are device pointers.
  void run(uint64_t a, uint64_t b, uint64_t c, uint64_t scale_a, uint64_t scale_b, uint64_t workspace) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace weft::bench
