// What the emulator's hazard mode (the sanitizer, LaunchOptions::sanitize) reports: an access out
// of bounds, an LDS race between waves, a read of a load's destination before the s_waitcnt that
// covers it, and a read of registers or LDS never written. docs/emulator.md ("Hazard mode") gives
// the model each check stands on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/dsl/error.h"

namespace weft::emu {

enum class HazardKind : uint8_t {
  OutOfBounds,        // a global, LDS or scratch access outside what the launch allocated
  LdsRace,            // two waves touch an LDS byte, one of them writing, with no s_barrier between
  ReadBeforeWait,     // a load's destination (VGPRs, SGPRs, or LDS for direct-to-LDS fills) used before its s_waitcnt
  UninitializedRead,  // a VGPR lane or an LDS byte read that nothing wrote
};
// "out of bounds", "LDS race", "read before wait", "uninitialized read".
const char* hazard_kind_name(HazardKind kind);

// One hazard, reported once per pair of program counters (later occurrences are counted).
struct Hazard {
  HazardKind kind{};
  std::string kernel;
  uint32_t workgroup[3] = {};  // of the first occurrence
  // The instruction that observed the hazard (the read, the second access) ...
  uint64_t pc = 0;
  std::string instruction;  // its mnemonic
  int wave = 0, lane = -1;  // lane -1: no single lane
  // ... and the one it conflicts with (the load, the other wave's access); other_pc is
  // UINT64_MAX where there is none (an uninitialized read, an out-of-bounds access).
  uint64_t other_pc = UINT64_MAX;
  std::string other_instruction;
  int other_wave = -1;
  uint64_t address = 0;  // the LDS or global address involved, where there is one
  uint64_t occurrences = 1;
  std::string message;  // the whole report, one line
};

// Thrown by run_kernel in hazard mode when it saw any hazard, after the launch (or, for an
// out-of-bounds access, which cannot go on, at once): what() lists every report.
class HazardError : public Error {
 public:
  HazardError(std::vector<Hazard> hazards, uint64_t schedule_seed);
  const std::vector<Hazard>& hazards() const { return hazards_; }

 private:
  std::vector<Hazard> hazards_;
};

// Thrown for an access out of bounds in either mode: hazard mode turns it into a report.
class OutOfBoundsError : public Error {
 public:
  using Error::Error;
};

}  // namespace weft::emu
