#include "weft/gemm/mfma_tile.h"

#include <chrono>
#include <cmath>

#include "host_matrix.h"
#include "weft/dsl/builder.h"
#include "weft/kernels/mfma_layout.h"
#include "weft/kernels/fragments.h"

namespace weft::gemm {

UOp mfma_tile(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input) {
  const tile::MfmaLayout layout = tile::mfma_layout(arch, m, n, k, input);
  UOp d = placeholder({m, n}, dtypes::float32, 0), a = placeholder({m, k}, input, 1), b = placeholder({k, n}, input, 2);
  UOp lane = range(64, 0, AxisType::LOCAL);
  UOp ea = range(layout.a_elements, 1, AxisType::UPCAST), eb = range(layout.b_elements, 2, AxisType::UPCAST);
  auto [ar, ac] = layout.a(lane, ea);
  auto [br, bc] = layout.b(lane, eb);
  UOp a_frag = a[{ar, ac}].load().contract({ea});
  UOp b_frag = b[{br, bc}].load().contract({eb});
  std::vector<UOp> zeros(static_cast<size_t>(layout.d_elements), constant(0.0, dtypes::float32));
  UOp acc = wmma(a_frag, b_frag, vectorize(zeros), layout.shape);
  std::vector<UOp> stores;
  for (int64_t e = 0; e < layout.d_elements; ++e) {
    auto [dr, dc] = layout.d(lane, constant(Wide(e)));
    stores.push_back(d[{dr, dc}].store(acc.gep(e)));
  }
  return sink({"mfma_tile"}, {group(stores).end({lane})});
}

RunResult run_mfma_tile(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                        rt::CompileCache* cache) {
  return run_matrix_product(device, mfma_tile(device.arch(), m, n, k, input), m, n, k, input, identity_b, seed, cache);
}

UOp mfma_gemm(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input) {
  using namespace tile;
  constexpr int64_t kTile = 32, kStep = 32;
  if (m <= 0 || n <= 0 || k <= 0 || m % kTile || n % kTile || k % kStep)
    throw Error("mfma_gemm: M and N must be positive multiples of " + std::to_string(kTile) + " and K of " + std::to_string(kStep) +
                "; got M=" + std::to_string(m) + ", N=" + std::to_string(n) + ", K=" + std::to_string(k));
  auto size = [](int64_t v) { return constant(Wide(v)); };
  const gl d = global(0, size(m), size(n), dtypes::float32), a = global(1, size(m), size(k), input), b = global(2, size(k), size(n), input);
  // One wave per 32 x 32 tile of D.
  Workgroup wg(std::string(arch), {size(n / kTile), size(m / kTile)}, 1, 1);
  const UOp row0 = wg.block(1) * kTile, col0 = wg.block(0) * kTile, first = size(0);
  // A's 32 x 32 K step and B's 32 x 32 (K x N, as B is stored), one stage each.
  const st as = shared(kTile, kStep, input, SharedSwizzle::st_16x32), bs = shared(kStep, kTile, input, SharedSwizzle::st_16x32);
  const UOp ko = wg.range(k / kStep, AxisType::LOOP);
  const UOp fills = group({load(wg, as, first, a, row0, ko * kStep), load(wg, bs, first, b, ko * kStep, col0)});
  // The direct-to-LDS fills land (vmcnt 0), then the barrier publishes them; the pipeline ends
  // the loop body with a barrier before the next step refills the tiles.
  const UOp ready = barrier({wait_counts({.vm = 0}, {fills})});
  const tile::rt ar = load(wg, as.after({ready}), first, MatrixOperand::A, kTile, first);
  const tile::rt br = load_kn(wg, bs.after({ready}), first, kTile, first);
  const acc sum = mma_ABt(wg, zero(accumulator(wg, kTile, kTile), wg), ar, br, {ko});
  return sink({"mfma_gemm"}, {store(wg, d, sum, row0, col0)});
}

RunResult run_mfma_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                        rt::CompileCache* cache) {
  if (identity_b && k != n) throw Error("run_mfma_gemm: an identity B needs K == N");
  return run_matrix_product(device, mfma_gemm(device.arch(), m, n, k, input), m, n, k, input, identity_b, seed, cache);
}

}  // namespace weft::gemm
