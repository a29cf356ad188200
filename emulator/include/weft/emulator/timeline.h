// The timeline: what one workgroup's recorded instruction streams (emulator.h's
// WorkgroupRecording) would do on a model of one CDNA compute unit, as a Chrome/Perfetto trace, a
// picture and a table of where the cycles went.
//
// It is a model, not the hardware: four SIMDs, each wave issuing in order at most one instruction
// per turn of its SIMD, units that stay busy for documented cycle counts (VALU, the matrix core
// per MFMA shape), LDS and global memory as a latency plus a per-CU bandwidth, s_waitcnt,
// s_barrier, s_nop, s_sleep and s_setprio as the ISA defines them. No caches, no bank conflicts,
// no other workgroups on the CU, no register-dependency interlocks beyond what the code's own
// s_waitcnt and s_nop ask for. Its use is comparing two schedules of one kernel; docs/emulator.md
// ("Timeline") gives every constant with its source.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "weft/emulator/emulator.h"

namespace weft::emu {

// The constants of the model for one target. Cycles are shader-clock cycles.
struct CuModel {
  Arch arch{};
  double clock_ghz = 0;           // peak engine clock, to turn cycles into time
  int simds = 4;                  // SIMDs per CU; wave w runs on SIMD w % simds
  int turn_cycles = 4;            // a SIMD's issue turn comes every turn_cycles cycles
  int valu_cycles = 4;            // a wave64 VALU op on a 16-lane SIMD
  int transcendental_cycles = 16; // v_exp, v_log, v_rcp, v_rsq, v_sqrt, v_sin, v_cos: quarter rate
  int cycles_per_pass = 4;        // an MFMA keeps the matrix core busy passes x this
  // LDS: issue to data back when the LDS is idle, by bytes per lane (up to 4, 8, 16).
  std::array<int, 3> lds_latency{};
  int lds_read_bytes_per_cycle = 0;   // per CU
  int lds_write_bytes_per_cycle = 0;
  int global_latency = 0;             // vector memory, every access an L2 hit
  int global_bytes_per_cycle = 0;     // the CU's share of L2 bandwidth
  int scalar_latency = 0;             // SMEM, a scalar cache hit
  // Latency of an LDS access moving `bytes_per_lane`.
  int lds_latency_for(uint32_t bytes_per_lane) const { return lds_latency[bytes_per_lane <= 4 ? 0 : bytes_per_lane <= 8 ? 1 : 2]; }
  int barrier_latency = 0;        // last arrival to the waves' next issue
};
CuModel cu_model(Arch arch);

// Why a wave did not issue when it otherwise could have.
enum class Stall : uint8_t {
  Issue,       // another wave of its SIMD took the turn's slot for that kind of instruction
  ValuBusy,    // the SIMD's VALU was still busy (a transcendental, or another wave's op)
  MatrixCore,  // the SIMD's matrix core was still busy with an earlier MFMA
  Vmcnt,       // s_waitcnt vmcnt: vector memory or LDS DMA in flight
  Lgkmcnt,     // s_waitcnt lgkmcnt: LDS or scalar memory in flight
  Barrier,     // s_barrier: other waves had not arrived
  Nop,         // s_nop's wait states
  Sleep,       // s_sleep
};
inline constexpr int kStallKinds = 8;
const char* stall_name(Stall s);

// What an issued instruction occupies: Control is what runs in the instruction buffer (s_waitcnt,
// s_barrier, s_nop, s_sleep, s_setprio, s_endpgm) and branches.
enum class IssueKind : uint8_t { Valu, Mfma, Salu, ScalarMemory, VectorMemory, Lds, Control };

struct TimelineSlice {
  uint64_t start = 0, end = 0;  // cycles
  uint32_t index = 0;           // the instruction (WorkgroupRecording::instructions)
  IssueKind kind{};
};
struct StallSpan {
  uint64_t start = 0, end = 0;
  Stall why{};
  uint32_t index = 0;  // the instruction charged: the s_waitcnt, s_barrier or s_nop that waited, or the one held up
};

struct WaveTimeline {
  int wave = 0, simd = 0;
  std::vector<TimelineSlice> issued;  // one slice per instruction, from issue to the wave's next turn
  std::vector<StallSpan> stalls;
  uint64_t ended = 0;                 // the cycle its s_endpgm issued
  std::array<uint64_t, kStallKinds> stalled{};  // cycles per Stall
};

struct SimdTimeline {
  std::vector<int> waves;
  std::vector<TimelineSlice> mfma;  // the matrix core's busy spans
  uint64_t mfma_busy = 0;           // cycles
};

struct Timeline {
  CuModel model;
  uint32_t workgroup[3] = {};
  uint64_t cycles = 0;  // until the last wave ended
  std::vector<WaveTimeline> waves;
  std::vector<SimdTimeline> simds;
};

// Runs the recorded streams through the model. Throws weft::Error for a recording the model
// cannot time (no waves; a wave that never issued s_endpgm).
Timeline model_timeline(const WorkgroupRecording& recording, const CuModel& model);

// A Chrome trace-event JSON document (chrome://tracing, ui.perfetto.dev): one track per wave with a
// slice per instruction (its text and PC in the arguments) and one per stall, and one track per
// SIMD's matrix core. The time axis counts modelled cycles (one cycle shows as 1 us).
void write_chrome_trace(const Timeline& t, const WorkgroupRecording& recording, std::ostream& out);
// An SVG picture: a row per wave and per matrix core, coloured by what each cycle held.
void write_timeline_svg(const Timeline& t, const WorkgroupRecording& recording, std::ostream& out);
// The matrix core's busy fraction per SIMD, each wave's stall cycles by reason, and the
// instructions charged with the most stall cycles (summed over the waves), as text.
void write_timeline_stats(const Timeline& t, const WorkgroupRecording& recording, std::ostream& out);

}  // namespace weft::emu
