// The registers an instruction reads and writes, by family, from the opcode table's operand list
// (field, register kind, width) and the encoding's fields, as disasm.cpp reads them.
#include "weft/emulator/footprint.h"

#include <algorithm>
#include <string_view>

#include "isa_fields.h"

namespace weft::emu {

using namespace fields;

namespace {

constexpr uint32_t kVccCode = 106;

struct Builder {
  Footprint f;

  // A tuple that would run past v255 (or a255) is cut there: it never reaches the other file.
  void vgprs(std::vector<RegisterRange>& to, uint32_t index, char kind, int width) {
    const int count = std::min(width, 256 - static_cast<int>(index % 256));
    if (count > 0) to.push_back({static_cast<uint16_t>((kind == 'a' ? 256 : 0) + index % 256), static_cast<uint16_t>(count)});
  }
  void use_v(uint32_t index, char kind, int width) { vgprs(f.vgpr_uses, index, kind, width); }
  void def_v(uint32_t index, char kind, int width) { vgprs(f.vgpr_defs, index, kind, width); }
  // A scalar register by operand code: the SGPRs and VCC; constants and the other specials
  // (EXEC, M0, apertures) are not tracked.
  static bool tracked_scalar(uint32_t code) { return code < 102 || code == kVccCode; }
  // A misaligned SGPR tuple is the aligned one below it (pairs by 2, wider tuples by 4), as the
  // hardware reads it and LLVM prints it.
  static RegisterRange scalar_range(uint32_t code, int width) {
    if (code < 102) code &= ~static_cast<uint32_t>(width >= 4 ? 3 : width == 2 ? 1 : 0);
    return {static_cast<uint16_t>(code), static_cast<uint16_t>(width)};
  }
  void use_s(uint32_t code, int width) {
    if (tracked_scalar(code) && width > 0) f.sgpr_uses.push_back(scalar_range(code, width));
  }
  void def_s(uint32_t code, int width) {
    if (tracked_scalar(code) && width > 0) f.sgpr_defs.push_back(scalar_range(code, width));
  }
  // The high VGPR of the 64-bit source `code` (a VGPR pair, already among the uses) reaches only
  // the high VGPR of the destination pair `dst`: a carry, not a use (footprint.h).
  void carry_high(uint32_t code, uint32_t dst) {
    if (code < 256) return;
    const auto v = static_cast<uint16_t>(code - 256);
    for (RegisterRange& r : f.vgpr_uses)
      if (r.first == v && r.count == 2) {
        r.count = 1;
        f.carries.push_back({static_cast<uint16_t>(v + 1), static_cast<uint16_t>(dst + 1)});
        return;
      }
  }
  // A 9-bit source code: 256 and up a VGPR (or an AGPR where the operand is one), else scalar.
  void use_source(uint32_t code, char kind, int width) {
    if (code >= 256) use_v(code - 256, kind, width);
    else use_s(code, width);
  }
};

bool is_mfma(std::string_view m) { return m.starts_with("v_mfma") || m.starts_with("v_smfmac"); }

// v_mfma_*_f8f6f4: A's format in cbsz, B's in blgp; fp6/bf6 take 6 registers, fp4 4, fp8/bf8 8.
int f8f6f4_width(uint32_t format) { return format == 2 || format == 3 ? 6 : format == 4 ? 4 : 8; }

void scalar_alu(Builder& b, const Inst& in) {
  const std::string_view m = in.info->mnemonic;
  for (const OperandSpec& op : operand_specs(*in.info)) {
    switch (op.field) {
      case Field::Dst:
        if (in.family == Family::SOPK) {
          // s_cmpk reads its register, s_movk and s_getreg write it, the others do both.
          if (!m.starts_with("s_movk") && !m.starts_with("s_getreg")) b.use_s(sop_sdst(in), op.width);
          if (!m.starts_with("s_cmpk") && !m.starts_with("s_setreg")) b.def_s(sop_sdst(in), op.width);
        } else {
          // s_bitset0/1 and s_cmov keep the destination's other bits (or all of it): they read it.
          if (m.starts_with("s_bitset") || m.starts_with("s_cmov")) b.use_s(sop_sdst(in), op.width);
          b.def_s(sop_sdst(in), op.width);
        }
        break;
      case Field::Src0: b.use_s(sop_ssrc0(in), op.width); break;
      case Field::Src1: b.use_s(sop_ssrc1(in), op.width); break;
      default: break;
    }
  }
}

void scalar_memory(Builder& b, const Inst& in) {
  const std::string_view m = in.info->mnemonic;
  const bool load = m.find("load") != std::string_view::npos;
  for (const OperandSpec& op : operand_specs(*in.info)) {
    if (op.field == Field::Dst) {
      if (load) b.def_s(smem_sdata(in), op.width);
      else b.use_s(smem_sdata(in), op.width);
    } else if (op.field == Field::SBase) {
      b.use_s(smem_sbase(in), op.width);
    } else if (op.text && std::string_view(op.text, op.width) == "0x40") {
      // The offset: an SGPR (soffset with soe, else the offset field) without imm; with imm and
      // soe, an SGPR besides the immediate.
      if (!smem_imm(in)) b.use_s(smem_soe(in) ? smem_soffset(in) : in.word[1] & 0x7f, 1);
      else if (smem_soe(in)) b.use_s(smem_soffset(in), 1);
    }
  }
  if (load) b.f.counter = MemoryCounter::Smem;
}

// VOP1/VOP2/VOPC in their 32-bit, SDWA and DPP forms.
void vector_32(Builder& b, const Inst& in) {
  for (const OperandSpec& op : operand_specs(*in.info)) {
    switch (op.field) {
      case Field::Dst:
        if (op.kind == 's') b.def_s(vop_vdst(in), op.width);
        else b.def_v(vop_vdst(in), op.kind, op.width);
        break;
      case Field::Src0:
        if (in.sdwa) b.use_source(sdwa_scalar(in, 0) ? sdwa_src0(in) : 256 + sdwa_src0(in), op.kind, op.width);
        else if (in.dpp) b.use_v(dpp_src0(in), op.kind, op.width);
        else b.use_source(vop_src0(in), op.kind, op.width);
        break;
      case Field::Src1:
        if (in.sdwa && sdwa_scalar(in, 1)) b.use_s(vop_vsrc1(in), op.width);
        else b.use_v(vop_vsrc1(in), op.kind, op.width);
        break;
      default: break;
    }
  }
  if (in.family == Family::VOPC && in.sdwa && sdwa_sd(in)) b.def_s(sdwa_sdst(in), 2);
}

void vector_3(Builder& b, const Inst& in) {
  for (const OperandSpec& op : operand_specs(*in.info)) {
    switch (op.field) {
      case Field::Dst:
        if (op.kind == 's') b.def_s(vop3_vdst(in), op.width);
        else b.def_v(vop3_vdst(in), op.kind, op.width);
        break;
      case Field::SDst: b.def_s(vop3_sdst(in), op.width); break;
      case Field::Src0: case Field::Src1: case Field::Src2:
        b.use_source(vop3_src(in, static_cast<int>(op.field) - static_cast<int>(Field::Src0)), op.kind, op.width);
        break;
      default: break;
    }
  }
  // The 64-bit operands whose high half reaches only the result's high half: the addend of a
  // 64-bit multiply-add, the shifted value of a left shift (and the addend after it).
  const std::string_view m = in.info->mnemonic;
  const uint32_t dst = vop3_vdst(in);
  if (m == "v_mad_u64_u32" || m == "v_mad_i64_i32") b.carry_high(vop3_src(in, 2), dst);
  if (m == "v_lshlrev_b64") b.carry_high(vop3_src(in, 1), dst);
  if (m == "v_lshl_add_u64") {
    b.carry_high(vop3_src(in, 0), dst);
    b.carry_high(vop3_src(in, 2), dst);
  }
}

// MFMA: D and C in AGPRs by acc_cd, A and B by the acc bits (smfmac's third source is its index).
void matrix(Builder& b, const Inst& in) {
  const std::string_view m = in.info->mnemonic;
  const bool sparse = m.starts_with("v_smfmac");
  for (const OperandSpec& op : operand_specs(*in.info)) {
    switch (op.field) {
      case Field::Dst: b.def_v(vop3_vdst(in), mai_acc_cd(in) ? 'a' : 'v', op.width); break;
      case Field::Src0: case Field::Src1: {
        const int i = op.field == Field::Src0 ? 0 : 1;
        const int width = m.ends_with("_f8f6f4") ? f8f6f4_width(i == 0 ? mai_cbsz(in) : mai_blgp(in)) : op.width;
        b.use_source(vop3_src(in, i), (mai_acc(in) >> i) & 1 ? 'a' : 'v', width);
        break;
      }
      case Field::Src2: b.use_source(vop3_src(in, 2), !sparse && mai_acc_cd(in) ? 'a' : 'v', op.width); break;
      default: break;
    }
  }
  if (sparse) b.use_v(vop3_vdst(in), mai_acc_cd(in) ? 'a' : 'v', operand_specs(*in.info)[0].width);  // D is also C
  if (is_scaled_mfma(in))
    for (int i = 0; i < 2; ++i) b.use_source(mfma_scale_src(in, i), 'v', 1);  // the scales of A and B
}

void lds(Builder& b, const Inst& in) {
  const char kind = ds_acc(in) ? 'a' : 'v';
  for (const OperandSpec& op : operand_specs(*in.info)) {
    switch (op.field) {
      case Field::Dst: b.def_v(ds_vdst(in), kind, op.width); break;
      case Field::Addr: b.use_v(ds_addr(in), 'v', op.width); break;
      case Field::Src0: b.use_v(ds_data0(in), kind, op.width); break;
      case Field::Src1: b.use_v(ds_data1(in), kind, op.width); break;
      default: break;
    }
  }
  b.f.counter = MemoryCounter::Lgkm;
  const std::string_view m = in.info->mnemonic;
  b.f.atomic = !m.starts_with("ds_read") && !m.starts_with("ds_write") && !m.starts_with("ds_permute") && !m.starts_with("ds_bpermute") &&
               !m.starts_with("ds_swizzle") && !m.starts_with("ds_nop");
}

bool returns_pre_op_value(std::string_view m, bool sc0) { return sc0 && m.find("atomic") != std::string_view::npos; }
int returned_width(std::string_view m, int data_width) { return m.find("cmpswap") != std::string_view::npos ? data_width / 2 : data_width; }

void flat(Builder& b, const Inst& in) {
  const std::string_view m = in.info->mnemonic;
  const char kind = flat_acc(in) ? 'a' : 'v';
  const bool global = in.family == Family::GLOBAL, scratch = in.family == Family::SCRATCH;
  const uint32_t saddr = flat_saddr(in);
  for (const OperandSpec& op : operand_specs(*in.info)) {
    switch (op.field) {
      case Field::Dst: b.def_v(flat_vdst(in), kind, op.width); break;
      case Field::Src0:
        b.use_v(flat_data(in), kind, op.width);
        if (returns_pre_op_value(m, flat_sc0(in))) b.def_v(flat_vdst(in), kind, returned_width(m, op.width));
        break;
      case Field::Addr:
        if (scratch && !flat_lds(in)) break;
        b.use_v(flat_addr(in), 'v', global && saddr == 0x7f ? 2 : op.width);
        break;
      case Field::SAddr:
        if (saddr != 0x7f && !(scratch && saddr == 0x7d)) b.use_s(saddr, op.width);
        break;
      default: break;
    }
  }
  b.f.counter = in.family == Family::FLAT ? MemoryCounter::Flat : MemoryCounter::Vm;
  b.f.atomic = m.find("atomic") != std::string_view::npos;
}

void buffer(Builder& b, const Inst& in) {
  const std::string_view m = in.info->mnemonic;
  const char kind = mubuf_acc(in) ? 'a' : 'v';
  const bool typed = in.family == Family::MTBUF, offen = mubuf_offen(in), idxen = mubuf_idxen(in);
  const bool to_lds = !typed && mubuf_lds(in);
  for (const OperandSpec& op : operand_specs(*in.info)) {
    switch (op.field) {
      case Field::Dst:
        if (to_lds) break;  // LDS DMA: no VGPR data
        if (m.find("load") != std::string_view::npos) {
          b.def_v(mubuf_vdata(in), kind, op.width);
        } else {
          b.use_v(mubuf_vdata(in), kind, op.width);
          if (returns_pre_op_value(m, mubuf_sc0(in))) b.def_v(mubuf_vdata(in), kind, returned_width(m, op.width));
        }
        break;
      case Field::Addr:
        if (offen || idxen) b.use_v(mubuf_vaddr(in), 'v', offen && idxen ? 2 : 1);
        break;
      case Field::Rsrc: b.use_s(mubuf_srsrc(in), 4); break;
      case Field::SOffset: b.use_s(mubuf_soffset(in), 1); break;
      default: break;
    }
  }
  if (!operand_specs(*in.info).empty()) b.f.counter = MemoryCounter::Vm;  // buffer_wbl2 / buffer_inv: no data
  b.f.lds_dma = to_lds;
}

}  // namespace

Footprint footprint(const Inst& in) {
  Builder b;
  if (!in.info) return b.f;
  switch (in.family) {
    case Family::SOP2: case Family::SOP1: case Family::SOPC: case Family::SOPK: scalar_alu(b, in); break;
    case Family::SOPP: break;
    case Family::SMEM: scalar_memory(b, in); break;
    case Family::VOP1: case Family::VOP2: case Family::VOPC: vector_32(b, in); break;
    case Family::VOP3: vector_3(b, in); break;
    case Family::VOP3P:
      if (is_mfma(in.info->mnemonic)) matrix(b, in);
      else vector_3(b, in);
      break;
    case Family::DS: lds(b, in); break;
    case Family::FLAT: case Family::SCRATCH: case Family::GLOBAL: flat(b, in); break;
    case Family::MUBUF: case Family::MTBUF: buffer(b, in); break;
  }
  return b.f;
}

}  // namespace weft::emu
