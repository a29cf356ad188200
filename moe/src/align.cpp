// The align kernels (align.h): a per-chunk histogram of expert ids, then every chunk's rows
// placed from it, stably.
#include "weft/moe/align.h"

#include <string>

#include "weft/dsl/builder.h"
#include "weft/kernels/layouts.h"

namespace weft::moe {
namespace {

constexpr int64_t kCountThreads = 256;    // align_count's workgroup
constexpr int64_t kMaxRowsPerThread = 8;  // align_place's grid grows so that no thread pads more rows

UOp i32(int64_t v) { return constant(Wide(v), dtypes::int32); }
UOp idx(int64_t v) { return constant(Wide(v)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t count_spans(const MoeShape& s) { return ceil_div(s.choices(), kAlignSpan); }

int64_t wave_width(std::string_view arch) {
  if (tile::is_nvidia(arch)) return 32;
  if (arch == "gfx942" || arch == "gfx950") return 64;
  throw Error("moe align: no wave width for target '" + std::string(arch) + "' (gfx942, gfx950, sm_XY)");
}

// The number of set bits of a uint32 or uint64 (the classic SWAR sum; LLVM turns it into one
// ctpop).
UOp popcount(UOp x) {
  const bool wide = x.dtype() == dtypes::uint64;
  const auto c = [&](uint64_t v) { return constant(Wide(wide ? v : v & 0xffffffffu), x.dtype()); };
  x = x - ((x >> c(1)) & c(0x5555555555555555));
  x = (x & c(0x3333333333333333)) + ((x >> c(2)) & c(0x3333333333333333));
  x = (x + (x >> c(4))) & c(0x0f0f0f0f0f0f0f0f);
  return (x * c(0x0101010101010101)) >> c(wide ? 56 : 24);
}

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

// align_place's workgroup (and chunk of choices): 1024 threads, so that each workgroup's prologue
// (the histogram's columns, the span's earlier chunks, the scan) serves 1024 choices, unless its
// shared memory (mostly the waves' counts, waves x E) would pass 46 KiB; then 512 or 256.
int64_t place_threads(int64_t E, int64_t W) {
  for (int64_t T : {int64_t{1024}, int64_t{512}}) {
    const int64_t waves = T / W, bytes = 4 * (waves * E + 2 * T + 4 * E + 2 + waves);
    if (bytes <= 46 * 1024) return T;
  }
  return 256;
}

}  // namespace

AlignWorkspace::AlignWorkspace(int64_t choices, int64_t experts_) : spans(ceil_div(choices, kAlignSpan)), experts(experts_) {}

int64_t align_workspace(const MoeShape& shape) {
  shape.validate();
  return AlignWorkspace(shape.choices(), shape.experts).elements();
}

// The first element of the histogram this run fills: 0 or histogram_elements(), as the parity
// says (a select between constants, so that indices keep a known range).
UOp histogram_base(const UOp& workspace, const AlignWorkspace& w) {
  return where(workspace[idx(w.parity_index())].load().eq(i32(0)), idx(0), idx(w.histogram_elements()));
}

UOp align_count(const MoeShape& s) {
  s.validate();
  const int64_t E = s.experts, spans = count_spans(s);
  const AlignWorkspace ws(s.choices(), E);
  const UOp work = placeholder({ws.elements()}, dtypes::int32, 0), ids = placeholder({s.choices()}, dtypes::int32, 1);
  const UOp g = range(spans, 0, AxisType::GLOBAL), l = range(kCountThreads, 1, AxisType::LOCAL);
  const UOp count = alloc_shared({E}, dtypes::int32, 0);
  const UOp zi = range(ceil_div(E, kCountThreads), 2, AxisType::LOOP), ze = l + zi * kCountThreads;
  const UOp zero = count[ze].store(i32(0), ze < E).end({zi});
  const UOp ci = range(kAlignSpan / kCountThreads, 3, AxisType::LOOP), c = g * kAlignSpan + ci * kCountThreads + l;
  const UOp id = ids[c].load(c < s.choices(), i32(-1));
  const UOp bump = when((id >= 0) & (id < E), {atomic(AtomicOp::Add, count.after({zero})[id.cast(dtypes::index)], i32(1), Scope::Workgroup)}).end({ci});
  const UOp wi = range(ceil_div(E, kCountThreads), 4, AxisType::LOOP), we = l + wi * kCountThreads;
  const UOp out = work[histogram_base(work, ws) + g * E + we].store(count.after({bump})[we].load(we < E, i32(0)), we < E).end({wi});
  return sink({"moe_align_count_e" + std::to_string(E)}, {group({zero, bump, out}).end({g, l})});
}

UOp align_place(const MoeShape& s, std::string_view arch) {
  s.validate();
  const int64_t W = wave_width(arch), E = s.experts, T = place_threads(E, W), waves = T / W;
  const int64_t spans = count_spans(s), B = s.block_rows, k = s.top_k, chunks_per_span = kAlignSpan / T;
  const int64_t rows = s.max_rows(), blocks = s.max_blocks();
  const int64_t grid = std::max(ceil_div(s.choices(), T), ceil_div(rows, T * kMaxRowsPerThread));
  const UOp counts = placeholder({E}, dtypes::int32, 0), offsets = placeholder({E + 1}, dtypes::int32, 1);
  const UOp dest_row = placeholder({s.choices()}, dtypes::int32, 2), row_token = placeholder({rows}, dtypes::int32, 3);
  const UOp row_weight = placeholder({rows}, dtypes::float32, 4), block_expert = placeholder({blocks}, dtypes::int32, 5);
  const AlignWorkspace ws(s.choices(), E);
  const UOp work = placeholder({ws.elements()}, dtypes::int32, 6), ids = placeholder({s.choices()}, dtypes::int32, 7);
  const UOp weights = placeholder({s.choices()}, dtypes::float32, 8);
  const UOp g = range(grid, 0, AxisType::GLOBAL), l = range(T, 1, AxisType::LOCAL);
  const UOp total = alloc_shared({E}, dtypes::int32, 0), earlier = alloc_shared({E + 1}, dtypes::int32, 1);
  const UOp padded = alloc_shared({E}, dtypes::int32, 2), off = alloc_shared({E + 1}, dtypes::int32, 3);
  const UOp wave_total = alloc_shared({waves}, dtypes::int32, 4), wave_count = alloc_shared({waves * E}, dtypes::int32, 5);
  const UOp part_total = alloc_shared({T}, dtypes::int32, 7), part_earlier = alloc_shared({T}, dtypes::int32, 8);
  int64_t next_range = 2;
  auto loop = [&](int64_t n, AxisType axis = AxisType::LOOP) { return range(n, next_range++, axis); };
  // A reduction over n values in unrolled rounds of up to 16 (the renderer unrolls loops of 16 or
  // fewer, so their loads overlap): the two ranges and the value's index.
  struct Rounds {
    UOp hi, lo, i;
  };
  auto rounds = [&](int64_t n) {
    const int64_t inner = std::min<int64_t>(n, 16);
    const UOp hi = loop(ceil_div(n, inner), AxisType::REDUCE), lo = loop(inner, AxisType::REDUCE);
    return Rounds{hi, lo, hi * inner + lo};
  };
  const UOp lane = l % W, wave = l / W;

  // Each expert's count, and its count in the spans before this chunk's: the workgroup's threads
  // split each column (E2 = E rounded up to a power of two <= T; T / E2 parts of the spans a
  // column, each summed by one thread), then thread e adds its column's parts.
  const UOp span = g / chunks_per_span;
  int64_t E2 = 1;
  while (E2 < E) E2 *= 2;
  const int64_t parts = T / E2, per_part = ceil_div(spans, parts);
  const UOp column = l % E2, part = l / E2;
  const Rounds r = rounds(per_part);
  const UOp sp = part * per_part + r.i;
  const UOp base = histogram_base(work, ws);
  const UOp h = work[base + sp * E + column].load((column < E) & (r.i < per_part) & (sp < spans), i32(0));
  const UOp put_parts = group({part_total[l].store(h.reduce(Op::ADD, {r.hi, r.lo})),
                               part_earlier[l].store(where(sp < span, h, i32(0)).reduce(Op::ADD, {r.hi, r.lo}))});
  const Rounds pp = rounds(parts);
  const UOp has_e = l < E, at = pp.i * E2 + l;
  const UOp tot = part_total.after({put_parts})[at].load(has_e & (pp.i < parts), i32(0)).reduce(Op::ADD, {pp.hi, pp.lo});
  const UOp bef = part_earlier.after({put_parts})[at].load(has_e & (pp.i < parts), i32(0)).reduce(Op::ADD, {pp.hi, pp.lo});
  const UOp sums = group({total[l].store(tot, has_e), earlier[l].store(bef, has_e), padded[l].store((tot + i32(B - 1)) & i32(~(B - 1)), has_e),
                          earlier[idx(E)].store(i32(0), l.eq(idx(0)))});
  // (and, zeroed, the waves' counts of this chunk)
  const UOp zi = loop(ceil_div(waves * E, T)), ze = l + zi * T;
  const UOp zero = wave_count[ze].store(i32(0), ze < waves * E).end({zi});

  // The workspace for the next run: the other histogram zeroed, spread over the grid's threads;
  // the last workgroup to take a ticket (every thread of every workgroup has read the parity by
  // then: their reads of this histogram needed it) flips the parity and resets the counter.
  const int64_t H = ws.histogram_elements();
  const UOp hj = loop(ceil_div(H, grid * T)), hq = g * T + l + hj * (grid * T);
  const UOp first_histogram = base.eq(idx(0));
  const UOp clear = work[where(first_histogram, idx(H), idx(0)) + hq].store(i32(0), hq < H).end({hj});
  const UOp ticket = atomic(AtomicOp::Add, work.after({barrier({sums})})[idx(ws.counter_index())], i32(1));
  const UOp last = ticket.eq(i32(grid - 1));
  const UOp next_run = when(l.eq(idx(0)), {work[idx(ws.parity_index())].store(where(first_histogram, i32(1), i32(0)), last),
                                           work[idx(ws.counter_index())].store(i32(0), last)});

  // ... plus the choices of the span that come before this chunk (a count: order-free atomics).
  const UOp pi = loop(chunks_per_span - 1), pc = span * kAlignSpan + pi * T + l;
  // (Ids outside [0, E) count into a spare counter at E: an unconditional atomic, so the id is
  // loaded once and the loads of the loop need not wait for each other's atomics.)
  const UOp pid = ids[pc].load((pi < g % chunks_per_span) & (pc < s.choices()), i32(E));
  const UOp slot = where((pid >= 0) & (pid < E), pid, i32(E)).cast(dtypes::index);
  const UOp span_before = atomic(AtomicOp::Add, earlier.after({sums})[slot], i32(1), Scope::Workgroup).end({pi});

  // offsets[e] = the padded counts of the experts before e: thread l sums experts
  // [l*P, l*P + P) (P*T > E, so some thread's range holds e = E), a wave scan of those sums,
  // and the waves' totals before its own.
  const int64_t P = E / T + 1;
  std::vector<UOp> mine;
  UOp sum = i32(0);
  for (int64_t i = 0; i < P; ++i) {
    const UOp pe = l * P + i;
    mine.push_back(padded.after({sums})[pe].load(pe < E, i32(0)));
    sum = sum + mine.back();
  }
  UOp inclusive = sum;
  for (int64_t d = 1; d < W; d *= 2) inclusive = inclusive + where(lane >= d, shuffle_up(inclusive, d, W), i32(0));
  const UOp put_total = wave_total[wave].store(inclusive, lane.eq(idx(W - 1)));
  const Rounds wv = rounds(waves);
  UOp run = wave_total.after({put_total})[wv.i].load(wv.i < wave, i32(0)).reduce(Op::ADD, {wv.hi, wv.lo}) + inclusive - sum;
  std::vector<UOp> offs;
  for (int64_t i = 0; i < P; ++i) {
    const UOp pe = l * P + i;
    offs.push_back(off[pe].store(run, pe <= E));
    run = run + mine[static_cast<size_t>(i)];
  }
  const UOp off_ready = off.after(offs), total_ready = total.after({sums}), earlier_ready = earlier.after({span_before});

  // This chunk: a choice's rank among the chunk's earlier choices of its expert = its rank in
  // its wave (the lanes below it holding the same id: a match mask from one ballot per id bit)
  // plus the counts of that id in the waves before (each id's last lane of a wave stores it).
  const UOp c = g * T + l, live = c < s.choices();
  const UOp id = ids[c].load(live, i32(-1));
  const UOp known = live & (id >= 0) & (id < E);
  const UOp key = where(known, id, i32(E));
  // (Masks of 32 bits where the wave has 32 lanes: half the instructions of 64-bit ones.)
  const DType mask_type = W == 64 ? dtypes::uint64 : dtypes::uint32;
  const auto mask = [&](uint64_t v) { return constant(Wide(v), mask_type); };
  UOp same = mask(W == 64 ? ~uint64_t{0} : (uint64_t{1} << W) - 1);  // the wave's lanes (a ballot's bits)
  for (int64_t bit = 0; (int64_t{1} << bit) <= E; ++bit) {
    const UOp set = ((key >> bit) & 1).ne(i32(0));
    const UOp votes = W == 64 ? ballot(set, W) : ballot(set, W).cast(mask_type);
    same = same & where(set, votes, ~votes);
  }
  const UOp lane_bits = lane.cast(mask_type);
  const UOp below = (mask(1) << lane_bits) - mask(1);
  const UOp last_of_id = (same & ~((mask(2) << lane_bits) - mask(1))).eq(mask(0));  // 2 << 31 wraps to 0: lane 31 is last
  const UOp ie = where(known, id, i32(0)).cast(dtypes::index);
  const UOp put_count = wave_count.after({zero})[wave * E + ie].store(popcount(same).cast(dtypes::int32), known & last_of_id);
  const Rounds wb = rounds(waves);
  const UOp in_earlier_waves = wave_count.after({put_count})[wb.i * E + ie].load(wb.i < wave, i32(0)).reduce(Op::ADD, {wb.hi, wb.lo});
  const UOp rank = in_earlier_waves + popcount(same & below).cast(dtypes::int32);
  const UOp dest = off_ready[ie].load() + earlier_ready[ie].load() + rank;
  const UOp di = dest.cast(dtypes::index);
  const UOp place = group({dest_row[c].store(where(known, dest, i32(-1)), live),
                           row_token[di].store((c / k).cast(dtypes::int32), known),
                           row_weight[di].store(weights[c].load(known, constant(0.0, dtypes::float32)), known)});

  // Padding rows, spread over every thread of the grid (`stride` of them): those of expert e are
  // [offsets[e] + count, offsets[e+1]), fewer than B, so thread q takes row j = q % B of expert
  // q / B; the rows past offsets[E] are taken in strides.
  const int64_t stride = grid * T;
  const UOp q0 = g * T + l;
  const UOp pj = loop(ceil_div(E * B, stride)), q = q0 + pj * stride, pe = (q / B).cast(dtypes::int32);
  const UOp pe_in = where(pe < E, pe, i32(E - 1)).cast(dtypes::index);
  const UOp pr = off_ready[pe_in].load() + total_ready[pe_in].load() + (q % B).cast(dtypes::int32);
  const UOp is_pad = (pe < E) & (pr < off_ready[pe_in + 1].load());
  const UOp pri = where(is_pad, pr, i32(0)).cast(dtypes::index);
  const UOp expert_pads = group({row_token[pri].store(i32(-1), is_pad), row_weight[pri].store(constant(0.0, dtypes::float32), is_pad)}).end({pj});
  const UOp tj = loop(ceil_div(rows, stride)), tr = off_ready[idx(E)].load() + (q0 + tj * stride).cast(dtypes::int32);
  const UOp in_tail = tr < rows, tri = where(in_tail, tr, i32(0)).cast(dtypes::index);
  const UOp tail_pads = group({row_token[tri].store(i32(-1), in_tail), row_weight[tri].store(constant(0.0, dtypes::float32), in_tail)}).end({tj});

  // Blocks: their expert, or -1 past offsets[E] (grid * 256 >= max_rows / 8 >= max_blocks).
  const UOp b = g * T + l;
  const UOp eb = expert_of_row(off_ready, (b * B).cast(dtypes::int32), E);
  const UOp mark = block_expert[b].store(where(eb.eq(i32(E)), i32(-1), eb), b < blocks);

  // Workgroup 0: counts and offsets.
  const UOp xi = loop(ceil_div(E + 1, T)), xe = l + xi * T, first = g.eq(idx(0));
  const UOp xe_in = where(xe < E, xe, idx(E - 1));
  const UOp totals = group({counts[xe].store(total_ready[xe_in].load(), first & (xe < E)),
                            offsets[xe].store(off_ready[where(xe <= E, xe, idx(E))].load(), first & (xe <= E))})
                         .end({xi});
  return sink({"moe_align_place_e" + std::to_string(E) + "_w" + std::to_string(W)},
              {group({sums, zero, clear, next_run, span_before, put_total, place, expert_pads, tail_pads, mark, totals}).end({g, l})});
}

}  // namespace weft::moe
