// DPP (data-parallel primitives) for VOP1 and VOP2: src0 is read from another lane of the wave
// (quad permutes, row shifts and rotates, wave shifts, mirrors, broadcasts). A lane whose source
// lane lies outside its row (or the wave) reads 0 if bound_ctrl is set and is not written
// otherwise; rows and banks whose mask bit is clear are not written. The operation itself runs
// through its ordinary handler, src0 taken from a scratch row, EXEC narrowed to the lanes written.
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

void run_dpp(Exec& e, const Inst& in) {
  using namespace fields;
  const uint32_t ctrl = dpp_ctrl(in);
  if (source_lane(ctrl, 0) == -2) e.fail("DPP control 0x" + std::to_string(ctrl) + " is not valid on this target");
  const uint32_t* src = e.w.vreg(dpp_src0(in));
  uint32_t* s0 = e.w.vreg(kSdwaSource0);
  const uint64_t exec = e.w.exec();
  uint64_t written = 0;
  for (int l = 0; l < kLanes; ++l) {
    if (!((exec >> l) & 1) || !((dpp_row_mask(in) >> (l >> 4)) & 1) || !((dpp_bank_mask(in) >> ((l >> 2) & 3)) & 1)) continue;
    const int s = source_lane(ctrl, l);
    if (s >= 0 && ((exec >> s) & 1)) {
      s0[l] = src[s];
    } else if (dpp_bound_ctrl(in)) {
      s0[l] = 0;
    } else {
      continue;
    }
    written |= uint64_t{1} << l;
  }
  e.w.set_exec(written);
  e.step->inner(e, in);
  e.w.set_exec(exec);
}

void unsupported_dpp(Exec& e, const Inst&) { e.fail("DPP with 64-bit operands is not emulated"); }

}  // namespace

void prepare_dpp(Step& step) {
  const Inst& in = step.inst;
  for (const OperandSpec& op : operand_specs(*in.info))
    if (op.field == Field::Src0 && op.width > 1) {
      step.handler = unsupported_dpp;
      return;
    }
  VectorOperands& o = step.vop;
  o.src[0] = 256 + kSdwaSource0;
  o.is_constant[0] = false;
  o.neg = (fields::dpp_neg(in, 0) ? 1u : 0u) | (fields::dpp_neg(in, 1) ? 2u : 0u);
  o.abs = (fields::dpp_abs(in, 0) ? 1u : 0u) | (fields::dpp_abs(in, 1) ? 2u : 0u);
  step.inner = step.handler;
  step.handler = run_dpp;
}

}  // namespace weft::emu
