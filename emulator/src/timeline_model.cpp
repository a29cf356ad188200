// The timeline model (timeline.h): the recorded instruction streams of one workgroup issued on a
// model of one compute unit, turn by turn.
//
// Each cycle one SIMD has its issue turn (cycle % simds). In its turn the SIMD considers its waves
// whose next instruction may issue, highest s_setprio first, then the lowest wave id (the oldest),
// and issues at most one instruction of each kind (VALU and MFMA, SALU, vector memory, LDS, scalar
// memory, branch) from different waves; s_waitcnt, s_barrier, s_nop, s_sleep, s_setprio and
// s_endpgm run in the instruction buffer and take no slot. A wave issues at most once per turn.
#include <algorithm>
#include <string>
#include <string_view>

#include "isa_fields.h"
#include "weft/dsl/error.h"
#include "weft/emulator/footprint.h"
#include "weft/emulator/mfma.h"
#include "weft/emulator/timeline.h"

namespace weft::emu {
namespace {

// What the model needs of one instruction, derived once per instruction of the kernel.
enum class Unit : uint8_t { Valu, Transcendental, Mfma, Salu, Branch, Smem, Vmem, Lds, Waitcnt, Barrier, Nop, Sleep, Setprio, End };

// The issue slots of a turn: one instruction of each per SIMD.
enum Slot : uint8_t { kValuSlot = 1, kSaluSlot = 2, kVmemSlot = 4, kLdsSlot = 8, kSmemSlot = 16, kBranchSlot = 32, kNoSlot = 0 };

struct InstructionTiming {
  Unit unit = Unit::Salu;
  uint8_t slot = kSaluSlot;
  bool both_counters = false;  // FLAT: counted on vmcnt and lgkmcnt
  uint32_t matrix_cycles = 0;  // MFMA
  uint32_t bytes_per_lane = 0; // memory
  bool lds_write = false;      // an LDS access that only writes (its bandwidth differs)
  uint32_t imm = 0;            // SOPP's immediate
};

IssueKind kind_of(Unit u) {
  switch (u) {
    case Unit::Valu: case Unit::Transcendental: return IssueKind::Valu;
    case Unit::Mfma: return IssueKind::Mfma;
    case Unit::Salu: return IssueKind::Salu;
    case Unit::Smem: return IssueKind::ScalarMemory;
    case Unit::Vmem: return IssueKind::VectorMemory;
    case Unit::Lds: return IssueKind::Lds;
    default: return IssueKind::Control;
  }
}

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Bytes one lane moves, from the mnemonic's width suffix (ds_read2* move two elements).
uint32_t memory_bytes_per_lane(std::string_view m) {
  uint32_t bytes = 4;
  if (has(m, "b128") || has(m, "dwordx4")) bytes = 16;
  else if (has(m, "b96") || has(m, "dwordx3")) bytes = 12;
  else if (has(m, "b64") || has(m, "dwordx2") || has(m, "_u64") || has(m, "_i64") || has(m, "_f64") || has(m, "x2")) bytes = 8;
  else if (has(m, "b32") || has(m, "dword") || has(m, "32")) bytes = 4;
  else if (has(m, "short") || has(m, "b16") || has(m, "16")) bytes = 2;
  else if (has(m, "byte") || has(m, "b8") || has(m, "u8") || has(m, "i8")) bytes = 1;
  if (m.starts_with("ds_read2") || m.starts_with("ds_write2")) bytes *= 2;
  return bytes;
}

bool is_transcendental(std::string_view m) {
  for (const char* op : {"v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_"})
    if (m.starts_with(op)) return true;
  return false;
}

InstructionTiming sopp_timing(std::string_view m, const Inst& in) {
  InstructionTiming t;
  t.slot = kNoSlot;
  t.imm = fields::simm16(in);
  if (m == "s_waitcnt") t.unit = Unit::Waitcnt;
  else if (m == "s_barrier") t.unit = Unit::Barrier;
  else if (m == "s_nop") t.unit = Unit::Nop;
  else if (m == "s_sleep") t.unit = Unit::Sleep;
  else if (m == "s_setprio") t.unit = Unit::Setprio;
  else if (m.starts_with("s_endpgm")) t.unit = Unit::End;
  else if (m.starts_with("s_branch") || m.starts_with("s_cbranch")) t.unit = Unit::Branch, t.slot = kBranchSlot;
  else t.unit = Unit::Salu, t.slot = kSaluSlot;  // s_sendmsg, s_icache_inv and the like
  return t;
}

InstructionTiming memory_timing(const Inst& in, const Footprint& f) {
  InstructionTiming t;
  const std::string_view m = in.info->mnemonic;
  t.bytes_per_lane = memory_bytes_per_lane(m);
  switch (f.counter) {
    case MemoryCounter::Lgkm:
      t.unit = Unit::Lds, t.slot = kLdsSlot;
      t.lds_write = m.starts_with("ds_write");
      break;
    case MemoryCounter::Smem: t.unit = Unit::Smem, t.slot = kSmemSlot; break;
    case MemoryCounter::Flat: t.unit = Unit::Vmem, t.slot = kVmemSlot, t.both_counters = true; break;
    default: t.unit = Unit::Vmem, t.slot = kVmemSlot; break;
  }
  return t;
}

InstructionTiming timing_of(const Inst& in, Arch arch, const CuModel& model) {
  if (!in.info) return {};
  const std::string_view m = in.info->mnemonic;
  if (in.family == Family::SOPP) return sopp_timing(m, in);
  const Footprint f = footprint(in);
  if (f.counter != MemoryCounter::None) return memory_timing(in, f);
  InstructionTiming t;
  switch (in.family) {
    case Family::SOP1: case Family::SOP2: case Family::SOPC: case Family::SOPK:
      t.unit = m.starts_with("s_setpc") || m.starts_with("s_swappc") ? Unit::Branch : Unit::Salu;
      t.slot = t.unit == Unit::Branch ? kBranchSlot : kSaluSlot;
      return t;
    default: break;
  }
  t.slot = kValuSlot;
  if (const int passes = mfma_passes(in, arch); passes > 0) {
    t.unit = Unit::Mfma;
    t.matrix_cycles = static_cast<uint32_t>(passes * model.cycles_per_pass);
  } else {
    t.unit = is_transcendental(m) ? Unit::Transcendental : Unit::Valu;
  }
  return t;
}

// The cycle at which at most `allowed` of the operations completing at `completions` are still
// in flight (they complete in any order), no earlier than `now`.
uint64_t counter_reaches(std::vector<uint64_t>& completions, uint32_t allowed, uint64_t now) {
  std::erase_if(completions, [now](uint64_t c) { return c <= now; });
  if (completions.size() <= allowed) return now;
  std::sort(completions.begin(), completions.end());
  return completions[completions.size() - allowed - 1];
}

struct WaveState {
  const std::vector<WorkgroupRecording::Issue>* stream = nullptr;
  size_t next = 0;
  int priority = 0;
  uint64_t ready = 0;  // the earliest cycle of its next issue
  bool at_barrier = false, ended = false;
  uint64_t arrived = 0;  // at the barrier it waits on
  std::vector<uint64_t> vm, lgkm;  // completion cycles of its operations in flight
  uint64_t last_vm = 0, last_lds = 0;  // in-order returns: no operation completes before an older one
  Stall pending = Stall::Issue;  // why its last chance to issue went by
};

struct SimdState {
  uint64_t valu_free = 0, matrix_free = 0;
};

class CuSimulation {
 public:
  CuSimulation(const WorkgroupRecording& r, const CuModel& m) : model_(m) {
    for (const Inst& in : r.instructions) timings_.push_back(timing_of(in, r.arch, m));
    waves_.resize(r.waves.size());
    t_.model = m;
    std::copy(std::begin(r.workgroup), std::end(r.workgroup), t_.workgroup);
    t_.simds.resize(static_cast<size_t>(m.simds));
    for (size_t i = 0; i < r.waves.size(); ++i) {
      check_stream(r, i);
      waves_[i].stream = &r.waves[i];
      WaveTimeline& wt = t_.waves.emplace_back();
      wt.wave = static_cast<int>(i);
      wt.simd = static_cast<int>(i) % m.simds;
      t_.simds[static_cast<size_t>(wt.simd)].waves.push_back(wt.wave);
    }
    simds_.resize(static_cast<size_t>(m.simds));
  }

  Timeline run() {
    if (waves_.empty()) throw Error("the timeline needs a recorded workgroup with at least one wave");
    uint64_t now = 0;
    size_t live = waves_.size();
    while (live > 0) {
      const int simd = static_cast<int>(now % static_cast<uint64_t>(model_.simds));
      live -= turn(simd, now);
      now = live > 0 ? next_cycle(now) : now;
    }
    // The workgroup is done when its last wave ended and its last MFMA and memory access completed.
    for (const WaveTimeline& w : t_.waves) t_.cycles = std::max(t_.cycles, w.ended);
    for (const WaveState& w : waves_) t_.cycles = std::max({t_.cycles, w.last_vm, w.last_lds});
    for (SimdTimeline& s : t_.simds)
      for (const TimelineSlice& m : s.mfma) {
        s.mfma_busy += m.end - m.start;
        t_.cycles = std::max(t_.cycles, m.end);
      }
    return std::move(t_);
  }

 private:
  // A stream the model can time: instructions of the kernel, ending in s_endpgm (so every wave
  // ends and no turn runs past a stream's end).
  void check_stream(const WorkgroupRecording& r, size_t wave) const {
    const auto& stream = r.waves[wave];
    for (const WorkgroupRecording::Issue& is : stream)
      if (is.index >= timings_.size())
        throw Error("the timeline's wave " + std::to_string(wave) + " names instruction " + std::to_string(is.index) + " of a kernel of " +
                    std::to_string(timings_.size()));
    if (stream.empty() || timings_[stream.back().index].unit != Unit::End)
      throw Error("the timeline's wave " + std::to_string(wave) + " ran out of recorded instructions without s_endpgm");
  }

  const InstructionTiming& next_of(const WaveState& w) const { return timings_[(*w.stream)[w.next].index]; }

  // One SIMD's turn at cycle `now`; returns how many waves ended.
  size_t turn(int simd, uint64_t now) {
    std::vector<size_t>& candidates = candidates_;  // reused: a turn runs every cycle
    candidates.clear();
    for (size_t i = static_cast<size_t>(simd); i < waves_.size(); i += static_cast<size_t>(model_.simds)) {
      const WaveState& w = waves_[i];
      if (!w.ended && !w.at_barrier && w.ready <= now) candidates.push_back(i);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](size_t a, size_t b) { return waves_[a].priority > waves_[b].priority; });
    uint8_t used = 0;
    size_t ended = 0;
    SimdState& s = simds_[static_cast<size_t>(simd)];
    for (size_t i : candidates) {
      WaveState& w = waves_[i];
      const InstructionTiming& k = next_of(w);
      if (k.slot & used) {
        w.pending = Stall::Issue;
        continue;
      }
      if (k.slot == kValuSlot && s.valu_free > now) {
        w.pending = Stall::ValuBusy;
        continue;
      }
      if (k.unit == Unit::Mfma && s.matrix_free > now) {
        w.pending = Stall::MatrixCore;
        continue;
      }
      used |= k.slot;
      ended += issue(i, w, s, k, now) ? 1 : 0;
    }
    return ended;
  }

  // A stall of `wave` charged to the instruction `index` (the one that waited, or was held up).
  void stall(size_t wave, uint64_t from, uint64_t to, Stall why, uint32_t index) {
    if (to <= from) return;
    WaveTimeline& wt = t_.waves[wave];
    wt.stalls.push_back({from, to, why, index});
    wt.stalled[static_cast<size_t>(why)] += to - from;
  }

  // Issues the wave's next instruction at `now`; returns whether the wave ended.
  bool issue(size_t i, WaveState& w, SimdState& s, const InstructionTiming& k, uint64_t now) {
    account_wait(i, w, s, k, now);
    const WorkgroupRecording::Issue& is = (*w.stream)[w.next++];
    const uint64_t turn_end = now + static_cast<uint64_t>(model_.turn_cycles);
    t_.waves[i].issued.push_back({now, turn_end, is.index, kind_of(k.unit)});
    w.ready = turn_end;
    w.pending = Stall::Issue;
    const uint64_t bytes = uint64_t{k.bytes_per_lane} * is.active_lanes;
    switch (k.unit) {
      case Unit::Valu: s.valu_free = now + static_cast<uint64_t>(model_.valu_cycles); break;
      case Unit::Transcendental: s.valu_free = now + static_cast<uint64_t>(model_.transcendental_cycles); break;
      case Unit::Mfma:
        s.valu_free = now + static_cast<uint64_t>(model_.valu_cycles);
        s.matrix_free = now + k.matrix_cycles;
        t_.simds[static_cast<size_t>(t_.waves[i].simd)].mfma.push_back({now, s.matrix_free, is.index, IssueKind::Mfma});
        break;
      case Unit::Vmem: {
        const uint64_t done = global_access(w, bytes, now);
        w.vm.push_back(done);
        if (k.both_counters) w.lgkm.push_back(done);
        break;
      }
      case Unit::Lds: w.lgkm.push_back(lds_access(w, k, bytes, now)); break;
      case Unit::Smem: w.lgkm.push_back(now + static_cast<uint64_t>(model_.scalar_latency)); break;
      case Unit::Waitcnt: {
        const uint64_t vm = counter_reaches(w.vm, fields::waitcnt_vm(k.imm), now);
        const uint64_t lgkm = counter_reaches(w.lgkm, fields::waitcnt_lgkm(k.imm), now);
        const uint64_t until = std::max({vm, lgkm, turn_end});
        stall(i, turn_end, until, vm >= lgkm ? Stall::Vmcnt : Stall::Lgkmcnt, is.index);
        w.ready = until;
        break;
      }
      case Unit::Nop:  // N + 1 wait states, each an issue slot of the wave
        wait(i, w, turn_end, now + static_cast<uint64_t>(model_.turn_cycles) * ((k.imm & 0xf) + 1), Stall::Nop, is.index);
        break;
      case Unit::Sleep: wait(i, w, turn_end, now + 64 * uint64_t{k.imm & 0x7f}, Stall::Sleep, is.index); break;
      case Unit::Setprio: w.priority = static_cast<int>(k.imm & 3); break;
      case Unit::Barrier:
        w.at_barrier = true;
        w.arrived = turn_end;
        release_barrier_if_all_arrived(now);
        break;
      case Unit::End:
        w.ended = true;
        t_.waves[i].ended = turn_end;
        release_barrier_if_all_arrived(now);  // an ended wave no longer holds a barrier up
        return true;
      case Unit::Salu: case Unit::Branch: break;
    }
    return false;
  }

  // The cycles from when the wave could have issued to now: first while the unit its instruction
  // needs was busy, then lost to other waves' issues.
  void account_wait(size_t i, const WaveState& w, const SimdState& s, const InstructionTiming& k, uint64_t now) {
    uint64_t from = w.ready;
    const uint32_t index = (*w.stream)[w.next].index;
    const auto busy = [&](uint64_t free_at, Stall why) {
      const uint64_t until = std::min(now, free_at);
      if (until > from) stall(i, from, until, why, index), from = until;
    };
    if (k.unit == Unit::Mfma) busy(s.matrix_free, Stall::MatrixCore);
    if (k.slot == kValuSlot) busy(s.valu_free, Stall::ValuBusy);
    stall(i, from, now, w.pending == Stall::MatrixCore || w.pending == Stall::ValuBusy ? Stall::Issue : w.pending, index);
  }

  void wait(size_t i, WaveState& w, uint64_t from, uint64_t until, Stall why, uint32_t index) {
    stall(i, from, until, why, index);
    w.ready = std::max(from, until);
  }

  // The completion cycle of a vector memory access of `bytes` issued at `now`: it waits for the
  // CU's share of L2 bandwidth, then the latency; returns are in order per wave.
  uint64_t global_access(WaveState& w, uint64_t bytes, uint64_t now) {
    global_free_ = std::max(global_free_, now) + (bytes + model_.global_bytes_per_cycle - 1) / model_.global_bytes_per_cycle;
    w.last_vm = std::max(w.last_vm, global_free_ + static_cast<uint64_t>(model_.global_latency));
    return w.last_vm;
  }
  uint64_t lds_access(WaveState& w, const InstructionTiming& k, uint64_t bytes, uint64_t now) {
    const uint64_t rate = static_cast<uint64_t>(k.lds_write ? model_.lds_write_bytes_per_cycle : model_.lds_read_bytes_per_cycle);
    lds_free_ = std::max(lds_free_, now) + (bytes + rate - 1) / rate;
    w.last_lds = std::max(w.last_lds, lds_free_ + static_cast<uint64_t>(model_.lds_latency_for(k.bytes_per_lane)));
    return w.last_lds;
  }

  void release_barrier_if_all_arrived(uint64_t now) {
    bool any = false;
    for (const WaveState& w : waves_) {
      if (w.ended) continue;
      if (!w.at_barrier) return;
      any = true;
    }
    if (!any) return;
    const uint64_t release = now + static_cast<uint64_t>(model_.barrier_latency);
    for (size_t i = 0; i < waves_.size(); ++i) {
      WaveState& w = waves_[i];
      if (w.ended) continue;
      w.at_barrier = false;
      stall(i, w.arrived, release, Stall::Barrier, (*w.stream)[w.next - 1].index);  // at its s_barrier
      w.ready = std::max(w.arrived, release);
      w.pending = Stall::Issue;
    }
  }

  // The next cycle worth a turn: the next one, unless nothing can issue before a later one.
  uint64_t next_cycle(uint64_t now) const {
    uint64_t earliest = UINT64_MAX;
    for (size_t i = 0; i < waves_.size(); ++i) {
      const WaveState& w = waves_[i];
      if (w.ended || w.at_barrier) continue;
      uint64_t t = w.ready;
      const InstructionTiming& k = next_of(w);
      const SimdState& s = simds_[i % static_cast<size_t>(model_.simds)];
      if (k.slot == kValuSlot) t = std::max(t, s.valu_free);
      if (k.unit == Unit::Mfma) t = std::max(t, s.matrix_free);
      earliest = std::min(earliest, t);
    }
    return std::max(now + 1, earliest == UINT64_MAX ? now + 1 : earliest);
  }

  const CuModel& model_;
  std::vector<InstructionTiming> timings_;
  std::vector<WaveState> waves_;
  std::vector<SimdState> simds_;
  uint64_t global_free_ = 0, lds_free_ = 0;
  std::vector<size_t> candidates_;
  Timeline t_;
};

}  // namespace

const char* stall_name(Stall s) {
  switch (s) {
    case Stall::Issue: return "issue";
    case Stall::ValuBusy: return "valu busy";
    case Stall::MatrixCore: return "matrix core";
    case Stall::Vmcnt: return "vmcnt";
    case Stall::Lgkmcnt: return "lgkmcnt";
    case Stall::Barrier: return "barrier";
    case Stall::Nop: return "s_nop";
    case Stall::Sleep: return "s_sleep";
  }
  return "?";
}

CuModel cu_model(Arch arch) {
  CuModel m;
  m.arch = arch;
  const bool cdna4 = arch == Arch::Gfx950;
  m.clock_ghz = cdna4 ? 2.4 : 2.1;
  // docs/emulator.md ("Timeline") gives each constant's source.
  m.lds_latency = cdna4 ? std::array{44, 44, 84} : std::array{48, 84, 108};
  m.lds_read_bytes_per_cycle = cdna4 ? 256 : 128;
  m.lds_write_bytes_per_cycle = 128;
  m.global_latency = 288;
  m.global_bytes_per_cycle = cdna4 ? 64 : 54;
  m.scalar_latency = 48;
  m.barrier_latency = 4;
  return m;
}

Timeline model_timeline(const WorkgroupRecording& recording, const CuModel& model) {
  return CuSimulation(recording, model).run();
}

}  // namespace weft::emu
