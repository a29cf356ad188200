// hopper_gemm's host entry point: random inputs (bf16 or fp8 A and B, float32 scales and bias),
// a poisoned C, one launch, and the check against a double-precision reference of the whole
// epilogue.
#include <chrono>
#include <cmath>

#include "host_matrix.h"
#include "weft/gemm/hopper_gemm.h"

namespace weft::gemm {

namespace {

// The epilogue's host values (empty where absent): bias[N], scale_a[1 or M], scale_b[1 or N].
struct EpilogueValues {
  Eigen::VectorXd bias, scale_a, scale_b;
};

// Random float32 values: bias in [-1, 1], scales in [0.25, 2.25] (of either sign for the bias
// only: a negative scale would hide a swapped scale less well, not more).
Eigen::VectorXd random_vector(int64_t size, bool scale, std::mt19937_64& gen, std::vector<uint8_t>& bytes) {
  Eigen::MatrixXd v;
  random_matrix(dtypes::float32, size, 1, gen, v);
  if (scale) v = (v.array().abs() * 2.0 + 0.25).matrix();
  bytes = matrix_bytes(dtypes::float32, v);
  return read_matrix(dtypes::float32, bytes, size, 1).col(0);
}

double activation(Activation a, double x) {
  switch (a) {
    case Activation::None: return x;
    case Activation::Relu: return std::max(x, 0.0);
    case Activation::Gelu: return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  }
  return x;
}

// Uniform integers in [-3, 3] (exact in bf16 and fp8).
std::vector<uint8_t> integer_matrix(DType dtype, int64_t rows, int64_t cols, std::mt19937_64& gen, Eigen::MatrixXd& exact) {
  std::uniform_int_distribution<int> d(-3, 3);
  exact = Eigen::MatrixXd::NullaryExpr(rows, cols, [&] { return static_cast<double>(d(gen)); });
  return matrix_bytes(dtype, exact);
}

}  // namespace

void check_hopper_device(const rt::Device& device) {
  if (device.arch() != "sm_90") throw Error("hopper_gemm: needs an sm_90 (Hopper) device, this one is " + device.arch());
}

RunResult run_hopper_gemm(rt::Device& device, const HopperGemmSpec& spec, int64_t m, int64_t n, int64_t k, HopperInputs inputs, uint64_t seed,
                          rt::CompileCache* cache) {
  const bool identity_b = inputs == HopperInputs::Identity, integers = inputs == HopperInputs::Integers;
  const int64_t k_multiple = hopper_gemm_k_multiple(spec.input);
  if (m < 1 || n < 1 || k < k_multiple || k % k_multiple)
    throw Error("hopper_gemm: M, N >= 1 and K >= " + std::to_string(k_multiple) + " a multiple of " + std::to_string(k_multiple) + " for " +
                spec.input.name() + " inputs; got M=" + std::to_string(m) + ", N=" + std::to_string(n) + ", K=" + std::to_string(k));
  check_hopper_device(device);
  if (identity_b && n != k) throw Error("run_hopper_gemm: an identity B needs N == K");
  RunResult r;
  rt::CompiledKernel compiled = rt::CompiledKernel::compile(device, hopper_gemm(spec.for_columns(n)), cache);
  r.compile = compiled.times();

  std::mt19937_64 gen(seed);
  Eigen::MatrixXd ea, eb;
  const auto draw = integers ? integer_matrix : random_matrix;
  const std::vector<uint8_t> a_bytes = draw(spec.input, m, k, gen, ea);
  eb = identity_b ? Eigen::MatrixXd::Identity(n, k) : Eigen::MatrixXd();
  const std::vector<uint8_t> b_bytes = identity_b ? matrix_bytes(spec.input, eb) : draw(spec.input, n, k, gen, eb);
  std::vector<rt::OwnedArray> owned;
  owned.emplace_back(device, rt::upload(device, spec.output, std::vector<uint8_t>(static_cast<size_t>(m * n * spec.output.itemsize()), 0xCD), "C"));
  owned.emplace_back(device, rt::upload(device, spec.input, a_bytes, "A"));
  owned.emplace_back(device, rt::upload(device, spec.input, b_bytes, "B"));
  const HopperEpilogue& e = spec.epilogue;
  EpilogueValues values;
  std::vector<uint8_t> bytes;
  if (e.bias) {
    values.bias = random_vector(n, false, gen, bytes);
    owned.emplace_back(device, rt::upload(device, dtypes::float32, bytes, "bias"));
  }
  if (e.scale != OperandScale::None) {
    const bool per_row = e.scale == OperandScale::PerRow;
    values.scale_a = random_vector(per_row ? m : 1, true, gen, bytes);
    owned.emplace_back(device, rt::upload(device, dtypes::float32, bytes, "scale_a"));
    values.scale_b = random_vector(per_row ? n : 1, true, gen, bytes);
    owned.emplace_back(device, rt::upload(device, dtypes::float32, bytes, "scale_b"));
  }
  std::vector<rt::DeviceArray> args;
  for (const rt::OwnedArray& o : owned) args.push_back(o.get());

  auto t = std::chrono::steady_clock::now();
  compiled.launch(device, args, {{"M", m}, {"N", n}, {"K", k}, {"CTAS", hopper_gemm_ctas(device, spec, m, n)}});
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const Eigen::MatrixXd got = read_matrix(spec.output, rt::download(device, owned[0]), m, n);

  t = std::chrono::steady_clock::now();
  const Eigen::MatrixXd sum = ea * eb.transpose();
  const Eigen::MatrixXd bound = integers || identity_b ? Eigen::MatrixXd::Zero(m, n) : accumulation_bound(spec.input, ea, eb);
  Eigen::MatrixXd want(m, n), tolerance(m, n);
  // Beyond the accumulation: the scales' and the bias's fp32 roundings and the fp32 GELU (a few
  // ulps of its argument), the GELU's slope (at most 1.13), and the output's rounding (bf16 keeps
  // 8 significant bits: half an ulp is 2^-8 of the value at most).
  const double slope = e.activation == Activation::Gelu ? 1.13 : 1.0;
  const double rounding = spec.output == dtypes::bfloat16 ? std::ldexp(1.0, -8) : 0.0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double scale = 1.0;
      if (e.scale == OperandScale::PerTensor) scale = values.scale_a(0) * values.scale_b(0);
      if (e.scale == OperandScale::PerRow) scale = values.scale_a(i) * values.scale_b(j);
      const double pre = sum(i, j) * scale + (e.bias ? values.bias(j) : 0.0);
      want(i, j) = activation(e.activation, pre);
      tolerance(i, j) = slope * bound(i, j) * std::abs(scale) + 4e-6 * (std::abs(sum(i, j) * scale) + std::abs(pre)) +
                        rounding * std::abs(want(i, j)) + 1e-7;
    }
  // C is A, bit for bit, or the exact integer sums (fp32 holds them; bf16 rounds them once).
  if ((identity_b || (integers && spec.output == dtypes::float32)) && !e.any()) tolerance.setZero();
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  r.check = compare(got, want, tolerance, "C");
  return r;
}

}  // namespace weft::gemm
