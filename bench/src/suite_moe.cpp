// The moe suite: the MoE routing kernels (moe/) on issue 16's shapes, in bf16.
//   dispatch   Xs[r] = X[row_token[r]]                 vs PyTorch torch.index_select
//   combine    Y[t] = sum_j w[t,j] * Ys[dest_row[t,j]]  vs PyTorch index_select + weighted sum
//   route+align  the whole routing plan from bf16 logits (route, then align's two kernels, no host
//              synchronization), softmax of the top k vs PyTorch topk + softmax + a stable sort,
//              and DeepSeek-V3's sigmoid grouped gate vs the same gate in PyTorch + a stable sort
//   grouped_gemm  Ys = Xs * W[e]^T over every expert's rows, one launch (moe_grouped_gemm_lines.cpp)
//                                                     vs a loop of cuBLAS GEMMs and PyTorch's grouped matmul
// dispatch and combine are memory-bound: the unit is TB/s of bytes read and written, and the ceiling is the
// device's copy rate measured in the same job (a device-to-device copy of 1 GiB, cuMemcpyDtoD: the copy
// PyTorch's copy_ makes), with or without the framework peers.
// weft's output is checked against a host reference in full (dispatch bit for bit, combine
// within its fp32 rounding) and against the peer's first rows. On the emulator the shapes are
// small, and there is no peer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "framework_peer.h"
#include "moe_grouped_gemm_lines.h"
#include "matrices.h"
#include "suite_common.h"
#include "weft/bench/timing.h"
#include "weft/dsl/error.h"
#include "weft/dsl/float_formats.h"
#include "weft/moe/grouped_gemm.h"
#include "weft/moe/permute.h"
#include "weft/moe/router.h"
#include "weft/runtime/kernel.h"

namespace weft::bench {

namespace {

struct MoeCase {
  std::string name;    // "mixtral", "deepseek", "small"
  moe::MoeShape shape;
  int64_t d;
};

// Rows compared with the peer's (its whole output would be gigabytes through a file).
constexpr int64_t kPeerRows = 64;

constexpr const char* kTorchDispatch = R"PY(
T, D, rows, keep = args
x, row_token = load("x", torch.bfloat16, T, D), load("row_token", torch.int32, rows)
index = row_token.clamp(min=0)
xs = torch.empty(rows, D, dtype=torch.bfloat16, device="cuda")
NAME = "torch.index_select"
def step():
    torch.index_select(x, 0, index, out=xs)
def result():
    return (xs * (row_token >= 0).unsqueeze(1).to(xs.dtype))[:keep]
)PY";

constexpr const char* kTorchCombine = R"PY(
T, k, D, rows, keep = args
ys, dest_row = load("ys", torch.bfloat16, rows, D), load("dest_row", torch.int32, T * k)
w = load("weights", torch.float32, T, k, 1)
y = torch.empty(T, D, dtype=torch.bfloat16, device="cuda")
NAME = "index_select + weighted sum"
def step():
    y.copy_((ys.index_select(0, dest_row).view(T, k, D).float() * w).sum(1))
def result():
    return y[:keep]
)PY";

// align the PyTorch way, for both route+align peers: a stable sort of the choices by expert, and
// each choice's row in its expert's padded run (E and block are the script's args).
constexpr const char* kTorchAlign = R"PY(
def align(ids):
    flat = ids.flatten()
    order = torch.sort(flat, stable=True).indices
    counts = torch.bincount(flat, minlength=E)
    padded = (counts + block - 1) // block * block
    offsets = torch.cumsum(padded, 0) - padded
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.empty_like(order)
    rank[order] = torch.arange(flat.numel(), device="cuda")
    return offsets[flat] + rank - starts[flat]
)PY";

// route + align the PyTorch way: top-k, softmax, and align above.
// args T E k block; input logits (T x E bf16). Output: every choice's destination row.
constexpr const char* kTorchRouteAlign = R"PY(
T, E, k, block = args
logits = load("logits", torch.bfloat16, T, E)
NAME = "topk + softmax + stable sort"
out = {}
def step():
    v, ids = torch.topk(logits.float(), k, dim=1)
    out["w"] = torch.softmax(v, dim=1)
    out["dest"] = align(ids)
def result():
    return out["dest"][:1]
)PY";

// DeepSeek-V3's gate (its noaux_tc routing: sigmoid scores, the correction bias for selection
// only, the best topk_group groups by the sum of their two best, the k best experts of those,
// normalized weights times the routed scaling factor), then the same align (kTorchAlign).
constexpr const char* kTorchRouteAlignSigmoid = R"PY(
T, E, k, block, G, TG, scale_x1000 = args
logits = load("logits", torch.bfloat16, T, E)
bias = load("bias", torch.float32, E)
NAME = "sigmoid + grouped topk + stable sort"
out = {}
def step():
    s = logits.float().sigmoid()
    sel = s + bias
    group = sel.view(T, G, E // G).topk(2, dim=2).values.sum(dim=2)
    kept = torch.topk(group, TG, dim=1, sorted=False).indices
    mask = torch.zeros_like(group).scatter_(1, kept, 1.0).bool().repeat_interleave(E // G, dim=1)
    ids = torch.topk(sel.masked_fill(~mask, float("-inf")), k, dim=1).indices
    w = s.gather(1, ids)
    out["w"] = w / w.sum(dim=1, keepdim=True) * (scale_x1000 / 1000)
    out["dest"] = align(ids)
def result():
    return out["dest"][:1]
)PY";

Result moe_line(const std::string& kernel, const MoeCase& c, rt::Device& device) {
  Result r;
  r.suite = "moe";
  r.kernel = kernel;
  r.size = c.name + " T=" + std::to_string(c.shape.tokens) + " E=" + std::to_string(c.shape.experts) + " k=" + std::to_string(c.shape.top_k) +
           " D=" + std::to_string(c.d);
  r.device = device.name();
  r.unit_scale = 1e12;
  r.unit = "TB/s";
  return r;
}

// The device's copy rate in TB/s (bytes read + written): a device-to-device copy of 1 GiB
// (Device::copy_on_device, cuMemcpyDtoD on CUDA, the copy PyTorch's copy_ makes), timed as the
// kernels are.
double copy_rate(rt::Device& device, const Options& o) {
  const size_t bytes = size_t{1} << 30;
  const rt::OwnedArray src(device, rt::DeviceArray{device.allocate(bytes, "copy source"), dtypes::uint8, bytes});
  const rt::OwnedArray dst(device, rt::DeviceArray{device.allocate(bytes, "copy destination"), dtypes::uint8, bytes});
  const Timing t = time_on(device, [&] { device.copy_on_device(dst.get().buffer, src.get().buffer, bytes); }, o);
  return 2.0 * static_cast<double>(bytes) / t.median() / 1e12;
}

// The launch of a compiled moe kernel with its variables (T, R) bound.
std::function<void()> launcher(rt::Device& device, const rt::CompiledKernel& k, std::vector<rt::DeviceArray> args, const moe::MoeShape& s) {
  const std::map<std::string, rt::ScalarValue> vars = {{"T", s.tokens}, {"R", s.max_rows()}};
  return [&device, &k, args = std::move(args), vars] { k.launch(device, args, vars); };
}

// Elements of the first kPeerRows rows of a row-major [rows, d] bf16 buffer, as doubles.
std::vector<double> first_rows(const std::vector<uint8_t>& bytes, int64_t d, int64_t rows) {
  const std::vector<uint8_t> head(bytes.begin(), bytes.begin() + std::min<int64_t>(rows, kPeerRows) * d * 2);
  return as_doubles(dtypes::bfloat16, head);
}

struct Lines {
  Result dispatch, combine;
};

Lines permute_lines(rt::Device& device, const MoeCase& c, double ceiling, bool with_peer, const Options& o) {
  const moe::MoeShape& s = c.shape;
  const int64_t R = s.max_rows(), d = c.d;
  std::mt19937_64 gen(o.seed);
  const moe::RoutingPlan plan = moe::random_plan(s, gen);
  const int64_t used = plan.offsets.back();
  std::vector<float> x_values;
  const std::vector<uint8_t> x_bytes = random_matrix(dtypes::bfloat16, s.tokens, d, o.seed + 1, x_values);
  const rt::OwnedArray x(device, rt::upload(device, dtypes::bfloat16, x_bytes, "X"));
  const rt::OwnedArray row_token(device, rt::upload(device, dtypes::int32, bytes_of(plan.row_token), "row_token"));
  const rt::OwnedArray dest_row(device, rt::upload(device, dtypes::int32, bytes_of(plan.dest_row), "dest_row"));
  const rt::OwnedArray weights(device, rt::upload(device, dtypes::float32, bytes_of(plan.weights), "weights"));
  const rt::OwnedArray xs(device, rt::upload(device, dtypes::bfloat16, std::vector<uint8_t>(static_cast<size_t>(R * d * 2), 0xCD), "Xs"));
  const rt::OwnedArray y(device, rt::upload(device, dtypes::bfloat16, std::vector<uint8_t>(static_cast<size_t>(s.tokens * d * 2), 0xCD), "Y"));
  const auto dispatch = rt::CompiledKernel::compile(device, moe::dispatch_kernel(d, dtypes::bfloat16));
  const auto combine = rt::CompiledKernel::compile(device, moe::combine_kernel(d, s.top_k, dtypes::bfloat16, dtypes::bfloat16));

  Lines out{moe_line("dispatch", c, device), moe_line("combine", c, device)};
  const double row_bytes = static_cast<double>(d) * 2;
  out.dispatch.work = static_cast<double>(s.choices() + used) * row_bytes;  // real rows read, every used row written
  out.combine.work = static_cast<double>(s.choices() + s.tokens) * row_bytes;
  for (Result* r : {&out.dispatch, &out.combine}) {
    r->ceiling = ceiling;
    r->ceiling_source = "device-to-device copy rate measured in this job (cuMemcpyDtoD of 1 GiB, timed as the kernels)";
  }
  tell(o, "moe dispatch " + out.dispatch.size + " on " + device.name());
  out.dispatch.weft = time_on(device, launcher(device, dispatch, {xs, x, row_token}, s), o);
  // combine's input: the dispatched rows (so Y[t] = X[t] * sum_j w[t, j], up to rounding).
  tell(o, "moe combine " + out.combine.size + " on " + device.name());
  out.combine.weft = time_on(device, launcher(device, combine, {y, xs, dest_row, weights}, s), o);
  device.synchronize();

  // The host references: dispatch bit for bit, combine within fp32 accumulation and bf16 rounding.
  const std::vector<uint8_t> xs_bytes = rt::download(device, xs), y_bytes = rt::download(device, y);
  bool copy_ok = true;
  for (int64_t r = 0; r < used && copy_ok; ++r) {
    const int32_t t = plan.row_token[static_cast<size_t>(r)];
    const uint8_t* got = &xs_bytes[static_cast<size_t>(r * d * 2)];
    if (t >= 0) copy_ok = std::memcmp(got, &x_bytes[static_cast<size_t>(t * d * 2)], static_cast<size_t>(d * 2)) == 0;
    else copy_ok = std::all_of(got, got + d * 2, [](uint8_t b) { return b == 0; });
  }
  out.dispatch.check = {copy_ok, copy_ok ? 0.0 : INFINITY, 0, "host reference (bit for bit)"};
  std::vector<double> want(static_cast<size_t>(s.tokens * d));
  for (int64_t t = 0; t < s.tokens; ++t) {
    double sum_w = 0;
    for (int64_t j = 0; j < s.top_k; ++j) sum_w += plan.weights[static_cast<size_t>(t * s.top_k + j)];
    for (int64_t i = 0; i < d; ++i) want[static_cast<size_t>(t * d + i)] = sum_w * x_values[static_cast<size_t>(t * d + i)];
  }
  out.combine.check = compare(as_doubles(dtypes::bfloat16, y_bytes), want, std::ldexp(1.0, -7), "host reference (double)");
  if (!with_peer) return out;

  out.dispatch.peer = "PyTorch torch.index_select";
  out.combine.peer = "PyTorch index_select + weighted sum";
  const int64_t keep = std::min(kPeerRows, s.tokens);
  try {
    tell_framework(o, "moe dispatch: PyTorch in a python3 child");
    FrameworkRun run = run_framework({kTorchDispatch, {{"x", x_bytes}, {"row_token", bytes_of(plan.row_token)}}, {s.tokens, d, R, keep},
                                      static_cast<size_t>(keep * d)}, o);
    out.dispatch.peer = run.name;
    out.dispatch.peer_device = device.name() + ", python3 child";
    out.dispatch.peer_timing = run.timing;
    if (out.dispatch.check.ok) out.dispatch.check = compare(first_rows(xs_bytes, d, keep), run.output, 0, "host (all rows) and PyTorch (first rows), bit for bit");
    tell_framework(o, "moe combine: PyTorch in a python3 child");
    run = run_framework({kTorchCombine, {{"ys", xs_bytes}, {"dest_row", bytes_of(plan.dest_row)}, {"weights", bytes_of(plan.weights)}},
                         {s.tokens, s.top_k, d, R, keep}, static_cast<size_t>(keep * d)}, o);
    out.combine.peer = run.name;
    out.combine.peer_device = device.name() + ", python3 child";
    out.combine.peer_timing = run.timing;
    if (out.combine.check.ok)
      out.combine.check = compare(first_rows(y_bytes, d, keep), run.output, std::ldexp(1.0, -7), "host (all rows) and PyTorch (first rows)");
  } catch (const Error& e) {
    tell_framework(o, std::string("moe: no PyTorch peer: ") + e.what());
  }
  return out;
}

// route + align at `config` on `device`: a latency (no throughput unit; the table shows the time).
// Softmax of the top k (the seed's), or DeepSeek-V3's sigmoid grouped scoring with a random
// correction bias.
Result router_line(rt::Device& device, const moe::RouteConfig& config, int64_t block_rows, bool with_peer, const Options& o) {
  const bool sigmoid = config.scoring == moe::Scoring::SigmoidGroupedTopK;
  Result r;
  r.suite = "moe";
  r.kernel = "route+align";
  r.size = "T=" + std::to_string(config.tokens) + " E=" + std::to_string(config.experts) + " k=" + std::to_string(config.top_k);
  if (sigmoid) r.size += " sigmoid G=" + std::to_string(config.n_group) + "/" + std::to_string(config.topk_group);
  r.device = device.name();
  tell(o, "moe route+align " + r.size + " on " + device.name());
  const moe::Router router = moe::compile_router(device, config, block_rows);
  std::vector<float> logits_f, bias_f;
  const std::vector<uint8_t> logits_bytes = random_matrix(dtypes::bfloat16, config.tokens, config.experts, o.seed + 2, logits_f);
  // The correction bias in [-0.05, 0.05]: a nudge to the sigmoid scores (about 0.27-0.73 for these
  // logits), as the load-balancing bias is, not a ranking of its own that would send most tokens
  // to a few experts.
  if (sigmoid) {
    (void)random_matrix(dtypes::float32, 1, config.experts, o.seed + 3, bias_f);
    for (float& b : bias_f) b *= 0.05f;
  }
  const std::vector<uint8_t> bias_bytes = bytes_of(bias_f);
  const rt::OwnedArray logits(device, rt::upload(device, dtypes::bfloat16, logits_bytes, "logits"));
  std::optional<rt::OwnedArray> bias;
  if (sigmoid) bias.emplace(device, rt::upload(device, dtypes::float32, bias_bytes, "correction bias"));
  const moe::PlanBuffers plan = moe::allocate_plan(device, router.shape);
  const rt::DeviceArray* bias_array = bias ? &bias->get() : nullptr;
  r.weft = time_on(device, [&] { moe::launch_router(device, router, logits, bias_array, plan); }, o);
  device.synchronize();
  // The check: route against its reference, and the plan bit for bit against plan_reference of
  // the routed choices.
  const moe::RoutingPlan got = moe::download_plan(device, router.shape, plan);
  const std::vector<double> logits_d(logits_f.begin(), logits_f.end());
  const gemm::Check route_check = moe::check_route(config, logits_d, std::vector<double>(bias_f.begin(), bias_f.end()), got.expert_ids, got.weights);
  bool ok = route_check.passed();
  if (ok) ok = moe::compare_plans(got, moe::plan_reference(router.shape, got.expert_ids, got.weights)).passed();
  r.check = {ok, ok ? 0.0 : INFINITY, 0, "host reference (route) and plan_reference (bit for bit)"};
  if (!with_peer) return r;
  r.peer = sigmoid ? "PyTorch sigmoid + grouped topk + stable sort" : "PyTorch topk + softmax + stable sort";
  try {
    tell_framework(o, "moe route+align: PyTorch in a python3 child");
    const FrameworkRun run =
        sigmoid ? run_framework({std::string(kTorchAlign) + kTorchRouteAlignSigmoid,
                                 {{"logits", logits_bytes}, {"bias", bias_bytes}},
                                 {config.tokens, config.experts, config.top_k, block_rows, config.n_group, config.topk_group,
                                  static_cast<int64_t>(std::lround(config.scaling * 1000))},  // (the peer's args are integers)
                                 1},
                                o)
                : run_framework({std::string(kTorchAlign) + kTorchRouteAlign, {{"logits", logits_bytes}}, {config.tokens, config.experts, config.top_k, block_rows}, 1}, o);
    r.peer = run.name;
    r.peer_device = device.name() + ", python3 child";
    r.peer_timing = run.timing;
  } catch (const Error& e) {
    tell_framework(o, std::string("moe: no PyTorch peer: ") + e.what());
  }
  return r;
}

std::vector<Result> run_moe(const Options& o) {
  if (!o.sizes.empty()) throw Error("weft bench moe: it runs issue 16's shapes (Mixtral-like and DeepSeek-V3-like on cuda); --sizes is not taken");
  if (!o.kernel.empty() && o.kernel != "dispatch" && o.kernel != "combine" && o.kernel != "route+align" && o.kernel != "grouped_gemm")
    throw Error("weft bench moe: no kernel " + o.kernel + " (route+align, dispatch, combine, grouped_gemm)");
  auto device = open(o, "cuda");
  const bool nvidia = device->arch().starts_with("sm_");
  const std::vector<MoeCase> cases = nvidia ? std::vector<MoeCase>{{"mixtral", {16384, 8, 2, 128}, 4096}, {"deepseek", {8192, 256, 8, 128}, 7168}}
                                            : std::vector<MoeCase>{{"small", {256, 8, 2, 128}, 256}};
  const double ceiling = nvidia ? copy_rate(*device, o) : 0;
  std::vector<Result> out;
  if (o.kernel.empty() || o.kernel == "route+align") {
    const int64_t tokens = nvidia ? 16384 : 256, experts = nvidia ? 256 : 64;
    const moe::RouteConfig softmax{tokens, experts, 8, moe::Scoring::SoftmaxTopK, dtypes::bfloat16};
    // DeepSeek-V3's gate: 8 groups, the best 4 kept, normalized weights times 2.5.
    const moe::RouteConfig sigmoid{tokens, experts, 8, moe::Scoring::SigmoidGroupedTopK, dtypes::bfloat16, 8, 4, true, 2.5};
    out.push_back(router_line(*device, softmax, 128, nvidia, o));
    out.push_back(router_line(*device, sigmoid, 128, nvidia, o));
  }
  for (const MoeCase& c : cases) {
    if (o.kernel == "route+align" || o.kernel == "grouped_gemm") break;
    Lines l = permute_lines(*device, c, ceiling, nvidia, o);
    if (o.kernel.empty() || o.kernel == "dispatch") out.push_back(std::move(l.dispatch));
    if (o.kernel.empty() || o.kernel == "combine") out.push_back(std::move(l.combine));
  }
  if (o.kernel.empty() || o.kernel == "grouped_gemm") {
    // Mixtral-like routing with square D x D expert weights (the FFN's 14336 would need a
    // gigabyte of host-drawn weights per projection), every expert's drawn; DeepSeek-V3-like
    // routing with its gate projection, N = 2048 (moe_intermediate_size) by K = D = 7168, 7.5 GB
    // of weights, 8 experts' drawn and repeated. On the emulator 64 x 64 weights.
    for (const MoeCase& c : cases) {
      moe::MoeShape s = c.shape;
      s.block_rows = std::max(s.block_rows, moe::grouped_gemm_block_rows(device->arch()));
      const bool deepseek = c.name == "deepseek";
      const int64_t n = nvidia ? (deepseek ? 2048 : c.d) : 64, k = nvidia ? c.d : 64;
      for (Result& r : grouped_gemm_lines(*device, c.name, s, n, k, std::min<int64_t>(s.experts, 8), nvidia, o)) out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

Suite moe_suite() {
  return {"moe",
          "MoE routing, bf16: route+align, dispatch and combine against PyTorch (dispatch and combine in TB/s against the device's copy rate); the "
          "grouped GEMM against a loop of cuBLAS GEMMs and PyTorch's grouped matmul",
          {"route+align", "dispatch", "combine", "grouped_gemm"}, run_moe};
}

}  // namespace weft::bench
