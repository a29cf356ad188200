#include "host_matrix.h"

#include <cmath>
#include <cstring>
#include <string>

#include "weft/dsl/float_formats.h"

namespace weft::gemm {
namespace {

void put(DType dtype, std::vector<uint8_t>& bytes, size_t at, double v) {
  if (dtype == dtypes::float32) {
    const auto f = static_cast<float>(v);
    std::memcpy(&bytes[at * 4], &f, 4);
    return;
  }
  const uint16_t h = encode_float(*dtype.float_format(), v);
  std::memcpy(&bytes[at * 2], &h, 2);
}

double get(DType dtype, const std::vector<uint8_t>& bytes, size_t at) {
  if (dtype == dtypes::float32) {
    float f;
    std::memcpy(&f, &bytes[at * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &bytes[at * 2], 2);
  return decode_float(*dtype.float_format(), h);
}

void check_dtype(DType dtype) {
  if (dtype != dtypes::float32 && dtype != dtypes::float16 && dtype != dtypes::bfloat16)
    throw Error("host matrices are float32, float16 or bfloat16, not " + dtype.name());
}

}  // namespace

std::vector<uint8_t> random_matrix(DType dtype, int64_t rows, int64_t cols, std::mt19937_64& gen, Eigen::MatrixXd& exact) {
  check_dtype(dtype);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  exact.resize(rows, cols);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols * dtype.itemsize()));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t at = static_cast<size_t>(i * cols + j);
      put(dtype, bytes, at, d(gen));
      exact(i, j) = get(dtype, bytes, at);
    }
  return bytes;
}

std::vector<uint8_t> matrix_bytes(DType dtype, const Eigen::MatrixXd& exact) {
  check_dtype(dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(exact.size() * dtype.itemsize()));
  for (int64_t i = 0; i < exact.rows(); ++i)
    for (int64_t j = 0; j < exact.cols(); ++j) put(dtype, bytes, static_cast<size_t>(i * exact.cols() + j), exact(i, j));
  return bytes;
}

Eigen::MatrixXd read_matrix(DType dtype, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
  check_dtype(dtype);
  Eigen::MatrixXd m(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m(i, j) = get(dtype, bytes, static_cast<size_t>(i * cols + j));
  return m;
}

Check compare(const Eigen::MatrixXd& got, const Eigen::MatrixXd& want, const Eigen::MatrixXd& tolerance, const char* name) {
  Check c;
  for (int64_t i = 0; i < want.rows(); ++i)
    for (int64_t j = 0; j < want.cols(); ++j) {
      const double err = std::isnan(got(i, j)) ? INFINITY : std::abs(got(i, j) - want(i, j));
      ++c.count;
      c.max_error = std::max(c.max_error, err);
      c.worst_ratio = std::max(c.worst_ratio, tolerance(i, j) > 0 ? err / tolerance(i, j) : (err > 0 ? INFINITY : 0.0));
      if (err > tolerance(i, j) && c.bad++ == 0)
        c.first_bad = std::string(name) + "[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got(i, j)) +
                      ", expected " + std::to_string(want(i, j));
    }
  return c;
}

}  // namespace weft::gemm
