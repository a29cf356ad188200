#include "moe_run.h"

#include <cstdio>
#include <functional>
#include <map>

#include "commands.h"
#include "weft/moe/grouped_gemm.h"
#include "weft/moe/layer.h"
#include "weft/moe/permute.h"
#include "weft/moe/router.h"
#include "weft/moe/route_backward.h"

namespace weft::cli {
namespace {

// A runnable MoE kernel: what --size lists, its default, and the run.
struct MoeKernel {
  std::string size_form;  // "T,E,k,D"
  std::vector<int64_t> default_size;
  bool takes_dtype;  // the rows' dtype, bfloat16 or float32 (--dtype)
  std::function<gemm::RunResult(rt::Device&, const std::vector<int64_t>&, DType, uint64_t, rt::CompileCache&)> run;
  // Throws weft::Error for sizes the kernel cannot take (none: the routing shape's checks).
  std::function<void(const std::vector<int64_t>&)> validate = {};
};

moe::MoeShape shape_of(const std::vector<int64_t>& s) { return {s[0], s[1], s[2], 256}; }

using PermuteRun = gemm::RunResult (*)(rt::Device&, const moe::MoeShape&, int64_t, DType, uint64_t, rt::CompileCache*, const moe::PermuteOptions&);

MoeKernel permute(PermuteRun run, moe::PermuteOptions options = {}) {
  return {"T,E,k,D", {300, 8, 2, 256}, true, [run, options](rt::Device& dev, const std::vector<int64_t>& s, DType dtype, uint64_t seed, rt::CompileCache& cache) {
            return run(dev, shape_of(s), s[3], dtype, seed, &cache, options);
          }};
}

// The routes --size names: T,E,k (softmax of the top k) or T,E,k,G,TG (DeepSeek-V3's sigmoid
// scoring over G groups keeping TG of them, weights normalized and scaled by 2.5); `logits`
// bfloat16 or float32.
moe::RouteConfig route_config(const std::vector<int64_t>& s, DType logits) {
  moe::RouteConfig c{s[0], s[1], s[2], moe::Scoring::SoftmaxTopK, logits};
  if (s.size() == 5) {
    c.scoring = moe::Scoring::SigmoidGroupedTopK;
    c.n_group = s[3];
    c.topk_group = s[4];
    c.scaling = 2.5;
  }
  return c;
}

// The layer --size names: T,E,k,D,F (softmax of the top k, float32 logits).
moe::MoeLayerConfig layer_config(const std::vector<int64_t>& s) {
  moe::MoeLayerConfig c;
  c.route = {s[0], s[1], s[2], moe::Scoring::SoftmaxTopK, dtypes::float32};
  c.hidden = s[3];
  c.ffn = s[4];
  return c;
}

const std::map<std::string, MoeKernel>& kernels() {
  static const std::map<std::string, MoeKernel> all = {
      {"moe_dispatch", permute(moe::run_dispatch)},
      {"moe_dispatch_fp8", permute(moe::run_dispatch, {.fp8 = true})},
      {"moe_combine", permute(moe::run_combine)},
      {"moe_dispatch_backward", permute(moe::run_dispatch_backward)},
      {"moe_combine_backward", permute(moe::run_combine_backward)},
      {"moe_route",
       {"T,E,k", {300, 64, 8}, true, [](rt::Device& dev, const std::vector<int64_t>& s, DType dtype, uint64_t seed, rt::CompileCache& cache) {
          return moe::run_route(dev, route_config(s, dtype), seed, &cache);
        }}},
      {"moe_route_grouped",
       {"T,E,k,G,TG", {300, 256, 8, 8, 4}, true, [](rt::Device& dev, const std::vector<int64_t>& s, DType dtype, uint64_t seed, rt::CompileCache& cache) {
          return moe::run_route(dev, route_config(s, dtype), seed, &cache);
        }}},
      {"moe_align",
       {"T,E,k", {300, 64, 8}, false, [](rt::Device& dev, const std::vector<int64_t>& s, DType, uint64_t seed, rt::CompileCache& cache) {
          return moe::run_align(dev, shape_of(s), seed, &cache);
        }}},
      {"moe_router",
       {"T,E,k", {300, 64, 8}, true, [](rt::Device& dev, const std::vector<int64_t>& s, DType dtype, uint64_t seed, rt::CompileCache& cache) {
          return moe::run_router(dev, route_config(s, dtype), 256, seed, &cache);
        }}},
      {"moe_route_backward",
       {"T,E,k", {300, 64, 8}, false, [](rt::Device& dev, const std::vector<int64_t>& s, DType, uint64_t seed, rt::CompileCache& cache) {
          return moe::run_route_backward(dev, shape_of(s), {}, seed, &cache);
        }}},
      {"moe_grouped_gemm",
       {"T,E,k,N,K", {300, 4, 2, 256, 128}, false, [](rt::Device& dev, const std::vector<int64_t>& s, DType, uint64_t seed, rt::CompileCache& cache) {
          return moe::run_grouped_gemm(dev, shape_of(s), s[3], s[4], seed, &cache);
        }}},
      {"moe_layer",
       {"T,E,k,D,F", {128, 8, 2, 128, 256}, false,
        [](rt::Device& dev, const std::vector<int64_t>& s, DType, uint64_t seed, rt::CompileCache& cache) {
          return moe::run_moe_layer(dev, layer_config(s), seed, &cache);
        },
        [](const std::vector<int64_t>& s) { layer_config(s).validate(); }}},
  };
  return all;
}

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

bool is_moe_kernel(const std::string& name) { return kernels().count(name) > 0; }

gemm::RunResult run_moe(const std::string& kernel, rt::Device& device, const std::vector<int64_t>& size, std::optional<DType> dtype,
                        uint64_t seed, rt::CompileCache& cache) {
  const MoeKernel& k = kernels().at(kernel);
  const std::vector<int64_t>& s = size.empty() ? k.default_size : size;
  if (s.size() != k.default_size.size()) throw UsageError("run: " + kernel + "'s --size is " + k.size_form);
  if (dtype && !k.takes_dtype) throw UsageError("run: " + kernel + " takes no --dtype");
  if (dtype && *dtype != dtypes::bfloat16 && *dtype != dtypes::float32)
    throw UsageError("run: " + kernel + "'s " + (kernel.starts_with("moe_route") ? "logits" : "rows") + " (--dtype) are bfloat16 or float32");
  if (k.validate) k.validate(s);  // bad sizes fail before anything is printed
  else shape_of(s).validate();
  const std::string what = k.takes_dtype ? " " + dtype.value_or(dtypes::bfloat16).name() : "";
  std::printf("%s %s=%s%s on %s (seed %llu)\n", kernel.c_str(), k.size_form.c_str(), joined(s).c_str(), what.c_str(), device.name().c_str(),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return k.run(device, s, dtype.value_or(dtypes::bfloat16), seed, cache);
}

gemm::RunResult run_moe_on_mesh(const std::string& kernel, rt::Mesh& mesh, const std::vector<int64_t>& size, bool dtype_given, uint64_t seed,
                                rt::CompileCache& cache) {
  if (kernel != "moe_layer") throw UsageError("run: only moe_layer runs over a mesh of devices (expert-parallel); " + kernel + " takes one device");
  if (dtype_given) throw UsageError("run: moe_layer takes no --dtype");
  const MoeKernel& k = kernels().at(kernel);
  const std::vector<int64_t>& s = size.empty() ? k.default_size : size;
  if (s.size() != k.default_size.size()) throw UsageError("run: " + kernel + "'s --size is " + k.size_form);
  k.validate(s);
  const auto devices = static_cast<int64_t>(mesh.size());
  if (mesh.shape().size() != 1 || s[0] % devices || s[1] % devices)
    throw UsageError("run: expert-parallel moe_layer takes a 1-D mesh whose device count divides T and E (T=" + std::to_string(s[0]) +
                     ", E=" + std::to_string(s[1]) + ", mesh " + mesh.name() + ")");
  std::printf("%s %s=%s on %s, expert-parallel, against %s alone (seed %llu)\n", kernel.c_str(), k.size_form.c_str(), joined(s).c_str(),
              mesh.name().c_str(), mesh.device(0).name().c_str(), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::string collectives;
  gemm::RunResult r = moe::run_moe_layer(mesh.device(0), layer_config(s), seed, &cache, {.expert_parallel = &mesh, .collectives = &collectives});
  if (!collectives.empty()) std::printf("all-to-alls: %s\n", collectives.c_str());
  return r;
}

}  // namespace weft::cli
