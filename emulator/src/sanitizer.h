// Hazard mode: the checks LaunchOptions::sanitize turns on, run around every step of every wave
// of a workgroup (one Sanitizer per host thread, reset for each workgroup it runs).
//
// The model (docs/emulator.md, "Hazard mode"): every memory instruction is an operation that
// stays outstanding on its counter (footprint.h) until the issuing wave's s_waitcnt covers it;
// its destination registers are pending until then, and reading or overwriting one is a read
// before wait. Epochs count the workgroup's s_barrier releases; an operation on LDS spans the
// epochs from its issue to its completion, and two operations of different waves on one byte,
// one of them a write, race when their spans share an epoch. The data itself moves at issue, as
// in the plain mode, so a run goes on after a report and finds the next one.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "weft/emulator/footprint.h"
#include "wave.h"
#include "weft/emulator/hazards.h"

namespace weft::emu {

// The lane a report names: one lane, or, for a span merged from the lanes of one DS instruction,
// the first active lane whose bytes (`size` at addr[l] + each offset) hold the address (looked
// up only when a report is made).
struct LaneOf {
  explicit LaneOf(int one) : lane(one) {}
  LaneOf(const uint32_t* addr, std::span<const uint32_t> offsets, uint32_t size, uint64_t exec)
      : addr(addr), offsets(offsets), size(size), exec(exec) {}
  int at(uint64_t address) const;

  int lane = -1;
  const uint32_t* addr = nullptr;
  std::span<const uint32_t> offsets;
  uint32_t size = 0;
  uint64_t exec = 0;
};

class Sanitizer {
  struct WaveState;
  struct StepFacts;

 public:
  explicit Sanitizer(const Program& program);

  void start_workgroup(Workgroup& wg, std::vector<Wave>& waves);
  // Around one step of one wave: `before` checks what the step reads and overwrites and opens its
  // memory operation; `after` marks what it wrote, makes a load's destination pending, and lets
  // s_waitcnt retire operations.
  struct Checked {  // what `before` looked up, handed to `after`
    WaveState* wave;
    const StepFacts* facts;
    bool memory_operation() const;  // whether the step issues one (reads or writes memory)
  };
  [[gnu::always_inline]] Checked before(const Exec& e, int step);  // `step`: the index of the step in the program
  [[gnu::always_inline]] void after(const Checked& checked);
  // Every LDS byte range a step reads or writes (Exec::lds_read / lds_write in hazard mode, or
  // the merged spans of a DS instruction's lanes: Exec::sanitized_lds_lanes); a read of bytes
  // nothing wrote is reported here too. `lane` names the lane in reports.
  void lds_access(const Exec& e, uint64_t address, uint32_t bytes, const LaneOf& lane, bool write);
  // The accesses of a DS instruction's active lanes, checked as the merged runs of the bytes they
  // touch: lds_access once per run. False, having checked nothing, unless every access is whole
  // aligned dwords inside the first `lds_bytes` of LDS (the per-lane path then checks bytes and
  // reports what lies outside).
  bool lds_lanes(const Exec& e, const LaneOf& lanes, uint64_t lds_bytes, bool write);
  void barrier_released() { ++epoch_; }
  void wave_ended(const Wave& w);

  void report_out_of_bounds(const Exec& e, const std::string& what);
  // The reports so far (each pair of PCs once, with its count), moved out.
  std::vector<Hazard> take_reports();

 private:
  static constexpr uint32_t kInFlight = UINT32_MAX;  // an operation's end epoch before it completes

  // Per LDS dword: the last operation that wrote it and the last two that read it (of different
  // waves where possible), as ids, each with the bytes of the dword it touched; and which bytes
  // anything ever wrote. One 16-byte cell per 4 bytes of LDS keeps the shadow of a 16-byte access
  // in one cache line. A write that leaves some of the last writer's bytes alone replaces it all
  // the same: a race with those bytes can be missed, never invented.
  // The cell is two 64-bit words, so that a new one is built in registers and stored whole: one
  // assembled field by field in memory and then read as 16 bytes stalls store forwarding (that
  // stall was a third of matmul_relu's hazard-mode time).
  class LdsShadow {
   public:
    uint32_t write() const { return static_cast<uint32_t>(ids_); }
    uint8_t write_bytes() const { return byte(kWriteBytes); }
    uint8_t written() const { return byte(kWritten); }  // bytes anything ever wrote
    // The two read slots, 0 and 1.
    uint32_t read(int slot) const { return slot ? static_cast<uint32_t>(rest_) : static_cast<uint32_t>(ids_ >> 32); }
    uint8_t read_bytes(int slot) const { return byte(slot ? kRead1Bytes : kRead0Bytes); }  // bit i: byte i of the dword

    void set_write(uint32_t op, uint8_t bytes) {
      ids_ = (ids_ & ~uint64_t{0xffffffff}) | op;
      set_byte(kWriteBytes, bytes);
      set_byte(kWritten, static_cast<uint8_t>(written() | bytes));
    }
    void set_read(int slot, uint32_t op, uint8_t bytes) {
      if (slot) rest_ = (rest_ & ~uint64_t{0xffffffff}) | op;
      else ids_ = (ids_ & 0xffffffff) | (uint64_t{op} << 32);
      set_byte(slot ? kRead1Bytes : kRead0Bytes, bytes);
    }
    bool operator==(const LdsShadow&) const = default;
    // Word by word, spelled out: an implicit copy moves the cell as one 16-byte vector, which the
    // compiler then assembles through the stack (the stall above).
    LdsShadow() = default;
    LdsShadow(const LdsShadow& o) : ids_(o.ids_), rest_(o.rest_) {}
    LdsShadow& operator=(const LdsShadow& o) {
      ids_ = o.ids_;
      rest_ = o.rest_;
      return *this;
    }

   private:
    // The byte fields' shifts in rest_, above read slot 1's id.
    static constexpr int kWriteBytes = 32, kRead0Bytes = 40, kRead1Bytes = 48, kWritten = 56;
    uint8_t byte(int shift) const { return static_cast<uint8_t>(rest_ >> shift); }
    void set_byte(int shift, uint8_t v) { rest_ = (rest_ & ~(uint64_t{0xff} << shift)) | (uint64_t{v} << shift); }
    uint64_t ids_ = 0;   // the writer, read slot 0 << 32
    uint64_t rest_ = 0;  // read slot 1, then the byte masks
  };
  static_assert(sizeof(LdsShadow) == 16);
  // What before() and after() need of each step, flat: its footprint's register ranges (in
  // ranges_ from `first`: VGPR uses, VGPR defs, SGPR uses, SGPR defs) and its memory operation.
  struct StepFacts {
    uint32_t first = 0;
    uint8_t vgpr_uses = 0, vgpr_defs = 0, sgpr_uses = 0, sgpr_defs = 0;
    MemoryCounter counter = MemoryCounter::None;
    bool lds_dma = false, atomic = false;
    bool waitcnt = false;
    uint32_t wait_vm = 0, wait_lgkm = 0;  // s_waitcnt's counts
    uint8_t carries = 0;                  // footprint.h's Carry, at most two per instruction
    Carry carry[2];
  };
  std::span<const RegisterRange> vgpr_uses(const StepFacts& f) const { return {ranges_.data() + f.first, f.vgpr_uses}; }
  std::span<const RegisterRange> vgpr_defs(const StepFacts& f) const { return {ranges_.data() + f.first + f.vgpr_uses, f.vgpr_defs}; }
  std::span<const RegisterRange> sgpr_uses(const StepFacts& f) const {
    return {ranges_.data() + f.first + f.vgpr_uses + f.vgpr_defs, f.sgpr_uses};
  }
  std::span<const RegisterRange> sgpr_defs(const StepFacts& f) const {
    return {ranges_.data() + f.first + f.vgpr_uses + f.vgpr_defs + f.sgpr_uses, f.sgpr_defs};
  }

  // One memory operation: who issued it, where, its lanes, and the epochs it spans.
  struct Operation {
    int wave = 0;
    int step = 0;
    uint64_t lanes = 0;
    uint32_t issued = 0, completed = kInFlight;
    MemoryCounter counter = MemoryCounter::None;
    bool lds_dma = false;
    bool atomic = false;
  };
  struct WaveState {
    // Per VGPR/AGPR, side by side (a step checks both): the lanes something wrote, and the
    // operation whose result lands there (0: none).
    struct Vgpr {
      uint64_t written = 0;
      uint32_t pending = 0;
    };
    std::vector<Vgpr> v;
    uint32_t pending_s[128] = {};
    std::deque<uint32_t> vm, lgkm;    // outstanding operations in issue order
    uint64_t exec_at_issue = 0;
    uint64_t carried_written[2] = {};  // the written lanes of the step's carry sources, before it ran
    uint32_t current = 0;             // the operation of the step being run (0: none)
  };

  // The registers a step reads (pending: a read before wait; unwritten lanes: an uninitialized
  // read) and overwrites (pending: a load still in flight would land on them later).
  [[gnu::always_inline]] inline void check_registers(const Exec& e, int step, const StepFacts& f, WaveState& ws);
  [[gnu::cold, gnu::noinline]] void report_pending(const Exec& e, int step, const WaveState& ws, uint32_t op, uint32_t index, bool scalar,
                                                   bool overwrite);
  [[gnu::cold, gnu::noinline]] void report_unwritten(const Exec& e, int step, uint32_t v, uint64_t unwritten);
  void open_operation(const Exec& e, int step, const StepFacts& f, WaveState& ws);
  void retire(uint32_t op);
  void wait(WaveState& ws, uint32_t vmcnt, uint32_t lgkmcnt);
  // Which counter value would have covered `op`: the operations issued after it on its queue.
  std::string needed_wait(const WaveState& ws, uint32_t op) const;
  // lds_lanes' merged runs of one DS step, relative to the first active lane's address, with the
  // pattern of lanes they were built for.
  struct LaneRuns {
    uint64_t exec = 0;  // 0: none built
    uint32_t size = 0, base_mod4 = 0;
    std::vector<uint32_t> offsets;
    uint32_t delta[kLanes] = {};  // an active lane's address less the first active lane's; 0 for the others
    std::vector<std::pair<int64_t, int64_t>> runs;
  };
  static bool build_lane_runs(const LaneOf& lanes, uint32_t base, LaneRuns& out);
  // The shadow of dwords [first, last) checked and updated for one access; mask_of(d): the bytes
  // of dword d it touches.
  template <typename MaskOf>
  void shadow_dwords(const Exec& e, uint64_t first, uint64_t last, MaskOf mask_of, const LaneOf& lane, bool write, uint32_t me);
  // One dword of an access: `bytes` are the bytes of it the access touches, `address` the first.
  // The shadow travels by value (two registers), never through memory: see LdsShadow.
  void check_lds_dword(const Exec& e, uint64_t address, LdsShadow shadow, uint8_t bytes, const LaneOf& lane, bool write, uint32_t me);
  // Whether `other`'s access to a byte races with `mine`'s: different waves, not both atomics, and
  // spans that share an epoch (`mine` is in flight in this one).
  bool races(const Operation& mine, const Operation& other) const {
    return other.wave != mine.wave && other.completed >= epoch_ && !(other.atomic && mine.atomic);
  }
  [[gnu::cold, gnu::noinline]] void report_lds_unwritten(const Exec& e, uint64_t address, uint8_t unwritten, const LaneOf& lane, uint32_t me);
  [[gnu::cold, gnu::noinline]] void report_lds_race(const Exec& e, uint64_t address, const LaneOf& lane, bool write, uint32_t me, uint32_t other,
                                                    bool other_wrote);
  // An access to bytes the same wave's direct-to-LDS load `fill` has yet to fill.
  [[gnu::cold, gnu::noinline]] void report_lds_unfilled(const Exec& e, uint64_t address, const LaneOf& lane, bool write, uint32_t me,
                                                        uint32_t fill);
  LdsShadow with_read(LdsShadow shadow, uint8_t bytes, uint32_t me) const;  // the shadow after this read
  std::string ordering(const Operation& other) const;

  struct Report {
    HazardKind kind;
    int step, other_step;
    int wave, other_wave, lane;
    uint64_t address;
    std::string detail;
  };
  // Whether (kind, step, other step) was reported already; if so, counts one more occurrence.
  // Checked before a report's text is built: a hazard in a loop repeats thousands of times.
  bool seen(HazardKind kind, int step, int other_step);
  void report(const Exec& e, const Report& r);
  std::string where(int step) const;

  const Program& program_;
  std::vector<StepFacts> steps_;
  std::vector<RegisterRange> ranges_;
  Workgroup* wg_ = nullptr;
  std::vector<WaveState> waves_;
  std::vector<Operation> ops_;  // by id; 0 is no operation
  uint32_t epoch_ = 0;
  std::vector<LdsShadow> lds_;
  std::vector<LaneRuns> lane_runs_;  // by step

  std::vector<Hazard> hazards_;
  std::map<std::tuple<int, int, int>, size_t> seen_;  // (kind, step, other step) -> index in hazards_
};

// The hot path of hazard mode, inline in the executor's loop (a call per step cost a tenth of
// a VALU loop's time).

// Plain loops over the step's registers, the reports out of line (they build text only for the
// first occurrence).
inline void Sanitizer::check_registers(const Exec& e, int step, const StepFacts& f, WaveState& ws) {
  const uint64_t exec = e.w.exec();
  const bool in_flight = !ws.vm.empty() || !ws.lgkm.empty();  // else no register is pending
  for (const RegisterRange& r : vgpr_uses(f))
    for (uint32_t v = r.first; v < r.first + r.count && v < 512; ++v) {
      const WaveState::Vgpr& reg = ws.v[v];
      if (reg.pending) report_pending(e, step, ws, reg.pending, v, false, false);
      else if (const uint64_t unwritten = exec & ~reg.written) report_unwritten(e, step, v, unwritten);
    }
  if (!in_flight) return;
  for (int i = 0; i < f.carries; ++i)  // a carry source is read all the same: it must have landed
    if (const uint32_t op = ws.v[f.carry[i].from].pending) report_pending(e, step, ws, op, f.carry[i].from, false, false);
  for (const RegisterRange& r : vgpr_defs(f))
    for (uint32_t v = r.first; v < r.first + r.count && v < 512; ++v)
      if (const uint32_t op = ws.v[v].pending; op && op != ws.current) report_pending(e, step, ws, op, v, false, true);
  for (const RegisterRange& r : sgpr_uses(f))
    for (uint32_t x = r.first; x < r.first + r.count && x < 128; ++x)
      if (const uint32_t op = ws.pending_s[x]) report_pending(e, step, ws, op, x, true, false);
  for (const RegisterRange& r : sgpr_defs(f))
    for (uint32_t x = r.first; x < r.first + r.count && x < 128; ++x)
      if (const uint32_t op = ws.pending_s[x]) report_pending(e, step, ws, op, x, true, true);
}

inline bool Sanitizer::Checked::memory_operation() const { return facts->counter != MemoryCounter::None; }

inline Sanitizer::Checked Sanitizer::before(const Exec& e, int step) {
  WaveState& ws = waves_[static_cast<size_t>(e.w.id)];
  const StepFacts& f = steps_[static_cast<size_t>(step)];
  const Checked checked{&ws, &f};
  ws.current = 0;
  check_registers(e, step, f, ws);
  for (int i = 0; i < f.carries; ++i) ws.carried_written[i] = ws.v[f.carry[i].from].written;
  ws.exec_at_issue = e.w.exec();
  if (f.counter != MemoryCounter::None) open_operation(e, step, f, ws);
  return checked;
}

inline void Sanitizer::after(const Checked& checked) {
  WaveState& ws = *checked.wave;
  const StepFacts& f = *checked.facts;
  for (const RegisterRange& r : vgpr_defs(f))
    for (uint32_t v = r.first; v < r.first + r.count && v < 512; ++v) {
      ws.v[v].written |= ws.exec_at_issue;
      if (ws.current) ws.v[v].pending = ws.current;
    }
  for (int i = 0; i < f.carries; ++i)  // in the active lanes, written only where the source was
    ws.v[f.carry[i].to].written &= ws.carried_written[i] | ~ws.exec_at_issue;
  if (ws.current)
    for (const RegisterRange& r : sgpr_defs(f))
      for (uint32_t x = r.first; x < r.first + r.count && x < 128; ++x) ws.pending_s[x] = ws.current;
  if (f.waitcnt) wait(ws, f.wait_vm, f.wait_lgkm);
  ws.current = 0;
}

}  // namespace weft::emu
