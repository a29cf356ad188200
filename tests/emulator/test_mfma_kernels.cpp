// MFMA through real kernels: llc-22 compiles an llvm.amdgcn.mfma.* call per op and target; the
// emulator runs it (decoding, VGPR/AGPR routing, acc bits, the op itself) and the result must be
// bit-identical to execute_mfma on the same register images. The layouts themselves are tested
// against AMD's matrix calculator in test_mfma.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "kernel_io.h"
#include "listing_check.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/mfma.h"

using namespace weft::emu;

namespace {

struct Intrinsic {
  const char* mnemonic;
  const char* name;         // without the llvm.amdgcn.mfma. prefix
  const char *a, *b, *cd;   // LLVM IR types of A, B and C/D
};

// The intrinsic behind each mnemonic (llvm/include/llvm/IR/IntrinsicsAMDGPU.td).
const Intrinsic kIntrinsics[] = {
    {"v_mfma_f32_32x32x1_2b_f32", "f32.32x32x1f32", "float", "float", "<32 x float>"},
    {"v_mfma_f32_16x16x1_4b_f32", "f32.16x16x1f32", "float", "float", "<16 x float>"},
    {"v_mfma_f32_4x4x1_16b_f32", "f32.4x4x1f32", "float", "float", "<4 x float>"},
    {"v_mfma_f32_32x32x2_f32", "f32.32x32x2f32", "float", "float", "<16 x float>"},
    {"v_mfma_f32_16x16x4_f32", "f32.16x16x4f32", "float", "float", "<4 x float>"},
    {"v_mfma_f32_32x32x4_2b_f16", "f32.32x32x4f16", "<4 x half>", "<4 x half>", "<32 x float>"},
    {"v_mfma_f32_16x16x4_4b_f16", "f32.16x16x4f16", "<4 x half>", "<4 x half>", "<16 x float>"},
    {"v_mfma_f32_4x4x4_16b_f16", "f32.4x4x4f16", "<4 x half>", "<4 x half>", "<4 x float>"},
    {"v_mfma_f32_32x32x8_f16", "f32.32x32x8f16", "<4 x half>", "<4 x half>", "<16 x float>"},
    {"v_mfma_f32_16x16x16_f16", "f32.16x16x16f16", "<4 x half>", "<4 x half>", "<4 x float>"},
    {"v_mfma_f32_32x32x4_2b_bf16", "f32.32x32x4bf16.1k", "<4 x i16>", "<4 x i16>", "<32 x float>"},
    {"v_mfma_f32_16x16x4_4b_bf16", "f32.16x16x4bf16.1k", "<4 x i16>", "<4 x i16>", "<16 x float>"},
    {"v_mfma_f32_4x4x4_16b_bf16", "f32.4x4x4bf16.1k", "<4 x i16>", "<4 x i16>", "<4 x float>"},
    {"v_mfma_f32_32x32x8_bf16", "f32.32x32x8bf16.1k", "<4 x i16>", "<4 x i16>", "<16 x float>"},
    {"v_mfma_f32_16x16x16_bf16", "f32.16x16x16bf16.1k", "<4 x i16>", "<4 x i16>", "<4 x float>"},
    {"v_mfma_i32_32x32x4_2b_i8", "i32.32x32x4i8", "i32", "i32", "<32 x i32>"},
    {"v_mfma_i32_16x16x4_4b_i8", "i32.16x16x4i8", "i32", "i32", "<16 x i32>"},
    {"v_mfma_i32_4x4x4_16b_i8", "i32.4x4x4i8", "i32", "i32", "<4 x i32>"},
    {"v_mfma_i32_32x32x16_i8", "i32.32x32x16.i8", "i64", "i64", "<16 x i32>"},
    {"v_mfma_i32_16x16x32_i8", "i32.16x16x32.i8", "i64", "i64", "<4 x i32>"},
    {"v_mfma_f32_16x16x32_fp8_fp8", "f32.16x16x32.fp8.fp8", "i64", "i64", "<4 x float>"},
    {"v_mfma_f32_16x16x32_fp8_bf8", "f32.16x16x32.fp8.bf8", "i64", "i64", "<4 x float>"},
    {"v_mfma_f32_16x16x32_bf8_fp8", "f32.16x16x32.bf8.fp8", "i64", "i64", "<4 x float>"},
    {"v_mfma_f32_16x16x32_bf8_bf8", "f32.16x16x32.bf8.bf8", "i64", "i64", "<4 x float>"},
    {"v_mfma_f32_32x32x16_fp8_fp8", "f32.32x32x16.fp8.fp8", "i64", "i64", "<16 x float>"},
    {"v_mfma_f32_32x32x16_bf8_bf8", "f32.32x32x16.bf8.bf8", "i64", "i64", "<16 x float>"},
    {"v_mfma_f32_16x16x8_xf32", "f32.16x16x8.xf32", "<2 x float>", "<2 x float>", "<4 x float>"},
    {"v_mfma_f32_32x32x4_xf32", "f32.32x32x4.xf32", "<2 x float>", "<2 x float>", "<16 x float>"},
    {"v_mfma_f32_16x16x32_f16", "f32.16x16x32.f16", "<8 x half>", "<8 x half>", "<4 x float>"},
    {"v_mfma_f32_32x32x16_f16", "f32.32x32x16.f16", "<8 x half>", "<8 x half>", "<16 x float>"},
    {"v_mfma_f32_16x16x32_bf16", "f32.16x16x32.bf16", "<8 x bfloat>", "<8 x bfloat>", "<4 x float>"},
    {"v_mfma_f32_32x32x16_bf16", "f32.32x32x16.bf16", "<8 x bfloat>", "<8 x bfloat>", "<16 x float>"},
    {"v_mfma_i32_16x16x64_i8", "i32.16x16x64.i8", "<4 x i32>", "<4 x i32>", "<4 x i32>"},
    {"v_mfma_i32_32x32x32_i8", "i32.32x32x32.i8", "<4 x i32>", "<4 x i32>", "<16 x i32>"},
};

std::string dwords_type(int n) { return n == 1 ? "i32" : "<" + std::to_string(n) + " x i32>"; }

// One kernel: each lane loads its A, B and C dwords (lane-major), runs the MFMA, stores D.
std::string kernel_ir(const Intrinsic& in, const MfmaOp& op) {
  const std::string ta = dwords_type(op.a_dwords), tb = dwords_type(op.b_dwords), tc = dwords_type(op.cd_dwords);
  const std::string call = "llvm.amdgcn.mfma." + std::string(in.name);
  std::string ir = "target triple = \"amdgcn-amd-amdhsa\"\n"
                   "declare i32 @llvm.amdgcn.workitem.id.x()\n"
                   "declare " + std::string(in.cd) + " @" + call + "(" + in.a + ", " + in.b + ", " + in.cd + ", i32, i32, i32)\n"
                   "define amdgpu_kernel void @mfma(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %d) {\n"
                   "  %l = call i32 @llvm.amdgcn.workitem.id.x()\n"
                   "  %pa = getelementptr " + ta + ", ptr addrspace(1) %a, i32 %l\n"
                   "  %pb = getelementptr " + tb + ", ptr addrspace(1) %b, i32 %l\n"
                   "  %pc = getelementptr " + tc + ", ptr addrspace(1) %c, i32 %l\n"
                   "  %pd = getelementptr " + tc + ", ptr addrspace(1) %d, i32 %l\n"
                   "  %ra = load " + ta + ", ptr addrspace(1) %pa\n"
                   "  %rb = load " + tb + ", ptr addrspace(1) %pb\n"
                   "  %rc = load " + tc + ", ptr addrspace(1) %pc\n"
                   "  %va = bitcast " + ta + " %ra to " + in.a + "\n"
                   "  %vb = bitcast " + tb + " %rb to " + in.b + "\n"
                   "  %vc = bitcast " + tc + " %rc to " + in.cd + "\n"
                   "  %vd = call " + in.cd + " @" + call + "(" + in.a + " %va, " + in.b + " %vb, " + in.cd + " %vc, i32 0, i32 0, i32 0)\n"
                   "  %rd = bitcast " + in.cd + " %vd to " + tc + "\n"
                   "  store " + tc + " %rd, ptr addrspace(1) %pd\n"
                   "  ret void\n}\n";
  return ir;
}

// Lane-major buffer (lane * n + r) <-> register-major file (r * 64 + lane).
std::vector<uint32_t> to_registers(const std::vector<uint32_t>& lane_major, int n) {
  std::vector<uint32_t> out(lane_major.size());
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < n; ++r) out[static_cast<size_t>(r * 64 + l)] = lane_major[static_cast<size_t>(l * n + r)];
  return out;
}

// Random dwords that decode to finite values of every input type (no NaN/inf patterns).
std::vector<uint32_t> random_operand(std::mt19937& rng, int dwords, MfmaInput t) {
  std::vector<uint32_t> v(static_cast<size_t>(64 * dwords));
  std::uniform_real_distribution<float> f(-2.0f, 2.0f);
  for (uint32_t& x : v) {
    switch (t) {
      case MfmaInput::F32: case MfmaInput::XF32: x = std::bit_cast<uint32_t>(f(rng)); break;
      case MfmaInput::F16: {
        const uint16_t lo = std::bit_cast<uint16_t>(static_cast<_Float16>(f(rng)));
        const uint16_t hi = std::bit_cast<uint16_t>(static_cast<_Float16>(f(rng)));
        x = lo | (uint32_t{hi} << 16);
        break;
      }
      case MfmaInput::BF16: x = (std::bit_cast<uint32_t>(f(rng)) >> 16) | (std::bit_cast<uint32_t>(f(rng)) & 0xffff0000u); break;
      default: x = static_cast<uint32_t>(rng()) & 0x3f3f3f3fu; break;  // small fp8/bf8/i8 codes, all finite
    }
  }
  return v;
}

}  // namespace

TEST_CASE("every MFMA op of both targets runs in a compiled kernel as execute_mfma computes it") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  int covered = 0;
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    std::string module;
    for (const Intrinsic& in : kIntrinsics) {
      const MfmaOp* op = find_mfma(in.mnemonic, arch);
      if (!op) continue;
      INFO(std::string(arch_name(arch)) << " " << in.mnemonic);
      const std::vector<uint8_t> bytes = weft::testing::compile_ll(kernel_ir(in, *op), arch_name(arch));
      weft::testing::check_listing_matches_objdump(bytes, arch);
      const CodeObject code = CodeObject::load(bytes);
      const auto a = random_operand(rng, op->a_dwords, op->a_type), b = random_operand(rng, op->b_dwords, op->b_type);
      const auto c = random_operand(rng, op->cd_dwords, op->integer_accum ? MfmaInput::I8 : MfmaInput::F32);
      GlobalMemory mem;
      using weft::testing::upload;
      const uint64_t pa = upload(mem, a, "A"), pb = upload(mem, b, "B"), pc = upload(mem, c, "C");
      const uint64_t pd = upload(mem, std::vector<uint32_t>(c.size(), 0xCDCDCDCDu), "D");  // poisoned
      LaunchOptions o;
      o.grid = {1, 1, 1};
      o.block = {64, 1, 1};
      o.kernarg.resize(32);
      const uint64_t ptrs[4] = {pa, pb, pc, pd};
      std::memcpy(o.kernarg.data(), ptrs, 32);
      run_kernel(code, "mfma", mem, o);
      std::vector<uint32_t> want(c.size());
      const auto ra = to_registers(a, op->a_dwords), rb = to_registers(b, op->b_dwords), rc = to_registers(c, op->cd_dwords);
      execute_mfma(*op, arch, ra.data(), rb.data(), rc.data(), want.data());
      const std::vector<uint32_t> got = weft::testing::download<uint32_t>(mem, pd, c.size());
      REQUIRE(to_registers(got, op->cd_dwords) == want);
      ++covered;
    }
  }
  MESSAGE(covered << " op/target pairs run through compiled kernels");
  CHECK(covered >= 50);
}
