// Pass 1: shards. A fragment is a REG shard unsharded over LOCAL thread ranges; a device shard is
// a GLOBAL buffer unsharded over DEVICE ranges (a mesh axis each). The kernel indexes the whole
// tensor, and each index must name an element the indexing thread (device) owns.
#include "graph_utils.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"
#include "weft/lowering/symbolic.h"

namespace weft::lower {
namespace {

// Who owns the shards: the threads of a workgroup (a fragment) or the devices of a mesh.
enum class Owners { Threads, Devices };

struct Sharding {
  UOp shard;                 // the REG placeholder (a fragment) or GLOBAL one (a device shard)
  std::vector<int64_t> axes;
  std::vector<UOp> ranges;
  Owners owners;
};

// The UNSHARD under a chain of AFTERs, or nullopt.
std::optional<Sharding> find_unshard(UOp b) {
  while (b.op() == Op::AFTER) b = b.src(0);
  if (b.op() != Op::UNSHARD) {
    for (UOp v = b; v.is_buffer() && !v.src().empty() && v.op() != Op::PLACEHOLDER; v = v.src(0))
      if (v.op() == Op::UNSHARD) throw Error("resolve_unshard: views of a sharded buffer are not supported; index the sharded buffer itself");
    return std::nullopt;
  }
  const UOp shard = b.src(0);
  const std::optional<AddrSpace> space = shard.op() == Op::PLACEHOLDER ? std::optional(shard.arg_as<BufferArg>().space) : std::nullopt;
  if (space != AddrSpace::REG && space != AddrSpace::GLOBAL)
    throw Error("resolve_unshard: UNSHARD takes a REG placeholder (a fragment) or a GLOBAL one (a device shard), not " + expr_string(shard));
  const bool device = space == AddrSpace::GLOBAL;
  Sharding s{shard, b.arg_as<ShapeArg>().values, {b.src().begin() + 1, b.src().end()}, device ? Owners::Devices : Owners::Threads};
  const AxisType want = device ? AxisType::DEVICE : AxisType::LOCAL;
  for (const UOp& r : s.ranges)
    if (range_axis(r) != want)
      throw Error("resolve_unshard: " + std::string(device ? "device shard " : "fragment ") + expr_string(shard) + " is sharded over range " +
                  std::to_string(range_id(r)) + " of axis " + std::string(axis_name(range_axis(r))) +
                  (device ? "; a GLOBAL buffer shards over DEVICE ranges" : "; fragments shard over LOCAL ranges"));
  return s;
}

// The AFTER chain above the UNSHARD, rebuilt on the shard itself.
UOp rebase(const UOp& b, const UOp& shard) {
  if (b.op() != Op::AFTER) return shard;
  std::vector<UOp> src = b.src();
  src[0] = rebase(b.src(0), shard);
  return b.with_src(std::move(src));
}

bool in_shard(const UOp& local, int64_t shard_size) { return local.vmin() >= 0 && local.vmax() < shard_size; }

// The position inside this thread's (device's) shard of element `idx` along a sharded axis.
UOp local_index(const UOp& idx, const UOp& rng, int64_t shard_size, int64_t axis, Owners owners) {
  const int64_t count = static_cast<int64_t>(rng.src(0).const_int());
  const std::string where = "index " + expr_string(idx) + " along axis " + std::to_string(axis) + " over range " + std::to_string(range_id(rng)) +
                            " (" + std::to_string(count) + (owners == Owners::Devices ? " devices, " : " threads, ") +
                            std::to_string(shard_size) + " elements each)";
  // Contiguous: owner r owns [r*shard, (r+1)*shard).
  UOp contiguous = simplify(idx - rng * shard_size);
  if (!depends_on(contiguous, rng) && in_shard(contiguous, shard_size)) return contiguous;
  // A sharded array lies on a mesh in contiguous blocks (rt::Sharding): a device has no other.
  if (owners == Owners::Devices)
    throw Error("cannot shard " + where + ": a device owns a contiguous block, so the index must be range*" + std::to_string(shard_size) +
                " + i with 0 <= i < " + std::to_string(shard_size));
  // Strided: thread r owns {r, r+count, r+2*count, ...}.
  UOp offset = simplify(idx - rng);
  if (!depends_on(offset, rng) && offset.vmin() >= 0) {
    UOp rem = simplify(offset % count);
    UOp strided = simplify(offset / count);
    if (rem.is_const() && rem.const_int() == 0 && in_shard(strided, shard_size)) return strided;
  }
  throw Error("cannot shard " + where + ": a thread must own it either contiguously (range*" + std::to_string(shard_size) +
              " + i) or strided (range + i*" + std::to_string(count) + "), with 0 <= i < " + std::to_string(shard_size));
}

}  // namespace

UOp resolve_unshard(const UOp& kernel) {
  UOp out = transform(kernel, [](const UOp&, const UOp& u) -> std::optional<UOp> {
    if (u.op() != Op::INDEX) return std::nullopt;
    auto s = find_unshard(u.src(0));
    if (!s) return std::nullopt;
    std::vector<UOp> src{rebase(u.src(0), s->shard)};
    src.insert(src.end(), u.src().begin() + 1, u.src().end());
    const auto shard_shape = s->shard.static_shape();
    for (size_t k = 0; k < s->axes.size(); ++k) {
      const auto axis = static_cast<size_t>(s->axes[k]);
      src[1 + axis] = local_index(u.src(1 + axis), s->ranges[k], shard_shape[axis], s->axes[k], s->owners);
    }
    return u.with_src(std::move(src));
  });
  for (const UOp& u : toposort(out))
    if (u.op() == Op::UNSHARD)
      throw Error("resolve_unshard: sharded buffer " + expr_string(u.src(0)) + " is used other than through an index");
  return out;
}

}  // namespace weft::lower
