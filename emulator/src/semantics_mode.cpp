// The MODE hardware register through s_getreg_b32 / s_setreg_b32 / s_setreg_imm32_b32, and what
// the emulator does with its float fields.
//
// MODE (CDNA3/CDNA4 ISA guides, "Hardware Registers"; hwreg id 1): FP_ROUND [3:0] (f32 [1:0],
// f16/f64 [3:2]: 0 nearest even, 1 +inf, 2 -inf, 3 zero), FP_DENORM [7:4] (f32 [5:4], f16/f64
// [7:6]: 0 flush inputs and outputs, 1 flush outputs, 2 flush inputs, 3 keep both), DX10_CLAMP
// [8], IEEE [9], then exception enables and other bits. A wave starts with the kernel
// descriptor's FLOAT_ROUND_MODE_32/16_64, FLOAT_DENORM_MODE_32/16_64 (COMPUTE_PGM_RSRC1 [19:12]),
// ENABLE_DX10_CLAMP [21] and ENABLE_IEEE_MODE [23] (LLVM's AMDGPUUsage, "Kernel Descriptor").
//
// Any float mode may be set: float_mode.cpp executes it, or stops at the first instruction it
// cannot execute in that mode, naming both. s_getreg reads MODE back exactly. Other hardware
// registers are not emulated (reading or writing one stops the run).
#include <string>

#include "isa_fields.h"
#include "semantics.h"

namespace weft::emu {

using namespace fields;

namespace {

constexpr uint32_t kHwRegMode = 1;

struct HwReg {
  uint32_t id, offset, size;
  uint32_t mask() const { return (size == 32 ? ~0u : (1u << size) - 1) << offset; }
};
HwReg hwreg(const Inst& in) { return {simm16(in) & 0x3f, (simm16(in) >> 6) & 0x1f, ((simm16(in) >> 11) & 0x1f) + 1}; }

void require_mode(const Exec& e, const HwReg& r) {
  if (r.id != kHwRegMode) e.fail("hardware register " + std::to_string(r.id) + " is not emulated (only HW_REG_MODE is)");
}

void s_getreg_b32(Exec& e, const Inst& in) {
  const HwReg r = hwreg(in);
  require_mode(e, r);
  e.set_scalar(sop_sdst(in), (e.w.mode & r.mask()) >> r.offset);
}

template <bool Immediate>
void s_setreg(Exec& e, const Inst& in) {
  const HwReg r = hwreg(in);
  require_mode(e, r);
  const uint32_t value = Immediate ? in.literal : e.scalar(sop_sdst(in));
  e.w.mode = (e.w.mode & ~r.mask()) | ((value << r.offset) & r.mask());
}

}  // namespace

uint32_t initial_mode(uint32_t rsrc1) { return ((rsrc1 >> 12) & 0xFF) | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9; }

void register_mode_semantics(SemanticsTable& t) {
  t["s_getreg_b32"] = s_getreg_b32;
  t["s_setreg_b32"] = s_setreg<false>;
  t["s_setreg_imm32_b32"] = s_setreg<true>;
}

}  // namespace weft::emu
