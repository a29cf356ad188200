// The attention suite: weft's flash_attention (attention/) forward pass, bf16, against PyTorch's
// scaled_dot_product_attention with its cuDNN and flash backends, in the same job (a python3
// child), causal and not. The unit is TFLOP/s of 4 * BH * SQ * SK * d (half of it causal, as
// FlashAttention counts), the ceiling the dense bf16 peak. The softmax scale is 4 / sqrt(d) for
// both (inputs in [-1, 1]: logits spread over several units, so a wrong maximum, sum or mask
// shows). weft's output is checked element by element against a double-precision host softmax on
// the first and last 64 query rows of the first and last heads, and against each peer on the
// first head's first rows and the last head's last rows. On the emulator the shapes are small,
// and there is no peer.
#include <cmath>

#include "framework_peer.h"
#include "matrices.h"
#include "suite_common.h"
#include "weft/bench/timing.h"
#include "weft/attention/flash_attention.h"
#include "weft/dsl/error.h"
#include "weft/runtime/kernel.h"

namespace weft::bench {

namespace {

struct AttentionCase {
  int64_t heads, seq, d;
  bool causal;
  double scale() const { return 4.0 / std::sqrt(static_cast<double>(d)); }
  std::string size() const {
    return "BH=" + std::to_string(heads) + " S=" + std::to_string(seq) + " d=" + std::to_string(d) + (causal ? " causal" : "");
  }
};

// Query rows compared: the first head's first ones and the last head's last ones with the
// peer's, and the first and last of the first and last heads with the host's.
constexpr int64_t kCheckedRows = 64;

// args BH S d causal keep backend; inputs q, k, v (BH x S x d bf16). backend 0: cuDNN, 1: flash.
// The scale is AttentionCase::scale()'s.
constexpr const char* kTorchSdpa = R"PY(
BH, S, d, causal, keep, backend = args
scale = 4 / d ** 0.5
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (load(n, torch.bfloat16, 1, BH, S, d) for n in ("q", "k", "v"))
which = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION][backend]
NAME = "scaled_dot_product_attention, " + ["cuDNN", "flash"][backend] + " backend"
out = {}
def step():
    with sdpa_kernel(which):
        out["o"] = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=scale)
def result():
    o = out["o"][0]
    return torch.cat([o[0, :keep], o[-1, -keep:]])
)PY";

// Row i of head h of softmax(Q K^T * scale [causal]) V in double, checked against `got` element by
// element: P enters P V as bf16 (2^-9 of each p_j) and O is stored as bf16 (2^-9 of |O|), 2^-8 of
// each leaving a factor 2 for the fp32 arithmetic. Adds to `c` (max_error relative to the
// largest |O| seen, tolerance the loosest bound relative to it).
void check_row(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, const std::vector<double>& got,
               const AttentionCase& c, int64_t h, int64_t i, double& worst_diff, double& loosest, double& largest, bool& ok) {
  const int64_t keys = c.causal ? i + 1 : c.seq, qrow = (h * c.seq + i) * c.d;
  std::vector<double> p(static_cast<size_t>(keys));
  double top = -INFINITY, sum = 0;
  for (int64_t j = 0; j < keys; ++j) {
    double dot = 0;
    for (int64_t x = 0; x < c.d; ++x) dot += static_cast<double>(q[static_cast<size_t>(qrow + x)]) * k[static_cast<size_t>((h * c.seq + j) * c.d + x)];
    top = std::max(top, p[static_cast<size_t>(j)] = dot * c.scale());
  }
  for (double& x : p) sum += (x = std::exp(x - top));
  for (int64_t x = 0; x < c.d; ++x) {
    double want = 0, magnitude = 0;
    for (int64_t j = 0; j < keys; ++j) {
      const double vj = v[static_cast<size_t>((h * c.seq + j) * c.d + x)];
      want += p[static_cast<size_t>(j)] / sum * vj;
      magnitude += p[static_cast<size_t>(j)] / sum * std::fabs(vj);
    }
    const double bound = std::ldexp(1.0, -8) * (magnitude + std::fabs(want)) + 1e-6;
    const double diff = std::fabs(got[static_cast<size_t>(qrow + x)] - want);
    ok = ok && diff <= bound;  // NaN fails
    worst_diff = std::isnan(diff) ? INFINITY : std::max(worst_diff, diff);
    loosest = std::max(loosest, bound);
    largest = std::max(largest, std::fabs(want));
  }
}

Check host_check(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, const std::vector<double>& got,
                 const AttentionCase& c) {
  double worst_diff = 0, loosest = 0, largest = 0;
  bool ok = true;
  for (const int64_t h : {int64_t{0}, c.heads - 1})
    for (int64_t i = 0; i < c.seq; ++i)
      if (i < kCheckedRows || i >= c.seq - kCheckedRows) check_row(q, k, v, got, c, h, i, worst_diff, loosest, largest, ok);
  const double scale = largest > 0 ? largest : 1;
  return {ok, worst_diff / scale, loosest / scale, "host reference (double), first and last 64 rows of the first and last heads, element by element"};
}

// weft's line for one case; with_peer adds a second line, the flash backend's, sharing weft's timing.
std::vector<Result> attention_lines(rt::Device& device, const AttentionCase& c, bool with_peer, const Options& o) {
  Result r;
  r.suite = "attention";
  r.kernel = "flash_attention";
  r.size = c.size();
  r.device = device.name();
  r.work = 4.0 * static_cast<double>(c.heads) * static_cast<double>(c.seq) * static_cast<double>(c.seq) * static_cast<double>(c.d) * (c.causal ? 0.5 : 1.0);
  r.unit_scale = 1e12;
  r.unit = "TFLOP/s";
  if (with_peer) {
    r.ceiling = 989.4;  // dense bf16 tensor-core peak of an H100/H200 SXM
    r.ceiling_source = "NVIDIA H100 and H200 SXM datasheets, dense BF16 (quoted; the same figure for both)";
  }
  const int64_t rows = c.heads * c.seq;
  std::vector<float> qf, kf, vf;
  const std::vector<uint8_t> qb = random_matrix(dtypes::bfloat16, rows, c.d, o.seed, qf), kb = random_matrix(dtypes::bfloat16, rows, c.d, o.seed + 1, kf);
  const std::vector<uint8_t> vb = random_matrix(dtypes::bfloat16, rows, c.d, o.seed + 2, vf);
  const rt::OwnedArray q(device, rt::upload(device, dtypes::bfloat16, qb, "Q")), k(device, rt::upload(device, dtypes::bfloat16, kb, "K"));
  const rt::OwnedArray v(device, rt::upload(device, dtypes::bfloat16, vb, "V"));
  const rt::OwnedArray out(device, rt::upload(device, dtypes::bfloat16, std::vector<uint8_t>(static_cast<size_t>(rows * c.d * 2), 0xCD), "O"));
  const auto kernel = rt::CompiledKernel::compile(device, attention::flash_attention(device.arch(), {.head_dim = c.d, .causal = c.causal, .scale = c.scale()}));
  const std::vector<rt::DeviceArray> args = {out, q, k, v};
  const std::map<std::string, rt::ScalarValue> vars = {{"BH", c.heads}, {"SQ", c.seq}, {"SK", c.seq}};
  tell(o, "attention flash_attention " + r.size + " on " + device.name());
  r.weft = time_on(device, [&] { kernel.launch(device, args, vars); }, o);
  device.synchronize();
  const std::vector<double> got = as_doubles(dtypes::bfloat16, rt::download(device, out));
  r.check = host_check(qf, kf, vf, got, c);
  if (!with_peer) return {r};

  std::vector<Result> lines;
  const int64_t keep = std::min(kCheckedRows, c.seq);
  // The first head's first rows and the last head's last rows (causal: the most keys), as the
  // peer's script returns them.
  std::vector<double> compared(got.begin(), got.begin() + keep * c.d);
  compared.insert(compared.end(), got.end() - keep * c.d, got.end());
  for (int backend : {0, 1}) {
    Result line = r;
    line.peer = backend == 0 ? "PyTorch SDPA cuDNN" : "PyTorch SDPA flash";
    try {
      tell_framework(o, "attention: PyTorch SDPA (" + std::string(backend == 0 ? "cuDNN" : "flash") + ") in a python3 child");
      const FrameworkRun run = run_framework({kTorchSdpa, {{"q", qb}, {"k", kb}, {"v", vb}},
                                              {c.heads, c.seq, c.d, c.causal ? 1 : 0, keep, backend},
                                              static_cast<size_t>(2 * keep * c.d)}, o);
      line.peer = run.name;
      line.peer_device = device.name() + ", python3 child";
      line.peer_timing = run.timing;
      if (line.check.ok)
        line.check = compare(compared, run.output, std::ldexp(1.0, -7),
                             "host (first and last rows of the first and last heads) and " + run.name + " (the first head's first rows and the last head's last)");
    } catch (const Error& e) {
      tell_framework(o, std::string("attention: no PyTorch peer: ") + e.what());
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<Result> run_attention(const Options& o) {
  if (!o.sizes.empty()) throw Error("weft bench attention: it runs fixed shapes (BH 32, S 4096 and 8192, d 128 on cuda); --sizes is not taken");
  if (!o.kernel.empty() && o.kernel != "flash_attention") throw Error("weft bench attention: no kernel " + o.kernel + " (flash_attention)");
  auto device = open(o, "cuda");
  const bool nvidia = device->arch().starts_with("sm_");
  std::vector<AttentionCase> cases;
  for (bool causal : {false, true}) {
    if (nvidia) {
      cases.push_back({32, 4096, 128, causal});
      cases.push_back({16, 8192, 128, causal});
    } else {
      cases.push_back({2, 128, 64, causal});
    }
  }
  std::vector<Result> out;
  for (const AttentionCase& c : cases)
    for (Result& r : attention_lines(*device, c, nvidia, o)) out.push_back(std::move(r));
  return out;
}

}  // namespace

Suite attention_suite() {
  return {"attention",
          "flash attention's forward pass, bf16, causal and not: weft's flash_attention against PyTorch's scaled_dot_product_attention "
          "(cuDNN and flash backends), in TFLOP/s against the dense bf16 peak",
          {"flash_attention"}, run_attention};
}

}  // namespace weft::bench
