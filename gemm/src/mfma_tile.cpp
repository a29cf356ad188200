#include "weft/gemm/mfma_tile.h"

#include <chrono>
#include <cmath>

#include "host_matrix.h"
#include "weft/dsl/builder.h"
#include "weft/kernels/mfma_layout.h"
#include "weft/kernels/tile.h"

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
  constexpr int64_t kTile = 32, kStep = 32;
  if (m <= 0 || n <= 0 || k <= 0 || m % kTile || n % kTile || k % kStep)
    throw Error("mfma_gemm: M and N must be positive multiples of " + std::to_string(kTile) + " and K of " + std::to_string(kStep) +
                "; got M=" + std::to_string(m) + ", N=" + std::to_string(n) + ", K=" + std::to_string(k));
  const tile::MfmaLayout layout = tile::mfma_layout(arch, 16, 16, arch == "gfx950" ? 32 : 16, input);
  UOp d = placeholder({m, n}, dtypes::float32, 0), a = placeholder({m, k}, input, 1), b = placeholder({k, n}, input, 2);
  tile::TileBlock blk({n / kTile, m / kTile}, 4, 16);
  UOp bx = blk.block(0), by = blk.block(1);
  UOp a_s = alloc_shared({kTile, kStep}, input, 0), b_s = alloc_shared({kStep, kTile}, input, 1);
  tile::MfmaAccumulator acc = blk.clear(blk.mfma_accumulator(kTile, kTile, layout, 2));
  UOp ko = blk.range(k / kStep, AxisType::LOOP);
  UOp a_copy = blk.copy_to_shared(a_s, a, by * kTile, ko * kStep);
  UOp b_copy = blk.copy_to_shared(b_s, b, ko * kStep, bx * kTile);
  acc = blk.gemm(a_s.after({a_copy, b_copy}), b_s.after({a_copy, b_copy}), acc, {ko});
  return sink({"mfma_gemm"}, {blk.copy_from_fragment(acc, d, by * kTile, bx * kTile)});
}

RunResult run_mfma_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                        rt::CompileCache* cache) {
  if (identity_b && k != n) throw Error("run_mfma_gemm: an identity B needs K == N");
  return run_matrix_product(device, mfma_gemm(device.arch(), m, n, k, input), m, n, k, input, identity_b, seed, cache);
}

}  // namespace weft::gemm
