// Integer and scalar-memory forms LLVM 22 emits, run on both targets against host references:
// an SMEM load with both a register and an immediate offset (SOE), and the 24-bit high
// multiplies v_mul_hi_u32_u24 / v_mul_hi_i32_i24.
#include <doctest/doctest.h>

#include <algorithm>
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

namespace {

// One wave's LDS atomics on shared cells as llc-22 compiles atomicrmw on addrspace(3): sub, and,
// or, xor, uinc_wrap, udec_wrap (32 bits) and xor, sub (64 bits), each lane with its own operand
// (inc/dec: 40). old gets each lane's returned value, final the cells afterwards.
const char* kDsAtomics = R"(
target triple = "amdgcn-amd-amdhsa"
@cells = internal addrspace(3) global [8 x i32] poison, align 4
@wide = internal addrspace(3) global [4 x i64] poison, align 8
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
define amdgpu_kernel void @ds_atomics(ptr addrspace(1) %init, ptr addrspace(1) %v, ptr addrspace(1) %old, ptr addrspace(1) %final) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %first = icmp eq i32 %l, 0
  br i1 %first, label %setup, label %go
setup:
  %iv = load <8 x i32>, ptr addrspace(1) %init
  store <8 x i32> %iv, ptr addrspace(3) @cells
  %pw = getelementptr i32, ptr addrspace(1) %init, i32 8
  %iw = load <4 x i64>, ptr addrspace(1) %pw
  store <4 x i64> %iw, ptr addrspace(3) @wide
  br label %go
go:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %pv = getelementptr i32, ptr addrspace(1) %v, i32 %l
  %x = load i32, ptr addrspace(1) %pv
  %x64 = zext i32 %x to i64
  %c0 = getelementptr i32, ptr addrspace(3) @cells, i32 0
  %c1 = getelementptr i32, ptr addrspace(3) @cells, i32 1
  %c2 = getelementptr i32, ptr addrspace(3) @cells, i32 2
  %c3 = getelementptr i32, ptr addrspace(3) @cells, i32 3
  %c4 = getelementptr i32, ptr addrspace(3) @cells, i32 4
  %c5 = getelementptr i32, ptr addrspace(3) @cells, i32 5
  %w0 = getelementptr i64, ptr addrspace(3) @wide, i32 0
  %w1 = getelementptr i64, ptr addrspace(3) @wide, i32 1
  %r0 = atomicrmw sub ptr addrspace(3) %c0, i32 %x syncscope("workgroup") monotonic
  %r1 = atomicrmw and ptr addrspace(3) %c1, i32 %x syncscope("workgroup") monotonic
  %r2 = atomicrmw or ptr addrspace(3) %c2, i32 %x syncscope("workgroup") monotonic
  %r3 = atomicrmw xor ptr addrspace(3) %c3, i32 %x syncscope("workgroup") monotonic
  %r4 = atomicrmw uinc_wrap ptr addrspace(3) %c4, i32 40 syncscope("workgroup") monotonic
  %r5 = atomicrmw udec_wrap ptr addrspace(3) %c5, i32 40 syncscope("workgroup") monotonic
  %r6 = atomicrmw xor ptr addrspace(3) %w0, i64 %x64 syncscope("workgroup") monotonic
  %r7 = atomicrmw sub ptr addrspace(3) %w1, i64 %x64 syncscope("workgroup") monotonic
  %o = mul i32 %l, 8
  %po = getelementptr i32, ptr addrspace(1) %old, i32 %o
  store i32 %r0, ptr addrspace(1) %po
  %po1 = getelementptr i32, ptr addrspace(1) %po, i32 1
  store i32 %r1, ptr addrspace(1) %po1
  %po2 = getelementptr i32, ptr addrspace(1) %po, i32 2
  store i32 %r2, ptr addrspace(1) %po2
  %po3 = getelementptr i32, ptr addrspace(1) %po, i32 3
  store i32 %r3, ptr addrspace(1) %po3
  %po4 = getelementptr i32, ptr addrspace(1) %po, i32 4
  store i32 %r4, ptr addrspace(1) %po4
  %po5 = getelementptr i32, ptr addrspace(1) %po, i32 5
  store i32 %r5, ptr addrspace(1) %po5
  %po6 = getelementptr i32, ptr addrspace(1) %po, i32 6
  %r6t = trunc i64 %r6 to i32
  store i32 %r6t, ptr addrspace(1) %po6
  %po7 = getelementptr i32, ptr addrspace(1) %po, i32 7
  %r7t = trunc i64 %r7 to i32
  store i32 %r7t, ptr addrspace(1) %po7
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br i1 %first, label %dump, label %done
dump:
  %fv = load <8 x i32>, ptr addrspace(3) @cells
  store <8 x i32> %fv, ptr addrspace(1) %final
  %fw = load <4 x i64>, ptr addrspace(3) @wide
  %pf = getelementptr i32, ptr addrspace(1) %final, i32 8
  store <4 x i64> %fw, ptr addrspace(1) %pf
  br label %done
done:
  ret void
}
)";

}  // namespace

TEST_CASE("LDS atomics sub/and/or/xor/inc/dec in 32 and 64 bits (ds_*_rtn_*) on both targets") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kDsAtomics, arch_name(arch));
    const std::string listing = listing_of(bytes);
    for (const char* form : {"ds_sub_rtn_u32", "ds_and_rtn_b32", "ds_or_rtn_b32", "ds_xor_rtn_b32", "ds_inc_rtn_u32", "ds_dec_rtn_u32",
                             "ds_xor_rtn_b64", "ds_sub_rtn_u64"})
      REQUIRE_MESSAGE(listing.find(form) != std::string::npos, form);
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    std::vector<uint32_t> init(16), v(64);
    for (auto& x : init) x = static_cast<uint32_t>(rng()());
    init[4] = static_cast<uint32_t>(rng()() % 41), init[5] = static_cast<uint32_t>(rng()() % 41);
    for (auto& x : v) x = static_cast<uint32_t>(rng()());
    GlobalMemory mem;
    const uint64_t pi = upload(mem, init, "init"), pv = upload(mem, v, "v");
    const uint64_t po = upload(mem, std::vector<uint8_t>(64 * 32, 0xCD), "old"), pf = upload(mem, std::vector<uint8_t>(64, 0xCD), "final");
    LaunchOptions o;
    o.block = {64, 1, 1};
    const ArgValue args[] = {ArgValue::pointer(pi), ArgValue::pointer(pv), ArgValue::pointer(po), ArgValue::pointer(pf)};
    o.kernarg = pack_kernel_args(code.kernel("ds_atomics"), args);
    run_kernel(code, "ds_atomics", mem, o);
    const auto fin = download<uint32_t>(mem, pf, 16);
    const auto old = download<uint32_t>(mem, po, 64 * 8);
    uint32_t sub = init[0], band = init[1], bor = init[2], bxor = init[3];
    uint64_t wxor = init[8] | uint64_t{init[9]} << 32, wsub = init[10] | uint64_t{init[11]} << 32;
    std::vector<uint32_t> inc_olds, dec_olds;
    uint32_t inc = init[4], dec = init[5];
    for (uint32_t x : v) {
      sub -= x, band &= x, bor |= x, bxor ^= x, wxor ^= x, wsub -= x;
      inc_olds.push_back(inc), dec_olds.push_back(dec);
      inc = inc >= 40 ? 0 : inc + 1;
      dec = dec == 0 || dec > 40 ? 40 : dec - 1;
    }
    CHECK(fin[0] == sub);
    CHECK(fin[1] == band);
    CHECK(fin[2] == bor);
    CHECK(fin[3] == bxor);
    CHECK(fin[4] == inc);
    CHECK(fin[5] == dec);
    CHECK((fin[8] | uint64_t{fin[9]} << 32) == wxor);
    CHECK((fin[10] | uint64_t{fin[11]} << 32) == wsub);
    // The order of lanes within one atomic is unspecified: the values returned are the states in
    // some order, so compare them as sets.
    std::vector<uint32_t> got_inc, got_dec;
    for (size_t l = 0; l < 64; ++l) got_inc.push_back(old[8 * l + 4]), got_dec.push_back(old[8 * l + 5]);
    std::sort(got_inc.begin(), got_inc.end()), std::sort(inc_olds.begin(), inc_olds.end());
    std::sort(got_dec.begin(), got_dec.end()), std::sort(dec_olds.begin(), dec_olds.end());
    CHECK(got_inc == inc_olds);
    CHECK(got_dec == dec_olds);
  }
}

namespace {

// s_bitset0/1 in both widths (LLVM 22 emits s_bitset1_b32 for an LDS address in hk_gemm's
// gfx942 ping-pong): each reads its destination and sets or clears one bit of it.
const char* kBitset = R"(
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @bitset(ptr addrspace(1) %out, i32 %a, i32 %n, i64 %b, i32 %m) {
  %s1 = call i32 asm sideeffect "s_bitset1_b32 $0, $1", "=s,s,0"(i32 %n, i32 %a)
  %s0 = call i32 asm sideeffect "s_bitset0_b32 $0, $1", "=s,s,0"(i32 %n, i32 %a)
  %t1 = call i64 asm sideeffect "s_bitset1_b64 $0, $1", "=s,s,0"(i32 %m, i64 %b)
  %t0 = call i64 asm sideeffect "s_bitset0_b64 $0, $1", "=s,s,0"(i32 %m, i64 %b)
  store i32 %s1, ptr addrspace(1) %out
  %p1 = getelementptr i32, ptr addrspace(1) %out, i32 1
  store i32 %s0, ptr addrspace(1) %p1
  %p2 = getelementptr i64, ptr addrspace(1) %out, i32 1
  store i64 %t1, ptr addrspace(1) %p2
  %p3 = getelementptr i64, ptr addrspace(1) %out, i32 2
  store i64 %t0, ptr addrspace(1) %p3
  ret void
}
)";

}  // namespace

TEST_CASE("s_bitset0 and s_bitset1 clear and set one bit of their destination, 32 and 64 bits wide") {
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    INFO(arch_name(arch));
    const auto bytes = weft::testing::compile_ll(kBitset, arch_name(arch));
    for (const char* form : {"s_bitset1_b32", "s_bitset0_b32", "s_bitset1_b64", "s_bitset0_b64"})
      REQUIRE_MESSAGE(listing_of(bytes).find(form) != std::string::npos, form);
    weft::testing::check_listing_matches_objdump(bytes, arch);
    const CodeObject code = CodeObject::load(bytes);
    for (int trial = 0; trial < 8; ++trial) {
      // Bit numbers with junk above the 5 (6) bits the instructions read.
      const uint32_t a = static_cast<uint32_t>(rng()()), n = static_cast<uint32_t>(rng()()), m = static_cast<uint32_t>(rng()());
      const uint64_t b = rng()();
      GlobalMemory mem;
      const uint64_t po = upload(mem, std::vector<uint8_t>(24, 0xCD), "out");
      LaunchOptions o;
      o.block = {64, 1, 1};
      const ArgValue args[] = {ArgValue::pointer(po), ArgValue::u32(a), ArgValue::u32(n), ArgValue::u64(b), ArgValue::u32(m)};
      o.kernarg = pack_kernel_args(code.kernel("bitset"), args);
      run_kernel(code, "bitset", mem, o);
      const auto words = download<uint32_t>(mem, po, 2);
      const auto longs = download<uint64_t>(mem, po, 3);  // [1] and [2]
      const uint32_t bit = 1u << (n & 31);
      const uint64_t bit64 = uint64_t{1} << (m & 63);
      CHECK_MESSAGE(words[0] == (a | bit), "a " << a << ", n " << n);
      CHECK_MESSAGE(words[1] == (a & ~bit), "a " << a << ", n " << n);
      CHECK_MESSAGE(longs[1] == (b | bit64), "b " << b << ", m " << m);
      CHECK_MESSAGE(longs[2] == (b & ~bit64), "b " << b << ", m " << m);
    }
  }
}
