// Running a kernel of a code object on the emulator: global memory with bounds-checked buffers,
// the launch (grid of workgroups, work-items per workgroup, kernel arguments), and the report.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/emulator/code_object.h"
#include "weft/emulator/hazards.h"
#include "weft/emulator/isa.h"

namespace weft::emu {

// The device's global memory: buffers at distinct addresses with unmapped gaps between them,
// so an access past one buffer's end never lands in the next one. Addresses are never reused:
// an access to a freed buffer is an out-of-bounds access (the report names the freed buffer).
class GlobalMemory {
 public:
  // Allocates `bytes` (zero-filled) and returns its device address.
  uint64_t allocate(uint64_t bytes, std::string name);
  // Frees the buffer at `address`. Throws weft::Error for an address that is not the start of a
  // live buffer (naming it when it was freed already).
  void free(uint64_t address);
  uint8_t* data(uint64_t address);  // start of the buffer at `address`
  uint64_t size(uint64_t address) const;
  bool live(uint64_t address) const { return buffers_.count(address) != 0; }  // a buffer starts there
  size_t live_buffers() const { return buffers_.size(); }

  struct Buffer {
    std::string name;
    uint64_t address = 0;
    std::vector<uint8_t> bytes;
  };
  // The buffer holding [address, address + n), or nullptr.
  Buffer* find(uint64_t address, uint64_t n);
  // "nearest buffer 'out' [0x..., 0x...) is 12 bytes below" for error messages.
  std::string describe_nearest(uint64_t address) const;

 private:
  struct Freed {
    std::string name;
    uint64_t bytes = 0;
  };
  const Freed* freed_at(uint64_t address) const;

  std::map<uint64_t, Buffer> buffers_;
  // The most recently freed buffers (a bounded record, for error messages), by address.
  std::map<uint64_t, Freed> freed_;
  std::deque<uint64_t> freed_order_;
  uint64_t next_ = 0x100000000ull;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

struct LaunchOptions {
  Dim3 grid;   // workgroups in each dimension
  Dim3 block;  // work-items per workgroup
  // The explicit kernel arguments, packed as the metadata's offsets say (the runtime fills the
  // hidden ones).
  std::vector<uint8_t> kernarg;
  int host_threads = 0;  // 0: all hardware threads
  bool print_instructions = false;  // print every executed instruction of every wave to stderr
  bool stats = false;    // count executions per opcode
  bool check_lds_reads = false;  // report a read of LDS the workgroup has not written
  // Hazard mode (docs/emulator.md): outstanding memory operations, LDS races between waves, reads
  // before s_waitcnt and of what was never written are reported; the waves of a workgroup
  // interleave a few instructions at a time in an order drawn from `schedule_seed`. A launch
  // that saw any hazard throws HazardError listing them all.
  bool sanitize = false;
  uint64_t schedule_seed = 1;
  // The workgroup (linear index, x fastest) whose waves' instruction streams RunReport::recording
  // keeps, for the timeline model (timeline.h); none when empty.
  std::optional<uint64_t> record_workgroup;
  // The most instructions one wave may execute (0: no limit). A wave that reaches it is reported
  // as a weft::Error naming the kernel, workgroup, wave and PC, so a kernel that never ends (a
  // loop whose exit condition never holds) fails instead of hanging. The default is far above
  // what real kernels execute per wave (a 4096^3 tiled GEMM: well under 10^6).
  uint64_t max_wave_instructions = kDefaultMaxWaveInstructions;
  static constexpr uint64_t kDefaultMaxWaveInstructions = uint64_t{1} << 28;
  // Every workgroup resident at once, as a cooperative launch makes them (a kernel with a grid
  // barrier, whose workgroups wait for each other): one host thread runs them in turns, a turn
  // ending where a wave runs s_sleep (the barrier's spin), so that the others run on. A launch in
  // which for kMaxIdleRounds turns in a row no workgroup ran a global store or atomic, released a
  // barrier or ended a wave (all only waited) is an error: a barrier some workgroup never reaches.
  // Without it, s_sleep does not stop the wave.
  bool cooperative = false;
  static constexpr int kMaxIdleRounds = 1000;
};

// What one workgroup executed, for the timeline model: the kernel's instructions and, per wave,
// the ones it issued in order with the lanes active at each.
struct WorkgroupRecording {
  Arch arch{};
  uint32_t workgroup[3] = {};
  std::vector<Inst> instructions;  // the kernel's, in program order
  std::vector<uint32_t> offsets;   // each one's byte offset from the kernel's entry
  struct Issue {
    uint32_t index;       // into `instructions`
    uint8_t active_lanes; // EXEC's population count when it issued
  };
  std::vector<std::vector<Issue>> waves;
  // The most issues a recording holds per wave (8 bytes each): a launch whose recorded
  // workgroup runs longer fails naming it, rather than keeping gigabytes.
  static constexpr size_t kMaxIssuesPerWave = size_t{1} << 21;
};

struct RunReport {
  uint64_t workgroups = 0, waves = 0;
  uint64_t instructions = 0;  // wave-instructions executed
  double seconds = 0;
  std::map<std::string, uint64_t> per_opcode;  // with LaunchOptions::stats
  std::optional<WorkgroupRecording> recording;  // with LaunchOptions::record_workgroup
};

// Whether the emulator has semantics for `mnemonic` (an opcode_table() row's, e.g.
// "v_add_f32_e32"); docs/emulator.md lists those it has none for ("Not executed").
bool executes(std::string_view mnemonic);

// Runs `kernel` of `code` to completion. Throws weft::Error for an instruction the emulator cannot
// execute (naming it, its bytes, the kernel and the PC) and for an out-of-bounds access (kernel, PC,
// workgroup, wave, lane, address and the nearest buffer).
RunReport run_kernel(const CodeObject& code, const std::string& kernel, GlobalMemory& memory,
                     const LaunchOptions& options);

}  // namespace weft::emu
