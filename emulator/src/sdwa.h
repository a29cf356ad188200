// SDWA (sub-dword addressing) for VOP1, VOP2 and VOPC: sources are a byte, word or dword of a
// register (zero- or sign-extended), the result lands in a byte, word or dword of the
// destination, the rest padded, sign-extended or preserved. The operation itself runs through
// its ordinary handler on scratch registers: SDWA selects operands around it.
#pragma once

#include "wave.h"

namespace weft::emu {

// Scratch VGPR rows past the 512 architectural ones: the selected sources and the result (two
// rows: v_cvt_pk_f32_fp8/bf8 write a register pair).
constexpr uint32_t kSdwaSource0 = 512, kSdwaSource1 = 513, kSdwaResult = 514;
constexpr uint32_t kVgprRows = 516;

// Points the step's operands at the scratch rows, takes SDWA's modifiers, and wraps its
// handler (kept in step.inner).
void prepare_sdwa(Step& step);
// The same for DPP (dpp.cpp): src0 from the lanes the DPP control names.
void prepare_dpp(Step& step);

}  // namespace weft::emu
