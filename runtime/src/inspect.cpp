#include "weft/runtime/inspect.h"

#include <sstream>

#include "weft/dsl/error.h"
#include "weft/dsl/print.h"
#include "weft/emulator/listing.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/pipeline.h"
#ifdef WEFT_HAVE_LLVM
#include "weft/lowering/amdgpu_codegen.h"
#endif

namespace weft::rt {

const std::string& KernelStages::after(std::string_view pass) const {
  if (pass == "linearize") return program;
  for (const auto& [name, text] : passes)
    if (name == pass) return text;
  lower::check_pass_name(pass);  // throws, listing the passes
  throw Error("kernel " + kernel + ": no IR was kept after pass '" + std::string(pass) + "'");
}

std::string disassemble(const std::vector<uint8_t>& code_object) {
  std::ostringstream out;
  emu::write_listing(emu::CodeObject::load(code_object), out);
  return out.str();
}

KernelStages inspect(const UOp& authored, std::string_view target, InspectDepth depth) {
  KernelStages s;
  s.target = std::string(target);
  const UOp kernel = lower::canonical_allocations(authored);
  s.built = graph_string(kernel);
  lower::LowerOptions options;
  options.wave_size = target.starts_with("sm_") ? 32 : 64;  // as CompiledKernel::compile lowers for the device
  options.after_pass = [&](std::string_view pass, const UOp& graph) { s.passes.emplace_back(std::string(pass), graph_string(graph)); };
  const lower::LoweredKernel lowered = lower::lower(kernel, options);
  s.kernel = lowered.name;
  s.program = lower::program_string(lowered);
  if (depth == InspectDepth::Lowering) return s;
  if (target.starts_with("sm_")) {
    s.cuda_source = cuda::render_cuda(lowered, cuda::sm_number(target));
    return s;
  }
#ifdef WEFT_HAVE_LLVM
  s.code_object = amdgpu::compile_kernel(lowered, target, &s.llvm_ir, &s.llvm_ir_optimized).code_object;
  s.assembly = disassemble(s.code_object);
  return s;
#else
  throw Error("inspect " + s.kernel + " for " + s.target +
              ": this build of weft has no AMDGPU code generator (configure with WEFT_LLVM=ON and LLVM 22)");
#endif
}

}  // namespace weft::rt
