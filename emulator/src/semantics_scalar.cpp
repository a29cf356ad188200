// Scalar instructions: SOP2, SOP1, SOPC, SOPK, SOPP and scalar memory (SMEM).
#include <algorithm>
#include <bit>
#include <cstring>

#include "isa_fields.h"
#include "semantics.h"

namespace weft::emu {

using namespace fields;

namespace {

uint32_t src0(const Exec& e, const Inst& in) { return e.scalar(sop_ssrc0(in)); }
uint32_t src1(const Exec& e, const Inst& in) { return e.scalar(sop_ssrc1(in)); }
uint64_t src0_64(const Exec& e, const Inst& in) { return e.scalar64(sop_ssrc0(in)); }
uint64_t src1_64(const Exec& e, const Inst& in) { return e.scalar64(sop_ssrc1(in)); }

// A 32-bit SOP2 whose SCC is "result != 0" (bitwise ops and shifts).
template <uint32_t (*F)(uint32_t, uint32_t)>
void sop2_bits32(Exec& e, const Inst& in) {
  const uint32_t r = F(src0(e, in), src1(e, in));
  e.set_scalar(sop_sdst(in), r);
  e.w.scc = r != 0;
}
template <uint64_t (*F)(uint64_t, uint64_t)>
void sop2_bits64(Exec& e, const Inst& in) {
  const uint64_t r = F(src0_64(e, in), src1_64(e, in));
  e.set_scalar64(sop_sdst(in), r);
  e.w.scc = r != 0;
}
template <uint64_t (*F)(uint64_t, uint32_t)>
void sop2_shift64(Exec& e, const Inst& in) {
  const uint64_t r = F(src0_64(e, in), src1(e, in) & 63);
  e.set_scalar64(sop_sdst(in), r);
  e.w.scc = r != 0;
}

uint32_t and32(uint32_t a, uint32_t b) { return a & b; }
uint32_t or32(uint32_t a, uint32_t b) { return a | b; }
uint32_t xor32(uint32_t a, uint32_t b) { return a ^ b; }
uint32_t andn2_32(uint32_t a, uint32_t b) { return a & ~b; }
uint32_t orn2_32(uint32_t a, uint32_t b) { return a | ~b; }
uint32_t lshl32(uint32_t a, uint32_t b) { return a << (b & 31); }
uint32_t lshr32(uint32_t a, uint32_t b) { return a >> (b & 31); }
uint32_t ashr32(uint32_t a, uint32_t b) { return static_cast<uint32_t>(static_cast<int32_t>(a) >> (b & 31)); }
uint64_t and64(uint64_t a, uint64_t b) { return a & b; }
uint64_t or64(uint64_t a, uint64_t b) { return a | b; }
uint64_t xor64(uint64_t a, uint64_t b) { return a ^ b; }
uint64_t andn2_64(uint64_t a, uint64_t b) { return a & ~b; }
uint64_t orn2_64(uint64_t a, uint64_t b) { return a | ~b; }
uint64_t nand64(uint64_t a, uint64_t b) { return ~(a & b); }
uint64_t nor64(uint64_t a, uint64_t b) { return ~(a | b); }
uint64_t xnor64(uint64_t a, uint64_t b) { return ~(a ^ b); }
uint64_t lshl64(uint64_t a, uint32_t b) { return a << b; }
uint64_t lshr64(uint64_t a, uint32_t b) { return a >> b; }
uint64_t ashr64(uint64_t a, uint32_t b) { return static_cast<uint64_t>(static_cast<int64_t>(a) >> b); }

void s_add_u32(Exec& e, const Inst& in) {
  const uint64_t r = uint64_t{src0(e, in)} + src1(e, in);
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>(r));
  e.w.scc = r >> 32;
}
void s_addc_u32(Exec& e, const Inst& in) {
  const uint64_t r = uint64_t{src0(e, in)} + src1(e, in) + (e.w.scc ? 1 : 0);
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>(r));
  e.w.scc = r >> 32;
}
void s_sub_u32(Exec& e, const Inst& in) {
  const uint32_t a = src0(e, in), b = src1(e, in);
  e.set_scalar(sop_sdst(in), a - b);
  e.w.scc = b > a;
}
void s_subb_u32(Exec& e, const Inst& in) {
  const uint32_t a = src0(e, in), b = src1(e, in), c = e.w.scc ? 1 : 0;
  e.set_scalar(sop_sdst(in), a - b - c);
  e.w.scc = uint64_t{b} + c > a;
}
void s_add_i32(Exec& e, const Inst& in) {
  const int32_t a = static_cast<int32_t>(src0(e, in)), b = static_cast<int32_t>(src1(e, in));
  int32_t r;
  e.w.scc = __builtin_add_overflow(a, b, &r);
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b)));
}
void s_sub_i32(Exec& e, const Inst& in) {
  const int32_t a = static_cast<int32_t>(src0(e, in)), b = static_cast<int32_t>(src1(e, in));
  int32_t r;
  e.w.scc = __builtin_sub_overflow(a, b, &r);
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
void s_mul_i32(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), src0(e, in) * src1(e, in)); }
void s_mul_hi_u32(Exec& e, const Inst& in) {
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>((uint64_t{src0(e, in)} * src1(e, in)) >> 32));
}
void s_mul_hi_i32(Exec& e, const Inst& in) {
  const int64_t r = int64_t{static_cast<int32_t>(src0(e, in))} * static_cast<int32_t>(src1(e, in));
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>(static_cast<uint64_t>(r) >> 32));
}
template <bool Signed, bool Max>
void s_minmax(Exec& e, const Inst& in) {
  const uint32_t a = src0(e, in), b = src1(e, in);
  const bool a_less = Signed ? static_cast<int32_t>(a) < static_cast<int32_t>(b) : a < b;
  const bool pick_a = Max ? !a_less : a_less;
  e.set_scalar(sop_sdst(in), pick_a ? a : b);
  e.w.scc = pick_a;
}
void s_cselect_b32(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), e.w.scc ? src0(e, in) : src1(e, in)); }
void s_cselect_b64(Exec& e, const Inst& in) { e.set_scalar64(sop_sdst(in), e.w.scc ? src0_64(e, in) : src1_64(e, in)); }
template <int Shift>
void s_lshl_add_u32(Exec& e, const Inst& in) {
  const uint64_t r = (uint64_t{src0(e, in)} << Shift) + src1(e, in);
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>(r));
  e.w.scc = r >> 32;
}
template <bool Signed>
void s_bfe_32(Exec& e, const Inst& in) {
  const uint32_t v = src0(e, in), ctl = src1(e, in), off = ctl & 31, width = (ctl >> 16) & 0x7f;
  uint32_t r = 0;
  if (width) {
    r = (v >> off) & (width >= 32 ? ~0u : ((1u << width) - 1));
    if (Signed && width < 32 && ((r >> (width - 1)) & 1)) r |= ~0u << width;
  }
  e.set_scalar(sop_sdst(in), r);
  e.w.scc = r != 0;
}
void s_bfm_b32(Exec& e, const Inst& in) {
  e.set_scalar(sop_sdst(in), ((src0(e, in) & 31) == 0 ? 0 : (1u << (src0(e, in) & 31)) - 1) << (src1(e, in) & 31));
}
void s_pack_ll_b32_b16(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), (src0(e, in) & 0xffff) | (src1(e, in) << 16)); }

// SOP1
void s_mov_b32(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), src0(e, in)); }
void s_mov_b64(Exec& e, const Inst& in) { e.set_scalar64(sop_sdst(in), src0_64(e, in)); }
void s_cmov_b32(Exec& e, const Inst& in) { if (e.w.scc) e.set_scalar(sop_sdst(in), src0(e, in)); }
void s_cmov_b64(Exec& e, const Inst& in) { if (e.w.scc) e.set_scalar64(sop_sdst(in), src0_64(e, in)); }
void s_not_b32(Exec& e, const Inst& in) {
  const uint32_t r = ~src0(e, in);
  e.set_scalar(sop_sdst(in), r);
  e.w.scc = r != 0;
}
void s_not_b64(Exec& e, const Inst& in) {
  const uint64_t r = ~src0_64(e, in);
  e.set_scalar64(sop_sdst(in), r);
  e.w.scc = r != 0;
}
// s_brev: bit reverse, SCC untouched (LLVM builds f64 constants such as 2^-767 with it).
void s_brev_b32(Exec& e, const Inst& in) {
  uint32_t v = src0(e, in), r = 0;
  for (int i = 0; i < 32; ++i, v >>= 1) r = (r << 1) | (v & 1);
  e.set_scalar(sop_sdst(in), r);
}
void s_brev_b64(Exec& e, const Inst& in) {
  uint64_t v = src0_64(e, in), r = 0;
  for (int i = 0; i < 64; ++i, v >>= 1) r = (r << 1) | (v & 1);
  e.set_scalar64(sop_sdst(in), r);
}
// s_bitset0/1: clear or set bit S0[4:0] (S0[5:0] for b64) of the destination, the rest kept.
template <bool One>
void s_bitset_b32(Exec& e, const Inst& in) {
  const uint32_t bit = 1u << (src0(e, in) & 31), d = e.scalar(sop_sdst(in));
  e.set_scalar(sop_sdst(in), One ? d | bit : d & ~bit);
}
template <bool One>
void s_bitset_b64(Exec& e, const Inst& in) {
  const uint64_t bit = uint64_t{1} << (src0(e, in) & 63), d = e.scalar64(sop_sdst(in));
  e.set_scalar64(sop_sdst(in), One ? d | bit : d & ~bit);
}
void s_bcnt1_i32_b64(Exec& e, const Inst& in) {
  const uint32_t r = static_cast<uint32_t>(std::popcount(src0_64(e, in)));
  e.set_scalar(sop_sdst(in), r);
  e.w.scc = r != 0;
}
void s_bcnt1_i32_b32(Exec& e, const Inst& in) {
  const uint32_t r = static_cast<uint32_t>(std::popcount(src0(e, in)));
  e.set_scalar(sop_sdst(in), r);
  e.w.scc = r != 0;
}
void s_ff1_i32_b64(Exec& e, const Inst& in) {
  const uint64_t v = src0_64(e, in);
  e.set_scalar(sop_sdst(in), v ? static_cast<uint32_t>(std::countr_zero(v)) : ~0u);
}
// Bit scans: -1 when no bit is found. s_flbit_i32 / _i64 count the bits equal to the sign bit
// before the first that differs (-1 for 0 and -1).
uint32_t scan_result(int n) { return n < 0 ? ~0u : static_cast<uint32_t>(n); }
void s_ff1_i32_b32(Exec& e, const Inst& in) {
  const uint32_t v = src0(e, in);
  e.set_scalar(sop_sdst(in), scan_result(v ? std::countr_zero(v) : -1));
}
void s_flbit_i32_b32(Exec& e, const Inst& in) {
  const uint32_t v = src0(e, in);
  e.set_scalar(sop_sdst(in), scan_result(v ? std::countl_zero(v) : -1));
}
void s_flbit_i32_b64(Exec& e, const Inst& in) {
  const uint64_t v = src0_64(e, in);
  e.set_scalar(sop_sdst(in), scan_result(v ? std::countl_zero(v) : -1));
}
void s_flbit_i32(Exec& e, const Inst& in) {
  const uint32_t v = src0(e, in);
  const uint32_t x = (v >> 31) ? ~v : v;
  e.set_scalar(sop_sdst(in), scan_result(x ? std::countl_zero(x) : -1));
}
void s_flbit_i32_i64(Exec& e, const Inst& in) {
  const uint64_t v = src0_64(e, in);
  const uint64_t x = (v >> 63) ? ~v : v;
  e.set_scalar(sop_sdst(in), scan_result(x ? std::countl_zero(x) : -1));
}
void s_sext_i32_i16(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), static_cast<uint32_t>(static_cast<int16_t>(src0(e, in)))); }
void s_sext_i32_i8(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), static_cast<uint32_t>(static_cast<int8_t>(src0(e, in)))); }
void s_abs_i32(Exec& e, const Inst& in) {
  const int32_t v = static_cast<int32_t>(src0(e, in));
  const uint32_t r = v < 0 ? 0u - static_cast<uint32_t>(v) : static_cast<uint32_t>(v);
  e.set_scalar(sop_sdst(in), r);
  e.w.scc = r != 0;
}
// s_<op>_saveexec_b64: sdst = EXEC; EXEC = op(src, EXEC); SCC = EXEC != 0.
template <uint64_t (*F)(uint64_t, uint64_t)>
void s_saveexec(Exec& e, const Inst& in) {
  const uint64_t old = e.w.exec(), src = src0_64(e, in);
  e.set_scalar64(sop_sdst(in), old);
  const uint64_t r = F(src, old);
  e.w.set_exec(r);
  e.w.scc = r != 0;
}
void s_getpc_b64(Exec& e, const Inst& in) { e.set_scalar64(sop_sdst(in), e.step->offset + in.size); }

// SOPC
template <typename T, bool (*Cmp)(T, T)>
void s_cmp(Exec& e, const Inst& in) {
  e.w.scc = Cmp(static_cast<T>(src0(e, in)), static_cast<T>(src1(e, in)));
}
template <bool (*Cmp)(uint64_t, uint64_t)>
void s_cmp64(Exec& e, const Inst& in) { e.w.scc = Cmp(src0_64(e, in), src1_64(e, in)); }
template <typename T> bool eq(T a, T b) { return a == b; }
template <typename T> bool ne(T a, T b) { return a != b; }
template <typename T> bool lt(T a, T b) { return a < b; }
template <typename T> bool le(T a, T b) { return a <= b; }
template <typename T> bool gt(T a, T b) { return a > b; }
template <typename T> bool ge(T a, T b) { return a >= b; }
template <bool One>
void s_bitcmp_b32(Exec& e, const Inst& in) { e.w.scc = ((src0(e, in) >> (src1(e, in) & 31)) & 1) == (One ? 1u : 0u); }

// SOPK: the 16-bit immediate, sign-extended.
int32_t simm(const Inst& in) { return static_cast<int16_t>(simm16(in)); }
void s_movk_i32(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), static_cast<uint32_t>(simm(in))); }
void s_cmovk_i32(Exec& e, const Inst& in) { if (e.w.scc) e.set_scalar(sop_sdst(in), static_cast<uint32_t>(simm(in))); }
void s_addk_i32(Exec& e, const Inst& in) {
  const int32_t a = static_cast<int32_t>(e.w.s[sop_sdst(in)]);
  int32_t r;
  e.w.scc = __builtin_add_overflow(a, simm(in), &r);
  e.set_scalar(sop_sdst(in), static_cast<uint32_t>(a) + static_cast<uint32_t>(simm(in)));
}
void s_mulk_i32(Exec& e, const Inst& in) { e.set_scalar(sop_sdst(in), e.w.s[sop_sdst(in)] * static_cast<uint32_t>(simm(in))); }
template <typename T, bool (*Cmp)(T, T), bool Signed>
void s_cmpk(Exec& e, const Inst& in) {
  const T k = Signed ? static_cast<T>(simm(in)) : static_cast<T>(simm16(in));
  e.w.scc = Cmp(static_cast<T>(e.w.s[sop_sdst(in)]), k);
}

// SOPP
void nop(Exec&, const Inst&) {}
void s_endpgm(Exec& e, const Inst&) { e.w.ended = true; }
// The wave waits for other waves' memory writes (a spin loop): its turn ends, so that in a
// cooperative launch other workgroups run (executor.cpp); otherwise it runs on at once.
void s_sleep(Exec& e, const Inst&) { e.w.slept = true; }
void s_barrier(Exec& e, const Inst&) { e.w.at_barrier = true; }
void jump(Exec& e, const Inst& in) { e.branch_to(e.step->offset + 4 + 4 * static_cast<int64_t>(simm(in))); }
void s_branch(Exec& e, const Inst& in) { jump(e, in); }
void s_cbranch_scc0(Exec& e, const Inst& in) { if (!e.w.scc) jump(e, in); }
void s_cbranch_scc1(Exec& e, const Inst& in) { if (e.w.scc) jump(e, in); }
void s_cbranch_vccz(Exec& e, const Inst& in) { if ((e.w.vcc() & e.w.exec()) == 0) jump(e, in); }
void s_cbranch_vccnz(Exec& e, const Inst& in) { if ((e.w.vcc() & e.w.exec()) != 0) jump(e, in); }
void s_cbranch_execz(Exec& e, const Inst& in) { if (e.w.exec() == 0) jump(e, in); }
void s_cbranch_execnz(Exec& e, const Inst& in) { if (e.w.exec() != 0) jump(e, in); }
void s_trap(Exec& e, const Inst& in) { e.fail("s_trap " + std::to_string(simm16(in)) + " (the kernel trapped, e.g. llvm.trap or a failed assert)"); }

// s_sendmsg: the message id is simm16[3:0] (gfx9). Messages with no effect on a compute wave's
// state or results are accepted: MSG_INTERRUPT (1, a host interrupt; no host handler listens),
// MSG_SAVEWAVE (4), MSG_STALL_WAVE_GEN (5), MSG_ORDERED_PS_DONE (7), MSG_EARLY_PRIM_DEALLOC (8).
// The rest stop the run: the GS messages (2, 3, 9: graphics only), MSG_HALT_WAVES (6), the ones
// that return a value (10 MSG_GET_DOORBELL, 11 MSG_GET_DDID), MSG_SYSMSG (15) and invalid ids.
// s_sendmsghalt also halts the wave, which only a debugger or the host resumes: it stops the run.
void s_sendmsg(Exec& e, const Inst& in) {
  const uint32_t id = simm16(in) & 0xF;
  if (id == 1 || id == 4 || id == 5 || id == 7 || id == 8) return;
  static const char* const names[16] = {"0 (invalid)", "MSG_INTERRUPT", "MSG_GS", "MSG_GS_DONE", "MSG_SAVEWAVE", "MSG_STALL_WAVE_GEN",
                                        "MSG_HALT_WAVES", "MSG_ORDERED_PS_DONE", "MSG_EARLY_PRIM_DEALLOC", "MSG_GS_ALLOC_REQ",
                                        "MSG_GET_DOORBELL", "MSG_GET_DDID", "12 (invalid)", "13 (invalid)", "14 (invalid)", "MSG_SYSMSG"};
  e.fail(std::string("s_sendmsg ") + names[id] + ": this message is not emulated for compute waves");
}
void s_sendmsghalt(Exec& e, const Inst& in) {
  s_sendmsg(e, in);
  e.fail("s_sendmsghalt halts the wave until a debugger or the host resumes it: not emulated");
}
// s_sethalt 1 halts the wave (the same); s_sethalt 0 is a no-op.
void s_sethalt(Exec& e, const Inst& in) {
  if (simm16(in) & 1) e.fail("s_sethalt " + std::to_string(simm16(in)) + " halts the wave until a debugger or the host resumes it: not emulated");
}

// The SMEM offset (GFX9 encoding): IMM=1 adds the 21-bit signed immediate, and SOE=1 also the
// SGPR in the SOFFSET field (`s_load_dword s6, s[0:1], s6 offset:0x0`); IMM=0 takes one SGPR,
// from SOFFSET when SOE=1, else from the low 7 bits of the offset field. The address's low two
// bits are ignored (dword-aligned).
int64_t smem_address_offset(const Exec& e, const Inst& in) {
  if (!smem_imm(in)) return e.scalar(smem_soe(in) ? smem_soffset(in) : in.word[1] & 0x7f);
  return int64_t{smem_offset(in)} + (smem_soe(in) ? int64_t{e.scalar(smem_soffset(in))} : 0);
}

// The dwords of an s_buffer_load inside its V#'s range: sbase holds the V# (base [47:0], stride
// [61:48], num_records in its third dword), and a dword is in range when its last byte is below
// num_records (the ISA guides' buffer range check, stride 0; out-of-range dwords read 0). A V#
// with a nonzero stride stops the run: scalar loads through one are not emulated.
template <int Dwords>
int buffer_dwords_in_range(const Exec& e, const Inst& in, uint64_t offset) {
  const uint32_t stride = (e.scalar(smem_sbase(in) + 1) >> 16) & 0x3fff, num_records = e.scalar(smem_sbase(in) + 2);
  if (stride != 0) e.fail("s_buffer_load through a V# with stride " + std::to_string(stride) + " is not emulated (only stride 0)");
  if (offset >= num_records) return 0;
  return static_cast<int>(std::min<uint64_t>(Dwords, (num_records - offset) / 4));
}

// SMEM loads: sdata <- dwords at sbase + offset. s_buffer_load: sbase is a V#, its range checked.
template <int Dwords, bool Buffer>
void s_load(Exec& e, const Inst& in) {
  uint64_t base = e.scalar64(smem_sbase(in));
  const uint32_t dst = smem_sdata(in) & ~static_cast<uint32_t>(Dwords >= 4 ? 3 : Dwords == 2 ? 1 : 0);
  if constexpr (Buffer) {
    base &= 0xffffffffffffull;
    const uint64_t offset = static_cast<uint32_t>(smem_address_offset(e, in)) & ~uint32_t{3};
    const int in_range = buffer_dwords_in_range<Dwords>(e, in, offset);
    if (in_range > 0) std::memcpy(&e.w.s[dst], e.global(base + offset, 4 * static_cast<uint32_t>(in_range), -1), 4 * static_cast<size_t>(in_range));
    std::fill(&e.w.s[dst] + in_range, &e.w.s[dst] + Dwords, 0u);
    return;
  }
  const uint64_t address = (base + static_cast<uint64_t>(smem_address_offset(e, in))) & ~uint64_t{3};
  const uint8_t* p = e.global(address, 4 * Dwords, -1);
  std::memcpy(&e.w.s[dst], p, 4 * Dwords);
}

}  // namespace

void register_scalar_semantics(SemanticsTable& t) {
  t["s_add_u32"] = s_add_u32;
  t["s_addc_u32"] = s_addc_u32;
  t["s_sub_u32"] = s_sub_u32;
  t["s_subb_u32"] = s_subb_u32;
  t["s_add_i32"] = s_add_i32;
  t["s_sub_i32"] = s_sub_i32;
  t["s_mul_i32"] = s_mul_i32;
  t["s_mul_hi_u32"] = s_mul_hi_u32;
  t["s_mul_hi_i32"] = s_mul_hi_i32;
  t["s_min_i32"] = s_minmax<true, false>;
  t["s_max_i32"] = s_minmax<true, true>;
  t["s_min_u32"] = s_minmax<false, false>;
  t["s_max_u32"] = s_minmax<false, true>;
  t["s_cselect_b32"] = s_cselect_b32;
  t["s_cselect_b64"] = s_cselect_b64;
  t["s_and_b32"] = sop2_bits32<and32>;
  t["s_or_b32"] = sop2_bits32<or32>;
  t["s_xor_b32"] = sop2_bits32<xor32>;
  t["s_andn2_b32"] = sop2_bits32<andn2_32>;
  t["s_orn2_b32"] = sop2_bits32<orn2_32>;
  t["s_lshl_b32"] = sop2_bits32<lshl32>;
  t["s_lshr_b32"] = sop2_bits32<lshr32>;
  t["s_ashr_i32"] = sop2_bits32<ashr32>;
  t["s_and_b64"] = sop2_bits64<and64>;
  t["s_or_b64"] = sop2_bits64<or64>;
  t["s_xor_b64"] = sop2_bits64<xor64>;
  t["s_andn2_b64"] = sop2_bits64<andn2_64>;
  t["s_orn2_b64"] = sop2_bits64<orn2_64>;
  t["s_nand_b64"] = sop2_bits64<nand64>;
  t["s_nor_b64"] = sop2_bits64<nor64>;
  t["s_xnor_b64"] = sop2_bits64<xnor64>;
  t["s_lshl_b64"] = sop2_shift64<lshl64>;
  t["s_lshr_b64"] = sop2_shift64<lshr64>;
  t["s_ashr_i64"] = sop2_shift64<ashr64>;
  t["s_lshl1_add_u32"] = s_lshl_add_u32<1>;
  t["s_lshl2_add_u32"] = s_lshl_add_u32<2>;
  t["s_lshl3_add_u32"] = s_lshl_add_u32<3>;
  t["s_lshl4_add_u32"] = s_lshl_add_u32<4>;
  t["s_bfe_u32"] = s_bfe_32<false>;
  t["s_bfe_i32"] = s_bfe_32<true>;
  t["s_bfm_b32"] = s_bfm_b32;
  t["s_pack_ll_b32_b16"] = s_pack_ll_b32_b16;
  t["s_mov_b32"] = s_mov_b32;
  t["s_mov_b64"] = s_mov_b64;
  t["s_cmov_b32"] = s_cmov_b32;
  t["s_cmov_b64"] = s_cmov_b64;
  t["s_not_b32"] = s_not_b32;
  t["s_brev_b32"] = s_brev_b32;
  t["s_brev_b64"] = s_brev_b64;
  t["s_not_b64"] = s_not_b64;
  t["s_bitset0_b32"] = s_bitset_b32<false>;
  t["s_bitset1_b32"] = s_bitset_b32<true>;
  t["s_bitset0_b64"] = s_bitset_b64<false>;
  t["s_bitset1_b64"] = s_bitset_b64<true>;
  t["s_bcnt1_i32_b32"] = s_bcnt1_i32_b32;
  t["s_bcnt1_i32_b64"] = s_bcnt1_i32_b64;
  t["s_ff1_i32_b64"] = s_ff1_i32_b64;
  t["s_ff1_i32_b32"] = s_ff1_i32_b32;
  t["s_flbit_i32_b32"] = s_flbit_i32_b32;
  t["s_flbit_i32_b64"] = s_flbit_i32_b64;
  t["s_flbit_i32"] = s_flbit_i32;
  t["s_flbit_i32_i64"] = s_flbit_i32_i64;
  t["s_sext_i32_i16"] = s_sext_i32_i16;
  t["s_sext_i32_i8"] = s_sext_i32_i8;
  t["s_abs_i32"] = s_abs_i32;
  t["s_and_saveexec_b64"] = s_saveexec<and64>;
  t["s_or_saveexec_b64"] = s_saveexec<or64>;
  t["s_xor_saveexec_b64"] = s_saveexec<xor64>;
  t["s_andn2_saveexec_b64"] = s_saveexec<andn2_64>;
  t["s_orn2_saveexec_b64"] = s_saveexec<orn2_64>;
  t["s_getpc_b64"] = s_getpc_b64;
  t["s_cmp_eq_i32"] = s_cmp<int32_t, eq<int32_t>>;
  t["s_cmp_lg_i32"] = s_cmp<int32_t, ne<int32_t>>;
  t["s_cmp_gt_i32"] = s_cmp<int32_t, gt<int32_t>>;
  t["s_cmp_ge_i32"] = s_cmp<int32_t, ge<int32_t>>;
  t["s_cmp_lt_i32"] = s_cmp<int32_t, lt<int32_t>>;
  t["s_cmp_le_i32"] = s_cmp<int32_t, le<int32_t>>;
  t["s_cmp_eq_u32"] = s_cmp<uint32_t, eq<uint32_t>>;
  t["s_cmp_lg_u32"] = s_cmp<uint32_t, ne<uint32_t>>;
  t["s_cmp_gt_u32"] = s_cmp<uint32_t, gt<uint32_t>>;
  t["s_cmp_ge_u32"] = s_cmp<uint32_t, ge<uint32_t>>;
  t["s_cmp_lt_u32"] = s_cmp<uint32_t, lt<uint32_t>>;
  t["s_cmp_le_u32"] = s_cmp<uint32_t, le<uint32_t>>;
  t["s_cmp_eq_u64"] = s_cmp64<eq<uint64_t>>;
  t["s_cmp_lg_u64"] = s_cmp64<ne<uint64_t>>;
  t["s_bitcmp0_b32"] = s_bitcmp_b32<false>;
  t["s_bitcmp1_b32"] = s_bitcmp_b32<true>;
  t["s_movk_i32"] = s_movk_i32;
  t["s_cmovk_i32"] = s_cmovk_i32;
  t["s_addk_i32"] = s_addk_i32;
  t["s_mulk_i32"] = s_mulk_i32;
  t["s_cmpk_eq_i32"] = s_cmpk<int32_t, eq<int32_t>, true>;
  t["s_cmpk_lg_i32"] = s_cmpk<int32_t, ne<int32_t>, true>;
  t["s_cmpk_gt_i32"] = s_cmpk<int32_t, gt<int32_t>, true>;
  t["s_cmpk_ge_i32"] = s_cmpk<int32_t, ge<int32_t>, true>;
  t["s_cmpk_lt_i32"] = s_cmpk<int32_t, lt<int32_t>, true>;
  t["s_cmpk_le_i32"] = s_cmpk<int32_t, le<int32_t>, true>;
  t["s_cmpk_eq_u32"] = s_cmpk<uint32_t, eq<uint32_t>, false>;
  t["s_cmpk_lg_u32"] = s_cmpk<uint32_t, ne<uint32_t>, false>;
  t["s_cmpk_gt_u32"] = s_cmpk<uint32_t, gt<uint32_t>, false>;
  t["s_cmpk_ge_u32"] = s_cmpk<uint32_t, ge<uint32_t>, false>;
  t["s_cmpk_lt_u32"] = s_cmpk<uint32_t, lt<uint32_t>, false>;
  t["s_cmpk_le_u32"] = s_cmpk<uint32_t, le<uint32_t>, false>;
  for (const char* name : {"s_nop", "s_waitcnt", "s_setprio", "s_icache_inv", "s_incperflevel", "s_decperflevel"})
    t[name] = nop;
  t["s_sleep"] = s_sleep;
  t["s_sethalt"] = s_sethalt;
  t["s_sendmsg"] = s_sendmsg;
  t["s_sendmsghalt"] = s_sendmsghalt;
  // s_endpgm_saved ends a wave after a context save (what a trap handler does);
  // s_endpgm_ordered_ps_done also signals the ordered pixel-shader done message, which has
  // nothing to tell a compute dispatch. Both end the wave.
  t["s_endpgm"] = s_endpgm;
  t["s_endpgm_saved"] = s_endpgm;
  t["s_endpgm_ordered_ps_done"] = s_endpgm;
  t["s_barrier"] = s_barrier;
  t["s_branch"] = s_branch;
  t["s_cbranch_scc0"] = s_cbranch_scc0;
  t["s_cbranch_scc1"] = s_cbranch_scc1;
  t["s_cbranch_vccz"] = s_cbranch_vccz;
  t["s_cbranch_vccnz"] = s_cbranch_vccnz;
  t["s_cbranch_execz"] = s_cbranch_execz;
  t["s_cbranch_execnz"] = s_cbranch_execnz;
  t["s_trap"] = s_trap;
  t["s_load_dword"] = s_load<1, false>;
  t["s_load_dwordx2"] = s_load<2, false>;
  t["s_load_dwordx4"] = s_load<4, false>;
  t["s_load_dwordx8"] = s_load<8, false>;
  t["s_load_dwordx16"] = s_load<16, false>;
  t["s_buffer_load_dword"] = s_load<1, true>;
  t["s_buffer_load_dwordx2"] = s_load<2, true>;
  t["s_buffer_load_dwordx4"] = s_load<4, true>;
  t["s_buffer_load_dwordx8"] = s_load<8, true>;
  t["s_buffer_load_dwordx16"] = s_load<16, true>;
}

}  // namespace weft::emu
