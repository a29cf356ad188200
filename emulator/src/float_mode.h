// Executing MODE's float fields: rounding and denormal modes per precision (semantics_mode.cpp
// reads and writes the register; this file makes the VALU honour it).
//
// The emulator's float arithmetic is the host's, so a mode is executed by putting the host in the
// same mode around the instruction: x86's MXCSR has a rounding control (RC), flush-to-zero for
// results (FTZ) and denormals-are-zero for inputs (DAZ), which the SSE/AVX arithmetic, the
// conversions between f32, f64 and f16 (F16C) and integer-to-float conversions all honour. Which
// of MODE's two fields applies is the instruction's: the f32 field for f32 work, the f16/f64
// field for f64 work; a conversion takes its input flush from its source type and its rounding
// and output flush from its destination type. Where the emulator reads or computes the bits
// itself (frexp, ldexp, v_cmp_class, div_scale's checks, a max returning its operand), the
// sources' denormals are flushed in their registers for the instruction (and put back) and the
// results flushed in the destination's active lanes after it.
//
// Only programs that can run in another mode pay for this (a kernel descriptor that starts in
// one, or an s_setreg in the code): their float steps are wrapped once when the program is built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "wave.h"

namespace weft::emu {

// MODE[7:0] of round-to-nearest-even with denormals kept for every precision: what the host's
// arithmetic does unaided, and what weft's kernels and LLVM's defaults use.
inline constexpr uint32_t kDefaultFloatMode = 0xF0;

// What an instruction depends on in MODE (wave.h's FloatModeUse), from its mnemonic.
FloatModeUse float_mode_use(std::string_view mnemonic);

// Wraps the float steps of a program that may leave the default mode: each one's handler becomes
// the wrapper, its own handler goes to prog.float_steps.
void prepare_float_modes(Program& prog);

// Why a MODE value cannot be executed for this use ("" when it can).
std::string float_mode_refusal(uint32_t mode, const FloatModeUse& use);

// MODE's float fields in words ("f32 rounding toward zero, f32 denormals flushed on output, ...").
std::string describe_float_mode(uint32_t mode);

}  // namespace weft::emu
