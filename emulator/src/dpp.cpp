// DPP (data-parallel primitives) for VOP1 and VOP2: src0 (32 or 64 bits) is read from another lane of the wave
// (quad permutes, row shifts and rotates, wave shifts, mirrors, broadcasts). A lane whose source
// lane lies outside its row (or the wave) reads 0 if bound_ctrl is set and is not written
// otherwise; rows and banks whose mask bit is clear are not written. The operation itself runs
// through its ordinary handler, src0 taken from a scratch row, EXEC narrowed to the lanes written.
#include <string>

#include "isa_fields.h"
#include "lanes.h"
#include "sdwa.h"

namespace weft::emu {
namespace {

// The lane `l` reads under `ctrl`, or -1 where there is none.
int source_lane(uint32_t ctrl, int l) {
  const int row = l & ~15, r = l & 15;
  if (ctrl <= 0xFF) return (l & ~3) | static_cast<int>((ctrl >> (2 * (l & 3))) & 3);
  if (ctrl >= 0x101 && ctrl <= 0x10F) return r + static_cast<int>(ctrl - 0x100) < 16 ? l + static_cast<int>(ctrl - 0x100) : -1;  // row_shl
  if (ctrl >= 0x111 && ctrl <= 0x11F) return r - static_cast<int>(ctrl - 0x110) >= 0 ? l - static_cast<int>(ctrl - 0x110) : -1;  // row_shr
  if (ctrl >= 0x121 && ctrl <= 0x12F) return row + ((r - static_cast<int>(ctrl - 0x120)) & 15);  // row_ror
  if (ctrl >= 0x150 && ctrl <= 0x15F) return row + static_cast<int>(ctrl - 0x150);  // row_newbcast
  switch (ctrl) {
    case 0x130: return l < 63 ? l + 1 : -1;  // wave_shl
    case 0x134: return (l + 1) & 63;         // wave_rol
    case 0x138: return l > 0 ? l - 1 : -1;   // wave_shr
    case 0x13C: return (l - 1) & 63;         // wave_ror
    case 0x140: return row + (15 - r);       // row_mirror
    case 0x141: return (l & ~7) | (7 - (l & 7));  // row_half_mirror
    case 0x142: return l >= 16 ? row - 1 : -1;    // row_bcast:15, lane 15 of the row below
    case 0x143: return l >= 32 ? 31 : -1;         // row_bcast:31
    default: return -2;                            // not a control this target has
  }
}

// `Dwords` 2: a 64-bit src0 (the "DP ALU" forms: v_mov_b64_dpp, v_fmac_f64_dpp, the f64
// conversions and rounding ops), read whole from the source lane. CDNA3/CDNA4 take only
// row_newbcast there (LLVM's assembler rejects, and its disassembler notes, any other control);
// another control stops the run, as its effect is not specified.
template <uint32_t Dwords>
void run_dpp(Exec& e, const Inst& in) {
  using namespace fields;
  const uint32_t ctrl = dpp_ctrl(in);
  if (source_lane(ctrl, 0) == -2) e.fail("DPP control 0x" + std::to_string(ctrl) + " is not valid on this target");
  if (Dwords == 2 && !(ctrl >= 0x150 && ctrl <= 0x15F))
    e.fail("DPP control 0x" + std::to_string(ctrl) + " on a 64-bit operand: the DP ALU takes only row_newbcast");
  const uint64_t exec = e.w.exec();
  uint64_t written = 0;
  for (int l = 0; l < kLanes; ++l) {
    if (!((exec >> l) & 1) || !((dpp_row_mask(in) >> (l >> 4)) & 1) || !((dpp_bank_mask(in) >> ((l >> 2) & 3)) & 1)) continue;
    const int s = source_lane(ctrl, l);
    const bool read = s >= 0 && ((exec >> s) & 1);
    if (!read && !dpp_bound_ctrl(in)) continue;
    for (uint32_t d = 0; d < Dwords; ++d) e.w.vreg(kSdwaSource0 + d)[l] = read ? e.w.vreg(dpp_src0(in) + d)[s] : 0;
    written |= uint64_t{1} << l;
  }
  e.w.set_exec(written);
  e.step->inner(e, in);
  e.w.set_exec(exec);
}

}  // namespace

void prepare_dpp(Step& step) {
  const Inst& in = step.inst;
  bool wide = false;
  for (const OperandSpec& op : operand_specs(*in.info)) wide |= op.field == Field::Src0 && op.width > 1;
  VectorOperands& o = step.vop;
  o.src[0] = 256 + kSdwaSource0;
  o.is_constant[0] = false;
  o.neg = (fields::dpp_neg(in, 0) ? 1u : 0u) | (fields::dpp_neg(in, 1) ? 2u : 0u);
  o.abs = (fields::dpp_abs(in, 0) ? 1u : 0u) | (fields::dpp_abs(in, 1) ? 2u : 0u);
  step.inner = step.handler;
  step.handler = wide ? run_dpp<2> : run_dpp<1>;
}

}  // namespace weft::emu
