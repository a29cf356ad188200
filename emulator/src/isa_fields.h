// The bit fields of each encoding family (gfx9 layouts, as gfx942 and gfx950 use them), shared
// by the disassembler and the executor's instruction translation.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "weft/emulator/isa.h"

namespace weft::emu::fields {

// The 32-bit value of an inline-constant source code: 128..192 are 0..64, 193..208 are -1..-16,
// 240..248 the f32 constants 0.5, -0.5, 1, -1, 2, -2, 4, -4, 1/(2 pi). Other codes: nullopt.
inline constexpr uint32_t kInlineFloatBits[9] = {0x3f000000, 0xbf000000, 0x3f800000, 0xbf800000, 0x40000000,
                                                0xc0000000, 0x40800000, 0xc0800000, 0x3e22f983};
constexpr std::optional<uint32_t> inline_constant32(uint32_t code) {
  if (code >= 128 && code <= 192) return code - 128;
  if (code >= 193 && code <= 208) return static_cast<uint32_t>(192 - static_cast<int32_t>(code));
  if (code >= 240 && code <= 248) return kInlineFloatBits[code - 240];
  return std::nullopt;
}

// The kind of a source code, as an index into kSourceCodeKinds; -1 for reserved codes and the
// SDWA/DPP markers.
constexpr int source_code_kind(uint32_t code) {
  if (code >= 256) return 12;
  if (code <= 101 || (code >= 108 && code <= 123)) return 0;
  if (code <= 107) return 1;
  if (code == 124) return 2;
  if (code == 125) return 3;
  if (code <= 127) return 4;
  if (code <= 208) return 5;
  if (code >= 240 && code <= 248) return 6;
  if (code == 255) return 7;
  if (code == 254) return 8;
  if (code >= 251 && code <= 253) return 9;
  if (code >= 235 && code <= 239) return 10;
  if (code == 230 || code == 231) return 11;
  return -1;
}

// What LLVM makes of `code` in a source operand: see OperandSpec::classes ('.' where not probed).
inline char source_verdict(const OperandSpec& op, uint32_t code) {
  const int kind = source_code_kind(code);
  return op.classes && kind >= 0 ? op.classes[kind] : '.';
}

constexpr uint32_t bits(uint32_t w, int hi, int lo) { return (w >> lo) & ((1u << (hi - lo + 1)) - 1); }
constexpr uint64_t bits64(uint64_t w, int hi, int lo) { return (w >> lo) & ((uint64_t{1} << (hi - lo + 1)) - 1); }
inline uint64_t qword(const Inst& in) { return in.word[0] | (uint64_t{in.word[1]} << 32); }

// SOP2 / SOP1 / SOPC / SOPK / SOPP
inline uint32_t sop_sdst(const Inst& in) { return bits(in.word[0], 22, 16); }
inline uint32_t sop_ssrc0(const Inst& in) { return bits(in.word[0], 7, 0); }
inline uint32_t sop_ssrc1(const Inst& in) { return bits(in.word[0], 15, 8); }
inline uint32_t simm16(const Inst& in) { return bits(in.word[0], 15, 0); }
// gfx9's s_waitcnt immediate: vmcnt in bits 3:0 and 15:14, expcnt in 6:4, lgkmcnt in 11:8.
constexpr uint32_t waitcnt_vm(uint32_t imm) { return bits(imm, 3, 0) | bits(imm, 15, 14) << 4; }
constexpr uint32_t waitcnt_exp(uint32_t imm) { return bits(imm, 6, 4); }
constexpr uint32_t waitcnt_lgkm(uint32_t imm) { return bits(imm, 11, 8); }

// SMEM: sbase counts SGPR pairs; the offset is an immediate (imm) or an SGPR (soe).
inline uint32_t smem_sbase(const Inst& in) { return bits(in.word[0], 5, 0) * 2; }
inline uint32_t smem_sdata(const Inst& in) { return bits(in.word[0], 12, 6); }
inline bool smem_soe(const Inst& in) { return bits(in.word[0], 14, 14); }
inline bool smem_nv(const Inst& in) { return bits(in.word[0], 15, 15); }
inline bool smem_glc(const Inst& in) { return bits(in.word[0], 16, 16); }
inline bool smem_imm(const Inst& in) { return bits(in.word[0], 17, 17); }
inline int32_t smem_offset(const Inst& in) {  // 21-bit signed
  return static_cast<int32_t>(bits(in.word[1], 20, 0) << 11) >> 11;
}
inline uint32_t smem_soffset(const Inst& in) { return bits(in.word[1], 31, 25); }

// VOP1 / VOP2 / VOPC (32-bit encodings)
inline uint32_t vop_src0(const Inst& in) { return bits(in.word[0], 8, 0); }
inline uint32_t vop_vsrc1(const Inst& in) { return bits(in.word[0], 16, 9); }
inline uint32_t vop_vdst(const Inst& in) { return bits(in.word[0], 24, 17); }

// VOP3 (a and b forms) and VOP3P, including MAI (MFMA)
// SDWA (src0 = 0xF9) and DPP (src0 = 0xFA): the second dword of a VOP1/VOP2/VOPC word.
inline uint32_t sdwa_src0(const Inst& in) { return bits(in.word[1], 7, 0); }
inline uint32_t sdwa_dst_sel(const Inst& in) { return bits(in.word[1], 10, 8); }
inline uint32_t sdwa_dst_unused(const Inst& in) { return bits(in.word[1], 12, 11); }
inline bool sdwa_clamp(const Inst& in) { return bits(in.word[1], 13, 13); }
inline uint32_t sdwa_omod(const Inst& in) { return bits(in.word[1], 15, 14); }
inline uint32_t sdwa_sdst(const Inst& in) { return bits(in.word[1], 14, 8); }  // VOPC
inline bool sdwa_sd(const Inst& in) { return bits(in.word[1], 15, 15); }       // VOPC: sdst, not vcc
// Per source i (0, 1): select, sign extension, neg, abs, and whether the register is scalar.
inline uint32_t sdwa_sel(const Inst& in, int i) { return bits(in.word[1], 18 + 8 * i, 16 + 8 * i); }
inline bool sdwa_sext(const Inst& in, int i) { return bits(in.word[1], 19 + 8 * i, 19 + 8 * i); }
inline bool sdwa_neg(const Inst& in, int i) { return bits(in.word[1], 20 + 8 * i, 20 + 8 * i); }
inline bool sdwa_abs(const Inst& in, int i) { return bits(in.word[1], 21 + 8 * i, 21 + 8 * i); }
inline bool sdwa_scalar(const Inst& in, int i) { return bits(in.word[1], 23 + 8 * i, 23 + 8 * i); }
inline uint32_t dpp_src0(const Inst& in) { return bits(in.word[1], 7, 0); }
inline uint32_t dpp_ctrl(const Inst& in) { return bits(in.word[1], 16, 8); }
inline bool dpp_bound_ctrl(const Inst& in) { return bits(in.word[1], 19, 19); }
inline bool dpp_neg(const Inst& in, int i) { return bits(in.word[1], 20 + 2 * i, 20 + 2 * i); }
inline bool dpp_abs(const Inst& in, int i) { return bits(in.word[1], 21 + 2 * i, 21 + 2 * i); }
inline uint32_t dpp_bank_mask(const Inst& in) { return bits(in.word[1], 27, 24); }
inline uint32_t dpp_row_mask(const Inst& in) { return bits(in.word[1], 31, 28); }

// The type a VALU mnemonic names last ("v_cvt_f32_i32" -> "i32"): the type of its sources.
inline std::string_view last_type_token(std::string_view m) {
  std::string_view best;
  size_t best_pos = 0;
  for (std::string_view t : {"f16", "bf16", "i16", "u16", "b16", "f32", "i32", "u32", "b32", "f64", "i64", "u64", "b64"})
    for (size_t pos = m.find(t); pos != std::string_view::npos; pos = m.find(t, pos + 1)) {
      const size_t end = pos + t.size();
      if (pos > 0 && m[pos - 1] == '_' && (end == m.size() || m[end] == '_') && pos >= best_pos) best = t, best_pos = pos;
    }
  return best;
}

// Whether an opcode's sources take float modifiers (neg, abs) in SDWA and DPP forms rather
// than integer ones (sext): the type its mnemonic names last is a float type (v_cvt_f32_i32
// converts an i32 source; v_cvt_i32_f32 an f32 one).
inline bool float_sources(std::string_view m) {
  const std::string_view t = last_type_token(m);
  return t == "f16" || t == "bf16" || t == "f32" || t == "f64";
}

// v_cvt_f32_fp8/bf8 and v_cvt_pk_f32_fp8/bf8, whose SDWA form has no dst_sel (it must be
// DWORD), selects its source byte or word its own way, and takes clamp and omod on its float
// result.
inline bool fp8_decode(std::string_view m) {
  return m.starts_with("v_cvt_f32_fp8") || m.starts_with("v_cvt_f32_bf8") || m.starts_with("v_cvt_pk_f32_fp8") ||
         m.starts_with("v_cvt_pk_f32_bf8");
}

// What SDWA and DPP make of source i's modifier bits: float ones (neg, abs; sext must be clear),
// integer ones (sext; neg and abs must be clear), or none (the bits are ignored): v_cndmask
// takes float modifiers; v_ldexp's exponent takes sext in SDWA and nothing in DPP; the integer
// v_dot*c sources and (SDWA only) the packed v_pk_* ones take none.
enum class SourceModifiers { Float, Int, None };
inline SourceModifiers source_modifiers(std::string_view m, int i, bool sdwa) {
  if (m.starts_with("v_dot") && !float_sources(m)) return SourceModifiers::None;
  if (m.starts_with("v_pk_")) return sdwa ? SourceModifiers::None : SourceModifiers::Float;
  if (m.starts_with("v_cndmask")) return SourceModifiers::Float;
  if (i == 1 && m.find("ldexp") != std::string_view::npos) return sdwa ? SourceModifiers::Int : SourceModifiers::None;
  return float_sources(m) ? SourceModifiers::Float : SourceModifiers::Int;
}

inline uint32_t vop3_vdst(const Inst& in) { return bits(in.word[0], 7, 0); }
inline uint32_t vop3_abs(const Inst& in) { return bits(in.word[0], 10, 8); }
inline uint32_t vop3_sdst(const Inst& in) { return bits(in.word[0], 14, 8); }
inline uint32_t vop3_opsel(const Inst& in) { return bits(in.word[0], 14, 11); }
inline bool vop3_clamp(const Inst& in) { return bits(in.word[0], 15, 15); }
inline uint32_t vop3_src(const Inst& in, int i) { return bits(in.word[1], 9 * i + 8, 9 * i); }
inline uint32_t vop3_omod(const Inst& in) { return bits(in.word[1], 28, 27); }
inline uint32_t vop3_neg(const Inst& in) { return bits(in.word[1], 31, 29); }
inline uint32_t vop3p_neg_hi(const Inst& in) { return bits(in.word[0], 10, 8); }
inline uint32_t vop3p_opsel(const Inst& in) { return bits(in.word[0], 13, 11); }
inline uint32_t vop3p_opsel_hi(const Inst& in) {  // bits for src0, src1 in word 1; src2 in word 0
  return bits(in.word[1], 28, 27) | (bits(in.word[0], 14, 14) << 2);
}
inline uint32_t mai_cbsz(const Inst& in) { return bits(in.word[0], 10, 8); }
inline uint32_t mai_abid(const Inst& in) { return bits(in.word[0], 14, 11); }
inline bool mai_acc_cd(const Inst& in) { return bits(in.word[0], 15, 15); }
inline uint32_t mai_acc(const Inst& in) { return bits(in.word[1], 28, 27); }  // bit 0: A, bit 1: B
inline uint32_t mai_blgp(const Inst& in) { return bits(in.word[1], 31, 29); }
// gfx950's 16-byte scaled MFMA (decode.cpp): its scale word, in word[2..3], names A's (i = 0)
// and B's (i = 1) scale source (a 9-bit source code) and the byte of it each lane takes,
// op_sel_hi[i] * 2 + op_sel[i].
inline bool is_scaled_mfma(const Inst& in) { return in.size == 16; }
inline uint32_t mfma_scale_src(const Inst& in, int i) { return bits(in.word[3], 9 * i + 8, 9 * i); }
inline uint32_t mfma_scale_opsel(const Inst& in) { return bits(in.word[2], 12, 11); }
inline uint32_t mfma_scale_opsel_hi(const Inst& in) { return bits(in.word[3], 28, 27); }
inline uint32_t mfma_scale_byte(const Inst& in, int i) { return (((mfma_scale_opsel_hi(in) >> i) & 1) << 1) | ((mfma_scale_opsel(in) >> i) & 1); }

// DS
inline uint32_t ds_offset0(const Inst& in) { return bits(in.word[0], 7, 0); }
inline uint32_t ds_offset1(const Inst& in) { return bits(in.word[0], 15, 8); }
inline bool ds_gds(const Inst& in) { return bits(in.word[0], 16, 16); }
inline bool ds_acc(const Inst& in) { return bits(in.word[0], 25, 25); }
inline uint32_t ds_addr(const Inst& in) { return bits(in.word[1], 7, 0); }
inline uint32_t ds_data0(const Inst& in) { return bits(in.word[1], 15, 8); }
inline uint32_t ds_data1(const Inst& in) { return bits(in.word[1], 23, 16); }
inline uint32_t ds_vdst(const Inst& in) { return bits(in.word[1], 31, 24); }

// FLAT / SCRATCH / GLOBAL (gfx940 cache bits: sc0 16, nt 17, sc1 25)
inline uint32_t flat_offset_bits(const Inst& in) { return bits(in.word[0], 12, 0); }
inline bool flat_lds(const Inst& in) { return bits(in.word[0], 13, 13); }  // SVE for scratch
inline bool flat_sc0(const Inst& in) { return bits(in.word[0], 16, 16); }
inline bool flat_nt(const Inst& in) { return bits(in.word[0], 17, 17); }
inline bool flat_sc1(const Inst& in) { return bits(in.word[0], 25, 25); }
inline uint32_t flat_addr(const Inst& in) { return bits(in.word[1], 7, 0); }
inline uint32_t flat_data(const Inst& in) { return bits(in.word[1], 15, 8); }
inline uint32_t flat_saddr(const Inst& in) { return bits(in.word[1], 22, 16); }
inline bool flat_acc(const Inst& in) { return bits(in.word[1], 23, 23); }
inline uint32_t flat_vdst(const Inst& in) { return bits(in.word[1], 31, 24); }

// MUBUF (gfx940 cache bits: sc0 14, sc1 15, nt 17)
inline uint32_t mubuf_offset(const Inst& in) { return bits(in.word[0], 11, 0); }
inline bool mubuf_offen(const Inst& in) { return bits(in.word[0], 12, 12); }
inline bool mubuf_idxen(const Inst& in) { return bits(in.word[0], 13, 13); }
inline bool mubuf_sc0(const Inst& in) { return bits(in.word[0], 14, 14); }
inline bool mubuf_sc1(const Inst& in) { return bits(in.word[0], 15, 15); }
inline bool mubuf_lds(const Inst& in) { return bits(in.word[0], 16, 16); }
inline bool mubuf_nt(const Inst& in) { return bits(in.word[0], 17, 17); }
inline uint32_t mubuf_vaddr(const Inst& in) { return bits(in.word[1], 7, 0); }
inline uint32_t mubuf_vdata(const Inst& in) { return bits(in.word[1], 15, 8); }
inline uint32_t mubuf_srsrc(const Inst& in) { return bits(in.word[1], 20, 16) * 4; }
inline bool mubuf_acc(const Inst& in) { return bits(in.word[1], 23, 23); }
inline uint32_t mubuf_soffset(const Inst& in) { return bits(in.word[1], 31, 24); }

// MTBUF: as MUBUF, with the data/number format in word 0 and sc1/nt in word 1.
inline uint32_t mtbuf_dfmt(const Inst& in) { return bits(in.word[0], 22, 19); }
inline uint32_t mtbuf_nfmt(const Inst& in) { return bits(in.word[0], 25, 23); }
inline bool mtbuf_sc1(const Inst& in) { return bits(in.word[1], 21, 21); }
inline bool mtbuf_nt(const Inst& in) { return bits(in.word[1], 22, 22); }

}  // namespace weft::emu::fields
