// The MoE feed-forward layer, forward, end to end on device buffers:
//
//   route      logits [T, E]                 -> expert_ids, weights [T*k]           (route.h)
//   align      expert_ids, weights           -> the routing plan                    (align.h)
//   dispatch   X [T, D]                      -> Xs [R, D]    Xs[r] = X[row_token[r]] (permute.h)
//   gate/up    Xs, W1 [E, 2F, D]             -> H [R, 2F]    H[r] = Xs[r] W1[e]^T   (grouped_gemm.h)
//   activation H                             -> A [R, F]     silu(H[:, :F]) * H[:, F:] (activation.h)
//   down       A, W2 [E, D, F]               -> Ys [R, D]    Ys[r] = A[r] W2[e]^T   (grouped_gemm.h)
//   combine    Ys, dest_row, weights         -> Y [T, D]     Y[t] = sum_j w * Ys[dest_row] (permute.h)
//
// R = MoeShape::max_rows(), e = the expert of row r's block. Every tensor is bf16 but the logits
// (float32 or bfloat16), the plan (int32 / float32) and the correction bias (float32); the GEMMs
// and the activation compute in fp32 and round once to bf16, and combine sums in fp32 and rounds
// once. W1's rows [0, F) of each expert make the gate, rows [F, 2F) the up projection.
//
// MoeLayer compiles its kernels once (route, align's two, dispatch, one grouped GEMM for both
// projections — N and K are bound at launch —, the activation, combine) and forward() launches
// seven (route_counting, align_place, dispatch, the two products, the activation, combine) back
// to back with no host synchronization: every buffer is sized for the
// worst case (R rows), so nothing waits for the plan's counts.
//
// Padding rows (row_token -1): dispatch writes zeros, the gate/up GEMM computes them (zeros), the
// activation writes zeros without reading H, the down GEMM computes them (zeros) and combine
// never reads them. Rows of unused blocks (past offsets[E]) are left unwritten in H and Ys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/moe/activation.h"
#include "weft/moe/grouped_gemm.h"
#include "weft/moe/permute.h"
#include "weft/moe/router.h"
#include "weft/runtime/mesh.h"

namespace weft::moe {

struct MoeLayerConfig {
  RouteConfig route;         // T, E, k, the scoring and the logits' dtype
  int64_t hidden = 0;        // D: the rows of X and Y
  int64_t ffn = 0;           // F: an expert's intermediate size (H has 2F columns)
  int64_t block_rows = 256;  // the plan's row block: a multiple of grouped_gemm_block_rows (256 on CDNA, 128 on NVIDIA)

  MoeShape shape() const { return {route.tokens, route.experts, route.top_k, block_rows}; }
  // Throws weft::Error naming the bad field: the route's (RouteConfig::validate), the shape's
  // (MoeShape::validate), D and F in [8, 32768] and multiples of 8 (the grouped GEMM's K).
  void validate() const;
};

// The layer's intermediate buffers on a device: the plan (and align's workspace), Xs [R, D],
// H [R, 2F], A [R, F], Ys [R, D]. Filled with 0xCD bytes (poison) when allocated.
struct MoeLayerBuffers {
  PlanBuffers plan;
  rt::OwnedArray xs, h, a, ys;
};
MoeLayerBuffers allocate_layer(rt::Device& device, const MoeLayerConfig& config);

class MoeLayer {
 public:
  // Compiles every kernel for `device`. Throws weft::Error for a bad config, or a block_rows the
  // device's grouped GEMM cannot take.
  MoeLayer(rt::Device& device, const MoeLayerConfig& config, rt::CompileCache* cache = nullptr);

  // x [T, D] bf16, logits [T, E] of config.route.logits, bias [E] float32 (SigmoidGroupedTopK;
  // ignored and may be null otherwise), w1 [E, 2F, D] and w2 [E, D, F] bf16, y [T, D] bf16 (out),
  // `buffers` from allocate_layer for this config. Launches only: the caller synchronizes.
  // Throws weft::Error naming a buffer of another dtype or size, before any launch.
  void forward(rt::Device& device, const rt::DeviceArray& x, const rt::DeviceArray& logits, const rt::DeviceArray* bias,
               const rt::DeviceArray& w1, const rt::DeviceArray& w2, const rt::DeviceArray& y, const MoeLayerBuffers& buffers) const;

  const MoeLayerConfig& config() const { return config_; }
  // The compile times of all the kernels, added (cached: every one came from the cache).
  rt::CompileTimes compile_times() const;

 private:
  MoeLayerConfig config_;
  Router router_;
  Dispatch dispatch_;
  GroupedGemm gemm_;
  SiluMul activation_;
  Combine combine_;
};

// ---- the host reference -------------------------------------------------------------------------
// The exact values of the layer's bf16 inputs: X [T, D], W1 [E, 2F, D], W2 [E, D, F], row-major.
struct MoeLayerHost {
  std::vector<double> x, w1, w2;
};

// Y [T, D] for a plan (the device's: route's choices are checked against route's own
// reference first), computed in double and rounded to bf16 where the device rounds (H, A, Ys and
// Y), with a tolerance per element: a bound on |device - reference| carried through the stages.
// Each stage adds its fp32 arithmetic (an fp32 sum of K exact bf16 products is within
// (K+1) 2^-24 of the sum of their magnitudes; the activation's exp2, reciprocal and products
// within (8 + |g|) 2^-22 relative) and the two roundings to bf16 (2^-8 relative each, the device's
// and the reference's), and passes its inputs' bounds on (through the weights' magnitudes in the
// GEMMs, silu's slope of at most 1.1 in the activation, the routing weights in combine).
struct MoeLayerReference {
  std::vector<double> y, tolerance;
};
MoeLayerReference moe_layer_reference(const MoeLayerConfig& config, const MoeLayerHost& host, const RoutingPlan& plan);

// What run_moe_layer draws, and the faults a test may inject.
struct MoeLayerRunOptions {
  // The upper half of the experts get logits of -100 (softmax scoring; needs k <= E/2): no token
  // routes to them, so their blocks are empty.
  bool empty_experts = false;
  // The device's W1 differs from the reference's in one element (+64 at [e, 0, 0] of the first
  // token's first expert): the check must fail.
  bool perturb_weight = false;
  // Weights that make the layer the identity, so that Y must equal X bit for bit (needs k = 1,
  // whose softmax weight is exactly 1, and D = F): X's column 0 holds 1; expert e's gate rows of
  // W1 hold 32 in column 0 (g = 32: sigmoid(32) rounds to 1 in fp32, so silu(g) = g exactly),
  // its up rows the identity times 2^(e mod 4), and W2 the identity times 2^-(e mod 4) / 32. Every
  // step is then exact; an expert's W1 paired with another's W2 would scale its rows.
  bool identity = false;
  // Also run the layer expert-parallel over this 1-D mesh (expert_parallel.h) on the same inputs,
  // and require its Y to equal the single device's bit for bit. The single device should be
  // one of the mesh's (any device of the same target gives the same bits).
  rt::Mesh* expert_parallel = nullptr;
  // Where given (with expert_parallel), set to the backend its all-to-alls ran on
  // (rt::Collectives::backend: "nccl ..." or "host ...").
  std::string* collectives = nullptr;
};

// The host entry: random logits (as run_route draws them), X in [-1, 1], W1 and W2 uniform in
// +-2^-floor(log2(K) / 2), about 1/sqrt(K) (all exact bf16 values), from `seed`; poisoned
// outputs and intermediates, one forward, and the checks: route's ids and weights
// (check_route), the plan bit for bit (plan_reference of the device's choices), each stage
// against the reference of that stage computed from the device's own input to it (Xs bit for
// bit; H, A, Ys and Y within one stage's bound; padding rows zero), Y against
// moe_layer_reference end to end, (options.identity) Y against X bit for bit, and
// (options.expert_parallel) the mesh's Y against the device's bit for bit.
gemm::RunResult run_moe_layer(rt::Device& device, const MoeLayerConfig& config, uint64_t seed, rt::CompileCache* cache = nullptr,
                              const MoeLayerRunOptions& options = {});

}  // namespace weft::moe
