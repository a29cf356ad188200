// Collectives (collectives.h): the arguments' checks every backend shares, the host backend, and
// the choice between it and NCCL (nccl_collectives.cpp).
#include "weft/runtime/collectives.h"

#include <cstring>
#include <type_traits>

#include "collectives_backends.h"
#include "weft/dsl/error.h"

namespace weft::rt {
namespace {

[[noreturn]] void fail(const std::string& op, const std::string& what) { throw Error("collectives: " + op + ": " + what); }

// One buffer a device, all of one dtype; returns that dtype.
DType check_buffers(const Mesh& mesh, const std::string& op, std::span<const DeviceArray> send, std::span<const DeviceArray> recv) {
  if (send.size() != mesh.size() || recv.size() != mesh.size())
    fail(op, std::to_string(send.size()) + " send and " + std::to_string(recv.size()) + " receive buffers for a mesh of " +
                 std::to_string(mesh.size()) + " devices (one each)");
  const DType dtype = send.front().dtype;
  for (size_t p = 0; p < mesh.size(); ++p)
    if (!(send[p].dtype == dtype) || !(recv[p].dtype == dtype))
      fail(op, "device " + std::to_string(p) + "'s buffers are " + send[p].dtype.name() + " and " + recv[p].dtype.name() + ", device 0's send " +
                   dtype.name() + " (one dtype throughout)");
  return dtype;
}

void check_fits(const std::string& op, const char* which, size_t p, int64_t elements, const DeviceArray& a) {
  if (elements < 0 || static_cast<size_t>(elements) > a.elements)
    fail(op, std::string(which) + " buffer of device " + std::to_string(p) + " holds " + std::to_string(a.elements) + " elements, " +
                 std::to_string(elements) + " needed");
}

// The host backend: every move through host memory, device by device.
class HostCollectives : public Collectives {
 public:
  HostCollectives(Mesh& mesh, std::string why_not_nccl) : Collectives(mesh), why_not_nccl_(std::move(why_not_nccl)) {}
  std::string backend() const override { return why_not_nccl_.empty() ? "host" : "host (NCCL not used: " + why_not_nccl_ + ")"; }

 protected:
  void move_all_to_all(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, const std::vector<std::vector<size_t>>& bytes) override {
    const size_t P = mesh_->size();
    std::vector<std::vector<uint8_t>> sent(P);
    for (size_t p = 0; p < P; ++p) {
      size_t total = 0;
      for (size_t b : bytes[p]) total += b;
      sent[p] = read(p, send[p], total);
    }
    for (size_t q = 0; q < P; ++q) {
      std::vector<uint8_t> received;
      for (size_t p = 0; p < P; ++p) {
        size_t at = 0;
        for (size_t r = 0; r < q; ++r) at += bytes[p][r];
        received.insert(received.end(), sent[p].begin() + static_cast<std::ptrdiff_t>(at),
                        sent[p].begin() + static_cast<std::ptrdiff_t>(at + bytes[p][q]));
      }
      write(q, recv[q], received);
    }
  }
  void move_all_gather(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, size_t bytes) override {
    std::vector<uint8_t> whole;
    for (size_t p = 0; p < mesh_->size(); ++p) {
      const std::vector<uint8_t> part = read(p, send[p], bytes);
      whole.insert(whole.end(), part.begin(), part.end());
    }
    for (size_t q = 0; q < mesh_->size(); ++q) write(q, recv[q], whole);
  }
  void sum_scatter(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, size_t elements) override {
    const DType dtype = send.front().dtype;
    if (!(dtype == dtypes::float32 || dtype == dtypes::float64 || dtype == dtypes::int32 || dtype == dtypes::int64))
      fail("reduce_scatter", "the host backend sums float32, float64, int32 and int64, not " + dtype.name());
    const size_t P = mesh_->size(), item = static_cast<size_t>(dtype.itemsize());
    std::vector<std::vector<uint8_t>> parts(P);
    for (size_t p = 0; p < P; ++p) parts[p] = read(p, send[p], P * elements * item);
    for (size_t q = 0; q < P; ++q) {
      std::vector<uint8_t> sum(elements * item);
      for (size_t p = 0; p < P; ++p) add_into(sum, &parts[p][q * elements * item], dtype);
      write(q, recv[q], sum);
    }
  }

 private:
  std::vector<uint8_t> read(size_t p, const DeviceArray& a, size_t bytes) {
    Device& device = mesh_->device(p);
    device.synchronize();
    std::vector<uint8_t> out(bytes);
    if (bytes) device.copy_from_device(out, a.buffer);
    return out;
  }
  void write(size_t q, const DeviceArray& a, const std::vector<uint8_t>& bytes) {
    if (!bytes.empty()) mesh_->device(q).copy_to_device(a.buffer, bytes);
  }
  template <class T>
  static void add_typed(std::vector<uint8_t>& sum, const uint8_t* part) {
    for (size_t i = 0; i < sum.size() / sizeof(T); ++i) {
      T a, b;
      std::memcpy(&a, &sum[i * sizeof(T)], sizeof(T));
      std::memcpy(&b, part + i * sizeof(T), sizeof(T));
      if constexpr (std::is_integral_v<T>) {  // wrapping, as NCCL's integer sums do
        using U = std::make_unsigned_t<T>;
        a = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      } else {
        a = a + b;
      }
      std::memcpy(&sum[i * sizeof(T)], &a, sizeof(T));
    }
  }
  static void add_into(std::vector<uint8_t>& sum, const uint8_t* part, DType dtype) {
    if (dtype == dtypes::float32) return add_typed<float>(sum, part);
    if (dtype == dtypes::float64) return add_typed<double>(sum, part);
    if (dtype == dtypes::int32) return add_typed<int32_t>(sum, part);
    return add_typed<int64_t>(sum, part);  // (sum_scatter checked the dtype)
  }

  std::string why_not_nccl_;
};

}  // namespace

void Collectives::all_to_all(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, const std::vector<std::vector<int64_t>>& counts) {
  const DType dtype = check_buffers(*mesh_, "all_to_all", send, recv);
  const size_t P = mesh_->size();
  const auto item = static_cast<size_t>(dtype.itemsize());
  if (counts.size() != P) fail("all_to_all", "counts has " + std::to_string(counts.size()) + " rows for " + std::to_string(P) + " devices");
  std::vector<std::vector<size_t>> bytes(P, std::vector<size_t>(P));
  std::vector<int64_t> received(P, 0);
  for (size_t p = 0; p < P; ++p) {
    if (counts[p].size() != P)
      fail("all_to_all", "counts row " + std::to_string(p) + " has " + std::to_string(counts[p].size()) + " entries for " + std::to_string(P) + " devices");
    int64_t sent = 0;
    for (size_t q = 0; q < P; ++q) {
      if (counts[p][q] < 0) fail("all_to_all", "counts[" + std::to_string(p) + "][" + std::to_string(q) + "] is negative");
      sent += counts[p][q];
      received[q] += counts[p][q];
      bytes[p][q] = static_cast<size_t>(counts[p][q]) * item;
    }
    check_fits("all_to_all", "the send", p, sent, send[p]);
  }
  for (size_t q = 0; q < P; ++q) check_fits("all_to_all", "the receive", q, received[q], recv[q]);
  move_all_to_all(send, recv, bytes);
}

void Collectives::all_gather(std::span<const DeviceArray> send, std::span<const DeviceArray> recv) {
  const DType dtype = check_buffers(*mesh_, "all_gather", send, recv);
  const size_t n = send.front().elements, P = mesh_->size();
  for (size_t p = 0; p < P; ++p)
    if (send[p].elements != n)
      fail("all_gather", "device " + std::to_string(p) + " sends " + std::to_string(send[p].elements) + " elements, device 0 " + std::to_string(n) +
                             " (the same on every device)");
  for (size_t p = 0; p < P; ++p) check_fits("all_gather", "the receive", p, static_cast<int64_t>(P * n), recv[p]);
  move_all_gather(send, recv, n * static_cast<size_t>(dtype.itemsize()));
}

void Collectives::reduce_scatter(std::span<const DeviceArray> send, std::span<const DeviceArray> recv) {
  check_buffers(*mesh_, "reduce_scatter", send, recv);
  const size_t P = mesh_->size(), whole = send.front().elements;
  if (whole % P) fail("reduce_scatter", "device 0 sends " + std::to_string(whole) + " elements, not a multiple of the " + std::to_string(P) + " devices");
  for (size_t p = 0; p < P; ++p)
    if (send[p].elements != whole)
      fail("reduce_scatter", "device " + std::to_string(p) + " sends " + std::to_string(send[p].elements) + " elements, device 0 " + std::to_string(whole));
  for (size_t p = 0; p < P; ++p) check_fits("reduce_scatter", "the receive", p, static_cast<int64_t>(whole / P), recv[p]);
  sum_scatter(send, recv, whole / P);
}

std::unique_ptr<Collectives> Collectives::open(Mesh& mesh, CollectiveBackend want) {
  if (want == CollectiveBackend::Host) return std::make_unique<HostCollectives>(mesh, "");
  std::string why_not;
  if (std::unique_ptr<Collectives> nccl = open_nccl(mesh, why_not)) return nccl;
  if (want == CollectiveBackend::Nccl) throw Error("collectives: no NCCL for mesh " + mesh.name() + ": " + why_not);
  return std::make_unique<HostCollectives>(mesh, why_not);
}

}  // namespace weft::rt
