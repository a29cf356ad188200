// The registers an instruction reads and writes and the counter its memory operation is counted
// on: what hazard mode (sanitizer.cpp) checks and marks around every step. Derived from the
// opcode table's operand list and the encoding's fields, the same facts the disassembler prints
// (tests/emulator/test_footprint.cpp holds the two against each other on random words).
#pragma once

#include <cstdint>
#include <vector>

#include "weft/emulator/isa.h"

namespace weft::emu {

// Registers [first, first + count): VGPRs 0-255 and AGPRs 256-511 in one file (as Wave::v), or
// SGPRs and the special registers by operand code (VCC 106).
struct RegisterRange {
  uint16_t first = 0;
  uint16_t count = 0;
};

// The counter an instruction's memory operation is counted on until it completes. Loads, stores
// and atomics of vector memory and LDS DMA: vmcnt, in order. LDS: lgkmcnt, in order. Scalar memory:
// lgkmcnt, returning out of order (only lgkmcnt(0) waits for one). FLAT: both counters.
enum class MemoryCounter : uint8_t { None, Vm, Lgkm, Smem, Flat };

// A VGPR whose bits reach only the bits of one destination VGPR: the high half of a 64-bit addend
// or shifted operand reaches only the result's high half. LLVM leaves such a half undefined where
// it uses only the result's low half (v_mad_u64_u32 as a 32-bit multiply-add), so the lanes of
// `from` nothing wrote become lanes of `to` nothing wrote, instead of an uninitialized read: one
// read before anything writes `to` again is reported there.
struct Carry {
  uint16_t from = 0, to = 0;
};

struct Footprint {
  std::vector<RegisterRange> vgpr_uses, vgpr_defs;
  std::vector<Carry> carries;  // not among vgpr_uses
  std::vector<RegisterRange> sgpr_uses, sgpr_defs;
  MemoryCounter counter = MemoryCounter::None;
  bool lds_dma = false;  // a buffer load into LDS (its LDS bytes land when vmcnt covers it)
  bool atomic = false;   // a read-modify-write that other atomics on the same bytes do not race with
};

Footprint footprint(const Inst& inst);

}  // namespace weft::emu
