// The operand fields of a VALU instruction in any of its encodings (VOP1, VOP2, VOPC, VOP3,
// VOP3P), extracted once when the program is built so that the e32 and e64 forms of an opcode
// share one handler body and no handler decodes fields while it runs.
#pragma once

#include <cstdint>

#include "isa_fields.h"
#include "weft/emulator/isa.h"

namespace weft::emu {

// Operand fields of a VALU instruction in any of its encodings.
struct VectorOperands {
  uint32_t src[3] = {0, 0, 0};  // 9-bit operand codes (VGPRs are 256 + index)
  // Sources whose value is known before the kernel runs (inline constants, the literal).
  bool is_constant[3] = {false, false, false};
  uint32_t constant[3] = {0, 0, 0};
  uint32_t vdst = 0;            // VGPR index, or SGPR code for compares and readlane
  uint32_t sdst = 106;          // carry-out / compare destination (vcc unless VOP3b names one)
  uint32_t neg = 0, abs = 0;
  bool clamp = false;
  uint32_t omod = 0;
  // VOP3: op_sel (bit i: source i's high half; bit 3: write the destination's high half).
  // VOP3P: op_sel / op_sel_hi pick each source's half for the low / high result; neg_hi is
  // kept in `abs` and neg_lo in `neg` (their encoding fields).
  uint32_t opsel = 0, opsel_hi = 7;
};

inline VectorOperands vector_operands(const Inst& in) {
  using namespace fields;
  VectorOperands o;
  switch (in.family) {
    case Family::VOP1:
      o.src[0] = vop_src0(in);
      o.vdst = vop_vdst(in);
      break;
    case Family::VOP2:
      o.src[0] = vop_src0(in);
      o.src[1] = 256 + vop_vsrc1(in);
      o.src[2] = 106;  // carry-in / select mask of the e32 forms
      o.vdst = vop_vdst(in);
      break;
    case Family::VOPC:
      o.src[0] = vop_src0(in);
      o.src[1] = 256 + vop_vsrc1(in);
      o.vdst = 106;
      break;
    default:  // VOP3 / VOP3P
      for (int i = 0; i < 3; ++i) o.src[i] = vop3_src(in, i);
      o.vdst = vop3_vdst(in);
      o.sdst = vop3_sdst(in);
      o.neg = vop3_neg(in);
      o.abs = vop3_abs(in);
      o.clamp = vop3_clamp(in);
      o.omod = vop3_omod(in);
      if (in.family == Family::VOP3P) {
        o.opsel = vop3p_opsel(in);
        o.opsel_hi = vop3p_opsel_hi(in);
        o.omod = 0;
      } else {
        o.opsel = vop3_opsel(in);
      }
      break;
  }
  for (int i = 0; i < 3; ++i) {
    const std::optional<uint32_t> value = o.src[i] == 255 && in.has_literal ? in.literal : inline_constant32(o.src[i]);
    o.is_constant[i] = value.has_value();
    o.constant[i] = value.value_or(0);
  }
  return o;
}

}  // namespace weft::emu
