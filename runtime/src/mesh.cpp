#include "weft/runtime/mesh.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>

#include "weft/dsl/error.h"

namespace weft::rt {
namespace {

std::string shape_text(std::span<const int64_t> shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

int64_t product(std::span<const int64_t> v) { return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>()); }

// "4" or "2x2": positive sizes.
std::vector<int64_t> parse_mesh_shape(std::string_view text, std::string_view spec) {
  std::vector<int64_t> shape;
  while (true) {
    const size_t x = text.find('x');
    const std::string_view part = text.substr(0, x);
    int64_t n = 0;
    const auto r = std::from_chars(part.data(), part.data() + part.size(), n);
    if (part.empty() || r.ec != std::errc() || r.ptr != part.data() + part.size() || n < 1)
      throw Error("mesh '" + std::string(spec) + "': the shape '" + std::string(text) + "' is not sizes like 4 or 2x2 (each at least 1)");
    shape.push_back(n);
    if (x == std::string_view::npos) break;
    text.remove_prefix(x + 1);
  }
  return shape;
}

// The device specs of a mesh: "emu:gfx950" repeated; "cuda:0,1" one per index; "cuda" 0..n-1.
std::vector<std::string> device_specs(std::string_view devices, std::optional<int64_t> count, std::string_view spec) {
  const size_t colon = devices.find(':');
  const std::string kind(devices.substr(0, colon));
  const std::string_view rest = colon == std::string_view::npos ? "" : devices.substr(colon + 1);
  std::vector<std::string> out;
  if (kind == "emu") {
    if (!count) count = 1;
    out.assign(static_cast<size_t>(*count), std::string(devices));
    return out;
  }
  if (kind != "cuda" && kind != "hip")
    throw Error("mesh '" + std::string(spec) + "': unknown device kind '" + kind + "' (emu:TARGET x SHAPE, cuda:0,1, hip:0,1 x 2)");
  if (rest.empty()) {
    for (int64_t i = 0; i < count.value_or(1); ++i) out.push_back(kind + ":" + std::to_string(i));
    return out;
  }
  for (std::string_view r = rest;;) {
    const size_t comma = r.find(',');
    out.push_back(kind + ":" + std::string(r.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    r.remove_prefix(comma + 1);
  }
  if (count && static_cast<int64_t>(out.size()) != *count)
    throw Error("mesh '" + std::string(spec) + "': " + std::to_string(out.size()) + " devices listed for a mesh of " + std::to_string(*count));
  return out;
}

// Copies the block of `extent` elements at `from_origin` in a row-major tensor of `from_shape`
// to `to_origin` in one of `to_shape`: a run of the last axis at a time.
void copy_block(const uint8_t* from, std::span<const int64_t> from_shape, std::span<const int64_t> from_origin, uint8_t* to,
                std::span<const int64_t> to_shape, std::span<const int64_t> to_origin, std::span<const int64_t> extent, size_t item) {
  const size_t rank = extent.size();
  if (rank == 0) {
    std::memcpy(to, from, item);
    return;
  }
  std::vector<int64_t> at(rank, 0);  // the position in the block, last axis always 0
  const size_t run = static_cast<size_t>(extent[rank - 1]) * item;
  const auto offset = [&](std::span<const int64_t> shape, std::span<const int64_t> origin) {
    int64_t o = 0;
    for (size_t a = 0; a < rank; ++a) o = o * shape[a] + origin[a] + at[a];
    return static_cast<size_t>(o) * item;
  };
  if (product(extent) == 0) return;
  while (true) {
    std::memcpy(to + offset(to_shape, to_origin), from + offset(from_shape, from_origin), run);
    size_t a = rank - 1;
    while (a > 0 && ++at[a - 1] == extent[a - 1]) at[--a] = 0;
    if (a == 0) return;
  }
}

// Where a device's block starts in the whole tensor.
std::vector<int64_t> block_origin(const Mesh& mesh, size_t device, std::span<const int64_t> block, const Sharding& sharding) {
  std::vector<int64_t> origin(block.size(), 0);
  const std::vector<int64_t> coords = mesh.coordinates(device);
  for (size_t k = 0; k < sharding.split.size(); ++k)
    if (const int64_t a = sharding.split[k]; a != Sharding::kReplicated) origin[static_cast<size_t>(a)] = coords[k] * block[static_cast<size_t>(a)];
  return origin;
}

}  // namespace

Mesh::Mesh(std::vector<std::unique_ptr<Device>> devices, std::vector<int64_t> shape) : devices_(std::move(devices)), shape_(std::move(shape)) {
  if (shape_.empty() || static_cast<size_t>(product(shape_)) != devices_.size())
    throw Error("mesh: a shape of " + shape_text(shape_) + " for " + std::to_string(devices_.size()) + " devices");
  for (const auto& d : devices_)
    if (d->arch() != devices_.front()->arch())
      throw Error("mesh: devices " + devices_.front()->name() + " and " + d->name() + " have different targets; a mesh kernel compiles once");
}

Mesh Mesh::open(std::string_view spec) {
  const size_t x = spec.find(" x ");
  const std::string_view devices = spec.substr(0, x);
  std::optional<std::vector<int64_t>> shape;
  if (x != std::string_view::npos) shape = parse_mesh_shape(spec.substr(x + 3), spec);
  const auto specs = device_specs(devices, shape ? std::optional(product(*shape)) : std::nullopt, spec);
  if (!shape) shape = std::vector<int64_t>{static_cast<int64_t>(specs.size())};
  std::vector<std::unique_ptr<Device>> opened;
  for (const std::string& s : specs) opened.push_back(open_device(s));
  return Mesh(std::move(opened), std::move(*shape));
}

std::vector<int64_t> Mesh::coordinates(size_t linear) const {
  std::vector<int64_t> c(shape_.size());
  auto rest = static_cast<int64_t>(linear);
  for (size_t k = shape_.size(); k-- > 0;) {
    c[k] = rest % shape_[k];
    rest /= shape_[k];
  }
  return c;
}

std::string Mesh::name() const { return devices_.front()->name() + " x " + shape_text(shape_); }

std::string sharding_text(const Sharding& s) {
  std::string t;
  for (int64_t a : s.split) t += (t.empty() ? "" : ", ") + (a == Sharding::kReplicated ? std::string("replicated") : std::to_string(a));
  return "[" + t + "]";
}

std::vector<int64_t> shard_shape(const Mesh& mesh, std::span<const int64_t> shape, const Sharding& sharding) {
  const auto fail = [&](const std::string& why) {
    throw Error("sharding " + sharding_text(sharding) + " of a " + shape_text(shape) + " tensor on mesh " + mesh.name() + ": " + why);
  };
  if (sharding.split.size() != mesh.shape().size())
    fail("it names " + std::to_string(sharding.split.size()) + " mesh axes; the mesh has " + std::to_string(mesh.shape().size()));
  std::vector<int64_t> block(shape.begin(), shape.end());
  std::vector<bool> split_already(shape.size(), false);
  for (size_t k = 0; k < sharding.split.size(); ++k) {
    const int64_t a = sharding.split[k];
    if (a == Sharding::kReplicated) continue;
    if (a < 0 || a >= static_cast<int64_t>(shape.size())) fail("tensor axis " + std::to_string(a) + " does not exist");
    auto& d = block[static_cast<size_t>(a)];
    if (split_already[static_cast<size_t>(a)]) fail("tensor axis " + std::to_string(a) + " is split by two mesh axes");
    split_already[static_cast<size_t>(a)] = true;
    if (d % mesh.shape()[k] != 0)
      fail("axis " + std::to_string(a) + " of size " + std::to_string(d) + " does not divide over mesh axis " + std::to_string(k) + " of " +
           std::to_string(mesh.shape()[k]) + " devices");
    d /= mesh.shape()[k];
  }
  return block;
}

ShardedArray distribute(Mesh& mesh, DType dtype, std::vector<int64_t> shape, std::span<const uint8_t> bytes, const Sharding& sharding,
                        const std::string& label) {
  const auto item = static_cast<size_t>(dtype.itemsize());
  if (bytes.size() != static_cast<size_t>(product(shape)) * item)
    throw Error("distribute " + label + ": " + std::to_string(bytes.size()) + " bytes for a " + shape_text(shape) + " tensor of " + dtype.name());
  const std::vector<int64_t> block = shard_shape(mesh, shape, sharding);
  ShardedArray out{dtype, shape, sharding, {}};
  std::vector<uint8_t> staging(static_cast<size_t>(product(block)) * item);
  for (size_t d = 0; d < mesh.size(); ++d) {
    copy_block(bytes.data(), shape, block_origin(mesh, d, block, sharding), staging.data(), block, std::vector<int64_t>(block.size(), 0), block, item);
    out.shards.push_back(upload(mesh.device(d), dtype, staging, label + " shard " + std::to_string(d)));
  }
  return out;
}

std::vector<uint8_t> gather(Mesh& mesh, const ShardedArray& array) {
  const auto item = static_cast<size_t>(array.dtype.itemsize());
  const std::vector<int64_t> block = shard_shape(mesh, array.shape, array.sharding);
  if (array.shards.size() != mesh.size())
    throw Error("gather: the array has " + std::to_string(array.shards.size()) + " shards; the mesh has " + std::to_string(mesh.size()) + " devices");
  std::vector<uint8_t> whole(static_cast<size_t>(product(array.shape)) * item);
  for (size_t d = 0; d < mesh.size(); ++d) {
    const std::vector<int64_t> coords = mesh.coordinates(d);
    bool first_holder = true;  // a replicated block is read once, from coordinate 0 on the replicated axes
    for (size_t k = 0; k < coords.size(); ++k) first_holder &= array.sharding.split[k] != Sharding::kReplicated || coords[k] == 0;
    if (!first_holder) continue;
    const std::vector<uint8_t> shard = download(mesh.device(d), array.shards[d]);
    copy_block(shard.data(), block, std::vector<int64_t>(block.size(), 0), whole.data(), array.shape, block_origin(mesh, d, block, array.sharding), block,
               item);
  }
  return whole;
}

ShardedArray reshard(Mesh& mesh, const ShardedArray& array, const Sharding& to, const std::string& label) {
  shard_shape(mesh, array.shape, to);  // the new sharding fits, before anything is copied
  return distribute(mesh, array.dtype, array.shape, gather(mesh, array), to, label);
}

void release(Mesh& mesh, const ShardedArray& array) {
  for (size_t d = 0; d < array.shards.size() && d < mesh.size(); ++d) mesh.device(d).free(array.shards[d].buffer);
}

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
  k.modules_.push_back(k.compiled_.module());
  for (size_t d = 1; d < mesh.size(); ++d) k.modules_.push_back(mesh.device(d).load(k.compiled_.code_object()));
  return k;
}

void MeshKernel::check_shardings(const Mesh& mesh, std::span<const ShardedArray> buffers) const {
  for (size_t slot = 0; slot < buffers.size(); ++slot) {
    const ShardedArray& b = buffers[slot];
    if (b.shards.size() != mesh.size())
      throw Error("kernel " + lowered().name + ": buffer argument " + std::to_string(slot) + " has " + std::to_string(b.shards.size()) +
                  " shards; the mesh has " + std::to_string(mesh.size()) + " devices");
    const auto it = lowered().device_splits.find(static_cast<int64_t>(slot));
    if (it == lowered().device_splits.end()) continue;  // a per-device buffer: the kernel indexes each shard as it is
    const Sharding wanted{it->second};
    if (!(b.sharding == wanted))
      throw Error("kernel " + lowered().name + ": buffer argument " + std::to_string(slot) + " is sharded " + sharding_text(b.sharding) +
                  ", the kernel indexes it sharded " + sharding_text(wanted) + " (per mesh axis, the tensor axis split; reshard it first)");
  }
}

void MeshKernel::launch(Mesh& mesh, std::span<const ShardedArray> buffers, const std::map<std::string, ScalarValue>& scalars) const {
  if (mesh.size() != modules_.size())
    throw Error("kernel " + lowered().name + " was compiled for a mesh of " + std::to_string(modules_.size()) + " devices, launched on " + mesh.name());
  for (const auto& a : lowered().mesh)
    if (scalars.contains(a.variable))
      throw Error("kernel " + lowered().name + ": scalar " + a.variable + " is DEVICE range " + std::to_string(a.range_id) +
                  "'s index, which each shard's launch sets");
  check_shardings(mesh, buffers);
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
