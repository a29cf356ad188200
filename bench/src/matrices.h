// Host-side matrices for the GEMM lines: random inputs as a dtype's bytes, outputs read back as
// doubles, and the comparison of weft's output with the peer's.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "weft/bench/result.h"
#include "weft/dsl/dtype.h"

namespace weft::bench {

// rows x cols values uniform in [-1, 1], rounded to `dtype` (float32, float16, bfloat16, an fp8
// format); `values` gets them as floats.
std::vector<uint8_t> random_matrix(DType dtype, int64_t rows, int64_t cols, uint64_t seed, std::vector<float>& values);
// Every element of `bytes` (of `dtype`) as a double.
std::vector<double> as_doubles(DType dtype, const std::vector<uint8_t>& bytes);
// max |got - want| / max |want|, ok when at most `tolerance`.
Check compare(const std::vector<double>& got, const std::vector<double>& want, double tolerance, std::string against);
// A vector's elements as bytes (for uploads and for a framework peer's input files).
template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace weft::bench
