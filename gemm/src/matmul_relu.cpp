#include "weft/gemm/matmul_relu.h"

#include "host_matrix.h"

#include <chrono>
#include <cmath>

#include "weft/dsl/builder.h"
#include "weft/kernels/tile.h"

namespace weft::gemm {
namespace {

constexpr int64_t kTile = kMatmulReluTile;
constexpr int64_t kThreadsY = 8, kThreadsX = 16;

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
  UOp c = placeholder({m, n}, dtype, 0), a = placeholder({m, k}, dtype, 1), b = placeholder({k, n}, dtype, 2);
  tile::TileBlock blk({n / kTile, m / kTile}, kThreadsY, kThreadsX);
  UOp bx = blk.block(0), by = blk.block(1);
  // Fixed ids for the shared tiles and the fragment: the graph (and its cache key) is the
  // same however many kernels were built before.
  UOp a_shared = alloc_shared({kTile, kTile}, dtype, 0), b_shared = alloc_shared({kTile, kTile}, dtype, 1);
  UOp acc = alloc_fragment({kTile, kTile}, dtypes::float32, {0, 1}, {blk.ty(), blk.tx()}, 2);
  acc = blk.clear(acc);
  UOp ko = blk.range(k / kTile, AxisType::LOOP);
  UOp a_copy = blk.copy_to_shared(a_shared, a, by * kTile, ko * kTile);
  UOp b_copy = blk.copy_to_shared(b_shared, b, ko * kTile, bx * kTile);
  acc = blk.gemm(a_shared.after({a_copy, b_copy}), b_shared.after({a_copy, b_copy}), acc, {ko});
  UOp store = blk.copy_from_fragment(acc, c, by * kTile, bx * kTile, tile::relu);
  return sink({"matmul_relu"}, {store});
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
