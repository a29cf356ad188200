// Host-side matrices for the GEMM entry points: random device inputs with their exact values,
// and the comparison of a device result with a double-precision reference.
#pragma once

#include <Eigen/Dense>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "weft/gemm/matmul_relu.h"

namespace weft::gemm {

// Random values of `dtype` (float32, float16, bfloat16, an fp8 format) in [-1, 1]: their device bytes, and in
// `exact` the values those bytes hold.
std::vector<uint8_t> random_matrix(DType dtype, int64_t rows, int64_t cols, std::mt19937_64& gen, Eigen::MatrixXd& exact);
// The bytes of `exact` (whose values must be representable) as `dtype`.
std::vector<uint8_t> matrix_bytes(DType dtype, const Eigen::MatrixXd& exact);
// The device matrix's values.
Eigen::MatrixXd read_matrix(DType dtype, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols);

// Compares element by element: |got - want| <= tolerance(i, j). NaN never passes.
Check compare(const Eigen::MatrixXd& got, const Eigen::MatrixXd& want, const Eigen::MatrixXd& tolerance, const char* name);

// Launches `kernel` (D[m, n] float32 in slot 0 = A[m, k] @ B[k, n], A and B of `input` in slots
// 1 and 2) on random inputs, or an identity B (then D must equal A exactly), and checks D.
RunResult run_matrix_product(rt::Device& device, const UOp& kernel, int64_t m, int64_t n, int64_t k, DType input, bool identity_b,
                             uint64_t seed, rt::CompileCache* cache);

// Launches `kernel` (C[m, n] of `output` in slot 0 = A[m, k] * B[n, k]^T, bf16 A and B in slots 1
// and 2, kernel variables M, N, K) on random inputs, or an identity B (needs n == k; then C must
// equal A exactly), and checks C against a double-precision reference. `more_variables` are the
// kernel's other variables (a persistent kernel's grid size, say).
RunResult run_transposed_product(rt::Device& device, const UOp& kernel, int64_t m, int64_t n, int64_t k, DType output, bool identity_b,
                                 uint64_t seed, rt::CompileCache* cache, const std::map<std::string, rt::ScalarValue>& more_variables = {});

}  // namespace weft::gemm
