#include "example_kernels.h"

#include "weft/attention/flash_attention.h"
#include "weft/dsl/builder.h"
#include "weft/gemm/hk_gemm.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/moe/grouped_gemm.h"
#include "weft/moe/layer.h"
#include "weft/moe/permute.h"
#include "weft/moe/router.h"
#include "weft/moe/route_backward.h"
#include "weft/gemm/mfma_tile.h"
#include "weft/gemm/mma_tile.h"

namespace weft::examples {
namespace {

// out[r, c] = in[r, c] + 1 over a 64x64 tile, with the thread's position computed the way
// flattened launches compute it: one linear id split back into row and column. The
// simplifier folds (g*64 + l) // 64 to g and (g*64 + l) % 64 to l.
UOp add_one_flat() {
  UOp in = placeholder({64, 64}, dtypes::float32, 1);
  UOp out = placeholder({64, 64}, dtypes::float32, 0);
  UOp g = range(64, 0, AxisType::GLOBAL);
  UOp l = range(64, 1, AxisType::LOCAL);
  UOp linear = g * 64 + l;
  UOp row = linear / 64, col = linear % 64;
  UOp store = out[{row, col}].store(in[{row, col}].load() + 1.0);
  return sink({"add_one_flat"}, {store.end({g, l})});
}

// A 2-D tiled matmul: 16x16 tiles of C per workgroup, one element per thread, a REDUCE over
// K. Index expressions carry redundant structure the simplifier removes.
UOp matmul_tiled() {
  constexpr int64_t M = 128, N = 128, K = 64, T = 16;
  UOp a = placeholder({M, K}, dtypes::float32, 1);
  UOp b = placeholder({K, N}, dtypes::float32, 2);
  UOp c = placeholder({M, N}, dtypes::float32, 0);
  UOp gm = range(M / T, 0, AxisType::GLOBAL), gn = range(N / T, 1, AxisType::GLOBAL);
  UOp lm = range(T, 2, AxisType::LOCAL), ln = range(T, 3, AxisType::LOCAL);
  UOp k = range(K, 4, AxisType::REDUCE);
  UOp row = (gm * T + lm) % M, col = (gn * T + ln) * 1 + 0;
  UOp acc = (a[{row, k}].load() * b[{k, col}].load()).reduce(Op::ADD, {k});
  UOp store = c[{row, col}].store(acc);
  return sink({"matmul_tiled"}, {store.end({gm, gn, lm, ln})});
}

// out[i] = in[i] * scale for i < n, with n and scale bound at launch.
UOp scale_n() {
  UOp n = variable("n", 1, 1 << 20, dtypes::int32);
  UOp scale = variable_f32("scale");
  UOp in = placeholder(std::vector<UOp>{n}, dtypes::float32, 1);
  UOp out = placeholder(std::vector<UOp>{n}, dtypes::float32, 0);
  UOp i = range(n, 0, AxisType::GLOBAL);
  UOp store = out[i].store(in[i].load() * scale);
  return sink({"scale_n"}, {store.end({i})});
}

}  // namespace

const std::vector<Example>& all() {
  static const std::vector<Example> examples{
      {"matmul_relu", "C = relu(A*B), 256x256x256 float32: 64x64 tiles, shared A/B, 8x4 fp32 fragments per thread (runnable)",
       [](const std::string&) { return gemm::matmul_relu(256, 256, 256, dtypes::float32); }, true,
       [](const std::string&, const std::vector<int64_t>& s) { return gemm::matmul_relu(s[0], s[1], s[2], dtypes::float32); }},
      {"hk_gemm", "C = A*B^T, bf16 in, fp32 accumulate, bf16 out, run-time M, N, K: HipKittens' 256x256 tile, 8 waves as 2x4, st_16x32 shared tiles filled direct-to-LDS in 2 stages (runnable on emu:gfx950/gfx942)",
       [](const std::string& target) { return gemm::hk_gemm(target, dtypes::bfloat16); }, true},
      {"mfma_tile", "D = A*B on one 16x16x16 float16 MFMA tile through wmma, one wave (runnable)",
       [](const std::string& target) { return gemm::mfma_tile(target, 16, 16, 16, dtypes::float16); }, true,
       [](const std::string& target, const std::vector<int64_t>& s) { return gemm::mfma_tile(target, s[0], s[1], s[2], dtypes::float16); }},
      {"mma_tile", "D = A*B on one m16n8k16 float16 mma.sync tile through wmma, one warp (runnable on cuda)",
       [](const std::string&) { return gemm::mma_tile(dtypes::float16); }, true},
      {"mma_gemm", "D = A*B, 1024^3 bfloat16 on NVIDIA tensor cores, on the tile layer: 2x4 warps, mma.sync m16n8k16, swizzle_64b shared tiles filled by 16-byte cp.async in 2 stages, 128x128 tiles",
       [](const std::string&) { return gemm::mma_gemm(1024, 1024, 1024, dtypes::bfloat16); }},
      {"hopper_gemm", "C = A*B^T, bf16 in, fp32 accumulate, bf16 out, run-time M, N, K, on sm_90a: a producer warpgroup issues TMA loads into a 4-stage mbarrier ring, two consumer warpgroups issue m64n256k16 wgmmas, 128x256 blocks in L2-grouped order (runnable on cuda, sm_90)",
       [](const std::string&) { return gemm::hopper_gemm(dtypes::bfloat16); }, true},
      {"hopper_gemm_ping_pong", "hopper_gemm's ping-pong schedule: each consumer warpgroup its own 128x128 blocks (m64n128k16 wgmmas, a 6-stage ring), the two taking a workgroup's blocks in turn so that one's epilogue overlaps the other's MMAs (weft bench hopper_gemm_ping_pong)",
       [](const std::string&) {
         gemm::HopperGemmSpec spec;
         spec.schedule = gemm::HopperSchedule::PingPong;
         return gemm::hopper_gemm(spec);
       }},
      {"flash_attention", "O = softmax(Q K^T / sqrt(d)) V per head, bf16 in and out, fp32 softmax, d = 128, run-time BH, SQ, SK: 64 query rows "
                          "a workgroup as 4 waves of 16, K and V in 2 stages of 64 keys (32 on gfx942), the online softmax in registers "
                          "(runnable; --mask causal for the causal mask)",
       [](const std::string& target) { return attention::flash_attention(target, {}); }, true},
      {"add_one_flat", "out = in + 1 on a 64x64 tile, indexed through a flattened thread id",
       [](const std::string&) { return add_one_flat(); }},
      {"matmul_tiled", "C = A*B, 128x128x64 in 16x16 tiles, one element per thread", [](const std::string&) { return matmul_tiled(); }},
      {"scale_n", "out[i] = in[i] * scale for i < n, both bound at launch", [](const std::string&) { return scale_n(); }},
      {"moe_route", "MoE route: each token's top k of E experts with softmax weights, one wave per token, E = 64, k = 8 (runnable)",
       [](const std::string& target) { return moe::route({64, 64, 8, moe::Scoring::SoftmaxTopK, dtypes::bfloat16}, target); }, true},
      {"moe_route_grouped", "MoE route, DeepSeek-V3's sigmoid scoring with grouped top-k: E = 256 in 8 groups, 4 kept, k = 8 (runnable)",
       [](const std::string& target) { return moe::route({64, 256, 8, moe::Scoring::SigmoidGroupedTopK, dtypes::bfloat16, 8, 4, true, 2.5}, target); }, true},
      {"moe_align", "MoE align, first kernel: per-chunk expert counts (align_place then scans them into the plan) (runnable)",
       [](const std::string&) { return moe::align_count({300, 64, 8, 256}); }, true},
      {"moe_align_place", "MoE align, second kernel: every choice's row from the span counts, stably (ballot match masks within a wave), the padding rows and the block experts (`weft run moe_align` runs it)",
       [](const std::string& target) { return moe::align_place({16384, 256, 8, 128}, target); }},
      {"moe_router", "MoE route then align on device buffers: the whole routing plan, no host synchronization (runnable; dump prints its first kernel, route_counting, at the benchmark's T = 16384, E = 256, k = 8)",
       [](const std::string& target) { return moe::route_counting({16384, 256, 8, moe::Scoring::SoftmaxTopK, dtypes::bfloat16}, target); }, true},
      {"moe_dispatch", "MoE dispatch: Xs[r] = X[row_token[r]] (zeros for padding rows), bf16 rows of D = 256, one workgroup per row (runnable)",
       [](const std::string&) { return moe::dispatch_kernel(256, dtypes::bfloat16); }, true},
      {"moe_dispatch_fp8", "MoE dispatch quantized to fp8 e4m3 with per-row scales, D = 256 (runnable)",
       [](const std::string&) { return moe::dispatch_fp8_kernel(256, dtypes::bfloat16); }, true},
      {"moe_combine", "MoE combine: Y[t] = sum_j w[t,j] * Ys[dest_row[t,j]] in fp32, k = 2, D = 256 (runnable)",
       [](const std::string&) { return moe::combine_kernel(256, 2, dtypes::bfloat16, dtypes::bfloat16); }, true},
      {"moe_dispatch_backward", "dispatch's backward: dX[t] = sum_j dXs[dest_row[t,j]], a gather-sum, k = 2, D = 256 (runnable)",
       [](const std::string&) { return moe::dispatch_backward_kernel(256, 2, dtypes::bfloat16, dtypes::bfloat16); }, true},
      {"moe_combine_backward", "combine's backward to the expert rows and the routing weights, k = 2, D = 256 (runnable)",
       [](const std::string&) { return moe::combine_backward_kernel(256, 2, dtypes::bfloat16); }, true},
      {"moe_route_backward", "the routing weights' backward to the logits (softmax of the top k), E = 64, k = 8 (runnable)",
       [](const std::string&) { return moe::route_backward_kernel(64, 8, {}); }, true},
      {"moe_grouped_gemm", "MoE grouped GEMM: Ys = Xs * W[e]^T per expert row block, on the tile layer's GEMM body (runnable)",
       [](const std::string& target) { return moe::grouped_gemm(target, 256); }, true},
      {"moe_layer", "MoE feed-forward layer: route, align, dispatch, gate/up grouped GEMM, SiLU * up, down grouped GEMM, combine "
                    "on device buffers (runnable; prints the SiLU * up activation, F = 256)",
       [](const std::string&) { return moe::silu_mul_kernel(256); }, true},
  };
  return examples;
}

const Example* find(const std::string& name) {
  for (const Example& e : all())
    if (e.name == name) return &e;
  return nullptr;
}

std::string runnable_names() {
  std::string names;
  for (const Example& e : all())
    if (e.runnable) names += (names.empty() ? "" : ", ") + e.name;
  return names;
}

}  // namespace weft::examples
