// Host-side matrices for the GEMM lines: random inputs as a dtype's bytes, outputs read back as
// doubles, and the comparison of weft's output with the peer's.
#pragma once

#include <cstdint>
#include <vector>

#include "weft/bench/result.h"
#include "weft/dsl/dtype.h"

namespace weft::bench {

// rows x cols values uniform in [-1, 1], rounded to `dtype`; `values` gets them as floats.
std::vector<uint8_t> random_matrix(DType dtype, int64_t rows, int64_t cols, uint64_t seed, std::vector<float>& values);
// Every element of `bytes` (of `dtype`) as a double.
std::vector<double> as_doubles(DType dtype, const std::vector<uint8_t>& bytes);
// max |got - want| / max |want|, ok when at most `tolerance`.
Check compare(const std::vector<double>& got, const std::vector<double>& want, double tolerance, std::string against);

}  // namespace weft::bench
