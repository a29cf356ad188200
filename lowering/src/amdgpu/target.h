// The AMDGPU back end's stages, shared by compile_ir (LLVM IR text) and compile_kernel (a
// rendered kernel): target machine, optimization, object emission, linking.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace weft::amdgpu {

// Throws weft::Error for a target other than an AMDGPU processor LLVM knows.
std::unique_ptr<llvm::TargetMachine> make_target_machine(std::string_view mcpu);
// LLVM's O3 module pipeline for the target (SROA, unrolling, LICM, vectorizers).
void optimize(llvm::Module& module, llvm::TargetMachine& machine);
std::vector<char> emit_object(llvm::Module& module, llvm::TargetMachine& machine);
std::vector<uint8_t> link_shared(const std::vector<char>& object);
// Throws weft::Error with the verifier's messages.
void verify_module(const llvm::Module& module, std::string_view what);

}  // namespace weft::amdgpu
