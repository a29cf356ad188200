// Host-side data for the MoE entry points (random routings: plan.h's random_plan): random rows of
// bfloat16 or float32 with the exact values they hold, and comparisons that fill gemm::Check.
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "host_matrix.h"  // gemm::merge (gemm/src, on moe's include path)
#include "weft/gemm/matmul_relu.h"
#include "weft/moe/plan.h"

namespace weft::moe::detail {

// `n` random values in [-1, 1] of `dtype` (bfloat16 or float32): their bytes, and in `exact`
// the values those bytes hold.
std::vector<uint8_t> random_values(DType dtype, size_t n, std::mt19937_64& gen, std::vector<double>& exact);
// The values of device bytes of `dtype` (bfloat16, float32).
std::vector<double> read_values(DType dtype, const std::vector<uint8_t>& bytes);
// The bytes of `values` (each representable in `dtype`).
std::vector<uint8_t> value_bytes(DType dtype, const std::vector<double>& values);

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Element by element |got - want| <= tolerance[i] (NaN never passes); `name` and `row_length`
// name the first bad element as "name[i, j]".
gemm::Check compare(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& tolerance, const std::string& name,
                    int64_t row_length);
// Byte for byte, element by element (`element_bytes` each).
gemm::Check compare_bits(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, size_t element_bytes, const std::string& name,
                         int64_t row_length);
}  // namespace weft::moe::detail
