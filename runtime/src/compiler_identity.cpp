#include "weft/runtime/compiler_identity.h"

#include "weft/dsl/error.h"
#include "weft/dsl/print.h"
#include "weft/lowering/pipeline.h"
#include "weft/runtime/nvrtc.h"
#include "weft/version.h"
#ifdef WEFT_HAVE_LLVM
#include "weft/lowering/amdgpu_codegen.h"
#endif

namespace weft::rt {

std::string CompilerIdentity::text() const {
  std::string names;
  for (const std::string& p : passes) names += (names.empty() ? "" : " ") + p;
  return "weft: " + weft_version + "\nbuild: " + build_id + "\npasses: " + names + "\nbackend: " + backend + "\noptions: " + options +
         "\n";
}

CompilerIdentity compiler_identity(std::string_view target) {
  CompilerIdentity id;
  id.weft_version = WEFT_VERSION;
  id.build_id = build_id();
  for (const lower::Pass& p : lower::passes()) id.passes.push_back(p.name);
  id.passes.push_back("linearize");
  if (target.starts_with("sm_")) {
    id.backend = nvrtc_available() ? nvrtc_version() : "NVRTC not found";
    for (const std::string& o : nvrtc_options(std::string(target))) id.options += (id.options.empty() ? "" : " ") + o;
    return id;
  }
#ifdef WEFT_HAVE_LLVM
  id.backend = amdgpu::llvm_version();
  id.options = amdgpu::compile_options();
  return id;
#else
  throw Error("target " + std::string(target) +
              ": this build of weft has no AMDGPU code generator (configure with WEFT_LLVM=ON and LLVM 22)");
#endif
}

std::string kernel_cache_key(const UOp& kernel, const CompilerIdentity& compiler) {
  return "weft-kernel-v2\n" + compiler.text() + "graph hash: " + std::to_string(kernel.hash()) + "\n" + graph_string(kernel);
}

}  // namespace weft::rt
