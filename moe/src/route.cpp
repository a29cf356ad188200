// The route kernel (route.h): a token's logits in the registers of W lanes, sorted (score, ~id)
// keys per lane, k rounds of a max over the lanes.
#include "weft/moe/route.h"

#include <algorithm>
#include <limits>
#include <string>

#include "weft/dsl/builder.h"
#include "weft/kernels/layouts.h"
#include "weft/moe/align.h"

namespace weft::moe {
namespace {

constexpr int64_t kWavesPerGroup = 4;  // waves of a workgroup
constexpr int64_t kMaxSlots = 32;      // experts a lane ranks, where the token's lanes allow
constexpr double kLog2e = 1.4426950408889634;
constexpr int64_t kMaxExperts = 512, kMaxTopK = 8;

UOp u32(uint64_t v) { return constant(Wide(v), dtypes::uint32); }
UOp u64(uint64_t v) { return constant(Wide(v), dtypes::uint64); }
UOp f32(double v) { return constant(v, dtypes::float32); }
// `v` stored in a register and read back: a value computed where it stands, by every lane, that a
// when() region can use without recomputing it under its guard.
UOp held(const UOp& v) {
  const UOp reg = placeholder({1}, v.dtype(), fresh_id(), AddrSpace::REG), zero = constant(Wide(0), dtypes::index);
  return reg.after({reg[zero].store(v)})[zero].load();
}
UOp idx(int64_t v) { return constant(Wide(v)); }

bool is_pow2(int64_t v) { return v >= 1 && (v & (v - 1)) == 0; }

// Bits that order as the numbers do (a < b iff bits(a) < bits(b), and -0 and +0 the same bits:
// equal scores), with NaN at 0, below -inf (whose bits are 0x007fffff).
UOp order_bits(const UOp& x) {
  const UOp bits = x.bitcast(dtypes::uint32);
  const UOp negative = (bits & u32(0x80000000u)).ne(u32(0));
  return where(x.ne(x), u32(0), where(x.eq(0.0), u32(0x80000000u), where(negative, ~bits, bits | u32(0x80000000u))));
}

// The number order_bits made (NaN, at 0, comes back as -inf).
UOp from_order_bits(const UOp& ord) {
  const UOp positive = (ord & u32(0x80000000u)).ne(u32(0));
  const UOp bits = where(positive, ord & u32(0x7fffffffu), ~ord);
  return where(ord.eq(u32(0)), f32(-std::numeric_limits<double>::infinity()), bits.bitcast(dtypes::float32));
}

// The key a wave max ranks: the score's order bits above ~id, so equal scores go to the lower id.
// Key 0 marks an expert out of the race (taken already, in a dropped group, or past E).
UOp rank_key(const UOp& score, const UOp& expert) {
  return (order_bits(score).cast(dtypes::uint64) << u64(32)) | (~expert.cast(dtypes::uint32)).cast(dtypes::uint64);
}

// A bf16 logit's key fits 32 bits: its order bits in the high half above ~id's low 16 bits
// (E <= 512; `low` = 0xffff - id). With x the value's float32 bits (the bf16 bits shifted up),
// the order bits are -x for a negative value (so -0 lands on +0's 2^31: equal scores) and
// x + 2^31 otherwise; NaN gets 0, below -inf. -x keeps x's low half zero, so the id adds on. A
// cheaper wave max than 64-bit keys.
UOp bf16_key(const UOp& logit, const UOp& low) {
  const UOp x = logit.bitcast(dtypes::uint16).cast(dtypes::uint32) << u32(16);
  const UOp negative = (x.bitcast(dtypes::int32) >> constant(Wide(31), dtypes::int32)).bitcast(dtypes::uint32);  // all ones or 0
  const UOp ord = (x ^ (negative | u32(0x80000000u))) - negative;
  const UOp value = x.bitcast(dtypes::float32);
  return where(value.ne(value), low, ord + low);  // (the add before the select: ptxas folds it into ord's subtraction)
}

// The score a key holds (NaN, at 0, comes back as -inf). A narrow (bf16) key's high half is
// -x or x + 2^31 (bf16_key).
UOp key_score(const UOp& key, bool narrow) {
  if (!narrow) return from_order_bits((key >> u64(32)).cast(dtypes::uint32));
  const UOp high = key & u32(0xffff0000u);
  const UOp x = where((high & u32(0x80000000u)).ne(u32(0)), high ^ u32(0x80000000u), u32(0) - high);
  return where(high.eq(u32(0)), f32(-std::numeric_limits<double>::infinity()), x.bitcast(dtypes::float32));
}

// The expert id a key holds (int32): ~ its low bits (16 of them in a narrow key, 32 in a wide one).
UOp key_id(const UOp& key, bool narrow) {
  const UOp low = narrow ? (key & u32(0xffff)) | u32(0xffff0000u) : key.cast(dtypes::uint32);
  return (~low).cast(dtypes::int32);
}

// Experts of a sigmoid group (the whole row when there is one group).
int64_t group_size(const RouteConfig& c) { return c.scoring == Scoring::SigmoidGroupedTopK ? c.experts / c.n_group : c.experts; }
// Whether groups are ranked at all (sigmoid scoring keeping fewer than all of several groups).
// Only then does the lanes' layout have to follow the groups (G a power of two, validate).
bool ranks_groups(const RouteConfig& c) { return c.scoring == Scoring::SigmoidGroupedTopK && c.n_group > 1 && c.topk_group < c.n_group; }

// Lanes a token's experts are spread over: enough that each holds at most 32 experts (a lane
// keeps only its k best sorted, which costs less than a wider wave max in each of k rounds), and
// at least k, which write the choices. Ranked groups narrower than that take the whole wave
// instead (a group's score is gathered across lanes, kept_narrow_groups).
int64_t token_width(const RouteConfig& c, int64_t wave) {
  int64_t w = 1;
  while (w < wave && (w < c.top_k || (c.experts + w - 1) / w > kMaxSlots)) w *= 2;
  return ranks_groups(c) && group_size(c) < w ? wave : w;
}

// Logits a lane loads at once (its `slots` experts in whole vectors): the largest power of two up
// to 16 bytes that divides both slots and E, so that every vector starts aligned and lies wholly
// inside or wholly past the row. A ranked group covers whole rows of vectors (G >= W v; G and W
// are powers of two), so that each lane holds the same slots of every group; a group narrower
// than the lanes takes single experts (v = 1).
int64_t vector_width(const RouteConfig& c, int64_t W, int64_t slots) {
  int64_t v = 16 / c.logits.itemsize();
  if (ranks_groups(c)) v = std::min(v, std::max<int64_t>(1, group_size(c) / W));
  while (v > 1 && (slots % v || c.experts % v)) v /= 2;
  return v;
}

// The larger of two keys to `a`, the smaller to `b`.
void compare_exchange(UOp& a, UOp& b) {
  const UOp hi = max(a, b), lo = min(a, b);
  a = hi;
  b = lo;
}

// The keys sorted largest first, in place: Batcher's odd-even merge network over the next power
// of two (padded with key 0, which sorts last).
void sort_descending(std::vector<UOp>& keys, const UOp& none) {
  size_t n = 1;
  while (n < keys.size()) n *= 2;
  const size_t used = keys.size();
  keys.resize(n, none);
  for (size_t p = 1; p < n; p *= 2)
    for (size_t k = p; k >= 1; k /= 2) {
      for (size_t j = k % p; j + k < n; j += 2 * k)
        for (size_t i = 0; i < std::min(k, n - j - k); ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) compare_exchange(keys[i + j], keys[i + j + k]);
      if (k == 1) break;
    }
  keys.resize(used);
}

// The a.size() largest of two runs of keys sorted largest first (of one power-of-two length),
// largest first: max(a[i], b[n-1-i]) holds them as a bitonic sequence, which a half-cleaner
// cascade sorts.
std::vector<UOp> merge_largest(const std::vector<UOp>& a, const std::vector<UOp>& b) {
  const size_t n = a.size();
  std::vector<UOp> c(n);
  for (size_t i = 0; i < n; ++i) c[i] = max(a[i], b[n - 1 - i]);
  for (size_t h = n / 2; h >= 1; h /= 2)
    for (size_t i = 0; i < n; ++i)
      if ((i & h) == 0) compare_exchange(c[i], c[i + h]);
  return c;
}

// The `keep` largest keys, largest first. Runs of `run` keys (keep rounded up to a power of two)
// are sorted, then pairs of sorted runs merge into their `run` largest (merge_largest). A lane
// that ranks 32 keys for k = 8 does 4 sorts of 8 and 3 such merges instead of one sort of 32.
std::vector<UOp> largest_first(std::vector<UOp> keys, size_t keep, const UOp& none) {
  size_t run = 1;
  while (run < keep) run *= 2;
  keys.resize((keys.size() + run - 1) / run * run, none);
  std::vector<std::vector<UOp>> runs;
  for (size_t i = 0; i < keys.size(); i += run) {
    runs.emplace_back(keys.begin() + static_cast<std::ptrdiff_t>(i), keys.begin() + static_cast<std::ptrdiff_t>(i + run));
    sort_descending(runs.back(), none);
  }
  while (runs.size() > 1) {
    std::vector<std::vector<UOp>> merged;
    for (size_t r = 0; r + 1 < runs.size(); r += 2) merged.push_back(merge_largest(runs[r], runs[r + 1]));
    if (runs.size() % 2) merged.push_back(std::move(runs.back()));
    runs = std::move(merged);
  }
  runs[0].resize(keep);
  return runs[0];
}

UOp sigmoid(const UOp& x) {
  const UOp s = recip(f32(1.0) + exp2(-x * kLog2e));
  return where(x.ne(x), f32(0.0), s);  // NaN counts as -inf
}

// The top-2 of a group, as a pair merged with another: (max, second largest).
struct Top2 {
  UOp first, second;
};
Top2 merge(const Top2& a, const Top2& b) { return {max(a.first, b.first), max(min(a.first, b.first), max(a.second, b.second))}; }
Top2 butterfly(Top2 p, int64_t width) {
  for (int64_t m = 1; m < width; m *= 2) p = merge(p, {shuffle_xor(p.first, m, width), shuffle_xor(p.second, m, width)});
  return p;
}

// Whether group h, of score `mine`, is beaten by group h2 of score `s` (a larger score, or an
// equal one of a lower index).
UOp beats(const UOp& s, const UOp& mine, bool lower) { return lower ? s >= mine : s > mine; }

// Groups of at least W experts (G >= W v, vector_width): every lane holds G / W consecutive slots
// of each group, so a group's score is a merge over those slots and an xor butterfly over the W
// lanes, and every lane ranks the n_group scores itself. Returns the kept groups' indices (int32),
// best first: the group of rank r is the one that r others beat (beats orders them totally, as a
// group score is never NaN: the bias is finite, route.h).
std::vector<UOp> best_wide_groups(const RouteConfig& c, int64_t W, const std::vector<UOp>& selection) {
  const int64_t per = group_size(c) / W;  // slots of a group in each lane
  const UOp ninf = f32(-std::numeric_limits<double>::infinity());
  std::vector<UOp> score, rank;
  for (int64_t h = 0; h < c.n_group; ++h) {
    Top2 p{selection[static_cast<size_t>(h * per)], ninf};
    for (int64_t i = 1; i < per; ++i) p = merge(p, {selection[static_cast<size_t>(h * per + i)], ninf});
    p = butterfly(p, W);
    score.push_back(p.first + p.second);
  }
  for (int64_t h = 0; h < c.n_group; ++h) {
    UOp better = constant(Wide(0), dtypes::int32);
    for (int64_t h2 = 0; h2 < c.n_group; ++h2)
      if (h2 != h) better = better + beats(score[static_cast<size_t>(h2)], score[static_cast<size_t>(h)], h2 < h).cast(dtypes::int32);
    rank.push_back(better);
  }
  std::vector<UOp> best;
  for (int64_t r = 0; r < c.topk_group; ++r) {
    UOp g = constant(Wide(0), dtypes::int32);
    for (int64_t h = 1; h < c.n_group; ++h) g = where(rank[static_cast<size_t>(h)].eq(constant(Wide(r), dtypes::int32)), constant(Wide(h), dtypes::int32), g);
    best.push_back(g);
  }
  return best;
}

// The keys of the kept groups' slots only (G >= W): slot j of the group of rank r is the same
// slot of that group's run, expert first_group[j] + G * group, so a lane ranks topk_group * G / W
// keys, not all of its slots. `score`: every slot's score (NaN kept: it ranks last).
std::vector<UOp> kept_wide_keys(const RouteConfig& c, int64_t W, const std::vector<UOp>& selection, const std::vector<UOp>& score,
                                const std::vector<UOp>& first_group) {
  const int64_t per = group_size(c) / W;
  std::vector<UOp> keys;
  for (const UOp& g : best_wide_groups(c, W, selection))
    for (int64_t j = 0; j < per; ++j) {
      UOp s = score[static_cast<size_t>(j)];
      for (int64_t h = 1; h < c.n_group; ++h) s = where(g.eq(constant(Wide(h), dtypes::int32)), score[static_cast<size_t>(h * per + j)], s);
      keys.push_back(rank_key(s, first_group[static_cast<size_t>(j)] + g.cast(dtypes::index) * group_size(c)));
    }
  return keys;
}

// Groups narrower than the wave (W = the wave, v = 1, token_width): slot i of lane l holds expert
// l + iW, a group spans G lanes of one slot; each slot's group score comes from a butterfly over
// those lanes, every group's score is read into every lane, and each slot ranks its own group.
std::vector<UOp> kept_narrow_groups(const RouteConfig& c, int64_t W, const UOp& lane, const std::vector<UOp>& selection) {
  const int64_t slots = static_cast<int64_t>(selection.size()), group = group_size(c);
  const UOp ninf = f32(-std::numeric_limits<double>::infinity());
  std::vector<UOp> own(static_cast<size_t>(slots)), all(static_cast<size_t>(c.n_group));
  for (int64_t i = 0; i < slots; ++i) {
    const Top2 p = butterfly({selection[static_cast<size_t>(i)], ninf}, group);
    own[static_cast<size_t>(i)] = p.first + p.second;
  }
  for (int64_t h = 0; h < c.n_group; ++h)
    all[static_cast<size_t>(h)] = shuffle(own[static_cast<size_t>(h * group / W)], constant(Wide(h * group % W), dtypes::int32), W);
  std::vector<UOp> kept;
  for (int64_t i = 0; i < slots; ++i) {
    const UOp g = (lane + i * W) / group;  // this slot's group (past n_group for lanes past E)
    const UOp mine = own[static_cast<size_t>(i)];
    UOp better = constant(Wide(0), dtypes::int32);
    for (int64_t h = 0; h < c.n_group; ++h) {
      const UOp s = all[static_cast<size_t>(h)];
      better = better + ((s > mine) | (s.eq(mine) & (g > h))).cast(dtypes::int32);
    }
    kept.push_back(better < c.topk_group);
  }
  return kept;
}

// The weight of a lane's choice (lane j < k holds choice j; `logit` indexes its expert's logit):
// the expert's sigmoid, its logit read again (a cached load, instead of picking the winner's
// sigmoid out of every slot in each round), normalized by the sum of the k chosen sigmoids (added
// in choice order, as route_reference does) and scaled.
UOp grouped_weight(const RouteConfig& c, const UOp& logit, const UOp& writes, int64_t W) {
  const UOp s = sigmoid(logit.load(writes, constant(0.0, c.logits)).cast(dtypes::float32));
  UOp sum = f32(0.0);
  for (int64_t j = 0; j < c.top_k; ++j) sum = sum + shuffle(s, constant(Wide(j), dtypes::int32), W);
  UOp x = s;
  if (c.normalize) x = where(sum > 0.0, x / sum, f32(1.0 / static_cast<double>(c.top_k)));
  return x * static_cast<double>(static_cast<float>(c.scaling));
}

}  // namespace

void RouteConfig::validate() const {
  auto fail = [](const std::string& what) { throw Error("moe route: " + what); };
  auto str = [](int64_t v) { return std::to_string(v); };
  if (tokens < 1) fail("tokens must be >= 1, got " + str(tokens));
  if (experts < 1 || experts > kMaxExperts) fail("experts must lie in [1, 512], got " + str(experts));
  if (top_k < 1 || top_k > std::min(kMaxTopK, experts)) fail("top_k must lie in [1, min(8, experts)], got " + str(top_k));
  if (logits != dtypes::float32 && logits != dtypes::bfloat16) fail("logits are float32 or bfloat16, not " + logits.name());
  if (scoring != Scoring::SigmoidGroupedTopK) return;
  if (n_group < 1 || experts % n_group) fail("n_group must divide experts = " + str(experts) + ", got " + str(n_group));
  if (n_group > 1 && (experts / n_group < 2 || !is_pow2(experts / n_group)))
    fail("a group holds a power of two >= 2 experts, got " + str(experts) + " / " + str(n_group));
  if (topk_group < 1 || topk_group > n_group) fail("topk_group must lie in [1, n_group = " + str(n_group) + "], got " + str(topk_group));
  if (top_k > topk_group * (experts / n_group))
    fail("top_k = " + str(top_k) + " exceeds the experts of the kept groups, " + str(topk_group * (experts / n_group)));
}

namespace {

// The route kernel; `counting`: each choice is also added to align's span histogram (the last slot).
UOp route_kernel(const RouteConfig& c, std::string_view arch, bool counting) {
  c.validate();
  if (!tile::is_nvidia(arch) && arch != "gfx942" && arch != "gfx950")
    throw Error("moe route: no schedule for target '" + std::string(arch) + "' (gfx942, gfx950, sm_XY)");
  const int64_t T = c.tokens, E = c.experts, k = c.top_k;
  const bool grouped = c.scoring == Scoring::SigmoidGroupedTopK;
  const bool narrow = !grouped && c.logits == dtypes::bfloat16;
  const int64_t W = token_width(c, tile::is_nvidia(arch) ? 32 : 64), per_wave = (tile::is_nvidia(arch) ? 32 : 64) / W;
  const int64_t slots = (E + W - 1) / W, per_group = kWavesPerGroup * per_wave;
  const UOp none = narrow ? u32(0) : u64(0);
  const UOp ids = placeholder({T * k}, dtypes::int32, 0), weights = placeholder({T * k}, dtypes::float32, 1);
  const UOp logits = placeholder({T * E}, c.logits, 2), bias = placeholder({E}, dtypes::float32, 3);
  const UOp g = range((T + per_group - 1) / per_group, 0, AxisType::GLOBAL);
  const UOp lane = range(W, 1, AxisType::LOCAL), wave = range(kWavesPerGroup, 2, AxisType::WARP);
  const UOp sub = per_wave > 1 ? range(per_wave, 3, AxisType::LOCAL) : idx(0);  // the token's lanes within its wave
  const UOp t = (g * kWavesPerGroup + wave) * per_wave + sub, live = t < T;
  const UOp ninf = f32(-std::numeric_limits<double>::infinity());

  // The lane's experts, their keys, and (grouped) their selection scores. A lane holds whole
  // vectors of v experts (vector_width): lane l takes the token's vectors l, l + W, l + 2W, ...,
  // so that each load instruction of a wave reads whole lines; slot i is vector i / v, element i % v.
  const int64_t vw = vector_width(c, W, slots);
  const auto slot_offset = [&](int64_t i) { return vw > 1 ? (i / vw) * W * vw + i % vw : i * W; };  // e - e of slot 0
  const UOp low_id = u32(0xffff) - (vw > 1 ? lane * vw : lane).cast(dtypes::uint32);  // bf16_key's 0xffff - id of slot 0
  const auto expert = [&](int64_t i) { return (vw > 1 ? lane * vw : lane) + slot_offset(i); };
  // The lane's slots of a row indexed by expert (`at`), as loads of at most 16 bytes.
  const auto load_slots = [&](const auto& at, DType dt) {
    std::vector<UOp> out;
    const int64_t step = std::min<int64_t>(vw, 16 / static_cast<int64_t>(dt.itemsize()));
    const UOp zero = constant(0.0, dt);
    for (int64_t i = 0; i < slots; i += step) {
      const UOp ok = live & (expert(i) < E);
      if (step == 1) {
        out.push_back(at(expert(i)).load(ok, zero));
        continue;
      }
      const UOp v = at(expert(i)).vec(step).load(ok, vectorize(std::vector<UOp>(static_cast<size_t>(step), zero)));
      for (int64_t j = 0; j < step; ++j) out.push_back(v.gep(j));
    }
    return out;
  };
  std::vector<UOp> key, score, selection, loaded = load_slots([&](const UOp& e) { return logits[t * E + e]; }, c.logits);
  if (grouped) {  // the correction bias of the same experts, behind the logits
    const std::vector<UOp> b = load_slots([&](const UOp& e) { return bias[e]; }, dtypes::float32);
    loaded.insert(loaded.end(), b.begin(), b.end());
  }
  // The lane's logits (and bias) all in flight at once (prefetch), not loaded run by run as the
  // sorts below first use them; and align's fill parity, which only the atomics at the end use.
  std::vector<UOp> effects;
  const AlignWorkspace ws(T * k, E);
  UOp work, fill;
  if (counting) {
    work = placeholder({ws.elements()}, dtypes::int32, grouped ? 4 : 3);  // after the kernel's other buffers
    const Prefetched parity = prefetch({ws.fill_parity(work)});
    effects.push_back(parity.issued);
    fill = parity.values[0];
  }
  const Prefetched row = prefetch(loaded);
  effects.push_back(row.issued);
  for (int64_t i = 0; i < slots; ++i) {
    const UOp present = expert(i) < E, raw = row.values[static_cast<size_t>(i)];
    if (narrow) {
      key.push_back(where(present, bf16_key(raw, low_id - u32(static_cast<uint64_t>(slot_offset(i)))), none));
      continue;
    }
    const UOp x = raw.cast(dtypes::float32);
    UOp s = x;
    if (grouped) {
      s = where(x.ne(x), x, sigmoid(x) + row.values[static_cast<size_t>(slots + i)]);  // NaN stays NaN: ranked last
      selection.push_back(where(present & s.eq(s), s, ninf));
    }
    score.push_back(s);
  }
  if (ranks_groups(c) && group_size(c) >= W) {
    std::vector<UOp> first_group;  // the experts of group 0's slots
    for (int64_t j = 0; j < group_size(c) / W; ++j) first_group.push_back(expert(j));
    key = kept_wide_keys(c, W, selection, score, first_group);
  } else if (!narrow) {
    for (int64_t i = 0; i < slots; ++i) key.push_back(where(expert(i) < E, rank_key(score[static_cast<size_t>(i)], expert(i)), none));
    if (ranks_groups(c)) {
      const std::vector<UOp> kept = kept_narrow_groups(c, W, lane, selection);
      for (int64_t i = 0; i < slots; ++i) key[static_cast<size_t>(i)] = where(kept[static_cast<size_t>(i)], key[static_cast<size_t>(i)], none);
    }
  }

  // k rounds: the wave's best key wins and leaves the race. Each lane keeps its best keys sorted
  // (at most k of them can win), so its best is its first, and the winning lane (keys are
  // distinct) shifts its list up by one; after round j only the first k - j - 1 keys of a lane
  // can still win. Lane j keeps round j's winner: it writes choice j.
  const int64_t ranked = static_cast<int64_t>(key.size());  // keys a lane ranks
  key = largest_first(std::move(key), static_cast<size_t>(std::min(ranked, k)), none);
  UOp own = none, first = none;
  for (int64_t j = 0; j < k; ++j) {
    const UOp win = wave_reduce(key[0], Op::MAX, W);
    const UOp popped = key[0].eq(win);
    const size_t keep = static_cast<size_t>(std::min<int64_t>(ranked, k - j - 1));
    for (size_t i = 0; i < keep; ++i) key[i] = where(popped, i + 1 < key.size() ? key[i + 1] : none, key[i]);
    key.resize(keep);
    own = j == 0 ? win : where(lane.eq(idx(j)), win, own);
    if (j == 0) first = win;
  }

  const UOp out_id = key_id(own, narrow), writes = live & (lane < k);
  UOp out_w;
  if (grouped) {
    out_w = grouped_weight(c, logits[t * E + out_id.cast(dtypes::index)], writes, W);
  } else {  // softmax as its limit: values equal to the largest weigh exp(0)
    const UOp v = key_score(own, narrow), m = key_score(first, narrow);
    const UOp e = where(v.eq(m), f32(1.0), exp2((v - m) * kLog2e));
    out_w = e / wave_reduce(where(lane < k, e, f32(0.0)), Op::ADD, W);
  }
  effects.push_back(ids[t * k + lane].store(out_id, writes));
  effects.push_back(weights[t * k + lane].store(out_w, writes));
  if (counting) {  // align_count's histogram: order-free atomic adds into the choice's span and chunk rows
    const UOp base = ws.histogram_at(fill);
    effects.push_back(work[idx(ws.filled_parity_index())].store(fill, t.eq(idx(0)) & lane.eq(idx(0))));  // one writer, for align_place
    // Only the lanes that write a choice add: a lane past k that added 0 to one shared counter,
    // as this did until session 34, serialized every token's spare lanes on that address (118
    // against 21 us a call with 16 lanes a token on an H100). The id is held in a register first:
    // when() would recompute the values its effects use under its guard, and refuses a lane
    // operation (the id's wave max) there. (The parity is a register read already, which when()
    // leaves as it is.)
    const UOp counted = held(out_id).cast(dtypes::index);
    const UOp choice = t * k + lane, one = constant(Wide(1), dtypes::int32);
    effects.push_back(when(writes, {atomic(AtomicOp::Add, work[base + (choice / kAlignSpan) * E + counted], one),  // its span's row
                                    atomic(AtomicOp::Add, work[base + idx(ws.chunk_row(0)) + (choice / kAlignChunk) * E + counted], one)}));  // its chunk's row
  }
  const UOp store = group(effects);
  const std::string name = std::string(grouped ? "moe_route_sigmoid_grouped" : "moe_route_softmax") + "_e" + std::to_string(E) + "_k" +
                           std::to_string(k) + (counting ? "_counting" : "");
  std::vector<UOp> ranges{g, lane, wave};
  if (per_wave > 1) ranges.push_back(sub);
  // A dependent launch (KernelInfo): the routing kernels run back to back, each a few microseconds,
  // so the next one's launch and workgroup start overlap this one's end. The sigmoid router that
  // ranks at most 16 keys a lane asks on NVIDIA for 8 workgroups an SM (64 registers a thread):
  // at DeepSeek-V3's shape ptxas gave it 72, 7 workgroups an SM, and T = 16384's 1024 workgroups
  // then needed a second wave on 132 SMs; at 64 it reports no spills (ptxas -v, session 36). More
  // keys a lane might spill there.
  const int64_t occupancy = grouped && tile::is_nvidia(arch) && ranked <= 16 ? 8 : 0;
  return sink({.name = name, .dependent_launch = true, .min_workgroups_per_processor = occupancy}, {store.end(ranges)});
}

}  // namespace

UOp route(const RouteConfig& c, std::string_view arch) { return route_kernel(c, arch, false); }
UOp route_counting(const RouteConfig& c, std::string_view arch) { return route_kernel(c, arch, true); }

}  // namespace weft::moe
