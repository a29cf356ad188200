// What a compiled kernel depends on besides the kernel: the compiler. The compile cache's key
// holds all of it, so that a code object made by another weft, another pass list, another LLVM
// or NVRTC, or other options is never loaded in place of what this build would make.
//
//   weft_version  WEFT_VERSION (project(VERSION) in CMakeLists.txt)
//   build_id      a SHA-256 over the contents of every source that decides what code weft emits:
//                 dsl/ and lowering/ (passes, renderers, the AMDGPU code generator) and the
//                 runtime's compile path; the build recomputes it whenever one of them changes
//                 (cmake/compiler_sources_hash.cmake), so an edited pass is a new identity even
//                 in an uncommitted tree
//   passes        the names of lower::passes(), in order, then linearize
//   backend       "LLVM <LLVM_VERSION_STRING>" for AMD targets, "NVRTC <major>.<minor>" for
//                 NVIDIA ones (from nvrtcVersion; "NVRTC not found" where it is absent)
//   options       the options the backend compiles with (O level, code generator level,
//                 relocation model and linker flags; NVRTC's command-line options)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft::rt {

struct CompilerIdentity {
  std::string weft_version;
  std::string build_id;
  std::vector<std::string> passes;
  std::string backend;
  std::string options;
  // One "field: value" line each.
  std::string text() const;
};

// This build's identity for `target` ("gfx950", "gfx942", "sm_90", ...). Throws weft::Error
// for an AMD target in a build without the AMDGPU code generator.
CompilerIdentity compiler_identity(std::string_view target);

// The compile cache's key for `kernel` (as compile() caches it: after canonical_allocations)
// compiled by `compiler`: the identity and the kernel's full text and content hash.
std::string kernel_cache_key(const UOp& kernel, const CompilerIdentity& compiler);

// The build identity (see above): 64 hex digits, generated at build time.
const char* build_id();

}  // namespace weft::rt
