// run_flash_attention: random inputs, a launch, and a check against a double-precision softmax.
#include <chrono>
#include <cmath>
#include <limits>

#include "host_matrix.h"
#include "weft/attention/flash_attention.h"

namespace weft::attention {

namespace {

// softmax(Q K^T * scale, masked) V of one head in double precision; in `magnitude` the same
// product with |V|, the bound of what P's rounding to bf16 can move each output; in `lse` each
// row's log-sum-exp of the masked, scaled logits.
Eigen::MatrixXd reference(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v, const FlashAttentionSpec& spec,
                          Eigen::MatrixXd& magnitude, Eigen::VectorXd& lse) {
  Eigen::MatrixXd p = (q * k.transpose()) * spec.softmax_scale();
  lse.resize(p.rows());
  for (Eigen::Index i = 0; i < p.rows(); ++i) {
    if (spec.causal)
      for (Eigen::Index j = i + 1; j < p.cols(); ++j) p(i, j) = -std::numeric_limits<double>::infinity();
    const double top = p.row(i).maxCoeff();
    p.row(i) = (p.row(i).array() - top).exp().matrix();
    const double sum = p.row(i).sum();
    lse(i) = top + std::log(sum);
    p.row(i) /= sum;
  }
  magnitude = p * v.cwiseAbs();
  return p * v;
}

}  // namespace

gemm::RunResult run_flash_attention(rt::Device& device, const FlashAttentionSpec& spec, int64_t heads, int64_t sq, int64_t sk, uint64_t seed,
                                    rt::CompileCache* cache) {
  if (heads < 1 || sq < 1 || sk < 1)
    throw Error("run_flash_attention: heads, SQ and SK >= 1; got " + std::to_string(heads) + ", " + std::to_string(sq) + ", " + std::to_string(sk));
  if (spec.kv_group < 1 || heads % spec.kv_group)
    throw Error("run_flash_attention: " + std::to_string(heads) + " query heads do not share " + std::to_string(spec.kv_group) + " to a K/V head");
  const int64_t kv_heads = heads / spec.kv_group;
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
  gemm::random_matrix(bf16, kv_heads * sk, d, gen, ek);
  const auto v_bytes = gemm::random_matrix(bf16, kv_heads * sk, d, gen, ev);
  eq *= 2;
  ek *= 2;
  const rt::OwnedArray q(device, rt::upload(device, bf16, gemm::matrix_bytes(bf16, eq), "Q"));
  const rt::OwnedArray k(device, rt::upload(device, bf16, gemm::matrix_bytes(bf16, ek), "K"));
  const rt::OwnedArray v(device, rt::upload(device, bf16, v_bytes, "V"));
  const rt::OwnedArray o(device, rt::upload(device, bf16, std::vector<uint8_t>(static_cast<size_t>(heads * sq * d * 2), 0xCD), "O"));
  const rt::OwnedArray lse(device, rt::upload(device, dtypes::float32, std::vector<uint8_t>(static_cast<size_t>(heads * sq * 4), 0xCD), "LSE"));
  auto t = std::chrono::steady_clock::now();
  std::vector<rt::DeviceArray> args = {o, q, k, v};
  if (spec.lse) args.push_back(lse);
  compiled.launch(device, args, {{"BH", heads}, {"SQ", sq}, {"SK", sk}});
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const Eigen::MatrixXd got = gemm::read_matrix(bf16, rt::download(device, o), heads * sq, d);
  t = std::chrono::steady_clock::now();
  Eigen::MatrixXd want(heads * sq, d), tolerance(heads * sq, d), want_lse(heads * sq, 1), lse_tolerance(heads * sq, 1);
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / spec.kv_group;  // its K and V head
    Eigen::MatrixXd magnitude;
    Eigen::VectorXd row_lse;
    want.middleRows(h * sq, sq) = reference(eq.middleRows(h * sq, sq), ek.middleRows(g * sk, sk), ev.middleRows(g * sk, sk), spec, magnitude, row_lse);
    want_lse.middleRows(h * sq, sq) = row_lse;
    // The logits are fp32 sums of d exact products (each sum off by at most d * 2^-24 of the sum
    // of |products|), the exponentials and the row sum off by a few fp32 ulps (2^-20 of the sum,
    // the same absolute error in its log), and LSE is stored as fp32.
    const Eigen::VectorXd product_bound =
        (eq.middleRows(h * sq, sq).cwiseAbs() * ek.middleRows(g * sk, sk).cwiseAbs().transpose()).rowwise().maxCoeff();
    lse_tolerance.middleRows(h * sq, sq) =
        (spec.softmax_scale() * static_cast<double>(d) * std::ldexp(1.0, -24) * product_bound).array() + std::ldexp(1.0, -20) +
        std::ldexp(1.0, -23) * row_lse.array().abs();
    // P enters P V rounded to bf16 (relative error <= 2^-9 for each p_j) while the row sum adds
    // the fp32 P: O moves by at most 2^-9 of sum_j p_j |v_j|. O is stored as bf16 (2^-9 of
    // |O|). The rest (fp32 logits of exact bf16 products, the hardware exp2's ulp, fp32 sums) is
    // below 2^-16 relative: 2^-8 of each leaves a factor 2 for it.
    tolerance.middleRows(h * sq, sq) = (std::ldexp(1.0, -8) * (magnitude + want.middleRows(h * sq, sq).cwiseAbs())).array() + 1e-6;
  }
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  r.check = gemm::compare(got, want, tolerance, "O");
  if (spec.lse)  // one check of both outputs: O's elements, then LSE's
    r.check = gemm::merge(r.check, gemm::compare(gemm::read_matrix(dtypes::float32, rt::download(device, lse), heads * sq, 1), want_lse, lse_tolerance, "LSE"));
  return r;
}

}  // namespace weft::attention
