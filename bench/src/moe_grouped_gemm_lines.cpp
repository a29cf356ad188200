// The moe suite's grouped GEMM lines: moe::GroupedGemm (Ys = Xs * W[e]^T over every expert's
// row blocks of a routing plan, one launch) against a loop of cuBLAS GEMMs, one per expert over
// its rows (this process), and against PyTorch's grouped matmul (torch._grouped_mm, or a loop
// of torch.matmul where this PyTorch has none; a python3 child of the same job).
#include "moe_grouped_gemm_lines.h"

#include <cmath>
#include <cstring>
#include <random>

#include "cublas.h"
#include "framework_peer.h"
#include "matrices.h"
#include "suite_common.h"
#include "weft/bench/timing.h"
#include "weft/dsl/error.h"
#include "weft/moe/grouped_gemm.h"
#include "weft/moe/plan.h"
#include "weft/runtime/kernel.h"

namespace weft::bench {

namespace {

// Rows compared with PyTorch's (its whole output would be a gigabyte through a file).
constexpr int64_t kPeerRows = 64;
// Both round fp32 sums of bf16 products to bf16, in different orders: one bf16 rounding on top
// of the summation's difference (as the gemm suite allows).
const double kTolerance = 1e-3 + std::ldexp(1.0, -8);

// args: R N K E keep D; inputs xs [R, K], w [D, N, K] (bf16: the D distinct experts' weights,
// expert e's are w[e % D]), ends [E] (int32: each expert's first row past its padded rows, the
// plan's offsets[1..E]).
constexpr const char* kTorchGroupedMm = R"PY(
R, N, K, E, keep, D = args
xs, w = load("xs", torch.bfloat16, R, K), load("w", torch.bfloat16, D, N, K).repeat(E // D, 1, 1)
ends = load("ends", torch.int32, E)
wt = w.transpose(1, 2)
ys = torch.zeros(R, N, dtype=torch.bfloat16, device="cuda")
if hasattr(torch, "_grouped_mm"):
    NAME = "torch._grouped_mm"
    def step():
        ys[:] = torch._grouped_mm(xs, wt, offs=ends)
else:
    NAME = "torch.matmul per expert"
    bounds = [0] + ends.tolist()
    def step():
        for e in range(E):
            if bounds[e + 1] > bounds[e]:
                torch.matmul(xs[bounds[e]:bounds[e + 1]], wt[e], out=ys[bounds[e]:bounds[e + 1]])
def result():
    return ys[:keep]
)PY";

// The inputs of one run: a random plan, Xs with its padding rows zero, and random weights for
// `distinct` experts; expert e's are those of e % distinct (DeepSeek-V3-like weights are 7.5 GB:
// drawing them all on the host would take minutes and tell nothing more).
struct GroupedInputs {
  moe::RoutingPlan plan;
  int64_t distinct = 0;
  std::vector<uint8_t> xs, w;  // w: [distinct, n, k]
  std::vector<float> xs_values, w_values;
};

GroupedInputs grouped_inputs(const moe::MoeShape& s, int64_t n, int64_t k, int64_t distinct, uint64_t seed) {
  GroupedInputs in;
  std::mt19937_64 gen(seed);
  in.plan = moe::random_plan(s, gen);
  in.xs = random_matrix(dtypes::bfloat16, s.max_rows(), k, seed + 1, in.xs_values);
  for (int64_t r = 0; r < s.max_rows(); ++r)
    if (in.plan.row_token[static_cast<size_t>(r)] < 0) {
      std::memset(&in.xs[static_cast<size_t>(r * k * 2)], 0, static_cast<size_t>(k * 2));
      std::fill_n(&in.xs_values[static_cast<size_t>(r * k)], k, 0.0f);
    }
  in.distinct = distinct;
  in.w = random_matrix(dtypes::bfloat16, distinct * n, k, seed + 2, in.w_values);
  return in;
}

// Every expert's weights [E, n, k], expert e's those of e % distinct, on the device.
rt::OwnedArray upload_weights(rt::Device& device, const GroupedInputs& in, int64_t experts) {
  std::vector<uint8_t> all(in.w.size() * static_cast<size_t>(experts / in.distinct));
  for (size_t at = 0; at < all.size(); at += in.w.size()) std::memcpy(&all[at], in.w.data(), in.w.size());
  return rt::OwnedArray(device, rt::upload(device, dtypes::bfloat16, all, "W"));
}

// The real rows (row_token >= 0) of a [R, n] bf16 result, as doubles, in row order.
std::vector<double> real_rows(const moe::RoutingPlan& plan, const std::vector<uint8_t>& ys, int64_t n) {
  const std::vector<double> all = as_doubles(dtypes::bfloat16, ys);
  std::vector<double> out;
  for (size_t r = 0; r < plan.row_token.size(); ++r)
    if (plan.row_token[r] >= 0) out.insert(out.end(), all.begin() + static_cast<int64_t>(r) * n, all.begin() + static_cast<int64_t>(r + 1) * n);
  return out;
}

// The first real row of every expert against Xs * W[e]^T in double precision.
Check host_check(const GroupedInputs& in, const std::vector<uint8_t>& ys, int64_t n, int64_t k) {
  const std::vector<double> got_all = as_doubles(dtypes::bfloat16, ys);
  std::vector<double> got, want;
  const int64_t experts = static_cast<int64_t>(in.plan.counts.size());
  for (int64_t e = 0; e < experts; ++e) {
    if (in.plan.counts[static_cast<size_t>(e)] == 0) continue;
    const int64_t r = in.plan.offsets[static_cast<size_t>(e)];
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < k; ++i)
        sum += static_cast<double>(in.xs_values[static_cast<size_t>(r * k + i)]) * in.w_values[static_cast<size_t>(((e % in.distinct) * n + j) * k + i)];
      want.push_back(sum);
      got.push_back(got_all[static_cast<size_t>(r * n + j)]);
    }
  }
  return compare(got, want, kTolerance, "host reference (double), each expert's first row");
}

}  // namespace

std::vector<Result> grouped_gemm_lines(rt::Device& device, const std::string& name, const moe::MoeShape& s, int64_t n, int64_t k,
                                       int64_t distinct, bool nvidia, const Options& o) {
  if (distinct < 1 || s.experts % distinct) throw Error("weft bench moe: distinct expert weights must divide E = " + std::to_string(s.experts));
  Result r;
  r.suite = "moe";
  r.kernel = "grouped_gemm";
  r.size = name + " T=" + std::to_string(s.tokens) + " E=" + std::to_string(s.experts) + " k=" + std::to_string(s.top_k) + " N=" + std::to_string(n) +
           " K=" + std::to_string(k);
  r.device = device.name();
  r.unit = "TFLOP/s";
  r.unit_scale = 1e12;
  r.work = 2.0 * static_cast<double>(s.choices()) * static_cast<double>(n) * static_cast<double>(k);  // the real rows' products
  if (nvidia) {
    r.ceiling = 989.4;  // dense bf16 tensor-core peak of an H100/H200 SXM
    r.ceiling_source = "NVIDIA H100 and H200 SXM datasheets, dense BF16 (quoted; the same figure for both)";
  }
  tell(o, "moe grouped_gemm " + r.size + " on " + device.name());
  const GroupedInputs in = grouped_inputs(s, n, k, distinct, o.seed + 3);
  const int64_t rows = s.max_rows();
  const std::vector<uint8_t> poison(static_cast<size_t>(rows * n * 2), 0xCD);
  const rt::OwnedArray xs(device, rt::upload(device, dtypes::bfloat16, in.xs, "Xs")), w = upload_weights(device, in, s.experts);
  const rt::OwnedArray block_expert(device, rt::upload(device, dtypes::int32, bytes_of(in.plan.block_expert), "block_expert"));
  const rt::OwnedArray ys(device, rt::upload(device, dtypes::bfloat16, poison, "Ys (weft)"));
  const moe::GroupedGemm gemm(device, s);
  r.weft = time_on(device, [&] { gemm.launch(device, n, k, ys, xs, w, block_expert); }, o);
  device.synchronize();
  const std::vector<uint8_t> ys_bytes = rt::download(device, ys);
  r.check = host_check(in, ys_bytes, n, k);
  if (!nvidia) return {r};

  // cuBLAS: one GEMM per expert over its real rows, C = A * B^T.
  r.peer = "cuBLAS cublasGemmEx, one per expert";
  r.peer_device = device.name();
  const rt::OwnedArray ys_peer(device, rt::upload(device, dtypes::bfloat16, poison, "Ys (cuBLAS)"));
  Cublas& blas = Cublas::get();
  const uint64_t a0 = xs.get().buffer.address, b0 = w.get().buffer.address, c0 = ys_peer.get().buffer.address;
  const auto loop = [&] {
    for (int64_t e = 0; e < s.experts; ++e) {
      const int64_t m = in.plan.counts[static_cast<size_t>(e)], row = in.plan.offsets[static_cast<size_t>(e)];
      if (m > 0) blas.gemm(m, n, k, dtypes::bfloat16, dtypes::bfloat16, a0 + static_cast<uint64_t>(row * k * 2), b0 + static_cast<uint64_t>(e * n * k * 2),
                           c0 + static_cast<uint64_t>(row * n * 2), true);
    }
  };
  r.peer_timing = time_on(device, loop, o);
  device.synchronize();
  if (r.check.ok)
    r.check = compare(real_rows(in.plan, ys_bytes, n), real_rows(in.plan, rt::download(device, ys_peer), n), kTolerance,
                      "cuBLAS (every real row) and the host (each expert's first row)");

  // PyTorch's grouped matmul over the padded layout (the same rows weft computes).
  Result t = r;
  t.peer = "PyTorch torch._grouped_mm";
  t.peer_timing = {};
  t.check = {};
  try {
    tell_framework(o, "moe grouped_gemm: PyTorch in a python3 child");
    const std::vector<int32_t> ends(in.plan.offsets.begin() + 1, in.plan.offsets.end());
    const int64_t keep = std::min<int64_t>(kPeerRows, in.plan.counts[0]);
    FrameworkRun run = run_framework({kTorchGroupedMm, {{"xs", in.xs}, {"w", in.w}, {"ends", bytes_of(ends)}}, {rows, n, k, s.experts, keep, distinct},
                                      static_cast<size_t>(keep * n)},
                                     o);
    t.peer = run.name;
    t.peer_device = device.name() + ", python3 child";
    t.peer_timing = run.timing;
    const std::vector<double> head = as_doubles(dtypes::bfloat16, std::vector<uint8_t>(ys_bytes.begin(), ys_bytes.begin() + keep * n * 2));
    t.check = compare(head, run.output, kTolerance, "PyTorch (expert 0's first rows)");
  } catch (const Error& e) {
    t.not_run = e.what();
  }
  return {r, t};
}

}  // namespace weft::bench
