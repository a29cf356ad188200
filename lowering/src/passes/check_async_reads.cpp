// Pass 12, after linearization: every read of shared memory that an asynchronous fill (AMD
// direct-to-LDS `buffer_load ... lds`, NVIDIA `cp.async`; ASYNC_COPY) wrote is covered by a wait
// and a barrier. A kernel that skips one is a weft::Error naming the stage and the read.
//
// The check runs the linear program once, as every wave does (the program is the same for all
// waves), with an abstract state: the fills still pending, each with the LDS elements it writes
// and how far it has got.
//   issued     by an ASYNC_COPY into a LOCAL buffer;
//   landed     after a wait on the issuing wave that leaves no more operations in flight than were
//              issued after the fill. CDNA (wave size 64): vmcnt counts every instruction and
//              completes them in order, so wait_counts{.vm = N} lands a fill with at least N fills
//              after it. NVIDIA (wave size 32): wait_group counts committed groups, so the fill's
//              group must be committed (an async_commit after it) and at least N groups committed
//              after its own. Only fills are counted (other memory instructions also count on
//              CDNA; leaving them out can only make the check stricter);
//   published  after a barrier that follows the wait: every wave has passed its own wait, so the
//              stage is complete for all of them. A fenced barrier (a GRID_BARRIER holds two)
//              publishes every fill (it drains them: LLVM's workgroup release fence waits for
//              vmcnt(0); the CUDA renderer writes cp.async.wait_group 0 before it), except on
//              NVIDIA in a kernel that commits its own groups, whose barriers drain nothing.
// A LOAD (or ATOMIC) of LOCAL elements that a pending fill writes is an error: not landed ("no
// wait covers the fill") or landed but not published ("no barrier after the wait"). The barrier
// is required even when the reading thread issued the fill itself (the tile layer's fills are
// collaborative: a wave reads what other waves filled).
//
// Which elements an access touches: its index's value range [vmin, vmax] (plus its width), with
// the enclosing loops' counters replaced by their values, so that stage `k % 2` and stage
// `(k + 1) % 2` are told apart. A loop runs its first kSimulatedIterations iterations (fewer if
// its trip count is smaller); the state after the loop joins the states after every iteration
// count it may stop at. docs/passes.md states these limits.
//
// Conditional synchronization (a wait or barrier inside a wave-uniform when(...), the ping-pong
// stagger) makes the waves' programs differ, so the check then runs every wave: the wave
// indices (the widx SPECIALs) are bound to each wave's values, a when's condition is evaluated
// per wave, and each wave counts the barriers it has passed. s_barrier pairs the n-th barrier
// each wave executes, so a fill by wave W that W's wait lands after W has passed b barriers is
// published to wave R at barrier number b + 1: R's read must follow R's (b + 1)-th barrier. A
// read needs no publication from a fill it precedes: W's own later fill, or another wave's fill
// issued after its barrier number n + 1 when R's read has completed before R's own: an LDS read
// is done only at a wait_counts{.lgkm = 0} or a fenced barrier of its wave (the back end
// otherwise leaves it in flight until the first use of its value, which may lie past the
// barrier; the emulator's hazard mode reports such a read). Every path through the
// loops' simulated exits is kept apart (the waves' counts differ between them), up to kMaxPaths.
// A barrier whose condition the check cannot decide per wave (a kernel variable) is an error; a
// wait under such a condition counts as absent. The per-wave run also refuses a grid barrier
// that the waves reach having passed different numbers of workgroup barriers (whether or not the
// kernel fills anything): its own barriers would pair with a staggered one.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "graph_utils.h"
#include "weft/dsl/alu.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

constexpr int64_t kSimulatedIterations = 8;
constexpr size_t kMaxPaths = 64;

struct Span {  // elements [lo, hi) of one LOCAL buffer
  int64_t buffer = -1;
  Wide lo = 0, hi = 0;
  bool overlaps(const Span& o) const { return buffer == o.buffer && lo < o.hi && o.lo < hi; }
};

struct PendingFill {
  Span span;
  size_t step = 0;        // the ASYNC_COPY's place in the program
  std::string iteration;  // the loop counters' values when it was issued ("r7=0")
  int64_t batch = 0;      // the run of fills it was issued in (names its stage)
  int64_t younger = 0;    // fills this wave issued after it
  int64_t commits = 0;    // async_commits after it (the first closes its group)
  std::optional<size_t> landed_at;       // the wait that landed it
  std::optional<size_t> missed_at;       // the last wait that did not
  int64_t missed_count = 0;
  bool same(const PendingFill& o) const { return step == o.step && iteration == o.iteration; }
};

struct State {
  std::vector<PendingFill> fills;
};

// The conservative meet of two states: every fill pending in either, at the lesser progress.
State join(const State& a, const State& b) {
  State out = a;
  for (const PendingFill& f : b.fills) {
    auto it = std::find_if(out.fills.begin(), out.fills.end(), [&](const PendingFill& g) { return g.same(f); });
    if (it == out.fills.end()) {
      out.fills.push_back(f);
      continue;
    }
    it->younger = std::min(it->younger, f.younger);
    it->commits = std::min(it->commits, f.commits);
    if (!f.landed_at) {
      it->landed_at.reset();
      if (f.missed_at) it->missed_at = f.missed_at, it->missed_count = f.missed_count;
    }
  }
  return out;
}

class Checker {
 public:
  Checker(const std::vector<LinearOp>& program, bool counts_groups)
      : program_(program),
        groups_(counts_groups),
        // The CUDA renderer drains copies at a fenced barrier only in a kernel that commits no
        // groups of its own (a kernel that does waits for them itself: cuda/render.cpp).
        fence_drains_(!counts_groups || std::none_of(program.begin(), program.end(), [](const LinearOp& s) {
                        return s.kind == LinearOp::Kind::Effect && s.statement().op() == Op::ASYNC_COMMIT;
                      })) {
    std::vector<size_t> open;
    match_.assign(program.size(), 0);
    for (size_t i = 0; i < program.size(); ++i) {
      if (program[i].kind == LinearOp::Kind::LoopBegin) open.push_back(i);
      if (program[i].kind == LinearOp::Kind::LoopEnd) {
        if (open.empty()) throw Error("check_async_reads: a loop end without its beginning at step " + std::to_string(i));
        match_[open.back()] = i;
        open.pop_back();
      }
    }
  }

  void run() { run(0, program_.size(), State{}); }

  // Staggered mode: every wave of the workgroup (its widx values) runs the program. With no
  // fills to check reads against, `track_reads` false: only the barriers are followed.
  void run_waves(bool track_reads = true) {
    track_reads_ = track_reads;
    std::vector<UOp> specials;
    std::vector<UOp> seen;  // the program's SPECIAL steps and the conditions' sources
    for (const LinearOp& step : program_) {
      if (step.op.op() == Op::SPECIAL) seen.push_back(step.op);
      if (step.op.op() == Op::WHEN)
        for (const UOp& u : toposort(step.op.src(0))) seen.push_back(u);
    }
    for (const UOp& u : seen)
        if (u.op() == Op::SPECIAL && u.src(0).op() == Op::CONST && u.arg_as<std::string>().starts_with("widx") &&
            std::none_of(specials.begin(), specials.end(), [&](const UOp& x) { return x.same(u); }))
          specials.push_back(u);
    waves_.assign(1, {});
    for (const UOp& w : specials) {
      std::vector<std::vector<std::pair<UOp, Wide>>> more;
      for (const auto& wave : waves_)
        for (Wide v = 0; v < std::max<Wide>(w.src(0).const_int(), 1); ++v) {
          more.push_back(wave);
          more.back().emplace_back(w, v);
        }
      waves_ = std::move(more);
      if (waves_.size() > 64) throw Error("check_async_reads: more than 64 waves to follow through a staggered schedule");
    }
    memos_.assign(waves_.size(), {});
    Path start;
    start.barriers.assign(waves_.size(), 0);
    for (const Path& p : run_paths(0, program_.size(), {start})) check(p);
  }

 private:
  // Staggered mode: what one path through the program did, every wave's events in order.
  struct WaveFill {
    size_t wave = 0, seq = 0, step = 0;
    Span span;
    std::string iteration;
    int64_t batch = 0, issued_after = 0;  // barriers the wave had passed when it issued the fill
    int64_t younger = 0, commits = 0;
    std::optional<int64_t> landed_after;  // barriers the wave had passed at the wait that landed it
    std::optional<size_t> landed_at, missed_at;
    int64_t missed_count = 0;
  };
  struct WaveRead {
    size_t wave = 0, seq = 0, step = 0;
    Span span;
    std::string iteration;
    int64_t after = 0;  // barriers the wave had passed
    UOp load;
    std::optional<int64_t> done_after;  // barriers the wave had passed at the wait that completed it
  };
  struct Path {
    std::vector<int64_t> barriers;  // per wave
    std::vector<WaveFill> fills;
    std::vector<WaveRead> reads;
    size_t seq = 0;
  };

  std::vector<Path> run_paths(size_t begin, size_t end, std::vector<Path> paths) {
    for (size_t i = begin; i < end; ++i) {
      const LinearOp& step = program_[i];
      if (step.kind == LinearOp::Kind::LoopBegin) {
        paths = loop_paths(i, std::move(paths));
        i = match_[i];
        continue;
      }
      if (step.kind == LinearOp::Kind::BranchBegin || step.kind == LinearOp::Kind::BranchEnd) {
        branch_depth_ += step.kind == LinearOp::Kind::BranchBegin ? 1 : -1;
        continue;
      }
      const bool reads = track_reads_ && step.kind == LinearOp::Kind::Value && (step.op.op() == Op::LOAD || step.op.op() == Op::ATOMIC) &&
                         local_slot(step.op.src(0)) >= 0;
      if (step.kind != LinearOp::Kind::Effect && !reads) continue;
      if (step.kind == LinearOp::Kind::Effect && branch_depth_ > 0 && opsets::sync.contains(step.op.op())) continue;  // as in run()
      if (step.kind == LinearOp::Kind::Effect && step.op.op() != Op::ASYNC_COPY) ++batch_;
      for (Path& p : paths)
        for (wave_ = 0; wave_ < waves_.size(); ++wave_) {
          if (reads) p.reads.push_back({wave_, p.seq++, i, span(step.op.src(0), step.op.dtype().lanes), iteration(), p.barriers[wave_], step.op, std::nullopt});
          else wave_effect(i, step.op, p);
        }
      wave_ = 0;
    }
    return paths;
  }

  std::vector<Path> loop_paths(size_t at, std::vector<Path> paths) {
    const UOp r = program_[at].op;
    const UOp trips = evaluate(r.src(0));
    for (wave_ = 1; wave_ < waves_.size(); ++wave_) {  // the paths assume every wave runs the same iterations
      const UOp other = evaluate(r.src(0));
      if (other.vmin() != trips.vmin() || other.vmax() != trips.vmax())
        throw Error("check_async_reads: the loop at step " + std::to_string(at) + " runs a different number of iterations in " + wave_name(wave_) +
                    " than in " + wave_name(0) + "; a staggered schedule is checked for loops every wave runs alike");
    }
    wave_ = 0;
    const Wide least = std::max<Wide>(trips.vmin(), 0), most = std::min<Wide>(trips.vmax(), kSimulatedIterations);
    std::vector<Path> exits;
    if (least == 0) exits = paths;
    for (Wide it = 0; it < most; ++it) {
      ++batch_;
      bind(r, it);
      paths = run_paths(at + 1, match_[at], std::move(paths));
      unbind();
      ++batch_;
      if (it + 1 >= least) exits.insert(exits.end(), paths.begin(), paths.end());
    }
    if (exits.empty()) exits = std::move(paths);
    if (exits.size() > kMaxPaths)
      throw Error("check_async_reads: a staggered schedule with more than " + std::to_string(kMaxPaths) + " paths through its loops' exits (at step " +
                  std::to_string(at) + ")");
    return exits;
  }

  void wave_effect(size_t at, const UOp& e, Path& p) {
    const size_t w = wave_;
    if (e.op() == Op::WHEN) {
      const UOp cond = evaluate(e.src(0));
      const UOp inner = e.src(1);
      if (cond.op() != Op::CONST) {
        if (inner.op() == Op::BARRIER)
          throw Error("check_async_reads: the barrier under when(" + expr_string(e.src(0), 80) + ") at step " + std::to_string(at) +
                      ": which waves pass it depends on more than the wave indices and loop counters, so its pairing is unknown");
        return;  // a wait that may not run counts as absent
      }
      if (cond.const_int() != 0) wave_effect(at, inner, p);
      return;
    }
    switch (e.op()) {
      case Op::ASYNC_COPY: {
        if (local_slot(e.src(0)) < 0) return;
        for (WaveFill& f : p.fills)
          if (f.wave == w) ++f.younger;
        WaveFill f;
        f.wave = w, f.seq = p.seq++, f.step = at, f.iteration = iteration(), f.batch = batch_, f.issued_after = p.barriers[w];
        f.span = span(e.src(0), e.dtype().lanes);
        Span& stage = batches_[{batch_, f.span.buffer}];
        stage = stage.buffer < 0 ? f.span : Span{f.span.buffer, std::min(stage.lo, f.span.lo), std::max(stage.hi, f.span.hi)};
        p.fills.push_back(std::move(f));
        return;
      }
      case Op::ASYNC_COMMIT:
        for (WaveFill& f : p.fills)
          if (f.wave == w) ++f.commits;
        return;
      case Op::WAIT: {
        if (e.arg_as<WaitArg>().lgkm == 0) complete_reads(p, w);
        const int64_t n = e.arg_as<WaitArg>().vm;
        if (n < 0) return;
        for (WaveFill& f : p.fills) {
          if (f.wave != w || f.landed_at) continue;
          const bool done = groups_ ? f.commits >= 1 && f.commits - 1 >= n : f.younger >= n;
          if (done) f.landed_at = at, f.landed_after = p.barriers[w];
          else f.missed_at = at, f.missed_count = n;
        }
        return;
      }
      case Op::BARRIER: {
        const auto* a = std::get_if<EffectArg>(&e.arg());
        return wave_barrier(at, p, !a || a->value != static_cast<Wide>(BarrierFence::None));
      }
      case Op::GRID_BARRIER:  // two fenced workgroup barriers around the grid's arrival
        if (w == 0) check_grid_pairing(at, p);
        wave_barrier(at, p, true);
        return wave_barrier(at, p, true);
      default: return;
    }
  }

  // A grid barrier's workgroup barriers pair with the n-th barrier of every wave: a wave that
  // reaches it having passed a different number than the others would meet a staggered barrier
  // instead, and its workgroup would arrive at the grid before all its waves got there.
  void check_grid_pairing(size_t at, const Path& p) const {
    for (size_t w = 1; w < waves_.size(); ++w)
      if (p.barriers[w] != p.barriers[0])
        throw Error("check_async_reads: the grid barrier at step " + std::to_string(at) + " is reached by " + wave_name(0) + " after " +
                    std::to_string(p.barriers[0]) + " workgroup barriers and by " + wave_name(w) + " after " + std::to_string(p.barriers[w]) +
                    ": its barriers would pair with a staggered one, and the workgroup would arrive at the grid before all its waves do "
                    "(balance the stagger before the grid barrier)");
  }

  void wave_barrier(size_t at, Path& p, bool fenced) {
    const size_t w = wave_;
    if (fenced) {  // the fence completes the wave's reads, and drains its fills where it does (fence_drains_)
      if (fence_drains_)
        for (WaveFill& f : p.fills)
          if (f.wave == w && !f.landed_at) f.landed_at = at, f.landed_after = p.barriers[w];
      complete_reads(p, w);
    }
    ++p.barriers[w];
  }

  static void complete_reads(Path& p, size_t w) {
    for (WaveRead& r : p.reads)
      if (r.wave == w && !r.done_after) r.done_after = p.barriers[w];
  }

  // Every read against every fill of the elements it reads (the fills it does not precede).
  void check(const Path& p) const {
    for (const WaveRead& r : p.reads)
      for (const WaveFill& f : p.fills) {
        if (!f.span.overlaps(r.span)) continue;
        const bool precedes = f.wave == r.wave ? r.seq < f.seq : r.done_after && f.issued_after > *r.done_after;
        if (precedes || (f.landed_after && *f.landed_after + 1 <= r.after)) continue;
        throw Error(wave_message(r, f));
      }
  }

  std::string wave_name(size_t w) const {
    std::string out;
    for (const auto& [special, v] : waves_[w]) out += (out.empty() ? "" : ", ") + special.arg_as<std::string>() + "=" + wide_to_string(v);
    return "wave " + std::to_string(w) + " (" + out + ")";
  }

  // Why no wait covers fill f (single-program and per-wave checks alike): none after it, or one
  // that leaves too many in flight.
  template <typename Fill>
  std::string uncovered(const Fill& f) const {
    if (!f.missed_at) return "with no wait after the fill that covers it (add wait_counts and a barrier before the read)";
    const std::string counted = groups_ ? (f.commits == 0 ? "its cp.async group is never committed (no async_commit after it)"
                                                          : std::to_string(f.commits - 1) + " cp.async group(s) were committed after its own")
                                        : std::to_string(f.younger) + " fill(s) were issued after it";
    return "with no wait that covers it: the wait at step " + std::to_string(*f.missed_at) + " leaves up to " +
           std::to_string(f.missed_count) + " in flight, but " + counted;
  }

  std::string wave_message(const WaveRead& r, const WaveFill& f) const {
    std::string text = "the read at step " + std::to_string(r.step) + " of the linear program (" + std::string(op_name(r.load.op())) + " " +
                       r.load.dtype().name() + " of LOCAL." + std::to_string(r.span.buffer) + " elements " + range_text(r.span) + where(r.iteration) +
                       ") by " + wave_name(r.wave) + " after its barrier #" + std::to_string(r.after) + " reads " + stage_name(f.batch, f.span.buffer) +
                       ", filled asynchronously by " + wave_name(f.wave) + " at step " + std::to_string(f.step) + where(f.iteration) + ", ";
    if (f.seq > r.seq && f.issued_after > r.after)  // a later fill paired after the read, which is still in flight then
      return text + "after that wave's barrier #" + std::to_string(f.issued_after) + ", but the read is not complete by the reader's barrier #" +
             std::to_string(f.issued_after) + " (no wait_counts{.lgkm = 0} or fenced barrier of the reading wave before it): the fill may "
             "overwrite the elements while they are still being read (a write-after-read race: wait for the reads before the barrier)";
    if (f.seq > r.seq)  // another wave's later fill that the read does not precede
      return text + "after that wave's barrier #" + std::to_string(f.issued_after) + ", which pairs with a barrier at or before the read's: the fill "
                    "may overwrite the elements while they are read (a write-after-read race: the filling wave needs a barrier paired with "
                    "one after the read before it fills)";
    if (f.landed_after)
      return text + "but the wait at step " + std::to_string(*f.landed_at) + " that lands it comes after that wave's barrier #" +
             std::to_string(*f.landed_after) + ", so it is published at barrier #" + std::to_string(*f.landed_after + 1) +
             " (s_barrier pairs each wave's n-th barrier): the reader's barrier #" + std::to_string(r.after) +
             " pairs with a barrier before the wait (pass one barrier more before the read, or move the conditional barrier)";
    return text + uncovered(f);
  }

  State run(size_t begin, size_t end, State s) {
    for (size_t i = begin; i < end; ++i) {
      const LinearOp& step = program_[i];
      switch (step.kind) {
        case LinearOp::Kind::LoopBegin: s = loop(i, std::move(s)); i = match_[i]; break;
        case LinearOp::Kind::LoopEnd: break;
        // A region branch (a warp-specialized role) may not run: its waits and barriers count as
        // absent, its copies as issued.
        case LinearOp::Kind::BranchBegin: ++branch_depth_; break;
        case LinearOp::Kind::BranchEnd: --branch_depth_; break;
        case LinearOp::Kind::Effect:
          if (branch_depth_ == 0 || !opsets::sync.contains(step.op.op())) effect(i, step.op, s);
          break;
        case LinearOp::Kind::Value:
          if ((step.op.op() == Op::LOAD || step.op.op() == Op::ATOMIC) && local_slot(step.op.src(0)) >= 0) read(i, step.op, s);
          break;
      }
    }
    return s;
  }

  State loop(size_t at, State s) {
    const UOp r = program_[at].op;
    const UOp trips = evaluate(r.src(0));
    const Wide least = std::max<Wide>(trips.vmin(), 0), most = std::min<Wide>(trips.vmax(), kSimulatedIterations);
    std::vector<State> exits;
    if (least == 0) exits.push_back(s);
    for (Wide it = 0; it < most; ++it) {
      ++batch_;
      bind(r, it);
      s = run(at + 1, match_[at], std::move(s));
      unbind();
      ++batch_;
      if (it + 1 >= least) exits.push_back(s);
    }
    if (exits.empty()) exits.push_back(s);  // it runs on past what is simulated
    State out = exits[0];
    for (size_t e = 1; e < exits.size(); ++e) out = join(out, exits[e]);
    return out;
  }

  void effect(size_t at, const UOp& e, State& s) {
    switch (e.op()) {
      case Op::ASYNC_COPY: {
        if (local_slot(e.src(0)) < 0) return;
        for (PendingFill& f : s.fills) ++f.younger;
        PendingFill f;
        f.span = span(e.src(0), e.dtype().lanes);
        f.step = at;
        f.iteration = iteration();
        f.batch = batch_;
        Span& stage = batches_[{batch_, f.span.buffer}];
        stage = stage.buffer < 0 ? f.span : Span{f.span.buffer, std::min(stage.lo, f.span.lo), std::max(stage.hi, f.span.hi)};
        s.fills.push_back(std::move(f));
        return;
      }
      case Op::ASYNC_COMMIT:
        ++batch_;
        for (PendingFill& f : s.fills) ++f.commits;
        return;
      case Op::WAIT: {
        ++batch_;
        const int64_t n = e.arg_as<WaitArg>().vm;
        if (n < 0) return;
        for (PendingFill& f : s.fills) {
          if (f.landed_at) continue;
          const bool done = groups_ ? f.commits >= 1 && f.commits - 1 >= n : f.younger >= n;
          if (done) f.landed_at = at;
          else f.missed_at = at, f.missed_count = n;
        }
        return;
      }
      case Op::BARRIER: {
        ++batch_;
        const auto* a = std::get_if<EffectArg>(&e.arg());
        const bool fenced = !a || a->value != static_cast<Wide>(BarrierFence::None);
        std::erase_if(s.fills, [&](const PendingFill& f) { return (fenced && fence_drains_) || f.landed_at; });
        return;
      }
      case Op::GRID_BARRIER:  // fenced workgroup barriers: the landed fills published, the others drained where fences drain
        ++batch_;
        std::erase_if(s.fills, [&](const PendingFill& f) { return fence_drains_ || f.landed_at; });
        return;
      default: return;  // a WHEN (conditional synchronization) counts as absent
    }
  }

  void read(size_t at, const UOp& load, const State& s) {
    const Span touched = span(load.src(0), load.dtype().lanes);
    for (const PendingFill& f : s.fills)
      if (f.span.overlaps(touched)) throw Error(message(at, load, touched, f));
  }

  std::string message(size_t at, const UOp& load, const Span& touched, const PendingFill& f) const {
    std::string text = "the read at step " + std::to_string(at) + " of the linear program (" + std::string(op_name(load.op())) + " " +
                       load.dtype().name() + " of LOCAL." + std::to_string(touched.buffer) + " elements " + range_text(touched) +
                       where(iteration()) + ") reads " + stage_name(f) + ", filled asynchronously at step " + std::to_string(f.step) +
                       where(f.iteration) + ", ";
    if (f.landed_at)
      return text + "without a barrier after the wait at step " + std::to_string(*f.landed_at) +
             " that lands it: the other waves' fills of the stage may still be in flight (add barrier(after wait))";
    return text + uncovered(f);
  }

  // "stage s of shared buffer LOCAL.b (elements [lo, hi))": the elements the fill's run of fills
  // wrote into that buffer, a stage when the buffer is a whole number of them.
  std::string stage_name(const PendingFill& f) const { return stage_name(f.batch, f.span.buffer); }
  std::string stage_name(int64_t batch, int64_t slot) const {
    const Span stage = batches_.at({batch, slot});
    const std::string buffer = "shared buffer LOCAL." + std::to_string(stage.buffer);
    const Wide size = stage.hi - stage.lo;
    const auto total = sizes_.find(stage.buffer);
    if (size > 0 && stage.lo % size == 0 && total != sizes_.end() && total->second % size == 0)
      return "stage " + wide_to_string(stage.lo / size) + " of " + buffer + " (elements " + range_text(stage) + ")";
    return buffer + " elements " + range_text(stage);
  }

  static std::string range_text(const Span& s) { return "[" + wide_to_string(s.lo) + ", " + wide_to_string(s.hi) + ")"; }
  static std::string where(const std::string& iteration) { return iteration.empty() ? "" : " in iteration " + iteration; }

  // The LOCAL buffer an INDEX points into (its slot), or -1.
  int64_t local_slot(const UOp& index) {
    if (index.op() != Op::INDEX) return -1;
    const UOp root = buffer_root(index.src(0));
    if (root.node() == nullptr || root.arg_as<BufferArg>().space != AddrSpace::LOCAL) return -1;
    const int64_t slot = root.arg_as<BufferArg>().slot;
    if (!sizes_.count(slot)) {
      Wide total = 1;
      for (const UOp& d : root.shape()) total = d.op() == Op::CONST ? total * d.const_int() : -1;
      if (total > 0) sizes_[slot] = total;
    }
    return slot;
  }

  Span span(const UOp& index, int64_t lanes) {
    const UOp at = evaluate(index.src(1));
    if (const auto exact = enumerate(at)) return {local_slot(index), exact->first, exact->second + lanes};
    return {local_slot(index), at.vmin(), at.vmax() + lanes};
  }

  // The least and greatest value of an expression whose only variables are thread indices
  // (SPECIALs of a constant size: lanes, waves), over every thread: exact where vmin/vmax are
  // not (a swizzle's XOR of sums). Nothing when it depends on anything else (a kernel variable,
  // a workgroup id of run-time size, memory) or has too many threads to try.
  static std::optional<std::pair<Wide, Wide>> enumerate(const UOp& expr) {
    const std::vector<UOp> order = toposort(expr);
    std::vector<size_t> specials;
    int64_t threads = 1;
    for (size_t i = 0; i < order.size(); ++i) {
      const UOp& u = order[i];
      if (u.op() == Op::SPECIAL && u.src(0).op() == Op::CONST) {
        specials.push_back(i);
        threads *= std::max<Wide>(u.src(0).const_int(), 1);
        if (threads > (1 << 16)) return std::nullopt;
      } else if ((u.op() != Op::CONST && u.op() != Op::CAST && !opsets::alu.contains(u.op())) || !u.dtype().is_integral()) {
        return std::nullopt;
      }
    }
    if (specials.empty()) return std::pair<Wide, Wide>{expr.vmin(), expr.vmax()};
    std::unordered_map<const Node*, size_t> slot;
    for (size_t i = 0; i < order.size(); ++i) slot[order[i].node()] = i;
    // Each node's sources as positions in `order`, and the operand dtype exec_int takes.
    std::vector<std::vector<size_t>> sources(order.size());
    std::vector<DType> operands(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      for (const UOp& x : order[i].src()) sources[i].push_back(slot.at(x.node()));
      operands[i] = opsets::comparison.contains(order[i].op()) ? order[i].src(0).dtype() : order[i].dtype();
    }
    if (std::any_of(sources.begin(), sources.end(), [](const auto& v) { return v.size() > 3; })) return std::nullopt;
    std::vector<Wide> value(order.size(), 0);
    std::pair<Wide, Wide> out{0, 0};
    for (int64_t t = 0; t < threads; ++t) {
      int64_t rest = t;
      for (size_t i : specials) {
        const Wide size = std::max<Wide>(order[i].src(0).const_int(), 1);
        value[i] = rest % size;
        rest /= size;
      }
      for (size_t i = 0; i < order.size(); ++i) {
        const UOp& u = order[i];
        if (u.op() == Op::SPECIAL || u.op() == Op::CONST) {
          if (u.op() == Op::CONST) value[i] = u.const_int();
          continue;
        }
        std::array<Wide, 3> args{};
        for (size_t a = 0; a < sources[i].size(); ++a) args[a] = value[sources[i][a]];
        if (u.op() == Op::CAST) {
          value[i] = args[0];
          continue;
        }
        const auto v = exec_int(u.op(), operands[i], std::span<const Wide>(args.data(), sources[i].size()));
        if (!v) return std::nullopt;
        value[i] = *v;
      }
      const Wide v = value[slot.at(expr.node())];
      out = t == 0 ? std::pair<Wide, Wide>{v, v} : std::pair<Wide, Wide>{std::min(out.first, v), std::max(out.second, v)};
    }
    return out;
  }

  // The expression with the simulated loops' counters replaced by their values, constants
  // folded: its vmin/vmax are then the range over the remaining (thread) variables.
  UOp evaluate(const UOp& u) {
    auto& memo = memos_[wave_];
    if (auto it = memo.find(u.node()); it != memo.end()) return it->second;
    UOp out = u;
    if (u.op() == Op::RANGE) {
      for (const auto& [r, v] : env_)
        if (r.same(u)) out = constant(v, u.dtype());
    } else if (u.op() == Op::SPECIAL) {
      if (wave_ < waves_.size())
        for (const auto& [w, v] : waves_[wave_])
          if (w.same(u)) out = constant(v, u.dtype());
    } else if (opsets::alu.contains(u.op()) || u.op() == Op::CAST) {
      std::vector<UOp> src;
      bool changed = false, constants = true;
      for (const UOp& x : u.src()) {
        src.push_back(evaluate(x));
        changed = changed || !src.back().same(x);
        constants = constants && src.back().op() == Op::CONST && src.back().dtype().is_integral();
      }
      if (changed) out = fold(u, src, constants);
    }
    memos_[wave_].emplace(u.node(), out);
    return out;
  }

  static UOp fold(const UOp& u, const std::vector<UOp>& src, bool constants) {
    if (constants && u.dtype().is_integral()) {
      if (u.op() == Op::CAST) {
        const Wide v = src[0].const_int();
        if (v >= u.dtype().min_value() && v <= u.dtype().max_value()) return constant(v, u.dtype());
      } else {
        std::vector<Wide> args;
        for (const UOp& x : src) args.push_back(x.const_int());
        const DType operand = opsets::comparison.contains(u.op()) ? src[0].dtype() : u.dtype();
        if (auto v = exec_int(u.op(), operand, args)) return constant(*v, u.dtype());
      }
    }
    return UOp::make(u.op(), u.dtype(), src, u.arg());
  }

  void bind(const UOp& r, Wide v) {
    env_.emplace_back(r, v);
    for (auto& m : memos_) m.clear();
  }
  void unbind() {
    env_.pop_back();
    for (auto& m : memos_) m.clear();
  }
  std::string iteration() const {
    std::string out;
    for (const auto& [r, v] : env_) out += (out.empty() ? "r" : ", r") + std::to_string(range_id(r)) + "=" + wide_to_string(v);
    return out;
  }

  const std::vector<LinearOp>& program_;
  const bool groups_;
  const bool fence_drains_;  // a fenced barrier lands every fill
  std::vector<size_t> match_;
  std::vector<std::pair<UOp, Wide>> env_;
  std::vector<std::unordered_map<const Node*, UOp>> memos_ = std::vector<std::unordered_map<const Node*, UOp>>(1);  // per wave
  std::vector<std::vector<std::pair<UOp, Wide>>> waves_;  // staggered mode: each wave's widx values
  int branch_depth_ = 0;  // region branches open at the step being checked
  bool track_reads_ = true;
  size_t wave_ = 0;
  int64_t batch_ = 0;
  std::map<std::pair<int64_t, int64_t>, Span> batches_;  // (batch, buffer) -> elements written
  std::map<int64_t, Wide> sizes_;                        // LOCAL slot -> elements
};

}  // namespace

void check_async_reads(const std::vector<LinearOp>& program, int64_t wave_size) {
  const bool has_fills = std::any_of(program.begin(), program.end(), [](const LinearOp& s) { return s.op.op() == Op::ASYNC_COPY; });
  const bool meets_grid = std::any_of(program.begin(), program.end(), [](const LinearOp& s) {
    return s.kind == LinearOp::Kind::Effect && s.op.op() == Op::GRID_BARRIER;
  });
  if (!has_fills && !meets_grid) return;
  // A wait or barrier under when(...) (resolve_when leaves WHEN around one of them only).
  const bool staggered = std::any_of(program.begin(), program.end(), [](const LinearOp& s) {
    return s.kind == LinearOp::Kind::Effect && s.op.op() == Op::WHEN && (s.op.src(1).op() == Op::BARRIER || s.op.src(1).op() == Op::WAIT);
  });
  Checker checker(program, wave_size == 32);
  if (staggered) checker.run_waves(has_fills);  // (with no fills: only the barriers, for the grid barriers' pairing)
  else if (has_fills) checker.run();
}

}  // namespace weft::lower
