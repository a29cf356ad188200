// The fluent C++ API kernel authors build graphs with. Methods on UOp (indexing, load/store,
// views, casts) are declared in uop.h; this header adds the free functions and the operators.
//
//   auto a = placeholder({64, 64}, dtypes::float32, 0);
//   auto out = placeholder({64, 64}, dtypes::float32, 1);
//   auto i = range(64, 0, AxisType::GLOBAL), j = range(64, 1, AxisType::LOCAL);
//   auto k = sink({"add_one"}, {out[{i, j}].store(a[{i, j}].load() + 1.0f).end({i, j})});
//
// Every function checks its arguments and throws weft::Error naming the op and the problem.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft {

// ---- definitions ----
UOp constant(Wide value, DType dtype = dtypes::index);
UOp constant(double value, DType dtype);
UOp range(int64_t end, int64_t id, AxisType axis = AxisType::LOOP);
UOp range(const UOp& end, int64_t id, AxisType axis = AxisType::LOOP);
// A hardware index: "gidx0".."gidx2" (workgroup id), "lidx0".."lidx2" (thread in workgroup).
UOp special(int64_t end, const std::string& name);
UOp special(const UOp& end, const std::string& name);
// A scalar kernel parameter bound at launch: int32, int64 or float32 (or index, lowered to
// int32/int64 by the pipeline; symbolic tests use it). Integer values are
// promised to lie in [min, max]; ranges and index math use these bounds.
UOp variable(const std::string& name, int64_t min, int64_t max, DType dtype = dtypes::int32);
UOp variable_f32(const std::string& name);

// A buffer: GLOBAL is a kernel parameter in position `slot`; LOCAL and REG slots identify the
// allocation. Dimensions may be integers or index expressions of variables.
UOp placeholder(const std::vector<int64_t>& shape, DType dtype, int64_t slot, AddrSpace space = AddrSpace::GLOBAL);
UOp placeholder(std::span<const UOp> shape, DType dtype, int64_t slot, AddrSpace space = AddrSpace::GLOBAL);
// Shared memory of one workgroup. Without an id, a fresh one is taken from a per-thread counter.
UOp alloc_shared(const std::vector<int64_t>& shape, DType dtype, std::optional<int64_t> id = std::nullopt);
// A fragment: each thread holds shape/ranges of the tile in registers; the result is the whole
// tile (a REG shard unsharded over the thread ranges along `axes`).
UOp alloc_fragment(const std::vector<int64_t>& shape, DType dtype, const std::vector<int64_t>& axes,
                   const std::vector<UOp>& thread_ranges, std::optional<int64_t> id = std::nullopt);

// ---- effects ----
// Every call makes a new effect (it gets a site id of its own), so two barriers stay two
// barriers; `after` names effects it must follow (they are written before it). Within a GROUP
// or SINK, effects run in the order listed.
//
// A workgroup barrier: every thread waits here until all have arrived; memory written before it
// by one thread is visible after it to the others. With BarrierFence::None it is only the
// arrival (AMD: a bare s_barrier, no release/acquire fences and so no implied s_waitcnt); the
// kernel then orders memory itself with wait_counts (HipKittens' explicit synchronization).
UOp barrier(const std::vector<UOp>& after = {}, BarrierFence fence = BarrierFence::Workgroup);
// Counts of outstanding memory operations of the issuing wave to wait for; an empty counter is
// not waited on. vm: vector memory (AMD vmcnt 0..63: global loads and stores, LDS DMA; NVIDIA:
// cp.async groups still in flight, `cp.async.wait_group vm`); lgkm: LDS and scalar memory (AMD
// lgkmcnt 0..15; nothing on NVIDIA, whose shared-memory accesses complete in order).
struct WaitCounts {
  std::optional<int64_t> vm = std::nullopt;
  std::optional<int64_t> lgkm = std::nullopt;
};
// Waits until at most the given numbers of operations are outstanding (AMD s_waitcnt). The
// maxima are the target's and are checked when rendering.
UOp wait_counts(WaitCounts counts, const std::vector<UOp>& after = {});
// Closes the group of async copies issued so far (NVIDIA cp.async.commit_group, which
// wait_counts{.vm = N} counts in groups; nothing on AMD, where vmcnt counts each copy).
UOp async_commit(const std::vector<UOp>& after = {});
// Scheduling hints for the AMD compiler (no instruction of their own; nothing on NVIDIA).
// sched_barrier: only instructions of the mask's classes may be moved across this point
// (SchedMask::None: nothing). sched_group_barrier: the next `size` instructions of the mask's
// classes form a group placed here, in order with the other groups of the same `sync_id` (LLVM's
// llvm.amdgcn.sched.group.barrier; a sequence of them interleaves, e.g. 1 MFMA, 2 DS reads).
UOp sched_barrier(SchedMask mask, const std::vector<UOp>& after = {});
UOp sched_group_barrier(SchedMask mask, int64_t size, int64_t sync_id, const std::vector<UOp>& after = {});
// The issuing wave's scheduling priority from here on, 0 (lowest, the default) to 3: AMD's
// s_setprio, which HipKittens-style kernels raise around their matrix-core bursts. A no-op on
// targets without wave priorities.
UOp wave_priority(int64_t level, const std::vector<UOp>& after = {});
UOp group(const std::vector<UOp>& effects);
UOp sink(const KernelInfo& info, const std::vector<UOp>& effects);
// Copies global memory straight into shared memory without passing through registers
// (AMD buffer_load ... lds, NVIDIA cp.async). `dst` indexes a LOCAL buffer, `src` a GLOBAL one;
// `elements` consecutive elements are copied per thread.
UOp async_copy(const UOp& dst, const UOp& src, int64_t elements = 1);

// Effects that run only where `cond` (a bool, per thread) holds; elsewhere they do nothing and
// the loads they need are not made (they read 0). Stores, atomics and loops of them may be
// guarded; an async copy or an inline statement inside `when` is an error (not every thread
// would reach it). Renders without branches where the hardware masks. Synchronization statements
// (barrier, wait_counts, wave_priority, async_commit, sched_*) are allowed only where `cond` is
// wave-uniform (it depends on WARP ranges, workgroup ids, loop ranges, constants and kernel
// variables, never on a LOCAL range or memory): they become a real branch around the statement,
// taken by whole waves (the ping-pong stagger: when(wave_row == 1, {barrier()})).
UOp when(const UOp& cond, const std::vector<UOp>& effects);

// ---- atomics (relaxed ordering; `scope`: the threads they are atomic with respect to) ----
// Each returns the value memory held before (an effect with a value: put it in the kernel's
// effects, or use its value, or both). `index` points into a GLOBAL or LOCAL buffer.
//   add:          int32, uint32, int64, uint64, float32; float16.vec2 / bfloat16.vec2 (two packed
//                 elements at an even index) where the target has packed atomics
//   min, max:     int32, uint32, int64, uint64
//   exchange:     int32, uint32, int64, uint64, float32
UOp atomic(AtomicOp op, const UOp& index, const UOp& value, Scope scope = Scope::Device);
// Stores `value` where memory holds `compare`; returns the old value. Integers of 32 or 64 bits.
UOp atomic_compare_swap(const UOp& index, const UOp& compare, const UOp& value, Scope scope = Scope::Device);

// ---- across the lanes of a wave (64 lanes on CDNA) or warp (32 on NVIDIA) ----
// Lanes form groups of `width` (a power of two up to the wave); every lane of the wave must run
// the operation (not inside `when`). Values of any scalar dtype.
UOp shuffle_xor(const UOp& x, int64_t mask, int64_t width);   // lane l reads lane l ^ mask
UOp shuffle_up(const UOp& x, int64_t delta, int64_t width);   // lane l reads l - delta (its own value below delta)
UOp shuffle_down(const UOp& x, int64_t delta, int64_t width); // lane l reads l + delta (its own value past the group)
UOp shuffle(const UOp& x, const UOp& lane, int64_t width);    // lane l reads lane `lane` of its group (an int32)
UOp broadcast(const UOp& x);                   // the first active lane's value, in every lane (readfirstlane)
UOp broadcast(const UOp& x, const UOp& lane);  // lane `lane`'s value (a wave-uniform int32), in every lane (readlane)
UOp ballot(const UOp& pred, int64_t wave);     // uint64: bit l set where lane l's predicate holds
UOp any(const UOp& pred, int64_t wave);
UOp all(const UOp& pred, int64_t wave);
// The reduction (ADD, MUL, MAX, MIN) of x over each group of `width` lanes, in every lane: a
// butterfly of log2(width) xor shuffles.
UOp wave_reduce(const UOp& x, Op op, int64_t width);

// ---- values ----
UOp where(const UOp& cond, const UOp& if_true, const UOp& if_false);
UOp max(const UOp& a, const UOp& b);
UOp min(const UOp& a, const UOp& b);
UOp sqrt(const UOp& x);
UOp exp2(const UOp& x);
UOp log2(const UOp& x);
UOp sin(const UOp& x);
UOp recip(const UOp& x);
UOp trunc(const UOp& x);
UOp pow(const UOp& x, const UOp& y);
UOp mulacc(const UOp& a, const UOp& b, const UOp& c);
UOp vectorize(const std::vector<UOp>& lanes);
// C-like integer division (truncating) and modulo (sign of the dividend), also via / and %.
UOp idiv(const UOp& a, const UOp& b);
UOp mod(const UOp& a, const UOp& b);
// One warp-level D = A*B + C on fragments: A holds m*k/threads, B k*n/threads and C
// m*n/threads elements per lane.
UOp wmma(const UOp& a, const UOp& b, const UOp& acc, const WmmaArg& shape);
// Escape hatches: one statement (custom) or one expression (customi) of inline assembly for
// the target (AMDGPU assembly through LLVM, PTX on NVIDIA), with operands referenced as {0},
// {1}, ... and customi's result as {out}. Use sparingly; typed ops are the normal path.
UOp custom(const std::string& text, const std::vector<UOp>& operands = {}, const std::vector<UOp>& after = {});
UOp customi(const std::string& text, DType dtype, const std::vector<UOp>& operands = {});
// A fresh id from the builder's counter (allocation ids and effect sites share it).
int64_t fresh_id();

// ---- operators: IR arithmetic. Scalars adopt the other side's dtype. ----
UOp operator+(const UOp& a, const UOp& b);
UOp operator-(const UOp& a, const UOp& b);
UOp operator*(const UOp& a, const UOp& b);
UOp operator/(const UOp& a, const UOp& b);  // IDIV for integers, FDIV for floats
UOp operator%(const UOp& a, const UOp& b);
UOp operator<(const UOp& a, const UOp& b);
UOp operator>(const UOp& a, const UOp& b);
UOp operator<=(const UOp& a, const UOp& b);
UOp operator>=(const UOp& a, const UOp& b);
UOp operator&(const UOp& a, const UOp& b);
UOp operator|(const UOp& a, const UOp& b);
UOp operator^(const UOp& a, const UOp& b);
UOp operator<<(const UOp& a, const UOp& b);
UOp operator>>(const UOp& a, const UOp& b);
UOp operator-(const UOp& a);
UOp operator!(const UOp& a);  // logical not of a bool
UOp operator~(const UOp& a);  // bitwise not of an integer

#define WEFT_SCALAR_OPERATOR(sym)                                                                   \
  inline UOp operator sym(const UOp& a, int64_t b) { return a sym a.const_like(Wide(b)); }           \
  inline UOp operator sym(int64_t a, const UOp& b) { return b.const_like(Wide(a)) sym b; }           \
  inline UOp operator sym(const UOp& a, int b) { return a sym a.const_like(Wide(b)); }               \
  inline UOp operator sym(int a, const UOp& b) { return b.const_like(Wide(a)) sym b; }               \
  inline UOp operator sym(const UOp& a, double b) { return a sym a.const_like(b); }                  \
  inline UOp operator sym(double a, const UOp& b) { return b.const_like(a) sym b; }
WEFT_SCALAR_OPERATOR(+)
WEFT_SCALAR_OPERATOR(-)
WEFT_SCALAR_OPERATOR(*)
WEFT_SCALAR_OPERATOR(/)
WEFT_SCALAR_OPERATOR(%)
WEFT_SCALAR_OPERATOR(<)
WEFT_SCALAR_OPERATOR(>)
WEFT_SCALAR_OPERATOR(<=)
WEFT_SCALAR_OPERATOR(>=)
WEFT_SCALAR_OPERATOR(&)
WEFT_SCALAR_OPERATOR(|)
WEFT_SCALAR_OPERATOR(^)
WEFT_SCALAR_OPERATOR(<<)
WEFT_SCALAR_OPERATOR(>>)
#undef WEFT_SCALAR_OPERATOR

}  // namespace weft
