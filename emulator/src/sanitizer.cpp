// Hazard mode's checks (sanitizer.h states the model).
#include "sanitizer.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <utility>

#include "isa_fields.h"

namespace weft::emu {

const char* hazard_kind_name(HazardKind kind) {
  switch (kind) {
    case HazardKind::OutOfBounds: return "out of bounds";
    case HazardKind::LdsRace: return "LDS race";
    case HazardKind::ReadBeforeWait: return "read before wait";
    case HazardKind::UninitializedRead: return "uninitialized read";
  }
  return "hazard";
}

namespace {

std::string hazard_list(const std::vector<Hazard>& hazards, uint64_t schedule_seed) {
  std::string s = "hazard mode found " + std::to_string(hazards.size()) + (hazards.size() == 1 ? " hazard" : " hazards") +
                  " (schedule seed " + std::to_string(schedule_seed) + "):";
  for (const Hazard& h : hazards) {
    s += "\n  " + h.message;
    if (h.occurrences > 1) s += " [seen " + std::to_string(h.occurrences) + " times]";
  }
  return s;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// "v5", "a3", "s[4:5]"'s first register "s4", "vcc".
std::string vector_register_name(uint32_t r) { return (r >= 256 ? "a" : "v") + std::to_string(r % 256); }
std::string scalar_register_name(uint32_t r) { return r == 106 ? "vcc" : r == 107 ? "vcc_hi" : "s" + std::to_string(r); }

const char* mnemonic_of(const Step& s) { return s.inst.info ? s.inst.info->mnemonic : ".long"; }

bool is_waitcnt(const Step& s) { return s.inst.info && std::string_view(s.inst.info->mnemonic) == "s_waitcnt"; }


}  // namespace

HazardError::HazardError(std::vector<Hazard> hazards, uint64_t schedule_seed)
    : Error(hazard_list(hazards, schedule_seed)), hazards_(std::move(hazards)) {}

Sanitizer::Sanitizer(const Program& program) : program_(program) {
  steps_.reserve(program.steps.size());
  for (const Step& s : program.steps) {
    const Footprint f = footprint(s.inst);
    StepFacts facts;
    facts.first = static_cast<uint32_t>(ranges_.size());
    facts.vgpr_uses = static_cast<uint8_t>(f.vgpr_uses.size());
    facts.vgpr_defs = static_cast<uint8_t>(f.vgpr_defs.size());
    facts.sgpr_uses = static_cast<uint8_t>(f.sgpr_uses.size());
    facts.sgpr_defs = static_cast<uint8_t>(f.sgpr_defs.size());
    for (const auto* list : {&f.vgpr_uses, &f.vgpr_defs, &f.sgpr_uses, &f.sgpr_defs}) ranges_.insert(ranges_.end(), list->begin(), list->end());
    facts.carries = static_cast<uint8_t>(std::min<size_t>(f.carries.size(), 2));
    std::copy_n(f.carries.begin(), facts.carries, facts.carry);
    facts.counter = f.counter;
    facts.lds_dma = f.lds_dma;
    facts.atomic = f.atomic;
    facts.waitcnt = is_waitcnt(s);
    if (facts.waitcnt) {
      facts.wait_vm = fields::waitcnt_vm(fields::simm16(s.inst));
      facts.wait_lgkm = fields::waitcnt_lgkm(fields::simm16(s.inst));
    }
    steps_.push_back(facts);
  }
}

void Sanitizer::start_workgroup(Workgroup& wg, std::vector<Wave>& waves) {
  wg_ = &wg;
  waves_.resize(waves.size());
  for (size_t i = 0; i < waves.size(); ++i) {
    WaveState& ws = waves_[i];
    ws.v.assign(512, {});
    ws.v[0].written = waves[i].exec();  // the work-item ids
    std::fill(std::begin(ws.pending_s), std::end(ws.pending_s), 0u);
    ws.vm.clear();
    ws.lgkm.clear();
    ws.current = 0;
  }
  ops_.assign(1, Operation{});
  epoch_ = 0;
  lds_.assign((wg.lds.size() + 3) / 4, LdsShadow{});
  lane_runs_.resize(program_.steps.size());
}

std::string Sanitizer::where(int step) const {
  const Step& s = program_.steps[static_cast<size_t>(step)];
  return "PC " + hex(s.offset) + " (" + mnemonic_of(s) + ")";
}

bool Sanitizer::seen(HazardKind kind, int step, int other_step) {
  const auto it = seen_.find(std::make_tuple(static_cast<int>(kind), step, other_step));
  if (it == seen_.end()) return false;
  ++hazards_[it->second].occurrences;
  return true;
}

void Sanitizer::report(const Exec& e, const Report& r) {
  seen_[std::make_tuple(static_cast<int>(r.kind), r.step, r.other_step)] = hazards_.size();
  Hazard h;
  h.kind = r.kind;
  h.kernel = program_.kernel;
  std::copy(std::begin(e.wg.id), std::end(e.wg.id), h.workgroup);
  const Step& s = program_.steps[static_cast<size_t>(r.step)];
  h.pc = s.offset;
  h.instruction = mnemonic_of(s);
  h.wave = r.wave;
  h.lane = r.lane;
  if (r.other_step >= 0) {
    const Step& o = program_.steps[static_cast<size_t>(r.other_step)];
    h.other_pc = o.offset;
    h.other_instruction = mnemonic_of(o);
  }
  h.other_wave = r.other_wave;
  h.address = r.address;
  h.message = std::string(hazard_kind_name(r.kind)) + ": kernel " + program_.kernel + ", workgroup (" + std::to_string(h.workgroup[0]) +
              "," + std::to_string(h.workgroup[1]) + "," + std::to_string(h.workgroup[2]) + "), wave " + std::to_string(r.wave) +
              (r.lane >= 0 ? ", lane " + std::to_string(r.lane) : "") + ": " + where(r.step) + " " + r.detail;
  hazards_.push_back(std::move(h));
}

void Sanitizer::report_out_of_bounds(const Exec& e, const std::string& what) {
  Hazard h;
  h.kind = HazardKind::OutOfBounds;
  h.kernel = program_.kernel;
  std::copy(std::begin(e.wg.id), std::end(e.wg.id), h.workgroup);
  if (e.step) {
    h.pc = e.step->offset;
    h.instruction = mnemonic_of(*e.step);
  }
  h.wave = e.w.id;
  h.message = std::string(hazard_kind_name(h.kind)) + ": " + what;
  hazards_.push_back(std::move(h));
}

std::vector<Hazard> Sanitizer::take_reports() {
  seen_.clear();
  return std::exchange(hazards_, {});
}

std::string Sanitizer::needed_wait(const WaveState& ws, uint32_t op) const {
  const Operation& o = ops_[op];
  if (o.counter == MemoryCounter::Smem || o.counter == MemoryCounter::Flat) return "lgkmcnt(0)";
  const std::deque<uint32_t>& q = o.counter == MemoryCounter::Lgkm ? ws.lgkm : ws.vm;
  const auto at = std::find(q.begin(), q.end(), op);
  const auto after = q.end() - at - 1;
  return std::string(o.counter == MemoryCounter::Lgkm ? "lgkmcnt(" : "vmcnt(") + std::to_string(after) + ")";
}

void Sanitizer::report_pending(const Exec& e, int step, const WaveState& ws, uint32_t op, uint32_t index, bool scalar, bool overwrite) {
  const Operation& o = ops_[op];
  if (seen(HazardKind::ReadBeforeWait, step, o.step)) return;
  const uint64_t exec = e.w.exec();
  const uint64_t lanes = o.lanes & exec ? o.lanes & exec : o.lanes;
  const std::string reg = scalar ? scalar_register_name(index) : vector_register_name(index);
  report(e, {HazardKind::ReadBeforeWait, step, o.step, e.w.id, -1, lanes ? std::countr_zero(lanes) : -1, 0,
             std::string(overwrite ? "overwrites " : "reads ") + reg + (overwrite ? ", the destination of " : ", which ") + "the load at " +
                 where(o.step) + (overwrite ? " still in flight" : " writes") + ", before an s_waitcnt covers it (" + needed_wait(ws, op) +
                 " would)"});
}

void Sanitizer::report_unwritten(const Exec& e, int step, uint32_t v, uint64_t unwritten) {
  if (seen(HazardKind::UninitializedRead, step, -1)) return;
  report(e, {HazardKind::UninitializedRead, step, -1, e.w.id, -1, std::countr_zero(unwritten), 0,
             "reads " + vector_register_name(v) + ", which nothing wrote in this lane"});
}

// Opens the memory operation of a step (before() found its counter).
void Sanitizer::open_operation(const Exec& e, int step, const StepFacts& f, WaveState& ws) {
  const uint32_t id = static_cast<uint32_t>(ops_.size());
  ops_.push_back({e.w.id, step, ws.exec_at_issue, epoch_, kInFlight, f.counter, f.lds_dma, f.atomic});
  ws.current = id;
  if (f.counter == MemoryCounter::Vm || f.counter == MemoryCounter::Flat) ws.vm.push_back(id);
  if (f.counter != MemoryCounter::Vm) ws.lgkm.push_back(id);
}

void Sanitizer::wait(WaveState& ws, uint32_t vmcnt, uint32_t lgkmcnt) {
  while (ws.vm.size() > vmcnt) retire(ws.vm.front());
  // Scalar memory (and FLAT, on lgkmcnt) returns out of order: while one is outstanding, only
  // lgkmcnt(0) says which operations are done.
  const bool unordered = std::any_of(ws.lgkm.begin(), ws.lgkm.end(), [&](uint32_t op) { return ops_[op].counter != MemoryCounter::Lgkm; });
  if (unordered && lgkmcnt > 0) return;
  while (ws.lgkm.size() > lgkmcnt) retire(ws.lgkm.front());
}

void Sanitizer::retire(uint32_t op) {
  Operation& o = ops_[op];
  WaveState& ws = waves_[static_cast<size_t>(o.wave)];
  o.completed = epoch_;
  for (std::deque<uint32_t>* q : {&ws.vm, &ws.lgkm}) {
    if (q->empty()) continue;
    if (q->front() == op) q->pop_front();  // the usual case: the oldest retires
    else if (const auto it = std::find(q->begin(), q->end(), op); it != q->end()) q->erase(it);
  }
  const StepFacts& f = steps_[static_cast<size_t>(o.step)];
  for (const RegisterRange& r : vgpr_defs(f))
    for (uint32_t v = r.first; v < r.first + r.count && v < 512; ++v)
      if (ws.v[v].pending == op) ws.v[v].pending = 0;
  for (const RegisterRange& r : sgpr_defs(f))
    for (uint32_t x = r.first; x < r.first + r.count && x < 128; ++x)
      if (ws.pending_s[x] == op) ws.pending_s[x] = 0;
}

void Sanitizer::wave_ended(const Wave& w) {
  WaveState& ws = waves_[static_cast<size_t>(w.id)];
  while (!ws.vm.empty()) retire(ws.vm.front());
  while (!ws.lgkm.empty()) retire(ws.lgkm.front());
}

int LaneOf::at(uint64_t address) const {
  if (lane >= 0 || !addr) return lane;
  for (uint64_t m = exec; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    for (const uint32_t off : offsets) {
      const uint32_t lo = addr[l] + off;
      if (address >= lo && address < uint64_t{lo} + size) return l;
    }
  }
  return -1;
}

// The runs of bytes a DS step's lanes touch, built lane by lane in order: a lane's span extends
// the current run when it starts where the run ends, and is dropped when the run holds it
// (broadcasts); otherwise it starts a new run. Lanes mostly follow one of those patterns, so a
// few runs are left to sort and merge. Kept relative to the first active lane's address; false
// unless every span is whole aligned dwords below 4 GiB.
bool Sanitizer::build_lane_runs(const LaneOf& lanes, uint32_t base, LaneRuns& out) {
  struct Run {
    uint32_t lo, hi;
  };
  Run runs[2 * kLanes];
  int n = 0;
  for (const uint32_t off : lanes.offsets)
    for (uint64_t m = lanes.exec; m; m &= m - 1) {
      const uint32_t lo = lanes.addr[std::countr_zero(m)] + off, hi = lo + lanes.size;
      if ((lo % 4) || hi < lo) return false;  // not whole dwords, or past 4 GiB
      if (n && lo == runs[n - 1].hi) runs[n - 1].hi = hi;
      else if (!n || lo < runs[n - 1].lo || hi > runs[n - 1].hi) runs[n++] = {lo, hi};
    }
  if (n > 1) std::sort(runs, runs + n, [](const Run& a, const Run& b) { return a.lo < b.lo; });
  out.runs.clear();
  for (int i = 0; i < n;) {
    Run merged = runs[i++];
    while (i < n && runs[i].lo <= merged.hi) merged.hi = std::max(merged.hi, runs[i++].hi);
    out.runs.push_back({int64_t{merged.lo} - base, int64_t{merged.hi} - base});
  }
  return true;
}

bool Sanitizer::lds_lanes(const Exec& e, const LaneOf& lanes, uint64_t lds_bytes, bool write) {
  if (!lanes.exec) return true;  // no lane accesses anything
  // A step's lanes mostly keep their pattern from one execution to the next, only the base
  // address moving: the pattern (each active lane's distance from the first, the offsets, the
  // size and the base's alignment) is compared, cheaply and branch-free, with the step's last,
  // and its runs are shifted rather than built again.
  const uint32_t base = lanes.addr[std::countr_zero(lanes.exec)];
  uint32_t delta[kLanes];
  for (int l = 0; l < kLanes; ++l) delta[l] = (lanes.exec >> l & 1) ? lanes.addr[l] - base : 0;
  LaneRuns& cached = lane_runs_[static_cast<size_t>(e.step - program_.steps.data())];
  const bool same = cached.exec == lanes.exec && cached.size == lanes.size && cached.base_mod4 == base % 4 &&
                    std::ranges::equal(cached.offsets, lanes.offsets) && std::memcmp(cached.delta, delta, sizeof delta) == 0;
  if (!same) {
    cached.exec = 0;  // until built
    if (!build_lane_runs(lanes, base, cached)) return false;
    cached.exec = lanes.exec;
    cached.size = lanes.size;
    cached.base_mod4 = base % 4;
    cached.offsets.assign(lanes.offsets.begin(), lanes.offsets.end());
    std::memcpy(cached.delta, delta, sizeof delta);
  }
  // Sorted and disjoint: the first run starts lowest, the last ends highest.
  if (cached.runs.empty() || int64_t{base} + cached.runs.front().first < 0 ||
      static_cast<uint64_t>(int64_t{base} + cached.runs.back().second) > lds_bytes)
    return false;
  const uint32_t me = waves_[static_cast<size_t>(e.w.id)].current;
  if (!me) return true;  // in bounds, and no operation to record
  // Whole dwords: every byte of each is touched.
  for (const auto& [lo, hi] : cached.runs)
    shadow_dwords(e, static_cast<uint64_t>(base + lo) / 4, static_cast<uint64_t>(base + hi) / 4, [](uint64_t) { return uint8_t{0xf}; }, lanes, write, me);
  return true;
}

// The shadow walk over dwords [first, last), `mask_of(d)` giving the bytes of dword d the access
// touches. The dwords of one access mostly share their shadow (the same operations wrote and read
// all of them last): such a run is checked once and its new shadow copied along.
template <typename MaskOf>
void Sanitizer::shadow_dwords(const Exec& e, uint64_t first, uint64_t last, MaskOf mask_of, const LaneOf& lane, bool write, uint32_t me) {
  LdsShadow before, after;
  uint8_t before_bytes = 0;
  for (uint64_t d = first; d < last; ++d) {
    const uint8_t mask = mask_of(d);
    LdsShadow& cell = lds_[d];
    // The common case first: the same shadow as the dword before, checked there. (That one was
    // not a broadcast, below, or before_bytes would be 0: so neither is this one.)
    if (mask == before_bytes && cell == before) {
      cell = after;
      continue;
    }
    // Another lane of this operation recorded these bytes already (a broadcast read): the check
    // it made holds for this lane too, and the shadow stays as it is.
    const auto holds = [&](uint32_t op, uint8_t bytes) { return op == me && (bytes & mask) == mask; };
    if (write ? holds(cell.write(), cell.write_bytes()) : holds(cell.read(0), cell.read_bytes(0)) || holds(cell.read(1), cell.read_bytes(1))) {
      before_bytes = 0;  // the next dword is checked afresh
      continue;
    }
    before = cell;
    before_bytes = mask;
    check_lds_dword(e, d * 4 + static_cast<uint64_t>(std::countr_zero(mask)), before, mask, lane, write, me);
    after = before;
    if (write) after.set_write(me, mask);
    else after = with_read(before, mask, me);
    cell = after;
  }
}

void Sanitizer::lds_access(const Exec& e, uint64_t address, uint32_t bytes, const LaneOf& lane, bool write) {
  const uint32_t me = waves_[static_cast<size_t>(e.w.id)].current;
  if (!me || bytes == 0) return;
  const uint64_t end = address + bytes;
  const auto mask_of = [&](uint64_t d) {
    const uint64_t lo = std::max(address, d * 4), hi = std::min(end, d * 4 + 4);
    return static_cast<uint8_t>(((1u << (hi - lo)) - 1) << (lo - d * 4));
  };
  shadow_dwords(e, address / 4, (end + 3) / 4, mask_of, lane, write, me);
}

// Why another wave's access to an LDS byte is not ordered before this one.
std::string Sanitizer::ordering(const Operation& other) const {
  if (other.issued == epoch_) return " with no s_barrier between them";
  return std::string(other.completed == kInFlight ? " (still in flight)" : "") +
         ": an s_barrier lies between them, but no s_waitcnt made that wave wait for its access before it";
}

// The hot part: conditions only, the reports out of line.
inline void Sanitizer::check_lds_dword(const Exec& e, uint64_t address, LdsShadow shadow, uint8_t bytes, const LaneOf& lane, bool write,
                                       uint32_t me) {
  const Operation& mine = ops_[me];
  if (!write && (bytes & ~shadow.written())) report_lds_unwritten(e, address, static_cast<uint8_t>(bytes & ~shadow.written()), lane, me);
  if (const uint32_t w = shadow.write(); w && w != me && (shadow.write_bytes() & bytes)) {
    const Operation& o = ops_[w];
    if (races(mine, o)) report_lds_race(e, address, lane, write, me, w, true);
    else if (o.wave == mine.wave && o.completed == kInFlight && o.lds_dma && !mine.lds_dma) report_lds_unfilled(e, address, lane, write, me, w);
  }
  if (!write) return;
  for (int slot = 0; slot < 2; ++slot)
    if (const uint32_t r = shadow.read(slot); r && r != me && (shadow.read_bytes(slot) & bytes) && races(mine, ops_[r]))
      report_lds_race(e, address, lane, write, me, r, false);
}

void Sanitizer::report_lds_unwritten(const Exec& e, uint64_t address, uint8_t unwritten, const LaneOf& lane, uint32_t me) {
  const Operation& mine = ops_[me];
  if (seen(HazardKind::UninitializedRead, mine.step, -1)) return;
  const uint64_t at = address / 4 * 4 + static_cast<uint64_t>(std::countr_zero(unsigned{unwritten}));
  report(e, {HazardKind::UninitializedRead, mine.step, -1, mine.wave, -1, lane.at(at), at, "reads LDS " + hex(at) + ", which this workgroup never wrote"});
}

void Sanitizer::report_lds_race(const Exec& e, uint64_t address, const LaneOf& lane, bool write, uint32_t me, uint32_t other, bool other_wrote) {
  const Operation &mine = ops_[me], &o = ops_[other];
  if (seen(HazardKind::LdsRace, mine.step, o.step)) return;
  report(e, {HazardKind::LdsRace, mine.step, o.step, mine.wave, o.wave, lane.at(address), address,
             std::string(write ? "writes" : "reads") + " LDS " + hex(address) + ", which wave " + std::to_string(o.wave) +
                 (other_wrote ? " writes at " : " reads at ") + where(o.step) + ordering(o)});
}

void Sanitizer::report_lds_unfilled(const Exec& e, uint64_t address, const LaneOf& lane, bool write, uint32_t me, uint32_t fill) {
  const Operation &mine = ops_[me], &o = ops_[fill];
  if (seen(HazardKind::ReadBeforeWait, mine.step, o.step)) return;
  report(e, {HazardKind::ReadBeforeWait, mine.step, o.step, mine.wave, o.wave, lane.at(address), address,
             std::string(write ? "writes" : "reads") + " LDS " + hex(address) + ", which the direct-to-LDS load at " + where(o.step) +
                 " fills, before an s_waitcnt covers it (" + needed_wait(waves_[static_cast<size_t>(o.wave)], fill) + " would)"});
}

inline Sanitizer::LdsShadow Sanitizer::with_read(LdsShadow shadow, uint8_t bytes, uint32_t me) const {
  // Two slots keep the reads of two waves: a slot is taken over when it is empty, holds this
  // wave's read, or holds a read finished before this epoch (a barrier ordered it already).
  const int wave = ops_[me].wave;
  const auto free_for_me = [&](uint32_t r) { return !r || ops_[r].wave == wave || ops_[r].completed < epoch_; };
  const auto take = [&](int slot) {
    shadow.set_read(slot, me, shadow.read(slot) == me ? static_cast<uint8_t>(shadow.read_bytes(slot) | bytes) : bytes);
  };
  if (free_for_me(shadow.read(0))) take(0);
  else if (free_for_me(shadow.read(1))) take(1);
  else take(ops_[shadow.read(0)].completed <= ops_[shadow.read(1)].completed ? 0 : 1);
  return shadow;
}

}  // namespace weft::emu
