// Collectives over a mesh: the data a sharded program moves between its devices, one buffer per
// device (mesh order), all of one dtype.
//
//   rt::Mesh mesh = rt::Mesh::open("cuda:0,1,2,3");
//   auto comm = rt::Collectives::open(mesh);        // NCCL for a mesh of CUDA GPUs, else host
//   comm->all_to_all(send, recv, counts);           // counts[p][q]: elements device p sends to q
//   comm->all_gather(shards, whole);
//   comm->reduce_scatter(partials, sums);
//
// Two implementations behind one interface:
//   nccl  NCCL (libnccl.so.2 loaded with dlopen, as the CUDA driver is; WEFT_NCCL names another
//         file): one communicator per GPU, each collective enqueued on every GPU's default
//         stream, after the work launched there before it and before the work launched after.
//   host  any mesh, emulated ones too: each device is synchronized, its buffers copied through
//         host memory, and the call returns when every result is in place.
// Either way a kernel launched after a collective sees its results. The element order of a
// reduction is NCCL's own (ring or tree); the host one adds the devices' values in mesh order.
// A send buffer and a receive buffer must not overlap. The mesh must outlive the Collectives and
// stay where it is (it is held by address).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "weft/runtime/kernel.h"
#include "weft/runtime/mesh.h"

namespace weft::rt {

enum class CollectiveBackend { Automatic, Nccl, Host };

class Collectives {
 public:
  // Automatic: NCCL where every device of the mesh is a CUDA GPU and libnccl loads, host
  // otherwise (backend() says which, and why not NCCL). Nccl: throws weft::Error naming why it
  // cannot be had (a device that is not a CUDA GPU, no libnccl, a failed communicator).
  static std::unique_ptr<Collectives> open(Mesh& mesh, CollectiveBackend want = CollectiveBackend::Automatic);
  virtual ~Collectives() = default;

  // "nccl 2.27.7 over 4 GPUs", or "host (NCCL not used: ...)".
  virtual std::string backend() const = 0;

  // All-to-all(v): device p sends counts[p][q] elements to device q. Device p's send buffer
  // holds its blocks for q = 0, 1, ... back to back; device q's receive buffer gets the blocks
  // from p = 0, 1, ... back to back (torch's all_to_all_single with split sizes).
  void all_to_all(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, const std::vector<std::vector<int64_t>>& counts);
  // All-gather: every device's recv (P * n elements) = the devices' send buffers (n each), in
  // mesh order.
  void all_gather(std::span<const DeviceArray> send, std::span<const DeviceArray> recv);
  // Reduce-scatter, a sum: device p's recv (n elements) = the sum over devices q of block p of
  // q's send (P * n elements). float32, float64, int32, int64 (NCCL also bfloat16 and float16).
  void reduce_scatter(std::span<const DeviceArray> send, std::span<const DeviceArray> recv);

 protected:
  explicit Collectives(Mesh& mesh) : mesh_(&mesh) {}
  // Each receives arguments checked against the mesh and one another (collectives.cpp), and
  // counts in bytes for the moves, elements for the sum.
  virtual void move_all_to_all(std::span<const DeviceArray> send, std::span<const DeviceArray> recv,
                               const std::vector<std::vector<size_t>>& bytes) = 0;
  virtual void move_all_gather(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, size_t bytes) = 0;
  virtual void sum_scatter(std::span<const DeviceArray> send, std::span<const DeviceArray> recv, size_t elements) = 0;

  Mesh* mesh_;
};

}  // namespace weft::rt
