#include "cublas.h"

#include <string>

#include "cuda_library.h"
#include "weft/dsl/error.h"

namespace weft::bench {

namespace {

// The values of cuBLAS's and CUDA's enums this file passes (cublas_api.h, library_types.h of
// CUDA 13), so that no CUDA header is needed to build it.
constexpr int kOpN = 0, kOpT = 1;              // cublasOperation_t
constexpr int kComputeF32 = 68;                // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;               // CUBLAS_GEMM_DEFAULT
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;  // cudaDataType

int cuda_type(DType d) {
  if (d == dtypes::bfloat16) return kR16BF;
  if (d == dtypes::float16) return kR16F;
  if (d == dtypes::float32) return kR32F;
  throw Error("cuBLAS peer: no cudaDataType for " + d.name());
}

constexpr const char* kPeer = "cuBLAS peer";

}  // namespace

struct Cublas::Api {
  void* lib = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int, const void*, void*, int, int,
                 int, int) = nullptr;
};

Cublas& Cublas::get() {
  static Cublas instance;
  return instance;
}

Cublas::Cublas() : api_(std::make_unique<Api>()) {
  api_->lib = open_cuda_library(kPeer, "libcublas");
  resolve(api_->lib, kPeer, "cublasCreate_v2", api_->create);
  resolve(api_->lib, kPeer, "cublasDestroy_v2", api_->destroy);
  resolve(api_->lib, kPeer, "cublasGemmEx", api_->gemm_ex);
  if (const int s = api_->create(&handle_)) throw Error("cuBLAS peer: cublasCreate failed with status " + std::to_string(s));
}

Cublas::~Cublas() {
  if (handle_) api_->destroy(handle_);
}

void Cublas::gemm(int64_t m, int64_t n, int64_t k, DType input, DType output, uint64_t a, uint64_t b, uint64_t c, bool b_transposed) {
  // cuBLAS is column-major: row-major C = A * op(B) is column-major C^T = op(B)^T * A^T, where a
  // row-major X is the column-major X^T with the same leading dimension.
  const float alpha = 1.0f, beta = 0.0f;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  const int s = api_->gemm_ex(handle_, b_transposed ? kOpT : kOpN, kOpN, ni, mi, ki, &alpha, reinterpret_cast<const void*>(b),
                              cuda_type(input), b_transposed ? ki : ni, reinterpret_cast<const void*>(a), cuda_type(input), ki, &beta,
                              reinterpret_cast<void*>(c), cuda_type(output), ni, kComputeF32, kGemmDefault);
  if (s) throw Error("cuBLAS peer: cublasGemmEx failed with status " + std::to_string(s));
}

}  // namespace weft::bench
