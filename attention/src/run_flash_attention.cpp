// run_flash_attention: random inputs, a launch, and a check against a double-precision softmax.
#include <chrono>
#include <cmath>
#include <limits>

#include "host_matrix.h"
#include "weft/attention/flash_attention.h"

namespace weft::attention {

namespace {

// softmax(Q K^T * scale, masked) V of one head in double precision, and in `magnitude` the
// same product with |V|: the bound of what P's rounding to bf16 can move each output.
Eigen::MatrixXd reference(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v, const FlashAttentionSpec& spec,
                          Eigen::MatrixXd& magnitude) {
  Eigen::MatrixXd p = (q * k.transpose()) * spec.softmax_scale();
  for (Eigen::Index i = 0; i < p.rows(); ++i) {
    if (spec.causal)
      for (Eigen::Index j = i + 1; j < p.cols(); ++j) p(i, j) = -std::numeric_limits<double>::infinity();
    const double top = p.row(i).maxCoeff();
    p.row(i) = (p.row(i).array() - top).exp().matrix();
    p.row(i) /= p.row(i).sum();
  }
  magnitude = p * v.cwiseAbs();
  return p * v;
}

}  // namespace

gemm::RunResult run_flash_attention(rt::Device& device, const FlashAttentionSpec& spec, int64_t heads, int64_t sq, int64_t sk, uint64_t seed,
                                    rt::CompileCache* cache) {
  if (heads < 1 || sq < 1 || sk < 1)
    throw Error("run_flash_attention: heads, SQ and SK >= 1; got " + std::to_string(heads) + ", " + std::to_string(sq) + ", " + std::to_string(sk));
  gemm::RunResult r;
  rt::CompiledKernel compiled = rt::CompiledKernel::compile(device, flash_attention(device.arch(), spec), cache);
  r.compile = compiled.times();
  const int64_t d = spec.head_dim;
  const DType bf16 = dtypes::bfloat16;
  std::mt19937_64 gen(seed);
  // Q and K in [-2, 2] (twice bf16 values in [-1, 1], exact): logits spread over several units,
  // so that the softmax is far from uniform and a wrong maximum, sum or mask shows.
  Eigen::MatrixXd eq, ek, ev;
  gemm::random_matrix(bf16, heads * sq, d, gen, eq);
  gemm::random_matrix(bf16, heads * sk, d, gen, ek);
  const auto v_bytes = gemm::random_matrix(bf16, heads * sk, d, gen, ev);
  eq *= 2;
  ek *= 2;
  const rt::OwnedArray q(device, rt::upload(device, bf16, gemm::matrix_bytes(bf16, eq), "Q"));
  const rt::OwnedArray k(device, rt::upload(device, bf16, gemm::matrix_bytes(bf16, ek), "K"));
  const rt::OwnedArray v(device, rt::upload(device, bf16, v_bytes, "V"));
  const rt::OwnedArray o(device, rt::upload(device, bf16, std::vector<uint8_t>(static_cast<size_t>(heads * sq * d * 2), 0xCD), "O"));
  auto t = std::chrono::steady_clock::now();
  const rt::DeviceArray args[] = {o, q, k, v};
  compiled.launch(device, args, {{"BH", heads}, {"SQ", sq}, {"SK", sk}});
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const Eigen::MatrixXd got = gemm::read_matrix(bf16, rt::download(device, o), heads * sq, d);
  t = std::chrono::steady_clock::now();
  Eigen::MatrixXd want(heads * sq, d), tolerance(heads * sq, d);
  for (int64_t h = 0; h < heads; ++h) {
    Eigen::MatrixXd magnitude;
    want.middleRows(h * sq, sq) = reference(eq.middleRows(h * sq, sq), ek.middleRows(h * sk, sk), ev.middleRows(h * sk, sk), spec, magnitude);
    // P enters P V rounded to bf16 (relative error <= 2^-9 for each p_j) while the row sum adds
    // the fp32 P: O moves by at most 2^-9 of sum_j p_j |v_j|. O is stored as bf16 (2^-9 of
    // |O|). The rest (fp32 logits of exact bf16 products, the hardware exp2's ulp, fp32 sums) is
    // below 2^-16 relative: 2^-8 of each leaves a factor 2 for it.
    tolerance.middleRows(h * sq, sq) = (std::ldexp(1.0, -8) * (magnitude + want.middleRows(h * sq, sq).cwiseAbs())).array() + 1e-6;
  }
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  r.check = gemm::compare(got, want, tolerance, "O");
  return r;
}

}  // namespace weft::attention
