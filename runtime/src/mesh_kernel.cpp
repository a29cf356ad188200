// MeshKernel: one compile, a module per device, a launch per device with its coordinates.
#include "weft/dsl/error.h"
#include "weft/runtime/mesh.h"

namespace weft::rt {

MeshKernel MeshKernel::compile(Mesh& mesh, const UOp& kernel, CompileCache* cache) {
  MeshKernel k;
  k.compiled_ = CompiledKernel::compile(mesh.device(0), kernel, cache);
  const auto& axes = k.lowered().mesh;
  if (!axes.empty()) {
    std::vector<int64_t> sizes;
    for (const auto& a : axes) sizes.push_back(a.size);
    if (sizes != mesh.shape())
      throw Error("kernel " + k.lowered().name + " runs over a " + shape_text(sizes) + " mesh (its DEVICE ranges), not over " + mesh.name());
  }
  for (size_t d = 0; d < mesh.size(); ++d) {
    k.devices_.push_back(&mesh.device(d));
    k.modules_.push_back(d == 0 ? k.compiled_.module() : mesh.device(d).load(k.compiled_.code_object()));
  }
  k.mesh_shape_ = mesh.shape();
  return k;
}

void MeshKernel::check_mesh(const Mesh& mesh) const {
  bool same = mesh.shape() == mesh_shape_ && mesh.size() == devices_.size();
  for (size_t d = 0; same && d < mesh.size(); ++d) same = &mesh.device(d) == devices_[d];
  if (!same) throw Error("kernel " + lowered().name + " was compiled for another mesh (" + shape_text(mesh_shape_) + "), launched on " + mesh.name());
}

void MeshKernel::check_buffers(const Mesh& mesh, std::span<const ShardedArray> buffers, const std::map<std::string, ScalarValue>& scalars) const {
  std::map<std::string, int64_t> ints;  // for the parameters' shapes (no shape depends on a device index)
  for (const auto& [name, v] : scalars)
    if (const auto* i = std::get_if<int64_t>(&v)) ints[name] = *i;
  for (const auto& a : lowered().mesh) ints[a.variable] = 0;
  for (size_t i = 0; i < lowered().params.size(); ++i) {
    const lower::KernelParam& p = lowered().params[i];
    if (p.kind != lower::KernelParam::Kind::Buffer || p.slot >= static_cast<int64_t>(buffers.size())) continue;  // CompiledKernel counts them
    const ShardedArray& b = buffers[static_cast<size_t>(p.slot)];
    const std::string what = "kernel " + lowered().name + ": buffer argument " + std::to_string(p.slot);
    if (b.shards.size() != mesh.size())
      throw Error(what + " has " + std::to_string(b.shards.size()) + " shards; the mesh has " + std::to_string(mesh.size()) + " devices");
    // A buffer the kernel unshards must lie as the kernel indexes it; any buffer's shards must
    // have the parameter's shape (a count alone would let a transposed tensor through).
    if (const auto it = lowered().device_splits.find(p.slot); it != lowered().device_splits.end() && !(b.sharding == Sharding{it->second}))
      throw Error(what + " is sharded " + sharding_text(b.sharding) + ", the kernel indexes it sharded " + sharding_text(Sharding{it->second}) +
                  " (per mesh axis, the tensor axis split; reshard it first)");
    std::vector<int64_t> want;
    for (const lower::IndexProgram& d : compiled_.param_dims_[i]) want.push_back(d.evaluate(ints));
    const std::vector<int64_t> got = shard_shape(mesh, b.shape, b.sharding);
    if (got != want)
      throw Error(what + " is a " + shape_text(b.shape) + " tensor sharded " + sharding_text(b.sharding) + ": shards of " + shape_text(got) +
                  ", the kernel's parameter is " + shape_text(want));
  }
}

void MeshKernel::launch(Mesh& mesh, std::span<const ShardedArray> buffers, const std::map<std::string, ScalarValue>& scalars) const {
  check_mesh(mesh);
  for (const auto& a : lowered().mesh)
    if (scalars.contains(a.variable))
      throw Error("kernel " + lowered().name + ": scalar " + a.variable + " is DEVICE range " + std::to_string(a.range_id) +
                  "'s index, which each shard's launch sets");
  check_buffers(mesh, buffers, scalars);
  for (size_t d = 0; d < mesh.size(); ++d) {
    std::map<std::string, ScalarValue> shard_scalars = scalars;
    const std::vector<int64_t> coords = mesh.coordinates(d);
    for (size_t k = 0; k < lowered().mesh.size(); ++k) shard_scalars[lowered().mesh[k].variable] = coords[k];
    std::vector<DeviceArray> shards;
    for (const ShardedArray& b : buffers) shards.push_back(b.shards[d]);
    compiled_.launch_on(mesh.device(d), *modules_[d], shards, shard_scalars);
  }
}

}  // namespace weft::rt
