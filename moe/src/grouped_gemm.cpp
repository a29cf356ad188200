#include "weft/moe/grouped_gemm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "host_matrix.h"
#include "weft/gemm/block_gemm.h"
#include "weft/gemm/hopper_gemm.h"

namespace weft::moe {

using namespace tile;

namespace {

// Bounds the kernel's variables promise (the launch checks them): rows and sizes within int32
// element counts where the index lowering can prove it.
constexpr int64_t kMaxRows = int64_t{1} << 24, kMaxDim = int64_t{1} << 16, kMaxExperts = int64_t{1} << 12;

std::string text(int64_t v) { return std::to_string(v); }

}  // namespace

int64_t grouped_gemm_block_rows(std::string_view arch) { return gemm::gemm_block_shape(arch).block_m; }

DType grouped_gemm_input(std::string_view arch, GroupedPrecision precision) {
  if (precision == GroupedPrecision::Bfloat16) return dtypes::bfloat16;
  return arch.starts_with("sm_") ? dtypes::fp8e4m3 : tile::mfma_fp8(arch);
}

UOp grouped_gemm(std::string_view arch, int64_t block_rows, GroupedPrecision precision, gemm::HopperStore sm90_store) {
  const bool fp8 = precision == GroupedPrecision::Fp8RowScaled;
  if (fp8 && arch.starts_with("sm_") && arch != "sm_90")
    throw Error("grouped_gemm: fp8 inputs need sm_90 (wgmma's fp8 MMA) on NVIDIA; " + std::string(arch) + " has only the bfloat16 form");
  const DType input = grouped_gemm_input(arch, precision);
  const int64_t row_block = grouped_gemm_block_rows(arch);
  if (block_rows < row_block || block_rows % row_block)
    throw Error("grouped_gemm: the plan's block_rows (" + text(block_rows) + ") must be a multiple of the kernel's row block on " +
                std::string(arch) + " (" + text(row_block) + "), so that no block of the kernel holds rows of two experts");
  // Hopper: hopper_gemm's warp-specialized TMA and wgmma schedule (its row block is the same).
  if (arch == "sm_90") {
    gemm::HopperGemmSpec spec{input, dtypes::bfloat16, {}, block_rows};
    spec.store = sm90_store;
    if (fp8) spec.epilogue.scale = gemm::OperandScale::PerRow;
    return gemm::hopper_gemm(spec);
  }
  const gemm::GemmBlockShape s = gemm::gemm_block_shape(arch, input);
  const UOp rows = variable("ROWS", block_rows, kMaxRows), n = variable("N", 1, kMaxDim), k = variable("K", 8, kMaxDim),
            experts = variable("E", 1, kMaxExperts);
  const gl ys = global(0, rows, n, dtypes::bfloat16), xs = global(1, rows, k, input);
  const gl w = global(2, experts.cast(dtypes::index) * n.cast(dtypes::index), k, input);  // [E, N, K] as [E * N, K]
  const UOp block_expert = placeholder(std::vector<UOp>{rows.cast(dtypes::index) / block_rows}, dtypes::int32, 3);
  const Workgroup wg = gemm::gemm_workgroup(arch, s, {gemm::tiles_of(n, s.block_n), rows.cast(dtypes::index) / s.block_m});
  const UOp row0 = wg.block(1) * s.block_m, col0 = wg.block(0) * s.block_n;

  // The block's expert: one load, the same address in every lane (the plan block holding the
  // kernel block's rows). A block past the last expert (-1) runs no K step and stores nothing;
  // its prologue's fills read expert 0 (in bounds, never used).
  const UOp expert = block_expert[wg.block(1) / (block_rows / s.block_m)].load();
  const UOp used = expert >= expert.const_like(Wide(0));
  const UOp e = max(expert, expert.const_like(Wide(0))).cast(dtypes::index);
  const UOp steps = gemm::tiles_of(k, s.k_step) * used.cast(dtypes::index);
  acc sum = gemm::gemm_block(wg, s, xs, w, row0, e * n.cast(dtypes::index) + col0, steps);
  // No fill left in flight when the workgroup stores and leaves (the last steps' fills of
  // zeros past K, or an unused block's prologue).
  sum.buffer = sum.buffer.after({wait_counts({.vm = 0}, {sum.buffer.src(1)})});

  const UOp wave_row0 = row0 + wg.wave_row() * s.wave_m(), wave_col0 = col0 + wg.wave_col() * s.wave_n();
  if (fp8) {
    // fp8: each lane scales its accumulators by its rows' x_scale and its columns' w_scale[e].
    const gl x_scale = global(4, rows, constant(Wide(1)), dtypes::float32);
    const gl w_scale = global(5, experts, n, dtypes::float32);  // [E, N]
    sum = mul_col(mul_row(sum, load_rows(wg, x_scale, sum, wave_row0, constant(Wide(0)))), load_cols(wg, w_scale, sum, e, wave_col0));
  }
  // An unused block sees an output of no rows: every store is masked.
  const gl out{ys.buffer, used.where(ys.rows, constant(Wide(0))), ys.cols, ys.first_row};
  return sink({.name = "grouped_gemm", .dependent_launch = true}, {store(wg, out, sum, wave_row0, wave_col0)});
}

GroupedGemm::GroupedGemm(rt::Device& device, const MoeShape& shape, rt::CompileCache* cache, GroupedPrecision precision)
    : shape_(shape), arch_(device.arch()), precision_(precision) {
  shape_.validate();
  if (shape_.max_rows() > kMaxRows) throw Error("grouped_gemm: " + text(shape_.max_rows()) + " rows; at most " + text(kMaxRows));
  if (shape_.experts > kMaxExperts) throw Error("grouped_gemm: " + text(shape_.experts) + " experts; at most " + text(kMaxExperts));
  kernel_ = rt::CompiledKernel::compile(device, grouped_gemm(arch_, shape_.block_rows, precision), cache);
  cache_ = cache;
}

// On sm_90 the kernel stores Ys by TMA, whose tensor maps need rows of a multiple of 16 bytes;
// an N that Ys's rows do not allow (hopper_gemm's rule, for_columns; Ys is its default bf16
// output) takes the masked-store form, compiled at its first launch.
const rt::CompiledKernel& GroupedGemm::kernel_for(rt::Device& device, int64_t n) const {
  if (arch_ != "sm_90" || gemm::HopperGemmSpec{}.for_columns(n).store == gemm::HopperStore::Tma) return kernel_;
  if (!direct_store_)
    direct_store_ = rt::CompiledKernel::compile(device, grouped_gemm(arch_, shape_.block_rows, precision_, gemm::HopperStore::Direct), cache_);
  return *direct_store_;
}

std::vector<const rt::CompiledKernel*> GroupedGemm::compiled() const {
  std::vector<const rt::CompiledKernel*> out{&kernel_};
  if (direct_store_) out.push_back(&*direct_store_);
  return out;
}

void GroupedGemm::check_sizes(int64_t n, int64_t k) const {
  // K: the bf16 fills' 16-byte vectors zero-fill past K only whole; TMA's rows are 16 bytes.
  const int64_t k_multiple = precision_ == GroupedPrecision::Fp8RowScaled ? 16 : 8;
  if (n < 1 || n > kMaxDim || k < k_multiple || k > kMaxDim || k % k_multiple)
    throw Error("grouped_gemm: N in [1, " + text(kMaxDim) + "] and K in [" + text(k_multiple) + ", " + text(kMaxDim) + "] a multiple of " +
                text(k_multiple) + " (16 bytes of the input); got N=" + text(n) + ", K=" + text(k));
  // CDNA's direct-to-LDS fills address a buffer with a 32-bit byte offset.
  const int64_t limit = int64_t{1} << 31;
  const int64_t itemsize = grouped_gemm_input(arch_, precision_).itemsize();
  if (!arch_.starts_with("sm_") && (shape_.experts * n * k * itemsize > limit || shape_.max_rows() * k * itemsize > limit))
    throw Error("grouped_gemm: W (" + text(shape_.experts * n * k * itemsize) + " bytes) and Xs (" + text(shape_.max_rows() * k * itemsize) +
                " bytes) must each fit 2^31 bytes on " + arch_ + ": the buffer instructions' offsets are 32-bit");
}

void GroupedGemm::launch(rt::Device& device, int64_t n, int64_t k, const rt::DeviceArray& ys, const rt::DeviceArray& xs,
                         const rt::DeviceArray& w, const rt::DeviceArray& block_expert) const {
  if (precision_ != GroupedPrecision::Bfloat16) throw Error("grouped_gemm: this kernel takes fp8 inputs and their scales (launch_fp8)");
  check_sizes(n, k);
  const rt::DeviceArray args[] = {ys, xs, w, block_expert};
  kernel_for(device, n).launch(device, args, {{"ROWS", shape_.max_rows()}, {"N", n}, {"K", k}, {"E", shape_.experts}});
}

void GroupedGemm::launch_fp8(rt::Device& device, int64_t n, int64_t k, const rt::DeviceArray& ys, const rt::DeviceArray& xs8,
                             const rt::DeviceArray& w8, const rt::DeviceArray& block_expert, const rt::DeviceArray& x_scale,
                             const rt::DeviceArray& w_scale) const {
  if (precision_ != GroupedPrecision::Fp8RowScaled) throw Error("grouped_gemm: this kernel takes bfloat16 inputs (launch)");
  check_sizes(n, k);
  const rt::DeviceArray args[] = {ys, xs8, w8, block_expert, x_scale, w_scale};
  kernel_for(device, n).launch(device, args, {{"ROWS", shape_.max_rows()}, {"N", n}, {"K", k}, {"E", shape_.experts}});
}

namespace {

// The expert of row r (-1: a block past the last expert).
int32_t expert_of_row(const MoeShape& s, const RoutingPlan& p, int64_t r) { return p.block_expert[static_cast<size_t>(r / s.block_rows)]; }

}  // namespace

gemm::RunResult run_grouped_gemm(rt::Device& device, const MoeShape& shape, int64_t n, int64_t k, uint64_t seed, rt::CompileCache* cache) {
  return run_grouped_gemm(device, shape, n, k, GroupedGemmInputs{}, seed, cache);
}

gemm::RunResult run_grouped_gemm(rt::Device& device, const MoeShape& shape, int64_t n, int64_t k, const GroupedGemmInputs& inputs,
                                 uint64_t seed, rt::CompileCache* cache) {
  if (inputs.identity_expert >= shape.experts) throw Error("run_grouped_gemm: identity expert " + text(inputs.identity_expert) + " past the " + text(shape.experts) + " experts");
  if (inputs.identity_expert >= 0 && n != k) throw Error("run_grouped_gemm: an identity weight needs N == K");
  gemm::RunResult r;
  const GroupedPrecision precision = inputs.fp8 ? GroupedPrecision::Fp8RowScaled : GroupedPrecision::Bfloat16;
  const DType input = grouped_gemm_input(device.arch(), precision);
  const GroupedGemm gg(device, shape, cache, precision);
  r.compile = gg.kernel_for(device, n).times();  // the kernel this N runs, compiled before the timed launch
  std::mt19937_64 gen(seed);
  const std::vector<int32_t> ids = inputs.expert_ids.empty() ? random_plan(shape, gen).expert_ids : inputs.expert_ids;
  const RoutingPlan plan = plan_reference(shape, ids, std::vector<float>(ids.size(), 1.0f / static_cast<float>(shape.top_k)));

  // Xs: random real rows, zero padding rows. W: random, the identity for `identity_expert`.
  const int64_t rows = shape.max_rows(), E = shape.experts;
  Eigen::MatrixXd xs_exact, w_exact;
  gemm::random_matrix(input, rows, k, gen, xs_exact);
  for (int64_t row = 0; row < rows; ++row)
    if (plan.row_token[static_cast<size_t>(row)] < 0) xs_exact.row(row).setZero();
  gemm::random_matrix(input, E * n, k, gen, w_exact);
  if (inputs.identity_expert >= 0) w_exact.middleRows(inputs.identity_expert * n, n) = Eigen::MatrixXd::Identity(n, k);
  const rt::OwnedArray xs(device, rt::upload(device, input, gemm::matrix_bytes(input, xs_exact), "Xs"));
  const rt::OwnedArray w(device, rt::upload(device, input, gemm::matrix_bytes(input, w_exact), "W"));
  // fp8: float32 scales in [0.25, 2.25], Xs's per row and W's per expert column (ones for bf16).
  Eigen::VectorXd x_scale = Eigen::VectorXd::Ones(rows), w_scale = Eigen::VectorXd::Ones(E * n);
  std::vector<rt::OwnedArray> scales;
  if (inputs.fp8) {
    for (Eigen::VectorXd* v : {&x_scale, &w_scale}) {
      Eigen::MatrixXd drawn;
      gemm::random_matrix(dtypes::float32, v->size(), 1, gen, drawn);
      *v = (drawn.col(0).array().abs() * 2.0 + 0.25).matrix();
      const std::vector<uint8_t> bytes = gemm::matrix_bytes(dtypes::float32, *v);  // rounded to float32
      *v = gemm::read_matrix(dtypes::float32, bytes, v->size(), 1).col(0);
      scales.emplace_back(device, rt::upload(device, dtypes::float32, bytes, v == &x_scale ? "x_scale" : "w_scale"));
    }
  }
  std::vector<uint8_t> be_bytes(plan.block_expert.size() * 4);
  std::memcpy(be_bytes.data(), plan.block_expert.data(), be_bytes.size());
  const rt::OwnedArray block_expert(device, rt::upload(device, dtypes::int32, be_bytes, "block_expert"));
  constexpr uint8_t kPoison = 0xCD;
  const rt::OwnedArray ys(device, rt::upload(device, dtypes::bfloat16, std::vector<uint8_t>(static_cast<size_t>(rows * n * 2), kPoison), "Ys"));

  auto t = std::chrono::steady_clock::now();
  if (inputs.fp8) gg.launch_fp8(device, n, k, ys, xs, w, block_expert, scales[0], scales[1]);
  else gg.launch(device, n, k, ys, xs, w, block_expert);
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const std::vector<uint8_t> ys_bytes = rt::download(device, ys);

  // Rows of used blocks: real rows against Xs * W[e]^T (times the scales), the identity expert's
  // exactly (bf16; fp8: up to the scales' fp32 products and the output's rounding), padding rows
  // exactly zero (Xs's are zero). The tolerance: the accumulation's bound (fp32 for bf16, wgmma's
  // shortened fp8 accumulation, gemm::accumulation_bound) times the scales, then the output's
  // rounding.
  t = std::chrono::steady_clock::now();
  std::vector<int64_t> used_rows;
  for (int64_t row = 0; row < rows; ++row)
    if (expert_of_row(shape, plan, row) >= 0) used_rows.push_back(row);
  const auto m = static_cast<int64_t>(used_rows.size());
  Eigen::MatrixXd got(m, n), want(m, n), tolerance(m, n);
  // CDNA's fp8 MFMAs accumulate exact products in full fp32, as the bf16 ones do; wgmma's fp8
  // accumulation is shorter (gemm::accumulation_bound).
  const DType accumulated_as = device.arch().starts_with("sm_") ? input : dtypes::bfloat16;
  const Eigen::MatrixXd all = gemm::read_matrix(dtypes::bfloat16, ys_bytes, rows, n);
  for (int64_t i = 0; i < m; ++i) {
    const int64_t row = used_rows[static_cast<size_t>(i)], e = expert_of_row(shape, plan, row);
    const auto we = w_exact.middleRows(e * n, n);
    const Eigen::RowVectorXd column_scale = x_scale(row) * w_scale.segment(e * n, n).transpose();
    got.row(i) = all.row(row);
    want.row(i) = (xs_exact.row(row) * we.transpose()).cwiseProduct(column_scale);
    const bool padding = plan.row_token[static_cast<size_t>(row)] < 0, identity = e == inputs.identity_expert;
    const Eigen::RowVectorXd rounding = std::ldexp(1.0, -8) * want.row(i).cwiseAbs();
    if (padding || (identity && !inputs.fp8)) tolerance.row(i).setZero();
    else if (identity) tolerance.row(i) = rounding.array() * 1.0001;
    else
      tolerance.row(i) = gemm::accumulation_bound(accumulated_as, xs_exact.row(row), we).cwiseProduct(column_scale.cwiseAbs()).array() + rounding.array() + 1e-7;
  }
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  r.check = gemm::compare(got, want, tolerance, "Ys (rows of used blocks, in order)");
  // Rows of unused blocks: not written, still the poison. Every element of Ys is checked once.
  for (int64_t row = 0; row < rows; ++row) {
    if (expert_of_row(shape, plan, row) >= 0) continue;
    for (int64_t c = 0; c < n; ++c) {
      ++r.check.count;
      const size_t at = static_cast<size_t>((row * n + c) * 2);
      if ((ys_bytes[at] != kPoison || ys_bytes[at + 1] != kPoison) && r.check.bad++ == 0)
        r.check.first_bad = "Ys[" + text(row) + ", " + text(c) + "] of an unused block (expert -1) was written";
    }
  }
  return r;
}

}  // namespace weft::moe
