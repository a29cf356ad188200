#include "commands.h"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "example_kernels.h"
#include "moe_run.h"
#include "stats_report.h"
#include "weft/attention/flash_attention.h"
#include "weft/emulator/code_stats.h"
#include "weft/gemm/hk_gemm.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mfma_tile.h"
#include "weft/gemm/mma_tile.h"
#include "weft/kernels/tiles.h"
#ifdef WEFT_HAVE_LLVM
#include "weft/lowering/amdgpu_codegen.h"
#endif
#include "weft/lowering/pipeline.h"
#include "weft/runtime/compiler_identity.h"
#include "weft/runtime/device.h"
#include "weft/runtime/inspect.h"
#include "weft/runtime/nvrtc.h"
#include "weft/version.h"

namespace weft::cli {
namespace {

struct Options {
  std::string kernel, device = "emu:gfx950", after, target = "gfx950", dtype = "float32", schedule, input, epilogue, mask;
  std::vector<int64_t> size;
  uint64_t seed = std::random_device{}();
};

int64_t number(const std::string& s, const std::string& what) {
  int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) throw UsageError(what + ": '" + s + "' is not a number");
  return v;
}

// --name=value or --name value.
Options parse(const std::vector<std::string>& args, const std::vector<std::string>& allowed, const char* cmd) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    if (!a.starts_with("--")) {
      if (!o.kernel.empty()) throw UsageError(std::string(cmd) + ": more than one kernel given ('" + o.kernel + "' and '" + a + "')");
      o.kernel = a;
      continue;
    }
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw UsageError(std::string(cmd) + ": " + a + " needs a value");
      value = args[++i];
    }
    const std::string name = a.substr(2);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) throw UsageError(std::string(cmd) + ": unknown option '" + a + "'");
    if (name == "device") o.device = value;
    else if (name == "after") o.after = value;
    else if (name == "target") o.target = value;
    else if (name == "dtype") o.dtype = value;
    else if (name == "schedule") o.schedule = value;
    else if (name == "input") o.input = value;
    else if (name == "epilogue") o.epilogue = value;
    else if (name == "mask") o.mask = value;
    else if (name == "seed") o.seed = static_cast<uint64_t>(number(value, "--seed"));
    else if (name == "size") {
      std::stringstream ss(value);
      for (std::string part; std::getline(ss, part, ',');) o.size.push_back(number(part, "--size"));
    }
  }
  if (o.kernel.empty()) throw UsageError(std::string(cmd) + ": which kernel? (see 'weft kernels')");
  if (!examples::find(o.kernel)) throw UsageError(std::string(cmd) + ": no kernel named '" + o.kernel + "' (see 'weft kernels')");
  return o;
}

DType parse_float_dtype(const std::string& s) {
  if (s == "float32" || s == "f32") return dtypes::float32;
  if (s == "float16" || s == "f16" || s == "half") return dtypes::float16;
  if (s == "bfloat16" || s == "bf16") return dtypes::bfloat16;
  throw UsageError("--dtype: '" + s + "' is not float32, float16 or bfloat16");
}

void print_times(const gemm::RunResult& r, const std::string& device) {
  const auto& t = r.compile;
  auto line = [](const char* stage, double s, const char* what) { std::printf("  %-10s %9.2f ms  %s\n", stage, s * 1e3, what); };
  if (t.cached) std::printf("  (code object from the compile cache)\n");
  line("lower", t.lower, "weft's passes and linearization");
  const bool nvidia = device.starts_with("cuda");
  if (nvidia) {
    line("render", t.render, "the program to CUDA C++");
    line("nvrtc", t.codegen, "NVRTC, CUDA C++ to cubin");
  } else {
    line("render", t.render, "the program to an LLVM module");
    line("optimize", t.optimize, "LLVM O3");
    line("codegen", t.codegen, "LLVM AMDGPU code generation");
    line("link", t.link, "lld, in-process");
  }
  line("load", t.load, "code object loaded on the device");
  line("run", r.run_seconds, device.c_str());
  line("reference", r.reference_seconds, "host reference (Eigen, double)");
}

// hopper_gemm's --input (bfloat16, float8_e4m3fn), --epilogue (a comma list of bias, relu,
// gelu, scale=tensor, scale=row) and --schedule (cooperative, cooperative-64b, ping-pong,
// ping-pong-wide).
gemm::HopperGemmSpec hopper_spec(const Options& o, DType output) {
  gemm::HopperGemmSpec spec{dtypes::bfloat16, output, {}};
  if (o.schedule == "ping-pong") spec.schedule = gemm::HopperSchedule::PingPong;
  else if (o.schedule == "ping-pong-wide") spec.schedule = gemm::HopperSchedule::PingPongWide;
  else if (o.schedule == "cooperative-64b") spec.schedule = gemm::HopperSchedule::Cooperative64B;
  else if (!o.schedule.empty() && o.schedule != "cooperative")
    throw UsageError("run: hopper_gemm's --schedule '" + o.schedule + "' is not cooperative, cooperative-64b, ping-pong or ping-pong-wide");
  if (o.input == "float8_e4m3fn" || o.input == "fp8e4m3" || o.input == "e4m3" || o.input == "fp8") spec.input = dtypes::fp8e4m3;
  else if (!o.input.empty() && o.input != "bfloat16" && o.input != "bf16")
    throw UsageError("run: hopper_gemm's --input '" + o.input + "' is not bfloat16 or float8_e4m3fn");
  std::stringstream ss(o.epilogue);
  for (std::string part; std::getline(ss, part, ',');) {
    gemm::HopperEpilogue& e = spec.epilogue;
    if (part == "bias") e.bias = true;
    else if (part == "relu") e.activation = gemm::Activation::Relu;
    else if (part == "gelu") e.activation = gemm::Activation::Gelu;
    else if (part == "scale=tensor") e.scale = gemm::OperandScale::PerTensor;
    else if (part == "scale=row") e.scale = gemm::OperandScale::PerRow;
    else throw UsageError("run: --epilogue '" + part + "' is not bias, relu, gelu, scale=tensor or scale=row");
  }
  return spec;
}

// hk_gemm's --input: bfloat16 (the default), or fp8 / the target's fp8 format's name.
DType hk_gemm_input(const Options& o, const std::string& arch) {
  if (o.input.empty() || o.input == "bfloat16" || o.input == "bf16") return dtypes::bfloat16;
  if (arch != "gfx950" && arch != "gfx942") throw UsageError("hk_gemm runs on gfx950 and gfx942, not " + arch);
  const DType fp8 = tile::mfma_fp8(arch);
  if (o.input == "fp8" || o.input == fp8.name()) return fp8;
  throw UsageError("hk_gemm's --input '" + o.input + "' is not bfloat16, fp8 or " + fp8.name() + " (" + arch + "'s fp8)");
}

int report(const gemm::RunResult& r) {
  std::printf("check: %zu elements, max |error| %.3g, worst error/tolerance %.3g: %s\n", r.check.count, r.check.max_error,
              r.check.worst_ratio, r.check.passed() ? "PASSED" : "FAILED");
  if (!r.check.passed()) {
    std::fprintf(stderr, "weft: error: %zu of %zu elements out of tolerance; first: %s\n", r.check.bad, r.check.count, r.check.first_bad.c_str());
    return 1;
  }
  return 0;
}

// flash_attention --size BH,SQ,SK[,D] --mask causal|none.
gemm::RunResult run_flash_attention(const Options& o, rt::Device& device, rt::CompileCache& cache) {
  std::vector<int64_t> s = o.size.empty() ? std::vector<int64_t>{2, 256, 256, 128} : o.size;
  if (s.size() == 3) s.push_back(128);
  if (s.size() != 4) throw UsageError("run: flash_attention's --size is BH,SQ,SK or BH,SQ,SK,D");
  if (s[0] < 1 || s[1] < 1 || s[2] < 1) throw UsageError("run: flash_attention takes BH, SQ, SK >= 1");
  if (!o.mask.empty() && o.mask != "causal" && o.mask != "none") throw UsageError("run: --mask '" + o.mask + "' is not causal or none");
  // With the log-sum-exp: the run checks both outputs.
  const attention::FlashAttentionSpec spec{.head_dim = s[3], .causal = o.mask == "causal", .lse = true};
  attention::flash_attention_shape(device.arch(), spec.head_dim);  // shape errors before anything is printed
  std::printf("flash_attention BH,SQ,SK,D=%lld,%lld,%lld,%lld%s bfloat16 on %s (seed %llu)\n", static_cast<long long>(s[0]),
              static_cast<long long>(s[1]), static_cast<long long>(s[2]), static_cast<long long>(s[3]), spec.causal ? " causal" : "",
              device.name().c_str(), static_cast<unsigned long long>(o.seed));
  std::fflush(stdout);
  return attention::run_flash_attention(device, spec, s[0], s[1], s[2], o.seed, &cache);
}

}  // namespace

int run_kernel(const std::vector<std::string>& args) {
  const Options o = parse(args, {"device", "size", "dtype", "seed", "schedule", "input", "epilogue", "mask"}, "run");
  if (!o.mask.empty() && o.kernel != "flash_attention") throw UsageError("run: --mask is flash_attention's (causal or none)");
  if (!o.schedule.empty() && o.kernel != "hk_gemm" && o.kernel != "hopper_gemm")
    throw UsageError("run: --schedule is hk_gemm's (ping-pong or pipelined) and hopper_gemm's (cooperative, cooperative-64b, ping-pong or ping-pong-wide)");
  if (!o.epilogue.empty() && o.kernel != "hopper_gemm") throw UsageError("run: --epilogue is hopper_gemm's");
  if (!o.input.empty() && o.kernel != "hopper_gemm" && o.kernel != "hk_gemm") throw UsageError("run: --input is hk_gemm's and hopper_gemm's");
  if (o.kernel == "hk_gemm" && !o.schedule.empty() && o.schedule != "ping-pong" && o.schedule != "pipelined")
    throw UsageError("run: hk_gemm's --schedule '" + o.schedule + "' is not ping-pong or pipelined");
  const examples::Example* e = examples::find(o.kernel);
  if (!e->runnable)
    throw UsageError("run: kernel '" + o.kernel + "' has no host entry point; runnable kernels: " + examples::runnable_names());
  const DType dtype = parse_float_dtype(o.dtype);
  const bool dtype_given = std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.starts_with("--dtype"); });
  rt::CompileCache cache(rt::CompileCache::default_dir());
  if (o.device.find(" x ") != std::string::npos) {  // a mesh: "emu:gfx950 x 4"
    rt::Mesh mesh = rt::Mesh::open(o.device);
    const gemm::RunResult r = run_moe_on_mesh(o.kernel, mesh, o.size, dtype_given, o.seed, cache);
    std::printf("  %-10s %9.2f ms  %s\n", "run", r.run_seconds * 1e3, mesh.device(0).name().c_str());
    return report(r);
  }
  auto device = rt::open_device(o.device);
  gemm::RunResult r;
  if (is_moe_kernel(o.kernel)) {
    r = run_moe(o.kernel, *device, o.size, dtype_given ? std::optional<DType>(dtype) : std::nullopt, o.seed, cache);
  } else if (o.kernel == "matmul_relu") {
    std::vector<int64_t> s = o.size.empty() ? std::vector<int64_t>{256, 256, 256} : o.size;
    if (s.size() != 3) throw UsageError("run: --size is M,N,K");
    gemm::matmul_relu(s[0], s[1], s[2], dtype);  // shape errors before anything is printed
    std::printf("matmul_relu %lldx%lldx%lld %s on %s (seed %llu)\n", static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                static_cast<long long>(s[2]), dtype.name().c_str(), device->name().c_str(), static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
    r = gemm::run_matmul_relu(*device, s[0], s[1], s[2], dtype, o.seed, &cache);
  } else if (o.kernel == "hk_gemm" || o.kernel == "hopper_gemm") {  // C = A * B^T, run-time sizes, bf16 or fp32 out
    const std::string& name = o.kernel;
    std::vector<int64_t> s = o.size.empty() ? std::vector<int64_t>{512, 512, 512} : o.size;
    if (s.size() != 3) throw UsageError("run: --size is M,N,K");
    const DType out = dtype_given ? dtype : dtypes::bfloat16;
    if (out != dtypes::bfloat16 && out != dtypes::float32) throw UsageError("run: " + name + "'s output (--dtype) is bfloat16 or float32");
    const DType input = name == "hk_gemm" ? hk_gemm_input(o, device->arch()) : hopper_spec(o, out).input;
    const gemm::HopperGemmSpec spec = name == "hk_gemm" ? gemm::HopperGemmSpec{input, out, {}} : hopper_spec(o, out);
    const int64_t k_multiple = name == "hk_gemm" ? gemm::hk_gemm_k_multiple(input) : gemm::hopper_gemm_k_multiple(input);
    if (s[0] < 1 || s[1] < 1 || s[2] < k_multiple || s[2] % k_multiple)
      throw UsageError("run: " + name + " takes M, N >= 1 and K >= " + std::to_string(k_multiple) + ", a multiple of " + std::to_string(k_multiple));
    if (name == "hopper_gemm") gemm::check_hopper_device(*device);  // before anything is printed
    std::printf("%s %lldx%lldx%lld %s -> %s%s%s on %s (seed %llu)\n", name.c_str(), static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                static_cast<long long>(s[2]), spec.input.name().c_str(), out.name().c_str(), o.epilogue.empty() ? "" : ", epilogue ",
                o.epilogue.c_str(), device->name().c_str(), static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
    if (name == "hk_gemm" && (o.schedule == "pipelined" || input != dtypes::bfloat16)) {
      gemm::HkGemmShape shape = gemm::gemm_block_shape(device->arch(), input);
      shape.ping_pong = o.schedule != "pipelined";
      r = gemm::run_hk_gemm(*device, shape, s[0], s[1], s[2], out, false, o.seed, input);
    } else {
      r = name == "hk_gemm" ? gemm::run_hk_gemm(*device, s[0], s[1], s[2], out, false, o.seed, &cache)
                            : gemm::run_hopper_gemm(*device, spec, s[0], s[1], s[2], gemm::HopperInputs::Uniform, o.seed, &cache);
    }
  } else if (o.kernel == "flash_attention") {
    r = run_flash_attention(o, *device, cache);
  } else if (o.kernel == "mma_tile") {
    const DType in = o.dtype == "float32" ? dtypes::float16 : dtype;
    if (!o.size.empty()) throw UsageError("run: mma_tile is one m16n8k16 tile; it takes no --size");
    std::printf("mma_tile 16x8x16 %s on %s, identity B then random B (seed %llu)\n", in.name().c_str(), device->name().c_str(),
                static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
    gemm::RunResult id = gemm::run_mma_tile(*device, in, true, o.seed, &cache);
    std::printf("identity: %s\n", id.check.passed() ? "bit-exact" : "DIFFERS");
    if (!id.check.passed()) return report(id);
    r = gemm::run_mma_tile(*device, in, false, o.seed, &cache);
  } else {
    std::vector<int64_t> s = o.size.empty() ? std::vector<int64_t>{16, 16, 16} : o.size;
    if (s.size() != 3) throw UsageError("run: --size is M,N,K");
    const DType in = o.dtype == "float32" ? dtypes::float16 : dtype;
    gemm::mfma_tile(device->arch(), s[0], s[1], s[2], in);
    std::printf("mfma_tile %lldx%lldx%lld %s on %s, identity B then random B (seed %llu)\n", static_cast<long long>(s[0]),
                static_cast<long long>(s[1]), static_cast<long long>(s[2]), in.name().c_str(), device->name().c_str(),
                static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
    gemm::RunResult id = gemm::run_mfma_tile(*device, s[0], s[1], s[2], in, true, o.seed, &cache);
    std::printf("identity: %s\n", id.check.passed() ? "bit-exact" : "DIFFERS");
    if (!id.check.passed()) return report(id);
    r = gemm::run_mfma_tile(*device, s[0], s[1], s[2], in, false, o.seed, &cache);
  }
  if (is_moe_kernel(o.kernel)) {  // their entry points compile through the cache and time the launch and the reference
    std::printf("  %-10s %9.2f ms  %s\n  %-10s %9.2f ms  %s\n", "run", r.run_seconds * 1e3, device->name().c_str(), "reference", r.reference_seconds * 1e3,
                "host reference (double)");
  } else {
    print_times(r, device->name());
  }
  return report(r);
}

int print_version() {
  std::printf("weft %s\nbuild %s (SHA-256 of the compiler's sources)\n", WEFT_VERSION, rt::build_id());
#ifdef WEFT_HAVE_LLVM
  std::printf("AMD: %s (%s)\n", amdgpu::llvm_version().c_str(), amdgpu::compile_options().c_str());
#else
  std::printf("AMD: no code generator in this build (WEFT_LLVM=OFF)\n");
#endif
  std::printf("NVIDIA: %s\n", rt::nvrtc_available() ? rt::nvrtc_version().c_str() : "NVRTC not found");
  return 0;
}

int dump_kernel(const std::vector<std::string>& args) {
  const Options o = parse(args, {"after", "target"}, "dump");
  if (o.after.empty()) throw UsageError("dump: say what to print with --after=PASS|all|llvm|asm|cuda");
  const bool nvidia = o.target.starts_with("sm_");
  const bool all = o.after == "all", llvm = o.after == "llvm" || (all && !nvidia), assembly = o.after == "asm" || (all && !nvidia);
  const bool cuda_source = o.after == "cuda" || (all && nvidia);
  if (!llvm && !assembly && !cuda_source) {
    try {
      lower::check_pass_name(o.after);
    } catch (const Error& e) {
      throw UsageError(std::string("dump: ") + e.what());
    }
  }
  if (cuda_source && !nvidia) throw UsageError("dump: --after=cuda needs an NVIDIA target (--target sm_90)");
  if ((llvm || assembly) && nvidia) throw UsageError("dump: --after=" + o.after + " needs an AMD target (--target gfx950 or gfx942)");
  const bool backend = llvm || assembly || cuda_source;
  const rt::KernelStages st = rt::inspect(examples::find(o.kernel)->build(o.target), o.target,
                                          backend ? rt::InspectDepth::Backend : rt::InspectDepth::Lowering);
  for (const auto& [pass, ir] : st.passes)
    if (all || o.after == pass) std::cout << "# " << o.kernel << " after " << pass << "\n" << ir << "\n";
  if (all || o.after == "linearize") std::cout << "# " << o.kernel << " after linearize\n" << st.program << "\n";
  if (cuda_source) std::cout << "# " << o.kernel << ": CUDA C++ for " << o.target << "\n" << st.cuda_source;
  if (llvm) std::cout << "# " << o.kernel << ": LLVM IR as rendered\n" << st.llvm_ir << "\n# " << o.kernel << ": LLVM IR after O3\n" << st.llvm_ir_optimized << "\n";
  if (assembly) std::cout << "# " << o.kernel << ": " << o.target << " code object\n" << st.assembly;
  return 0;
}

int print_stats(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  bool json = false;
  for (const std::string& a : args) (a == "--json" ? json = true : (rest.push_back(a), false));
  const Options o = parse(rest, {"target", "size", "input"}, "stats");
  if (o.target != "gfx950" && o.target != "gfx942")
    throw UsageError("stats: --target '" + o.target + "': stats reads AMD code objects (gfx950 or gfx942)");
  const examples::Example* e = examples::find(o.kernel);
  if (!o.input.empty() && o.kernel != "hk_gemm") throw UsageError("stats: --input is hk_gemm's");
  UOp graph;
  if (!o.input.empty()) {
    if (!o.size.empty()) throw UsageError("stats: hk_gemm's --input takes no --size");
    const DType input = hk_gemm_input(o, o.target);
    graph = gemm::hk_gemm(o.target, dtypes::bfloat16, gemm::gemm_block_shape(o.target, input), input);
  } else if (o.size.empty()) {
    graph = e->build(o.target);
  } else {
    if (!e->build_sized) throw UsageError("stats: kernel '" + o.kernel + "' has a fixed shape; it takes no --size");
    if (o.size.size() != 3) throw UsageError("stats: --size is M,N,K");
    graph = e->build_sized(o.target, o.size);
  }
  const rt::KernelStages st = rt::inspect(graph, o.target);
  for (const emu::KernelStats& s : emu::code_object_stats(emu::CodeObject::load(st.code_object))) {
    if (json) write_stats_json(s, std::cout);
    else write_stats_table(s, std::cout);
  }
  return 0;
}

}  // namespace weft::cli
