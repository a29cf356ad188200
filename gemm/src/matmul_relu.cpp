#include "weft/gemm/matmul_relu.h"

#include "host_matrix.h"

#include <chrono>
#include <cmath>

#include "weft/dsl/builder.h"
#include "weft/kernels/fragments.h"

namespace weft::gemm {
namespace {

constexpr int64_t kTile = kMatmulReluTile;
constexpr int64_t kWaves = 2, kThreadsX = 16;  // 128 threads as an 8 x 16 grid

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

UOp matmul_relu(int64_t m, int64_t n, int64_t k, DType dtype) {
  if (dtype != dtypes::float16 && dtype != dtypes::float32)
    throw Error("matmul_relu: inputs are float16 or float32, not " + dtype.name());
  if (m <= 0 || n <= 0 || k <= 0 || m % kTile || n % kTile || k % kTile)
    throw Error("matmul_relu: M, N and K must be positive multiples of the " + std::to_string(kTile) + "-wide tile; got M=" +
                std::to_string(m) + ", N=" + std::to_string(n) + ", K=" + std::to_string(k));
  using namespace tile;
  auto size = [](int64_t v) { return constant(Wide(v)); };
  const gl c = global(0, size(m), size(n), dtype), a = global(1, size(m), size(k), dtype), b = global(2, size(k), size(n), dtype);
  // One workgroup of two waves per 64x64 tile of C. The kernel uses no MFMA and no LDS DMA, so
  // its graph is the same on every target (it also renders for CUDA): the Workgroup names none.
  Workgroup wg("", {size(n / kTile), size(m / kTile)}, kWaves, 1);
  const UOp row0 = wg.block(1) * kTile, col0 = wg.block(0) * kTile, stage = size(0);
  // Fixed ids for the shared tiles and the fragment: the graph (and its cache key) is the same
  // however many kernels were built before.
  auto tile_of = [&](int64_t id) { return st{alloc_shared({kTile * kTile}, dtype, id), kTile, kTile, 1, dtype, shared_tile(SharedSwizzle::unswizzled, kTile, kTile, dtype)}; };
  const st as = tile_of(0), bs = tile_of(1);
  rf acc = zero(fragment(wg, kTile, kTile, dtypes::float32, kThreadsX, 2));
  const UOp ko = wg.range(k / kTile, AxisType::LOOP);
  const UOp fill = group({copy(wg, as, stage, a, row0, ko * kTile), copy(wg, bs, stage, b, ko * kTile, col0)});
  // T.gemm: the tiles as they are after both copies (insert_barriers adds the barrier after
  // them and the one at the end of the ko body).
  acc = fma_AB(wg, acc, as.after({fill}), bs.after({fill}), {ko});
  return sink({"matmul_relu"}, {store(wg, c, acc, row0, col0, relu)});
}

RunResult run_matmul_relu(rt::Device& device, int64_t m, int64_t n, int64_t k, DType dtype, uint64_t seed, rt::CompileCache* cache) {
  RunResult r;
  const UOp kernel = matmul_relu(m, n, k, dtype);
  rt::CompiledKernel compiled = rt::CompiledKernel::compile(device, kernel, cache);
  r.compile = compiled.times();
  std::mt19937_64 gen(seed);
  Eigen::MatrixXd ea, eb;
  auto a_bytes = random_matrix(dtype, m, k, gen, ea);
  auto b_bytes = random_matrix(dtype, k, n, gen, eb);
  const rt::OwnedArray a(device, rt::upload(device, dtype, a_bytes, "A"));
  const rt::OwnedArray b(device, rt::upload(device, dtype, b_bytes, "B"));
  std::vector<uint8_t> poison(static_cast<size_t>(m * n * dtype.itemsize()), 0xCD);
  const rt::OwnedArray c(device, rt::upload(device, dtype, poison, "C"));
  auto t = std::chrono::steady_clock::now();
  const rt::DeviceArray args[] = {c, a, b};
  compiled.launch(device, args);
  device.synchronize();
  r.run_seconds = seconds_since(t);
  const Eigen::MatrixXd got = read_matrix(dtype, rt::download(device, c), m, n);

  t = std::chrono::steady_clock::now();
  const Eigen::MatrixXd expect = (ea * eb).cwiseMax(0.0);
  const Eigen::MatrixXd magnitude = ea.cwiseAbs() * eb.cwiseAbs();  // sum of |a||b|: the accumulation's scale
  r.reference_seconds = seconds_since(t);
  // fp32 accumulation error grows with the sum of |a||b|; a float16 result adds one rounding.
  const double out_rounding = dtype == dtypes::float16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -23);
  const Eigen::MatrixXd tolerance = (1e-5 * magnitude + out_rounding * expect.cwiseAbs()).array() + 1e-6;
  r.check = compare(got, expect, tolerance, "C");
  return r;
}

}  // namespace weft::gemm
