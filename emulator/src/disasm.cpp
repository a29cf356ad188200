// Printing decoded instructions exactly as llvm-objdump-22 does. Where this printer does not know
// LLVM's exact text for an encoding (rare modifiers, DPP/SDWA controls, symbolic message ids) it
// declines with nullopt rather than print something different; the differential test against
// llvm-objdump holds it to that.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "isa_fields.h"
#include "weft/emulator/isa.h"

namespace weft::emu {

using namespace fields;

namespace {

// How LLVM prints inline constants and literals depends on the operand's type.
enum class ValType { B16, F16, BF16, B32, B64, F64 };

// The source operand type, read off the mnemonic's last type token (v_cvt_f32_f16: f16).
ValType source_type(std::string_view m) {
  if (m.find("dot") != std::string_view::npos || m.starts_with("v_pk_") || m.starts_with("v_sat_pk_"))
    return ValType::B32;  // packed sources, one dword
  const std::string_view best = last_type_token(m);
  if (best == "f16") return ValType::F16;
  if (best == "bf16") return ValType::BF16;
  if (best == "i16" || best == "u16" || best == "b16") return ValType::B16;
  if (best == "f64") return ValType::F64;
  if (best == "i64" || best == "u64" || best == "b64") return ValType::B64;
  return ValType::B32;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string dec(int64_t v) { return std::to_string(v); }

std::string reg_range(char kind, uint32_t first, int width) {
  if (width == 1) return std::string(1, kind) + std::to_string(first);
  return std::string(1, kind) + "[" + std::to_string(first) + ":" + std::to_string(first + width - 1) + "]";
}

// The register an operand's field names, for the families where fields are plain registers.
// An odd-aligned tuple is printed with the note LLVM adds (read off llvm-objdump for the
// operand, `spec`), or declined where the note is not known for this operand and kind.
std::optional<std::string> vector_reg(uint32_t index, char kind, int width, const OperandSpec* spec = nullptr) {
  // LLVM prints a VGPR tuple past v255 as it is (v[254:257]); an AGPR one it rejects.
  if (index + width > 256 && kind != 'v') return std::nullopt;
  if (width >= 2 && (index & 1)) {
    if (!spec || !spec->tuple_note) return std::nullopt;
    const std::string_view note(spec->tuple_note, spec->tuple_note_size);
    // A note read off a VGPR probe holds for AGPRs too when the class is AV_* (either kind).
    if (spec->kind != kind && note.rfind("AV_", 0) != 0) return std::nullopt;
    if (note.empty()) return reg_range(kind, index, width);
    return reg_range(kind, index, width) + "/*Invalid register, operand has '" + std::string(note) + "' register class*/";
  }
  return reg_range(kind, index, width);
}

// Scalar register names 0..127 (SGPRs and the special registers of the operand encoding).
std::optional<std::string> scalar_reg(uint32_t v, int width) {
  width = std::min(width, 16);  // LLVM's widest scalar tuple: a 1024-bit operand prints 16 SGPRs
  if (width == 6) width = 5;    // and a 192-bit one (an fp6 vector) five, as llvm-objdump-22 does
  if (v <= 101) {
    // A misaligned SGPR tuple is read from the aligned register below it; llvm-objdump prints it
    // so, with a warning after the instruction.
    v &= ~static_cast<uint32_t>(width >= 4 ? 3 : width == 2 ? 1 : 0);
    if (width > 1 && v + width - 1 > 103) return std::nullopt;  // tuples reach s[100:103] (s102-s103 alias flat_scratch)
    return reg_range('s', v, width);
  }
  struct Pair { uint32_t base; const char *lo, *hi, *both; };
  static const Pair pairs[] = {{102, "flat_scratch_lo", "flat_scratch_hi", "flat_scratch"},
                               {104, "xnack_mask_lo", "xnack_mask_hi", "xnack_mask"},
                               {106, "vcc_lo", "vcc_hi", "vcc"},
                               {126, "exec_lo", "exec_hi", "exec"}};
  for (const Pair& p : pairs) {
    if (width == 1 && v == p.base) return p.lo;
    if (width == 1 && v == p.base + 1) return p.hi;
    if (width == 2 && v == p.base) return p.both;
  }
  if (v >= 108 && v <= 123) {
    const uint32_t t = (v - 108) & ~static_cast<uint32_t>(width >= 4 ? 3 : width == 2 ? 1 : 0);  // aligned like SGPRs
    if (t + width > 16) return std::nullopt;
    if (width == 1) return "ttmp" + std::to_string(t);
    return "ttmp[" + std::to_string(t) + ":" + std::to_string(t + width - 1) + "]";
  }
  if (width == 1 && v == 124) return "m0";
  if (v == 125) return "null";
  return std::nullopt;
}

// An inline constant, which LLVM negates as neg(c) (-c could read as another constant).
bool inline_constant_code(uint32_t code) { return (code >= 128 && code <= 208) || (code >= 240 && code <= 248); }

// The float inline constants 240..248 as LLVM prints them for each operand type.
const char* inline_float(uint32_t code, ValType t) {
  static const char* names[] = {"0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0"};
  if (code < 248) return names[code - 240];
  return t == ValType::F64 || t == ValType::B64 ? "0.15915494309189532" : "0.15915494";
}

bool is_inline_int(int64_t v) { return v >= -16 && v <= 64; }

bool f32_bits_inline(uint32_t b) {
  for (uint32_t x : kInlineFloatBits) if (b == x) return true;
  return is_inline_int(static_cast<int32_t>(b));
}

bool f16_bits_inline(uint32_t b) {
  static const uint32_t c[] = {0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118};
  for (uint32_t x : c) if (b == x) return true;
  return is_inline_int(static_cast<int16_t>(b));
}

std::string literal_text(uint32_t lit, ValType t) {
  switch (t) {
    case ValType::F16:
    case ValType::BF16:
      return f16_bits_inline(lit & 0xffff) ? "lit(" + hex(lit) + ")" : hex(lit & 0xffff);
    case ValType::B16:  // lit(...) when the whole dword is an inline integer; else its low half
      return is_inline_int(static_cast<int32_t>(lit)) ? "lit(" + hex(lit) + ")" : hex(lit & 0xffff);
    default:
      return f32_bits_inline(lit) ? "lit(" + hex(lit) + ")" : hex(lit);
  }
}

std::optional<std::string> source_text(const Inst& in, uint32_t code, char kind, int width, ValType t, const OperandSpec* spec);

// A 32-bit literal of an f64 operand holds the high half of the double: LLVM prints the value
// when it is an inline constant (0, +-0.5, +-1, +-2, +-4), else the dword.
std::string f64_literal_text(uint32_t hi) {
  static const char* names[] = {"0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0"};
  static const uint32_t his[] = {0x3fe00000, 0xbfe00000, 0x3ff00000, 0xbff00000, 0x40000000, 0xc0000000, 0x40100000, 0xc0100000};
  if (hi == 0) return "0";
  for (int i = 0; i < 8; ++i) if (hi == his[i]) return names[i];
  return hex(hi);
}

// A 9-bit (or 8-bit scalar) source operand: a register, an inline constant or the literal, with
// the note LLVM adds where the operand's class does not take that kind of code.
std::optional<std::string> source(const Inst& in, uint32_t code, char kind, int width, ValType t,
                                  const OperandSpec* spec = nullptr) {
  const char verdict = spec ? source_verdict(*spec, code) : '.';
  if (code == 254 && kind == 's' && !(spec && spec->classes)) return std::nullopt;  // a note not probed here
  // A constant the operand's class does not take prints as a 32-bit one (1/(2 pi) short).
  std::optional<std::string> text = verdict == 'I' ? source_text(in, code, kind, 1, ValType::B32, spec)
                                                   : source_text(in, code, kind, width, t, spec);
  if (!text || verdict == '.') return text;
  if (verdict == 'I') return *text + "/*Invalid immediate*/";
  if (verdict == 'N' && spec->source_note)
    return *text + "/*Invalid register, operand has '" + std::string(spec->source_note, spec->source_note_size) + "' register class*/";
  return std::nullopt;
}

std::optional<std::string> source_text(const Inst& in, uint32_t code, char kind, int width, ValType t, const OperandSpec* spec) {
  if (width == 1 && (t == ValType::B64 || t == ValType::F64)) t = ValType::B32;  // s_lshl_b64's shift
  if (width == 2 && t == ValType::B32) t = ValType::B64;  // a pair (s_cbranch_g_fork): 64-bit constants
  if (code >= 256) {
    if (kind == 's') return std::nullopt;
    return vector_reg(code - 256, kind == 'a' ? 'a' : 'v', width, spec);
  }
  if (code < 128) return scalar_reg(code, width);
  if (code <= 192) return dec(static_cast<int>(code) - 128);
  if (code <= 208) return dec(192 - static_cast<int>(code));
  if (code >= 240 && code <= 248) {
    static const char* f16_bits[] = {"0x3800", "0xb800", "0x3c00", "0xbc00", "0x4000", "0xc000", "0x4400", "0xc400", "0x3118"};
    if (t == ValType::B16) return f16_bits[code - 240];  // 16-bit integer operands print the f16 pattern
    return inline_float(code, t);  // bf16 operands print the f32 names
  }
  switch (code) {
    case 235: return "src_shared_base";
    case 236: return "src_shared_limit";
    case 237: return "src_private_base";
    case 238: return "src_private_limit";
    case 239: return "src_pops_exiting_wave_id";
    case 230: return "src_flat_scratch_base_lo";
    case 231: return "src_flat_scratch_base_hi";
    case 254: return "src_lds_direct";
    case 251: return "src_vccz";
    case 252: return "src_execz";
    case 253: return "src_scc";
    case 255:
      if (!in.has_literal) return std::nullopt;
      if (width > 1 && kind != 's') {  // a 64-bit (or wider MFMA) VALU operand
        if (t == ValType::F64) return f64_literal_text(in.literal);
        if (t == ValType::B64) return in.literal <= 64 ? "lit(" + hex(in.literal) + ")" : hex(in.literal);  // zero-extended
        return literal_text(in.literal, ValType::B32);
      }
      return literal_text(in.literal, t);
    default: return std::nullopt;
  }
}

struct Printer {
  const Inst& in;
  Arch arch;
  std::string_view mnemonic;
  std::string out;
  bool ok = true;
  bool first = true;

  void operand(const std::optional<std::string>& text) {
    if (!text) {
      ok = false;
      return;
    }
    out += first ? " " : ", ";
    out += *text;
    first = false;
  }
  void modifier(const std::string& text) { out += " " + text; }
};

// s_sendmsg's immediate: message id (bits 3:0), operation (6:4) and stream (9:8). A message
// gfx9 names, with an operation and stream it takes, prints symbolically (other bits ignored);
// otherwise the three fields as numbers when they are the whole immediate, else the number.
std::string sendmsg_text(uint32_t imm) {
  static const char* messages[16] = {nullptr, "MSG_INTERRUPT", "MSG_GS", "MSG_GS_DONE", "MSG_SAVEWAVE",
                                     "MSG_STALL_WAVE_GEN", "MSG_HALT_WAVES", "MSG_ORDERED_PS_DONE",
                                     "MSG_EARLY_PRIM_DEALLOC", "MSG_GS_ALLOC_REQ", "MSG_GET_DOORBELL",
                                     nullptr, nullptr, nullptr, nullptr, "MSG_SYSMSG"};
  static const char* gs_ops[4] = {"GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT"};
  static const char* sys_ops[8] = {nullptr, "SYSMSG_OP_ECC_ERR_INTERRUPT", "SYSMSG_OP_REG_RD", nullptr,
                                   "SYSMSG_OP_TTRACE_PC", nullptr, nullptr, nullptr};
  const uint32_t id = imm & 0xf, op = (imm >> 4) & 7, stream = (imm >> 8) & 3;
  const std::string name = messages[id] ? messages[id] : "";
  if (id == 2 || id == 3) {  // MSG_GS, MSG_GS_DONE: an operation; a stream unless GS_OP_NOP
    if (op == 0 && id == 3 && stream == 0) return "sendmsg(" + name + ", " + gs_ops[0] + ")";
    if (op >= 1 && op <= 3) return "sendmsg(" + name + ", " + gs_ops[op] + ", " + dec(stream) + ")";
  } else if (id == 15) {
    if (sys_ops[op] && stream == 0) return "sendmsg(" + name + ", " + sys_ops[op] + ")";
  } else if (!name.empty() && op == 0 && stream == 0) {
    return "sendmsg(" + name + ")";
  }
  if (imm == (id | (op << 4) | (stream << 8))) return "sendmsg(" + dec(id) + ", " + dec(op) + ", " + dec(stream) + ")";
  return dec(imm);
}

// s_set_gpr_idx_mode / _on: which operands index (bits 3:0), or the number when other bits are set.
std::string gpr_idx_text(uint32_t imm) {
  if (imm > 15) return hex(imm);
  static const char* names[4] = {"SRC0", "SRC1", "SRC2", "DST"};
  std::string list;
  for (int i = 0; i < 4; ++i)
    if ((imm >> i) & 1) list += std::string(list.empty() ? "" : ",") + names[i];
  return "gpr_idx(" + list + ")";
}

void print_sop(Printer& p, const OperandSpec& op) {
  ValType t = source_type(p.mnemonic);
  if (t == ValType::B16) t = ValType::B32;  // scalar literals are always a whole dword
  switch (op.field) {
    case Field::Dst: p.operand(scalar_reg(sop_sdst(p.in), op.width)); break;
    case Field::Src0: p.operand(source(p.in, sop_ssrc0(p.in), 's', op.width, t, &op)); break;
    case Field::Src1: p.operand(source(p.in, sop_ssrc1(p.in), 's', op.width, t, &op)); break;
    default:
      if (p.mnemonic == "s_set_gpr_idx_on") p.operand(gpr_idx_text(sop_ssrc1(p.in)));  // the mode in the src1 field
      else p.ok = false;
      break;
  }
}

std::string hwreg_text(uint32_t imm) {
  static const char* names[32] = {nullptr, "MODE", "STATUS", "TRAPSTS", "HW_ID", "GPR_ALLOC", "LDS_ALLOC", "IB_STS",
                                   nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, "SH_MEM_BASES",
                                   "TBA_LO", "TBA_HI", "TMA_LO", "TMA_HI", "XCC_ID", "SQ_PERF_SNAPSHOT_DATA",
                                   "SQ_PERF_SNAPSHOT_DATA1", "SQ_PERF_SNAPSHOT_PC_LO", "SQ_PERF_SNAPSHOT_PC_HI"};
  const uint32_t id = imm & 0x3f, offset = (imm >> 6) & 0x1f, size = ((imm >> 11) & 0x1f) + 1;
  const std::string name = id < 32 && names[id] ? std::string("HW_REG_") + names[id] : std::to_string(id);
  if (offset == 0 && size == 32) return "hwreg(" + name + ")";
  return "hwreg(" + name + ", " + std::to_string(offset) + ", " + std::to_string(size) + ")";
}

// s_setreg_imm32_b32's constant: LLVM prints a value that an inline constant could hold as that
// constant (3, -1, 1.0), anything else in hex.
std::string sopk_constant_text(uint32_t k) {
  if (is_inline_int(static_cast<int32_t>(k))) return std::to_string(static_cast<int32_t>(k));
  for (uint32_t i = 0; i < 9; ++i)
    if (k == kInlineFloatBits[i]) return inline_float(240 + i, ValType::B32);
  return hex(k);
}

void print_sopk(Printer& p) {
  const uint32_t imm = simm16(p.in);
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    const std::string_view fixed(op.text ? op.text : "", op.text ? op.width : 0);
    if (op.field == Field::Dst) p.operand(scalar_reg(sop_sdst(p.in), op.width));
    else if (fixed == "K") p.operand(sopk_constant_text(p.in.literal));
    else if (fixed.rfind("hwreg(", 0) == 0) p.operand(hwreg_text(imm));
    else if (fixed == "8" || fixed == "3)") continue;  // the rest of hwreg(...)
    else if (p.mnemonic == "s_cbranch_i_fork" || p.mnemonic == "s_call_b64") p.operand(dec(imm));
    else p.operand(hex(imm));
  }
}

std::string waitcnt_text(uint32_t imm) {
  const uint32_t vm = fields::waitcnt_vm(imm), exp = fields::waitcnt_exp(imm), lgkm = fields::waitcnt_lgkm(imm);
  std::string s;
  const bool all_max = vm == 63 && exp == 7 && lgkm == 15;
  if (vm != 63 || all_max) s += "vmcnt(" + std::to_string(vm) + ")";
  if (exp != 7 || all_max) s += std::string(s.empty() ? "" : " ") + "expcnt(" + std::to_string(exp) + ")";
  if (lgkm != 15 || all_max) s += std::string(s.empty() ? "" : " ") + "lgkmcnt(" + std::to_string(lgkm) + ")";
  return s;
}

void print_sopp(Printer& p) {
  const uint32_t imm = simm16(p.in);
  const auto specs = operand_specs(*p.in.info);
  if (specs.empty()) {
    if (imm != 0) p.ok = false;
    return;
  }
  if (imm == 0 && accepts(*p.in.info, 'z')) return;  // s_endpgm prints no 0
  if (p.mnemonic == "s_waitcnt") {
    p.operand(waitcnt_text(imm));
  } else if (p.mnemonic == "s_sendmsg" || p.mnemonic == "s_sendmsghalt") {
    p.operand(sendmsg_text(imm));
  } else if (p.mnemonic == "s_set_gpr_idx_mode") {
    p.operand(gpr_idx_text(imm));
  } else if (p.mnemonic.rfind("s_cbranch", 0) != 0 && p.mnemonic != "s_branch" && p.mnemonic != "s_endpgm") {
    p.operand(imm <= 64 ? dec(imm) : hex(imm));
  } else {
    p.operand(dec(imm));
  }
}

void print_smem(Printer& p) {
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    if (op.field == Field::Dst) {
      p.operand(source(p.in, smem_sdata(p.in), 's', op.width, ValType::B32, &op));  // m0, exec: LLVM's notes
    } else if (op.text && std::string_view(op.text, op.width) == "12") {  // s_atc_probe: sdata is an immediate
      p.operand(smem_sdata(p.in) <= 64 ? dec(smem_sdata(p.in)) : hex(smem_sdata(p.in)));
    }
    else if (op.field == Field::SBase) p.operand(scalar_reg(smem_sbase(p.in), op.width));
    else if (op.text && std::string_view(op.text, op.width) == "0x40") {
      // imm: a signed 21-bit byte offset, after an SGPR offset when soe is set. Without imm, one
      // SGPR: the soffset field when soe is set, else the offset field.
      // (the nv bit has no syntax on these targets: llvm-objdump prints nothing for it)
      const int32_t off = smem_offset(p.in);
      const std::string off_text = off < 0 ? "-" + hex(static_cast<uint32_t>(-off)) : hex(static_cast<uint32_t>(off));
      if (!smem_imm(p.in)) {
        p.operand(scalar_reg(smem_soe(p.in) ? smem_soffset(p.in) : p.in.word[1] & 0x7f, 1));
      } else if (smem_soe(p.in)) {
        p.operand(scalar_reg(smem_soffset(p.in), 1));
        p.modifier("offset:" + off_text);
      } else {
        p.operand(off_text);
      }
    } else {
      p.ok = false;
    }
  }
  // s_dcache_*, s_memtime and s_dcache_discard have no glc syntax
  if (smem_glc(p.in) && !accepts(*p.in.info, 'I') && !p.mnemonic.starts_with("s_dcache") && !p.mnemonic.starts_with("s_atc_probe"))
    p.modifier("glc");
}


// Source modifiers of VOP3: neg and abs, where the opcode's source takes them (LLVM accepts and
// ignores them on integer sources such as v_ldexp's exponent).
std::optional<std::string> vop3_source(const Printer& p, int i, const OperandSpec& op, ValType t, bool has_sdst) {
  std::optional<std::string> s = source(p.in, vop3_src(p.in, i), op.kind, op.width, t, &op);
  if (!s) return s;
  const SourceModifierModes modes = source_modifier_modes(*p.in.info);
  const bool abs = !has_sdst && ((vop3_abs(p.in) >> i) & 1) && modes.abs[i] == 'p';  // VOP3b keeps sdst in those bits
  const bool neg = ((vop3_neg(p.in) >> i) & 1) && modes.neg[i] == 'p';
  // (llvm-objdump-22 crashes on most VOP3 literals; where it does not, a negated one is neg(...))
  const bool constant = inline_constant_code(vop3_src(p.in, i)) || vop3_src(p.in, i) == 255;
  if (abs) s = "|" + *s + "|";
  if (neg) s = constant && !abs ? "neg(" + *s + ")" : "-" + *s;
  return s;
}

std::string extended_mnemonic(std::string_view m, const char* suffix) {
  std::string s(m);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, "_e32") == 0) s.resize(s.size() - 4);
  return s + suffix;
}

const char* sdwa_sel_name(uint32_t sel) {
  static const char* names[] = {"BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD"};
  return sel < 7 ? names[sel] : nullptr;
}

// An operand read as another register class than the table's probe saw (AGPRs for VGPRs, a
// narrower MFMA operand, DPP's VGPR-only src0): a copy of its spec whose notes are rewritten.
// It owns the rewritten texts, which its spec points into, so it is neither copied nor moved.
class RenotedOperand {
 public:
  OperandSpec spec;
  explicit RenotedOperand(const OperandSpec& op) : spec(op) {}
  RenotedOperand(const RenotedOperand&) = delete;
  RenotedOperand& operator=(const RenotedOperand&) = delete;
  // Replaces each note the operand has (tuple and source) with `rename(old class name)`.
  template <class Rename>
  void rename_classes(Rename rename) {
    rename_one(spec.tuple_note, spec.tuple_note_size, tuple_note_, rename);
    rename_one(spec.source_note, spec.source_note_size, source_note_, rename);
  }

 private:
  std::string tuple_note_, source_note_;
  template <class Rename>
  static void rename_one(const char*& text, uint8_t& size, std::string& owned, Rename rename) {
    if (!text) return;
    owned = rename(std::string(text, size));
    text = owned.c_str();
    size = static_cast<uint8_t>(owned.size());
  }
};

// A source of an SDWA or DPP word with its modifiers: -|x| for float sources (neg(c) for a
// negated integer constant, as in VOP3), sext(x) for integer ones.
std::optional<std::string> modified(std::optional<std::string> s, SourceModifiers kind, bool neg, bool abs, bool sext,
                                    uint32_t code = 256) {
  if (!s || kind == SourceModifiers::None) return s;
  if (kind == SourceModifiers::Int) return sext ? "sext(" + *s + ")" : *s;
  if (abs) s = "|" + *s + "|";
  if (neg) s = inline_constant_code(code) && !abs ? "neg(" + *s + ")" : "-" + *s;
  return s;
}

// The operands of an SDWA or DPP word: those of the e32 form, with the sources read from the
// extra dword; VOPC's vcc becomes the SDWA sdst where SD is set.
void extended_operands(Printer& p) {
  auto kind = [&](int i) { return source_modifiers(p.in.info->mnemonic, i, p.in.sdwa); };
  const ValType t = source_type(p.mnemonic);
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    const std::string_view fixed(op.text ? op.text : "", op.text ? op.width : 0);
    const bool pair_ok = (p.in.dpp && op.width == 2) ||  // 64-bit DPP (DP ALU)
                         (p.in.sdwa && op.field == Field::Dst && fp8_decode(p.in.info->mnemonic));  // v_cvt_pk_f32_fp8/bf8
    if (op.width != 1 && op.field != Field::Fixed && !pair_ok) {
      p.ok = false;
      return;
    }
    switch (op.field) {
      case Field::Dst:
        if (op.kind == 's') p.ok = false;
        else p.operand(vector_reg(vop_vdst(p.in), op.kind, op.width, &op));
        break;
      case Field::Src0:
        if (p.in.sdwa) {
          const uint32_t code = sdwa_scalar(p.in, 0) ? sdwa_src0(p.in) : 256 + sdwa_src0(p.in);
          p.operand(modified(source(p.in, code, op.kind, 1, t, &op), kind(0), sdwa_neg(p.in, 0), sdwa_abs(p.in, 0), sdwa_sext(p.in, 0), code));
        } else {
          // DPP's src0 is a VGPR: where the e32 form notes VS_64_Align2, DPP notes VReg_64_Align2.
          RenotedOperand vgpr(op);
          vgpr.rename_classes([](std::string note) { return note.starts_with("VS_") ? note.replace(0, 3, "VReg_") : note; });
          p.operand(modified(vector_reg(dpp_src0(p.in), op.kind, op.width, &vgpr.spec), kind(0), dpp_neg(p.in, 0), dpp_abs(p.in, 0), false));
        }
        break;
      case Field::Src1:
        if (p.in.sdwa) {
          const uint32_t code = sdwa_scalar(p.in, 1) ? vop_vsrc1(p.in) : 256 + vop_vsrc1(p.in);
          p.operand(modified(source(p.in, code, 'v', 1, t, &op), kind(1), sdwa_neg(p.in, 1), sdwa_abs(p.in, 1), sdwa_sext(p.in, 1), code));
        } else {
          p.operand(modified(vector_reg(vop_vsrc1(p.in), op.kind, op.width, &op), kind(1), dpp_neg(p.in, 1), dpp_abs(p.in, 1), false));
        }
        break;
      case Field::Fixed:
        if (fixed == "vcc" && p.in.family == Family::VOPC && p.in.sdwa && sdwa_sd(p.in)) p.operand(scalar_reg(sdwa_sdst(p.in), 2));
        else if (fixed == "K") p.ok = false;
        else p.operand(std::string(fixed));
        break;
      default: p.ok = false; break;
    }
  }
}

void print_sdwa(Printer& p) {
  p.out = extended_mnemonic(p.mnemonic, "_sdwa");
  extended_operands(p);
  const char* src0 = sdwa_sel_name(sdwa_sel(p.in, 0));
  const char* src1 = sdwa_sel_name(sdwa_sel(p.in, 1));
  if (p.in.family == Family::VOPC) {
    if (!src0 || !src1) p.ok = false;
    else p.modifier(std::string("src0_sel:") + src0 + " src1_sel:" + src1);
    return;
  }
  const char* dst = sdwa_sel_name(sdwa_dst_sel(p.in));
  static const char* unused[] = {"UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "UNUSED_PAD"};  // LLVM reads 3 as PAD
  if (!dst || !src0 || (p.in.family == Family::VOP2 && !src1)) {
    p.ok = false;  // LLVM misprints or crashes on these; weft declines
    return;
  }
  if (sdwa_clamp(p.in)) p.modifier("clamp");
  static const char* omod[] = {"", "mul:2", "mul:4", "div:2"};
  if (sdwa_omod(p.in)) p.modifier(omod[sdwa_omod(p.in)]);
  if (fp8_decode(p.in.info->mnemonic)) return p.modifier(std::string("src0_sel:") + src0);  // no dst_sel, dst_unused
  std::string sels = std::string("dst_sel:") + dst + " dst_unused:" + unused[sdwa_dst_unused(p.in)] + " src0_sel:" + src0;
  if (p.in.family == Family::VOP2) sels += std::string(" src1_sel:") + src1;
  p.modifier(sels);
}

std::string dpp_control(uint32_t c) {
  if (c <= 0xFF)
    return "quad_perm:[" + dec(c & 3) + "," + dec((c >> 2) & 3) + "," + dec((c >> 4) & 3) + "," + dec((c >> 6) & 3) + "]";
  if (c >= 0x101 && c <= 0x10F) return "row_shl:" + dec(c - 0x100);
  if (c >= 0x111 && c <= 0x11F) return "row_shr:" + dec(c - 0x110);
  if (c >= 0x121 && c <= 0x12F) return "row_ror:" + dec(c - 0x120);
  switch (c) {
    case 0x130: return "wave_shl:1";
    case 0x134: return "wave_rol:1";
    case 0x138: return "wave_shr:1";
    case 0x13C: return "wave_ror:1";
    case 0x140: return "row_mirror";
    case 0x141: return "row_half_mirror";
    case 0x142: return "row_bcast:15";
    case 0x143: return "row_bcast:31";
    default: break;
  }
  if (c >= 0x150 && c <= 0x15F) return "row_newbcast:" + dec(c - 0x150);
  if (c >= 0x160 && c <= 0x16F) return "/* row_xmask is not supported on ASICs earlier than GFX10 */";
  return "/* Invalid dpp_ctrl value */";
}

// Whether a VOP1/VOP2 opcode works on 64-bit operands: its DPP form is the DP ALU one, which has
// only row_newbcast (LLVM prints a note in place of any other control).
bool dp_alu(const OpcodeInfo& info) {
  for (const OperandSpec& op : operand_specs(info)) if (op.width == 2 && op.field != Field::Fixed) return true;
  return false;
}

void print_dpp(Printer& p) {
  p.out = extended_mnemonic(p.mnemonic, "_dpp");
  extended_operands(p);
  const uint32_t ctrl = dpp_ctrl(p.in);
  const bool newbcast = ctrl >= 0x150 && ctrl <= 0x15F;
  const std::string control = dp_alu(*p.in.info) && !newbcast ? " /* DP ALU dpp only supports row_newbcast */" : dpp_control(ctrl);
  p.modifier(control + " row_mask:" + hex(dpp_row_mask(p.in)) + " bank_mask:" + hex(dpp_bank_mask(p.in)));
  if (dpp_bound_ctrl(p.in)) p.modifier("bound_ctrl:1");
}

void print_vop32(Printer& p) {
  if (p.in.sdwa) return print_sdwa(p);
  if (p.in.dpp) return print_dpp(p);
  const ValType t = source_type(p.mnemonic);
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    const std::string_view fixed(op.text ? op.text : "", op.text ? op.width : 0);
    switch (op.field) {
      case Field::Dst:
        if (op.kind == 's') p.operand(source(p.in, vop_vdst(p.in), 's', op.width, ValType::B32, &op));
        else p.operand(vector_reg(vop_vdst(p.in), op.kind, op.width, &op));
        break;
      case Field::Src0: p.operand(source(p.in, vop_src0(p.in), op.kind, op.width, t, &op)); break;
      case Field::Src1: p.operand(vector_reg(vop_vsrc1(p.in), op.kind, op.width, &op)); break;
      case Field::Fixed:
        if (fixed == "K") p.operand(hex(p.in.literal));
        else p.operand(std::string(fixed));
        break;
      default: p.ok = false; break;
    }
  }
}

std::string bit_list(const char* name, uint32_t bits, int n) {
  std::string s = std::string(name) + ":[";
  for (int i = 0; i < n; ++i) s += std::string(i ? "," : "") + ((bits >> i) & 1 ? "1" : "0");
  return s + "]";
}

// v_bitop3's truth table is kept in the neg (bits 2:0), abs (5:3) and omod (7:6) fields.
uint32_t bitop3_table(const Inst& in) { return vop3_neg(in) | (vop3_abs(in) << 3) | (vop3_omod(in) << 6); }

void print_vop3(Printer& p) {
  const ValType t = source_type(p.mnemonic);
  const bool bitop3 = p.mnemonic.starts_with("v_bitop3");
  uint32_t used_sources = 0;
  const bool has_sdst = [&] {
    for (const OperandSpec& op : operand_specs(*p.in.info)) if (op.field == Field::SDst) return true;
    return false;
  }();
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    const std::string_view fixed(op.text ? op.text : "", op.text ? op.width : 0);
    switch (op.field) {
      case Field::Dst:
        if (op.kind == 's') p.operand(source(p.in, vop3_vdst(p.in), 's', op.width, ValType::B32, &op));
        else p.operand(vector_reg(vop3_vdst(p.in), op.kind, op.width, &op));
        break;
      case Field::SDst: p.operand(scalar_reg(vop3_sdst(p.in), op.width)); break;
      case Field::Src0: case Field::Src1: case Field::Src2: {
        const int i = static_cast<int>(op.field) - static_cast<int>(Field::Src0);
        used_sources |= 1u << i;
        if (bitop3) p.operand(source(p.in, vop3_src(p.in, i), op.kind, op.width, t, &op));
        else p.operand(vop3_source(p, i, op, t, has_sdst));
        break;
      }
      case Field::Fixed: p.operand(std::string(fixed)); break;
      default: p.ok = false; break;
    }
  }
  if (bitop3 && bitop3_table(p.in)) p.modifier("bitop3:" + (bitop3_table(p.in) < 16 ? dec(bitop3_table(p.in)) : hex(bitop3_table(p.in))));
  if (!has_sdst && vop3_opsel(p.in)) {
    const OpSelLayout layout = opsel_layout(*p.in.info);
    uint32_t bits = 0;
    for (int b = 0; b < 4; ++b)
      if (((vop3_opsel(p.in) >> b) & 1) && layout.bit[b] >= '0' && layout.bit[b] <= '9') bits |= 1u << (layout.bit[b] - '0');
    if (bits) p.modifier(bit_list("op_sel", bits, layout.length));
  }
  if (vop3_clamp(p.in)) p.modifier("clamp");
  static const char* omods[] = {"", "mul:2", "mul:4", "div:2"};
  if (vop3_omod(p.in) && !bitop3) p.modifier(omods[vop3_omod(p.in)]);
}

bool is_mfma(std::string_view m) { return m.rfind("v_mfma", 0) == 0 || m.rfind("v_smfmac", 0) == 0; }

// An MFMA operand whose registers are AGPRs by the instruction's acc bits: LLVM's notes then name
// the AReg_ class where the VGPR probe read VReg_.
void read_as_agprs(RenotedOperand& op) {
  op.spec.kind = 'a';
  op.rename_classes([](std::string note) {
    if (note.starts_with("VReg_")) note[0] = 'A';
    return note;
  });
}

// An MFMA source: VGPRs or AGPRs (by `agprs`), or a scalar register or constant with LLVM's note.
std::optional<std::string> mai_source(const Printer& p, uint32_t code, const OperandSpec& op, bool agprs) {
  RenotedOperand acc(op);
  if (agprs) read_as_agprs(acc);
  if (code >= 256) return vector_reg(code - 256, agprs ? 'a' : 'v', op.width, &acc.spec);
  const ValType type = p.mnemonic.starts_with("v_mfma_f64") ? ValType::F64 : ValType::B32;  // f64 constants
  return source(p.in, code, 'v', op.width, type, &acc.spec);
}

// v_mfma_*_f8f6f4 reads A in the format cbsz names and B in the one blgp names: fp8/bf8 (0, 1)
// take 8 registers, fp6/bf6 (2, 3) 6, fp4 (4) 4; LLVM reads other codes as 8.
void size_f8f6f4_operand(RenotedOperand& op, uint32_t format) {
  op.spec.width = format == 2 || format == 3 ? 6 : format == 4 ? 4 : 8;
  op.rename_classes([&](const std::string&) { return "AV_" + std::to_string(32 * op.spec.width) + "_Align2"; });
}

// MFMA (D, A, B, C) and smfmac (D, A, B, the sparsity index; C is D).
void print_mai(Printer& p) {
  const bool sparse = p.mnemonic.starts_with("v_smfmac");
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    switch (op.field) {
      case Field::Dst: {
        RenotedOperand acc(op);
        if (mai_acc_cd(p.in)) read_as_agprs(acc);
        p.operand(vector_reg(vop3_vdst(p.in), acc.spec.kind, op.width, &acc.spec));
        break;
      }
      case Field::Src0: case Field::Src1: {
        const int i = op.field == Field::Src0 ? 0 : 1;
        RenotedOperand sized(op);
        if (p.mnemonic.ends_with("_f8f6f4")) size_f8f6f4_operand(sized, i == 0 ? mai_cbsz(p.in) : mai_blgp(p.in));
        p.operand(mai_source(p, vop3_src(p.in, i), sized.spec, (mai_acc(p.in) >> i) & 1));
        break;
      }
      case Field::Src2: p.operand(mai_source(p, vop3_src(p.in, 2), op, !sparse && mai_acc_cd(p.in))); break;
      default: p.ok = false; break;
    }
  }
  if (is_scaled_mfma(p.in)) {
    // The scale sources, VGPRs (LLVM prints others with notes this printer does not reproduce),
    // and their byte selects: op_sel where set, op_sel_hi always (its third entry is 0, not the
    // default 1); the abid of 1 that marks the form is not printed.
    for (int i = 0; i < 2; ++i) {
      const uint32_t code = mfma_scale_src(p.in, i);
      if (code < 256) p.ok = false;
      else p.operand(vector_reg(code - 256, 'v', 1, nullptr));
    }
    if (mfma_scale_opsel(p.in)) p.modifier(bit_list("op_sel", mfma_scale_opsel(p.in), 3));
    p.modifier(bit_list("op_sel_hi", mfma_scale_opsel_hi(p.in), 3));
  }
  if (mai_cbsz(p.in)) p.modifier("cbsz:" + std::to_string(mai_cbsz(p.in)));
  if (mai_abid(p.in) && !is_scaled_mfma(p.in)) p.modifier("abid:" + std::to_string(mai_abid(p.in)));
  // The f64 MFMAs read the blgp bits as negations of A, B and C.
  if (mai_blgp(p.in)) p.modifier(p.mnemonic.starts_with("v_mfma_f64") ? bit_list("neg", mai_blgp(p.in), 3) : "blgp:" + std::to_string(mai_blgp(p.in)));
}

// v_fma_mix*: each source is f32, or (op_sel_hi) an f16 half chosen by op_sel; neg_lo negates
// and neg_hi takes the absolute value, printed on the operand.
void print_fma_mix(Printer& p) {
  const uint32_t neg = vop3_neg(p.in), abs = vop3p_neg_hi(p.in);
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    if (op.field == Field::Dst) {
      p.operand(vector_reg(vop3_vdst(p.in), op.kind, op.width, &op));
      continue;
    }
    const int i = static_cast<int>(op.field) - static_cast<int>(Field::Src0);
    const uint32_t code = vop3_src(p.in, i);
    if (i < 0 || i > 2) {
      p.ok = false;
      continue;
    }
    // A literal is read as the f16 its op_sel_hi bit selects, or as an f32.
    const ValType type = code == 255 && ((vop3p_opsel_hi(p.in) >> i) & 1) ? ValType::F16 : ValType::B32;
    std::optional<std::string> s = source(p.in, code, op.kind, op.width, type, &op);
    if (s && ((abs >> i) & 1)) s = "|" + *s + "|";
    if (s && ((neg >> i) & 1)) s = inline_constant_code(code) && !((abs >> i) & 1) ? "neg(" + *s + ")" : "-" + *s;
    p.operand(s);
  }
  if (vop3p_opsel(p.in)) p.modifier(bit_list("op_sel", vop3p_opsel(p.in), 3));
  if (vop3p_opsel_hi(p.in)) p.modifier(bit_list("op_sel_hi", vop3p_opsel_hi(p.in), 3));
  if (vop3_clamp(p.in)) p.modifier("clamp");
}

void print_vop3p(Printer& p) {
  if (p.mnemonic.rfind("v_fma_mix", 0) == 0) {
    print_fma_mix(p);
    return;
  }
  if (is_mfma(p.mnemonic)) {
    print_mai(p);
    return;
  }
  if (p.in.info->opcode >= 0x40) {  // the MAI space (v_accvgpr_read/write): no op_sel syntax
    for (const OperandSpec& op : operand_specs(*p.in.info)) {
      if (op.field == Field::Dst) p.operand(vector_reg(vop3_vdst(p.in), op.kind, op.width, &op));
      else if (op.field == Field::Src0) p.operand(source(p.in, vop3_src(p.in, 0), op.kind, op.width, ValType::B32, &op));
      else p.ok = false;
    }
    return;
  }
  const ValType t = ValType::F16;  // inline constants of packed ops print as f16; a literal prints whole
  int n = 0;
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    switch (op.field) {
      case Field::Dst: p.operand(vector_reg(vop3_vdst(p.in), op.kind, op.width, &op)); break;
      case Field::Src0: case Field::Src1: case Field::Src2: {
        const int i = static_cast<int>(op.field) - static_cast<int>(Field::Src0);
        p.operand(source(p.in, vop3_src(p.in, i), op.kind, op.width, vop3_src(p.in, i) == 255 ? ValType::B32 : t, &op));
        n = std::max(n, i + 1);
        break;
      }
      default: p.ok = false; break;
    }
  }
  const uint32_t mask = (1u << n) - 1;
  if ((vop3p_opsel(p.in) | vop3_neg(p.in) | vop3p_neg_hi(p.in)) & ~mask) p.ok = false;
  if (vop3p_opsel(p.in) & mask) p.modifier(bit_list("op_sel", vop3p_opsel(p.in), n));
  if ((vop3p_opsel_hi(p.in) & mask) != mask && accepts(*p.in.info, 'S')) p.modifier(bit_list("op_sel_hi", vop3p_opsel_hi(p.in), n));
  if (vop3_neg(p.in) & mask) p.modifier(bit_list("neg_lo", vop3_neg(p.in), n));
  if (vop3p_neg_hi(p.in) & mask) p.modifier(bit_list("neg_hi", vop3p_neg_hi(p.in), n));
  if (vop3_clamp(p.in)) p.modifier("clamp");
}

bool ds_two_offsets(std::string_view m) {
  return m.find("2st64") != std::string_view::npos || m.find("read2") != std::string_view::npos ||
         m.find("write2") != std::string_view::npos || m.find("wrxchg2") != std::string_view::npos;
}

void print_ds(Printer& p) {
  const char kind = ds_acc(p.in) ? 'a' : 'v';
  for (OperandSpec op : operand_specs(*p.in.info)) {
    // LLVM's returning DS ops are separate opcodes per register kind: an odd AGPR tuple of one
    // whose VGPR form notes VReg_* gets no note.
    if (kind == 'a' && op.tuple_note && std::string_view(op.tuple_note, op.tuple_note_size).starts_with("VReg_"))
      op.tuple_note_size = 0, op.kind = 'a';
    switch (op.field) {
      case Field::Dst: p.operand(vector_reg(ds_vdst(p.in), kind, op.width, &op)); break;
      case Field::Addr: p.operand(vector_reg(ds_addr(p.in), 'v', op.width, &op)); break;
      case Field::Src0: p.operand(vector_reg(ds_data0(p.in), kind, op.width, &op)); break;
      case Field::Src1: p.operand(vector_reg(ds_data1(p.in), kind, op.width, &op)); break;
      default: p.ok = false; break;
    }
  }
  if (ds_two_offsets(p.mnemonic)) {
    if (ds_offset0(p.in)) p.modifier("offset0:" + std::to_string(ds_offset0(p.in)));
    if (ds_offset1(p.in)) p.modifier("offset1:" + std::to_string(ds_offset1(p.in)));
  } else {
    const uint32_t off = ds_offset0(p.in) | (ds_offset1(p.in) << 8);
    if (off) p.modifier("offset:" + std::to_string(off));
  }
  if (ds_gds(p.in) && accepts(*p.in.info, 'g')) p.modifier("gds");
}

void print_cache_bits(Printer& p, bool sc0, bool sc1, bool nt) {
  if (sc0) p.modifier("sc0");
  if (nt) p.modifier("nt");
  if (sc1) p.modifier("sc1");
}

// Atomics print their returned value first when sc0 (glc) asks for it.
bool returns_pre_op_value(std::string_view m, bool sc0) { return sc0 && m.find("atomic") != std::string_view::npos; }

int returned_width(std::string_view m, int data_width) { return m.find("cmpswap") != std::string_view::npos ? data_width / 2 : data_width; }

// VGPR address pairs: MUBUF's index+offset and GLOBAL's 64-bit address want them 2-aligned (LLVM
// notes an odd one); MTBUF takes any.
OperandSpec address_pair(const char* note) {
  OperandSpec spec;
  spec.kind = 'v';
  spec.width = 2;
  spec.tuple_note = note;
  spec.tuple_note_size = static_cast<uint8_t>(std::strlen(note));
  return spec;
}
const OperandSpec kMubufAddressPair = address_pair("VReg_64_Align2");
const OperandSpec kMtbufAddressPair = address_pair("");
const OperandSpec kGlobalAddressPair = address_pair("VReg_64_Align2");  // a 64-bit address without saddr

void print_flat(Printer& p) {
  const char kind = flat_acc(p.in) ? 'a' : 'v';
  if (returns_pre_op_value(p.mnemonic, flat_sc0(p.in)))
    for (const OperandSpec& op : operand_specs(*p.in.info))
      if (op.field == Field::Src0) {
        // The returned value: VReg_*_Align2 for a VGPR tuple; an AGPR one has no note.
        OperandSpec value;
        value.kind = kind;
        value.width = static_cast<uint8_t>(returned_width(p.mnemonic, op.width));
        const std::string note = kind == 'v' ? "VReg_" + std::to_string(32 * value.width) + "_Align2" : "";
        value.tuple_note = note.c_str();
        value.tuple_note_size = static_cast<uint8_t>(note.size());
        p.operand(vector_reg(flat_vdst(p.in), kind, value.width, &value));
      }
  const bool global = p.in.family == Family::GLOBAL, scratch = p.in.family == Family::SCRATCH;
  const uint32_t saddr = flat_saddr(p.in);
  const bool no_saddr = saddr == 0x7f;
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    switch (op.field) {
      case Field::Dst: p.operand(vector_reg(flat_vdst(p.in), kind, op.width, &op)); break;
      case Field::Src0: {
        // A returning atomic is a separate LLVM opcode per register kind: its data is VReg_* (not
        // AV_*) for VGPRs, and an odd AGPR tuple gets no note at all.
        OperandSpec data = op;
        std::string note;
        if (op.tuple_note && returns_pre_op_value(p.mnemonic, flat_sc0(p.in))) {
          const std::string_view av(op.tuple_note, op.tuple_note_size);
          note = kind == 'a' || av.rfind("AV_", 0) != 0 ? std::string(kind == 'a' ? "" : av) : "VReg_" + std::string(av.substr(3));
          data.kind = kind;
          data.tuple_note = note.c_str();
          data.tuple_note_size = static_cast<uint8_t>(note.size());
        }
        p.operand(vector_reg(flat_data(p.in), kind, op.width, &data));
        break;
      }
      case Field::Addr:
        if (scratch && !flat_lds(p.in)) p.operand("off");
        else if (global && no_saddr) p.operand(vector_reg(flat_addr(p.in), 'v', 2, &kGlobalAddressPair));
        else p.operand(vector_reg(flat_addr(p.in), 'v', op.width, &op));
        break;
      case Field::SAddr:
        if (no_saddr) p.operand("off");
        else p.operand(source(p.in, saddr, 's', op.width, ValType::B32, &op));  // exec: LLVM's note, where it has one
        break;
      default: p.ok = false; break;
    }
  }
  const uint32_t raw = flat_offset_bits(p.in);  // FLAT: 13 bits unsigned; GLOBAL/SCRATCH: signed
  const int32_t off = p.in.family == Family::FLAT ? static_cast<int32_t>(raw) : static_cast<int32_t>(raw << 19) >> 19;
  if (p.in.family != Family::SCRATCH && flat_lds(p.in)) p.ok = false;
  if (off) p.modifier("offset:" + std::to_string(off));
  print_cache_bits(p, flat_sc0(p.in), flat_sc1(p.in), flat_nt(p.in));
}

// format:[BUF_DATA_FORMAT_..,BUF_NUM_FORMAT_..], the defaults (data 8, number UNORM) left out.
std::string mtbuf_format(uint32_t dfmt, uint32_t nfmt) {
  static const char* data[16] = {"INVALID", "8", "16", "8_8", "32", "16_16", "10_11_11", "11_11_10", "10_10_10_2",
                                 "2_10_10_10", "8_8_8_8", "32_32", "16_16_16_16", "32_32_32", "32_32_32_32", "RESERVED_15"};
  static const char* number[8] = {"UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "RESERVED_6", "FLOAT"};
  std::string parts;
  if (dfmt != 1) parts += std::string("BUF_DATA_FORMAT_") + data[dfmt];
  if (nfmt != 0) parts += std::string(parts.empty() ? "" : ",") + "BUF_NUM_FORMAT_" + number[nfmt];
  return parts.empty() ? "" : "format:[" + parts + "]";
}

void print_mubuf(Printer& p) {
  const char kind = mubuf_acc(p.in) ? 'a' : 'v';
  const bool typed = p.in.family == Family::MTBUF;
  const bool offen = mubuf_offen(p.in), idxen = mubuf_idxen(p.in);
  for (const OperandSpec& op : operand_specs(*p.in.info)) {
    switch (op.field) {
      case Field::Dst:
        if (typed || !mubuf_lds(p.in)) p.operand(vector_reg(mubuf_vdata(p.in), kind, op.width, &op));  // LDS DMA: no VGPR data
        break;
      case Field::Addr:
        if (!offen && !idxen) p.operand("off");
        else p.operand(vector_reg(mubuf_vaddr(p.in), 'v', offen && idxen ? 2 : 1, typed ? &kMtbufAddressPair : &kMubufAddressPair));
        break;
      case Field::Rsrc: p.operand(scalar_reg(mubuf_srsrc(p.in), 4)); break;
      case Field::SOffset:
        if (mubuf_soffset(p.in) == 254) p.operand("src_lds_direct/*Invalid register, operand has 'SReg_32' register class*/");
        else p.operand(source(p.in, mubuf_soffset(p.in), 's', 1, ValType::B32));
        break;
      default: p.ok = false; break;
    }
  }
  if (typed) {
    const std::string format = mtbuf_format(mtbuf_dfmt(p.in), mtbuf_nfmt(p.in));
    if (!format.empty()) p.modifier(format);
  }
  if (idxen) p.modifier("idxen");
  if (offen) p.modifier("offen");
  if (mubuf_offset(p.in) && !operand_specs(*p.in.info).empty()) p.modifier("offset:" + std::to_string(mubuf_offset(p.in)));
  if (typed) {
    print_cache_bits(p, mubuf_sc0(p.in), mtbuf_sc1(p.in), mtbuf_nt(p.in));
  } else if (operand_specs(*p.in.info).empty()) {  // buffer_wbl2, buffer_inv: LLVM ignores nt and the offset
    print_cache_bits(p, mubuf_sc0(p.in), mubuf_sc1(p.in), false);
  } else {
    print_cache_bits(p, mubuf_sc0(p.in), mubuf_sc1(p.in), mubuf_nt(p.in));
    if (mubuf_lds(p.in)) p.modifier("lds");
  }
}

}  // namespace

const char* family_name(Family f) {
  static const char* names[] = {"SOP2", "SOPK", "SOP1", "SOPC", "SOPP", "SMEM", "VOP2", "VOP1",
                                "VOPC", "VOP3", "VOP3P", "DS", "FLAT", "SCRATCH", "GLOBAL", "MUBUF", "MTBUF"};
  return names[static_cast<int>(f)];
}

std::optional<std::string> disassemble(const Inst& in, Arch arch) {
  Printer p{in, arch, in.info->mnemonic, in.info->mnemonic};
  switch (in.family) {
    case Family::SOP2: case Family::SOP1: case Family::SOPC:
      for (const OperandSpec& op : operand_specs(*in.info)) print_sop(p, op);
      break;
    case Family::SOPK: print_sopk(p); break;
    case Family::SOPP: print_sopp(p); break;
    case Family::SMEM: print_smem(p); break;
    case Family::VOP1: case Family::VOP2: case Family::VOPC: print_vop32(p); break;
    case Family::VOP3: print_vop3(p); break;
    case Family::VOP3P: print_vop3p(p); break;
    case Family::DS: print_ds(p); break;
    case Family::FLAT: case Family::SCRATCH: case Family::GLOBAL: print_flat(p); break;
    case Family::MUBUF:
    case Family::MTBUF: print_mubuf(p); break;
  }
  if (!p.ok) return std::nullopt;
  return p.out;
}

}  // namespace weft::emu
