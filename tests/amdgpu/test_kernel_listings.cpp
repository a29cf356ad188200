// The DSL kernels as LLVM compiles them (SDWA and DPP forms included: f16 conversions come out
// as SDWA) disassemble exactly as llvm-objdump prints them, instruction by instruction.
#include <doctest/doctest.h>

#include "emulator/listing_check.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mfma_tile.h"
#include "weft/lowering/amdgpu_codegen.h"

using namespace weft;

TEST_CASE("matmul_relu (f16, f32) and mfma_gemm print as llvm-objdump prints them, on both targets") {
  for (emu::Arch arch : {emu::Arch::Gfx942, emu::Arch::Gfx950}) {
    const std::string target = emu::arch_name(arch);
    CAPTURE(target);
    for (const UOp& k : {gemm::matmul_relu(256, 256, 256, dtypes::float16), gemm::matmul_relu(128, 128, 128, dtypes::float32),
                         gemm::mfma_gemm(target, 64, 64, 64, dtypes::bfloat16)}) {
      const auto code = amdgpu::compile_kernel(lower::lower(k), target);
      weft::testing::check_listing_matches_objdump(code.code_object, arch);
    }
  }
}
