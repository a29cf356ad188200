// Collectives over a mesh (runtime/collectives.h): all-to-all(v), all-gather and reduce-scatter
// with fresh random payloads and counts (zeros among them), every receive buffer poisoned and
// its untouched tail checked still poisoned; the host backend on meshes of emulated devices, NCCL
// on the GPUs at hand; the errors of mismatched arguments.
#include <doctest/doctest.h>

#include <cstring>

#include "kernel_harness.h"
#include "weft/runtime/collectives.h"

namespace weft {
namespace {

using testing::rng;

constexpr uint8_t kPoison = 0xCD;

template <class T>
rt::DeviceArray upload(rt::Device& dev, DType dtype, const std::vector<T>& v, const std::string& label) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return rt::upload(dev, dtype, bytes, label);
}

rt::DeviceArray poisoned(rt::Device& dev, DType dtype, size_t elements) {
  return rt::upload(dev, dtype, std::vector<uint8_t>(elements * static_cast<size_t>(dtype.itemsize()), kPoison), "received");
}

template <class T>
std::vector<T> fetch(rt::Device& dev, const rt::DeviceArray& a) {
  const std::vector<uint8_t> bytes = rt::download(dev, a);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

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

// all_to_all with random counts in [0, 40] (one in four 0), random int32 payloads, receive
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
    a.send.push_back(upload(mesh.device(p), dtypes::int32, sent[p], "sent"));
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
    CHECK(fetch<int32_t>(mesh.device(q), a.recv[q]) == expected[q]);
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
    a.send.push_back(upload(mesh.device(p), dtypes::float32, block, "block"));
  }
  for (size_t q = 0; q < P; ++q) a.recv.push_back(poisoned(mesh.device(q), dtypes::float32, P * n));
  comm.all_gather(a.send, a.recv);
  for (size_t q = 0; q < P; ++q) {
    INFO("device " << q);
    const std::vector<float> got = fetch<float>(mesh.device(q), a.recv[q]);
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
    ints.send.push_back(upload(mesh.device(p), dtypes::int32, part, "partial"));
    floats.send.push_back(upload(mesh.device(p), dtypes::float32, fpart, "partial"));
    ints.recv.push_back(poisoned(mesh.device(p), dtypes::int32, n));
    floats.recv.push_back(poisoned(mesh.device(p), dtypes::float32, n));
  }
  comm.reduce_scatter(ints.send, ints.recv);
  comm.reduce_scatter(floats.send, floats.recv);
  for (size_t q = 0; q < P; ++q) {
    INFO("device " << q);
    CHECK(fetch<int32_t>(mesh.device(q), ints.recv[q]) == std::vector<int32_t>(sum.begin() + q * n, sum.begin() + (q + 1) * n));
    CHECK(fetch<float>(mesh.device(q), floats.recv[q]) == std::vector<float>(fsum.begin() + q * n, fsum.begin() + (q + 1) * n));
  }
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
                       doctest::Contains("no NCCL for mesh emu:gfx950 x 2: device emu:gfx950"), Error);
  CHECK_THROWS_WITH_AS(rt::Collectives::open(mesh, rt::CollectiveBackend::Nccl), doctest::Contains("is not a CUDA GPU"), Error);
}

// NCCL over every GPU here (one lent GPU: a communicator of one, its sends to itself).
TEST_CASE("collectives, NCCL: all-to-all(v), all-gather and reduce-scatter over the GPUs at hand [cuda]") {
  WEFT_REQUIRE_CUDA();
  rt::Mesh mesh = rt::Mesh::open("cuda");
  std::unique_ptr<rt::Collectives> comm;
  try {
    comm = rt::Collectives::open(mesh, rt::CollectiveBackend::Nccl);
  } catch (const Error& e) {
    if (std::string(e.what()).find("did not load") != std::string::npos) WEFT_SKIP(std::string("no NCCL library: ") + e.what());
    throw;
  }
  CHECK(comm->backend().starts_with("nccl "));
  check_all(mesh, *comm);
  // The same collectives through host memory on the same GPUs agree with NCCL's (check_all's
  // references are the host's arithmetic).
  auto host = rt::Collectives::open(mesh, rt::CollectiveBackend::Host);
  check_all(mesh, *host);
}

}  // namespace
}  // namespace weft
