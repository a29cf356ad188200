// The lowering passes one by one, for tests and tools; pipeline.h runs them in order.
#pragma once

#include <vector>

#include "weft/lowering/pipeline.h"

namespace weft::lower {

// 1a. Each END over loop ranges (LOOP, WEAK, REDUCE) lists in its body every effect the body
//     reaches (through AFTER, as a statement's predecessor) that uses each of the END's loop
//     ranges and no range closed elsewhere (not the statements of a GROUP, END or WHEN it pins): where an effect runs is then fixed before any fold could drop
//     its use of the range (a trip count of 0 or 1 folds `r // 2` to 0).
UOp pin_loop_bodies(const UOp& kernel);
// 1. Shards: INDEX on an UNSHARD of a REG shard over LOCAL ranges (a fragment), or of a GLOBAL
//    buffer over DEVICE ranges (a device shard), becomes INDEX on the shard with the owner's
//    local index. Contiguous (idx = rng*shard + local) and strided (idx = rng + local*owners)
//    ownership; anything else throws "cannot shard index ...".
UOp resolve_unshard(const UOp& kernel);
// 1b. DEVICE ranges become their device variables (device_variable: the index of the device on
//     that mesh axis, set per shard at launch); ENDs and AFTERs stop naming them.
UOp resolve_devices(const UOp& kernel);
// 2. Views (reshape, permute, shrink, flip, pad, expand) and multi-dimensional indices become
//    one flat index into the base buffer; padding adds a validity condition (INDEX's third
//    source): loads outside read 0, stores outside are skipped.
UOp flatten_views(const UOp& kernel);
// 2b. when(cond, effects): cond joins the validity of every store, atomic and load in the
//     region (no branch); a barrier, async copy, priority change or inline statement inside is
//     an error.
UOp resolve_when(const UOp& kernel);
// 3a. A WEAK/REDUCE/LOOP range used only as r//c and r%c becomes two ranges. Ranges with
//     hardware meaning (GLOBAL, LOCAL, ...) are never split.
UOp split_ranges(const UOp& kernel);
// 3b. The symbolic simplifier over the whole kernel.
UOp simplify_kernel(const UOp& kernel);
// 4. UPCAST/UNROLL ranges: the stores they end are repeated for each value; CONTRACT becomes a
//    VECTORIZE of the lanes; REDUCE over them an unrolled chain.
UOp expand_ranges(const UOp& kernel);
// 5a. REDUCE over thread ranges (LOCAL, GROUP_REDUCE, WARP) becomes a reduction across
//     threads: xor shuffles within a wave, then shared memory across waves; every thread gets
//     the result.
UOp reduce_across_threads(const UOp& kernel, int64_t wave_size);
// 5. REDUCE becomes a one-element REG accumulator: initialized inside the reduction's outer
//    ranges, updated in its own, read after them.
UOp reduce_to_accumulators(const UOp& kernel);
// 6. GLOBAL ranges become workgroup ids (gidx), thread ranges work-item ids (lidx; widx for
//    WARP ranges, wave-uniform) in thread_layout's order; their sizes become the launch
//    dimensions. The threads below a WARP range must fill whole waves.
UOp ranges_to_hardware(const UOp& kernel, LaunchDims& launch, int64_t wave_size = 64);
// 7. Groups of scalar stores to consecutive addresses of one buffer become vector stores of
//    2 or 4 lanes; stores that write one address from several sites stay scalar and are kept.
UOp coalesce_stores(const UOp& kernel);
// 8. Index arithmetic to int32 where value ranges prove every intermediate fits, else int64.
UOp lower_index_dtype(const UOp& kernel);
// 9. Barriers: a load of a LOCAL buffer AFTER stores to LOCAL memory waits at a barrier after
//    those stores (one barrier per set of stores); a loop whose body loads and stores one LOCAL
//    buffer ends its body with a barrier (write-after-read).
UOp insert_barriers(const UOp& kernel);
// 10. Control flow: every END closes exactly one range, nested in range-id order.
UOp nest_loops(const UOp& kernel);
// 11. The linear program: effects in dependency order, loops opened and closed around their
//     bodies, values emitted where first used in each loop scope.
std::vector<LinearOp> linearize(const UOp& kernel);
// 12. check_async_reads: every read of LOCAL memory an asynchronous fill (ASYNC_COPY) wrote comes
//     after a wait that lands the fill on the issuing wave and a barrier after that wait; else a
//     weft::Error naming the stage and the read. wave_size picks the counting: 64 (CDNA: vmcnt
//     counts each fill), 32 (NVIDIA: wait_group counts committed cp.async groups). No changes.
void check_async_reads(const std::vector<LinearOp>& program, int64_t wave_size);

}  // namespace weft::lower
