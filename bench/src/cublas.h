// cuBLAS, the GEMM peer on NVIDIA GPUs, loaded with dlopen (as the runtime loads the driver):
// weft builds and runs where it is absent, and `weft bench` then says so instead of a number.
// It runs in the device's current (primary) context, on the default stream, like weft's launches.
#pragma once

#include <cstdint>
#include <memory>

#include "weft/dsl/dtype.h"

namespace weft::bench {

class Cublas {
 public:
  // Throws weft::Error naming the libraries tried or the call that failed.
  static Cublas& get();
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // Row-major C[M, N] = A[M, K] * B (B as K x N, or as N x K with b_transposed: C = A * B^T),
  // inputs `input`, output `output`, fp32 compute (cublasGemmEx, CUBLAS_COMPUTE_32F). Addresses
  // are device pointers.
  void gemm(int64_t m, int64_t n, int64_t k, DType input, DType output, uint64_t a, uint64_t b, uint64_t c, bool b_transposed);

 private:
  struct Api;
  Cublas();
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
};

}  // namespace weft::bench
