// Pass 5a: reductions across threads. A REDUCE over thread ranges (LOCAL, GROUP_REDUCE, WARP)
// combines values held by different threads, and every thread gets the result:
//
//   1. the ranges that are not thread ranges are reduced first, in each thread (a REDUCE left
//      for reduce_to_accumulators);
//   2. within a wave: a reduced range of power-of-two size and stride whose lanes lie in one
//      wave is a butterfly of xor shuffles (log2 steps; every lane ends with the group's value);
//   3. across waves (what is left): each thread writes its partial to a shared buffer indexed
//      by its flat thread id, and after the barrier insert_barriers places, reads the partials of
//      the other waves (a REDUCE over fresh LOOP ranges, one per range still to reduce).
//
// A 256-thread sum on 64-lane waves is 6 shuffles and 4 shared-memory reads per thread.
// Reductions must be reached by every thread of the workgroup (never inside `when`).
#include "graph_utils.h"
#include "thread_layout.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

class ThreadReducer {
 public:
  ThreadReducer(const UOp& kernel, int64_t wave_size)
      : dims_(thread_layout(kernel)), wave_(wave_size), next_range_(fresh_range_id(kernel)), next_slot_(fresh_buffer_slot(kernel)) {
    threads_ = 1;
    for (const ThreadDim& d : dims_) threads_ *= d.size;
  }

  std::optional<UOp> rewrite(const UOp& u) {
    if (u.op() != Op::REDUCE) return std::nullopt;
    std::vector<const ThreadDim*> across;
    std::vector<UOp> within;
    for (size_t i = 1; i < u.src().size(); ++i) {
      const ThreadDim* d = find(u.src(i));
      if (d) across.push_back(d);
      else within.push_back(u.src(i));
    }
    if (across.empty()) return std::nullopt;
    const Op op = u.arg_as<Op>();
    UOp v = within.empty() ? u.src(0) : u.src(0).reduce(op, within);
    // Step 2: what lies within a wave, by shuffles. `covered` values of each range are combined.
    std::vector<std::pair<const ThreadDim*, int64_t>> left;
    for (const ThreadDim* d : across) {
      int64_t covered = 1;
      if (power_of_two(d->size) && power_of_two(d->stride) && d->stride < wave_)
        for (; covered < d->size && d->stride * covered < wave_; covered *= 2)
          v = v.alu(op, {shuffle_xor(v, d->stride * covered, wave_)});
      if (covered < d->size) left.emplace_back(d, covered);
    }
    if (left.empty()) return v;
    return across_waves(v, op, left);
  }

 private:
  const ThreadDim* find(const UOp& r) const {
    for (const ThreadDim& d : dims_)
      if (d.range.same(r)) return &d;
    return nullptr;
  }

  // Step 3: the partials through shared memory. A range of which `covered` consecutive values
  // are already combined is read at (coordinate % covered) + q * covered, q < size / covered.
  UOp across_waves(const UOp& v, Op op, const std::vector<std::pair<const ThreadDim*, int64_t>>& left) {
    UOp tid = constant(Wide(0));
    for (const ThreadDim& d : dims_) tid = tid + d.range * d.stride;
    const UOp partials = placeholder({threads_}, v.dtype(), next_slot_++, AddrSpace::LOCAL);
    const UOp written = partials[tid].store(v);
    UOp other = tid;
    std::vector<UOp> loops;
    for (const auto& [d, covered] : left) {
      const UOp q = range(d->size / covered, next_range_++, AxisType::LOOP);
      const UOp coordinate = covered > 1 ? d->range % covered + q * covered : q;
      other = other + (coordinate - d->range) * d->stride;
      loops.push_back(q);
    }
    return partials.after({written})[other].load().reduce(op, loops);
  }

  std::vector<ThreadDim> dims_;
  int64_t wave_, next_range_, next_slot_, threads_ = 1;
};

}  // namespace

UOp reduce_across_threads(const UOp& kernel, int64_t wave_size) {
  ThreadReducer reducer(kernel, wave_size);
  return transform(kernel, [&](const UOp&, const UOp& u) { return reducer.rewrite(u); });
}

}  // namespace weft::lower
