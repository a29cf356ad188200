// LLVM IR to an HSA code object for gfx942 / gfx950, in this process: LLVM 22's AMDGPU
// TargetMachine emits the object and lld (as a library, no subprocess) links it into a shared
// code object, through files in a private temporary directory (never the process's stdout).
// Built when WEFT_LLVM is on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weft/lowering/pipeline.h"

namespace weft::amdgpu {

struct CompileTimes {
  double parse_seconds = 0;  // IR text to an LLVM module (compile_ir), or rendering (compile_kernel)
  double optimize_seconds = 0;  // LLVM's O3 pipeline (compile_kernel only)
  double llvm_seconds = 0;   // the code generator: module to ELF object
  double link_seconds = 0;   // lld: object to code object
};

// "LLVM 22.1.2": the LLVM this build links (LLVM_VERSION_STRING).
std::string llvm_version();
// The options every compile uses (LLVM's module pipeline, the code generator's level, the
// relocation model, lld's flags), spelled out: part of the compile cache's key.
std::string compile_options();

// Throws weft::Error with LLVM's diagnostics (line and column for IR that does not parse, the
// linker's messages) or naming an unknown target.
std::vector<uint8_t> compile_ir(std::string_view ir, std::string_view mcpu, CompileTimes* times = nullptr);

// A lowered kernel rendered as an LLVM module through LLVM's C++ API, optimized (O3) and
// compiled. `ir_before` / `ir_after`, when given, receive the module's text before and after
// optimization. Throws weft::Error naming the node LLVM cannot be given (an op or dtype the
// renderer has no lowering for) or the target.
struct KernelCode {
  std::vector<uint8_t> code_object;
  CompileTimes times;
};
KernelCode compile_kernel(const lower::LoweredKernel& kernel, std::string_view mcpu, std::string* ir_before = nullptr,
                          std::string* ir_after = nullptr);

}  // namespace weft::amdgpu
