// gfx950's transposing LDS reads and row swaps, through kernels llc-22 compiles from the
// llvm.amdgcn.ds.read.tr{16,8,4,6} and llvm.amdgcn.permlane{16,32}.swap intrinsics, against host
// references computed from the documented lane rule (emulator/src/semantics_transpose.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
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
  static std::mt19937_64 gen = weft::testing::seeded_rng("emulator transpose tests");
  return gen;
}

std::string listing_of(const std::vector<uint8_t>& bytes) {
  std::ostringstream s;
  write_listing(CodeObject::load(bytes), s);
  return s.str();
}

// B (32 x 16 bf16, K x N) is stored row-major in LDS; lane l of group g = l / 16 addresses row
// 8g + (l % 16) / 4, column 4 (l % 4) and, for the second read, four rows further. raw gets the
// two reads of each lane (8 halves); c = A (16 x 32, row-major in global) x B through
// v_mfma_f32_16x16x32_bf16 with the two reads as its B operand and A in its A layout
// (lane l: row l % 16, k = 8 (l / 16) .. +7).
const char* kTr16Mfma = R"(
target triple = "amdgcn-amd-amdhsa"
@tile = internal addrspace(3) global [512 x i16] poison, align 16
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat>, <8 x bfloat>, <4 x float>, i32, i32, i32)
define amdgpu_kernel void @tr16_mfma(ptr addrspace(1) %b, ptr addrspace(1) %a, ptr addrspace(1) %raw, ptr addrspace(1) %c) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pb = getelementptr <8 x i16>, ptr addrspace(1) %b, i32 %l
  %vb = load <8 x i16>, ptr addrspace(1) %pb
  %pt = getelementptr <8 x i16>, ptr addrspace(3) @tile, i32 %l
  store <8 x i16> %vb, ptr addrspace(3) %pt
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %g = lshr i32 %l, 4
  %s = and i32 %l, 15
  %s4 = lshr i32 %s, 2
  %g8 = shl i32 %g, 3
  %row = add i32 %g8, %s4
  %sm = and i32 %l, 3
  %col = shl i32 %sm, 2
  %row16 = shl i32 %row, 4
  %e0 = add i32 %row16, %col
  %p0 = getelementptr i16, ptr addrspace(3) @tile, i32 %e0
  %r0 = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %p0)
  %p1 = getelementptr i16, ptr addrspace(3) %p0, i32 64
  %r1 = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %p1)
  %bv = shufflevector <4 x i16> %r0, <4 x i16> %r1, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %pr = getelementptr <8 x i16>, ptr addrspace(1) %raw, i32 %l
  store <8 x i16> %bv, ptr addrspace(1) %pr
  %m = and i32 %l, 15
  %m32 = shl i32 %m, 5
  %ea = add i32 %m32, %g8
  %pa = getelementptr bfloat, ptr addrspace(1) %a, i32 %ea
  %av = load <8 x bfloat>, ptr addrspace(1) %pa
  %bf = bitcast <8 x i16> %bv to <8 x bfloat>
  %cv = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %av, <8 x bfloat> %bf, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %pc = getelementptr <4 x float>, ptr addrspace(1) %c, i32 %l
  store <4 x float> %cv, ptr addrspace(1) %pc
  ret void
}
)";

// 64 lanes store 16 random bytes each into LDS; lane l then reads at the byte address addr[l]
// with each of the four transposing reads; out[9l ..] = tr16 (2 dwords), tr8 (2), tr4 (2), tr6 (3).
const char* kTrAll = R"(
target triple = "amdgcn-amd-amdhsa"
@lds = internal addrspace(3) global [256 x i32] poison, align 16
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
declare <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3))
declare <2 x i32> @llvm.amdgcn.ds.read.tr4.b64.v2i32(ptr addrspace(3))
declare <3 x i32> @llvm.amdgcn.ds.read.tr6.b96.v3i32(ptr addrspace(3))
define amdgpu_kernel void @tr_all(ptr addrspace(1) %data, ptr addrspace(1) %addr, ptr addrspace(1) %out) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pd = getelementptr <4 x i32>, ptr addrspace(1) %data, i32 %l
  %vd = load <4 x i32>, ptr addrspace(1) %pd
  %pl = getelementptr <4 x i32>, ptr addrspace(3) @lds, i32 %l
  store <4 x i32> %vd, ptr addrspace(3) %pl
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %pa = getelementptr i32, ptr addrspace(1) %addr, i32 %l
  %a = load i32, ptr addrspace(1) %pa
  %p = getelementptr i8, ptr addrspace(3) @lds, i32 %a
  %r16 = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %p)
  %r8 = call <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3) %p)
  %r4 = call <2 x i32> @llvm.amdgcn.ds.read.tr4.b64.v2i32(ptr addrspace(3) %p)
  %r6 = call <3 x i32> @llvm.amdgcn.ds.read.tr6.b96.v3i32(ptr addrspace(3) %p)
  %b16 = bitcast <4 x i16> %r16 to <2 x i32>
  %o = mul i32 %l, 9
  %q0 = getelementptr i32, ptr addrspace(1) %out, i32 %o
  store <2 x i32> %b16, ptr addrspace(1) %q0
  %q1 = getelementptr i32, ptr addrspace(1) %q0, i32 2
  store <2 x i32> %r8, ptr addrspace(1) %q1
  %q2 = getelementptr i32, ptr addrspace(1) %q0, i32 4
  store <2 x i32> %r4, ptr addrspace(1) %q2
  %q3 = getelementptr i32, ptr addrspace(1) %q0, i32 6
  store <3 x i32> %r6, ptr addrspace(1) %q3
  ret void
}
)";

// Element k, `bits` wide, of the little-endian bytes at p.
uint32_t field(const uint8_t* p, uint32_t k, uint32_t bits) {
  uint32_t v = 0;
  for (uint32_t b = 0; b < bits; ++b) {
    const uint32_t at = k * bits + b;
    v |= ((p[at / 8] >> (at % 8)) & 1u) << b;
  }
  return v;
}

float bf16_value(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

}  // namespace

TEST_CASE("ds_read_b64_tr_b16: a row-major 32x16 bf16 tile in LDS gives each lane the column the MFMA B operand wants") {
  const auto bytes = weft::testing::compile_ll(kTr16Mfma, "gfx950");
  REQUIRE(listing_of(bytes).find("ds_read_b64_tr_b16") != std::string::npos);
  weft::testing::check_listing_matches_objdump(bytes, Arch::Gfx950);
  const CodeObject code = CodeObject::load(bytes);
  // Small integers times powers of two: bf16-exact, so the MFMA's f32 sums are exact too.
  std::uniform_int_distribution<int> small(-8, 8);
  const auto random_bf16 = [&] { return static_cast<uint16_t>(std::bit_cast<uint32_t>(std::ldexp(float(small(rng())), small(rng()) / 4)) >> 16); };
  std::vector<uint16_t> b(32 * 16), a(16 * 32);
  for (auto& x : b) x = random_bf16();
  for (auto& x : a) x = random_bf16();
  GlobalMemory mem;
  const uint64_t pb = upload(mem, b, "b"), pa = upload(mem, a, "a");
  const uint64_t praw = upload(mem, std::vector<uint8_t>(64 * 16, 0xCD), "raw"), pc = upload(mem, std::vector<uint8_t>(64 * 16, 0xCD), "c");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(pb), ArgValue::pointer(pa), ArgValue::pointer(praw), ArgValue::pointer(pc)};
  o.kernarg = pack_kernel_args(code.kernel("tr16_mfma"), args);
  run_kernel(code, "tr16_mfma", mem, o);
  const auto raw = download<uint16_t>(mem, praw, 64 * 8);
  const auto c = download<float>(mem, pc, 64 * 4);
  for (int l = 0; l < 64; ++l)
    for (int j = 0; j < 8; ++j)  // lane l: B[k][n] for n = l % 16, k = 8 (l / 16) + j
      REQUIRE_MESSAGE(raw[8 * l + j] == b[(8 * (l / 16) + j) * 16 + l % 16], "lane " << l << ", element " << j);
  for (int l = 0; l < 64; ++l)
    for (int i = 0; i < 4; ++i) {  // the 16x16 accumulator: lane l holds C[4 (l / 16) + i][l % 16]
      const int m = 4 * (l / 16) + i, n = l % 16;
      double want = 0;
      for (int k = 0; k < 32; ++k) want += double(bf16_value(a[m * 32 + k])) * bf16_value(b[k * 16 + n]);
      REQUIRE_MESSAGE(c[4 * l + i] == want, "C[" << m << "][" << n << "]");
    }
}

TEST_CASE("ds_read_b64_tr_b16/_b8/_b4 and ds_read_b96_tr_b6 transpose each 16-lane group by the documented rule") {
  const auto bytes = weft::testing::compile_ll(kTrAll, "gfx950");
  const std::string listing = listing_of(bytes);
  for (const char* form : {"ds_read_b64_tr_b16", "ds_read_b64_tr_b8", "ds_read_b64_tr_b4", "ds_read_b96_tr_b6"})
    REQUIRE_MESSAGE(listing.find(form) != std::string::npos, form);
  weft::testing::check_listing_matches_objdump(bytes, Arch::Gfx950);
  const CodeObject code = CodeObject::load(bytes);
  std::vector<uint8_t> data(64 * 16);
  for (auto& x : data) x = static_cast<uint8_t>(rng()());
  // Each lane reads a different 16-byte slot, in random order (so lane and address differ).
  std::vector<uint32_t> slot(64);
  std::iota(slot.begin(), slot.end(), 0u);
  std::shuffle(slot.begin(), slot.end(), rng());
  std::vector<uint32_t> addr(64);
  for (int l = 0; l < 64; ++l) addr[l] = slot[l] * 16;
  GlobalMemory mem;
  const uint64_t pd = upload(mem, data, "data"), pa = upload(mem, addr, "addr");
  const uint64_t po = upload(mem, std::vector<uint8_t>(64 * 36, 0xCD), "out");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(pd), ArgValue::pointer(pa), ArgValue::pointer(po)};
  o.kernarg = pack_kernel_args(code.kernel("tr_all"), args);
  run_kernel(code, "tr_all", mem, o);
  const auto out = download<uint32_t>(mem, po, 64 * 9);
  struct Form {
    const char* name;
    uint32_t first_dword, bits, elements;
  };
  for (const Form f : {Form{"tr_b16", 0, 16, 4}, Form{"tr_b8", 2, 8, 8}, Form{"tr_b4", 4, 4, 16}, Form{"tr_b6", 6, 6, 16}})
    for (int l = 0; l < 64; ++l) {
      const int g = l / 16, i = l % 16;
      const auto* got = reinterpret_cast<const uint8_t*>(&out[9 * l + f.first_dword]);
      for (uint32_t j = 0; j < f.elements; ++j) {
        // result[i][j] = src[(16 j + i) / E][(16 j + i) % E], src[s] = the bytes lane 16g + s addresses.
        const uint32_t flat = 16 * j + static_cast<uint32_t>(i), s = flat / f.elements;
        const uint32_t want = field(&data[addr[16 * g + s]], flat % f.elements, f.bits);
        REQUIRE_MESSAGE(field(got, j, f.bits) == want, f.name << ": lane " << l << ", element " << j);
      }
    }
}

TEST_CASE("a transposing LDS read with part of a 16-lane group inactive stops with an error") {
  const char* ir = R"(
target triple = "amdgcn-amd-amdhsa"
@lds = internal addrspace(3) global [128 x i32] poison, align 16
declare i32 @llvm.amdgcn.workitem.id.x()
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
define amdgpu_kernel void @tr_partial(ptr addrspace(1) %out) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pl = getelementptr <2 x i32>, ptr addrspace(3) @lds, i32 %l
  store <2 x i32> zeroinitializer, ptr addrspace(3) %pl
  %c = icmp ult i32 %l, 40
  br i1 %c, label %read, label %done
read:
  %p = getelementptr <4 x i16>, ptr addrspace(3) @lds, i32 %l
  %r = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %p)
  %po = getelementptr <4 x i16>, ptr addrspace(1) %out, i32 %l
  store <4 x i16> %r, ptr addrspace(1) %po
  br label %done
done:
  ret void
}
)";
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(ir, "gfx950"));
  GlobalMemory mem;
  const uint64_t po = upload(mem, std::vector<uint8_t>(64 * 8, 0xCD), "out");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(po)};
  o.kernarg = pack_kernel_args(code.kernel("tr_partial"), args);
  const std::string error = weft::testing::error_of([&] { run_kernel(code, "tr_partial", mem, o); });
  CHECK_MESSAGE(error.find("all 16 lanes of a group active (lanes 32..47 have EXEC bits 0x00ff)") != std::string::npos, error);
  CHECK_MESSAGE(error.find("ds_read_b64_tr_b16") != std::string::npos, error);
}

namespace {

// out[4l ..] = the two results of llvm.amdgcn.permlane16.swap(x, y) then of permlane32.swap(x, y).
const char* kSwaps = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare {i32, i32} @llvm.amdgcn.permlane16.swap(i32, i32, i1, i1)
declare {i32, i32} @llvm.amdgcn.permlane32.swap(i32, i32, i1, i1)
define amdgpu_kernel void @swaps(ptr addrspace(1) %x, ptr addrspace(1) %y, ptr addrspace(1) %out) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr i32, ptr addrspace(1) %x, i32 %l
  %py = getelementptr i32, ptr addrspace(1) %y, i32 %l
  %vx = load i32, ptr addrspace(1) %px
  %vy = load i32, ptr addrspace(1) %py
  %s16 = call {i32, i32} @llvm.amdgcn.permlane16.swap(i32 %vx, i32 %vy, i1 false, i1 false)
  %s32 = call {i32, i32} @llvm.amdgcn.permlane32.swap(i32 %vx, i32 %vy, i1 false, i1 false)
  %a = extractvalue {i32, i32} %s16, 0
  %b = extractvalue {i32, i32} %s16, 1
  %c = extractvalue {i32, i32} %s32, 0
  %d = extractvalue {i32, i32} %s32, 1
  %o = mul i32 %l, 4
  %q0 = getelementptr i32, ptr addrspace(1) %out, i32 %o
  store i32 %a, ptr addrspace(1) %q0
  %q1 = getelementptr i32, ptr addrspace(1) %q0, i32 1
  store i32 %b, ptr addrspace(1) %q1
  %q2 = getelementptr i32, ptr addrspace(1) %q0, i32 2
  store i32 %c, ptr addrspace(1) %q2
  %q3 = getelementptr i32, ptr addrspace(1) %q0, i32 3
  store i32 %d, ptr addrspace(1) %q3
  ret void
}
)";

}  // namespace

TEST_CASE("v_permlane16_swap_b32 and v_permlane32_swap_b32 exchange vdst's odd rows (halves) with vsrc's even ones") {
  const auto bytes = weft::testing::compile_ll(kSwaps, "gfx950");
  const std::string listing = listing_of(bytes);
  for (const char* form : {"v_permlane16_swap_b32", "v_permlane32_swap_b32"})
    REQUIRE_MESSAGE(listing.find(form) != std::string::npos, form);
  weft::testing::check_listing_matches_objdump(bytes, Arch::Gfx950);
  const CodeObject code = CodeObject::load(bytes);
  std::vector<uint32_t> x(64), y(64);
  for (int l = 0; l < 64; ++l) x[l] = static_cast<uint32_t>(rng()()), y[l] = static_cast<uint32_t>(rng()());
  GlobalMemory mem;
  const uint64_t px = upload(mem, x, "x"), py = upload(mem, y, "y"), po = upload(mem, std::vector<uint8_t>(64 * 16, 0xCD), "out");
  LaunchOptions o;
  o.block = {64, 1, 1};
  const ArgValue args[] = {ArgValue::pointer(px), ArgValue::pointer(py), ArgValue::pointer(po)};
  o.kernarg = pack_kernel_args(code.kernel("swaps"), args);
  run_kernel(code, "swaps", mem, o);
  const auto out = download<uint32_t>(mem, po, 64 * 4);
  for (int l = 0; l < 64; ++l) {
    const bool odd_row = (l / 16) % 2 == 1, high_half = l >= 32;
    CHECK_MESSAGE(out[4 * l] == (odd_row ? y[l - 16] : x[l]), "permlane16 vdst, lane " << l);
    CHECK_MESSAGE(out[4 * l + 1] == (odd_row ? y[l] : x[l + 16]), "permlane16 vsrc, lane " << l);
    CHECK_MESSAGE(out[4 * l + 2] == (high_half ? y[l - 32] : x[l]), "permlane32 vdst, lane " << l);
    CHECK_MESSAGE(out[4 * l + 3] == (high_half ? y[l] : x[l + 32]), "permlane32 vsrc, lane " << l);
  }
}
