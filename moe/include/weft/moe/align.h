// align: the choices of route (expert_ids, weights [T*k]) -> the rest of the routing plan
// (plan.h: counts, offsets, dest_row, row_token, row_weight, block_expert), on the device,
// without a host synchronization, bit for bit what plan_reference computes (stable: the rows of
// an expert in order of t*k + j).
//
// Two kernels, launched in order by launch_align:
//   align_count: one workgroup of 256 threads per chunk of 256 choices counts each expert's
//     choices in the chunk (shared-memory atomics: counts do not depend on order), writes the
//     chunk's row of the workspace's histogram and adds it into its span's row (AlignWorkspace).
//     The router skips it: route_counting adds each choice into both rows as it chooses
//     (route.h).
//   align_place: one workgroup per chunk. It sums the span rows of each expert's column (its
//     count, and its count in the spans before the chunk's) and the rows of its span's earlier
//     chunks (every other chunk row of the span read, the later ones masked), and scans the
//     padded counts into the offsets (a wave scan). Shared memory in three phases, a barrier
//     each. A choice's
//     row is offsets[e] + the choices of e before its chunk + its rank among the chunk's earlier
//     choices of e: its rank in its wave (the lanes below it with the same id, found with one
//     ballot per bit of the id) plus the counts of e in the chunk's earlier waves. It writes
//     dest_row, row_token and row_weight there. Independently, the grid's threads mark the
//     padding rows (row_token -1, row_weight 0): an expert's are the fewer than block_rows after
//     its choices, then every row past offsets[E]; a thread a block gets its expert (a binary
//     search over the offsets); workgroup 0 writes counts and offsets. Rows of choices and
//     padding rows are disjoint, so no write races, and no row depends on the order of atomics.
//     It also zeroes the workspace's other histogram and names it the next run's (AlignWorkspace).
// The expert ids must lie in [0, E) and differ within a token (route's are); a choice with an id
// outside gets dest_row -1 and no row.
#pragma once

#include <cstdint>
#include <string_view>

#include "weft/gemm/matmul_relu.h"
#include "weft/moe/plan.h"
#include "weft/runtime/kernel.h"

namespace weft::moe {

inline constexpr int64_t kAlignChunk = 256;        // choices a workgroup of align_place (and of align_count) takes
inline constexpr int64_t kAlignSpan = 4096;        // choices a span row of the histogram counts

// align's int32 workspace: two histograms, then two parities. A histogram has a row of E counts
// per span of 4096 choices, then a row per chunk of 256 (align_place's workgroup). The *fill
// parity* names the histogram the next run fills; its counts are zeros. A run's counting kernel
// (route_counting or align_count) adds into histogram[fill parity] and records that parity as the
// *filled parity*; align_place reads histogram[filled parity], zeroes the other histogram, and
// sets the fill parity to it. One thread of each kernel writes its parity, and no kernel reads a
// parity while another writes it: each kernel runs after the one before it in the stream has
// completed (stream order, or its wait at entry in a dependent launch), so no workgroup needs to
// know it is the last. allocate_plan zeroes it all; the kernels leave it ready. A run counts
// once and places once: two counting kernels before one align_place would add both runs' choices
// into one histogram.
struct AlignWorkspace {
  AlignWorkspace(int64_t choices, int64_t experts);
  int64_t spans = 0, chunks = 0, experts = 0;
  int64_t span_row(int64_t span) const { return span * experts; }                 // within a histogram
  int64_t chunk_row(int64_t chunk) const { return (spans + chunk) * experts; }
  int64_t histogram_elements() const { return (spans + chunks) * experts; }
  int64_t fill_parity_index() const { return 2 * histogram_elements(); }
  int64_t filled_parity_index() const { return fill_parity_index() + 1; }
  int64_t elements() const { return filled_parity_index() + 1; }
  // Where in `workspace` (an int32 buffer of elements()) the histogram a parity names starts: 0 or
  // histogram_elements() (a select between constants, so that indices keep a known range).
  // `parity` is the parity's value, loaded.
  UOp histogram_at(const UOp& parity) const;
  // The counting kernels' parity (the fill parity) and align_place's (the filled parity), loaded.
  UOp fill_parity(const UOp& workspace) const;
  UOp filled_parity(const UOp& workspace) const;
};
// Elements of align's workspace for a shape: AlignWorkspace(T*k, E).elements().
int64_t align_workspace(const MoeShape& shape);

// The two kernels. align_count: slot 0 workspace, 1 expert_ids. align_place: 0 counts, 1
// offsets, 2 dest_row, 3 row_token, 4 row_weight, 5 block_expert, 6 workspace, 7 expert_ids,
// 8 weights; `arch` sets its wave width (64 on gfx942/gfx950, 32 on sm_XY). Throws weft::Error
// for a shape MoeShape::validate refuses or another target.
UOp align_count(const MoeShape& shape);
UOp align_place(const MoeShape& shape, std::string_view arch);

// A routing plan's buffers on a device, sized by the shape (plan.h), and align's workspace.
struct PlanBuffers {
  rt::OwnedArray expert_ids, weights, counts, offsets, dest_row, row_token, row_weight, block_expert, workspace;
};
// Every buffer filled with 0xCD bytes (poison), so that a value the kernels never wrote shows,
// except the workspace, zeroed (align_workspace).
PlanBuffers allocate_plan(rt::Device& device, const MoeShape& shape);
RoutingPlan download_plan(rt::Device& device, const MoeShape& shape, const PlanBuffers& buffers);

struct AlignKernels {
  MoeShape shape;
  rt::CompiledKernel count, place;
};
AlignKernels compile_align(rt::Device& device, const MoeShape& shape, rt::CompileCache* cache = nullptr);
// Launches both kernels on `buffers` (expert_ids and weights in, the rest out).
void launch_align(rt::Device& device, const AlignKernels& kernels, const PlanBuffers& buffers);
// Whether align's workspace is ready for the next run (AlignWorkspace), after a run: the fill
// parity 0 or 1, the filled parity (the run's) the other, and the histogram the fill parity names
// all zeros. A failed check names the first fault.
gemm::Check check_workspace_ready(rt::Device& device, const MoeShape& shape, const PlanBuffers& buffers);
// Launches align_place alone: after route_counting, which filled the workspace's histogram.
void launch_align_place(rt::Device& device, const AlignKernels& kernels, const PlanBuffers& buffers);

// What run_align feeds the kernels: each token's k distinct experts drawn uniformly, all tokens
// on the same k experts (one expert takes every token), or only from the first and last few
// experts (most experts get no token).
enum class AlignInputs { Uniform, OneExpert, FewExperts };

// Random choices from `seed`, poisoned outputs, both launches, and a bit-exact comparison of
// every buffer with plan_reference; all twice on the same buffers (the second run uses the
// workspace's other histogram), with check_workspace_ready after each.
gemm::RunResult run_align(rt::Device& device, const MoeShape& shape, uint64_t seed, rt::CompileCache* cache = nullptr,
                          AlignInputs inputs = AlignInputs::Uniform);

// The comparison run_align makes: every element of every buffer equal, bit for bit.
gemm::Check compare_plans(const RoutingPlan& got, const RoutingPlan& want);

}  // namespace weft::moe
