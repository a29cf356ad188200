// The MODE hardware register through s_getreg_b32 / s_setreg_b32 / s_setreg_imm32_b32, and what
// the emulator does with its float fields.
//
// MODE (CDNA3/CDNA4 ISA guides, "Hardware Registers"; hwreg id 1): FP_ROUND [3:0] (f32 [1:0],
// f16/f64 [3:2]: 0 nearest even, 1 +inf, 2 -inf, 3 zero), FP_DENORM [7:4] (f32 [5:4], f16/f64
// [7:6]: 0 flush inputs and outputs, 1 allow outputs, 2 allow inputs, 3 keep both), DX10_CLAMP
// [8], IEEE [9], then exception enables and other bits. A wave starts with the kernel
// descriptor's FLOAT_ROUND_MODE_32/16_64, FLOAT_DENORM_MODE_32/16_64 (COMPUTE_PGM_RSRC1 [19:12]),
// ENABLE_DX10_CLAMP [21] and ENABLE_IEEE_MODE [23] (LLVM's AMDGPUUsage, "Kernel Descriptor").
//
// The emulator's float arithmetic is the host's IEEE arithmetic: round to nearest even with
// denormals kept, in every precision. Those are the only float modes it executes: a kernel whose
// descriptor asks for another (a flush-to-zero kernel, "denormal-fp-math-f32"="preserve-sign",
// or a directed rounding mode) is refused at launch, and an s_setreg that would establish one
// stops the run, each with an error naming the mode; s_getreg reads MODE back exactly. Other
// hardware registers are not emulated (reading or writing one stops the run).
#include <string>

#include "isa_fields.h"
#include "semantics.h"

namespace weft::emu {

using namespace fields;

namespace {

constexpr uint32_t kHwRegMode = 1;
constexpr uint32_t kEmulatedFloatModes = 0xF0;  // FP_ROUND 0 (nearest even), FP_DENORM 3 for f32 and f16/f64

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
  const uint32_t mode = (e.w.mode & ~r.mask()) | ((value << r.offset) & r.mask());
  if (const std::string why = unsupported_float_mode(mode); !why.empty()) e.fail("s_setreg would set MODE to " + std::to_string(mode) + ": " + why);
  e.w.mode = mode;
}

const char* round_name(uint32_t m) {
  static const char* const names[4] = {"nearest even", "+infinity", "-infinity", "zero"};
  return names[m & 3];
}
const char* denorm_name(uint32_t m) {
  static const char* const names[4] = {"flush inputs and outputs", "flush inputs", "flush outputs", "keep"};
  return names[m & 3];
}

}  // namespace

uint32_t initial_mode(uint32_t rsrc1) { return ((rsrc1 >> 12) & 0xFF) | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9; }

std::string unsupported_float_mode(uint32_t mode) {
  if ((mode & 0xFF) == kEmulatedFloatModes) return "";
  return std::string("float mode f32 rounding to ") + round_name(mode) + ", f16/f64 rounding to " + round_name(mode >> 2) +
         ", f32 denormals " + denorm_name(mode >> 4) + ", f16/f64 denormals " + denorm_name(mode >> 6) +
         " is not emulated (only rounding to nearest even with denormals kept is)";
}

void register_mode_semantics(SemanticsTable& t) {
  t["s_getreg_b32"] = s_getreg_b32;
  t["s_setreg_b32"] = s_setreg<false>;
  t["s_setreg_imm32_b32"] = s_setreg<true>;
}

}  // namespace weft::emu
