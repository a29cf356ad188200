// Kernels over a mesh of emulated devices (runtime/mesh.h): DEVICE ranges, tensors sharded over
// one and two mesh axes, resharding, and the errors of a mismatched mesh or sharding. Every
// output is poisoned first and checked against a host reference, or bit for bit against the
// same computation on one device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/runtime/mesh.h"

namespace weft {
namespace {

using testing::emulators;
using testing::rng;

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T>
std::vector<T> values_of(const std::vector<uint8_t>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// An output on the mesh, every byte 0xCD.
rt::ShardedArray poisoned(rt::Mesh& mesh, std::vector<int64_t> shape, const rt::Sharding& sharding) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  const std::vector<uint8_t> poison(n * 4, 0xCD);
  return rt::distribute(mesh, dtypes::float32, std::move(shape), poison, sharding, "out");
}

rt::ShardedArray floats_on(rt::Mesh& mesh, std::vector<int64_t> shape, const std::vector<float>& v, const rt::Sharding& sharding,
                           const std::string& label) {
  return rt::distribute(mesh, dtypes::float32, std::move(shape), bytes_of(v), sharding, label);
}

void require_emulators() {
  if (emulators().empty()) WEFT_SKIP("built without LLVM 22 (WEFT_LLVM=OFF): no AMDGPU code generator for the emulators");
}

constexpr int64_t R = rt::Sharding::kReplicated;

// C[M, N] = A[M, K] . B[K, N] over a 2x2 mesh: C split on both axes, A's rows over mesh axis 0
// (whole along axis 1), B's columns over mesh axis 1.
UOp mesh_matmul(int64_t M, int64_t N, int64_t K) {
  const UOp d0 = range(2, 0, AxisType::DEVICE), d1 = range(2, 1, AxisType::DEVICE);
  const UOp c = placeholder({M / 2, N / 2}, dtypes::float32, 0).unshard({0, 1}, {d0, d1});
  const UOp a = placeholder({M / 2, K}, dtypes::float32, 1).unshard({0}, {d0});
  const UOp b = placeholder({K, N / 2}, dtypes::float32, 2).unshard({1}, {d1});
  const UOp i = range(M / 2, 2, AxisType::GLOBAL), j = range(N / 2, 3, AxisType::LOCAL), k = range(K, 4, AxisType::REDUCE);
  const UOp row = d0 * (M / 2) + i, col = d1 * (N / 2) + j;
  const UOp sum = (a[{row, k}].load() * b[{k, col}].load()).reduce(Op::ADD, {k});
  return sink({"mesh_matmul"}, {c[{row, col}].store(sum).end({i, j, d0, d1})});
}

// The same product on one device.
UOp single_matmul(int64_t M, int64_t N, int64_t K) {
  const UOp c = placeholder({M, N}, dtypes::float32, 0), a = placeholder({M, K}, dtypes::float32, 1), b = placeholder({K, N}, dtypes::float32, 2);
  const UOp i = range(M, 2, AxisType::GLOBAL), j = range(N / 2, 3, AxisType::LOCAL), jj = range(2, 5, AxisType::GLOBAL);
  const UOp k = range(K, 4, AxisType::REDUCE);
  const UOp col = jj * (N / 2) + j;
  const UOp sum = (a[{i, k}].load() * b[{k, col}].load()).reduce(Op::ADD, {k});
  return sink({"single_matmul"}, {c[{i, col}].store(sum).end({i, j, jj})});
}

}  // namespace

TEST_CASE("Mesh::open: emulated meshes of one and two axes, and what a bad spec says") {
  rt::Mesh line = rt::Mesh::open("emu:gfx950 x 4");
  CHECK(line.shape() == std::vector<int64_t>{4});
  CHECK(line.size() == 4);
  CHECK(line.name() == "emu:gfx950 x 4");
  rt::Mesh grid = rt::Mesh::open("emu:gfx942 x 2x3");
  CHECK(grid.shape() == std::vector<int64_t>{2, 3});
  CHECK(grid.coordinates(5) == std::vector<int64_t>{1, 2});
  CHECK(grid.coordinates(1) == std::vector<int64_t>{0, 1});
  CHECK(&grid.device(0) != &grid.device(1));  // each its own emulator and memory
  CHECK(rt::Mesh::open("emu:gfx950").shape() == std::vector<int64_t>{1});
  CHECK_THROWS_WITH_AS(rt::Mesh::open("emu:gfx950 x 0"), doctest::Contains("is not sizes like 4 or 2x2"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("emu:gfx950 x 2x"), doctest::Contains("is not sizes like 4 or 2x2"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("tpu:0,1"), doctest::Contains("unknown device kind 'tpu'"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("cuda:0,1 x 3"), doctest::Contains("2 devices listed for a mesh of 3"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("emu:gfx9000 x 2"), doctest::Contains("gfx9000"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("cuda:0,,1"), doctest::Contains("an empty GPU index"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("hip:1,"), doctest::Contains("an empty GPU index"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("cuda:0,0"), doctest::Contains("GPU 0 is listed twice"), Error);
  CHECK_THROWS_WITH_AS(rt::Mesh::open("emu:gfx950 x 100000x100000"), doctest::Contains("more than 4096 devices"), Error);
  std::vector<std::unique_ptr<rt::Device>> mixed;
  mixed.push_back(rt::open_device("emu:gfx950"));
  mixed.push_back(rt::open_device("emu:gfx942"));
  CHECK_THROWS_WITH_AS(rt::Mesh(std::move(mixed), {2}), doctest::Contains("different targets"), Error);
}

TEST_CASE("distribute, gather and reshard move a tensor over a 2x2 mesh bit for bit") {
  rt::Mesh mesh = rt::Mesh::open("emu:gfx950 x 2x2");
  const std::vector<int64_t> shape{4, 6, 10};
  const std::vector<int32_t> whole = testing::random_ints(4 * 6 * 10, INT32_MIN, INT32_MAX);
  const std::vector<rt::Sharding> shardings{{{0, 1}}, {{1, 0}}, {{R, 2}}, {{2, R}}, {{R, R}}, {{1, 2}}};
  for (const rt::Sharding& s : shardings) {
    CAPTURE(rt::sharding_text(s));
    const rt::ShardedArray a = rt::distribute(mesh, dtypes::int32, shape, bytes_of(whole), s, "t");
    CHECK(values_of<int32_t>(rt::gather(mesh, a)) == whole);
    for (const rt::Sharding& to : shardings) {
      CAPTURE(rt::sharding_text(to));
      const rt::ShardedArray b = rt::reshard(mesh, a, to, "t2");
      CHECK(b.sharding == to);
      CHECK(values_of<int32_t>(rt::gather(mesh, b)) == whole);
      rt::release(mesh, b);
    }
    rt::release(mesh, a);
  }
  // A shard holds its block: device (1, 0) of [0, 1] holds rows 2..3, columns 0..2.
  const rt::ShardedArray a = rt::distribute(mesh, dtypes::int32, shape, bytes_of(whole), {{0, 1}}, "t");
  const auto shard = values_of<int32_t>(rt::download(mesh.device(2), a.shards[2]));
  REQUIRE(shard.size() == 2 * 3 * 10);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t z = 0; z < 10; ++z) CHECK(shard[static_cast<size_t>((r * 3 + c) * 10 + z)] == whole[static_cast<size_t>(((2 + r) * 6 + c) * 10 + z)]);
  CHECK_THROWS_WITH_AS(rt::distribute(mesh, dtypes::int32, {3, 4}, std::vector<uint8_t>(48), {{0, 1}}, "odd"),
                       doctest::Contains("axis 0 of size 3 does not divide over mesh axis 0 of 2 devices"), Error);
  CHECK_THROWS_WITH_AS(rt::distribute(mesh, dtypes::int32, {4, 4}, std::vector<uint8_t>(64), {{0}}, "rank"),
                       doctest::Contains("it names 1 mesh axes; the mesh has 2"), Error);
  CHECK_THROWS_WITH_AS(rt::distribute(mesh, dtypes::int32, {4, 4}, std::vector<uint8_t>(64), {{0, 0}}, "twice"),
                       doctest::Contains("split by two mesh axes"), Error);
  CHECK_THROWS_WITH_AS(rt::reshard(mesh, a, {{3, R}}, "bad"), doctest::Contains("tensor axis 3 does not exist"), Error);
}

TEST_CASE("a kernel over 2 and 4 emulated devices: each scales its own block and adds its device index") {
  require_emulators();
  for (const std::string& target : emulators()) {
    for (const int64_t P : {2, 4}) {
      CAPTURE(target);
      CAPTURE(P);
      rt::Mesh mesh = rt::Mesh::open(target + " x " + std::to_string(P));
      constexpr int64_t S = 300;
      const UOp d = range(P, 0, AxisType::DEVICE);
      const UOp in = placeholder({S}, dtypes::float32, 1).unshard({0}, {d}), out = placeholder({S}, dtypes::float32, 0).unshard({0}, {d});
      const UOp i = range(S, 1, AxisType::GLOBAL);
      const UOp k = sink({"scale_by_device"}, {out[d * S + i].store(in[d * S + i].load() * 2.0 + d.cast(dtypes::float32)).end({i, d})});
      const auto compiled = rt::MeshKernel::compile(mesh, k);
      CHECK(compiled.lowered().mesh.size() == 1);
      const std::vector<float> x = testing::random_floats(static_cast<size_t>(P * S));
      const rt::ShardedArray args[] = {poisoned(mesh, {P * S}, {{0}}), floats_on(mesh, {P * S}, x, {{0}}, "in")};
      compiled.launch(mesh, args);
      const auto y = values_of<float>(rt::gather(mesh, args[0]));
      for (int64_t n = 0; n < P * S; ++n) REQUIRE(y[static_cast<size_t>(n)] == x[static_cast<size_t>(n)] * 2.0f + static_cast<float>(n / S));
    }
  }
}

TEST_CASE("2-D sharding on a 2x2 mesh: elementwise, a sum over the unsharded axis, and a kernel that sees only its shard") {
  require_emulators();
  for (const std::string& target : emulators()) {
    CAPTURE(target);
    rt::Mesh mesh = rt::Mesh::open(target + " x 2x2");
    const UOp d0 = range(2, 0, AxisType::DEVICE), d1 = range(2, 1, AxisType::DEVICE);
    // out = t + 1, t and out [8, 12] split on both axes.
    {
      const UOp t = placeholder({4, 6}, dtypes::float32, 1).unshard({0, 1}, {d0, d1}), out = placeholder({4, 6}, dtypes::float32, 0).unshard({0, 1}, {d0, d1});
      const UOp i = range(4, 2, AxisType::GLOBAL), j = range(6, 3, AxisType::LOCAL);
      const UOp r = d0 * 4 + i, c = d1 * 6 + j;
      const auto k = rt::MeshKernel::compile(mesh, sink({"plus_one_2d"}, {out[{r, c}].store(t[{r, c}].load() + 1.0).end({i, j, d0, d1})}));
      const std::vector<float> x = testing::random_floats(8 * 12);
      const rt::ShardedArray args[] = {poisoned(mesh, {8, 12}, {{0, 1}}), floats_on(mesh, {8, 12}, x, {{0, 1}}, "t")};
      k.launch(mesh, args);
      const auto y = values_of<float>(rt::gather(mesh, args[0]));
      for (size_t n = 0; n < x.size(); ++n) REQUIRE(y[n] == x[n] + 1.0f);
    }
    // out[i, j] = sum_z t[i, j, z], t [8, 8, 6] split on its first two axes.
    {
      const UOp t = placeholder({4, 4, 6}, dtypes::float32, 1).unshard({0, 1}, {d0, d1}), out = placeholder({4, 4}, dtypes::float32, 0).unshard({0, 1}, {d0, d1});
      const UOp i = range(4, 2, AxisType::GLOBAL), j = range(4, 3, AxisType::LOCAL), z = range(6, 4, AxisType::REDUCE);
      const UOp r = d0 * 4 + i, c = d1 * 4 + j;
      const auto k = rt::MeshKernel::compile(mesh, sink({"sum_last_2d"}, {out[{r, c}].store(t[{r, c, z}].load().reduce(Op::ADD, {z})).end({i, j, d0, d1})}));
      const std::vector<float> x = testing::random_floats(8 * 8 * 6);
      const rt::ShardedArray args[] = {poisoned(mesh, {8, 8}, {{0, 1}}), floats_on(mesh, {8, 8, 6}, x, {{0, 1}}, "t")};
      k.launch(mesh, args);
      const auto y = values_of<float>(rt::gather(mesh, args[0]));
      for (size_t n = 0; n < 64; ++n) {
        double s = 0, mag = 0;
        for (size_t q = 0; q < 6; ++q) s += x[n * 6 + q], mag += std::abs(x[n * 6 + q]);
        REQUIRE(std::abs(y[n] - s) <= 1e-6 * mag + 1e-7);
      }
    }
    // No DEVICE range: each device runs the kernel on its own shard as it is.
    {
      const UOp t = placeholder({4, 6}, dtypes::float32, 1), out = placeholder({4, 6}, dtypes::float32, 0);
      const UOp i = range(4, 2, AxisType::GLOBAL), j = range(6, 3, AxisType::LOCAL);
      const auto k = rt::MeshKernel::compile(mesh, sink({"per_shard"}, {out[{i, j}].store(t[{i, j}].load() * 3.0).end({i, j})}));
      const std::vector<float> x = testing::random_floats(8 * 12);
      const rt::ShardedArray args[] = {poisoned(mesh, {8, 12}, {{1, 0}}), floats_on(mesh, {8, 12}, x, {{1, 0}}, "t")};
      k.launch(mesh, args);
      const auto y = values_of<float>(rt::gather(mesh, args[0]));
      for (size_t n = 0; n < x.size(); ++n) REQUIRE(y[n] == x[n] * 3.0f);
    }
  }
}

TEST_CASE("a matmul sharded over both axes of a 2x2 mesh, its inputs resharded from 2-D blocks, equals one device's bit for bit") {
  require_emulators();
  constexpr int64_t M = 64, N = 64, K = 48;
  for (const std::string& target : emulators()) {
    CAPTURE(target);
    rt::Mesh mesh = rt::Mesh::open(target + " x 2x2");
    const std::vector<float> xa = testing::random_floats(M * K), xb = testing::random_floats(K * N);
    // The inputs arrive split on both axes; the product needs A's rows whole along mesh axis 1
    // and B's columns whole along mesh axis 0 (two all-gathers).
    const rt::ShardedArray a2 = floats_on(mesh, {M, K}, xa, {{0, 1}}, "A"), b2 = floats_on(mesh, {K, N}, xb, {{0, 1}}, "B");
    const auto k = rt::MeshKernel::compile(mesh, mesh_matmul(M, N, K));
    {
      const rt::ShardedArray wrong[] = {poisoned(mesh, {M, N}, {{0, 1}}), a2, b2};
      CHECK_THROWS_WITH_AS(k.launch(mesh, wrong), doctest::Contains("buffer argument 1 is sharded [0, 1], the kernel indexes it sharded [0, replicated]"),
                           Error);
    }
    const rt::ShardedArray args[] = {poisoned(mesh, {M, N}, {{0, 1}}), rt::reshard(mesh, a2, {{0, R}}, "A rows"),
                                     rt::reshard(mesh, b2, {{R, 1}}, "B columns")};
    k.launch(mesh, args);
    const auto y = values_of<float>(rt::gather(mesh, args[0]));

    auto dev = rt::open_device(target);
    const auto single = rt::CompiledKernel::compile(*dev, single_matmul(M, N, K));
    const rt::DeviceArray one[] = {testing::poisoned(*dev, dtypes::float32, M * N), testing::put(*dev, dtypes::float32, xa),
                                   testing::put(*dev, dtypes::float32, xb)};
    single.launch(*dev, one);
    const auto y1 = testing::get<float>(*dev, one[0]);
    REQUIRE(y.size() == y1.size());
    CHECK(std::memcmp(y.data(), y1.data(), y.size() * sizeof(float)) == 0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, mag = 0;
        for (int64_t q = 0; q < K; ++q) s += double(xa[i * K + q]) * xb[q * N + j], mag += std::abs(double(xa[i * K + q]) * xb[q * N + j]);
        REQUIRE(std::abs(y[static_cast<size_t>(i * N + j)] - s) <= 1e-5 * mag + 1e-6);
      }
  }
}

TEST_CASE("mesh launches: a kernel for another mesh, a device index given by hand, a mesh kernel on one device, shards of another shape") {
  require_emulators();
  const std::string target = emulators().front();
  rt::Mesh grid = rt::Mesh::open(target + " x 2x2");
  const UOp d = range(4, 0, AxisType::DEVICE);
  const UOp out = placeholder({8}, dtypes::float32, 0).unshard({0}, {d});
  const UOp i = range(8, 1, AxisType::GLOBAL);
  const UOp k = sink({"fill_device"}, {out[d * 8 + i].store(d.cast(dtypes::float32)).end({i, d})});
  CHECK_THROWS_WITH_AS(rt::MeshKernel::compile(grid, k), doctest::Contains("runs over a 4 mesh (its DEVICE ranges), not over"), Error);
  rt::Mesh line = rt::Mesh::open(target + " x 4");
  const auto compiled = rt::MeshKernel::compile(line, k);
  const rt::ShardedArray args[] = {poisoned(line, {32}, {{0}})};
  CHECK_THROWS_WITH_AS(compiled.launch(line, args, {{"device0", int64_t{1}}}), doctest::Contains("which each shard's launch sets"), Error);
  CHECK_THROWS_WITH_AS(compiled.compiled().launch(line.device(0), {&args[0].shards[0], 1}), doctest::Contains("launch it with rt::MeshKernel"),
                       Error);
  rt::Mesh other = rt::Mesh::open(target + " x 4");  // the same shape, other devices
  const rt::ShardedArray on_other[] = {poisoned(other, {32}, {{0}})};
  CHECK_THROWS_WITH_AS(compiled.launch(other, on_other), doctest::Contains("was compiled for another mesh"), Error);
  // Shards of as many elements as the parameter's, of another shape: [4, 8] split on axis 0.
  const rt::ShardedArray rows[] = {poisoned(line, {4, 8}, {{0}})};
  CHECK_THROWS_WITH_AS(compiled.launch(line, rows), doctest::Contains("shards of 1x8, the kernel's parameter is 8"), Error);
  compiled.launch(line, args);
  const auto y = values_of<float>(rt::gather(line, args[0]));
  for (size_t n = 0; n < 32; ++n) REQUIRE(y[n] == static_cast<float>(n / 8));
}

}  // namespace weft
