// The MoE layer over a 1-D mesh of devices, expert-parallel: device p holds tokens
// [p*T/P, (p+1)*T/P) (X, the logits, Y) and experts [p*E/P, (p+1)*E/P) (their W1 and W2).
//
//   route      on each token's device: its k experts and weights (the expert ids read back by
//              the host, which sizes the all-to-alls from them)
//   dispatch   on each token's device: its (token, choice) rows of X, grouped by the device
//              holding the expert (the dispatch kernel, permute.h)
//   all-to-all the rows to the experts' devices (rt::Collectives: NCCL between CUDA GPUs,
//              through host memory otherwise)
//   experts    on each expert's device: the layer's own kernels (layer.h) over the rows it
//              received, as a layer of k = 1 whose logits pick the row's expert (weight 1 exactly)
//   all-to-all each row's result back to its token's device, to the position its row left from
//   combine    on each token's device: Y[t] = sum_j w_j * row_j, the layer's combine kernel
//
// Every row is computed with the same arithmetic as on one device (a GEMM row does not depend on
// the rows beside it, combine sums the k choices in the same order), so Y equals MoeLayer's on one
// device bit for bit. The expert stage is sized for the worst case, every choice on one device's
// experts, so its kernels compile once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/moe/layer.h"
#include "weft/moe/permute.h"
#include "weft/runtime/collectives.h"
#include "weft/runtime/mesh.h"

namespace weft::moe {

class ExpertParallelMoe {
 public:
  // `config` is the whole layer's (all T tokens, all E experts); T and E must divide over the
  // mesh's devices. Compiles the kernels on every device. Throws weft::Error for a config the
  // layer rejects, a mesh of more than one axis, or T or E that do not divide.
  ExpertParallelMoe(rt::Mesh& mesh, const MoeLayerConfig& config, rt::CompileCache* cache = nullptr);
  ~ExpertParallelMoe();

  // x [T, D] and logits [T, E] sharded over tokens ({{0}}), w1 [E, 2F, D] and w2 [E, D, F] over
  // experts ({{0}}), y [T, D] over tokens (out). SoftmaxTopK scoring only (no correction bias).
  // Reads the route's expert ids back to the host (the all-to-alls' sizes); synchronizes each
  // device after its expert stage and its combine.
  void forward(rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits, const rt::ShardedArray& w1,
               const rt::ShardedArray& w2, const rt::ShardedArray& y) const;

  const MoeLayerConfig& config() const { return config_; }
  std::string collectives() const;  // the all-to-alls' backend (rt::Collectives::backend)

 private:
  struct Choice;
  // The route's results: per device of an expert, the choices routed to it; per token device, its
  // weights (on the device).
  struct Routed {
    std::vector<std::vector<Choice>> by_device;
    std::vector<rt::OwnedArray> weights;
  };
  // The all-to-alls of one forward: counts[h][o] elements from token device h to expert device
  // o (counts_back the reverse), and per token device the tokens of its rows in send order
  // (dispatch's row_token, -1 past them) and each choice's row in the returned results (combine's
  // dest_row).
  struct Exchange {
    std::vector<std::vector<int64_t>> counts, counts_back;
    std::vector<std::vector<int32_t>> row_token, dest_row;
  };
  void check_arrays(const rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits, const rt::ShardedArray& w1,
                    const rt::ShardedArray& w2, const rt::ShardedArray& y) const;
  Routed route_tokens(rt::Mesh& mesh, const rt::ShardedArray& logits) const;
  Exchange exchange(const Routed& routed) const;
  std::vector<float> picks(const Routed& routed, size_t o) const;

  MoeLayerConfig config_;
  std::vector<const rt::Device*> devices_;  // the mesh's, in order
  MoeLayerConfig expert_config_;  // one device's experts: k = 1, every choice of the batch as a token
  MoeShape home_shape_;           // one device's tokens, for combine's row buffer
  std::vector<rt::CompiledKernel> routes_;  // per device: route, on its tokens
  std::vector<std::unique_ptr<Dispatch>> dispatches_;  // per device: its tokens' rows, in send order
  std::vector<std::unique_ptr<MoeLayer>> experts_;
  std::vector<std::unique_ptr<Combine>> combines_;
  std::unique_ptr<rt::Collectives> comm_;
};

}  // namespace weft::moe
