// The align kernels (align.h): a per-chunk histogram of expert ids, then every chunk's rows
// placed from it, stably.
#include "weft/moe/align.h"

#include "weft/dsl/builder.h"

namespace weft::moe {
namespace {

constexpr int64_t kThreads = kAlignChunk;  // one choice a thread
constexpr int64_t kRowsPerThread = kAlignRowsPerGroup / kThreads;

UOp i32(int64_t v) { return constant(Wide(v), dtypes::int32); }
UOp idx(int64_t v) { return constant(Wide(v)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t chunks(const MoeShape& s) { return ceil_div(s.choices(), kAlignChunk); }

// The expert whose rows hold row `r` (int32): the largest e in [0, E] with offsets[e] <= r, E
// for a row past offsets[E]. `off` holds offsets [E+1] in shared memory.
UOp expert_of_row(const UOp& off, const UOp& r, int64_t E) {
  int64_t step = 1;
  while (step * 2 <= E) step *= 2;
  UOp lo = i32(0);
  for (; step >= 1; step /= 2) {
    const UOp cand = lo + i32(step), fits = cand <= E;
    const UOp at = off[where(fits, cand, i32(E)).cast(dtypes::index)].load();
    lo = where(fits & (at <= r), cand, lo);
  }
  return lo;
}

}  // namespace

int64_t align_workspace(const MoeShape& shape) {
  shape.validate();
  return chunks(shape) * shape.experts;
}

UOp align_count(const MoeShape& s) {
  s.validate();
  const int64_t E = s.experts, C = chunks(s);
  const UOp hist = placeholder({C * E}, dtypes::int32, 0), ids = placeholder({s.choices()}, dtypes::int32, 1);
  const UOp g = range(C, 0, AxisType::GLOBAL), l = range(kThreads, 1, AxisType::LOCAL);
  const UOp count = alloc_shared({E}, dtypes::int32, 0);
  const UOp zi = range(ceil_div(E, kThreads), 2, AxisType::LOOP), ze = l + zi * kThreads;
  const UOp zero = count[ze].store(i32(0), ze < E).end({zi});
  const UOp c = g * kThreads + l;
  const UOp id = ids[c].load(c < s.choices(), i32(-1));
  const UOp bump = when((id >= 0) & (id < E), {atomic(AtomicOp::Add, count.after({zero})[id.cast(dtypes::index)], i32(1), Scope::Workgroup)});
  const UOp wi = range(ceil_div(E, kThreads), 3, AxisType::LOOP), we = l + wi * kThreads;
  const UOp out = hist[g * E + we].store(count.after({bump})[we].load(we < E, i32(0)), we < E).end({wi});
  return sink({"moe_align_count_e" + std::to_string(E)}, {group({zero, bump, out}).end({g, l})});
}

UOp align_place(const MoeShape& s) {
  s.validate();
  const int64_t E = s.experts, C = chunks(s), B = s.block_rows, k = s.top_k;
  const int64_t rows = s.max_rows(), blocks = s.max_blocks();
  const int64_t grid = std::max(C, ceil_div(rows, kAlignRowsPerGroup));
  const UOp counts = placeholder({E}, dtypes::int32, 0), offsets = placeholder({E + 1}, dtypes::int32, 1);
  const UOp dest_row = placeholder({s.choices()}, dtypes::int32, 2), row_token = placeholder({rows}, dtypes::int32, 3);
  const UOp row_weight = placeholder({rows}, dtypes::float32, 4), block_expert = placeholder({blocks}, dtypes::int32, 5);
  const UOp hist = placeholder({C * E}, dtypes::int32, 6), ids = placeholder({s.choices()}, dtypes::int32, 7);
  const UOp weights = placeholder({s.choices()}, dtypes::float32, 8);
  const UOp g = range(grid, 0, AxisType::GLOBAL), l = range(kThreads, 1, AxisType::LOCAL);
  const UOp total = alloc_shared({E}, dtypes::int32, 0), earlier = alloc_shared({E}, dtypes::int32, 1);
  const UOp padded = alloc_shared({E}, dtypes::int32, 2), off = alloc_shared({E + 1}, dtypes::int32, 3);
  const UOp chunk_ids = alloc_shared({kThreads}, dtypes::int32, 4);
  int64_t next_range = 2;
  auto loop = [&](int64_t n, AxisType axis = AxisType::LOOP) { return range(n, next_range++, axis); };

  // Each expert's count, and its count in the chunks before this workgroup's.
  const UOp ei = loop(ceil_div(E, kThreads)), e = l + ei * kThreads, has_e = e < E;
  const UOp cc = loop(C, AxisType::REDUCE);
  const UOp h = hist[cc * E + e].load(has_e, i32(0));
  const UOp tot = h.reduce(Op::ADD, {cc});
  const UOp cb = loop(C, AxisType::REDUCE);
  const UOp bef = where(cb < g, hist[cb * E + e].load(has_e, i32(0)), i32(0)).reduce(Op::ADD, {cb});
  const UOp sums = group({total[e].store(tot, has_e), earlier[e].store(bef, has_e),
                          padded[e].store((tot + i32(B - 1)) & i32(~(B - 1)), has_e)})
                       .end({ei});

  // offsets[e] = the padded counts of the experts before e (e = E: all of them).
  const UOp oi = loop(ceil_div(E + 1, kThreads)), oe = l + oi * kThreads;
  const UOp pe = loop(E, AxisType::REDUCE);
  const UOp before_e = where(pe < oe, padded.after({sums})[pe].load(), i32(0)).reduce(Op::ADD, {pe});
  const UOp offs = off[oe].store(before_e, oe <= E).end({oi});
  const UOp off_ready = off.after({offs}), total_ready = total.after({sums}), earlier_ready = earlier.after({sums});

  // This workgroup's chunk: each choice's rank among the chunk's earlier choices of its expert.
  const UOp c = g * kThreads + l, live = c < s.choices();
  const UOp id = ids[c].load(live, i32(-1));
  const UOp known = live & (id >= 0) & (id < E);
  const UOp put_id = chunk_ids[l].store(id);
  const UOp q = loop(kThreads, AxisType::REDUCE);
  const UOp rank = where((q < l) & chunk_ids.after({put_id})[q].load().eq(id), i32(1), i32(0)).reduce(Op::ADD, {q});
  const UOp ie = where(known, id, i32(0)).cast(dtypes::index);
  const UOp dest = off_ready[ie].load() + earlier_ready[ie].load() + rank;
  const UOp di = dest.cast(dtypes::index);
  const UOp place = group({dest_row[c].store(where(known, dest, i32(-1)), live),
                           row_token[di].store((c / k).cast(dtypes::int32), known),
                           row_weight[di].store(weights[c].load(known, constant(0.0, dtypes::float32)), known)});

  // Padding rows: this workgroup's share of the rows.
  const UOp rj = loop(kRowsPerThread), r = g * kAlignRowsPerGroup + rj * kThreads + l, has_r = r < rows;
  const UOp r32 = r.cast(dtypes::int32);
  const UOp er = expert_of_row(off_ready, r32, E);
  const UOp er_in = where(er < E, er, i32(E - 1)).cast(dtypes::index);
  const UOp padding = er.eq(i32(E)) | (r32 - off_ready[er_in].load() >= total_ready[er_in].load());
  const UOp pads = group({row_token[r].store(i32(-1), has_r & padding), row_weight[r].store(constant(0.0, dtypes::float32), has_r & padding)})
                       .end({rj});

  // Blocks: their expert, or -1 past offsets[E] (grid * 256 >= max_rows / 8 >= max_blocks).
  const UOp b = g * kThreads + l;
  const UOp eb = expert_of_row(off_ready, (b * B).cast(dtypes::int32), E);
  const UOp mark = block_expert[b].store(where(eb.eq(i32(E)), i32(-1), eb), b < blocks);

  // Workgroup 0: counts and offsets.
  const UOp xi = loop(ceil_div(E + 1, kThreads)), xe = l + xi * kThreads, first = g.eq(idx(0));
  const UOp xe_in = where(xe < E, xe, idx(E - 1));
  const UOp totals = group({counts[xe].store(total_ready[xe_in].load(), first & (xe < E)),
                            offsets[xe].store(off_ready[where(xe <= E, xe, idx(E))].load(), first & (xe <= E))})
                         .end({xi});
  return sink({"moe_align_place_e" + std::to_string(E)}, {group({sums, offs, put_id, place, pads, mark, totals}).end({g, l})});
}

}  // namespace weft::moe
