// The align kernels (align.h): a per-chunk histogram of expert ids, then every chunk's rows
// placed from it, stably.
#include "weft/moe/align.h"

#include <string>

#include "weft/dsl/builder.h"
#include "weft/kernels/layouts.h"

namespace weft::moe {
namespace {

constexpr int64_t kThreads = kAlignChunk;  // one choice a thread
constexpr int64_t kMaxRowsPerThread = 8;  // align_place's grid grows so that no thread pads more rows

UOp i32(int64_t v) { return constant(Wide(v), dtypes::int32); }
UOp idx(int64_t v) { return constant(Wide(v)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t chunks(const MoeShape& s) { return ceil_div(s.choices(), kAlignChunk); }
int64_t count_spans(const MoeShape& s) { return ceil_div(s.choices(), kAlignSpan); }
constexpr int64_t kChunksPerSpan = kAlignSpan / kAlignChunk;
static_assert(kAlignSpan % kAlignChunk == 0);

int64_t wave_width(std::string_view arch) {
  if (tile::is_nvidia(arch)) return 32;
  if (arch == "gfx942" || arch == "gfx950") return 64;
  throw Error("moe align: no wave width for target '" + std::string(arch) + "' (gfx942, gfx950, sm_XY)");
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

}  // namespace

AlignWorkspace::AlignWorkspace(int64_t choices, int64_t experts_)
    : spans(ceil_div(choices, kAlignSpan)), chunks(ceil_div(choices, kAlignChunk)), experts(experts_) {}

int64_t align_workspace(const MoeShape& shape) {
  shape.validate();
  return AlignWorkspace(shape.choices(), shape.experts).elements();
}

UOp AlignWorkspace::histogram_at(const UOp& parity) const { return where(parity.eq(i32(0)), idx(0), idx(histogram_elements())); }
UOp AlignWorkspace::fill_parity(const UOp& workspace) const { return workspace[idx(fill_parity_index())].load(); }
UOp AlignWorkspace::filled_parity(const UOp& workspace) const { return workspace[idx(filled_parity_index())].load(); }

UOp align_count(const MoeShape& s) {
  s.validate();
  const int64_t E = s.experts;
  const AlignWorkspace ws(s.choices(), E);
  const UOp work = placeholder({ws.elements()}, dtypes::int32, 0), ids = placeholder({s.choices()}, dtypes::int32, 1);
  const UOp g = range(ws.chunks, 0, AxisType::GLOBAL), l = range(kThreads, 1, AxisType::LOCAL);
  const UOp count = alloc_shared({E}, dtypes::int32, 0);
  const UOp zi = range(ceil_div(E, kThreads), 2, AxisType::LOOP), ze = l + zi * kThreads;
  const UOp zero = count[ze].store(i32(0), ze < E).end({zi});
  const UOp c = g * kThreads + l;
  const UOp id = ids[c].load(c < s.choices(), i32(-1));
  const UOp bump = when((id >= 0) & (id < E), {atomic(AtomicOp::Add, count.after({zero})[id.cast(dtypes::index)], i32(1), Scope::Workgroup)});
  // The chunk's row, whole; its counts added into its span's row (which starts at zero).
  const UOp wi = range(ceil_div(E, kThreads), 3, AxisType::LOOP), we = l + wi * kThreads;
  const UOp parity = ws.fill_parity(work), base = ws.histogram_at(parity);
  const UOp n = count.after({bump})[we].load(we < E, i32(0));
  const UOp chunk_row = work[base + idx(ws.chunk_row(0)) + g * E + we].store(n, we < E);
  const UOp span_row = when((we < E) & n.ne(i32(0)), {atomic(AtomicOp::Add, work[base + (g / kChunksPerSpan) * E + we], n)});
  const UOp record = work[idx(ws.filled_parity_index())].store(parity, g.eq(idx(0)) & l.eq(idx(0)));  // for align_place
  return sink({.name = "moe_align_count_e" + std::to_string(E), .dependent_launch = true},
              {group({zero, bump, group({chunk_row, span_row}).end({wi}), record}).end({g, l})});
}

UOp align_place(const MoeShape& s, std::string_view arch) {
  s.validate();
  const int64_t W = wave_width(arch), waves = kThreads / W;
  const int64_t E = s.experts, spans = count_spans(s), B = s.block_rows, k = s.top_k;
  const int64_t rows = s.max_rows(), blocks = s.max_blocks();
  const int64_t grid = std::max(chunks(s), ceil_div(rows, kThreads * kMaxRowsPerThread));
  const UOp counts = placeholder({E}, dtypes::int32, 0), offsets = placeholder({E + 1}, dtypes::int32, 1);
  const UOp dest_row = placeholder({s.choices()}, dtypes::int32, 2), row_token = placeholder({rows}, dtypes::int32, 3);
  const UOp row_weight = placeholder({rows}, dtypes::float32, 4), block_expert = placeholder({blocks}, dtypes::int32, 5);
  const AlignWorkspace ws(s.choices(), E);
  const UOp work = placeholder({ws.elements()}, dtypes::int32, 6), ids = placeholder({s.choices()}, dtypes::int32, 7);
  const UOp weights = placeholder({s.choices()}, dtypes::float32, 8);
  const UOp g = range(grid, 0, AxisType::GLOBAL), l = range(kThreads, 1, AxisType::LOCAL);
  const UOp total = alloc_shared({E}, dtypes::int32, 0), earlier = alloc_shared({E}, dtypes::int32, 1);
  const UOp padded = alloc_shared({E}, dtypes::int32, 2), off = alloc_shared({E + 1}, dtypes::int32, 3);
  const UOp wave_total = alloc_shared({waves}, dtypes::int32, 4), wave_count = alloc_shared({waves * E}, dtypes::int32, 5);
  int64_t next_range = 2;
  auto loop = [&](int64_t n, AxisType axis = AxisType::LOOP) { return range(n, next_range++, axis); };
  const UOp lane = l % W, wave = l / W;

  // This thread's choice, its expert id and weight, loaded first (before the first barrier), so
  // that their round trips overlap the histogram's instead of holding up the ranking (the id)
  // and the row's write (the weight) after the barriers.
  const UOp c = g * kThreads + l, live = c < s.choices();
  const Prefetched choice = prefetch({ids[c].load(live, i32(-1)), weights[c].load(live, constant(0.0, dtypes::float32))});

  // Each expert's count, its count in the spans before this chunk's, and (zeroed) the waves'
  // counts of this chunk.
  const UOp span = g / kChunksPerSpan;
  const UOp ei = loop(ceil_div(E, kThreads)), e = l + ei * kThreads, has_e = e < E;
  // (The spans as rounds of 16, so that the renderer unrolls them and their loads overlap.)
  const int64_t inner = std::min<int64_t>(spans, 16);
  const UOp sp_hi = loop(ceil_div(spans, inner), AxisType::REDUCE), sp_lo = loop(inner, AxisType::REDUCE), sp = sp_hi * inner + sp_lo;
  const UOp parity = ws.filled_parity(work), base = ws.histogram_at(parity);
  const UOp h = work[base + sp * E + e].load(has_e & (sp < spans), i32(0));
  const UOp tot = h.reduce(Op::ADD, {sp_hi, sp_lo});
  const UOp bef = where(sp < span, h, i32(0)).reduce(Op::ADD, {sp_hi, sp_lo});
  // ... plus its count in the chunks of this span before this one (their rows, 15 at most).
  const UOp pi = loop(kChunksPerSpan - 1, AxisType::REDUCE), chunk = span * kChunksPerSpan + pi;
  // (Every row of the span read, the later chunks' masked out after the load: loads that do not
  // depend on the chunk's place in its span are all in flight at once, where a load guarded by
  // it became a branch around each, the adds waiting on one round trip after another.)
  const UOp chunk_count = work[base + idx(ws.chunk_row(0)) + chunk * E + e].load(has_e & (chunk < ws.chunks), i32(0));
  const UOp in_span = where(pi < g % kChunksPerSpan, chunk_count, i32(0)).reduce(Op::ADD, {pi});
  const UOp sums = group({total[e].store(tot, has_e), earlier[e].store(bef + in_span, has_e),
                          padded[e].store((tot + i32(B - 1)) & i32(~(B - 1)), has_e)})
                       .end({ei});
  const UOp zi = loop(ceil_div(waves * E, kThreads)), ze = l + zi * kThreads;
  const UOp zero = wave_count[ze].store(i32(0), ze < waves * E).end({zi});

  // The workspace for the next run: the other histogram zeroed, spread over the grid's threads
  // (the fill parity names it: next_run below).
  const int64_t H = ws.histogram_elements();
  const UOp hj = loop(ceil_div(H, grid * kThreads)), hq = g * kThreads + l + hj * (grid * kThreads);
  const UOp first_histogram = base.eq(idx(0));
  const UOp clear = work[where(first_histogram, idx(H), idx(0)) + hq].store(i32(0), hq < H).end({hj});

  // Shared memory is written in three phases, each read after one barrier: (1) the experts' sums
  // and the zeroed wave counts; (2) each wave's counts of its ids and the wave scan's totals; (3)
  // the offsets. A read names every write of its phase (AFTER), so that the phase ends in one
  // barrier (insert_barriers makes one for reads after the same writes), not one for each.
  const std::vector<UOp> phase_one{sums, zero};

  // This chunk: a choice's rank among the chunk's earlier choices of its expert = its rank in
  // its wave (the lanes below it holding the same id: a match mask from one ballot per id bit)
  // plus the counts of that id in the waves before (each id's last lane of a wave stores it).
  const UOp id = choice.values[0];
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
  const UOp put_count = wave_count.after(phase_one)[wave * E + ie].store(popcount(same).cast(dtypes::int32), known & last_of_id);

  // offsets[e] = the padded counts of the experts before e: thread l sums experts
  // [l*P, l*P + P) (P*256 > E, so some thread's range holds e = E), a wave scan of those sums,
  // and the waves' totals before its own.
  const int64_t P = E / kThreads + 1;
  std::vector<UOp> mine;
  UOp sum = i32(0);
  for (int64_t i = 0; i < P; ++i) {
    const UOp pe = l * P + i;
    mine.push_back(padded.after(phase_one)[pe].load(pe < E, i32(0)));
    sum = sum + mine.back();
  }
  UOp inclusive = sum;
  for (int64_t d = 1; d < W; d *= 2) inclusive = inclusive + where(lane >= d, shuffle_up(inclusive, d, W), i32(0));
  const UOp put_total = wave_total[wave].store(inclusive, lane.eq(idx(W - 1)));
  const std::vector<UOp> phase_two{put_count, put_total};
  const UOp wv = loop(waves, AxisType::REDUCE);
  UOp run = where(wv < wave, wave_total.after(phase_two)[wv].load(), i32(0)).reduce(Op::ADD, {wv}) + inclusive - sum;
  std::vector<UOp> offs;
  for (int64_t i = 0; i < P; ++i) {
    const UOp pe = l * P + i;
    offs.push_back(off[pe].store(run, pe <= E));
    run = run + mine[static_cast<size_t>(i)];
  }
  const UOp off_ready = off.after(offs), total_ready = total.after(phase_one), earlier_ready = earlier.after(phase_one);

  const UOp wb = loop(waves, AxisType::REDUCE);
  const UOp in_earlier_waves = where(wb < wave, wave_count.after(phase_two)[wb * E + ie].load(), i32(0)).reduce(Op::ADD, {wb});
  const UOp rank = in_earlier_waves + popcount(same & below).cast(dtypes::int32);
  const UOp dest = off_ready[ie].load() + earlier_ready[ie].load() + rank;
  const UOp di = dest.cast(dtypes::index);
  const UOp place = group({dest_row[c].store(where(known, dest, i32(-1)), live),
                           row_token[di].store((c / k).cast(dtypes::int32), known),
                           row_weight[di].store(choice.values[1], known)});

  // Padding rows, spread over every thread of the grid (`stride` of them): those of expert e are
  // [offsets[e] + count, offsets[e+1]), fewer than B, so thread q takes row j = q % B of expert
  // q / B; the rows past offsets[E] are taken in strides.
  const int64_t stride = grid * kThreads;
  const UOp q0 = g * kThreads + l;
  const UOp pj = loop(ceil_div(E * B, stride)), q = q0 + pj * stride, pe = (q / B).cast(dtypes::int32);
  const UOp pe_in = where(pe < E, pe, i32(E - 1)).cast(dtypes::index);
  const UOp pr = off_ready[pe_in].load() + total_ready[pe_in].load() + (q % B).cast(dtypes::int32);
  const UOp is_pad = (pe < E) & (pr < off_ready[pe_in + 1].load());
  const UOp pri = where(is_pad, pr, i32(0)).cast(dtypes::index);
  const UOp expert_pads = group({row_token[pri].store(i32(-1), is_pad), row_weight[pri].store(constant(0.0, dtypes::float32), is_pad)}).end({pj});
  const UOp tj = loop(ceil_div(rows, stride)), tr = off_ready[idx(E)].load() + (q0 + tj * stride).cast(dtypes::int32);
  const UOp in_tail = tr < rows, tri = where(in_tail, tr, i32(0)).cast(dtypes::index);
  const UOp tail_pads = group({row_token[tri].store(i32(-1), in_tail), row_weight[tri].store(constant(0.0, dtypes::float32), in_tail)}).end({tj});

  // Blocks: their expert, or -1 past offsets[E] (grid * 256 >= max_rows / 8 >= max_blocks). Only
  // the threads of a block search (when): the grid has about 8 B threads a block.
  const UOp b = g * kThreads + l;
  const UOp eb = expert_of_row(off_ready, (b * B).cast(dtypes::int32), E);
  const UOp mark = when(b < blocks, {block_expert[b].store(where(eb.eq(i32(E)), i32(-1), eb))});

  // Workgroup 0: counts and offsets.
  const UOp xi = loop(ceil_div(E + 1, kThreads)), xe = l + xi * kThreads, first = g.eq(idx(0));
  const UOp xe_in = where(xe < E, xe, idx(E - 1));
  const UOp totals = group({counts[xe].store(total_ready[xe_in].load(), first & (xe < E)),
                            offsets[xe].store(off_ready[where(xe <= E, xe, idx(E))].load(), first & (xe <= E))})
                         .end({xi});
  // The next run fills the histogram this one zeroed. One writer, and no kernel reads the fill
  // parity while this one runs (AlignWorkspace), so no workgroup waits for the others.
  const UOp next_run = work[idx(ws.fill_parity_index())].store(where(first_histogram, i32(1), i32(0)), first & l.eq(idx(0)));
  return sink({.name = "moe_align_place_e" + std::to_string(E) + "_w" + std::to_string(W), .dependent_launch = true},  // as route's
              {group({choice.issued, sums, zero, clear, put_total, place, expert_pads, tail_pads, mark, totals, next_run}).end({g, l})});
}

}  // namespace weft::moe
