// The instruction encodings of gfx942 (CDNA3) and gfx950 (CDNA4): decoding machine words into
// instructions and printing them as llvm-objdump-22 does.
//
// Opcode facts (mnemonic and operand list of every opcode of every family) are generated from
// LLVM's disassembler by tools/isa/gen_isa_tables.py; the field decoding, the operand printing
// and everything the executor needs are written here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "weft/emulator/code_object.h"

namespace weft::emu {

enum class Family : uint8_t {
  SOP2, SOPK, SOP1, SOPC, SOPP, SMEM,
  VOP2, VOP1, VOPC, VOP3, VOP3P,
  DS, FLAT, SCRATCH, GLOBAL, MUBUF, MTBUF,
};
const char* family_name(Family f);

// One operand of an opcode's assembly syntax, from the generated table: which encoding field it
// prints, the register kind LLVM prints for it ('s', 'v', 'a') and how many registers it spans.
// Fixed text (like the implicit `vcc` of v_addc_co_u32_e32) has field == Fixed.
enum class Field : uint8_t { Dst, SDst, Src0, Src1, Src2, Addr, SAddr, SBase, Rsrc, SOffset, Fixed };
struct OperandSpec {
  Field field = Field::Fixed;
  char kind = 'v';
  uint8_t width = 1;
  const char* text = nullptr;  // Fixed operands: `width` characters of text ("K": the literal)
  // For VGPR/AGPR tuples: the register class LLVM names in its note on an odd-aligned start
  // ("VReg_64_Align2"; empty: printed without a note); nullptr where it was not probed.
  const char* tuple_note = nullptr;
  uint8_t tuple_note_size = 0;
  // Source operands: what LLVM makes of each kind of source code (one letter per kind, in the
  // order of kSourceCodeKinds): '.' printed as usual, 'N' printed with a note naming
  // `source_note` as the operand's register class, 'I' printed with "/*Invalid immediate*/",
  // 'R' the word is rejected. nullptr where not probed.
  const char* classes = nullptr;
  const char* source_note = nullptr;
  uint8_t source_note_size = 0;
};

// The kinds of source code the opcode table's `classes` letters stand for: SGPRs and trap
// temporaries, the special registers 102-107, m0, null, exec, integer constants, float
// constants, a literal, src_lds_direct, src_vccz/execz/scc, the apertures and pops id,
// src_flat_scratch_base, VGPRs.
inline constexpr char kSourceCodeKinds[] = "scmneifklzabV";

// Where VOP3's op_sel bits (0-2 the sources, 3 the destination) print in LLVM's op_sel:[...]
// list of `length` entries: a digit (the position), 'i' ignored, 'r' the word is rejected.
struct OpSelLayout {
  uint8_t length = 0;
  char bit[4] = {'i', 'i', 'i', 'i'};
};

// One row of the opcode table: an opcode of a family on the targets that have it.
struct OpcodeInfo {
  Family family;
  uint16_t opcode;
  uint8_t targets;       // bit 0 gfx942, bit 1 gfx950
  const char* mnemonic;  // LLVM's, e.g. "v_add_f32_e32"
  const char* operands;  // template, parsed by operand_specs()
};

// A decoded instruction. Words are kept raw; accessors in decode.cpp name the fields.
struct Inst {
  const OpcodeInfo* info = nullptr;
  Family family{};
  uint8_t size = 4;       // bytes, including a literal or DPP/SDWA dword
  // The instruction's dwords (word[1..3] as the size allows). gfx950's 16-byte scaled MFMA keeps
  // its MFMA dwords in word[0..1], as the unscaled MFMA's, and its scale dwords in word[2..3].
  uint32_t word[4] = {};
  bool has_literal = false;
  uint32_t literal = 0;
  bool sdwa = false, dpp = false;  // VOP1/VOP2/VOPC with src0 = 249 / 250
};

// Decodes the instruction at the start of `bytes`. nullopt when the words are not a valid
// instruction of `arch` (or fewer bytes remain than the encoding needs).
std::optional<Inst> decode(std::span<const uint8_t> bytes, Arch arch);

// The instruction's text as llvm-objdump-22 prints it (mnemonic, operands, modifiers), or nullopt
// for an encoding this printer does not reproduce exactly (it never prints something different).
std::optional<std::string> disassemble(const Inst& inst, Arch arch);

// The operand list of a table row, parsed once and cached.
std::span<const OperandSpec> operand_specs(const OpcodeInfo& info);

// The modifiers a VOP3/VOP3P/memory opcode accepts, as letters: n neg, a abs, c clamp, o omod,
// s op_sel, B abid (MFMA), A AGPR data (acc), T AGPR data with sc0, U with sc0 and sc1 (FLAT/GLOBAL), g gds printed, G gds accepted, L lds; z (SOPP) an immediate of 0 is not printed;
// I (SMEM without an offset operand) the imm bit must be clear; Z (VOP1) the vdst field must be 0. An encoding that sets another one is invalid.
std::string_view modifier_flags(const OpcodeInfo& info);
inline bool accepts(const OpcodeInfo& info, char flag) { return modifier_flags(info).find(flag) != std::string_view::npos; }

// VOP3's op_sel layout for an opcode (all bits ignored where LLVM prints no op_sel).
OpSelLayout opsel_layout(const OpcodeInfo& info);

// VOP3's neg and abs bits per source (0-2, including sources the opcode does not have): 'p'
// printed, 'i' accepted and ignored (v_ldexp's integer exponent), 'r' the word is rejected, '-'
// not a modifier of the encoding (VOP3b keeps sdst there); 0 where the table has no probe.
struct SourceModifierModes {
  char neg[3] = {0, 0, 0};
  char abs[3] = {0, 0, 0};
};
SourceModifierModes source_modifier_modes(const OpcodeInfo& info);

// The whole opcode table (for tests and statistics).
std::span<const OpcodeInfo> opcode_table();

}  // namespace weft::emu
