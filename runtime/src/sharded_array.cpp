// Tensors on a mesh: a sharding's blocks, and moving a tensor onto, off and across the mesh.
#include <cstring>
#include <functional>
#include <numeric>

#include "weft/dsl/error.h"
#include "weft/runtime/mesh.h"

namespace weft::rt {
namespace {

int64_t product(std::span<const int64_t> v) { return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>()); }

// Copies the block of `extent` elements at `from_origin` in a row-major tensor of `from_shape`
// to `to_origin` in one of `to_shape`: a run of the last axis at a time.
void copy_block(const uint8_t* from, std::span<const int64_t> from_shape, std::span<const int64_t> from_origin, uint8_t* to,
                std::span<const int64_t> to_shape, std::span<const int64_t> to_origin, std::span<const int64_t> extent, size_t item) {
  const size_t rank = extent.size();
  if (rank == 0) {
    std::memcpy(to, from, item);
    return;
  }
  if (product(extent) == 0) return;
  std::vector<int64_t> at(rank, 0);  // the position in the block; the last axis stays 0 (one run)
  const size_t run = static_cast<size_t>(extent[rank - 1]) * item;
  const auto offset = [&](std::span<const int64_t> shape, std::span<const int64_t> origin) {
    int64_t o = 0;
    for (size_t a = 0; a < rank; ++a) o = o * shape[a] + origin[a] + at[a];
    return static_cast<size_t>(o) * item;
  };
  while (true) {
    std::memcpy(to + offset(to_shape, to_origin), from + offset(from_shape, from_origin), run);
    size_t a = rank - 1;  // advance the axes before the last, odometer-wise
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
  try {
    for (size_t d = 0; d < mesh.size(); ++d) {
      copy_block(bytes.data(), shape, block_origin(mesh, d, block, sharding), staging.data(), block, std::vector<int64_t>(block.size(), 0), block,
                 item);
      out.shards.push_back(upload(mesh.device(d), dtype, staging, label + " shard " + std::to_string(d)));
    }
  } catch (...) {
    release(mesh, out);  // the shards uploaded before the failure
    throw;
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

}  // namespace weft::rt
