// MFMA (matrix fused multiply-add) semantics of gfx942 (CDNA3) and gfx950 (CDNA4), as a pure
// function on register files: which ops each target has, their shapes and register counts, and
// what one wave64 instruction computes. Decoding the instruction and reading the register file
// are the caller's; this is only the arithmetic and the fragment layouts.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "weft/emulator/code_object.h"
#include "weft/emulator/isa.h"

namespace weft::emu {

// Element type of the A or B operand.
//   F32   IEEE binary32.
//   XF32  binary32 registers whose mantissa the op truncates to 10 bits (tf32) before multiplying.
//   F16   IEEE binary16;  BF16 the top half of a binary32.
//   FP8   E4M3: FNUZ (bias 8, 0x80 = NaN, no inf, no -0) on gfx942; OCP E4M3FN (bias 7,
//         S.1111.111 = NaN, no inf) on gfx950.
//   BF8   E5M2: FNUZ (bias 16, 0x80 = NaN, no inf, no -0) on gfx942; OCP E5M2 (bias 15,
//         IEEE-like inf and NaN) on gfx950.
//   I8    two's-complement int8.
enum class MfmaInput { F32, XF32, F16, BF16, FP8, BF8, I8 };

// One MFMA op: D = A x B + C per block, for `blocks` independent m x n x k products.
struct MfmaOp {
  const char* mnemonic;  // exactly LLVM's, e.g. "v_mfma_f32_16x16x16_bf16"
  int m, n, k, blocks;
  MfmaInput a_type, b_type;
  int a_dwords, b_dwords, cd_dwords;  // registers per lane
  bool integer_accum;                 // i32 accumulators (i8 ops); false = f32
  // Passes through the matrix core (4 cycles each): LLVM 22's scheduling model (the HWXDL
  // resource cycles llvm-mca-22 reports; tests/emulator/test_mfma.cpp holds the two together).
  // For the timeline model (timeline.h).
  int passes;
};

// The matrix-core passes of the MFMA `inst` (any v_mfma_* of the target, the f8f6f4 ones by
// their operand formats), or 0 for an instruction that is not an MFMA the emulator knows.
int mfma_passes(const Inst& inst, Arch arch);

// The MFMA ops of a target, looked up by LLVM mnemonic; nullptr if the target has no such op.
const MfmaOp* find_mfma(std::string_view mnemonic, Arch arch);
std::span<const MfmaOp> mfma_ops(Arch arch);

// Executes one wave64 MFMA with no modifiers (cbsz = abid = blgp = 0), `op` being one of
// mfma_ops(arch). Register files are register-major: a[r*64 + lane] is dword r of `lane`
// (r < op.a_dwords); likewise b, c and d (r < op.cd_dwords). d may alias c exactly. Throws
// weft::Error for an op whose shape and register counts do not fit together.
//
// Numerics: every product is exact and is accumulated into fp32 by a chain of fused multiply-adds
// in k order, starting from C (one rounding per step). i8 ops accumulate in i32, wrapping on
// overflow. The ISA does not pin the rounding of MFMA down bit for bit; this is the closest
// simple model (real CDNA3 hardware adds groups of products at once, see mfma.cpp).
void execute_mfma(const MfmaOp& op, Arch arch, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d);

// gfx950's v_mfma_f32_16x16x128_f8f6f4 and v_mfma_f32_32x32x64_f8f6f4 (`size` 16 or 32): A and B
// in the formats their cbsz and blgp fields name (0 fp8 E4M3 and 1 bf8 E5M2, OCP, in 8 registers;
// 2 fp6 E2M3 and 3 bf6 E3M2 in 6; 4 fp4 E2M1 in 4), register-major as for execute_mfma; C and D in
// the shape's f32 accumulator layout (4 or 16 registers; d may alias c). `scale_a` and `scale_b`
// are the scaled form's E8M0 scale bytes per lane (nullptr: the unscaled instruction, scale 1).
// Throws weft::Error for a format code above 4.
//
// Numerics (the hardware's order is not documented; this is the model): the products of each
// 32-wide K block, all exact in fp32, are summed in k order by fp32 fused multiply-adds from 0;
// the block's sum times its two scales (rounded once) is added to the fp32 accumulator, which
// starts at C, block by block.
void execute_mfma_f8f6f4(int size, uint32_t format_a, uint32_t format_b, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                         uint32_t* d, const uint8_t* scale_a = nullptr, const uint8_t* scale_b = nullptr);
// The bits of one element of an f8f6f4 format code: 8, 6 or 4, which is also the number of
// registers an operand of that format takes. Throws weft::Error for a code above 4.
int f8f6f4_element_bits(uint32_t format);

}  // namespace weft::emu
