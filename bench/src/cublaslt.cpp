#include "cublaslt.h"

#include <string>

#include "cuda_library.h"
#include "weft/dsl/error.h"

namespace weft::bench {

namespace {

// The values of cuBLASLt's and CUDA's enums and structs this file uses (cublasLt.h,
// cublas_api.h, library_types.h of CUDA 13), so that no CUDA header is needed to build it.
constexpr int kOpN = 0, kOpT = 1;                           // cublasOperation_t
constexpr int kComputeF32 = 68;                             // CUBLAS_COMPUTE_32F
constexpr int kR32F = 0, kR16BF = 14, kR8FE4M3 = 28;        // cudaDataType
constexpr int kDescTransA = 3, kDescTransB = 4;             // cublasLtMatmulDescAttributes_t
constexpr int kDescAScalePointer = 17, kDescBScalePointer = 18, kDescFastAccum = 25;
constexpr int kPrefMaxWorkspace = 1;                        // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
constexpr uint64_t kWorkspaceLimit = 64ull << 20;

struct Algo {  // cublasLtMatmulAlgo_t
  uint64_t data[8];
};
struct Heuristic {  // cublasLtMatmulHeuristicResult_t
  Algo algo;
  size_t workspace_size;
  int state;
  float waves;
  int reserved[4];
};

int cuda_type(DType d) {
  if (d == dtypes::bfloat16) return kR16BF;
  if (d == dtypes::float32) return kR32F;
  if (d == dtypes::fp8e4m3) return kR8FE4M3;
  throw Error("cuBLASLt peer: no cudaDataType for " + d.name());
}

struct Api {
  void* lib = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*desc_create)(void**, int, int) = nullptr;
  int (*desc_destroy)(void*) = nullptr;
  int (*desc_set)(void*, int, const void*, size_t) = nullptr;
  int (*layout_create)(void**, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*layout_destroy)(void*) = nullptr;
  int (*pref_create)(void**) = nullptr;
  int (*pref_destroy)(void*) = nullptr;
  int (*pref_set)(void*, int, const void*, size_t) = nullptr;
  int (*heuristic)(void*, void*, void*, void*, void*, void*, void*, int, Heuristic*, int*) = nullptr;
  int (*matmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*, void*, void*, const Algo*,
                void*, size_t, void*) = nullptr;
  void* handle = nullptr;
};

constexpr const char* kPeer = "cuBLASLt peer";

void check(int status, const char* call) {
  if (status) throw Error(std::string("cuBLASLt peer: ") + call + " failed with status " + std::to_string(status));
}

// The process's one library and handle.
Api& api() {
  static Api a = [] {
    Api a;
    a.lib = open_cuda_library(kPeer, "libcublasLt");
    resolve(a.lib, kPeer, "cublasLtCreate", a.create);
    resolve(a.lib, kPeer, "cublasLtDestroy", a.destroy);
    resolve(a.lib, kPeer, "cublasLtMatmulDescCreate", a.desc_create);
    resolve(a.lib, kPeer, "cublasLtMatmulDescDestroy", a.desc_destroy);
    resolve(a.lib, kPeer, "cublasLtMatmulDescSetAttribute", a.desc_set);
    resolve(a.lib, kPeer, "cublasLtMatrixLayoutCreate", a.layout_create);
    resolve(a.lib, kPeer, "cublasLtMatrixLayoutDestroy", a.layout_destroy);
    resolve(a.lib, kPeer, "cublasLtMatmulPreferenceCreate", a.pref_create);
    resolve(a.lib, kPeer, "cublasLtMatmulPreferenceDestroy", a.pref_destroy);
    resolve(a.lib, kPeer, "cublasLtMatmulPreferenceSetAttribute", a.pref_set);
    resolve(a.lib, kPeer, "cublasLtMatmulAlgoGetHeuristic", a.heuristic);
    resolve(a.lib, kPeer, "cublasLtMatmul", a.matmul);
    check(a.create(&a.handle), "cublasLtCreate");
    return a;
  }();
  return a;
}

}  // namespace

struct CublasLtPlan::State {
  LtGemm gemm;
  void* desc = nullptr;
  void* a_layout = nullptr;  // cuBLASLt's A: our B
  void* b_layout = nullptr;  // cuBLASLt's B: our A
  void* c_layout = nullptr;
  Algo algo{};
  uint64_t workspace = 0;
};

CublasLtPlan::CublasLtPlan(const LtGemm& g) : s_(std::make_unique<State>()) {
  Api& lt = api();
  s_->gemm = g;
  // cuBLASLt is column-major: row-major C[M, N] = A * B^T is column-major C^T[N, M] = B * A^T,
  // where row-major B[N, K] is the column-major K x N matrix B^T (transposed back: op T) and
  // row-major A[M, K] the column-major K x M matrix A^T (op N). fp8 needs exactly this "TN" form.
  check(lt.desc_create(&s_->desc, kComputeF32, kR32F), "cublasLtMatmulDescCreate");
  const int32_t trans_a = kOpT, trans_b = kOpN;
  check(lt.desc_set(s_->desc, kDescTransA, &trans_a, sizeof trans_a), "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(lt.desc_set(s_->desc, kDescTransB, &trans_b, sizeof trans_b), "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (g.input == dtypes::fp8e4m3) {
    const int8_t fast = g.fast_accumulation ? 1 : 0;
    check(lt.desc_set(s_->desc, kDescFastAccum, &fast, sizeof fast), "cublasLtMatmulDescSetAttribute(FAST_ACCUM)");
  }
  check(lt.layout_create(&s_->a_layout, cuda_type(g.input), static_cast<uint64_t>(g.k), static_cast<uint64_t>(g.n), g.k), "cublasLtMatrixLayoutCreate(A)");
  check(lt.layout_create(&s_->b_layout, cuda_type(g.input), static_cast<uint64_t>(g.k), static_cast<uint64_t>(g.m), g.k), "cublasLtMatrixLayoutCreate(B)");
  check(lt.layout_create(&s_->c_layout, cuda_type(g.output), static_cast<uint64_t>(g.n), static_cast<uint64_t>(g.m), g.n), "cublasLtMatrixLayoutCreate(C)");
  void* pref = nullptr;
  check(lt.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t limit = kWorkspaceLimit;
  check(lt.pref_set(pref, kPrefMaxWorkspace, &limit, sizeof limit), "cublasLtMatmulPreferenceSetAttribute");
  Heuristic best{};
  int found = 0;
  const int status = lt.heuristic(lt.handle, s_->desc, s_->a_layout, s_->b_layout, s_->c_layout, s_->c_layout, pref, 1, &best, &found);
  lt.pref_destroy(pref);
  check(status, "cublasLtMatmulAlgoGetHeuristic");
  if (found < 1)
    throw Error("cuBLASLt peer: no algorithm for " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + " " +
                g.input.name() + " -> " + g.output.name());
  s_->algo = best.algo;
  s_->workspace = best.workspace_size;
}

CublasLtPlan::~CublasLtPlan() {
  Api& lt = api();
  for (void* layout : {s_->a_layout, s_->b_layout, s_->c_layout})
    if (layout) lt.layout_destroy(layout);
  if (s_->desc) lt.desc_destroy(s_->desc);
}

uint64_t CublasLtPlan::workspace_bytes() const { return s_->workspace; }

void CublasLtPlan::run(uint64_t a, uint64_t b, uint64_t c, uint64_t scale_a, uint64_t scale_b, uint64_t workspace) const {
  Api& lt = api();
  // The scale pointers are descriptor attributes: set per run (cheap, host-side), A's scale on
  // cuBLASLt's A (our B) and B's on its B (our A).
  const auto ptr = [](uint64_t address) { return reinterpret_cast<void*>(address); };
  if (scale_a || scale_b) {
    void* sa = ptr(scale_b);
    void* sb = ptr(scale_a);
    check(lt.desc_set(s_->desc, kDescAScalePointer, &sa, sizeof sa), "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
    check(lt.desc_set(s_->desc, kDescBScalePointer, &sb, sizeof sb), "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
  }
  const float alpha = 1.0f, beta = 0.0f;
  check(lt.matmul(lt.handle, s_->desc, &alpha, ptr(b), s_->a_layout, ptr(a), s_->b_layout, &beta, ptr(c), s_->c_layout, ptr(c), s_->c_layout,
                  &s_->algo, ptr(workspace), s_->workspace, nullptr),
        "cublasLtMatmul");
}

}  // namespace weft::bench
