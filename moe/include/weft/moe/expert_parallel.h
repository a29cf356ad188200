// The MoE layer over a 1-D mesh of devices, expert-parallel: device p holds tokens
// [p*T/P, (p+1)*T/P) (X, the logits, Y) and experts [p*E/P, (p+1)*E/P) (their W1 and W2).
//
//   route      on each token's device: its k experts and weights
//   all-to-all each (token, choice)'s row of X to the device that holds the expert
//   experts    on each expert's device: the layer's own kernels (layer.h) over the rows it
//              received, as a layer of k = 1 whose logits pick the row's expert (weight 1 exactly)
//   all-to-all each row's result back to its token's device, in (token, choice) order
//   combine    on each token's device: Y[t] = sum_j w_j * row_j, the layer's combine kernel
//
// Every row is computed with the same arithmetic as on one device (a GEMM row does not depend on
// the rows beside it, combine sums the k choices in the same order), so Y equals MoeLayer's on one
// device bit for bit. The all-to-alls go through host memory (the mesh's reshard does the same);
// the expert stage is sized for the worst case, every choice on one device's experts.
#pragma once

#include <memory>
#include <vector>

#include "weft/moe/layer.h"
#include "weft/runtime/mesh.h"

namespace weft::moe {

class ExpertParallelMoe {
 public:
  // `config` is the whole layer's (all T tokens, all E experts); T and E must divide over the
  // mesh's devices. Compiles the kernels on every device. Throws weft::Error for a config the
  // layer rejects, a mesh of more than one axis, or T or E that do not divide.
  ExpertParallelMoe(rt::Mesh& mesh, const MoeLayerConfig& config, rt::CompileCache* cache = nullptr);

  // x [T, D] and logits [T, E] sharded over tokens ({{0}}), w1 [E, 2F, D] and w2 [E, D, F] over
  // experts ({{0}}), y [T, D] over tokens (out). SoftmaxTopK scoring only (no correction bias).
  // Synchronizes the devices at the two all-to-alls.
  void forward(rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits, const rt::ShardedArray& w1,
               const rt::ShardedArray& w2, const rt::ShardedArray& y) const;

  const MoeLayerConfig& config() const { return config_; }

 private:
  struct Choice;
  // The route's results: per device of an expert, the choices routed to it; per token device, its
  // weights (on the device) and its rows of X (host).
  struct Routed {
    std::vector<std::vector<Choice>> by_device;
    std::vector<rt::OwnedArray> weights;
    std::vector<std::vector<uint8_t>> x;
  };
  void check_arrays(const rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits, const rt::ShardedArray& w1,
                    const rt::ShardedArray& w2, const rt::ShardedArray& y) const;
  Routed route_tokens(rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits) const;
  std::vector<uint8_t> run_experts(rt::Mesh& mesh, size_t o, const Routed& routed, const rt::ShardedArray& w1, const rt::ShardedArray& w2) const;

  MoeLayerConfig config_;
  std::vector<const rt::Device*> devices_;  // the mesh's, in order
  MoeLayerConfig expert_config_;  // one device's experts: k = 1, every choice of the batch as a token
  MoeShape home_shape_;           // one device's tokens, for combine's row buffer
  std::vector<rt::CompiledKernel> routes_;  // per device: route, on its tokens
  std::vector<std::unique_ptr<MoeLayer>> experts_;
  std::vector<std::unique_ptr<Combine>> combines_;
};

}  // namespace weft::moe
