// The gemm suite: weft's GEMM for the device against the vendor library in the same process.
//   cuda:      hopper_gemm (C = A * B^T, bf16 in and out; sm_90) vs cuBLAS cublasGemmEx, same
//              types, PyTorch's torch.matmul (a @ b.t()) and a Triton tl.dot matmul in python3
//              children of the same job;
//              hopper_gemm_fp8 (fp8 e4m3 in, per-tensor scales, bf16 out; sm_90) vs cuBLASLt's
//              fp8 GEMM with the same scales, with and without its fast accumulation;
//              mma_gemm (C = A * B, bf16 in, fp32 out)     vs cuBLAS cublasGemmEx, same types, and
//              PyTorch's torch.matmul (bf16 out) in a python3 child of the same job
//   emu:*, hip: hk_gemm (C = A * B^T, bf16 in, fp32 out)  vs Eigen's float GEMM on the host CPU
// Each line checks weft's C against the peer's C (max |difference| / max |peer's C|).
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "cublas.h"
#include "cublaslt.h"
#include "framework_peer.h"
#include "matrices.h"
#include "suite_common.h"
#include "weft/bench/timing.h"
#include "weft/dsl/error.h"
#include "weft/gemm/hk_gemm.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/gemm/mma_tile.h"
#include "weft/runtime/kernel.h"

namespace weft::bench {

namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Both accumulate bf16 products in fp32; their sums differ in order only (K terms: a few
// hundred fp32 ulps of the largest partial sum at most).
constexpr double kTolerance = 1e-3;

struct Inputs {
  std::vector<float> a, b;
  std::vector<uint8_t> a_bytes, b_bytes;
};

Inputs random_inputs(int64_t m, int64_t n, int64_t k, bool b_transposed, uint64_t seed) {
  Inputs in;
  in.a_bytes = random_matrix(dtypes::bfloat16, m, k, seed, in.a);
  in.b_bytes = b_transposed ? random_matrix(dtypes::bfloat16, n, k, seed + 1, in.b) : random_matrix(dtypes::bfloat16, k, n, seed + 1, in.b);
  return in;
}

Result gemm_line(const std::string& kernel, int64_t m, int64_t n, int64_t k, rt::Device& device) {
  Result r;
  r.suite = "gemm";
  r.kernel = kernel;
  r.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  r.device = device.name();
  r.work = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  r.unit_scale = 1e12;
  r.unit = "TFLOP/s";
  return r;
}

// The same weft measurement against a framework's run in a child process of this job (bf16
// output: the check allows its rounding). `peer` names it if the run fails.
Result framework_line(const Result& weft_line, const std::vector<double>& weft_c, const std::string& peer, const std::function<FrameworkRun()>& run_peer) {
  Result r = weft_line;
  r.peer_timing = {};
  r.check = {};
  r.peer = peer + " (bf16 out)";
  try {
    FrameworkRun run = run_peer();
    r.peer = run.name + " (bf16 out)";
    r.peer_device = weft_line.device + ", python3 child";
    r.peer_timing = run.timing;
    r.check = compare(weft_c, run.output, kTolerance + std::ldexp(1.0, -8), peer + " (bf16)");
  } catch (const Error& e) {
    r.not_run = e.what();
  }
  return r;
}

// ... against PyTorch's torch.matmul.
Result torch_line(const Result& weft_line, const Inputs& in, const std::vector<double>& weft_c, int64_t m, int64_t n, int64_t k, const Options& o,
                  bool b_transposed = false) {
  return framework_line(weft_line, weft_c, "PyTorch", [&] { return torch_matmul(m, n, k, in.a_bytes, in.b_bytes, o, b_transposed); });
}

// ... against a Triton matmul (C = A * B^T).
Result triton_line(const Result& weft_line, const Inputs& in, const std::vector<double>& weft_c, int64_t m, int64_t n, int64_t k, const Options& o) {
  return framework_line(weft_line, weft_c, "Triton", [&] { return triton_matmul(m, n, k, in.a_bytes, in.b_bytes, o); });
}

// A line of an NVIDIA GPU: cuBLAS in this process as the peer, the datasheet's peak as the ceiling.
Result nvidia_line(const std::string& kernel, int64_t m, int64_t n, int64_t k, rt::Device& device) {
  Result r = gemm_line(kernel, m, n, k, device);
  r.peer = "cuBLAS cublasGemmEx";
  r.peer_device = device.name();
  r.ceiling = 989.4;  // dense bf16 tensor-core peak of an H100/H200 SXM
  r.ceiling_source = "NVIDIA H100 and H200 SXM datasheets, dense BF16 (quoted; the same figure for both)";
  return r;
}

// hopper_gemm (its default store: TMA where C's rows allow it) and cuBLAS, C = A * B^T in bf16,
// and PyTorch and Triton in the same job. Both round the fp32 sums to bf16: the check allows one
// bf16 rounding on top of the summation order. The other bf16 forms run against cuBLAS only.
//
// hopper_gemm's forms, in the suite's order: bf16 inputs (hopper_lines) or fp8 with per-tensor
// scales (hopper_fp8_lines, against cuBLASLt). hopper_gemm_direct stores with masked per-thread
// stores (HopperStore::Direct), hopper_gemm_cluster runs in clusters of two CTAs sharing B's box
// by multicast; the _64b and _ping_pong forms are the other schedules (HopperSchedule), measured
// slower than the default (docs/PERF.md, session 26), and the _budgets forms set the roles'
// register budgets (HopperGemmSpec::register_budgets): these run only when named.
struct HopperVariant {
  std::string name;
  gemm::HopperGemmSpec spec;
  bool whole_suite;  // run by `weft bench gemm`, not only when named
  bool fp8() const { return spec.input == dtypes::fp8e4m3; }
};

const std::vector<HopperVariant>& hopper_variants() {
  static const std::vector<HopperVariant> variants = [] {
    const auto bf16 = [](gemm::HopperSchedule schedule) {
      gemm::HopperGemmSpec spec;
      spec.schedule = schedule;
      return spec;
    };
    const auto fp8 = [](gemm::HopperSchedule schedule) {
      gemm::HopperGemmSpec spec{dtypes::fp8e4m3, dtypes::bfloat16, {gemm::OperandScale::PerTensor, false, gemm::Activation::None}};
      spec.schedule = schedule;
      return spec;
    };
    const auto budgets = [](gemm::HopperGemmSpec spec) {
      spec.register_budgets = true;
      return spec;
    };
    gemm::HopperGemmSpec direct, cluster;
    direct.store = gemm::HopperStore::Direct;
    cluster.cluster = 2;
    using gemm::HopperSchedule;
    return std::vector<HopperVariant>{{"hopper_gemm", {}, true},
                                      {"hopper_gemm_64b", bf16(HopperSchedule::Cooperative64B), false},
                                      {"hopper_gemm_ping_pong", bf16(HopperSchedule::PingPong), false},
                                      {"hopper_gemm_ping_pong_wide", bf16(HopperSchedule::PingPongWide), false},
                                      {"hopper_gemm_direct", direct, true},
                                      {"hopper_gemm_cluster", cluster, true},
                                      {"hopper_gemm_budgets", budgets(bf16(HopperSchedule::Cooperative)), false},
                                      {"hopper_gemm_fp8", fp8(HopperSchedule::Cooperative), true},
                                      {"hopper_gemm_fp8_64b", fp8(HopperSchedule::Cooperative64B), false},
                                      {"hopper_gemm_fp8_ping_pong", fp8(HopperSchedule::PingPong), false},
                                      {"hopper_gemm_fp8_ping_pong_wide", fp8(HopperSchedule::PingPongWide), false},
                                      {"hopper_gemm_fp8_budgets", budgets(fp8(HopperSchedule::Cooperative)), false}};
  }();
  return variants;
}

// The form named `name`, or null.
const HopperVariant* find_hopper_variant(const std::string& name) {
  for (const HopperVariant& v : hopper_variants())
    if (v.name == name) return &v;
  return nullptr;
}

std::vector<Result> hopper_lines(rt::Device& device, int64_t m, int64_t n, int64_t k, const Options& o, const HopperVariant& variant) {
  const std::string& kernel_name = variant.name;
  const gemm::HopperGemmSpec& spec = variant.spec;
  Result r = nvidia_line(kernel_name, m, n, k, device);
  const Inputs in = random_inputs(m, n, k, true, o.seed);
  const rt::OwnedArray a(device, rt::upload(device, dtypes::bfloat16, in.a_bytes, "A")), b(device, rt::upload(device, dtypes::bfloat16, in.b_bytes, "B"));
  const std::vector<uint8_t> poison(static_cast<size_t>(m * n * 2), 0xCD);
  const rt::OwnedArray c(device, rt::upload(device, dtypes::bfloat16, poison, "C (weft)"));
  const rt::OwnedArray c_peer(device, rt::upload(device, dtypes::bfloat16, poison, "C (cuBLAS)"));
  const auto kernel = rt::CompiledKernel::compile(device, gemm::hopper_gemm(spec.for_columns(n)));
  const rt::DeviceArray args[] = {c, a, b};
  const std::map<std::string, rt::ScalarValue> sizes = {{"M", m}, {"N", n}, {"K", k}, {"CTAS", gemm::hopper_gemm_ctas(device, spec, m, n)}};
  r.weft = time_on(device, [&] { kernel.launch(device, args, sizes); }, o);
  Cublas& blas = Cublas::get();
  const auto peer = [&] {
    blas.gemm(m, n, k, dtypes::bfloat16, dtypes::bfloat16, a.get().buffer.address, b.get().buffer.address, c_peer.get().buffer.address, true);
  };
  r.peer_timing = time_on(device, peer, o);
  device.synchronize();
  const std::vector<double> weft_c = as_doubles(dtypes::bfloat16, rt::download(device, c));
  const double bf16_rounding = std::ldexp(1.0, -8);
  r.check = compare(weft_c, as_doubles(dtypes::bfloat16, rt::download(device, c_peer)), kTolerance + bf16_rounding, "cuBLAS (bf16)");
  if (kernel_name != "hopper_gemm") return {r};
  tell_framework(o, "gemm hopper_gemm: PyTorch's torch.matmul and a Triton matmul in python3 children");
  return {r, torch_line(r, in, weft_c, m, n, k, o, true), triton_line(r, in, weft_c, m, n, k, o)};
}

// hopper_gemm with fp8 e4m3 inputs and per-tensor scales (its epilogue) against cuBLASLt's fp8
// GEMM with the same scales, bf16 out, in this process: one line with cuBLASLt's fast
// accumulation (partial sums stay in the MMA's accumulator, as in hopper_gemm) and one with its
// default (promoted into a separate fp32 sum: more precise, slower). The weft measurement is
// the same in both.
std::vector<Result> hopper_fp8_lines(rt::Device& device, int64_t m, int64_t n, int64_t k, const Options& o, const HopperVariant& variant) {
  Result weft_line = nvidia_line(variant.name, m, n, k, device);
  weft_line.ceiling = 1978.9;  // dense fp8 tensor-core peak of an H100/H200 SXM
  weft_line.ceiling_source = "NVIDIA H100 and H200 SXM datasheets, dense FP8 (quoted; the same figure for both)";
  std::vector<float> av, bv;
  const rt::OwnedArray a(device, rt::upload(device, dtypes::fp8e4m3, random_matrix(dtypes::fp8e4m3, m, k, o.seed, av), "A"));
  const rt::OwnedArray b(device, rt::upload(device, dtypes::fp8e4m3, random_matrix(dtypes::fp8e4m3, n, k, o.seed + 1, bv), "B"));
  const rt::OwnedArray scale_a(device, rt::upload(device, dtypes::float32, bytes_of(std::vector<float>{0.5f}), "scale_a"));
  const rt::OwnedArray scale_b(device, rt::upload(device, dtypes::float32, bytes_of(std::vector<float>{0.25f}), "scale_b"));
  const std::vector<uint8_t> poison(static_cast<size_t>(m * n * 2), 0xCD);
  const rt::OwnedArray c(device, rt::upload(device, dtypes::bfloat16, poison, "C (weft)"));
  const gemm::HopperGemmSpec& spec = variant.spec;  // fp8 e4m3 in, bf16 out, per-tensor scales
  const auto kernel = rt::CompiledKernel::compile(device, gemm::hopper_gemm(spec.for_columns(n)));
  const rt::DeviceArray args[] = {c, a, b, scale_a, scale_b};
  const std::map<std::string, rt::ScalarValue> sizes = {{"M", m}, {"N", n}, {"K", k}, {"CTAS", gemm::hopper_gemm_ctas(device, spec, m, n)}};
  weft_line.weft = time_on(device, [&] { kernel.launch(device, args, sizes); }, o);
  device.synchronize();
  const std::vector<double> weft_c = as_doubles(dtypes::bfloat16, rt::download(device, c));
  std::vector<Result> out;
  for (const bool fast : {true, false}) {
    Result r = weft_line;
    r.peer = std::string("cuBLASLt fp8 (") + (fast ? "fast accumulation" : "default accumulation") + ")";
    try {
      const CublasLtPlan plan(LtGemm{m, n, k, dtypes::fp8e4m3, dtypes::bfloat16, fast});
      const rt::OwnedArray c_peer(device, rt::upload(device, dtypes::bfloat16, poison, "C (cuBLASLt)"));
      const rt::OwnedArray workspace(device, rt::upload(device, dtypes::uint8, std::vector<uint8_t>(std::max<uint64_t>(plan.workspace_bytes(), 256)), "workspace"));
      const auto address = [](const rt::OwnedArray& x) { return x.get().buffer.address; };
      r.peer_timing = time_on(device, [&] { plan.run(address(a), address(b), address(c_peer), address(scale_a), address(scale_b), address(workspace)); }, o);
      device.synchronize();
      // Fast accumulation against fast accumulation: the same sums in different orders, 2^-10
      // of the largest result on top of the bf16 rounding. Against the promoted sums: the fast
      // accumulation's own error too (about 14 bits kept at each of K/32 additions; 1.1e-2 of
      // the largest result measured at 8192^3): 2^-5.
      const double accumulation = fast ? std::ldexp(1.0, -10) : std::ldexp(1.0, -5);
      r.check = compare(weft_c, as_doubles(dtypes::bfloat16, rt::download(device, c_peer)), kTolerance + std::ldexp(1.0, -8) + accumulation,
                        "cuBLASLt (bf16)");
    } catch (const Error& e) {
      r.peer_timing = {};
      r.not_run = e.what();
    }
    out.push_back(std::move(r));
  }
  return out;
}

// mma_gemm and cuBLAS on an NVIDIA GPU (and PyTorch in the same job, where it is installed).
std::vector<Result> mma_lines(rt::Device& device, int64_t m, int64_t n, int64_t k, const Options& o) {
  Result r = nvidia_line("mma_gemm", m, n, k, device);
  const Inputs in = random_inputs(m, n, k, false, o.seed);
  const rt::OwnedArray a(device, rt::upload(device, dtypes::bfloat16, in.a_bytes, "A")), b(device, rt::upload(device, dtypes::bfloat16, in.b_bytes, "B"));
  const std::vector<uint8_t> poison(static_cast<size_t>(m * n * 4), 0xCD);
  const rt::OwnedArray c(device, rt::upload(device, dtypes::float32, poison, "C (weft)"));
  const rt::OwnedArray c_peer(device, rt::upload(device, dtypes::float32, poison, "C (cuBLAS)"));
  const auto kernel = rt::CompiledKernel::compile(device, gemm::mma_gemm(m, n, k, dtypes::bfloat16));
  const rt::DeviceArray args[] = {c, a, b};
  r.weft = time_on(device, [&] { kernel.launch(device, args); }, o);
  Cublas& blas = Cublas::get();
  const auto peer = [&] {
    blas.gemm(m, n, k, dtypes::bfloat16, dtypes::float32, a.get().buffer.address, b.get().buffer.address, c_peer.get().buffer.address, false);
  };
  r.peer_timing = time_on(device, peer, o);
  device.synchronize();
  const std::vector<double> weft_c = as_doubles(dtypes::float32, rt::download(device, c));
  r.check = compare(weft_c, as_doubles(dtypes::float32, rt::download(device, c_peer)), kTolerance, "cuBLAS");
  tell_framework(o, "gemm mma_gemm: PyTorch's torch.matmul in a python3 child");
  return {r, torch_line(r, in, weft_c, m, n, k, o)};
}

}  // namespace

Result hk_gemm_line(rt::Device& device, int64_t m, int64_t n, int64_t k, const Options& o, bool with_peer) {
  Result r = gemm_line("hk_gemm", m, n, k, device);
  const Inputs in = random_inputs(m, n, k, true, o.seed);
  const rt::OwnedArray a(device, rt::upload(device, dtypes::bfloat16, in.a_bytes, "A")), b(device, rt::upload(device, dtypes::bfloat16, in.b_bytes, "B"));
  const rt::OwnedArray c(device, rt::upload(device, dtypes::float32, std::vector<uint8_t>(static_cast<size_t>(m * n * 4), 0xCD), "C"));
  const auto kernel = rt::CompiledKernel::compile(device, gemm::hk_gemm(device.arch(), dtypes::float32));
  const rt::DeviceArray args[] = {c, a, b};
  const std::map<std::string, rt::ScalarValue> sizes = {{"M", m}, {"N", n}, {"K", k}};
  r.weft = time_on(device, [&] { kernel.launch(device, args, sizes); }, o);
  const Eigen::Map<const RowMajor> ea(in.a.data(), m, k), eb(in.b.data(), n, k);
  RowMajor ec(m, n);
  const auto peer = [&] { ec.noalias() = ea * eb.transpose(); };
  if (with_peer) {
    r.peer = "Eigen float GEMM";
    r.peer_device = "host CPU";
    r.peer_timing = time_on_host(peer, o);
  } else {
    peer();
  }
  r.check = compare(as_doubles(dtypes::float32, rt::download(device, c)), std::vector<double>(ec.data(), ec.data() + m * n), kTolerance,
                    "Eigen (float)");
  return r;
}

namespace {

// --device, else the kernel's home (hopper_gemm, mma_gemm: cuda, hk_gemm: emu:gfx950), else a
// GPU where there is one and the emulator where there is not (said on the progress line).
std::unique_ptr<rt::Device> gemm_device(const Options& o) {
  if (!o.device.empty() || o.kernel == "mma_gemm" || o.kernel.starts_with("hopper_gemm")) return open(o, "cuda");
  if (o.kernel == "hk_gemm") return open(o, "emu:gfx950");
  try {
    return rt::open_device("cuda");
  } catch (const Error& e) {
    tell(o, std::string("no NVIDIA GPU (") + e.what() + "): the gemm suite runs on emu:gfx950");
    return rt::open_device("emu:gfx950");
  }
}

// The kernels the suite runs on `device` (hopper_gemm needs sm_90), or the one asked for.
std::vector<std::string> gemm_kernels(const rt::Device& device, const Options& o) {
  std::vector<std::string> kernels;
  const bool hopper = device.arch() == "sm_90";
  if (hopper)
    for (const HopperVariant& v : hopper_variants())
      if (v.whole_suite) kernels.push_back(v.name);
  if (device.arch().starts_with("sm_")) kernels.push_back("mma_gemm");
  else kernels.push_back("hk_gemm");
  if (o.kernel.empty()) return kernels;
  const bool known = std::find(kernels.begin(), kernels.end(), o.kernel) != kernels.end() || (hopper && find_hopper_variant(o.kernel));
  if (!known) throw Error("weft bench gemm: " + o.kernel + " does not run on " + device.name() + " (there the gemm suite runs " + kernels.front() + ")");
  return {o.kernel};
}

std::vector<Result> run_gemm(const Options& o) {
  auto device = gemm_device(o);
  const bool nvidia = device->arch().starts_with("sm_");
  // The shapes of the Hopper GEMM's aims (M x N x K); hk_gemm on the emulator takes small ones.
  const auto sizes = sizes_or(o, nvidia ? std::vector<std::vector<int64_t>>{{4096, 4096, 4096}, {8192, 8192, 8192}, {4096, 4096, 1024}, {16384, 16384, 1024}}
                                        : std::vector<std::vector<int64_t>>{{256, 256, 256}, {512, 512, 512}});
  // fp8 at the square shapes (the aim is 8192^3).
  const auto fp8_sizes = sizes_or(o, {{4096, 4096, 4096}, {8192, 8192, 8192}});
  std::vector<Result> out;
  for (const std::string& kernel : gemm_kernels(*device, o)) {
    const HopperVariant* hopper = find_hopper_variant(kernel);
    for (const auto& s : hopper && hopper->fp8() ? fp8_sizes : sizes) {
      tell(o, "gemm " + kernel + " " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]) + " on " + device->name());
      if (kernel == "hk_gemm") {
        out.push_back(hk_gemm_line(*device, s[0], s[1], s[2], o, true));
        continue;
      }
      // mma_gemm's tiles need M and N multiples of 128 and K of 32.
      if (kernel == "mma_gemm" && (s[0] % 128 || s[1] % 128 || s[2] % 32)) continue;
      if (hopper && hopper->fp8() && s[2] % 16) throw Error("weft bench gemm: " + kernel + " takes K a multiple of 16, not " + std::to_string(s[2]));
      std::vector<Result> lines;
      if (hopper) lines = hopper->fp8() ? hopper_fp8_lines(*device, s[0], s[1], s[2], o, *hopper) : hopper_lines(*device, s[0], s[1], s[2], o, *hopper);
      else lines = mma_lines(*device, s[0], s[1], s[2], o);
      for (Result& r : lines) out.push_back(std::move(r));
    }
  }
  return out;
}

// The suite's kernels, as `weft bench` lists them: hk_gemm, hopper_gemm's forms, mma_gemm.
std::vector<std::string> suite_kernel_names() {
  std::vector<std::string> names{"hk_gemm"};
  for (const HopperVariant& v : hopper_variants()) names.push_back(v.name);
  names.push_back("mma_gemm");
  return names;
}

}  // namespace

Suite gemm_suite() {
  return {"gemm",
          "GEMM, fp32 accumulate: weft against cuBLAS and PyTorch (cuda; hopper_gemm bf16 in and out, mma_gemm bf16 in, fp32 out), against cuBLASLt "
          "(hopper_gemm_fp8: fp8 e4m3 in with per-tensor scales, bf16 out) or Eigen on the CPU (emulator, fp32 out)",
          suite_kernel_names(), run_gemm};
}

}  // namespace weft::bench
