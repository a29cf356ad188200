// Integer and scalar-memory forms LLVM 22 emits, run on both targets against host references:
// an SMEM load with both a register and an immediate offset (SOE), and the 24-bit high
// multiplies v_mul_hi_u32_u24 / v_mul_hi_i32_i24.
#include <doctest/doctest.h>

#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "test_seed.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;
using weft::testing::download;
using weft::testing::upload;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 gen = weft::testing::seeded_rng("emulator integer tests");
  return gen;
}

std::string listing_of(const std::vector<uint8_t>& bytes) {
  std::ostringstream s;
  write_listing(CodeObject::load(bytes), s);
  return s.str();
}

// out = sum over r < n of in[r % 2]: with a run-time trip count llc keeps the uniform load in
// the loop as `s_load_dword sX, s[..], sY offset:0x0` (SOE: register plus immediate offset).
const char* kSmemSum = R"(
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @smem_sum(ptr addrspace(1) noalias readonly %in, ptr addrspace(1) noalias %out, i32 %n) {
entry:
  br label %loop
loop:
  %r = phi i32 [0, %entry], [%r1, %loop]
  %acc = phi i32 [0, %entry], [%acc1, %loop]
  %idx = urem i32 %r, 2
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %idx
  %v = load i32, ptr addrspace(1) %p
  %acc1 = add i32 %acc, %v
  %r1 = add i32 %r, 1
  %c = icmp ult i32 %r1, %n
  br i1 %c, label %loop, label %exit
exit:
  store i32 %acc1, ptr addrspace(1) %out
  ret void
}
)";

// out[2i] = zext(a & 0xffffff) * zext(b & 0xffffff), out[2i+1] = sext24(a) * sext24(b), as
// 64-bit products: llc splits each into v_mul_{u32_u24,i32_i24} and v_mul_hi_{u32_u24,i32_i24}.
const char* kMul24 = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @mul24(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr i32, ptr addrspace(1) %b, i32 %i
  %va = load i32, ptr addrspace(1) %pa
  %vb = load i32, ptr addrspace(1) %pb
  %ua = and i32 %va, 16777215
  %ub = and i32 %vb, 16777215
  %wa = zext i32 %ua to i64
  %wb = zext i32 %ub to i64
  %m = mul i64 %wa, %wb
  %sa0 = shl i32 %va, 8
  %sa = ashr i32 %sa0, 8
  %sb0 = shl i32 %vb, 8
  %sb = ashr i32 %sb0, 8
  %xa = sext i32 %sa to i64
  %xb = sext i32 %sb to i64
  %s = mul i64 %xa, %xb
  %o = mul i32 %i, 2
  %q0 = getelementptr i64, ptr addrspace(1) %out, i32 %o
  store i64 %m, ptr addrspace(1) %q0
  %q1 = getelementptr i64, ptr addrspace(1) %q0, i32 1
  store i64 %s, ptr addrspace(1) %q1
  ret void
}
)";

}  // namespace

TEST_CASE("an SMEM load with a register and an immediate offset (s_load_dword s, s[..], s offset:) reads in[r % 2]") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kSmemSum, arch_name(arch));
    // The form under test is in the code: an SGPR offset followed by an immediate one.
    const std::string listing = listing_of(bytes);
    const size_t at = listing.find("s_load_dword s");
    REQUIRE(at != std::string::npos);
    bool soe = false;
    for (size_t p = at; p != std::string::npos; p = listing.find("s_load_dword s", p + 1)) {
      const std::string line = listing.substr(p, listing.find('\n', p) - p);
      soe |= line.find("], s") != std::string::npos && line.find(" offset:") != std::string::npos;
    }
    REQUIRE_MESSAGE(soe, listing);
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    for (int trial = 0; trial < 4; ++trial) {
      const std::vector<uint32_t> in = {static_cast<uint32_t>(rng()()), static_cast<uint32_t>(rng()())};
      const uint32_t n = 1 + static_cast<uint32_t>(rng()() % 17);
      GlobalMemory mem;
      const uint64_t pin = upload(mem, in, "in"), pout = upload(mem, std::vector<uint32_t>{0xCDCDCDCDu}, "out");
      LaunchOptions o;
      o.block = {64, 1, 1};
      const ArgValue args[] = {ArgValue::pointer(pin), ArgValue::pointer(pout), ArgValue::u32(n)};
      o.kernarg = pack_kernel_args(code.kernel("smem_sum"), args);
      run_kernel(code, "smem_sum", mem, o);
      uint32_t want = 0;
      for (uint32_t r = 0; r < n; ++r) want += in[r % 2];
      CHECK_MESSAGE(download<uint32_t>(mem, pout, 1)[0] == want, "n " << n << ", in {" << in[0] << ", " << in[1] << "}");
    }
  }
}

TEST_CASE("v_mul_hi_u32_u24 and v_mul_hi_i32_i24 give the high half of the 48-bit product") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kMul24, arch_name(arch));
    const std::string listing = listing_of(bytes);
    for (const char* form : {"v_mul_hi_u32_u24", "v_mul_hi_i32_i24", "v_mul_u32_u24", "v_mul_i32_i24"})
      REQUIRE_MESSAGE(listing.find(form) != std::string::npos, form);
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    std::vector<uint32_t> a(64), b(64);
    for (int i = 0; i < 64; ++i) {
      // Extremes of the 24-bit ranges as well as random values (the high byte must be ignored).
      a[i] = i == 0 ? 0xFFFFFFFFu : i == 1 ? 0x00800000u : static_cast<uint32_t>(rng()());
      b[i] = i == 0 ? 0xFFFFFFFFu : i == 1 ? 0xFF800000u : static_cast<uint32_t>(rng()());
    }
    GlobalMemory mem;
    const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b");
    const uint64_t po = upload(mem, std::vector<uint8_t>(64 * 16, 0xCD), "out");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(po)};
    o.kernarg = pack_kernel_args(code.kernel("mul24"), args);
    run_kernel(code, "mul24", mem, o);
    const auto out = download<uint64_t>(mem, po, 128);
    for (size_t i = 0; i < 64; ++i) {
      const uint64_t u = uint64_t{a[i] & 0xFFFFFFu} * (b[i] & 0xFFFFFFu);
      const auto s24 = [](uint32_t x) { return int64_t{static_cast<int32_t>(x << 8) >> 8}; };
      const int64_t s = s24(a[i]) * s24(b[i]);
      CHECK_MESSAGE(out[2 * i] == u, "lane " << i << ": a " << a[i] << ", b " << b[i]);
      CHECK_MESSAGE(static_cast<int64_t>(out[2 * i + 1]) == s, "lane " << i << ": a " << a[i] << ", b " << b[i]);
    }
  }
}

namespace {

// Ordinary three-input bit logic, which llc-22 folds into v_bitop3_b32 on gfx950:
// out[i] = (a & b) | (~a & c), out[64 + i] = a ^ (b | ~c).
const char* kLogic = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @logic(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %out) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr i32, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr i32, ptr addrspace(1) %c, i32 %i
  %va = load i32, ptr addrspace(1) %pa
  %vb = load i32, ptr addrspace(1) %pb
  %vc = load i32, ptr addrspace(1) %pc
  %ab = and i32 %va, %vb
  %na = xor i32 %va, -1
  %nac = and i32 %na, %vc
  %r0 = or i32 %ab, %nac
  %nc = xor i32 %vc, -1
  %bnc = or i32 %vb, %nc
  %r1 = xor i32 %va, %bnc
  %q0 = getelementptr i32, ptr addrspace(1) %out, i32 %i
  store i32 %r0, ptr addrspace(1) %q0
  %q1 = getelementptr i32, ptr addrspace(1) %q0, i32 64
  store i32 %r1, ptr addrspace(1) %q1
  ret void
}
)";

}  // namespace

TEST_CASE("three-input bit logic as llc-22 compiles it for gfx950 (v_bitop3_b32)") {
  const auto bytes = weft::testing::compile_ll(kLogic, "gfx950");
  REQUIRE(listing_of(bytes).find("v_bitop3_b32") != std::string::npos);
  weft::testing::check_listing_matches_objdump(bytes, Arch::Gfx950);
  const CodeObject code = CodeObject::load(bytes);
  std::vector<uint32_t> a(64), b(64), c(64);
  for (int i = 0; i < 64; ++i)
    a[i] = static_cast<uint32_t>(rng()()), b[i] = static_cast<uint32_t>(rng()()), c[i] = static_cast<uint32_t>(rng()());
  GlobalMemory mem;
  const uint64_t pa = upload(mem, a, "a"), pb = upload(mem, b, "b"), pc = upload(mem, c, "c");
  const uint64_t po = upload(mem, std::vector<uint8_t>(64 * 8, 0xCD), "out");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(pa), ArgValue::pointer(pb), ArgValue::pointer(pc), ArgValue::pointer(po)};
  o.kernarg = pack_kernel_args(code.kernel("logic"), args);
  run_kernel(code, "logic", mem, o);
  const auto out = download<uint32_t>(mem, po, 128);
  for (size_t i = 0; i < 64; ++i) {
    CHECK_MESSAGE(out[i] == ((a[i] & b[i]) | (~a[i] & c[i])), "lane " << i);
    CHECK_MESSAGE(out[64 + i] == (a[i] ^ (b[i] | ~c[i])), "lane " << i);
  }
}
