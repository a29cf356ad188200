// MFMA semantics: the op tables of gfx942 and gfx950, the fragment layouts that say where each
// matrix element lives in the register file, the element decoders, and the multiply-accumulate.
//
// Sources. Op names, targets and register counts: llvm-mc-22 -show-encoding for gfx942 and gfx950
// (an op is listed for a target exactly when llvm-mc assembles it there with these counts).
// Layouts: the AMD Matrix Instruction Calculator's CDNA3 output (element-to-register mappings,
// in shared/reference/mfma-cdna3/), whose per-shape formulas follow one rule given below; the same
// rule is what rocjitsu (ROCm/rocm-systems emulation/rocjitsu, shared/mma_exec.h) uses for CDNA1-4,
// and it matches the CDNA4 16x16x32 fragment tinygrad uses on gfx950 (k = 8*(lane/16) + element).
// Multi-block ops: MMA-Sim's hardware-validated CDNA3 probe kernels (microsoft/MMA-Sim) place
// block 0 the same way.
#include "weft/emulator/mfma.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "isa_fields.h"
#include "weft/dsl/error.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace weft::emu {
namespace {

constexpr int kWave = 64;

// ---------------------------------------------------------------------------------------------
// The op tables.

enum class Targets { Both, Gfx942Only, Gfx950Only };

struct TableEntry {
  Targets targets;
  MfmaOp op;
  constexpr bool on(Arch arch) const {
    return targets == Targets::Both || (targets == Targets::Gfx942Only) == (arch == Arch::Gfx942);
  }
};

using enum MfmaInput;

// m, n, k, blocks; A, B types; A, B, C/D dwords per lane; i32 accumulators; matrix-core passes.
constexpr TableEntry kAllOps[] = {
    // f32. The multi-block ones are LLVM's renames of gfx908's 32x32x1f32, 16x16x1f32, 4x4x1f32.
    {Targets::Both, {"v_mfma_f32_32x32x1_2b_f32", 32, 32, 1, 2, F32, F32, 1, 1, 32, false, 16}},
    {Targets::Both, {"v_mfma_f32_16x16x1_4b_f32", 16, 16, 1, 4, F32, F32, 1, 1, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_4x4x1_16b_f32", 4, 4, 1, 16, F32, F32, 1, 1, 4, false, 2}},
    {Targets::Both, {"v_mfma_f32_32x32x2_f32", 32, 32, 2, 1, F32, F32, 1, 1, 16, false, 16}},
    {Targets::Both, {"v_mfma_f32_16x16x4_f32", 16, 16, 4, 1, F32, F32, 1, 1, 4, false, 8}},
    // xf32: gfx942 only; gfx950 dropped it.
    {Targets::Gfx942Only, {"v_mfma_f32_32x32x4_xf32", 32, 32, 4, 1, XF32, XF32, 2, 2, 16, false, 8}},
    {Targets::Gfx942Only, {"v_mfma_f32_16x16x8_xf32", 16, 16, 8, 1, XF32, XF32, 2, 2, 4, false, 4}},
    // f16.
    {Targets::Both, {"v_mfma_f32_32x32x4_2b_f16", 32, 32, 4, 2, F16, F16, 2, 2, 32, false, 16}},
    {Targets::Both, {"v_mfma_f32_16x16x4_4b_f16", 16, 16, 4, 4, F16, F16, 2, 2, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_4x4x4_16b_f16", 4, 4, 4, 16, F16, F16, 2, 2, 4, false, 2}},
    {Targets::Both, {"v_mfma_f32_32x32x8_f16", 32, 32, 8, 1, F16, F16, 2, 2, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_16x16x16_f16", 16, 16, 16, 1, F16, F16, 2, 2, 4, false, 4}},
    {Targets::Gfx950Only, {"v_mfma_f32_32x32x16_f16", 32, 32, 16, 1, F16, F16, 4, 4, 16, false, 8}},
    {Targets::Gfx950Only, {"v_mfma_f32_16x16x32_f16", 16, 16, 32, 1, F16, F16, 4, 4, 4, false, 4}},
    // bf16. The multi-block ones are gfx90a's *bf16_1k ops under their gfx940 names.
    {Targets::Both, {"v_mfma_f32_32x32x4_2b_bf16", 32, 32, 4, 2, BF16, BF16, 2, 2, 32, false, 16}},
    {Targets::Both, {"v_mfma_f32_16x16x4_4b_bf16", 16, 16, 4, 4, BF16, BF16, 2, 2, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_4x4x4_16b_bf16", 4, 4, 4, 16, BF16, BF16, 2, 2, 4, false, 2}},
    {Targets::Both, {"v_mfma_f32_32x32x8_bf16", 32, 32, 8, 1, BF16, BF16, 2, 2, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_16x16x16_bf16", 16, 16, 16, 1, BF16, BF16, 2, 2, 4, false, 4}},
    {Targets::Gfx950Only, {"v_mfma_f32_32x32x16_bf16", 32, 32, 16, 1, BF16, BF16, 4, 4, 16, false, 8}},
    {Targets::Gfx950Only, {"v_mfma_f32_16x16x32_bf16", 16, 16, 32, 1, BF16, BF16, 4, 4, 4, false, 4}},
    // i8.
    {Targets::Both, {"v_mfma_i32_32x32x4_2b_i8", 32, 32, 4, 2, I8, I8, 1, 1, 32, true, 16}},
    {Targets::Both, {"v_mfma_i32_16x16x4_4b_i8", 16, 16, 4, 4, I8, I8, 1, 1, 16, true, 8}},
    {Targets::Both, {"v_mfma_i32_4x4x4_16b_i8", 4, 4, 4, 16, I8, I8, 1, 1, 4, true, 2}},
    {Targets::Both, {"v_mfma_i32_32x32x16_i8", 32, 32, 16, 1, I8, I8, 2, 2, 16, true, 8}},
    {Targets::Both, {"v_mfma_i32_16x16x32_i8", 16, 16, 32, 1, I8, I8, 2, 2, 4, true, 4}},
    {Targets::Gfx950Only, {"v_mfma_i32_32x32x32_i8", 32, 32, 32, 1, I8, I8, 4, 4, 16, true, 8}},
    {Targets::Gfx950Only, {"v_mfma_i32_16x16x64_i8", 16, 16, 64, 1, I8, I8, 4, 4, 4, true, 4}},
    // fp8 / bf8, any pairing; the format behind each name depends on the target (mfma.h).
    {Targets::Both, {"v_mfma_f32_16x16x32_fp8_fp8", 16, 16, 32, 1, FP8, FP8, 2, 2, 4, false, 4}},
    {Targets::Both, {"v_mfma_f32_16x16x32_fp8_bf8", 16, 16, 32, 1, FP8, BF8, 2, 2, 4, false, 4}},
    {Targets::Both, {"v_mfma_f32_16x16x32_bf8_fp8", 16, 16, 32, 1, BF8, FP8, 2, 2, 4, false, 4}},
    {Targets::Both, {"v_mfma_f32_16x16x32_bf8_bf8", 16, 16, 32, 1, BF8, BF8, 2, 2, 4, false, 4}},
    {Targets::Both, {"v_mfma_f32_32x32x16_fp8_fp8", 32, 32, 16, 1, FP8, FP8, 2, 2, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_32x32x16_fp8_bf8", 32, 32, 16, 1, FP8, BF8, 2, 2, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_32x32x16_bf8_fp8", 32, 32, 16, 1, BF8, FP8, 2, 2, 16, false, 8}},
    {Targets::Both, {"v_mfma_f32_32x32x16_bf8_bf8", 32, 32, 16, 1, BF8, BF8, 2, 2, 16, false, 8}},
};

constexpr size_t count_on(Arch arch) {
  return static_cast<size_t>(std::ranges::count_if(kAllOps, [arch](const TableEntry& e) { return e.on(arch); }));
}

template <Arch arch>
constexpr std::array<MfmaOp, count_on(arch)> ops_on() {
  std::array<MfmaOp, count_on(arch)> ops{};
  size_t n = 0;
  for (const TableEntry& e : kAllOps)
    if (e.on(arch)) ops[n++] = e.op;
  return ops;
}

constexpr auto kGfx942Ops = ops_on<Arch::Gfx942>();
constexpr auto kGfx950Ops = ops_on<Arch::Gfx950>();

// ---------------------------------------------------------------------------------------------
// Fragment layouts. `outer` is the row i of A (outer_size = m) or the column j of B (n).

constexpr int element_bits(MfmaInput type) {
  switch (type) {
    case F32:
    case XF32: return 32;
    case F16:
    case BF16: return 16;
    case FP8:
    case BF8:
    case I8: return 8;
  }
  return 32;
}

// Operand sizes bound the scratch arrays of execute_mfma.
constexpr int kMaxInputDwords = 4, kMaxAccumDwords = 32;
constexpr int kMaxInputElements = kMaxInputDwords * 4 * kWave;  // 4 dwords of i8 per lane

// The register counts hold exactly the elements of the shape, and fit the scratch arrays.
constexpr bool consistent(const MfmaOp& op) {
  const auto elements = [](int dwords, MfmaInput type) { return dwords * kWave * (32 / element_bits(type)); };
  const bool shape_fills_registers = elements(op.a_dwords, op.a_type) == op.m * op.k * op.blocks &&
                                     elements(op.b_dwords, op.b_type) == op.n * op.k * op.blocks &&
                                     op.cd_dwords * kWave == op.m * op.n * op.blocks;
  const bool fits_scratch =
      op.a_dwords <= kMaxInputDwords && op.b_dwords <= kMaxInputDwords && op.cd_dwords <= kMaxAccumDwords;
  return op.m % 4 == 0 && (op.n == 4 || op.n == 16 || op.n == 32) && shape_fills_registers && fits_scratch;
}
static_assert(std::ranges::all_of(kAllOps, [](const TableEntry& e) { return consistent(e.op); }));

// Where one A or B element lives: dword `dword` of `lane`, bits [shift, shift + element bits).
struct InputSlot {
  int dword, lane, shift;
};

// A[i][k] and B[k][j] share one rule. Each lane holds E = k*outer_size*blocks/64 consecutive k's
// of one row i (column j), packed from the low bits of its first dword up. Lanes count the outer
// index fastest, then the block, then the chunk of E k's (block before chunk is rocjitsu's order;
// no op of these targets has both several blocks and several chunks, so nothing here depends on it):
//   lane = outer_size*(blocks*floor(k/E) + block) + outer,  element e = k mod E,
//   dword = floor(e*bits/32),  shift = (e*bits) mod 32.
// E.g. 16x16x16_bf16 (E = 4): lane 16*floor(k/4) + i, GPR floor(k/2) mod 2, bits 16*(k mod 2),
// the calculator's "A[i][k].block GPR: (floor(k / 2) % 2).[16*(k % 2)+15 : 16*(k % 2)], Lane:
// 16 * floor(k / 4) + i". Every multi-block op has E = k, so its lane is outer_size*block + outer.
InputSlot input_slot(const MfmaOp& op, int outer_size, int bits, int block, int outer, int k) {
  const int per_lane = op.k * outer_size * op.blocks / kWave;
  const int lane_group = op.blocks * (k / per_lane) + block;
  const int bit = (k % per_lane) * bits;
  return {bit / 32, outer_size * lane_group + outer, bit % 32};
}

// D[i][j] (and C) of a block: j = lane mod n. Rows go in chunks of four, i = 4q + r, with r the
// dword within a group of four. The chunks of all blocks, numbered s = block*(m/4) + q, are dealt
// to the 64/n lane groups in turn, each round around the lane groups taking the next four dwords:
//   lane = n*(s mod (64/n)) + j,  dword = 4*floor(s / (64/n)) + (i mod 4).
// This gives the calculator's 16x16 "GPR: i % 4, Lane: 16 * floor(i / 4) + j" (4*block more dwords
// for _4b), 32x32 "GPR: 4 * floor(i / 8) + (i % 4), Lane: (32 * floor(i / 4)) % 64 + j" (16*block
// more for _2b), and for 4x4x*_16b dword i, lane 4*block + j.
int accum_index(const MfmaOp& op, int block, int i, int j) {
  const int lane_groups = kWave / op.n;
  const int chunk = block * (op.m / 4) + i / 4;
  const int dword = 4 * (chunk / lane_groups) + i % 4;
  const int lane = op.n * (chunk % lane_groups) + j;
  return dword * kWave + lane;
}


// ---------------------------------------------------------------------------------------------
// Element decoding.

// The narrow float formats: field widths, bias, and which codes are not plain numbers.
enum class Specials {
  Ieee,               // the all-ones exponent is inf (zero mantissa) or NaN
  AllOnesIsNan,       // OCP E4M3FN: only S.1111.111 is NaN; no inf
  NegativeZeroIsNan,  // FNUZ: 0x80 is the one NaN; no inf, every other code is a number
  None,               // the OCP MX fp6 and fp4 formats: every code is a finite number
};

struct NarrowFloat {
  int exponent_bits, mantissa_bits, bias;
  Specials specials;
};

constexpr NarrowFloat kF16{5, 10, 15, Specials::Ieee};
constexpr NarrowFloat kE4M3Fn{4, 3, 7, Specials::AllOnesIsNan};
constexpr NarrowFloat kE5M2{5, 2, 15, Specials::Ieee};
constexpr NarrowFloat kE4M3Fnuz{4, 3, 8, Specials::NegativeZeroIsNan};
constexpr NarrowFloat kE5M2Fnuz{5, 2, 16, Specials::NegativeZeroIsNan};
constexpr NarrowFloat kE2M3{2, 3, 1, Specials::None};  // fp6
constexpr NarrowFloat kE3M2{3, 2, 3, Specials::None};  // bf6
constexpr NarrowFloat kE2M1{2, 1, 1, Specials::None};  // fp4

float decode_narrow(const NarrowFloat& f, uint32_t code) {
  const uint32_t mantissa = code & ((1u << f.mantissa_bits) - 1);
  const uint32_t exponent = (code >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const bool negative = (code >> (f.exponent_bits + f.mantissa_bits)) & 1;
  const uint32_t max_exponent = (1u << f.exponent_bits) - 1;
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  if (f.specials == Specials::NegativeZeroIsNan && negative && exponent == 0 && mantissa == 0) return kNan;
  if (f.specials == Specials::AllOnesIsNan && exponent == max_exponent && mantissa == (1u << f.mantissa_bits) - 1)
    return kNan;
  if (f.specials == Specials::Ieee && exponent == max_exponent)
    return mantissa ? kNan : (negative ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity();
  // Subnormals (exponent 0) share the smallest normal binade's step but have no hidden bit.
  const uint32_t significand = exponent == 0 ? mantissa : mantissa | (1u << f.mantissa_bits);
  const int scale = std::max<int>(static_cast<int>(exponent), 1) - f.bias - f.mantissa_bits;
  const float magnitude = std::ldexp(static_cast<float>(significand), scale);
  return negative ? -magnitude : magnitude;
}

// xf32 keeps the sign, the exponent and the top 10 of the 23 mantissa bits: truncation, not
// rounding, as MMA-Sim models CDNA3's xf32 ops bit-exactly against MI300 hardware (its
// truncate_to_tf32 drops the 13 low bits). NaNs stay NaN (truncation could otherwise make inf);
// that case is not confirmed on hardware.
float decode_xf32(uint32_t code) {
  const float value = std::bit_cast<float>(code);
  return std::isnan(value) ? value : std::bit_cast<float>(code & ~uint32_t{0x1fff});
}

float decode_float_input(MfmaInput type, Arch arch, uint32_t code) {
  const bool fnuz = arch == Arch::Gfx942;  // CDNA3's fp8 formats; CDNA4 switched to OCP
  switch (type) {
    case F32: return std::bit_cast<float>(code);
    case XF32: return decode_xf32(code);
    case F16: return decode_narrow(kF16, code);
    case BF16: return std::bit_cast<float>(code << 16);
    case FP8: return decode_narrow(fnuz ? kE4M3Fnuz : kE4M3Fn, code);
    case BF8: return decode_narrow(fnuz ? kE5M2Fnuz : kE5M2, code);
    case I8: return static_cast<float>(static_cast<int8_t>(code));
  }
  return 0.0f;
}

// ---------------------------------------------------------------------------------------------
// Execution.

// Where each element of A, B and C/D lives, worked out once per op from the layout rules above,
// so that executing an MFMA is table lookups and dense loops. In every layout the outer index (i
// of A, j of B) runs over consecutive lanes of one dword, so a row of A or B for one (block, kk)
// is `size` consecutive words at one shift: the gathers below are unit-stride loops.
struct RowSlot {
  uint16_t base;  // dword * 64 + lane of outer index 0
  uint8_t shift;
};
struct Plan {
  std::vector<RowSlot> a, b;    // per (block, kk): A[block][i][kk] at base + i, B[block][kk][j] at base + j
  std::vector<uint16_t> accum;  // per (block, i): C/D[block][i][j] at accum + j
};

std::vector<RowSlot> row_slots(const MfmaOp& op, int outer_size, int bits) {
  std::vector<RowSlot> rows;
  for (int block = 0; block < op.blocks; ++block)
    for (int kk = 0; kk < op.k; ++kk) {
      const InputSlot first = input_slot(op, outer_size, bits, block, 0, kk);
      for (int outer = 1; outer < outer_size; ++outer) {
        const InputSlot s = input_slot(op, outer_size, bits, block, outer, kk);
        if (s.dword != first.dword || s.lane != first.lane + outer || s.shift != first.shift)
          throw Error(std::string("MFMA layout of ") + op.mnemonic + ": a row does not lie in consecutive lanes");
      }
      rows.push_back({static_cast<uint16_t>(first.dword * kWave + first.lane), static_cast<uint8_t>(first.shift)});
    }
  return rows;
}

// The accumulator layout puts j of one row i in consecutive lanes of one dword, like A and B.
std::vector<uint16_t> accum_rows(const MfmaOp& op) {
  std::vector<uint16_t> rows;
  for (int block = 0; block < op.blocks; ++block)
    for (int i = 0; i < op.m; ++i) {
      const int first = accum_index(op, block, i, 0);
      for (int j = 1; j < op.n; ++j)
        if (accum_index(op, block, i, j) != first + j)
          throw Error(std::string("MFMA layout of ") + op.mnemonic + ": a row of D does not lie in consecutive lanes");
      rows.push_back(static_cast<uint16_t>(first));
    }
  return rows;
}

Plan make_plan(const MfmaOp& op) {
  Plan p;
  p.a = row_slots(op, op.m, element_bits(op.a_type));
  p.b = row_slots(op, op.n, element_bits(op.b_type));
  p.accum = accum_rows(op);
  return p;
}

// Plans of the table ops, built on first use and found by the op's place in its table; other ops
// get a plan of their own each call.
const Plan& plan_for(const MfmaOp& op, Plan& scratch) {
  static const std::vector<Plan> plans = [] {
    std::vector<Plan> all;
    for (const MfmaOp& o : kGfx942Ops) all.push_back(make_plan(o));
    for (const MfmaOp& o : kGfx950Ops) all.push_back(make_plan(o));
    return all;
  }();
  const std::less<const MfmaOp*> before;  // a total order on unrelated pointers, unlike <
  if (!before(&op, kGfx942Ops.data()) && before(&op, kGfx942Ops.data() + kGfx942Ops.size()))
    return plans[static_cast<size_t>(&op - kGfx942Ops.data())];
  if (!before(&op, kGfx950Ops.data()) && before(&op, kGfx950Ops.data() + kGfx950Ops.size()))
    return plans[kGfx942Ops.size() + static_cast<size_t>(&op - kGfx950Ops.data())];
  scratch = make_plan(op);
  return scratch;
}

// Every code of an element type decoded once: 8-bit types take 256 entries, f16 65536.
const std::vector<float>& decode_table(MfmaInput type, Arch arch) {
  auto build = [](MfmaInput t, Arch a, uint32_t codes) {
    std::vector<float> v(codes);
    for (uint32_t c = 0; c < codes; ++c) v[c] = decode_float_input(t, a, c);
    return v;
  };
  static const std::vector<float> f16 = build(F16, Arch::Gfx942, 1u << 16);
  static const std::vector<float> fp8_942 = build(FP8, Arch::Gfx942, 256), fp8_950 = build(FP8, Arch::Gfx950, 256);
  static const std::vector<float> bf8_942 = build(BF8, Arch::Gfx942, 256), bf8_950 = build(BF8, Arch::Gfx950, 256);
  if (type == F16) return f16;
  if (type == FP8) return arch == Arch::Gfx942 ? fp8_942 : fp8_950;
  return arch == Arch::Gfx942 ? bf8_942 : bf8_950;
}

// Decodes A or B into out[(block*k + kk)*size + outer]: for each (block, kk) a row of `size`.
template <class T, class Decode>
void gather(const std::vector<RowSlot>& rows, int size, const uint32_t* regs, int bits, Decode decode, T* out) {
  const uint32_t mask = bits == 32 ? ~0u : (1u << bits) - 1;
  for (size_t r = 0; r < rows.size(); ++r) {
    const uint32_t* words = regs + rows[r].base;
    const uint32_t shift = rows[r].shift;
    T* row = out + r * static_cast<size_t>(size);
    for (int outer = 0; outer < size; ++outer) row[outer] = decode((words[outer] >> shift) & mask);
  }
}

#if defined(__AVX2__) && defined(__FMA__)
// The same gather 8 lanes at a time, for rows of 8 or more elements and the decoders that are
// bit operations. Written out because compilers vectorize the generic loop above across rows,
// with element inserts, once its row length is a constant. Each row is a few loads, one
// operation each and stores; the operations avoid vector shifts where they can (one pipe on
// some hosts, Zen 1 among them): the gather is store-bound then.
template <class T, class Prepare, class Decode8>
void gather8(const std::vector<RowSlot>& rows, int size, const uint32_t* regs, Prepare prepare, Decode8 decode, T* out) {
  for (size_t r = 0; r < rows.size(); ++r) {
    const uint32_t* words = regs + rows[r].base;
    const auto how = prepare(rows[r].shift);
    T* row = out + r * static_cast<size_t>(size);
    for (int outer = 0; outer < size; outer += 8) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + outer));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + outer), decode(w, how));
    }
  }
}

// The bit-operation decoders, vector forms of the scalar ones in execute_float/execute_integer.
// A 32-bit element is the word itself.
inline int no_preparation(uint32_t) { return 0; }
inline __m256i f32_bits8(__m256i w, int) { return w; }
// bf16: the 16 bits at `shift` (0 or 16) become the high half of an fp32, the low half zero: a
// byte shuffle per row, bytes shift/8 and shift/8 + 1 of each dword to bytes 2 and 3 (the
// shuffle's -1 writes a zero byte).
alignas(32) constexpr int8_t kBf16Shuffles[2][32] = {
    {-1, -1, 0, 1, -1, -1, 4, 5, -1, -1, 8, 9, -1, -1, 12, 13, -1, -1, 0, 1, -1, -1, 4, 5, -1, -1, 8, 9, -1, -1, 12, 13},
    {-1, -1, 2, 3, -1, -1, 6, 7, -1, -1, 10, 11, -1, -1, 14, 15, -1, -1, 2, 3, -1, -1, 6, 7, -1, -1, 10, 11, -1, -1, 14, 15}};
inline __m256i bf16_shuffle(uint32_t shift) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(kBf16Shuffles[shift / 16])); }
inline __m256i bf16_bits8(__m256i w, __m256i shuffle) { return _mm256_shuffle_epi8(w, shuffle); }
// i8: the byte at `shift`, sign-extended (then converted, for the float ops).
inline __m128i shift_count(uint32_t shift) { return _mm_cvtsi32_si128(static_cast<int>(shift)); }
inline __m256i i8_value8(__m256i w, __m128i shift) {
  return _mm256_srai_epi32(_mm256_slli_epi32(_mm256_srl_epi32(w, shift), 24), 24);
}
inline __m256i i8_float_bits8(__m256i w, __m128i shift) { return _mm256_castps_si256(_mm256_cvtepi32_ps(i8_value8(w, shift))); }
#endif

// One block, R rows of N columns at a time: the R x N partial sums are read from C, stay in host
// registers for the whole k loop and are written to D; each step reads one row of B and R
// elements of A. Every D element is still its own chain of operations in k order; the R*N chains
// are independent, so none waits on the latency of the previous step. A and B were decoded into
// arrays of their own and each row group is read before it is written, so D may alias C.
template <int N, int R, class T, class Step>
void accumulate_block(int m, int k, const T* a, const T* b, const uint16_t* rows, const uint32_t* c, uint32_t* d,
                      Step step) {
  for (int i0 = 0; i0 < m; i0 += R) {
    T part[R][N];
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < N; ++j) part[r][j] = std::bit_cast<T>(c[rows[i0 + r] + j]);
    for (int kk = 0; kk < k; ++kk) {
      const T* column = b + kk * N;
      const T* row_elements = a + kk * m + i0;
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < N; ++j) part[r][j] = step(row_elements[r], column[j], part[r][j]);
    }
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < N; ++j) d[rows[i0 + r] + j] = std::bit_cast<uint32_t>(part[r][j]);
  }
}

#if defined(__AVX2__) && defined(__FMA__)
// The same for fp32 fused multiply-adds with the host's 8-wide FMA, written out because compilers
// vectorize the generic loops above across rows (with shuffles) rather than across j.
template <int N, int R>
void fma_block_avx2(int m, int k, const float* a, const float* b, const uint16_t* rows, const uint32_t* c, uint32_t* d) {
  constexpr int V = N / 8;
  const auto row = [](const uint32_t* regs, uint16_t base, int v) { return reinterpret_cast<const __m256i*>(regs + base + 8 * v); };
  for (int i0 = 0; i0 < m; i0 += R) {
    __m256 part[R][V];
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v) part[r][v] = _mm256_castsi256_ps(_mm256_loadu_si256(row(c, rows[i0 + r], v)));
    for (int kk = 0; kk < k; ++kk) {
      __m256 column[V];
      for (int v = 0; v < V; ++v) column[v] = _mm256_loadu_ps(b + kk * N + 8 * v);
      for (int r = 0; r < R; ++r) {
        const __m256 x = _mm256_broadcast_ss(a + kk * m + i0 + r);
        for (int v = 0; v < V; ++v) part[r][v] = _mm256_fmadd_ps(x, column[v], part[r][v]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + rows[i0 + r] + 8 * v), _mm256_castps_si256(part[r][v]));
  }
}
#endif

// Every block of an op, each with the kernel for its width: n is 4, 16 or 32 and m a multiple of 4
// in every layout (consistent()). Step is the scalar operation; `fused` says it is an fp32 fma, so
// the AVX2 kernel may stand in for it.
template <bool fused, class T, class Step>
void multiply_accumulate(const MfmaOp& op, const Plan& plan, const T* a, const T* b, const uint32_t* c, uint32_t* d,
                         Step step) {
  for (int block = 0; block < op.blocks; ++block) {
    const T* block_a = a + block * op.k * op.m;
    const T* block_b = b + block * op.k * op.n;
    const uint16_t* rows = &plan.accum[static_cast<size_t>(block * op.m)];
#if defined(__AVX2__) && defined(__FMA__)
    if constexpr (fused) {
      if (op.n == 16) { fma_block_avx2<16, 4>(op.m, op.k, block_a, block_b, rows, c, d); continue; }
      if (op.n == 32) { fma_block_avx2<32, 2>(op.m, op.k, block_a, block_b, rows, c, d); continue; }
    }
#endif
    switch (op.n) {
      case 4: accumulate_block<4, 4>(op.m, op.k, block_a, block_b, rows, c, d, step); continue;
      case 16: accumulate_block<16, 4>(op.m, op.k, block_a, block_b, rows, c, d, step); continue;
      case 32: accumulate_block<32, 2>(op.m, op.k, block_a, block_b, rows, c, d, step); continue;
    }
    throw Error(std::string("MFMA ") + op.mnemonic + ": no accumulate kernel for n = " + std::to_string(op.n));
  }
}

// The float operands most recently decoded on this host thread, by operand (A, B) and by where
// they were read. A GEMM's wave feeds one A fragment to a run of MFMAs (hk_gemm: 32 in a row)
// and cycles through a few B fragments, so a decode is reused while the registers still hold
// the same bits: comparing 1 KiB of raw bits costs a fraction of decoding them again. The key
// holds the rows (the op's table plan and operand) and the target (fp8 formats differ).
struct DecodedRows {
  const uint32_t* regs = nullptr;
  const std::vector<RowSlot>* rows = nullptr;
  Arch arch{};
  std::array<uint32_t, kMaxInputDwords * kWave> raw;
  std::array<float, kMaxInputElements> values;
};
constexpr size_t kDecodedSlots = 8;  // per operand, by register index mod 8
using DecodedCache = std::array<std::array<DecodedRows, kDecodedSlots>, 2>;

// On the heap: 80 KiB is more than thread-local storage should hold (a shared library's must fit
// the loader's small static TLS surplus).
DecodedCache& decoded_cache() {
  thread_local const std::unique_ptr<DecodedCache> cache = std::make_unique<DecodedCache>();
  return *cache;
}

template <class Decode>
const float* decoded(int operand, const std::vector<RowSlot>& rows, int dwords, const uint32_t* regs, Arch arch, Decode decode) {
  DecodedRows& slot = decoded_cache()[static_cast<size_t>(operand)][(reinterpret_cast<uintptr_t>(regs) / (kWave * 4)) % kDecodedSlots];
  const size_t bytes = static_cast<size_t>(dwords) * kWave * 4;
  if (slot.regs == regs && slot.rows == &rows && slot.arch == arch && std::memcmp(slot.raw.data(), regs, bytes) == 0)
    return slot.values.data();
  slot.regs = nullptr;  // invalid until the decode below is complete
  std::memcpy(slot.raw.data(), regs, bytes);
  decode(slot.values.data());
  slot.rows = &rows;
  slot.arch = arch;
  slot.regs = regs;
  return slot.values.data();
}

// A chain of fp32 fused multiply-adds in k order from C, one rounding per product. Hardware differs
// in the last bits: MMA-Sim (arXiv:2511.10909) finds CDNA3's f16, bf16, fp8 and xf32 ops add groups
// of 4 to 16 products and C in one fused step with truncation inside; only the f32 ops are a plain
// fma chain. Modelling that is left for when bit-exactness against hardware is needed.
void execute_float(const MfmaOp& op, Arch arch, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                   uint32_t* d) {
  Plan scratch;
  const Plan& plan = plan_for(op, scratch);
  auto decode_into = [&](const std::vector<RowSlot>& rows, int size, const uint32_t* regs, MfmaInput type, float* out) {
    const int bits = element_bits(type);
#if defined(__AVX2__) && defined(__FMA__)
    if (size % 8 == 0) {
      switch (type) {
        case F32: return gather8(rows, size, regs, no_preparation, f32_bits8, out);
        case BF16: return gather8(rows, size, regs, bf16_shuffle, bf16_bits8, out);
        case I8: return gather8(rows, size, regs, shift_count, i8_float_bits8, out);
        default: break;  // the table decoders below
      }
    }
#endif
    switch (type) {
      case F32: return gather(rows, size, regs, bits, [](uint32_t x) { return std::bit_cast<float>(x); }, out);
      case BF16: return gather(rows, size, regs, bits, [](uint32_t x) { return std::bit_cast<float>(x << 16); }, out);
      case XF32: return gather(rows, size, regs, bits, decode_xf32, out);
      case I8: return gather(rows, size, regs, bits, [](uint32_t x) { return static_cast<float>(static_cast<int8_t>(x)); }, out);
      default: {
        const float* table = decode_table(type, arch).data();
        return gather(rows, size, regs, bits, [table](uint32_t x) { return table[x]; }, out);
      }
    }
  };
  // Table ops reuse a decode while the registers hold the same bits (DecodedRows); an op of the
  // caller's own has a plan of its own, whose address says nothing, so it decodes every time.
  const bool cacheable = &plan != &scratch;
  std::array<float, kMaxInputElements> a_values, b_values;
  const float* a_decoded = a_values.data();
  const float* b_decoded = b_values.data();
  if (cacheable) {
    a_decoded = decoded(0, plan.a, op.a_dwords, a, arch, [&](float* out) { decode_into(plan.a, op.m, a, op.a_type, out); });
    b_decoded = decoded(1, plan.b, op.b_dwords, b, arch, [&](float* out) { decode_into(plan.b, op.n, b, op.b_type, out); });
  } else {
    decode_into(plan.a, op.m, a, op.a_type, a_values.data());
    decode_into(plan.b, op.n, b, op.b_type, b_values.data());
  }
  multiply_accumulate<true>(op, plan, a_decoded, b_decoded, c, d,
                      [](float x, float y, float acc) { return std::fma(x, y, acc); });
}

void execute_integer(const MfmaOp& op, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d) {
  Plan scratch;
  const Plan& plan = plan_for(op, scratch);
  std::array<uint32_t, kMaxInputElements> a_values, b_values;
  const auto sign_extend = [](uint32_t code) { return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(code))); };
#if defined(__AVX2__) && defined(__FMA__)
  if (op.m % 8 == 0 && op.n % 8 == 0) {
    gather8(plan.a, op.m, a, shift_count, i8_value8, a_values.data());
    gather8(plan.b, op.n, b, shift_count, i8_value8, b_values.data());
  } else
#endif
  {
    gather(plan.a, op.m, a, element_bits(op.a_type), sign_extend, a_values.data());
    gather(plan.b, op.n, b, element_bits(op.b_type), sign_extend, b_values.data());
  }
  // Unsigned arithmetic: i32 accumulation wraps modulo 2^32 instead of being undefined.
  multiply_accumulate<false>(op, plan, a_values.data(), b_values.data(), c, d,
                      [](uint32_t x, uint32_t y, uint32_t acc) { return acc + x * y; });
}

// ---------------------------------------------------------------------------------------------
// gfx950's f8f6f4 MFMAs. Sources (collected with their quotes in docs/mfma-f8f6f4.md):
// LLVM 22's VOP3PInstructions.td and IntrinsicsAMDGPU.td (formats, register counts), AMD
// Composable Kernel's hardware-run tests test/mx_mfma_op (register maps, scale lanes), AMD's
// "Matrix Core Programming on AMD CDNA3 and CDNA4" blog (formats, scale semantics).

struct F8F6F4Format {
  const char* name;
  NarrowFloat format;
  int bits;
};
const F8F6F4Format& f8f6f4_format(uint32_t code) {
  static const F8F6F4Format formats[] = {
      {"fp8 E4M3", kE4M3Fn, 8}, {"bf8 E5M2", kE5M2, 8}, {"fp6 E2M3", kE2M3, 6}, {"bf6 E3M2", kE3M2, 6}, {"fp4 E2M1", kE2M1, 4}};
  if (code > 4) throw Error("v_mfma_*_f8f6f4: format code " + std::to_string(code) + " (cbsz/blgp) is undefined; 0-4 name fp8, bf8, fp6, bf6, fp4");
  return formats[code];
}

// Lane l holds row i = l % size of A (column j of B) and 32 elements of K, in lane group
// g = l / size. fp8/bf8 (one byte each, 8 registers) hold two runs of 16: byte e is
// k = (e / 16) * K/2 + 16 g + e % 16 (lane 0 of 16x16x128: K 0-15 and 64-79). fp6/bf6 (6 bits,
// 6 registers, elements across dword boundaries) and fp4 (4 bits, 4 registers, the low nibble
// first) hold 32 consecutive k: element e is k = 32 g + e. Element e sits at bits e * width.
int f8f6f4_k(int width, int size, int group, int e) {
  const int k_size = size == 16 ? 128 : 64;
  return width == 8 ? (e / 16) * (k_size / 2) + 16 * group + e % 16 : 32 * group + e;
}

uint32_t bits_at(const uint32_t* regs, int lane, int bit, int width) {
  const int r = bit / 32, shift = bit % 32;
  uint64_t v = regs[r * kWave + lane] >> shift;
  if (shift + width > 32) v |= uint64_t{regs[(r + 1) * kWave + lane]} << (32 - shift);
  return static_cast<uint32_t>(v & ((1u << width) - 1));
}

// The operand as a dense matrix, [outer][k]: A[i][k] or B[k][j] stored as [j][k].
std::vector<float> f8f6f4_operand(const uint32_t* regs, const F8F6F4Format& f, int size) {
  const int k_size = size == 16 ? 128 : 64;
  std::vector<float> values(static_cast<size_t>(size * k_size));
  for (int lane = 0; lane < kWave; ++lane)
    for (int e = 0; e < 32; ++e)
      values[static_cast<size_t>((lane % size) * k_size + f8f6f4_k(f.bits, size, lane / size, e))] =
          decode_narrow(f.format, bits_at(regs, lane, e * f.bits, f.bits));
  return values;
}

}  // namespace

int f8f6f4_element_bits(uint32_t format) { return f8f6f4_format(format).bits; }

void execute_mfma_f8f6f4(int size, uint32_t format_a, uint32_t format_b, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                         uint32_t* d, const uint8_t* scale_a, const uint8_t* scale_b) {
  if (size != 16 && size != 32) throw Error("execute_mfma_f8f6f4: the shapes are 16x16x128 and 32x32x64, not " + std::to_string(size));
  const int k_size = size == 16 ? 128 : 64;
  const std::vector<float> av = f8f6f4_operand(a, f8f6f4_format(format_a), size), bv = f8f6f4_operand(b, f8f6f4_format(format_b), size);
  const MfmaOp shape{"v_mfma_f8f6f4", size, size, k_size, 1, FP8, FP8, 8, 8, size * size / kWave, false, 0};
  // The scale of K block kb for row i (column j) is lane i + size * kb's E8M0 byte: 2^(E - 127),
  // 0xFF (NaN in OCP's E8M0) taken as NaN.
  const auto scale = [&](const uint8_t* scales, int outer, int block) {
    if (!scales) return 0;
    const uint8_t e = scales[outer + size * block];
    return e == 0xFF ? INT32_MIN : static_cast<int>(e) - 127;
  };
  std::vector<uint32_t> out(static_cast<size_t>(shape.cd_dwords) * kWave);
  for (int i = 0; i < size; ++i)
    for (int j = 0; j < size; ++j) {
      const int at = accum_index(shape, 0, i, j);
      float acc = std::bit_cast<float>(c[at]);
      for (int block = 0; block < k_size / 32; ++block) {
        float partial = 0.0f;
        for (int k = 32 * block; k < 32 * block + 32; ++k)
          partial = std::fma(av[static_cast<size_t>(i * k_size + k)], bv[static_cast<size_t>(j * k_size + k)], partial);
        const int sa = scale(scale_a, i, block), sb = scale(scale_b, j, block);
        if (sa == INT32_MIN || sb == INT32_MIN) partial = std::numeric_limits<float>::quiet_NaN();
        else if (sa + sb != 0) partial = static_cast<float>(std::ldexp(static_cast<double>(partial), sa + sb));  // one rounding
        acc += partial;
      }
      out[static_cast<size_t>(at)] = std::bit_cast<uint32_t>(acc);
    }
  std::memcpy(d, out.data(), out.size() * sizeof(uint32_t));  // d may alias c
}

std::span<const MfmaOp> mfma_ops(Arch arch) {
  if (arch == Arch::Gfx942) return kGfx942Ops;
  return kGfx950Ops;
}

const MfmaOp* find_mfma(std::string_view mnemonic, Arch arch) {
  const std::span<const MfmaOp> ops = mfma_ops(arch);
  const auto it = std::ranges::find_if(ops, [mnemonic](const MfmaOp& op) { return op.mnemonic == mnemonic; });
  return it == ops.end() ? nullptr : &*it;
}

// gfx950's f8f6f4 MFMAs: LLVM 22's scheduling model gives 16x16x128 4 passes and 32x32x64 8 for
// every format, which is the rate of AMD's MI355X peak for fp6 and fp4 (10 PFLOPS dense, 256
// CUs at 2.4 GHz: 4096 flops per SIMD per cycle); its fp8 peak is half that (5 PFLOPS), so an op
// with an fp8 or bf8 operand takes twice the passes.
namespace {
int f8f6f4_passes(int size, uint32_t format_a, uint32_t format_b) {
  const int base = size == 16 ? 4 : 8;
  return format_a <= 1 || format_b <= 1 ? 2 * base : base;
}
}  // namespace

int mfma_passes(const Inst& inst, Arch arch) {
  if (!inst.info || inst.family != Family::VOP3P) return 0;
  const std::string_view m = inst.info->mnemonic;
  if (m.ends_with("_f8f6f4") && (m.starts_with("v_mfma_f32_") || m.starts_with("v_mfma_scale_f32_")))  // scaled or not: the same passes
    return f8f6f4_passes(m.find("_16x16x128_") != std::string_view::npos ? 16 : 32, fields::mai_cbsz(inst), fields::mai_blgp(inst));
  const MfmaOp* op = find_mfma(m, arch);
  return op ? op->passes : 0;
}

void execute_mfma(const MfmaOp& op, Arch arch, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d) {
  if (!consistent(op))
    throw Error(std::string("execute_mfma: ") + op.mnemonic + " is not an MFMA shape this emulator knows");
  if (op.integer_accum)
    execute_integer(op, a, b, c, d);
  else
    execute_float(op, arch, a, b, c, d);
}

}  // namespace weft::emu
