// gfx950's cross-lane transposes: the transposing LDS reads (ds_read_b64_tr_b16/_b8/_b4,
// ds_read_b96_tr_b6) and the row swaps v_permlane16_swap_b32 / v_permlane32_swap_b32.
//
// Transposing LDS reads. Sources: AMD's CDNA4 ISA guide, section 11.4 "MFMA Transpose Load from
// LDS" ("read N bits of data per lane from data share; interpret the data as a matrix with
// b-bit elements and transpose the matrix"; DS_READ_B64_TR_B16 "used for either column major
// matrix A or row major matrix B ... each lane holds 4 consecutive M or N values"; EXEC must be
// all ones), and the lane layouts of kernels that feed MFMAs with them (HipKittens' column
// layout and aiter/OPUS's V operand: in a 16-lane group, lane s reads row s / 4, columns
// 4 (s % 4) .. +3 of a 4 x 16 b16 block; for b8, lane pairs read one row of 16 bytes).
//
// The rule, per group of 16 lanes (lanes 16g .. 16g + 15, independent of the other groups):
// every lane s reads E = (64 or 96 bits) / b elements src[s][0 .. E-1] at its own address
// (element k at bits k*b of the little-endian data). Those 16 x E elements, taken in lane order,
// are a row-major matrix with 16 columns: flat index f = E*s + k is row f / 16, column f % 16.
// Lane i of the group receives column i: its element j (bits j*b of its registers) is row j,
// that is flat index 16 j + i:
//
//     result[i][j] = src[(16 j + i) / E][(16 j + i) % E],   j = 0 .. E-1
//
// b16 (E = 4): result[i][j] = src[4j + i/4][i % 4]; b8 (E = 8): src[2j + i/8][i % 8];
// b4 and b6 (E = 16): src[j][i]. So a 16 x 16 b16 tile K x N stored row-major, read by two
// instructions whose lane s of group g addresses row 8g + s/4 (+4 for the second), column
// 4 (s % 4), gives lane l the eight K values 8 (l/16) .. +7 of column l % 16: the B operand of
// v_mfma_f32_16x16x32_bf16 (tests/emulator/test_lds_transpose.cpp checks this through the MFMA).
// The b16 and b8 mappings are confirmed by the kernels above; b4 and b6 follow the same rule
// (one row of 16 elements per lane), which the ISA guide's description implies but no kernel we
// could read spells out.
//
// v_permlane16_swap_b32 vdst, vsrc: the odd rows (16 lanes each) of vdst are exchanged with the
// even rows of vsrc: for lanes l in rows 1 and 3, vdst[l] <-> vsrc[l - 16]. v_permlane32_swap_b32:
// vdst[l] <-> vsrc[l - 32] for l in 32 .. 63. Both registers are written. (CDNA4 ISA guide, VOP1
// "swap odd rows of the first operand with even rows of the second"; LLVM's
// llvm.amdgcn.permlane{16,32}.swap return {new vdst, new vsrc}.) What inactive lanes do (the
// fi and bound_ctrl bits) is not modelled: a pair with an inactive lane stops the run.
#include <cstring>
#include <string>

#include "isa_fields.h"
#include "semantics.h"

namespace weft::emu {

using namespace fields;

namespace {

// Element k (Bits wide) of little-endian dwords `d`.
template <uint32_t Bits>
uint32_t element(const uint32_t* d, uint32_t k) {
  const uint32_t bit = k * Bits, word = bit / 32, shift = bit % 32;
  uint64_t window = d[word];
  if (shift + Bits > 32) window |= uint64_t{d[word + 1]} << 32;
  return static_cast<uint32_t>(window >> shift) & ((1u << Bits) - 1);
}

template <uint32_t Bits>
void set_element(uint32_t* d, uint32_t k, uint32_t v) {
  const uint32_t bit = k * Bits, word = bit / 32, shift = bit % 32;
  d[word] |= v << shift;
  if (shift + Bits > 32) d[word + 1] |= v >> (32 - shift);
}

template <uint32_t Dwords, uint32_t Bits>
void ds_read_transposed(Exec& e, const Inst& in) {
  constexpr uint32_t kElements = Dwords * 32 / Bits;
  const uint32_t dst = ds_vdst(in) + (ds_acc(in) ? 256 : 0);
  const uint32_t offset = ds_offset0(in) | (ds_offset1(in) << 8);
  const uint64_t exec = e.w.exec();
  for (int g = 0; g < 4; ++g) {
    const uint64_t group = (exec >> (16 * g)) & 0xFFFF;
    if (group == 0) continue;
    if (group != 0xFFFF)
      e.fail("a transposing LDS read needs all 16 lanes of a group active (lanes " + std::to_string(16 * g) + ".." +
             std::to_string(16 * g + 15) + " have EXEC bits 0x" + [&] {
               char buf[8];
               std::snprintf(buf, sizeof buf, "%04x", static_cast<unsigned>(group));
               return std::string(buf);
             }() + ")");
    uint32_t src[16][Dwords];
    for (int s = 0; s < 16; ++s) {
      const int l = 16 * g + s;
      std::memcpy(src[s], e.lds_read(uint64_t{e.w.vreg(ds_addr(in))[l]} + offset, Dwords * 4, l), Dwords * 4);
    }
    for (uint32_t i = 0; i < 16; ++i) {
      uint32_t out[Dwords] = {};
      for (uint32_t j = 0; j < kElements; ++j) {
        const uint32_t f = 16 * j + i;
        set_element<Bits>(out, j, element<Bits>(src[f / kElements], f % kElements));
      }
      for (uint32_t d = 0; d < Dwords; ++d) e.w.vreg(dst + d)[16 * g + i] = out[d];
    }
  }
}

// Exchanges vdst's lanes [Rows, 64) of every 2*Rows block with vsrc's lanes Rows below them.
template <int Rows>
void v_permlane_swap(Exec& e, const Inst&) {
  const VectorOperands& o = e.step->vop;
  if (o.src[0] < 256) e.fail("v_permlane_swap with a non-VGPR source");
  uint32_t* d = e.w.vreg(o.vdst);
  uint32_t* s = e.w.vreg(o.src[0] - 256);
  const uint64_t exec = e.w.exec();
  for (int base = 0; base < kLanes; base += 2 * Rows)
    for (int l = base + Rows; l < base + 2 * Rows; ++l) {
      const bool hi = (exec >> l) & 1, lo = (exec >> (l - Rows)) & 1;
      if (!hi && !lo) continue;
      if (hi != lo)
        e.fail("v_permlane" + std::to_string(Rows) + "_swap with lane " + std::to_string(l) + " and its partner lane " +
               std::to_string(l - Rows) + " not both active (inactive lanes are not modelled)");
      std::swap(d[l], s[l - Rows]);
    }
}

}  // namespace

void register_transpose_semantics(SemanticsTable& t) {
  t["ds_read_b64_tr_b16"] = ds_read_transposed<2, 16>;
  t["ds_read_b64_tr_b8"] = ds_read_transposed<2, 8>;
  t["ds_read_b64_tr_b4"] = ds_read_transposed<2, 4>;
  t["ds_read_b96_tr_b6"] = ds_read_transposed<3, 6>;
  for (const char* s : {"_e32", "_e64"}) {
    t[std::string("v_permlane16_swap_b32") + s] = v_permlane_swap<16>;
    t[std::string("v_permlane32_swap_b32") + s] = v_permlane_swap<32>;
  }
}

}  // namespace weft::emu
