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
// Both checks as one: counts added, the worse error, the first failure.
Check merge(const Check& a, const Check& b);

// A bound on a Hopper wgmma's accumulation error of C = A * B^T (A [M, K], B [N, K]), element by
// element, for `input` (bfloat16 or an fp8 format):
// - bf16: products are exact in fp32 and summed in fp32; 1e-6 of the sum of |products| bounds
//   the rounding of K additions.
// - fp8: wgmma adds each MMA's 32 products and the accumulator with about 14 significant bits
//   aligned to the largest of them (DeepSeek-V3's report measured this on Hopper; cuBLASLt calls
//   it fast accumulation): each of the 33 addends may lose 2^-12 of that largest magnitude, which
//   is at most max(|running sum|, max|a| * max|b| over the 32 columns). A worst case, linear in
//   K (run_hopper_gemm's Integers inputs are the sharp check).
Eigen::MatrixXd accumulation_bound(DType input, const Eigen::MatrixXd& a, const Eigen::MatrixXd& b);

// Launches `kernel` (D[m, n] float32 in slot 0 = A[m, k] @ B[k, n], A and B of `input` in slots
// 1 and 2) on random inputs, or an identity B (then D must equal A exactly), and checks D.
RunResult run_matrix_product(rt::Device& device, const UOp& kernel, int64_t m, int64_t n, int64_t k, DType input, bool identity_b,
                             uint64_t seed, rt::CompileCache* cache);

// Launches `kernel` (C[m, n] of `output` in slot 0 = A[m, k] * B[n, k]^T, A and B of `input`
// (bf16, or an fp8 the kernel's MMA takes) in slots 1 and 2, kernel variables M, N, K) on random
// inputs, or an identity B (needs n == k; then C must equal A exactly), and checks C against a
// double-precision reference within fp32 accumulation of the exact products. `more_variables`
// are the kernel's other variables (a persistent kernel's grid size, say).
RunResult run_transposed_product(rt::Device& device, const UOp& kernel, DType input, int64_t m, int64_t n, int64_t k, DType output,
                                 bool identity_b, uint64_t seed, rt::CompileCache* cache,
                                 const std::map<std::string, rt::ScalarValue>& more_variables = {});

}  // namespace weft::gemm
