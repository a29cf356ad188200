#include "weft/gemm/mma_tile.h"

#include "host_matrix.h"
#include "weft/dsl/builder.h"
#include "weft/kernels/mma_layout.h"

namespace weft::gemm {

UOp mma_tile(DType input) {
  const tile::MmaLayout layout = tile::mma_m16n8k16(input);
  UOp d = placeholder({16, 8}, dtypes::float32, 0), a = placeholder({16, 16}, input, 1), b = placeholder({16, 8}, input, 2);
  UOp lane = range(32, 0, AxisType::LOCAL);
  UOp ea = range(layout.a_elements, 1, AxisType::UPCAST), eb = range(layout.b_elements, 2, AxisType::UPCAST);
  auto [ar, ac] = layout.a(lane, ea);
  auto [br, bc] = layout.b(lane, eb);
  UOp a_frag = a[{ar, ac}].load().contract({ea});
  UOp b_frag = b[{br, bc}].load().contract({eb});
  std::vector<UOp> zeros(4, constant(0.0, dtypes::float32));
  UOp acc = wmma(a_frag, b_frag, vectorize(zeros), layout.shape);
  std::vector<UOp> stores;
  for (int64_t e = 0; e < layout.d_elements; ++e) {
    auto [dr, dc] = layout.d(lane, constant(Wide(e)));
    stores.push_back(d[{dr, dc}].store(acc.gep(e)));
  }
  return sink({"mma_tile"}, {group(stores).end({lane})});
}

RunResult run_mma_tile(rt::Device& device, DType input, bool identity_b, uint64_t seed, rt::CompileCache* cache) {
  return run_matrix_product(device, mma_tile(input), 16, 8, 16, input, identity_b, seed, cache);
}

}  // namespace weft::gemm

namespace weft::gemm {

UOp mma_gemm(int64_t m, int64_t n, int64_t k, DType input) {
  constexpr int64_t kTile = 128, kDepth = 32, kChunk = 8;  // kChunk: elements per 16-byte cp.async
  if (m <= 0 || n <= 0 || k <= 0 || m % kTile || n % kTile || k % kDepth)
    throw Error("mma_gemm: M and N must be positive multiples of " + std::to_string(kTile) + " and K of " + std::to_string(kDepth) +
                "; got M=" + std::to_string(m) + ", N=" + std::to_string(n) + ", K=" + std::to_string(k));
  const tile::MmaLayout layout = tile::mma_m16n8k16(input);
  UOp d = placeholder({m, n}, dtypes::float32, 0), a = placeholder({m, k}, input, 1), b = placeholder({k, n}, input, 2);
  UOp bx = range(n / kTile, 0, AxisType::GLOBAL), by = range(m / kTile, 1, AxisType::GLOBAL);
  // Lane = t + 4g (t: thread in its group of 4, g: group of 8), then 8 warps w: block (4, 8, 8).
  UOp t = range(4, 2, AxisType::LOCAL), g = range(8, 3, AxisType::LOCAL), w = range(8, 4, AxisType::LOCAL);
  int64_t id = 5;
  auto next = [&](int64_t size, AxisType axis) { return range(size, id++, axis); };
  const UOp lane = t + g * 4, thread = lane + w * 32;
  const UOp wm = w / 4, wn = w % 4;  // the warp's 64x32 part of the block tile
  // The accumulator: [4, 4] mma tiles of 16x8 per warp, a lane holding rows g, g+8 and columns
  // 2t, 2t+1 of each (strided rows, contiguous columns).
  UOp acc = alloc_fragment({4, 4, 16, 8}, dtypes::float32, {2, 3}, {g, t}, 2);
  {
    UOp tm = next(4, AxisType::UNROLL), tn = next(4, AxisType::UNROLL), i = next(2, AxisType::UPCAST), j = next(2, AxisType::UPCAST);
    acc = acc[{tm, tn, g + i * 8, t * 2 + j}].set(constant(0.0, dtypes::float32), {tm, tn, i, j});
  }
  UOp a_s = alloc_shared({kTile, kDepth}, input, 0), b_s = alloc_shared({kDepth, kTile}, input, 1);
  UOp ko = next(k / kDepth, AxisType::LOOP);
  // 256 threads copy 16 bytes at a time: 2 chunks each of A's 128x32 tile and of B's 32x128.
  UOp ca = next(2, AxisType::UNROLL), cb = next(2, AxisType::UNROLL);
  UOp chunk_a = ca * 256 + thread, chunk_b = cb * 256 + thread;
  UOp ra = chunk_a / (kDepth / kChunk), col_a = (chunk_a % (kDepth / kChunk)) * kChunk;
  UOp rb = chunk_b / (kTile / kChunk), col_b = (chunk_b % (kTile / kChunk)) * kChunk;
  UOp copy_a = async_copy(a_s[{ra, col_a}], a[{by * kTile + ra, ko * kDepth + col_a}], kChunk).end({ca});
  UOp copy_b = async_copy(b_s[{rb, col_b}], b[{ko * kDepth + rb, bx * kTile + col_b}], kChunk).end({cb});
  UOp as = a_s.after({copy_a, copy_b}), bs = b_s.after({copy_a, copy_b});
  // 2 k-steps of 16; one mma per 16x8 tile of the warp's 4 x 4.
  UOp ks = next(kDepth / 16, AxisType::LOOP), tm = next(4, AxisType::UNROLL), tn = next(4, AxisType::UNROLL);
  UOp ea = next(layout.a_elements, AxisType::UPCAST), eb = next(layout.b_elements, AxisType::UPCAST);
  auto [ar, ac] = layout.a(lane, ea);
  auto [br, bc] = layout.b(lane, eb);
  UOp a_frag = as[{wm * 64 + tm * 16 + ar, ks * 16 + ac}].load().contract({ea});
  UOp b_frag = bs[{ks * 16 + br, wn * 32 + tn * 8 + bc}].load().contract({eb});
  const UOp carried = acc.after({ks});
  std::vector<UOp> c_lanes, stores;
  for (int64_t e = 0; e < 4; ++e) c_lanes.push_back(carried[{tm, tn, g + (e / 2) * 8, t * 2 + e % 2}].load());
  UOp dv = wmma(a_frag, b_frag, vectorize(c_lanes), layout.shape);
  for (int64_t e = 0; e < 4; ++e) stores.push_back(acc[{tm, tn, g + (e / 2) * 8, t * 2 + e % 2}].store(dv.gep(e)));
  acc = acc.after({group(stores).end({ks, tm, tn, ko})});
  UOp om = next(4, AxisType::UNROLL), on = next(4, AxisType::UNROLL), i = next(2, AxisType::UPCAST), j = next(2, AxisType::UPCAST);
  UOp row = by * kTile + wm * 64 + om * 16 + g + i * 8, col = bx * kTile + wn * 32 + on * 8 + t * 2 + j;
  UOp out = d[{row, col}].store(acc[{om, on, g + i * 8, t * 2 + j}].load()).end({om, on, i, j, t, g, w, bx, by});
  return sink({"mma_gemm"}, {out});
}

RunResult run_mma_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                       rt::CompileCache* cache) {
  if (identity_b && k != n) throw Error("run_mma_gemm: an identity B needs K == N");
  return run_matrix_product(device, mma_gemm(m, n, k, input), m, n, k, input, identity_b, seed, cache);
}

}  // namespace weft::gemm
