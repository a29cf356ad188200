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
// barriers; `after` names effects it must follow (they are written before it). A
// synchronization statement's `after` may also name values, which are then computed before it
// (a ping-pong's LDS reads, issued ahead of its barrier). Within a GROUP or SINK, effects run in
// the order listed.
//
// A workgroup barrier: every thread waits here until all have arrived; memory written before it
// by one thread is visible after it to the others. With BarrierFence::None it is only the
// arrival (AMD: a bare s_barrier, no release/acquire fences and so no implied s_waitcnt); the
// kernel then orders memory itself with wait_counts (HipKittens' explicit synchronization).
UOp barrier(const std::vector<UOp>& after = {}, BarrierFence fence = BarrierFence::Workgroup);
// A barrier of the whole grid: every thread of every workgroup waits here until all have arrived;
// memory written before it by any thread is visible after it to every thread. `counter` indexes a
// uint32 element of a GLOBAL buffer, zero before the kernel's first launch: one thread of each
// workgroup arrives on it (after a workgroup barrier) and waits for the last arrival, and the
// barrier leaves it ready for the next one (it flips the top bit: workgroup 0 adds 2^31 - (G - 1),
// the others 1), in this launch or a later one (zero it again after a launch that failed). The
// counter is one element for the whole grid (its index names no range). Every thread must reach
// it, the same number of times (not inside a when()). A kernel with one is cooperative (LoweredKernel::cooperative):
// its workgroups must all be resident at once, which the launch checks (CUDA's cooperative
// launch; the emulator keeps every workgroup resident and runs them in turns; HIP refuses it).
UOp grid_barrier(const UOp& counter, const std::vector<UOp>& after = {});

// Values computed up front. The linearizer writes a value where it is first used; a load whose
// round trip should overlap earlier work (a parity the kernel's last stores need, a weight read
// at the end, the next vectors of a row) is instead written into a register of its own by the
// returned `issued` effect, and `values` read it back. List `issued` before the effects whose
// work it should overlap (a GROUP runs its effects in order). Each value is a scalar of a
// concrete dtype (not an index: cast it); throws weft::Error naming the value otherwise.
struct Prefetched {
  UOp issued;
  std::vector<UOp> values;
};
Prefetched prefetch(const std::vector<UOp>& values);
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

// ---- Hopper (NVIDIA sm_90a; every other target rejects these, naming the node) ----
// Each is a statement with a site of its own (like barrier()), run where it is placed; `after`
// names effects it comes after. `bar` indexes one uint64 element of a LOCAL buffer: an mbarrier
// object (PTX ISA, "Parallel synchronization and communication: mbarrier"). mbarrier_init and
// mbarrier_arrive_expect_tx are run by the first thread of the workgroup only (the renderer
// elects it); put a barrier() between mbarrier_init and the barrier's first use.
//   mbarrier_init: the barrier expects `count` arrivals (1..2^20-1) per phase; its phase parity is 0.
//   mbarrier_arrive: every thread that runs it arrives once.
//   mbarrier_arrive_warp: the first lane of each warp that runs it arrives once, after the warp's
//     earlier statements (a consumer releasing a stage once per warp: 8 arrivals, not 256).
//   mbarrier_arrive_expect_tx: the first thread arrives and adds `bytes` (an int32 value) to the
//     transaction bytes the current phase waits for (asynchronous copies that complete_tx).
//   mbarrier_wait: every thread waits (try_wait in a loop) until the phase whose parity is
//     `parity` (an int32 value, 0 or 1) has completed.
UOp mbarrier_init(const UOp& bar, int64_t count, const std::vector<UOp>& after = {});
UOp mbarrier_arrive(const UOp& bar, const std::vector<UOp>& after = {});
UOp mbarrier_arrive_warp(const UOp& bar, const std::vector<UOp>& after = {});
UOp mbarrier_arrive_expect_tx(const UOp& bar, const UOp& bytes, const std::vector<UOp>& after = {});
UOp mbarrier_wait(const UOp& bar, const UOp& parity, const std::vector<UOp>& after = {});
// Thread-block clusters (sink's KernelInfo::cluster CTAs, consecutive along grid dimension 0; a
// CTA's rank is its workgroup index modulo the cluster size):
//   mbarrier_arrive_cluster: the first lane of each warp that runs it arrives once on the barrier
//     at `bar`'s shared-memory offset in the CTA of rank `cta` (an int32 value; this CTA's own rank
//     included) of the cluster (mapa, then the arrive, PTX's default release at CTA scope, as
//     CUTLASS's ClusterBarrier::arrive): a consumer releasing a stage whose reads are complete
//     for the whole warp (its wgmmas waited: wgmma_wait is warp-collective), which another CTA's
//     producer refills by multicast. It hands no data to the other CTA (PTX pairs it with no
//     acquire there): data one CTA writes for another goes through cluster_sync. (A release at
//     cluster scope put a GPU-wide memory barrier before each arrival and made hopper_gemm in
//     clusters 2.3x slower, docs/PERF.md.)
//   cluster_sync: every thread of every CTA of the cluster arrives and waits (barrier.cluster
//     arrive.release / wait.acquire): after every CTA's mbarrier_init, before the first multicast
//     or remote arrive reaches it, and before a CTA exits while others may still address its
//     shared memory. Every thread of the CTA must reach it (not inside a role's when()).
UOp mbarrier_arrive_cluster(const UOp& bar, const UOp& cta, const std::vector<UOp>& after = {});
UOp cluster_sync(const std::vector<UOp>& after = {});
// A warpgroup's register budget (setmaxnreg.inc / .dec.sync.aligned.u32, PTX ISA "setmaxnreg"):
// every thread of each warp that runs it gets `count` registers (24..256, a multiple of 8; an
// Error otherwise). Raise blocks until the SM's pool has them; Lower returns the rest to it. A
// warp-specialized kernel lowers its producer's budget and raises its consumers' so that their
// accumulators fit (CUTLASS: 40 and 232 with one producer and two consumer warpgroups of 128
// threads: 128 x 40 + 256 x 232 <= 64 Ki registers). All 4 warps of a warpgroup must run it
// together. The CUDA renderer gives a kernel that uses it __launch_bounds__(threads, 1), so that
// ptxas fixes the budget at entry at 65536 / threads (168 at 384; otherwise it may allocate fewer
// and drop the statement, C7508); raise to at least and lower to at most that.
enum class RegisterBudget { Raise, Lower };
UOp set_max_registers(int64_t count, RegisterBudget change, const std::vector<UOp>& after = {});
// Warpgroup MMA (wgmma.mma_async, PTX ISA "Asynchronous Warpgroup Level Matrix Multiply-
// Accumulate"), issued by all 128 threads of a warpgroup (4 consecutive warps) together:
//   acc[0 .. n/2) += A (64 x K, `a` indexes its first element in shared memory) * B (K x n, `b`
//   likewise), fp32 accumulate, both tiles K-major (A row-major M x K, B stored N x K) as
//   `a_layout` / `b_layout` describe. K is 32 bytes of `input`: 16 for float16 and bfloat16
//   (m64nNk16), 32 for the fp8 formats float8_e4m3fn and float8_e5m2 (m64nNk32; A and B the same
//   format here). `acc` indexes element 0 of a REG float32
//   buffer of n/2 elements per thread (its fragment layout: kernels/layouts.h,
//   wgmma_m64nNk16_accumulator). The MMA runs asynchronously: wgmma_fence() before the first MMA
//   (and after the accumulator is written by other instructions), wgmma_commit() closes the MMAs
//   issued since the last commit into a group, wgmma_wait(N) waits until at most N groups are
//   pending; only then may the accumulator be read (order the reads after it with .after()).
//   wgmma_fence also makes this thread's earlier shared-memory writes visible to the MMAs (the
//   async proxy: fence.proxy.async); put a barrier() after it when other threads wrote the tiles.
//   `accumulate` (a wave-uniform bool value; null: true) is the MMA's scale-d: where false,
//   acc = A * B, the accumulator's old contents ignored (the first K step of a tile, with no
//   zeroing stores).
UOp wgmma(const UOp& acc, const UOp& a, const UOp& b, int64_t n, DType input, const MatrixLayoutArg& a_layout,
          const MatrixLayoutArg& b_layout, const std::vector<UOp>& after = {}, const UOp& accumulate = UOp());
// wgmma with A from registers (wgmma.mma_async ... {a0, a1, a2, a3}, b-desc, ...): `a` is this
// thread's fragment of A (64 x K), 8 values of a 16-bit input or 16 of an fp8 one, in the
// layout of PTX's "WGMMA .m64nNk16 register fragment layout for matrix A": warp w of the
// warpgroup holds rows 16w .. 16w + 15 as mma.sync m16n8k16 holds its A (value i of lane L: row
// 16w + L/4 + 8 (i/2 % 2), column 2 (L%4) + i%2 + 8 (i/4); fp8: 4 values a register, columns
// 4 (L%4) + i%4 + 16 (i/8), row + 8 for i/4 odd). The renderer puts wgmma.fence in front of each
// such MMA, in the same asm statement, so the fragment's register writes are ordered before it
// (PTX requires the fence after writes to A's registers). B and the rest as wgmma above.
UOp wgmma_registers(const UOp& acc, const UOp& a, const UOp& b, int64_t n, DType input, const MatrixLayoutArg& b_layout,
                    const std::vector<UOp>& after = {}, const UOp& accumulate = UOp());
// TMA (cp.async.bulk.tensor.2d ... mbarrier::complete_tx::bytes): the first thread of the
// workgroup copies the box of `box.rows` x `box.cols` elements of the 2-D GLOBAL buffer `tensor`
// (row-major, its shape [rows, cols]; cols * itemsize a multiple of 16 bytes) whose first element
// is (`row`, `col`) (int32 values, maybe past the edges) into shared memory at `dst` (an INDEX
// into a LOCAL buffer of the tensor's dtype, 128-byte aligned; 1024 with the swizzle), row-major,
// with the 128-byte swizzle if asked (box.cols * itemsize must then be 128 bytes at most). Elements
// outside the tensor are zeros. Completion is counted on the mbarrier `bar` (mbarrier_arrive_
// expect_tx with box.rows * box.cols * itemsize bytes, then mbarrier_wait). The kernel takes a
// tensor map for `tensor` (a CUtensorMap the runtime builds at launch from the buffer argument),
// so every TMA load of one buffer uses one box and swizzle.
UOp tma_load(const UOp& dst, const UOp& tensor, const UOp& bar, const UOp& row, const UOp& col, int64_t box_rows, int64_t box_cols,
             WgmmaSwizzle swizzle = WgmmaSwizzle::None, const std::vector<UOp>& after = {});
// tma_load's multicast form (.multicast::cluster): the box lands at `dst`'s shared-memory offset in
// every CTA of the cluster whose bit is set in `ctas` (an int32 mask, bit r for rank r; this CTA's
// own bit where it wants the box too), and each of them counts its bytes on its own mbarrier at
// `bar`'s offset. Each receiving CTA's barrier must expect those bytes (mbarrier_arrive_expect_tx)
// and must be initialized before the copy is issued (cluster_sync after the inits).
UOp tma_load_multicast(const UOp& dst, const UOp& tensor, const UOp& bar, const UOp& row, const UOp& col, int64_t box_rows,
                       int64_t box_cols, WgmmaSwizzle swizzle, const UOp& ctas, const std::vector<UOp>& after = {});
// A warp's TMA store (cp.async.bulk.tensor.2d.global.shared::cta.bulk_group): the box of
// `box_rows` x `box_cols` elements at `src` in shared memory (an INDEX into a LOCAL buffer of the
// tensor's dtype, laid out as tma_load's destination, the swizzle included) is copied into the 2-D
// GLOBAL buffer `tensor` at (`row`, `col`) (int32 values); elements past the tensor's edges are not
// written. Every lane of the warp executes it: each makes its own shared-memory writes visible to
// the copy (fence.proxy.async), the warp synchronizes (__syncwarp), and lane 0 issues the copy and
// closes it into a bulk group of its own. Order the writes of the box before it through `after`,
// never through .after() on the LOCAL buffer: that would place a block-wide barrier, which the
// warps of a warp-specialized kernel do not all reach. The tensor's one tensor map serves its loads
// and stores, so they use one box and swizzle.
UOp tma_store(const UOp& src, const UOp& tensor, const UOp& row, const UOp& col, int64_t box_rows, int64_t box_cols,
              WgmmaSwizzle swizzle = WgmmaSwizzle::None, const std::vector<UOp>& after = {});
// Lane 0 waits until at most `pending` (0..7) of the warp's newest TMA store groups still read
// shared memory (cp.async.bulk.wait_group.read), then the warp synchronizes: the boxes of the older
// stores may be written again. A warp waits with pending 0 before the kernel ends, so that no copy
// reads shared memory the kernel has given up; the copies' global writes complete with the kernel.
UOp tma_store_wait(int64_t pending, const std::vector<UOp>& after = {});
// wgmma_fence's `shared_writes`: whether this thread's shared-memory stores must be made visible to
// the MMAs (fence.proxy.async). Tiles that TMA filled (the async proxy itself, completed through
// an mbarrier) need only the register fence; the proxy fence would also wait for MMAs in flight.
UOp wgmma_fence(const std::vector<UOp>& after = {}, bool shared_writes = true);
UOp wgmma_commit(const std::vector<UOp>& after = {});
UOp wgmma_wait(int64_t pending, const std::vector<UOp>& after = {});

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
// The number of set bits of an unsigned integer (one instruction on both targets: v_bcnt, popc),
// of the same dtype.
UOp popcount(const UOp& x);
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
