#include "host_matrix.h"

#include <chrono>
#include <algorithm>
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
  if (dtype.is_fp8()) bytes[at] = static_cast<uint8_t>(h);
  else std::memcpy(&bytes[at * 2], &h, 2);
}

double get(DType dtype, const std::vector<uint8_t>& bytes, size_t at) {
  if (dtype == dtypes::float32) {
    float f;
    std::memcpy(&f, &bytes[at * 4], 4);
    return f;
  }
  uint16_t h = 0;
  if (dtype.is_fp8()) h = bytes[at];
  else std::memcpy(&h, &bytes[at * 2], 2);
  return decode_float(*dtype.float_format(), h);
}

void check_dtype(DType dtype) {
  if (dtype != dtypes::float32 && dtype != dtypes::float16 && dtype != dtypes::bfloat16 && !dtype.is_fp8())
    throw Error("host matrices are float32, float16, bfloat16 or fp8, not " + dtype.name());
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

// Launches `kernel` (D = A @ B) on random (or identity-B) inputs and checks D.
RunResult run_matrix_product(rt::Device& device, const UOp& kernel, int64_t m, int64_t n, int64_t k, DType input, bool identity_b,
                      uint64_t seed, rt::CompileCache* cache) {
  RunResult r;
  rt::CompiledKernel compiled = rt::CompiledKernel::compile(device, kernel, cache);
  r.compile = compiled.times();
  std::mt19937_64 gen(seed);
  Eigen::MatrixXd ea, eb;
  auto a_bytes = random_matrix(input, m, k, gen, ea);
  std::vector<uint8_t> b_bytes;
  if (identity_b) {
    eb = Eigen::MatrixXd::Identity(k, n);
    b_bytes = matrix_bytes(input, eb);
  } else {
    b_bytes = random_matrix(input, k, n, gen, eb);
  }
  const rt::OwnedArray a(device, rt::upload(device, input, a_bytes, "A")), b(device, rt::upload(device, input, b_bytes, "B"));
  const rt::OwnedArray d(device, rt::upload(device, dtypes::float32, std::vector<uint8_t>(static_cast<size_t>(m * n * 4), 0xCD), "D"));
  auto t = std::chrono::steady_clock::now();
  const rt::DeviceArray args[] = {d, a, b};
  compiled.launch(device, args);
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const Eigen::MatrixXd got = read_matrix(dtypes::float32, rt::download(device, d), m, n);
  t = std::chrono::steady_clock::now();
  const Eigen::MatrixXd want = ea * eb;
  // Identity: exact. Random: fp32 accumulation of k products of 16-bit values.
  const Eigen::MatrixXd tolerance = identity_b ? Eigen::MatrixXd::Zero(m, n)
                                               : Eigen::MatrixXd((1e-6 * (ea.cwiseAbs() * eb.cwiseAbs())).array() + 1e-7);
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  r.check = compare(got, want, tolerance, "D");
  return r;
}


RunResult run_transposed_product(rt::Device& device, const UOp& kernel, DType input, int64_t m, int64_t n, int64_t k, DType output,
                                 bool identity_b, uint64_t seed, rt::CompileCache* cache, const std::map<std::string, rt::ScalarValue>& more_variables) {
  RunResult r;
  rt::CompiledKernel compiled = rt::CompiledKernel::compile(device, kernel, cache);
  r.compile = compiled.times();
  std::mt19937_64 gen(seed);
  Eigen::MatrixXd ea, eb;
  const auto a_bytes = random_matrix(input, m, k, gen, ea);
  std::vector<uint8_t> b_bytes;
  if (identity_b) {
    eb = Eigen::MatrixXd::Identity(n, k);
    b_bytes = matrix_bytes(input, eb);
  } else {
    b_bytes = random_matrix(input, n, k, gen, eb);
  }
  const rt::OwnedArray a(device, rt::upload(device, input, a_bytes, "A")), b(device, rt::upload(device, input, b_bytes, "B"));
  const rt::OwnedArray c(device, rt::upload(device, output, std::vector<uint8_t>(static_cast<size_t>(m * n * output.itemsize()), 0xCD), "C"));
  auto t = std::chrono::steady_clock::now();
  const rt::DeviceArray args[] = {c, a, b};
  std::map<std::string, rt::ScalarValue> variables = more_variables;
  variables.insert({{"M", m}, {"N", n}, {"K", k}});
  compiled.launch(device, args, variables);
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const Eigen::MatrixXd got = read_matrix(output, rt::download(device, c), m, n);
  t = std::chrono::steady_clock::now();
  const Eigen::MatrixXd want = ea * eb.transpose();
  // Identity: exact. Random: fp32 accumulation of K products, then the output's rounding (bf16
  // keeps 8 significant bits: half an ulp is 2^-8 of the value at most).
  const double rounding = output == dtypes::bfloat16 ? std::ldexp(1.0, -8) : 0.0;
  const Eigen::MatrixXd tolerance =
      identity_b ? Eigen::MatrixXd::Zero(m, n)
                 : Eigen::MatrixXd((1e-6 * (ea.cwiseAbs() * eb.cwiseAbs().transpose())).array() + rounding * want.cwiseAbs().array() + 1e-7);
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  r.check = compare(got, want, tolerance, "C");
  return r;
}

Check merge(const Check& a, const Check& b) {
  Check c;
  c.count = a.count + b.count;
  c.bad = a.bad + b.bad;
  c.max_error = std::max(a.max_error, b.max_error);
  c.worst_ratio = std::max(a.worst_ratio, b.worst_ratio);
  c.first_bad = a.first_bad.empty() ? b.first_bad : a.first_bad;
  return c;
}

Eigen::MatrixXd accumulation_bound(DType input, const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  if (input == dtypes::bfloat16) return 1e-6 * (a.cwiseAbs() * b.cwiseAbs().transpose());
  const int64_t k = a.cols(), chunk = 32;
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(a.rows(), b.rows()), bound = sum;
  for (int64_t k0 = 0; k0 < k; k0 += chunk) {
    const int64_t width = std::min(chunk, k - k0);
    const Eigen::VectorXd a_max = a.middleCols(k0, width).cwiseAbs().rowwise().maxCoeff(), b_max = b.middleCols(k0, width).cwiseAbs().rowwise().maxCoeff();
    const Eigen::MatrixXd largest = (a_max * b_max.transpose()).cwiseMax(sum.cwiseAbs());
    bound += (static_cast<double>(width + 1) * std::ldexp(1.0, -12)) * largest;
    sum += a.middleCols(k0, width) * b.middleCols(k0, width).transpose();
  }
  return bound;
}

}  // namespace weft::gemm
