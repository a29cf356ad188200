#include "weft/dsl/verify.h"

#include <map>
#include <optional>
#include <unordered_map>

#include "weft/dsl/print.h"

namespace weft {
namespace {

class Checker {
 public:
  explicit Checker(std::vector<Violation>& out) : out_(out) {}

  void check(size_t number, const UOp& u) {
    number_ = number;
    node_ = u;
    check_arg_kind(u);
    if (opsets::alu.contains(u.op())) return check_alu(u);
    if (opsets::movement.contains(u.op())) return check_view(u);
    switch (u.op()) {
      case Op::CONST: return check_const(u);
      case Op::DEFINE_VAR: return check_var(u);
      case Op::PLACEHOLDER: return check_placeholder(u);
      case Op::RANGE: check_axis(u); return check_loop_end(u);
      case Op::SPECIAL: return check_loop_end(u);
      case Op::UNSHARD: return check_unshard(u);
      case Op::INDEX: return check_index(u);
      case Op::LOAD: return check_load(u);
      case Op::STORE: return check_store(u);
      case Op::ASYNC_COPY: return check_async_copy(u);
      case Op::END: return check_end(u);
      case Op::AFTER: return check_after(u);
      case Op::GROUP:
      case Op::SINK: check_no_repeats(u); return check_effects(u, 0);
      case Op::PRIORITY:
      case Op::BARRIER:
      case Op::WAIT:
      case Op::ASYNC_COMMIT:
      case Op::SCHED_BARRIER:
      case Op::SCHED_GROUP_BARRIER: return check_site(u);  // effects it follows, and values issued before it
      case Op::CUSTOM:
      case Op::CUSTOMI:
      case Op::MBARRIER: return check_site(u);
      case Op::WGMMA: check_wgmma_a(u); return check_site(u);
      case Op::WGMMA_FENCE:
      case Op::WGMMA_COMMIT:
      case Op::WGMMA_WAIT:
      case Op::TMA_LOAD:
      case Op::TMA_STORE:
      case Op::TMA_STORE_WAIT:
      case Op::CLUSTER_SYNC:
      case Op::SETMAXNREG: return check_site(u);
      case Op::GRID_BARRIER: check_grid_counter(u); return check_site(u);
      case Op::WHEN: return check_when(u);
      case Op::ATOMIC: return check_atomic(u);
      case Op::SHUFFLE: expect_sources(u, 2); return;
      case Op::BROADCAST: if (u.src().empty() || u.src().size() > 2) report("has a value and at most a lane"); return;
      case Op::VOTE: expect_sources(u, 1); return;
      case Op::REDUCE:
      case Op::CONTRACT: return check_over_ranges(u);
      case Op::GEP: expect_sources(u, 1); return;
      case Op::WMMA: expect_sources(u, 3); return;
      default: return;
    }
  }

 private:
  void report(const std::string& rule) { out_.push_back({number_, node_, rule}); }

  bool expect_sources(const UOp& u, size_t n) {
    if (u.src().size() == n) return true;
    report("has " + std::to_string(u.src().size()) + " sources, expected " + std::to_string(n));
    return false;
  }

  void check_arg_kind(const UOp& u) {
    auto want = [&](bool ok, const char* kind) {
      if (!ok) report(std::string("arg should be ") + kind + ", got '" + arg_to_string(u.arg()) + "'");
    };
    const Arg& a = u.arg();
    switch (u.op()) {
      case Op::CONST: want(std::holds_alternative<Wide>(a) || std::holds_alternative<FloatConst>(a), "a number"); break;
      case Op::DEFINE_VAR: want(std::holds_alternative<VarArg>(a), "a variable's name and bounds"); break;
      case Op::PLACEHOLDER: want(std::holds_alternative<BufferArg>(a), "a buffer slot"); break;
      case Op::RANGE: want(std::holds_alternative<RangeArg>(a), "a range id and axis"); break;
      case Op::SPECIAL: want(std::holds_alternative<std::string>(a), "a string"); break;
      case Op::BARRIER: {
        const auto* e = std::get_if<EffectArg>(&a);
        want((e && (e->value == static_cast<Wide>(BarrierFence::Workgroup) || e->value == static_cast<Wide>(BarrierFence::None))) ||
                 std::holds_alternative<std::monostate>(a),
             "a site and a fence (0: workgroup, 1: none)");
        break;
      }
      case Op::ASYNC_COMMIT: want(std::holds_alternative<EffectArg>(a), "a site"); break;
      case Op::WAIT: {
        const auto* w = std::get_if<WaitArg>(&a);
        want(w && w->vm >= -1 && w->lgkm >= -1 && (w->vm >= 0 || w->lgkm >= 0), "a site and counts (-1: not waited on; at least one)");
        break;
      }
      case Op::SCHED_BARRIER:
      case Op::SCHED_GROUP_BARRIER: {
        const auto* g = std::get_if<SchedArg>(&a);
        const bool grouped = u.op() == Op::SCHED_GROUP_BARRIER;
        want(g && (static_cast<uint32_t>(g->mask) & ~kSchedMaskAll) == 0 &&
                 (grouped ? g->size >= 1 && g->sync_id >= 0 : g->size == 0 && g->sync_id == 0),
             grouped ? "a site, an instruction mask, a group size >= 1 and a sync id >= 0" : "a site and an instruction mask");
        break;
      }
      case Op::CUSTOM:
      case Op::CUSTOMI:
        want(std::holds_alternative<EffectArg>(a) && !std::get<EffectArg>(a).text.empty(), "a site and the inline assembly");
        break;
      case Op::SINK:
        static_assert(kMaxCluster == 8, "the message below names the largest cluster");
        want(std::holds_alternative<KernelInfo>(a) && std::get<KernelInfo>(a).cluster >= 1 && std::get<KernelInfo>(a).cluster <= kMaxCluster,
             "kernel info (a name and a cluster of 1..8 CTAs)");
        break;
      case Op::REDUCE: want(std::holds_alternative<Op>(a), "the reduction op"); break;
      case Op::PRIORITY:
        want(std::holds_alternative<EffectArg>(a) && std::get<EffectArg>(a).value >= 0 && std::get<EffectArg>(a).value <= 3,
             "a site and a wave priority 0..3");
        break;
      case Op::WMMA: want(std::holds_alternative<WmmaArg>(a), "the wmma shape"); break;
      case Op::WGMMA: want(std::holds_alternative<WgmmaArg>(a), "a site, the wgmma shape and its operands' layouts"); break;
      case Op::MBARRIER:
        want(std::holds_alternative<EffectArg>(a) && std::get<EffectArg>(a).value >= 0 && std::get<EffectArg>(a).value <= static_cast<Wide>(MbarrierOp::ArriveCluster),
             "a site and an mbarrier operation 0..5");
        break;
      case Op::TMA_LOAD:
        want(std::holds_alternative<TmaArg>(a), "a site, a box and a swizzle");
        if (std::holds_alternative<TmaArg>(a) && std::get<TmaArg>(a).multicast &&
            (u.src().size() < 6 || u.src(5).is_effect() || !(u.src(5).dtype() == dtypes::int32)))
          report("a multicast TMA load's sixth source is its int32 CTA mask");
        break;
      case Op::TMA_STORE: want(std::holds_alternative<TmaArg>(a) && !std::get<TmaArg>(a).multicast, "a site, a box and a swizzle (no multicast)"); break;
      case Op::WGMMA_FENCE:
      case Op::WGMMA_COMMIT:
      case Op::CLUSTER_SYNC:
      case Op::GRID_BARRIER: want(std::holds_alternative<EffectArg>(a), "a site"); break;
      case Op::WGMMA_WAIT:
      case Op::TMA_STORE_WAIT:
        want(std::holds_alternative<EffectArg>(a) && std::get<EffectArg>(a).value >= 0 && std::get<EffectArg>(a).value <= 7,
             "a site and a pending group count 0..7");
        break;
      case Op::SETMAXNREG:
        want(std::holds_alternative<EffectArg>(a) &&
                 (valid_register_budget(std::get<EffectArg>(a).value) ||
                  (std::get<EffectArg>(a).value >= -256 && valid_register_budget(-std::get<EffectArg>(a).value))),
             "a site and a register count of 24..256, a multiple of 8, negative to lower it");
        break;
      case Op::SHUFFLE:
      case Op::VOTE: want(std::holds_alternative<LaneArg>(a), "a lane operation and width"); break;
      case Op::ATOMIC: want(std::holds_alternative<AtomicArg>(a), "an atomic operation, scope and site"); break;
      case Op::UNSHARD:
      case Op::GEP: want(std::holds_alternative<ShapeArg>(a), "a list of integers"); break;
      default:
        if (opsets::movement.contains(u.op())) want(std::holds_alternative<ShapeArg>(a), "a list of integers");
    }
  }

  void check_const(const UOp& u) {
    if (u.dtype().is_vector()) return report("a constant must be a scalar");
    if (const Wide* w = std::get_if<Wide>(&u.arg())) {
      if (!u.dtype().is_integral()) return report("integer constant with dtype " + u.dtype().name());
      if (*w < u.dtype().min_value() || *w > u.dtype().max_value())
        report(wide_to_string(*w) + " does not fit in " + u.dtype().name());
    } else if (!u.dtype().is_float()) {
      report("float constant with dtype " + u.dtype().name());
    }
  }

  void check_var(const UOp& u) {
    const auto* v = std::get_if<VarArg>(&u.arg());
    if (!v) return;
    if (u.dtype() != dtypes::int32 && u.dtype() != dtypes::int64 && u.dtype() != dtypes::index && u.dtype() != dtypes::float32)
      report("variable " + v->name + " has dtype " + u.dtype().name() + "; variables are int32, int64, index or float32");
    else if (u.dtype().is_int() && v->min > v->max)
      report("variable " + v->name + " has min > max");
  }

  void check_placeholder(const UOp& u) {
    if (u.src().empty()) report("a buffer needs at least one dimension");
    for (const UOp& d : u.src())
      if (!d.dtype().is_int() || d.dtype().is_vector()) report("dimension " + expr_string(d) + " is not an integer");
    if (const auto* b = std::get_if<BufferArg>(&u.arg()); b && b->space == AddrSpace::ALU)
      report("a buffer cannot live in the ALU address space");
  }

  void check_loop_end(const UOp& u) {
    if (!expect_sources(u, 1)) return;
    const UOp& end = u.src(0);
    if (!end.dtype().is_int() || end.dtype().is_vector())
      report(std::string(op_name(u.op())) + " end " + expr_string(end) + " is not an integer (dtype " + end.dtype().name() + ")");
    if (!(u.dtype() == dtypes::index)) report("a loop variable has dtype index, not " + u.dtype().name());
  }

  void check_buffer_source(const UOp& u) {
    if (u.src().empty() || !u.src(0).is_buffer())
      report("source " + (u.src().empty() ? std::string("(none)") : std::string(op_name(u.src(0).op()))) + " is not a buffer");
  }

  void check_view(const UOp& u) {
    check_buffer_source(u);
    const bool pad_to = u.op() == Op::PAD && u.src().size() > 1;  // the buffer, then one size per axis
    if (pad_to) {
      if (u.src().size() != u.src(0).shape().size() + 1) report("pad_to gives one size per axis of its buffer");
      for (size_t i = 1; i < u.src().size(); ++i)
        if (!u.src(i).dtype().is_int() || u.src(i).dtype().is_vector()) report("size " + expr_string(u.src(i)) + " is not an integer");
    } else if (u.src().size() != 1) {
      report("a view has one source, the buffer");
    }
    if (u.shape().empty()) report("its arguments do not fit the shape of its source");
  }

  void check_unshard(const UOp& u) {
    check_buffer_source(u);
    const auto* axes = std::get_if<ShapeArg>(&u.arg());
    if (!axes || u.src().empty()) return;
    if (axes->values.size() != u.src().size() - 1)
      report("UNSHARD has " + std::to_string(axes->values.size()) + " axes but " + std::to_string(u.src().size() - 1) +
             " ranges; they must match one to one");
    for (size_t i = 1; i < u.src().size(); ++i)
      if (u.src(i).op() != Op::RANGE) report("UNSHARD source " + std::to_string(i) + " is " + std::string(op_name(u.src(i).op())) + ", not a RANGE");
    for (int64_t a : axes->values)
      if (a < 0 || static_cast<size_t>(a) >= u.src(0).shape().size()) report("UNSHARD axis " + std::to_string(a) + " is out of range");
  }

  void check_index(const UOp& u) {
    check_buffer_source(u);
    if (u.src().empty()) return;
    size_t rank = u.src(0).shape().size(), given = u.src().size() - 1;
    if (rank != given)
      report("index with " + std::to_string(given) + " dimensions into a " + std::to_string(rank) + "-dimensional buffer");
    for (size_t i = 1; i < u.src().size(); ++i)
      if (!u.src(i).dtype().is_int()) report("index " + expr_string(u.src(i)) + " is not an integer");
    if (!(u.dtype().element() == u.src(0).dtype().element())) report("index dtype differs from its buffer's");
  }

  // LOAD {index}, LOAD {index, valid, fill} (masked), or LOAD {index, fill} once the mask is the
  // index's validity (after flatten_views).
  void check_load(const UOp& u) {
    if (u.src().empty() || u.src(0).op() != Op::INDEX)
      return report("loads through an INDEX, not " + (u.src().empty() ? std::string("nothing") : std::string(op_name(u.src(0).op()))));
    if (u.src().size() > 3) return report("has " + std::to_string(u.src().size()) + " sources; a load has an index, a mask and a fill");
    if (u.src().size() == 3 && !(u.src(1).dtype() == dtypes::bool_)) report("mask " + expr_string(u.src(1)) + " is not a bool");
    if (u.src().size() > 1 && !(u.src().back().dtype() == u.dtype())) report("fill value's dtype differs from the load's");
    if (!std::holds_alternative<std::monostate>(u.arg())) check_cross_lane_read(u);
  }

  // The only args a LOAD takes: a cross-lane read of shared memory (UOp::load_transposed, 4
  // lanes, or UOp::load_matrix, 8 lanes, of a 2-byte type), unmasked, from a LOCAL buffer.
  void check_cross_lane_read(const UOp& u) {
    if (!is_cross_lane_read(u))
      return report("has an arg (" + arg_to_string(u.arg()) + "); the only ones a load takes are " + kTransposeRead16 + ", " + kMatrixRead16 +
                    " and " + kMatrixReadTransposed16);
    const std::string what = is_transposed_read(u) ? "a transposing read" : "ldmatrix";
    const int lanes = is_transposed_read(u) ? 4 : 8;
    if (u.src().size() != 1) report(what + " is not masked");
    if (u.dtype().lanes != lanes || u.dtype().element().itemsize() != 2)
      report(what + " takes " + std::to_string(lanes) + " lanes of a 2-byte type, not " + u.dtype().name());
    const auto buf = base_buffer(u.src(0));
    if (!buf || buf->space != AddrSpace::LOCAL) report(what + " reads a LOCAL buffer");
  }

  // A WGMMA's A is an INDEX into shared memory, or, where its arg says a_registers, the thread's
  // fragment (a value, not an address).
  void check_wgmma_a(const UOp& u) {
    const auto* w = std::get_if<WgmmaArg>(&u.arg());
    if (!w || u.src().size() < 4) return;
    if (w->a_registers == (u.src(1).op() == Op::INDEX))
      report(w->a_registers ? "takes A from registers but its A is an INDEX" : "takes A from shared memory but its A is not an INDEX");
  }

  void check_when(const UOp& u) {
    if (u.src().size() < 2) return report("needs a condition and at least one effect");
    if (!(u.src(0).dtype() == dtypes::bool_)) report("condition " + expr_string(u.src(0)) + " is not a bool");
    check_effects(u, 1);
  }

  void check_atomic(const UOp& u) {
    if (u.src().size() < 2 || u.src().size() > 3) return report("has an index, a value and (compare_swap) a comparand");
    const auto buf = u.src(0).op() == Op::INDEX ? base_buffer(u.src(0)) : std::nullopt;
    if (!buf || buf->space == AddrSpace::REG) report("works on a GLOBAL or LOCAL buffer through an INDEX");
    const auto* a = std::get_if<AtomicArg>(&u.arg());
    if (a && a->site == 0) report("has no site id: two identical atomics would be merged into one; build it with atomic()");
    if (a && (a->op == AtomicOp::CompareSwap) != (u.src().size() == 3)) report("compare_swap, and only it, takes a comparand");
  }

  // Axes without a lowering are an error, never a silent loop. A DEVICE range is a mesh axis:
  // its size is the mesh's, known when the kernel is built.
  void check_axis(const UOp& u) {
    const auto* r = std::get_if<RangeArg>(&u.arg());
    if (r && r->axis == AxisType::THREAD)
      report("range " + std::to_string(r->id) + " has axis THREAD, which weft cannot lower yet (use GLOBAL, LOCAL, WARP, LOOP or REDUCE)");
    if (r && r->axis == AxisType::DEVICE && !(u.src().size() == 1 && u.src(0).is_const()))
      report("DEVICE range " + std::to_string(r->id) + " has a run-time size; a mesh axis has a constant size");
  }

  void check_store(const UOp& u) {
    if (u.src().size() == 3 && !(u.src(2).dtype() == dtypes::bool_)) report("mask " + expr_string(u.src(2)) + " is not a bool");
    if (u.src().size() != 3 && !expect_sources(u, 2)) return;
    const UOp& target = u.src(0);
    if (target.op() != Op::INDEX) {
      std::string what = opsets::alu.contains(target.op()) ? "an ALU value " : "";
      return report("store into " + what + std::string(op_name(target.op())) + " " + expr_string(target) +
                    "; a store needs an INDEX into a GLOBAL, LOCAL or REG buffer");
    }
    if (!(u.src(1).dtype() == target.dtype()))
      report("stores " + u.src(1).dtype().name() + " into a buffer of " + target.dtype().name());
    if (!std::holds_alternative<std::monostate>(u.arg())) check_matrix_write(u);
  }

  // The only arg a STORE takes: stmatrix (UOp::store_matrix), 8 lanes of a 2-byte type, unmasked,
  // into a LOCAL buffer.
  void check_matrix_write(const UOp& u) {
    if (!is_matrix_write(u)) return report("has an arg (" + arg_to_string(u.arg()) + "); the only one a store takes is " + kMatrixWrite16);
    if (u.src().size() != 2) report("stmatrix is not masked");
    const DType d = u.src(1).dtype();
    if (d.lanes != 8 || d.element().itemsize() != 2) report("stmatrix takes 8 lanes of a 2-byte type, not " + d.name());
    const auto buf = base_buffer(u.src(0));
    if (!buf || buf->space != AddrSpace::LOCAL) report("stmatrix writes a LOCAL buffer");
  }

  static std::optional<BufferArg> base_buffer(const UOp& index) {
    UOp b = index.src(0);
    while (b.op() != Op::PLACEHOLDER && !b.src().empty()) b = b.src(0);
    if (const auto* arg = std::get_if<BufferArg>(&b.arg()); arg && b.op() == Op::PLACEHOLDER) return *arg;
    return std::nullopt;
  }

  void check_async_copy(const UOp& u) {
    if (!expect_sources(u, 2)) return;
    if (u.src(0).op() != Op::INDEX || u.src(1).op() != Op::INDEX) return report("copies between two INDEX nodes");
    auto dst = base_buffer(u.src(0));
    auto src = base_buffer(u.src(1));
    if (!dst || dst->space != AddrSpace::LOCAL) report("destination is not a LOCAL (shared) buffer");
    if (!src || src->space != AddrSpace::GLOBAL) report("source is not a GLOBAL buffer");
  }

  void check_end(const UOp& u) {
    if (u.src().empty()) return report("END needs an effect to end");
    if (!u.src(0).is_effect()) report("END of a " + std::string(op_name(u.src(0).op())) + ", which is not an effect");
    for (size_t i = 1; i < u.src().size(); ++i)
      if (u.src(i).op() != Op::RANGE)
        report("END of " + std::string(op_name(u.src(i).op())) + " " + expr_string(u.src(i)) + ", which is not a range");
  }

  void check_after(const UOp& u) {
    if (u.src().empty()) return report("AFTER needs a value");
    for (size_t i = 1; i < u.src().size(); ++i)
      if (!u.src(i).is_effect() && u.src(i).op() != Op::RANGE)
        report("source " + std::to_string(i) + " is " + std::string(op_name(u.src(i).op())) + ", neither an effect nor a range");
  }

  void check_effects(const UOp& u, size_t from) {
    for (size_t i = from; i < u.src().size(); ++i)
      if (!u.src(i).is_effect())
        report("source " + std::to_string(i) + " is " + std::string(op_name(u.src(i).op())) + ", which is not an effect");
  }

  // GRID_BARRIER's first source: the INDEX of its uint32 counter in a GLOBAL buffer (through views
  // and AFTERs).
  void check_grid_counter(const UOp& u) {
    if (u.src().empty() || u.src(0).op() != Op::INDEX || !(u.src(0).dtype() == dtypes::uint32))
      return report("its first source is the INDEX of a uint32 counter in a GLOBAL buffer");
    UOp buffer = u.src(0).src(0);
    while (buffer.op() != Op::PLACEHOLDER && !buffer.src().empty()) buffer = buffer.src(0);
    if (buffer.op() == Op::PLACEHOLDER && std::holds_alternative<BufferArg>(buffer.arg()) && buffer.arg_as<BufferArg>().space != AddrSpace::GLOBAL)
      report("its counter is in a " + std::string(addrspace_name(buffer.arg_as<BufferArg>().space)) + " buffer; every workgroup must see it: GLOBAL");
  }

  // A position-sensitive statement without a site of its own would be merged with any identical
  // one (hash-consing), so a second barrier or priority change would silently vanish.
  void check_site(const UOp& u) {
    const auto site = effect_site(u.arg());
    if (site && *site != 0) return;
    if (u.op() == Op::BARRIER && !u.src().empty()) return;  // the pipeline's, shared by design
    report("has no site id: two identical " + std::string(op_name(u.op())) +
           " statements would be merged into one; build it with barrier(), wave_priority(), wait_counts(), async_commit(), sched_barrier(), "
           "sched_group_barrier(), custom(), customi(), grid_barrier(), the mbarrier_*() or wgmma*() functions");
  }

  // An effect listed twice in one GROUP or SINK is one node and runs once, not twice.
  void check_no_repeats(const UOp& u) {
    std::unordered_map<const Node*, size_t> first;
    for (size_t i = 0; i < u.src().size(); ++i) {
      auto [it, fresh] = first.emplace(u.src(i).node(), i);
      if (!fresh)
        return report("lists effect " + std::string(op_name(u.src(i).op())) + " " + expr_string(u.src(i), 80) + " twice (sources " +
                      std::to_string(it->second) + " and " + std::to_string(i) + "): an effect is one node and runs once; build two");
    }
  }

  void check_over_ranges(const UOp& u) {
    if (u.src().empty()) return report("needs a value");
    for (size_t i = 1; i < u.src().size(); ++i)
      if (u.src(i).op() != Op::RANGE) report("source " + std::to_string(i) + " is not a RANGE");
  }

  void check_alu(const UOp& u) {
    size_t n = opsets::unary.contains(u.op()) ? 1 : opsets::binary.contains(u.op()) ? 2 : 3;
    if (!expect_sources(u, n)) return;
    for (const UOp& s : u.src())
      if ((s.is_effect() && !s.is_valued_effect()) || s.dtype().is_void() || s.is_buffer())
        return report("operand " + std::string(op_name(s.op())) + " is not a value");
    if (u.op() == Op::CAST || u.op() == Op::BITCAST) return;
    if (u.op() == Op::POPCOUNT && !(u.src(0).dtype().is_int() && u.src(0).dtype().is_unsigned()))
      report("counts the bits of an unsigned integer, not " + u.src(0).dtype().name());
    if (u.op() == Op::WHERE) {
      if (!u.src(0).dtype().element().is_bool()) report("condition is " + u.src(0).dtype().name() + ", not bool");
      if (!(u.src(1).dtype() == u.src(2).dtype()) || !(u.dtype() == u.src(1).dtype())) report("branches and result differ in dtype");
      return;
    }
    for (const UOp& s : u.src())
      if (!(s.dtype() == u.src(0).dtype()))
        return report("operands differ in dtype: " + u.src(0).dtype().name() + " and " + s.dtype().name());
    DType want = opsets::comparison.contains(u.op()) ? dtypes::bool_.vec(u.src(0).dtype().lanes) : u.src(0).dtype();
    if (!(u.dtype() == want)) report("result dtype " + u.dtype().name() + " should be " + want.name());
  }

  std::vector<Violation>& out_;
  size_t number_ = 0;
  UOp node_;
};

// Slots and range ids name one thing each across a kernel.
void check_names(const std::vector<UOp>& order, std::vector<Violation>& out) {
  std::map<std::pair<int64_t, AddrSpace>, std::pair<size_t, UOp>> slots;
  std::map<int64_t, std::pair<size_t, UOp>> ranges;
  for (size_t i = 0; i < order.size(); ++i) {
    const UOp& u = order[i];
    if (u.op() == Op::PLACEHOLDER && std::holds_alternative<BufferArg>(u.arg())) {
      const auto& b = u.arg_as<BufferArg>();
      auto [it, fresh] = slots.try_emplace({b.slot, b.space}, i, u);
      if (!fresh)
        out.push_back({i, u, std::string(addrspace_name(b.space)) + " slot " + std::to_string(b.slot) + " is also used by %" +
                                 std::to_string(it->second.first) + " with another dtype or shape"});
    }
    if (u.op() == Op::RANGE && std::holds_alternative<RangeArg>(u.arg())) {
      auto [it, fresh] = ranges.try_emplace(u.arg_as<RangeArg>().id, i, u);
      if (!fresh)
        out.push_back({i, u, "range id " + std::to_string(u.arg_as<RangeArg>().id) + " is also used by %" +
                                 std::to_string(it->second.first) + " with another end or axis"});
    }
  }
}

// A kernel's cluster statements need a cluster (KernelInfo::cluster above 1), and name CTAs of
// it: a multicast mask below 2^cluster, an arrival's rank below the cluster (where constant).
// Without one, a multicast writes, and an arrival maps, shared memory of a CTA that is not there.
void check_cluster(const std::vector<UOp>& order, const UOp& root, std::vector<Violation>& out) {
  const int64_t cluster = root.arg_as<KernelInfo>().cluster;
  for (size_t i = 0; i < order.size(); ++i) {
    const UOp& u = order[i];
    const bool multicast = u.op() == Op::TMA_LOAD && std::holds_alternative<TmaArg>(u.arg()) && u.arg_as<TmaArg>().multicast;
    const bool remote = u.op() == Op::MBARRIER && std::holds_alternative<EffectArg>(u.arg()) &&
                        u.arg_as<EffectArg>().value == static_cast<Wide>(MbarrierOp::ArriveCluster);
    if (!multicast && !remote && u.op() != Op::CLUSTER_SYNC) continue;
    if (cluster == 1) {
      out.push_back({i, u, "a cluster statement in kernel " + root.arg_as<KernelInfo>().name + ", which runs in no cluster (KernelInfo::cluster is 1)"});
      continue;
    }
    const size_t operand = multicast ? 5 : 1;  // the CTA mask, the CTA's rank
    if ((!multicast && !remote) || u.src().size() <= operand || !u.src(operand).is_const()) continue;
    const Wide v = u.src(operand).const_int();
    if (multicast && (v < 1 || v >= (Wide{1} << cluster)))
      out.push_back({i, u, "the CTA mask " + wide_to_string(v) + " names no CTA or one past the cluster of " + std::to_string(cluster)});
    if (remote && (v < 0 || v >= cluster))
      out.push_back({i, u, "CTA rank " + wide_to_string(v) + " is not in the cluster of " + std::to_string(cluster)});
  }
}

}  // namespace

std::string Violation::to_string() const {
  return "%" + std::to_string(node_number) + " " + std::string(op_name(node.op())) + ": " + rule;
}

std::vector<Violation> find_violations(const UOp& root) {
  std::vector<Violation> out;
  std::vector<UOp> order = toposort(root);
  Checker checker(out);
  for (size_t i = 0; i < order.size(); ++i) checker.check(i, order[i]);
  if (root.op() == Op::SINK) check_names(order, out);
  if (root.op() == Op::SINK && std::holds_alternative<KernelInfo>(root.arg())) check_cluster(order, root, out);
  return out;
}

void verify(const UOp& root) {
  std::vector<Violation> v = find_violations(root);
  if (v.empty()) return;
  std::string msg = "invalid graph (" + std::to_string(v.size()) + " problem" + (v.size() > 1 ? "s" : "") + "):";
  for (size_t i = 0; i < v.size() && i < 8; ++i) msg += "\n  " + v[i].to_string();
  if (v.size() > 8) msg += "\n  ...";
  throw Error(msg);
}

}  // namespace weft
