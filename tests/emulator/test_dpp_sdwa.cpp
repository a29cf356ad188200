// DPP and SDWA forms, as llc emits them (llvm.amdgcn.update.dpp, and the SDWA peephole on
// 16-bit and byte extracts), run on the emulator against host references of the lane movements
// and sub-dword selects. Both targets; every word must also print as llvm-objdump prints it.
#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <random>
#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "test_seed.h"
#include "toolchain.h"
#include "weft/dsl/float_formats.h"
#include "weft/emulator/code_object.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;

namespace {

// One kernel per DPP control: out[k*64 + l] = update.dpp(old = -1, in[l], ctrl, row_mask,
// bank_mask, bound_ctrl), and out[(K+k)*64 + l] = in[l] + that (a VOP2 DPP after LLVM's DPP
// combine, where it applies).
struct Control {
  uint32_t ctrl, row_mask, bank_mask;
  bool bound_ctrl;
};
const Control kControls[] = {
    {0xB1, 0xF, 0xF, false},   // quad_perm:[1,0,3,2]
    {0x111, 0xF, 0xF, false},  // row_shr:1
    {0x113, 0xF, 0xF, true},   // row_shr:3 bound_ctrl
    {0x102, 0xF, 0xF, false},  // row_shl:2
    {0x124, 0xF, 0xF, false},  // row_ror:4
    {0x140, 0xF, 0xF, false},  // row_mirror
    {0x141, 0xF, 0xF, false},  // row_half_mirror
    {0x142, 0xA, 0xF, false},  // row_bcast:15, rows 1 and 3
    {0x143, 0xC, 0xF, false},  // row_bcast:31, rows 2 and 3
    {0x138, 0xF, 0xF, false},  // wave_shr:1
    {0x134, 0xF, 0xF, false},  // wave_rol:1
    {0xE4, 0x5, 0x6, false},   // identity, rows 0 and 2, banks 1 and 2
};
constexpr int K = sizeof(kControls) / sizeof(kControls[0]);

std::string dpp_kernels() {
  std::string ir = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.update.dpp.i32(i32, i32, i32, i32, i32, i1)
define amdgpu_kernel void @dpp(ptr addrspace(1) %out, ptr addrspace(1) %in) "amdgpu-flat-work-group-size"="64,64" {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %l
  %x = load i32, ptr addrspace(1) %p
)";
  for (int k = 0; k < K; ++k) {
    const Control& c = kControls[k];
    const std::string n = std::to_string(k);
    ir += "  %d" + n + " = call i32 @llvm.amdgcn.update.dpp.i32(i32 -1, i32 %x, i32 " + std::to_string(c.ctrl) + ", i32 " +
          std::to_string(c.row_mask) + ", i32 " + std::to_string(c.bank_mask) + ", i1 " + (c.bound_ctrl ? "true" : "false") + ")\n";
    ir += "  %i" + n + " = add i32 %l, " + std::to_string(k * 64) + "\n";
    ir += "  %q" + n + " = getelementptr i32, ptr addrspace(1) %out, i32 %i" + n + "\n";
    ir += "  store i32 %d" + n + ", ptr addrspace(1) %q" + n + "\n";
  }
  ir += "  ret void\n}\n";
  return ir;
}

// The lane that lane l reads, or -1 (the reference semantics: AMD's DPP description).
int source(uint32_t ctrl, int l) {
  const int row = l & ~15, r = l & 15;
  if (ctrl <= 0xFF) return (l & ~3) | static_cast<int>((ctrl >> (2 * (l & 3))) & 3);
  if (ctrl >= 0x101 && ctrl <= 0x10F) return r + int(ctrl - 0x100) < 16 ? l + int(ctrl - 0x100) : -1;
  if (ctrl >= 0x111 && ctrl <= 0x11F) return r >= int(ctrl - 0x110) ? l - int(ctrl - 0x110) : -1;
  if (ctrl >= 0x121 && ctrl <= 0x12F) return row + ((r - int(ctrl - 0x120)) & 15);
  if (ctrl == 0x140) return row + 15 - r;
  if (ctrl == 0x141) return (l & ~7) | (7 - (l & 7));
  if (ctrl == 0x142) return l >= 16 ? row - 1 : -1;
  if (ctrl == 0x143) return l >= 32 ? 31 : -1;
  if (ctrl == 0x138) return l > 0 ? l - 1 : -1;
  if (ctrl == 0x134) return (l + 1) & 63;
  return -1;
}

const char* kSdwaKernel = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @sdwa(ptr addrspace(1) %out, ptr addrspace(1) %in) "amdgpu-flat-work-group-size"="64,64" {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %l
  %x = load i32, ptr addrspace(1) %p
  %hi = lshr i32 %x, 16
  %hi16 = trunc i32 %hi to i16
  %lo16 = trunc i32 %x to i16
  %hh = bitcast i16 %hi16 to half
  %lh = bitcast i16 %lo16 to half
  %hf = fpext half %hh to float
  %lf = fpext half %lh to float
  %s = fadd float %hf, %lf
  %b1 = lshr i32 %x, 8
  %b1m = and i32 %b1, 255
  %w1 = add i32 %hi, %b1m
  %q0 = getelementptr float, ptr addrspace(1) %out, i32 %l
  store float %s, ptr addrspace(1) %q0
  %i1 = add i32 %l, 64
  %q1 = getelementptr i32, ptr addrspace(1) %out, i32 %i1
  store i32 %w1, ptr addrspace(1) %q1
  ret void
}
)";

std::vector<uint32_t> run(const CodeObject& code, const char* kernel, const std::vector<uint32_t>& in, size_t out_words) {
  GlobalMemory mem;
  const uint64_t a = weft::testing::upload(mem, in, "in");
  const uint64_t o = weft::testing::upload(mem, std::vector<uint32_t>(out_words, 0xCDCDCDCDu), "out");
  LaunchOptions opt;
  opt.grid = {1, 1, 1};
  opt.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(o), ArgValue::pointer(a)};
  opt.kernarg = pack_kernel_args(code.kernel(kernel), args);
  run_kernel(code, kernel, mem, opt);
  return weft::testing::download<uint32_t>(mem, o, out_words);
}

bool listing_has(const CodeObject& code, const char* what) {
  std::ostringstream s;
  write_listing(code, s);
  return s.str().find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("DPP lane movements (quad_perm, row shifts/rotates, mirrors, broadcasts, wave shifts, masks, bound_ctrl)") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(dpp_kernels(), arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    REQUIRE(listing_has(code, "_dpp"));
    std::vector<uint32_t> in(64);
    for (uint32_t& v : in) v = rng();
    const auto out = run(code, "dpp", in, 64 * K);
    for (int k = 0; k < K; ++k) {
      const Control& c = kControls[k];
      for (int l = 0; l < 64; ++l) {
        CAPTURE(k);
        CAPTURE(l);
        const bool written = ((c.row_mask >> (l >> 4)) & 1) && ((c.bank_mask >> ((l >> 2) & 3)) & 1);
        const int s = source(c.ctrl, l);
        uint32_t want = 0xFFFFFFFFu;  // the old value: not written
        if (written && s >= 0) want = in[static_cast<size_t>(s)];
        if (written && s < 0 && c.bound_ctrl) want = 0;
        REQUIRE(out[static_cast<size_t>(k * 64 + l)] == want);
      }
    }
  }
}

TEST_CASE("SDWA: f16 halves and a byte selected from one dword") {
  std::mt19937 rng(std::random_device{}());
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kSdwaKernel, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    REQUIRE(listing_has(code, "_sdwa"));
    std::vector<uint32_t> in(64);
    for (uint32_t& v : in) v = (rng() & 0x3BFF3BFFu);  // finite halves
    const auto out = run(code, "sdwa", in, 128);
    for (int l = 0; l < 64; ++l) {
      CAPTURE(l);
      const uint32_t x = in[static_cast<size_t>(l)];
      const float want = weft::half_to_float(static_cast<uint16_t>(x >> 16)) + weft::half_to_float(static_cast<uint16_t>(x & 0xFFFF));
      float got;
      std::memcpy(&got, &out[static_cast<size_t>(l)], 4);
      REQUIRE(got == want);
      REQUIRE(out[static_cast<size_t>(64 + l)] == (x >> 16) + ((x >> 8) & 0xFF));
    }
  }
}

namespace {

// 64-bit DPP (the DP ALU forms): out[3l] = update.dpp.i64(old 7, x, row_newbcast:3), out[3l+1] =
// update.dpp.i64(old 9, x, row_newbcast:10, row_mask 0xa, bank_mask 0x5), out[3l+2] =
// update.dpp.f64(old 0.0, x, row_newbcast:5) + x as doubles.
const char* kDpp64 = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i64 @llvm.amdgcn.update.dpp.i64(i64, i64, i32, i32, i32, i1)
declare double @llvm.amdgcn.update.dpp.f64(double, double, i32, i32, i32, i1)
define amdgpu_kernel void @dpp64(ptr addrspace(1) %x, ptr addrspace(1) %out) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr i64, ptr addrspace(1) %x, i32 %l
  %v = load i64, ptr addrspace(1) %px
  %a = call i64 @llvm.amdgcn.update.dpp.i64(i64 7, i64 %v, i32 339, i32 15, i32 15, i1 false)
  %b = call i64 @llvm.amdgcn.update.dpp.i64(i64 9, i64 %v, i32 346, i32 10, i32 5, i1 false)
  %vd = bitcast i64 %v to double
  %c = call double @llvm.amdgcn.update.dpp.f64(double 0.0, double %vd, i32 341, i32 15, i32 15, i1 false)
  %cd = fadd double %c, %vd
  %o = mul i32 %l, 3
  %q0 = getelementptr i64, ptr addrspace(1) %out, i32 %o
  store i64 %a, ptr addrspace(1) %q0
  %q1 = getelementptr i64, ptr addrspace(1) %q0, i32 1
  store i64 %b, ptr addrspace(1) %q1
  %q2 = getelementptr i64, ptr addrspace(1) %q0, i32 2
  store double %cd, ptr addrspace(1) %q2
  ret void
}
)";

}  // namespace

TEST_CASE("64-bit DPP (v_mov_b64_dpp row_newbcast, with row and bank masks) on both targets") {
  std::mt19937_64 rng = weft::testing::seeded_rng("emulator 64-bit DPP test");
  std::uniform_real_distribution<double> any(-1e6, 1e6);
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(std::string(arch_name(arch)));
    const auto bytes = weft::testing::compile_ll(kDpp64, arch_name(arch));
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    REQUIRE(listing_has(code, "v_mov_b64_dpp"));
    std::vector<uint64_t> x(64);
    for (auto& v : x) v = std::bit_cast<uint64_t>(any(rng));
    GlobalMemory mem;
    const uint64_t px = weft::testing::upload(mem, x, "x"), po = weft::testing::upload(mem, std::vector<uint8_t>(64 * 24, 0xCD), "out");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(px), ArgValue::pointer(po)};
    o.kernarg = pack_kernel_args(code.kernel("dpp64"), args);
    run_kernel(code, "dpp64", mem, o);
    const auto out = weft::testing::download<uint64_t>(mem, po, 64 * 3);
    for (size_t l = 0; l < 64; ++l) {
      CAPTURE(l);
      const size_t row = l & ~size_t{15};
      CHECK(out[3 * l] == x[row + 3]);
      const bool written = ((0xa >> (l >> 4)) & 1) && ((0x5 >> ((l >> 2) & 3)) & 1);
      CHECK(out[3 * l + 1] == (written ? x[row + 10] : 9));
      CHECK(out[3 * l + 2] == std::bit_cast<uint64_t>(std::bit_cast<double>(x[row + 5]) + std::bit_cast<double>(x[l])));
    }
  }
}
