// Hash-consing of nodes. The table is sharded by hash so that threads building graphs at the
// same time rarely contend; a node, once made, is never freed (graphs are small next to the
// programs that build them, and pointer identity is what makes rewriting and caching cheap).
#include "weft/dsl/uop.h"

#include <array>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace weft {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finaliser over the running hash: cheap and well distributed.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

uint64_t hash_string(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

uint64_t hash_wide(Wide w) {
  auto u = static_cast<unsigned __int128>(w);
  return mix(static_cast<uint64_t>(u), static_cast<uint64_t>(u >> 64));
}

uint64_t hash_dtype(DType d) { return (static_cast<uint64_t>(d.scalar) << 16) | d.lanes; }

struct ArgHasher {
  uint64_t operator()(std::monostate) const { return 0; }
  uint64_t operator()(Wide w) const { return hash_wide(w); }
  uint64_t operator()(const FloatConst& f) const {
    uint64_t bits;
    std::memcpy(&bits, &f.value, sizeof bits);
    return mix(2, bits);
  }
  uint64_t operator()(const std::string& s) const { return hash_string(s); }
  uint64_t operator()(const ShapeArg& s) const {
    uint64_t h = 3;
    for (int64_t v : s.values) h = mix(h, static_cast<uint64_t>(v));
    return h;
  }
  uint64_t operator()(Op op) const { return mix(4, static_cast<uint64_t>(op)); }
  uint64_t operator()(const RangeArg& r) const { return mix(mix(5, static_cast<uint64_t>(r.id)), static_cast<uint64_t>(r.axis)); }
  uint64_t operator()(const BufferArg& b) const { return mix(mix(6, static_cast<uint64_t>(b.slot)), static_cast<uint64_t>(b.space)); }
  uint64_t operator()(const VarArg& v) const { return mix(mix(mix(7, hash_string(v.name)), hash_wide(v.min)), hash_wide(v.max)); }
  uint64_t operator()(const KernelInfo& k) const {
    return mix(mix(mix(mix(8, hash_string(k.name)), static_cast<uint64_t>(k.cluster)), static_cast<uint64_t>(k.dependent_launch)),
               static_cast<uint64_t>(k.min_workgroups_per_processor));
  }
  uint64_t operator()(const WmmaArg& w) const {
    uint64_t h = mix(9, static_cast<uint64_t>(w.m));
    h = mix(h, static_cast<uint64_t>(w.n));
    h = mix(h, static_cast<uint64_t>(w.k));
    h = mix(h, hash_dtype(w.input));
    h = mix(h, hash_dtype(w.accum));
    return mix(h, static_cast<uint64_t>(w.threads));
  }
  uint64_t operator()(const LaneArg& l) const { return mix(mix(11, static_cast<uint64_t>(l.op)), static_cast<uint64_t>(l.width)); }
  uint64_t operator()(const AtomicArg& a) const {
    return mix(mix(mix(12, static_cast<uint64_t>(a.op)), static_cast<uint64_t>(a.scope)), static_cast<uint64_t>(a.site));
  }
  uint64_t operator()(const EffectArg& e) const {
    return mix(mix(mix(10, static_cast<uint64_t>(e.site)), hash_wide(e.value)), hash_string(e.text));
  }
  uint64_t operator()(const WaitArg& w) const {
    return mix(mix(mix(13, static_cast<uint64_t>(w.site)), static_cast<uint64_t>(w.vm)), static_cast<uint64_t>(w.lgkm));
  }
  uint64_t operator()(const WgmmaArg& w) const {
    uint64_t h = mix(mix(mix(15, static_cast<uint64_t>(w.site)), static_cast<uint64_t>(w.n)), hash_dtype(w.input));
    for (const MatrixLayoutArg& m : {w.a, w.b})
      h = mix(mix(mix(h, static_cast<uint64_t>(m.leading_bytes)), static_cast<uint64_t>(m.stride_bytes)), static_cast<uint64_t>(m.swizzle));
    return mix(h, w.a_registers ? 1 : 0);
  }
  uint64_t operator()(const TmaArg& t) const {
    uint64_t h = mix(mix(16, static_cast<uint64_t>(t.site)), static_cast<uint64_t>(t.rows));
    return mix(mix(mix(h, static_cast<uint64_t>(t.cols)), static_cast<uint64_t>(t.swizzle)), t.multicast ? 1u : 0u);
  }
  uint64_t operator()(const SchedArg& a) const {
    uint64_t h = mix(mix(14, static_cast<uint64_t>(a.site)), static_cast<uint64_t>(a.mask));
    return mix(mix(h, static_cast<uint64_t>(a.size)), static_cast<uint64_t>(a.sync_id));
  }
};

// What identifies a node, without allocating one.
struct NodeKey {
  Op op;
  DType dtype;
  std::span<const UOp> src;
  const Arg& arg;
  uint64_t hash;
};

uint64_t hash_content(Op op, DType dtype, std::span<const UOp> src, const Arg& arg) {
  uint64_t h = mix(static_cast<uint64_t>(op) + 1, hash_dtype(dtype));
  h = mix(h, hash_arg(arg));
  for (const UOp& s : src) h = mix(h, s.hash());
  return h;
}

bool same_content(const Node& n, const NodeKey& k) {
  if (n.hash != k.hash || n.op != k.op || !(n.dtype == k.dtype) || n.src.size() != k.src.size()) return false;
  for (size_t i = 0; i < n.src.size(); ++i)
    if (!n.src[i].same(k.src[i])) return false;
  return n.arg == k.arg;
}

struct NodePtrHash {
  using is_transparent = void;
  size_t operator()(const Node* n) const { return n->hash; }
  size_t operator()(const NodeKey& k) const { return k.hash; }
};
struct NodePtrEq {
  using is_transparent = void;
  bool operator()(const Node* a, const Node* b) const {
    return a == b || same_content(*a, NodeKey{b->op, b->dtype, b->src, b->arg, b->hash});
  }
  bool operator()(const NodeKey& k, const Node* n) const { return same_content(*n, k); }
  bool operator()(const Node* n, const NodeKey& k) const { return same_content(*n, k); }
};

struct Shard {
  std::mutex mutex;
  std::unordered_set<const Node*, NodePtrHash, NodePtrEq> nodes;
};

constexpr size_t kShards = 64;

std::array<Shard, kShards>& shards() {
  // Never destroyed: nodes must outlive every static that holds a UOp.
  static auto* table = new std::array<Shard, kShards>();
  return *table;
}

}  // namespace

bool FloatConst::operator==(const FloatConst& o) const { return std::memcmp(&value, &o.value, sizeof value) == 0; }

uint64_t hash_arg(const Arg& arg) { return mix(arg.index(), std::visit(ArgHasher{}, arg)); }

std::optional<int64_t> effect_site(const Arg& arg) {
  if (const auto* e = std::get_if<EffectArg>(&arg)) return e->site;
  if (const auto* w = std::get_if<WaitArg>(&arg)) return w->site;
  if (const auto* a = std::get_if<SchedArg>(&arg)) return a->site;
  if (const auto* w = std::get_if<WgmmaArg>(&arg)) return w->site;
  if (const auto* t = std::get_if<TmaArg>(&arg)) return t->site;
  return std::nullopt;
}

UOp UOp::make(Op op, DType dtype, std::vector<UOp> src, Arg arg) { return intern(op, dtype, src, std::move(arg)); }

UOp UOp::make(Op op, DType dtype, std::initializer_list<UOp> src, Arg arg) {
  return intern(op, dtype, std::span<const UOp>(src.begin(), src.size()), std::move(arg));
}

UOp UOp::intern(Op op, DType dtype, std::span<const UOp> src, Arg&& arg) {
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i].is_null()) throw Error("internal: " + std::string(op_name(op)) + " built with an empty source " + std::to_string(i));
  const uint64_t h = hash_content(op, dtype, src, arg);
  Shard& shard = shards()[h % kShards];
  {
    std::lock_guard lock(shard.mutex);
    if (auto it = shard.nodes.find(NodeKey{op, dtype, src, arg, h}); it != shard.nodes.end()) return UOp(*it);
  }
  // Derived facts are computed outside the lock; a racing builder of the same node loses.
  std::vector<UOp> sources(src.begin(), src.end());
  auto [lo, hi] = compute_vrange(op, dtype, sources, arg);
  std::vector<UOp> shape = compute_shape(op, sources, arg);
  auto* node = new Node{op, dtype, std::move(sources), std::move(arg), h, lo, hi, std::move(shape)};
  std::lock_guard lock(shard.mutex);
  auto [it, inserted] = shard.nodes.insert(node);
  if (!inserted) delete node;
  return UOp(*it);
}

UOp UOp::with_src(std::vector<UOp> src) const { return make(op(), dtype(), std::move(src), arg()); }
UOp UOp::with_arg(Arg a) const { return make(op(), dtype(), src(), std::move(a)); }

Wide UOp::const_int() const {
  if (op() != Op::CONST) throw Error("const_int of a non-constant " + std::string(op_name(op())));
  if (const Wide* w = std::get_if<Wide>(&arg())) return *w;
  throw Error("const_int of a float constant");
}

double UOp::const_float() const {
  if (op() != Op::CONST) throw Error("const_float of a non-constant " + std::string(op_name(op())));
  if (const FloatConst* f = std::get_if<FloatConst>(&arg())) return f->value;
  return static_cast<double>(std::get<Wide>(arg()));
}

bool UOp::is_effect() const { return opsets::effect.contains(op()); }

bool UOp::is_buffer() const { return !shape().empty() || op() == Op::PLACEHOLDER; }

std::vector<int64_t> UOp::static_shape() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < shape().size(); ++i) {
    const UOp& d = shape()[i];
    if (!d.is_const())
      throw Error("dimension " + std::to_string(i) + " of " + std::string(op_name(op())) +
                  " is not a constant (it depends on a run-time variable); this operation needs a static shape");
    out.push_back(static_cast<int64_t>(d.const_int()));
  }
  return out;
}

std::vector<UOp> toposort(std::span<const UOp> roots) {
  std::vector<UOp> order;
  std::unordered_set<const Node*> done;
  std::vector<std::pair<UOp, size_t>> stack;  // node, index of the next source to visit
  for (const UOp& root : roots) {
    if (done.count(root.node())) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n.src().size()) {
        UOp s = n.src()[next++];
        if (!done.count(s.node())) stack.emplace_back(s, 0);
        continue;
      }
      if (done.insert(n.node()).second) order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace weft
