// Collectives over a mesh (runtime/collectives.h): all-to-all(v), all-gather and reduce-scatter
// with fresh random payloads and counts (zeros among them), every receive buffer poisoned and
// its untouched tail checked still poisoned; the host backend on meshes of emulated devices, NCCL
// on the GPUs at hand; the errors of mismatched arguments; and the sharded matmuls they serve
// (K split then reduce-scatter, weights all-gathered) on emulated devices.
#include <doctest/doctest.h>

#include <cstring>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/runtime/mesh.h"
#include "weft/runtime/collectives.h"

namespace weft {
namespace {

using testing::rng;

constexpr uint8_t kPoison = 0xCD;

using testing::get;
using testing::poisoned;
using testing::put;

int32_t poison_int32() {
  int32_t p;
  std::memset(&p, kPoison, sizeof p);
  return p;
}

// Frees a test's buffers at the end of its scope, device by device.
struct Arrays {
  rt::Mesh& mesh;
  std::vector<rt::DeviceArray> send, recv;
  ~Arrays() {
    for (size_t p = 0; p < send.size(); ++p) mesh.device(p).free(send[p].buffer);
    for (size_t p = 0; p < recv.size(); ++p) mesh.device(p).free(recv[p].buffer);
  }
};

// all_to_all with random counts in [0, 40] (about one in five 0), random int32 payloads, receive
// buffers 5 elements longer than needed: each device's blocks arrive in sender order, the tail
// stays poisoned.
void check_all_to_all(rt::Mesh& mesh, rt::Collectives& comm) {
  const size_t P = mesh.size();
  std::uniform_int_distribution<int64_t> count(-10, 40);
  std::vector<std::vector<int64_t>> counts(P, std::vector<int64_t>(P));
  for (auto& row : counts)
    for (int64_t& c : row) c = std::max<int64_t>(0, count(rng()));
  std::vector<std::vector<int32_t>> sent(P), expected(P);
  Arrays a{mesh, {}, {}};
  for (size_t p = 0; p < P; ++p) {
    for (size_t q = 0; q < P; ++q)
      for (int64_t i = 0; i < counts[p][q]; ++i) sent[p].push_back(static_cast<int32_t>(rng()()));
    sent[p].push_back(7);  // never sent: past the counts
    a.send.push_back(put(mesh.device(p), dtypes::int32, sent[p], "sent"));
  }
  for (size_t q = 0; q < P; ++q) {
    for (size_t p = 0; p < P; ++p) {
      int64_t at = 0;
      for (size_t r = 0; r < q; ++r) at += counts[p][r];
      expected[q].insert(expected[q].end(), sent[p].begin() + at, sent[p].begin() + at + counts[p][q]);
    }
    const size_t filled = expected[q].size();
    expected[q].resize(filled + 5, poison_int32());
    a.recv.push_back(poisoned(mesh.device(q), dtypes::int32, expected[q].size()));
  }
  comm.all_to_all(a.send, a.recv, counts);
  for (size_t q = 0; q < P; ++q) {
    INFO("device " << q);
    CHECK(get<int32_t>(mesh.device(q), a.recv[q]) == expected[q]);
  }
}

// all_gather of random float32 blocks: every device gets every block, in mesh order, bit for bit.
void check_all_gather(rt::Mesh& mesh, rt::Collectives& comm) {
  const size_t P = mesh.size(), n = 1 + rng()() % 300;
  std::vector<float> whole;
  Arrays a{mesh, {}, {}};
  for (size_t p = 0; p < P; ++p) {
    const std::vector<float> block = testing::random_floats(n);
    whole.insert(whole.end(), block.begin(), block.end());
    a.send.push_back(put(mesh.device(p), dtypes::float32, block, "block"));
  }
  for (size_t q = 0; q < P; ++q) a.recv.push_back(poisoned(mesh.device(q), dtypes::float32, P * n));
  comm.all_gather(a.send, a.recv);
  for (size_t q = 0; q < P; ++q) {
    INFO("device " << q);
    const std::vector<float> got = get<float>(mesh.device(q), a.recv[q]);
    CHECK(std::memcmp(got.data(), whole.data(), whole.size() * sizeof(float)) == 0);
  }
}

// reduce_scatter of random int32 (any order of addition gives the same sum, wrapping) and of
// float32 small integers (exact in any order): device p gets the sum of every device's block p.
void check_reduce_scatter(rt::Mesh& mesh, rt::Collectives& comm) {
  const size_t P = mesh.size(), n = 1 + rng()() % 200;
  std::vector<int32_t> sum(P * n, 0);
  std::vector<float> fsum(P * n, 0.0f);
  Arrays ints{mesh, {}, {}}, floats{mesh, {}, {}};
  std::uniform_int_distribution<int> small(-1000, 1000);
  for (size_t p = 0; p < P; ++p) {
    std::vector<int32_t> part(P * n);
    std::vector<float> fpart(P * n);
    for (size_t i = 0; i < P * n; ++i) {
      part[i] = static_cast<int32_t>(rng()());
      sum[i] = static_cast<int32_t>(static_cast<uint32_t>(sum[i]) + static_cast<uint32_t>(part[i]));
      fpart[i] = static_cast<float>(small(rng()));
      fsum[i] += fpart[i];
    }
    ints.send.push_back(put(mesh.device(p), dtypes::int32, part, "partial"));
    floats.send.push_back(put(mesh.device(p), dtypes::float32, fpart, "partial"));
    ints.recv.push_back(poisoned(mesh.device(p), dtypes::int32, n));
    floats.recv.push_back(poisoned(mesh.device(p), dtypes::float32, n));
  }
  comm.reduce_scatter(ints.send, ints.recv);
  comm.reduce_scatter(floats.send, floats.recv);
  for (size_t q = 0; q < P; ++q) {
    INFO("device " << q);
    CHECK(get<int32_t>(mesh.device(q), ints.recv[q]) == std::vector<int32_t>(sum.begin() + q * n, sum.begin() + (q + 1) * n));
    CHECK(get<float>(mesh.device(q), floats.recv[q]) == std::vector<float>(fsum.begin() + q * n, fsum.begin() + (q + 1) * n));
  }
}

// C[M, N] = A[M, K] . B[K, N] on one device's shards, no DEVICE range: over a mesh each device
// multiplies its own shards.
UOp local_matmul(int64_t M, int64_t N, int64_t K) {
  const UOp c = placeholder({M, N}, dtypes::float32, 0), a = placeholder({M, K}, dtypes::float32, 1), b = placeholder({K, N}, dtypes::float32, 2);
  const UOp i = range(M, 0, AxisType::GLOBAL), j = range(N, 1, AxisType::LOCAL), k = range(K, 2, AxisType::REDUCE);
  return sink({"local_matmul"}, {c[{i, j}].store((a[{i, k}].load() * b[{k, j}].load()).reduce(Op::ADD, {k})).end({i, j})});
}

// n small integers as floats: their products and sums are exact in float32, in any order.
std::vector<float> small_integers(size_t n) {
  const std::vector<int32_t> ints = testing::random_ints(n, -4, 4);
  return std::vector<float>(ints.begin(), ints.end());
}

std::vector<float> host_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t M, int64_t N, int64_t K) {
  std::vector<float> c(static_cast<size_t>(M * N), 0.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) c[static_cast<size_t>(i * N + j)] += a[static_cast<size_t>(i * K + k)] * b[static_cast<size_t>(k * N + j)];
  return c;
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> floats_of(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

void check_all(rt::Mesh& mesh, rt::Collectives& comm) {
  INFO("backend " << comm.backend() << " on " << mesh.name());
  for (int round = 0; round < 3; ++round) check_all_to_all(mesh, comm);
  check_all_gather(mesh, comm);
  check_reduce_scatter(mesh, comm);
}

TEST_CASE("collectives, host backend: all-to-all(v), all-gather and reduce-scatter over 4 and 2x2 emulated devices") {
  for (const char* spec : {"emu:gfx950 x 4", "emu:gfx942 x 2x2", "emu:gfx950 x 1"}) {
    rt::Mesh mesh = rt::Mesh::open(spec);
    auto comm = rt::Collectives::open(mesh);
    CHECK(comm->backend().starts_with("host (NCCL not used: device emu:"));
    check_all(mesh, *comm);
  }
}

TEST_CASE("collectives: mismatched buffers, counts and dtypes are errors that name them") {
  rt::Mesh mesh = rt::Mesh::open("emu:gfx950 x 2");
  auto comm = rt::Collectives::open(mesh, rt::CollectiveBackend::Host);
  CHECK(comm->backend() == "host");
  Arrays a{mesh, {}, {}};
  for (size_t p = 0; p < 2; ++p) {
    a.send.push_back(poisoned(mesh.device(p), dtypes::int32, 8));
    a.recv.push_back(poisoned(mesh.device(p), dtypes::int32, 8));
  }
  const std::vector<std::vector<int64_t>> fits{{4, 4}, {4, 4}};
  const auto one = std::span(a.send).first(1);
  CHECK_THROWS_WITH_AS(comm->all_to_all(one, a.recv, fits), doctest::Contains("1 send and 2 receive buffers for a mesh of 2"), Error);
  CHECK_THROWS_WITH_AS(comm->all_to_all(a.send, a.recv, {{4, 4}}), doctest::Contains("counts has 1 rows for 2 devices"), Error);
  CHECK_THROWS_WITH_AS(comm->all_to_all(a.send, a.recv, {{4, 4}, {4}}), doctest::Contains("counts row 1 has 1 entries"), Error);
  CHECK_THROWS_WITH_AS(comm->all_to_all(a.send, a.recv, {{4, -1}, {4, 4}}), doctest::Contains("counts[0][1] is negative"), Error);
  CHECK_THROWS_WITH_AS(comm->all_to_all(a.send, a.recv, {{5, 4}, {4, 4}}), doctest::Contains("the send buffer of device 0 holds 8 elements, 9 needed"), Error);
  CHECK_THROWS_WITH_AS(comm->all_to_all(a.send, a.recv, {{4, 4}, {5, 3}}), doctest::Contains("the receive buffer of device 0 holds 8 elements, 9 needed"), Error);
  CHECK_THROWS_WITH_AS(comm->all_gather(a.send, a.recv), doctest::Contains("the receive buffer of device 0 holds 8 elements, 16 needed"), Error);
  Arrays other{mesh, {}, {}};
  other.send.push_back(poisoned(mesh.device(0), dtypes::int32, 7));
  other.send.push_back(poisoned(mesh.device(1), dtypes::int32, 7));
  other.recv.push_back(poisoned(mesh.device(0), dtypes::float32, 8));
  other.recv.push_back(poisoned(mesh.device(1), dtypes::bfloat16, 8));
  const rt::DeviceArray mixed[] = {a.send[0], other.recv[0]};
  CHECK_THROWS_WITH_AS(comm->all_to_all(a.send, mixed, fits), doctest::Contains("device 1's buffers are int32 and float32, device 0's send int32"), Error);
  const rt::DeviceArray uneven[] = {a.send[0], other.send[1]};
  CHECK_THROWS_WITH_AS(comm->all_gather(uneven, a.recv), doctest::Contains("device 1 sends 7 elements, device 0 8"), Error);
  CHECK_THROWS_WITH_AS(comm->reduce_scatter(other.send, a.recv), doctest::Contains("device 0 sends 7 elements, not a multiple of the 2 devices"), Error);
  Arrays halves{mesh, {}, {}};
  for (size_t p = 0; p < 2; ++p) {
    halves.send.push_back(poisoned(mesh.device(p), dtypes::bfloat16, 8));
    halves.recv.push_back(poisoned(mesh.device(p), dtypes::bfloat16, 4));
  }
  CHECK_THROWS_WITH_AS(comm->reduce_scatter(halves.send, halves.recv), doctest::Contains("the host backend sums float32, float64, int32 and int64, not bfloat16"),
                       Error);
  CHECK_THROWS_WITH_AS(rt::Collectives::open(mesh, rt::CollectiveBackend::Nccl),
                       doctest::Contains("no NCCL for mesh emu:gfx950 x 2: device emu:gfx950 is not a CUDA GPU"), Error);
}

// The two sharded matmuls the collectives exist for, over 4 emulated devices, bit for bit against
// the host's product (small integers: exact in any order of addition).
TEST_CASE("a matmul sharded over 4 emulated devices: K split and the partial products reduce-scattered, and weights all-gathered") {
  if (testing::emulators().empty()) WEFT_SKIP("built without LLVM 22 (WEFT_LLVM=OFF): no AMDGPU code generator for the emulators");
  constexpr int64_t P = 4, M = 16, N = 8, K = 32;
  constexpr int64_t R = rt::Sharding::kReplicated;
  rt::Mesh mesh = rt::Mesh::open(testing::emulators().front() + " x 4");
  auto comm = rt::Collectives::open(mesh);
  const std::vector<float> a = small_integers(M * K), b = small_integers(K * N), c = host_matmul(a, b, M, N, K);
  const std::vector<uint8_t> poison(static_cast<size_t>(P * M * N * 4), kPoison);
  const auto shards = [](const rt::ShardedArray& s) { return std::vector<rt::DeviceArray>(s.shards.begin(), s.shards.end()); };
  {  // A's columns and B's rows split: device p's A_p . B_p is a partial C; the sum of block p of every partial is C's rows of block p
    const rt::ShardedArray as = rt::distribute(mesh, dtypes::float32, {M, K}, bytes_of(a), {{1}}, "A");
    const rt::ShardedArray bs = rt::distribute(mesh, dtypes::float32, {K, N}, bytes_of(b), {{0}}, "B");
    const rt::ShardedArray partial = rt::distribute(mesh, dtypes::float32, {P * M, N}, poison, {{0}}, "partial C");
    const rt::ShardedArray cs = rt::distribute(mesh, dtypes::float32, {M, N}, std::vector<uint8_t>(static_cast<size_t>(M * N * 4), kPoison), {{0}}, "C");
    const rt::ShardedArray args[] = {partial, as, bs};
    rt::MeshKernel::compile(mesh, local_matmul(M, N, K / P)).launch(mesh, args);
    comm->reduce_scatter(shards(partial), shards(cs));
    CHECK(floats_of(rt::gather(mesh, cs)) == c);
    for (const rt::ShardedArray* s : {&as, &bs, &partial, &cs}) rt::release(mesh, *s);
  }
  {  // X's rows split, W's rows split and all-gathered whole onto every device: Y_p = X_p . W
    const rt::ShardedArray xs = rt::distribute(mesh, dtypes::float32, {M, K}, bytes_of(a), {{0}}, "X");
    const rt::ShardedArray ws = rt::distribute(mesh, dtypes::float32, {K, N}, bytes_of(b), {{0}}, "W rows");
    const rt::ShardedArray whole = rt::distribute(mesh, dtypes::float32, {K, N}, std::vector<uint8_t>(static_cast<size_t>(K * N * 4), kPoison), {{R}}, "W");
    const rt::ShardedArray ys = rt::distribute(mesh, dtypes::float32, {M, N}, std::vector<uint8_t>(static_cast<size_t>(M * N * 4), kPoison), {{0}}, "Y");
    comm->all_gather(shards(ws), shards(whole));
    const rt::ShardedArray args[] = {ys, xs, whole};
    rt::MeshKernel::compile(mesh, local_matmul(M / P, N, K)).launch(mesh, args);
    CHECK(floats_of(rt::gather(mesh, ys)) == c);
    for (const rt::ShardedArray* s : {&xs, &ws, &whole, &ys}) rt::release(mesh, *s);
  }
}

// NCCL over every GPU here (one lent GPU: a communicator of one, its sends to itself).
TEST_CASE("collectives, NCCL: all-to-all(v), all-gather and reduce-scatter over the GPUs at hand [cuda]") {
  WEFT_REQUIRE_CUDA();
  rt::Mesh mesh = testing::all_gpus();
  std::unique_ptr<rt::Collectives> comm;
  try {
    comm = rt::Collectives::open(mesh, rt::CollectiveBackend::Nccl);
  } catch (const Error& e) {
    if (std::string(e.what()).find("did not load") != std::string::npos) WEFT_SKIP(std::string("no NCCL library: ") + e.what());
    throw;
  }
  CHECK(comm->backend().starts_with("nccl "));
  check_all(mesh, *comm);
  // The host backend on the same GPUs passes the same checks.
  auto host = rt::Collectives::open(mesh, rt::CollectiveBackend::Host);
  check_all(mesh, *host);
}

}  // namespace
}  // namespace weft
