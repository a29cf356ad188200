#include "cublas.h"

#include <dlfcn.h>

#include <string>

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

template <typename F>
void resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) throw Error(std::string("cuBLAS peer: the library has no ") + name);
}

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
  const char* names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13"};
  for (const char* n : names)
    if ((api_->lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
  if (!api_->lib) throw Error("cuBLAS peer: libcublas not found (tried libcublas.so.13, .so.12, .so, /usr/local/cuda/lib64)");
  resolve(api_->lib, "cublasCreate_v2", api_->create);
  resolve(api_->lib, "cublasDestroy_v2", api_->destroy);
  resolve(api_->lib, "cublasGemmEx", api_->gemm_ex);
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
