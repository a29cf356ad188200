// LLVM IR to an HSA code object for gfx942 / gfx950, in this process: LLVM 22's AMDGPU
// TargetMachine emits the object and lld links it into a shared code object, in memory, with no
// temporary files and no subprocesses. Built when WEFT_LLVM is on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft::amdgpu {

struct CompileTimes {
  double parse_seconds = 0;  // IR text to an LLVM module
  double llvm_seconds = 0;   // the code generator: module to ELF object
  double link_seconds = 0;   // lld: object to code object
};

// Throws weft::Error with LLVM's diagnostics (line and column for IR that does not parse, the
// linker's messages) or naming an unknown target.
std::vector<uint8_t> compile_ir(std::string_view ir, std::string_view mcpu, CompileTimes* times = nullptr);

}  // namespace weft::amdgpu
