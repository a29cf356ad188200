// Pass 1b: DEVICE ranges become the mesh's device indices. A kernel over a device mesh compiles
// once per target and runs as one shard per device; each DEVICE range (a mesh axis) turns into a
// scalar variable the launch sets per device, and ENDs and AFTERs stop naming it (there is no
// loop). Its bounds stay those of the range, so index arithmetic simplifies as before.
#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/passes.h"

namespace weft::lower {

UOp device_variable(const UOp& device_range) {
  if (!device_range.src(0).is_const())
    throw Error("DEVICE range " + std::to_string(range_id(device_range)) + " has a run-time size; a mesh axis has a constant size");
  const int64_t size = static_cast<int64_t>(device_range.src(0).const_int());
  return variable("device" + std::to_string(range_id(device_range)), 0, size - 1, dtypes::int32);
}

std::vector<MeshAxis> mesh_axes(const UOp& kernel) {
  std::vector<UOp> ranges;
  for (const UOp& u : toposort(kernel))
    if (u.op() == Op::RANGE && range_axis(u) == AxisType::DEVICE) ranges.push_back(u);
  sort_ranges(ranges);
  std::vector<MeshAxis> axes;
  for (const UOp& r : ranges) {
    if (!axes.empty() && axes.back().range_id == range_id(r))
      throw Error("kernel: DEVICE range " + std::to_string(range_id(r)) + " appears with two sizes; one mesh axis has one size");
    axes.push_back({range_id(r), static_cast<int64_t>(r.src(0).const_int()), device_variable(r).arg_as<VarArg>().name});
  }
  return axes;
}

std::map<int64_t, std::vector<int64_t>> device_splits(const UOp& kernel, const std::vector<MeshAxis>& mesh) {
  std::map<int64_t, std::vector<int64_t>> splits;
  for (const UOp& u : toposort(kernel)) {
    if (u.op() != Op::UNSHARD || u.src(0).op() != Op::PLACEHOLDER || u.src(0).arg_as<BufferArg>().space != AddrSpace::GLOBAL) continue;
    const int64_t slot = u.src(0).arg_as<BufferArg>().slot;
    std::vector<int64_t> split(mesh.size(), kReplicated);
    const auto& axes = u.arg_as<ShapeArg>().values;
    for (size_t k = 0; k < axes.size(); ++k) {
      const UOp& r = u.src(1 + k);
      if (r.op() != Op::RANGE || range_axis(r) != AxisType::DEVICE) continue;  // resolve_unshard names the problem
      for (size_t m = 0; m < mesh.size(); ++m) {
        if (mesh[m].range_id != range_id(r)) continue;
        if (split[m] != kReplicated)
          throw Error("kernel: buffer " + std::to_string(slot) + " is unsharded over DEVICE range " + std::to_string(range_id(r)) +
                      " along two axes; a mesh axis splits one axis of a tensor");
        split[m] = axes[k];
      }
    }
    const auto [it, fresh] = splits.emplace(slot, split);
    if (!fresh && it->second != split)
      throw Error("kernel: buffer " + std::to_string(slot) + " is unsharded over the mesh in two different ways; a sharded array has one layout");
  }
  return splits;
}

UOp resolve_devices(const UOp& kernel) {
  const auto is_device = [](const UOp& u) { return u.op() == Op::RANGE && range_axis(u) == AxisType::DEVICE; };
  // A reduction over a mesh axis is a collective across devices, which no kernel can do alone.
  for (const UOp& u : toposort(kernel))
    if (u.op() == Op::REDUCE || u.op() == Op::CONTRACT)
      for (const UOp& s : u.src())
        if (is_device(s))
          throw Error("resolve_devices: " + std::string(op_name(u.op())) + " over DEVICE range " + std::to_string(range_id(s)) +
                      ": a reduction across devices is a collective, which a kernel cannot do; reduce on each device, then gather");
  return transform(kernel, [&](const UOp& old, const UOp& u) -> std::optional<UOp> {
    if (is_device(old)) return device_variable(old).cast(dtypes::index);  // the range's dtype
    if (u.op() != Op::END && u.op() != Op::AFTER) return std::nullopt;
    std::vector<UOp> src{u.src(0)};
    for (size_t i = 1; i < u.src().size(); ++i)
      if (!is_device(old.src(i))) src.push_back(u.src(i));
    if (src.size() == u.src().size()) return std::nullopt;
    if (src.size() == 1) return src[0];
    return u.with_src(std::move(src));
  });
}

}  // namespace weft::lower
