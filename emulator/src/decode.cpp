// Decoding: which family a word belongs to, its opcode, the table row, and the instruction size.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>
#include <cstring>
#include <mutex>
#include <vector>

#include "weft/emulator/isa.h"
#include "isa_fields.h"

namespace weft::emu {

namespace {

const OpcodeInfo kTable[] = {
#include "isa_tables.inc"
};

// Rows indexed by family and opcode; each family's opcodes fit in 10 bits.
struct OpcodeIndex {
  std::vector<std::array<const OpcodeInfo*, 2>> rows;  // [family * 1024 + opcode][target]
  static constexpr size_t kFamilies = static_cast<size_t>(Family::MTBUF) + 1;
  OpcodeIndex() : rows(kFamilies * 1024, {nullptr, nullptr}) {
    for (const OpcodeInfo& info : kTable)
      for (int t = 0; t < 2; ++t)
        if (info.targets & (1 << t)) {
          auto& slot = rows[static_cast<size_t>(info.family) * 1024 + info.opcode][t];
          if (!slot) slot = &info;
        }
  }
};

const OpcodeInfo* lookup(Family f, uint32_t opcode, Arch arch) {
  static const OpcodeIndex index;
  return index.rows[static_cast<size_t>(f) * 1024 + opcode][arch == Arch::Gfx950 ? 1 : 0];
}

std::optional<Family> classify(uint32_t w) {
  switch (w >> 23) {
    case 0x17F: return Family::SOPP;
    case 0x17E: return Family::SOPC;
    case 0x17D: return Family::SOP1;
    case 0x1A7: return Family::VOP3P;
    default: break;
  }
  if ((w >> 28) == 0xB) return Family::SOPK;
  if ((w >> 30) == 0x2) return Family::SOP2;
  if ((w >> 25) == 0x3F) return Family::VOP1;
  if ((w >> 25) == 0x3E) return Family::VOPC;
  if ((w >> 31) == 0) return Family::VOP2;
  switch (w >> 26) {
    case 0x30: return Family::SMEM;
    case 0x34: return Family::VOP3;
    case 0x36: return Family::DS;
    case 0x37:
      switch ((w >> 14) & 3) {
        case 0: return Family::FLAT;
        case 1: return Family::SCRATCH;
        case 2: return Family::GLOBAL;
        default: return std::nullopt;
      }
    case 0x38: return Family::MUBUF;
    case 0x3A: return Family::MTBUF;
    default: return std::nullopt;
  }
}

uint32_t opcode_of(Family f, uint32_t w) {
  switch (f) {
    case Family::SOP2: return (w >> 23) & 0x7F;
    case Family::SOPK: return (w >> 23) & 0x1F;
    case Family::SOP1: return (w >> 8) & 0xFF;
    case Family::SOPC: return (w >> 16) & 0x7F;
    case Family::SOPP: return (w >> 16) & 0x7F;
    case Family::SMEM: return (w >> 18) & 0xFF;
    case Family::VOP2: return (w >> 25) & 0x3F;
    case Family::VOP1: return (w >> 9) & 0xFF;
    case Family::VOPC: return (w >> 17) & 0xFF;
    case Family::VOP3: return (w >> 16) & 0x3FF;
    case Family::VOP3P: return (w >> 16) & 0x7F;
    case Family::DS: return (w >> 17) & 0xFF;
    case Family::FLAT:
    case Family::SCRATCH:
    case Family::GLOBAL:
    case Family::MUBUF: return (w >> 18) & 0x7F;
    case Family::MTBUF: return (w >> 15) & 0xF;
  }
  return 0;
}

bool is_64bit_encoding(Family f) {
  switch (f) {
    case Family::SMEM: case Family::VOP3: case Family::VOP3P: case Family::DS:
    case Family::FLAT: case Family::SCRATCH: case Family::GLOBAL: case Family::MUBUF: case Family::MTBUF:
      return true;
    default:
      return false;
  }
}

bool has_constant_operand(const OpcodeInfo& info) {
  for (const OperandSpec& op : operand_specs(info))
    if (op.field == Field::Fixed && std::string_view(op.text, op.width) == "K") return true;
  return false;
}

// Whether a 32-bit encoding carries a literal dword: an SOP/VOP source field that holds 255,
// or an opcode whose syntax has a constant (v_fmamk_f32, s_setreg_imm32_b32).
bool needs_literal(const Inst& in) {
  const uint32_t w = in.word[0];
  switch (in.family) {
    case Family::SOP2:
    case Family::SOPC: return (w & 0xFF) == 255 || ((w >> 8) & 0xFF) == 255;
    case Family::SOP1: return (w & 0xFF) == 255;
    case Family::SOPK: return has_constant_operand(*in.info);
    case Family::VOP1:
    case Family::VOP2:
    case Family::VOPC: return (w & 0x1FF) == 255 || has_constant_operand(*in.info);
    default: return false;
  }
}

Field field_named(std::string_view name) {
  if (name == "D") return Field::Dst;
  if (name == "SD") return Field::SDst;
  if (name == "S0") return Field::Src0;
  if (name == "S1") return Field::Src1;
  if (name == "S2") return Field::Src2;
  if (name == "A") return Field::Addr;
  if (name == "SA") return Field::SAddr;
  if (name == "B") return Field::SBase;
  if (name == "R") return Field::Rsrc;
  if (name == "SO") return Field::SOffset;
  return Field::Fixed;
}

// One operand token, "S0:v1@TupleClass#<kinds>'SourceClass" (each section optional):
// the field, kind and width, then the notes and verdicts the generator probed. `text` is the
// token's first character in the table's string literal, which outlives the spec.
void parse_operand(std::string_view token, const char* text, OperandSpec& spec) {
  const size_t colon = token.find(':');
  spec.field = field_named(token.substr(0, colon));
  spec.kind = token[colon + 1];
  const size_t sections = token.find_first_of("@#'");
  spec.width = static_cast<uint8_t>(std::atoi(std::string(token.substr(colon + 2, sections - colon - 2)).c_str()));
  for (size_t at = sections; at < token.size();) {
    const size_t next = token.find_first_of("@#'", at + 1);
    const size_t stop = next == std::string_view::npos ? token.size() : next;
    const char* body = text + at + 1;
    const auto size = static_cast<uint8_t>(stop - at - 1);
    switch (token[at]) {
      case '@': spec.tuple_note = body, spec.tuple_note_size = size; break;
      case '#': spec.classes = body; break;
      case '\'': spec.source_note = body, spec.source_note_size = size; break;
      default: break;
    }
    at = stop;
  }
}

// "D:v1 S0:v2 =vcc K" -> operand specs. Fixed texts point into the table's string literals.
std::vector<OperandSpec> parse_template(const char* tmpl) {
  std::vector<OperandSpec> out;
  const char* p = tmpl;
  if (*p == '!') {  // modifier flags, see modifier_flags()
    while (*p && *p != ' ') ++p;
    if (*p) ++p;
  }
  while (*p) {
    const char* end = p;
    while (*end && *end != ' ') ++end;
    std::string_view token(p, static_cast<size_t>(end - p));
    OperandSpec spec;
    const size_t colon = token.find(':');
    if (token[0] == '=' || token == "K") {
      spec.text = token[0] == '=' ? p + 1 : p;
      spec.width = static_cast<uint8_t>(token[0] == '=' ? token.size() - 1 : token.size());
    } else if (token[0] == '%') {  // an opcode attribute (opsel_layout), not an operand
      p = *end ? end + 1 : end;
      continue;
    } else if (colon != std::string_view::npos) {
      parse_operand(token, p, spec);
    }
    out.push_back(spec);
    p = *end ? end + 1 : end;
  }
  return out;
}

// Source operand codes no instruction of these targets accepts (reserved in the encoding).
bool reserved_source(uint32_t code) { return (code >= 209 && code <= 229) || (code >= 232 && code <= 234); }

// A 64-bit operand on an odd special register (xnack_mask_hi, vcc_hi, ...) is invalid; an odd
// SGPR or trap temporary is read from the even one below it (LLVM decodes it with a warning).
bool misaligned_pair(uint32_t code, int width) {
  // ttmps align like SGPRs; null (125) is a valid 64-bit operand, m0, the high halves and
  // src_lds_direct are not
  return width == 2 && (code == 103 || code == 105 || code == 107 || code == 124 || code == 127 || code == 231 || code == 254);
}

// A scalar tuple of three or more registers groups only SGPRs, trap temporaries, null and the
// inline constants: the 64-bit special registers, m0, exec and the apertures do not extend that far.
// SGPR and ttmp tuples are read from the register below aligned to 4 and must end within their
// range (s103 for tuples, ttmp15).
bool invalid_scalar_tuple(uint32_t code, int width) {
  if (width <= 2) return misaligned_pair(code, width);
  width = std::min(width, 16);  // a 1024-bit operand reads 16 scalar registers
  const uint32_t last = (code & ~3u) + static_cast<uint32_t>(width) - 1;
  if (code <= 101) return last > 103;  // LLVM forms SGPR tuples up to s[100:103] / s[88:103]
  if (code >= 108 && code <= 123) return last > 123;
  return (code >= 102 && code <= 107) || code == 124 || code == 126 || code == 127 || (code >= 230 && code <= 239) ||
         (code >= 251 && code <= 254);
}

// A memory instruction's AGPR data (the acc bit, word 1 bit 23) may not run past a255; LLVM prints
// VGPR data past v255 as it is.
bool agpr_past_end(const Inst& in, const OperandSpec& op, uint32_t reg) {
  const bool data = op.field == Field::Dst || op.field == Field::Src0;
  return data && op.kind != 's' && ((in.word[1] >> 23) & 1) && reg + op.width > 256;
}

bool valid_scalar_widths(const Inst& in) {
  const uint32_t w = in.word[0];
  for (const OperandSpec& op : operand_specs(*in.info)) {
    if (op.kind != 's') continue;
    uint32_t code = 0;
    switch (in.family) {
      case Family::SOP2: case Family::SOP1: case Family::SOPC: case Family::SOPK:
        code = op.field == Field::Dst ? (w >> 16) & 0x7F : op.field == Field::Src0 ? w & 0xFF : (w >> 8) & 0xFF;
        break;
      case Family::VOP3:
        if (op.field == Field::Dst) code = w & 0xFF;
        else if (op.field == Field::SDst) code = (w >> 8) & 0x7F;
        else continue;
        break;
      default: continue;
    }
    if (misaligned_pair(code, op.width)) return false;
    if (in.family == Family::VOP3 && op.field == Field::Dst && (reserved_source(code) || code == 249 || code == 250)) return false;
  }
  return true;
}

// Which of the three VOP3 sources an opcode's syntax has.
uint32_t sources_used(const OpcodeInfo& info) {
  uint32_t used = 0;
  for (const OperandSpec& op : operand_specs(info))
    if (op.field == Field::Src0 || op.field == Field::Src1 || op.field == Field::Src2)
      used |= 1u << (static_cast<int>(op.field) - static_cast<int>(Field::Src0));
  return used;
}

// Whether a VOP3 opcode's destination field names scalar registers (v_cmp*_e64).
bool scalar_destination(const OpcodeInfo& info) {
  for (const OperandSpec& op : operand_specs(info)) if (op.field == Field::Dst && op.kind == 's') return true;
  return false;
}

bool has_sdst(const OpcodeInfo& info) {
  for (const OperandSpec& op : operand_specs(info)) if (op.field == Field::SDst) return true;
  return false;
}

bool valid_vop3_modifiers(const Inst& in) {
  const OpcodeInfo& info = *in.info;
  const uint32_t w0 = in.word[0], w1 = in.word[1];
  const bool clamp = (w0 >> 15) & 1;
  if (clamp && !accepts(info, 'c')) return false;
  if (in.family == Family::VOP3P) {
    // neg_lo / neg_hi on a source the opcode does not have is invalid; MFMA keeps other fields
    // in those bits.
    const std::string_view m(info.mnemonic);
    if (m.find("mfma") != std::string_view::npos) {
      // With acc_cd (word 0 bit 15) C and D are AGPRs, which may not run past a255.
      // A and B tuples of AGPRs (acc bits, word 1 bits 27-28) may not run past a255 (VGPR ones
      // past v255 print as they are).
      for (const OperandSpec& op : operand_specs(info)) {
        const int i = op.field == Field::Src0 ? 0 : op.field == Field::Src1 ? 1 : -1;
        const uint32_t code = i < 0 ? 0 : (w1 >> (9 * i)) & 0x1FF;
        if (code >= 256 && ((w1 >> (27 + i)) & 1) && code - 256 + op.width > 256) return false;
      }
      if ((w0 >> 15) & 1)
        for (const OperandSpec& op : operand_specs(info)) {
          const uint32_t reg = op.field == Field::Dst ? (w0 & 0xFF) : op.field == Field::Src2 ? ((w1 >> 18) & 0x1FF) : 0;
          if (op.field == Field::Dst && reg + op.width > 256) return false;
          if (op.field == Field::Src2 && reg >= 256 && reg - 256 + op.width > 256) return false;
        }
      if (m.rfind("v_smfmac", 0) == 0 && (w1 >> 29)) return false;  // smfmac has no blgp
      if (((w0 >> 11) & 0xF) && !accepts(info, 'B')) return false;  // nor v_mfma_*_f8f6f4 an abid
      return true;
    }
    const uint32_t used = sources_used(info), neg_lo = w1 >> 29, neg_hi = (w0 >> 8) & 7;
    if ((neg_lo | neg_hi) && !accepts(info, 'n')) return false;
    const uint32_t opsel = (w0 >> 11) & 7;
    if (opsel && !accepts(info, 'S')) return false;  // op_sel, where LLVM has none (v_dot4_u32_u8)
    return !((neg_lo | neg_hi | opsel) & ~used);  // nor on a source the opcode does not have
  }
  const uint32_t neg = w1 >> 29, abs = (w0 >> 8) & 7, omod = (w1 >> 27) & 3;
  const bool vop3b = has_sdst(info);
  const SourceModifierModes modes = source_modifier_modes(info);
  for (int i = 0; i < 3; ++i) {
    if (((neg >> i) & 1) && modes.neg[i] == 'r') return false;
    if (!vop3b && ((abs >> i) & 1) && modes.abs[i] == 'r') return false;
  }
  if (!vop3b) {
    const OpSelLayout layout = opsel_layout(info);
    for (int b = 0; b < 4; ++b)
      if (((w0 >> (11 + b)) & 1) && layout.bit[b] == 'r') return false;
  }
  if (omod && !accepts(info, 'o')) return false;
  return true;
}

// A source code LLVM rejects in that operand of that opcode (OperandSpec::classes).
bool rejected_source_code(const Inst& in) {
  for (const OperandSpec& op : operand_specs(*in.info)) {
    if (!op.classes) continue;
    uint32_t code = 0;
    switch (in.family) {
      case Family::SOP2: case Family::SOP1: case Family::SOPC:
        code = op.field == Field::Src0 ? in.word[0] & 0xFF : (in.word[0] >> 8) & 0xFF;
        break;
      case Family::VOP1: case Family::VOP2: case Family::VOPC:
        code = op.field == Field::Dst ? (in.word[0] >> 17) & 0xFF : in.word[0] & 0x1FF;  // src0, or an SGPR destination
        break;
      case Family::VOP3: case Family::VOP3P:
        if (op.field == Field::Dst) code = in.word[0] & 0xFF;  // v_cmp*_e64's sdst
        else code = (in.word[1] >> (9 * (static_cast<int>(op.field) - static_cast<int>(Field::Src0)))) & 0x1FF;
        break;
      case Family::SMEM: code = (in.word[0] >> 6) & 0x7F; break;
      case Family::GLOBAL: case Family::SCRATCH:
        code = (in.word[1] >> 16) & 0x7F;
        if (code == 0x7F) continue;  // off
        break;
      default: continue;
    }
    if (fields::source_verdict(op, code) == 'R') return true;
  }
  return false;
}

// 64-bit and wider VALU sources follow the same rules when they name scalar registers (v_fmac_f64
// with exec_hi as src0 is invalid, an MFMA's C cannot be vcc); an s_buffer_* V# must lie in the
// SGPRs or the trap temporaries; SMEM data, FLAT saddr and memory VGPR data form valid tuples.
bool valid_wide_sources(const Inst& in) {
  for (const OperandSpec& op : operand_specs(*in.info)) {
    uint32_t code = 256;
    switch (in.family) {
      case Family::VOP1: case Family::VOP2: case Family::VOPC:
        if (op.field == Field::Src0) code = in.word[0] & 0x1FF;
        break;
      case Family::VOP3:
      case Family::VOP3P:
        if (op.field == Field::Src0 || op.field == Field::Src1 || op.field == Field::Src2)
          code = (in.word[1] >> (9 * (static_cast<int>(op.field) - static_cast<int>(Field::Src0)))) & 0x1FF;
        break;
      case Family::SMEM:
        if (op.field == Field::SBase && op.width == 4) {
          const uint32_t base = (in.word[0] & 0x3f) * 2;
          if (!(base <= 100 || (base >= 108 && base <= 122))) return false;  // SGPRs and ttmps align down
        }
        if ((op.field == Field::Dst || op.field == Field::SBase) && op.kind == 's') {
          const uint32_t data = op.field == Field::Dst ? (in.word[0] >> 6) & 0x7f : (in.word[0] & 0x3f) * 2;
          if (invalid_scalar_tuple(data, op.width)) return false;
        }
        break;
      case Family::FLAT: case Family::GLOBAL: case Family::SCRATCH: {
        const uint32_t saddr = (in.word[1] >> 16) & 0x7f;
        if (op.field == Field::SAddr && saddr != 0x7f && invalid_scalar_tuple(saddr, op.width)) return false;
        const uint32_t reg = op.field == Field::Dst ? in.word[1] >> 24 : (in.word[1] >> 8) & 0xff;
        if (agpr_past_end(in, op, reg)) return false;
        // A returning atomic (sc0) also writes vdst, as wide as its data (half of cmpswap's).
        const std::string_view m(in.info->mnemonic);
        if (op.field == Field::Src0 && m.find("atomic") != std::string_view::npos && ((in.word[0] >> 16) & 1)) {
          OperandSpec value = op;
          value.width = static_cast<uint8_t>(m.find("cmpswap") != std::string_view::npos ? op.width / 2 : op.width);
          if (agpr_past_end(in, value, in.word[1] >> 24)) return false;
        }
        break;
      }
      case Family::MUBUF: case Family::MTBUF:
        if (agpr_past_end(in, op, (in.word[1] >> 8) & 0xff)) return false;
        break;
      case Family::DS: {  // AGPR data and results (acc, word 0 bit 25) may not run past a255 either
        const int shift = op.field == Field::Dst ? 24 : op.field == Field::Src0 ? 8 : op.field == Field::Src1 ? 16 : -1;
        if (shift >= 0 && ((in.word[0] >> 25) & 1) && ((in.word[1] >> shift) & 0xff) + op.width > 256) return false;
        break;
      }
      default: break;
    }
    if (code < 256 && invalid_scalar_tuple(code, op.width)) return false;
  }
  return true;
}

// A source code in SDWA's scalar form (the S bit set): an SGPR, special register or inline
// constant; never a literal or another extended-encoding marker.
bool valid_sdwa_scalar(uint32_t code) { return !reserved_source(code) && code != 255 && code != 249 && code != 250; }

// The second dword of an SDWA or DPP word, against what LLVM accepts.
bool valid_extension(const Inst& in) {
  using namespace fields;
  const int sources = in.family == Family::VOP1 ? 1 : 2;
  auto mods = [&](int i) { return source_modifiers(in.info->mnemonic, i, in.sdwa); };
  if (in.sdwa) {
    if (!accepts(*in.info, 'W')) return false;
    if (in.family == Family::VOP1 && (in.word[1] >> 24) != 0) return false;  // no second source
    if (sdwa_scalar(in, 0) && !valid_sdwa_scalar(sdwa_src0(in))) return false;
    if (sources == 2 && sdwa_scalar(in, 1) && !valid_sdwa_scalar(vop_vsrc1(in))) return false;
    for (int i = 0; i < sources; ++i) {
      if ((mods(i) == SourceModifiers::Float || std::string_view(in.info->mnemonic).starts_with("v_pk_")) && sdwa_sext(in, i)) return false;  // v_pk_*: no sext
      if (mods(i) == SourceModifiers::Int && (sdwa_neg(in, i) || sdwa_abs(in, i))) return false;
    }
    if (fp8_decode(in.info->mnemonic)) return sdwa_dst_sel(in) == 6;  // DWORD only; clamp and omod apply to the f32 result
    if (in.family != Family::VOPC && !float_sources(in.info->mnemonic) && sdwa_omod(in)) return false;
    return true;
  }
  if (!accepts(*in.info, 'P')) return false;
  if (in.family == Family::VOP1 && ((in.word[1] >> 22) & 3)) return false;  // no second source to modify
  for (int i = 0; i < sources; ++i)
    if (mods(i) == SourceModifiers::Int && (dpp_neg(in, i) || dpp_abs(in, i))) return false;
  return true;
}

bool valid_sources(const Inst& in) {
  const uint32_t w = in.word[0];
  if (!valid_scalar_widths(in) || !valid_wide_sources(in) || rejected_source_code(in)) return false;
  switch (in.family) {
    case Family::SOP2:
    case Family::SOPC:
    case Family::SOP1: {  // the source fields the opcode has (s_getpc_b64 ignores its src0)
      const uint32_t used = sources_used(*in.info);
      for (int i = 0; i < 2; ++i) {
        const uint32_t code = (w >> (8 * i)) & 0xFF;
        if (((used >> i) & 1) && (reserved_source(code) || code == 249 || code == 250)) return false;
      }
      return true;
    }
    case Family::VOP1:
      if (accepts(*in.info, 'Z') && ((w >> 17) & 0xFF)) return false;  // v_nop, v_clrexcp: no vdst
      for (const OperandSpec& op : operand_specs(*in.info))  // v_readfirstlane_b32's SGPR destination
        if (op.field == Field::Dst && op.kind == 's' && reserved_source((w >> 17) & 0xFF)) return false;
      return !reserved_source(w & 0x1FF);
    case Family::VOP2:
    case Family::VOPC: return !reserved_source(w & 0x1FF);
    case Family::VOP3:
    case Family::VOP3P: {
      // The source fields the opcode does not have are ignored.
      const uint32_t checked = sources_used(*in.info);
      for (int i = 0; i < 3; ++i) {
        const uint32_t code = (in.word[1] >> (9 * i)) & 0x1FF;
        if (((checked >> i) & 1) && (reserved_source(code) || code == 249 || code == 250)) return false;
      }
      return valid_vop3_modifiers(in);
    }
    case Family::DS: {
      // Fields the opcode has no operand for must be zero.
      bool has[4] = {};  // vdst, addr, data0, data1
      for (const OperandSpec& op : operand_specs(*in.info)) {
        if (op.field == Field::Dst) has[0] = true;
        if (op.field == Field::Addr) has[1] = true;
        if (op.field == Field::Src0) has[2] = true;
        if (op.field == Field::Src1) has[3] = true;
      }
      const uint32_t w1 = in.word[1];
      if ((!has[0] && (w1 >> 24)) || (!has[1] && (w1 & 0xff)) || (!has[2] && ((w1 >> 8) & 0xff)) || (!has[3] && ((w1 >> 16) & 0xff)))
        return false;
      if (((w >> 16) & 1) && !accepts(*in.info, 'G')) return false;  // gds, where LLVM has none (ds_bpermute_b32)
      return !((w >> 25) & 1) || accepts(*in.info, 'A');
    }
    case Family::FLAT:  // no scalar address: saddr must be 0
      if ((in.word[1] >> 16) & 0x7f) return false;
      [[fallthrough]];
    case Family::GLOBAL:  // bit 13 is only the SVE bit of scratch (global_load_lds_* are opcodes of their own)
      if ((w >> 13) & 1) return false;
      if (((in.word[1] >> 23) & 1) && ((w >> 16) & 1) && !accepts(*in.info, (w >> 25) & 1 ? 'U' : 'T')) return false;  // AGPRs with sc0 (and sc1)
      return !((in.word[1] >> 23) & 1) || accepts(*in.info, 'A');
    case Family::SCRATCH:
      return !((in.word[1] >> 23) & 1) || accepts(*in.info, 'A');
    case Family::MUBUF:
    case Family::MTBUF: {
      const bool lds = in.family == Family::MUBUF && ((w >> 16) & 1);
      const uint32_t rsrc = ((in.word[1] >> 16) & 0x1f) * 4;
      const bool has_rsrc = !operand_specs(*in.info).empty();  // buffer_wbl2/inv ignore word 1's registers
      if (has_rsrc && !(rsrc <= 100 || (rsrc >= 108 && rsrc <= 120))) return false;  // V# in s[4n:4n+3] or ttmp[4n:4n+3]
      const uint32_t soffset = in.word[1] >> 24;
      if (has_rsrc && (reserved_source(soffset) || soffset == 249 || soffset == 250)) return false;  // no SDWA/DPP marker either
      const bool acc = (in.word[1] >> 23) & 1;
      if (lds && acc) return false;  // an LDS DMA has no AGPR data
      if (operand_specs(*in.info).empty() && ((w >> 12) & 3)) return false;  // buffer_wbl2/inv: no address
      return (!acc || accepts(*in.info, 'A')) && (!lds || accepts(*in.info, 'L'));
    }
    case Family::SOPP: return !operand_specs(*in.info).empty() || (w & 0xFFFF) == 0;
    case Family::SMEM: return !accepts(*in.info, 'I') || !((w >> 17) & 1);
    default: return true;
  }
}

}  // namespace

std::span<const OpcodeInfo> opcode_table() { return kTable; }

std::string_view modifier_flags(const OpcodeInfo& info) {
  if (info.operands[0] != '!') return {};
  const char* end = std::strchr(info.operands, ' ');
  return std::string_view(info.operands + 1, end ? static_cast<size_t>(end - info.operands - 1) : std::strlen(info.operands) - 1);
}

OpSelLayout opsel_layout(const OpcodeInfo& info) {
  OpSelLayout layout;
  const char* at = std::strstr(info.operands, "%opsel=");
  if (!at) return layout;
  at += 7;  // "4:0123"
  layout.length = static_cast<uint8_t>(at[0] - '0');
  for (int b = 0; b < 4; ++b) layout.bit[b] = at[2 + b];
  return layout;
}

SourceModifierModes source_modifier_modes(const OpcodeInfo& info) {
  SourceModifierModes modes;
  const char* neg = std::strstr(info.operands, "%neg=");
  const char* abs = std::strstr(info.operands, "%abs=");
  if (!neg || !abs) {  // not probed: the opcode's flags, and nothing on sources it lacks
    const uint32_t used = sources_used(info);
    for (int i = 0; i < 3; ++i) {
      modes.neg[i] = ((used >> i) & 1) && accepts(info, 'n') ? 'p' : 'r';
      modes.abs[i] = ((used >> i) & 1) && accepts(info, 'a') ? 'p' : 'r';
    }
    return modes;
  }
  for (int i = 0; i < 3; ++i) modes.neg[i] = neg[5 + i], modes.abs[i] = abs[5 + i];
  return modes;
}

// Each row's template is parsed when that row is first asked for: a kernel uses a few dozen of
// the table's opcodes, and parsing all of them up front cost a process's first launch ~1 ms.
std::span<const OperandSpec> operand_specs(const OpcodeInfo& info) {
  static std::vector<std::vector<OperandSpec>> specs(std::size(kTable));
  static std::vector<std::atomic<bool>> parsed(std::size(kTable));
  static std::mutex parsing;
  const size_t row = static_cast<size_t>(&info - kTable);
  if (!parsed[row].load(std::memory_order_acquire)) {
    const std::lock_guard lock(parsing);
    if (!parsed[row].load(std::memory_order_relaxed)) {
      specs[row] = parse_template(info.operands);
      parsed[row].store(true, std::memory_order_release);
    }
  }
  return specs[row];
}

namespace {

// gfx950's scaled f8f6f4 MFMA, 16 bytes (docs/mfma-f8f6f4.md 1.4): a v_mfma_ld_scale_b32 word
// (VOP3P op 0x2C: the two scale sources and their op_sel / op_sel_hi bits), then the f8f6f4 MFMA
// word with abid 1. Its table row is at opcode 0x100 | the MFMA's. The Inst keeps the MFMA's
// dwords in word[0..1], so that every MFMA field reads as it does unscaled, and the scale
// word's in word[2..3]. LLVM ignores the scale word's other bits (neg, clamp, its vdst field),
// and so does this. A scale word without such an MFMA after it (a standalone
// v_mfma_ld_scale_b32, whose effect the ISA does not document) is not decoded.
constexpr uint32_t kMfmaLdScale = 0x2C;

std::optional<Inst> decode_scaled_mfma(std::span<const uint8_t> bytes, Arch arch) {
  if (arch != Arch::Gfx950 || bytes.size() < 16) return std::nullopt;
  uint32_t w[4];
  std::memcpy(w, bytes.data(), 16);
  if (classify(w[2]) != Family::VOP3P || ((w[2] >> 11) & 0xF) != 1) return std::nullopt;
  Inst mfma;  // the MFMA half as the unscaled instruction (abid 0), for its own checks
  mfma.family = Family::VOP3P;
  mfma.size = 8;
  mfma.word[0] = w[2] & ~(0xFu << 11);
  mfma.word[1] = w[3];
  const uint32_t op = opcode_of(Family::VOP3P, w[2]);
  mfma.info = lookup(Family::VOP3P, op, arch);
  if (!mfma.info || !std::string_view(mfma.info->mnemonic).ends_with("_f8f6f4") || !valid_sources(mfma)) return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (const uint32_t code = (w[1] >> (9 * i)) & 0x1FF; code == 255 || code == 249 || code == 250 || reserved_source(code))
      return std::nullopt;  // LLVM rejects these scale sources (and crashes on a literal)
  Inst in;
  in.family = Family::VOP3P;
  in.info = lookup(Family::VOP3P, 0x100 | op, arch);
  if (!in.info) return std::nullopt;
  in.size = 16;
  in.word[0] = w[2];
  in.word[1] = w[3];
  in.word[2] = w[0];
  in.word[3] = w[1];
  return in;
}

}  // namespace

std::optional<Inst> decode(std::span<const uint8_t> bytes, Arch arch) {
  if (bytes.size() < 4) return std::nullopt;
  Inst in;
  std::memcpy(&in.word[0], bytes.data(), 4);
  const std::optional<Family> family = classify(in.word[0]);
  if (!family) return std::nullopt;
  in.family = *family;
  if (in.family == Family::VOP3P && opcode_of(in.family, in.word[0]) == kMfmaLdScale) return decode_scaled_mfma(bytes, arch);
  in.info = lookup(in.family, opcode_of(in.family, in.word[0]), arch);
  if (!in.info) return std::nullopt;
  if (is_64bit_encoding(in.family)) {
    if (bytes.size() < 8) return std::nullopt;
    std::memcpy(&in.word[1], bytes.data() + 4, 4);
    in.size = 8;
    if (!valid_sources(in)) return std::nullopt;
    if (in.family == Family::VOP3 || in.family == Family::VOP3P) {
      // LLVM 22 decodes a literal dword after VOP3/VOP3P when a source field the opcode has holds
      // 255, or a scalar destination does (v_cmp*_e64's sdst, printed as an invalid immediate).
      const uint32_t sources = sources_used(*in.info);
      bool literal = scalar_destination(*in.info) && (in.word[0] & 0xFF) == 255;
      for (int i = 0; i < 3; ++i) literal |= ((sources >> i) & 1) && ((in.word[1] >> (9 * i)) & 0x1FF) == 255;
      if (literal) {
        if (bytes.size() < 12) return std::nullopt;
        std::memcpy(&in.word[2], bytes.data() + 8, 4);
        in.size = 12;
        in.has_literal = true;
        in.literal = in.word[2];
      }
    }
    if ((in.family == Family::MUBUF || in.family == Family::MTBUF) && (in.word[1] >> 24) == 255) {
      if (bytes.size() < 12) return std::nullopt;  // soffset is a literal
      std::memcpy(&in.word[2], bytes.data() + 8, 4);
      in.size = 12;
      in.has_literal = true;
      in.literal = in.word[2];
    }
    return in;
  }
  if (!valid_sources(in)) return std::nullopt;
  const bool vop = in.family == Family::VOP1 || in.family == Family::VOP2 || in.family == Family::VOPC;
  if (vop && (in.word[0] & 0x1FF) == 249) in.sdwa = true;
  if (vop && (in.word[0] & 0x1FF) == 250) in.dpp = true;
  if (in.sdwa || in.dpp || needs_literal(in)) {
    if (bytes.size() < 8) return std::nullopt;
    std::memcpy(&in.word[1], bytes.data() + 4, 4);
    in.size = 8;
    if (!in.sdwa && !in.dpp) {
      in.has_literal = true;
      in.literal = in.word[1];
    } else if (!valid_extension(in)) {
      return std::nullopt;
    }
  }
  return in;
}

}  // namespace weft::emu
