#include "sdwa.h"

#include "isa_fields.h"
#include "lanes.h"

namespace weft::emu {
namespace {

enum Sel : uint32_t { Byte0 = 0, Byte1, Byte2, Byte3, Word0, Word1, Dword };

uint32_t select(uint32_t v, uint32_t sel, bool sext) {
  if (sel == Dword) return v;
  const uint32_t shift = sel <= Byte3 ? 8 * sel : 16 * (sel - Word0);
  const uint32_t width = sel <= Byte3 ? 8 : 16;
  const uint32_t part = (v >> shift) & ((1u << width) - 1);
  if (!sext || !((part >> (width - 1)) & 1)) return part;
  return part | ~((1u << width) - 1);
}

// The result's low bits placed at `sel` in the destination.
uint32_t place(uint32_t result, uint32_t old, uint32_t sel, uint32_t unused) {
  if (sel == Dword) return result;
  const uint32_t shift = sel <= Byte3 ? 8 * sel : 16 * (sel - Word0);
  const uint32_t width = sel <= Byte3 ? 8 : 16;
  const uint32_t mask = ((1u << width) - 1) << shift;
  const uint32_t part = (result << shift) & mask;
  if (unused == 2) return (old & ~mask) | part;  // UNUSED_PRESERVE
  if (unused == 1 && ((part >> (shift + width - 1)) & 1)) return part | ~((1u << (shift + width)) - 1);  // UNUSED_SEXT
  return part;  // UNUSED_PAD
}

struct SdwaFields {
  uint32_t src0, dst_sel, dst_unused, src0_sel, src1_sel;
  bool src0_sext, src1_sext;
  uint32_t src0_code, src1_code;  // operand codes (VGPRs as 256 + index)
  uint32_t vdst;
};

SdwaFields fields_of(const Inst& in) {
  const uint32_t w = in.word[1];
  SdwaFields f;
  f.src0 = w & 0xFF;
  f.dst_sel = (w >> 8) & 7;
  f.dst_unused = (w >> 11) & 3;
  f.src0_sel = (w >> 16) & 7;
  f.src0_sext = (w >> 19) & 1;
  f.src1_sel = (w >> 24) & 7;
  f.src1_sext = (w >> 27) & 1;
  f.src0_code = ((w >> 23) & 1) ? f.src0 : 256 + f.src0;
  const uint32_t vsrc1 = fields::vop_vsrc1(in);
  f.src1_code = ((w >> 31) & 1) ? vsrc1 : 256 + vsrc1;
  f.vdst = fields::vop_vdst(in);
  return f;
}

void run_sdwa(Exec& e, const Inst& in) {
  const SdwaFields f = fields_of(in);
  const bool compare = in.family == Family::VOPC;
  uint32_t room[kLanes];
  uint32_t* s0 = e.w.vreg(kSdwaSource0);
  uint32_t* s1 = e.w.vreg(kSdwaSource1);
  const uint32_t* a = f.src0_code >= 256 ? e.w.vreg(f.src0_code - 256) : (read32(e, f.src0_code, room), room);
  for (int l = 0; l < kLanes; ++l) s0[l] = select(a[l], f.src0_sel, f.src0_sext);
  if (in.family != Family::VOP1) {
    uint32_t room1[kLanes];
    const uint32_t* b = f.src1_code >= 256 ? e.w.vreg(f.src1_code - 256) : (read32(e, f.src1_code, room1), room1);
    for (int l = 0; l < kLanes; ++l) s1[l] = select(b[l], f.src1_sel, f.src1_sext);
  }
  if (compare) return e.step->inner(e, in);
  uint32_t* result = e.w.vreg(kSdwaResult);
  uint32_t* dst = e.w.vreg(f.vdst);
  for (int l = 0; l < kLanes; ++l) result[l] = dst[l];  // ops that read their destination (v_mac) see it
  e.step->inner(e, in);
  each_lane(e, [&](int l) { dst[l] = place(result[l], dst[l], f.dst_sel, f.dst_unused); });
}

// The fp8 decodes read SDWA's src0_sel their own way (the ISA's pseudocode of
// v_cvt_f32_fp8/bf8 and v_cvt_pk_f32_fp8/bf8): the scalar forms convert byte 1, 2 or 3 for
// BYTE_1..BYTE_3 and byte 0 for anything else (WORD_1 included); the packed forms convert the
// high word when src0_sel[1:0] is 1 (BYTE_1, WORD_1) and the low word otherwise. Their dst_sel
// is always DWORD (the decoder rejects others, as LLVM does) and dst_unused means nothing.
// The packed forms write a register pair: both dwords land in the destination.
template <bool Pair>
void run_sdwa_fp8_decode(Exec& e, const Inst& in) {
  const SdwaFields f = fields_of(in);
  uint32_t room[kLanes];
  uint32_t* s0 = e.w.vreg(kSdwaSource0);
  const uint32_t* a = f.src0_code >= 256 ? e.w.vreg(f.src0_code - 256) : (read32(e, f.src0_code, room), room);
  const uint32_t shift = Pair ? ((f.src0_sel & 3) == 1 ? 16 : 0) : (f.src0_sel >= Byte1 && f.src0_sel <= Byte3 ? 8 * f.src0_sel : 0);
  for (int l = 0; l < kLanes; ++l) s0[l] = a[l] >> shift;
  e.step->inner(e, in);
  const uint32_t *lo = e.w.vreg(kSdwaResult), *hi = e.w.vreg(kSdwaResult + 1);
  uint32_t *dlo = e.w.vreg(f.vdst), *dhi = Pair ? e.w.vreg(f.vdst + 1) : nullptr;
  each_lane(e, [&](int l) {
    dlo[l] = lo[l];
    if constexpr (Pair) dhi[l] = hi[l];
  });
}

}  // namespace

void prepare_sdwa(Step& step) {
  const Inst& in = step.inst;
  const SdwaFields f = fields_of(in);
  const uint32_t w = in.word[1];
  VectorOperands& o = step.vop;
  o.src[0] = 256 + kSdwaSource0;
  o.is_constant[0] = false;
  if (in.family != Family::VOP1) {
    o.src[1] = 256 + kSdwaSource1;
    o.is_constant[1] = false;
  }
  o.neg = ((w >> 20) & 1) | (((w >> 28) & 1) << 1);
  o.abs = ((w >> 21) & 1) | (((w >> 29) & 1) << 1);
  if (in.family == Family::VOPC) {
    o.vdst = ((w >> 15) & 1) ? ((w >> 8) & 0x7F) : 106;  // SD: an SGPR pair, else VCC
    o.sdst = o.vdst;
  } else {
    o.vdst = kSdwaResult;
    o.clamp = (w >> 13) & 1;
    o.omod = (w >> 14) & 3;
  }
  (void)f;
  step.inner = step.handler;
  step.handler = run_sdwa;
  if (fields::fp8_decode(in.info->mnemonic))
    step.handler = std::string_view(in.info->mnemonic).starts_with("v_cvt_pk_") ? run_sdwa_fp8_decode<true> : run_sdwa_fp8_decode<false>;
}

}  // namespace weft::emu
