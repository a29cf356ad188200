// Several devices as one: a mesh (a 1-D or 2-D grid of devices), tensors sharded over it, and
// kernels that run as one shard per device.
//
// A kernel over a mesh has one DEVICE range per mesh axis (builder.h: range(n, id,
// AxisType::DEVICE)); its GLOBAL buffers are unsharded over them (placeholder(...).unshard(axes,
// device_ranges)), so the kernel indexes the whole tensor and each device touches its own block.
// It compiles once per target and launches once per device, with each DEVICE range set to the
// device's coordinate on that axis (lower::resolve_devices).
//
//   rt::Mesh mesh = rt::Mesh::open("emu:gfx950 x 2x2");
//   rt::ShardedArray a = rt::distribute(mesh, dtypes::float32, {64, 64}, bytes, rt::Sharding{{0, 1}}, "A");
//   auto k = rt::MeshKernel::compile(mesh, graph);
//   k.launch(mesh, {a, c});
//   std::vector<uint8_t> whole = rt::gather(mesh, c);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/runtime/kernel.h"

namespace weft::rt {

// Devices on a grid, row-major: device (i, j) of an R x C mesh is device(i * C + j).
class Mesh {
 public:
  // "emu:gfx950 x 4", "emu:gfx942 x 2x2": that many emulated devices, each with its own memory
  // (the environment's emulator options apply to all); "cuda:0,1" or "hip:0,1,2,3 x 2x2": those
  // GPUs, a 1-D mesh unless a shape follows; "cuda x 2": GPUs 0 and 1. Throws weft::Error naming
  // what is wrong with the spec, or the device that cannot be opened. Each GPU device makes its
  // own GPU current in every call, so the devices of a mesh may be used in any order.
  static Mesh open(std::string_view spec);
  Mesh(std::vector<std::unique_ptr<Device>> devices, std::vector<int64_t> shape);

  const std::vector<int64_t>& shape() const { return shape_; }
  size_t size() const { return devices_.size(); }
  Device& device(size_t linear) const { return *devices_.at(linear); }
  std::vector<int64_t> coordinates(size_t linear) const;  // one per mesh axis
  std::string name() const;                               // "emu:gfx950 x 2x2"

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<int64_t> shape_;
};

// How a tensor lies on a mesh: per mesh axis, the tensor axis it splits into equal contiguous
// blocks (device coordinate c holds block c), or kReplicated (every device along that mesh axis
// holds the same). A tensor axis is split by at most one mesh axis.
struct Sharding {
  static constexpr int64_t kReplicated = -1;
  std::vector<int64_t> split;
  static Sharding replicated(const Mesh& mesh) { return {std::vector<int64_t>(mesh.shape().size(), kReplicated)}; }
  bool operator==(const Sharding&) const = default;
};
std::string sharding_text(const Sharding& s);  // "[0, replicated]"
std::string shape_text(std::span<const int64_t> shape);  // a mesh's or a tensor's: "2x2"

// A tensor on a mesh: its whole shape, its sharding, and one shard per device (in mesh order),
// each a DeviceArray of the shard's shape.
struct ShardedArray {
  DType dtype;
  std::vector<int64_t> shape;
  Sharding sharding;
  std::vector<DeviceArray> shards;
};

// The shape of each shard of a tensor of `shape` sharded so on `mesh`. Throws weft::Error when
// the sharding does not fit (a wrong number of mesh axes, an axis out of range or split twice, a
// size that does not divide).
std::vector<int64_t> shard_shape(const Mesh& mesh, std::span<const int64_t> shape, const Sharding& sharding);

// Copies the whole tensor `bytes` (row-major) onto the mesh, each device receiving its block.
ShardedArray distribute(Mesh& mesh, DType dtype, std::vector<int64_t> shape, std::span<const uint8_t> bytes, const Sharding& sharding,
                        const std::string& label);
// The whole tensor, assembled from the shards (a replicated block is read from its first holder).
std::vector<uint8_t> gather(Mesh& mesh, const ShardedArray& array);
// The same tensor with another sharding: new shards, each filled with the blocks it needs from
// the shards that hold them (the copies go through host memory). The source stays allocated.
ShardedArray reshard(Mesh& mesh, const ShardedArray& array, const Sharding& to, const std::string& label);
// Frees every shard (Device::free on each device).
void release(Mesh& mesh, const ShardedArray& array);

// A kernel compiled once for the mesh's target and loaded on each of its devices.
class MeshKernel {
 public:
  // The kernel's DEVICE ranges must match the mesh's axes in number and size (a kernel without
  // any runs unchanged on every device, each on its own shards). Every device must have the same
  // target. Throws weft::Error as CompiledKernel::compile does, or naming the mismatch.
  static MeshKernel compile(Mesh& mesh, const UOp& kernel, CompileCache* cache = nullptr);

  // Launches one shard per device on the mesh it was compiled for: buffers in slot order, scalars
  // by name (not the device variables: each launch sets its own). A buffer the kernel unshards
  // over the mesh must be sharded as the kernel indexes it (lowered().device_splits), and every
  // buffer's shards must have its parameter's shape; each shard is then checked as
  // CompiledKernel::launch checks a buffer.
  void launch(Mesh& mesh, std::span<const ShardedArray> buffers, const std::map<std::string, ScalarValue>& scalars = {}) const;

  const lower::LoweredKernel& lowered() const { return compiled_.lowered(); }
  const CompiledKernel& compiled() const { return compiled_; }

 private:
  void check_mesh(const Mesh& mesh) const;
  void check_buffers(const Mesh& mesh, std::span<const ShardedArray> buffers, const std::map<std::string, ScalarValue>& scalars) const;

  CompiledKernel compiled_;                       // compiled and loaded on device 0
  std::vector<std::shared_ptr<Module>> modules_;  // the code object loaded on each device
  std::vector<const Device*> devices_;            // the mesh's, in order
  std::vector<int64_t> mesh_shape_;
};

}  // namespace weft::rt
