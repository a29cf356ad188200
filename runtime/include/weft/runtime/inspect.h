// Every stage of a kernel on its way to a target, for reading: the IR after each pass, the
// linear program, the LLVM IR before and after optimization and the disassembly (AMD targets),
// the CUDA C++ NVRTC compiles (NVIDIA targets). The same path as CompiledKernel::compile, so
// what you read is what runs.
//
//   auto stages = weft::rt::inspect(my_kernel, "gfx950");
//   std::cout << stages.after("insert_barriers") << stages.program << stages.assembly;
//
// `weft dump` prints these for the built-in examples; WEFT_DUMP=PASS|all|llvm|asm|cuda prints
// them to stderr for every kernel CompiledKernel::compile compiles.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft::rt {

struct KernelStages {
  std::string kernel;  // the kernel's name
  std::string target;  // "gfx950", "gfx942", "sm_90", ...
  // The graph as built (after canonical_allocations, as compile() sees it), then the IR after
  // each pass of lower::passes(), in order: (pass name, graph text).
  std::string built;
  std::vector<std::pair<std::string, std::string>> passes;
  std::string program;  // the linear program (lower::program_string)
  // AMD targets: the LLVM module as rendered and after LLVM's O3 pipeline, the linked code
  // object and its disassembly (as llvm-objdump prints it). Empty for NVIDIA targets.
  std::string llvm_ir, llvm_ir_optimized, assembly;
  std::vector<uint8_t> code_object;
  // NVIDIA targets: the CUDA C++ translation unit NVRTC compiles. Empty for AMD targets.
  std::string cuda_source;

  // The IR after `pass`. Throws weft::Error listing the passes for a name that is none of them.
  const std::string& after(std::string_view pass) const;
};

// How far inspect() goes: through the target's back end, or only to the linear program (which
// needs no LLVM and no NVRTC).
enum class InspectDepth { Backend, Lowering };

// Lowers `kernel` and takes it through the target's back end. Throws weft::Error naming the pass
// or node that fails, or saying that this build has no AMDGPU code generator (WEFT_LLVM=OFF)
// for an AMD target.
KernelStages inspect(const UOp& kernel, std::string_view target, InspectDepth depth = InspectDepth::Backend);

// A code object's kernels as text, one instruction a line (emu::write_listing).
std::string disassemble(const std::vector<uint8_t>& code_object);

}  // namespace weft::rt
