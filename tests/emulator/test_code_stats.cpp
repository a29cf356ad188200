// Kernel statistics against independent oracles: llc-22's own report of each kernel it compiles
// (the "; NumVgprs:", "; ScratchSize:", "; Occupancy:" ... comments of its assembly output) for
// registers, LDS, scratch, spills and occupancy, and llvm-objdump-22's listing for the static
// instruction counts. Kernels vary at random (seed printed, WEFT_TEST_SEED replays it) in LDS
// size, workgroup size, VGPR/AGPR/SGPR pressure, scratch and MFMA count, on both targets.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "kernel_io.h"
#include "llvm_oracle.h"
#include "toolchain.h"
#include "weft/emulator/code_stats.h"

using namespace weft::emu;
using weft::testing::error_of;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 r = [] {
    uint64_t seed = std::random_device{}();
    if (const char* s = std::getenv("WEFT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    std::cerr << "code stats tests: random seed " << seed << " (WEFT_TEST_SEED replays it)\n";
    return std::mt19937_64(seed);
  }();
  return r;
}
int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng()); }

struct Variant {
  int lds_words = 0, workgroup = 64, vgpr = -1, agpr = -1, sgpr = -1, scratch_words = 0, mfmas = 1;
  bool spill = false;  // a kernel that must spill VGPRs
};

std::string describe(const Variant& v) {
  std::ostringstream s;
  s << "lds " << v.lds_words * 4 << " B, workgroup " << v.workgroup << ", clobbers v" << v.vgpr << " a" << v.agpr << " s" << v.sgpr
    << ", scratch " << v.scratch_words * 4 << " B, " << v.mfmas << " MFMAs" << (v.spill ? ", spilling" : "");
  return s.str();
}

// A kernel with `mfmas` chained 16x16x16 bf16 MFMAs (the gfx942 and gfx950 shape alike), an LDS
// array, a private array indexed at run time (scratch), inline-asm register clobbers for
// pressure, and for `spill` 128 live floats under a 32-VGPR budget.
std::string kernel_ir(const Variant& v) {
  std::ostringstream s;
  s << "target triple = \"amdgcn-amd-amdhsa\"\n"
       "declare i32 @llvm.amdgcn.workitem.id.x()\n"
       "declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16>, <4 x i16>, <4 x float>, i32, i32, i32)\n";
  if (v.lds_words) s << "@lds = internal addrspace(3) global [" << v.lds_words << " x i32] undef\n";
  s << "define amdgpu_kernel void @k(ptr addrspace(1) %out, <4 x i16> %a, <4 x i16> %b, i32 %i) #0 {\n"
       "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n";
  if (v.lds_words) {
    s << "  %lp = getelementptr [" << v.lds_words << " x i32], ptr addrspace(3) @lds, i32 0, i32 %t\n"
      << "  store volatile i32 %t, ptr addrspace(3) %lp\n";
  }
  if (v.scratch_words) {
    s << "  %priv = alloca [" << v.scratch_words << " x i32], align 4, addrspace(5)\n"
      << "  %pp = getelementptr [" << v.scratch_words << " x i32], ptr addrspace(5) %priv, i32 0, i32 %i\n"
      << "  store volatile i32 %t, ptr addrspace(5) %pp\n";
  }
  std::string clobbers;
  for (auto [kind, n] : {std::pair{'v', v.vgpr}, std::pair{'a', v.agpr}, std::pair{'s', v.sgpr}})
    if (n >= 0) clobbers += std::string(clobbers.empty() ? "" : ",") + "~{" + kind + std::to_string(n) + "}";
  if (!clobbers.empty()) s << "  call void asm sideeffect \"\", \"" << clobbers << "\"()\n";
  s << "  %c0 = bitcast <4 x i32> zeroinitializer to <4 x float>\n";
  for (int m = 0; m < v.mfmas; ++m)
    s << "  %c" << m + 1 << " = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16> %a, <4 x i16> %b, <4 x float> %c" << m
      << ", i32 0, i32 0, i32 0)\n";
  s << "  %q = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %t\n"
    << "  store <4 x float> %c" << v.mfmas << ", ptr addrspace(1) %q\n";
  if (v.spill) {
    s << "  %sp = getelementptr <128 x float>, ptr addrspace(1) %out, i32 %t\n"
         "  %x = load volatile <128 x float>, ptr addrspace(1) %sp\n"
         "  %y = load volatile <128 x float>, ptr addrspace(1) %sp\n"
         "  %z = fadd <128 x float> %x, %y\n"
         "  store <128 x float> %z, ptr addrspace(1) %sp\n";
  }
  s << "  ret void\n}\n"
    << "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"" << v.workgroup << "," << v.workgroup << "\""
    << (v.spill ? " \"amdgpu-num-vgpr\"=\"32\"" : "") << " }\n";
  return s.str();
}

// llc's assembly output for the kernel (its comments are the oracle).
std::string llc_assembly(const std::string& ir, const std::string& mcpu) {
  char dir_template[] = "/tmp/weft-stats-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  REQUIRE(dir);
  const std::string path = std::string(dir) + "/k.ll";
  std::ofstream(path) << ir;
  const std::string out = weft::testing::run_command(std::string(WEFT_LLC) + " -mtriple=amdgcn-amd-amdhsa -mcpu=" + mcpu + " " + path + " -o -");
  weft::testing::run_command("rm -rf " + std::string(dir));
  return out;
}

// The number after `key` in llc's output ("; Occupancy: 8", "    .vgpr_spill_count: 80").
uint32_t reported(const std::string& assembly, const std::string& key) {
  const size_t at = assembly.find(key);
  REQUIRE_MESSAGE(at != std::string::npos, "llc printed no '" << key << "'");
  return static_cast<uint32_t>(std::strtoul(assembly.c_str() + at + key.size(), nullptr, 10));
}

// llvm-objdump's mnemonic counts over the kernel's code (not the padding after it), keyed as
// KernelStats keys them.
std::map<std::string, uint64_t> objdump_counts(const std::vector<uint8_t>& bytes, Arch arch) {
  const Kernel k = CodeObject::load(bytes).kernel("k");
  std::map<std::string, uint64_t> counts;
  for (const auto& [address, inst] : weft::testing::objdump_code_object(bytes, arch_name(arch))) {
    if (address < k.code_address || address >= k.code_address + k.code_size) continue;
    if (!inst.text) {
      ++counts[".long"];
      continue;
    }
    const std::string& t = *inst.text;
    std::string key = t.substr(0, t.find(' '));
    if (key.starts_with("buffer_load") && t.size() > 4 && t.ends_with(" lds")) key += " lds";
    ++counts[key];
  }
  return counts;
}

uint32_t align4(uint32_t v) { return (v + 3) / 4 * 4; }

void check_against_llvm(const Variant& v, Arch arch) {
  INFO(std::string(arch_name(arch)) << ": " << describe(v));
  const std::string ir = kernel_ir(v);
  const std::string assembly = llc_assembly(ir, arch_name(arch));
  const auto bytes = weft::testing::compile_ll(ir, arch_name(arch));
  const KernelStats s = kernel_stats(bytes);
  CHECK(s.kernel == "k");
  CHECK(s.arch == arch);
  const uint32_t agprs = reported(assembly, "; NumAgprs: "), vgprs = reported(assembly, "; NumVgprs: ");
  CHECK(s.agprs == agprs);
  CHECK(s.vgprs == reported(assembly, "; TotalNumVgprs: "));
  CHECK(s.allocated_vgprs == (reported(assembly, "; VGPRBlocks: ") + 1) * 8);
  CHECK(s.allocated_vgprs >= s.vgprs);
  CHECK(s.arch_vgprs == (agprs ? align4(vgprs) : vgprs));
  CHECK(s.sgprs == reported(assembly, "; TotalNumSgprs: "));
  CHECK(s.scratch_bytes == reported(assembly, "; ScratchSize: "));
  CHECK(s.lds_bytes == reported(assembly, "; LDSByteSize: "));
  CHECK(s.lds_bytes == static_cast<uint32_t>(v.lds_words * 4));
  CHECK(s.vgpr_spills == reported(assembly, ".vgpr_spill_count: "));
  CHECK(s.sgpr_spills == reported(assembly, ".sgpr_spill_count: "));
  if (v.spill) CHECK(s.vgpr_spills > 0);
  CHECK(s.max_flat_workgroup_size == static_cast<uint32_t>(v.workgroup));
  CHECK_MESSAGE(s.occupancy.waves_per_simd == static_cast<int>(reported(assembly, "; Occupancy: ")),
                "model: vgprs " << s.occupancy.by_vgprs << ", sgprs " << s.occupancy.by_sgprs << ", lds " << s.occupancy.by_lds
                                << ", workgroup " << s.occupancy.by_workgroup);
  CHECK(s.count_prefix("v_mfma_") == static_cast<uint64_t>(v.mfmas));
  CHECK(s.code_bytes == reported(assembly, "; codeLenInByte = "));
  const auto want = objdump_counts(bytes, arch);
  for (const auto& [m, n] : want) CHECK_MESSAGE(s.count(m) == n, m << ": weft " << s.count(m) << ", llvm-objdump " << n);
  for (const auto& [m, n] : s.instructions) CHECK_MESSAGE(want.count(m), m << ": weft counts " << n << ", llvm-objdump none");
  uint64_t total = 0;
  for (const auto& [m, n] : s.instructions) total += n;
  CHECK(s.instruction_total == total);
  CHECK(s.code.size() == total);
  CHECK(s.count_text("s_endpgm") == 1);
  // Whole words, with or without the separator after the mnemonic.
  for (const CodeLine& l : s.code) {
    const size_t space = l.text.find(' ');
    if (space == std::string::npos) continue;
    const std::string word = l.text.substr(0, space);
    CHECK(s.count_text(word + " ") == s.count_text(word));
    CHECK(s.count_text(word + " ") == s.count(word));
    break;
  }
}

}  // namespace

TEST_CASE("kernel statistics agree with llc's report and llvm-objdump's listing") {
  const int workgroups[] = {64, 128, 192, 256, 512, 1024};
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    const int max_lds_words = (arch == Arch::Gfx950 ? 160 : 64) * 1024 / 4;
    for (int trial = 0; trial < 6; ++trial) {
      Variant v;
      v.workgroup = workgroups[uniform(0, 5)];
      v.lds_words = uniform(0, 3) == 0 ? 0 : uniform(v.workgroup, max_lds_words);
      v.vgpr = uniform(0, 2) ? uniform(0, 255) : -1;
      v.agpr = uniform(0, 1) ? uniform(0, 255) : -1;
      v.sgpr = uniform(0, 1) ? uniform(0, 101) : -1;
      v.scratch_words = uniform(0, 2) == 0 ? uniform(1, 64) : 0;
      v.mfmas = uniform(1, 6);
      check_against_llvm(v, arch);
    }
    Variant spilling;
    spilling.spill = true;
    check_against_llvm(spilling, arch);
  }
}

TEST_CASE("the occupancy model at its edges") {
  // The unified file: 512 registers per lane in granules of 8.
  CHECK(occupancy(Arch::Gfx950, 64, 16, 0, 256, 64).waves_per_simd == 8);
  CHECK(occupancy(Arch::Gfx950, 65, 16, 0, 256, 64).by_vgprs == 7);
  CHECK(occupancy(Arch::Gfx942, 512, 16, 0, 256, 64).by_vgprs == 1);
  CHECK(occupancy(Arch::Gfx942, 256, 16, 0, 256, 64).limited_by == "vgprs");
  CHECK(occupancy(Arch::Gfx942, 16, 16, 0, 256, 64).limited_by == "none");
  CHECK(occupancy(Arch::Gfx942, 200, 16, 32 * 1024, 256, 64).limited_by == "lds,vgprs");  // both allow 2
  // LDS: 64 KiB per CU on gfx942, 160 KiB on gfx950; a 256-thread workgroup is 4 waves, one per SIMD.
  const Occupancy g942 = occupancy(Arch::Gfx942, 32, 16, 64 * 1024, 256, 64), g950 = occupancy(Arch::Gfx950, 32, 16, 64 * 1024, 256, 64);
  CHECK(g942.by_lds == 1);
  CHECK(g942.limited_by == "lds");
  CHECK(g950.by_lds == 2);
  CHECK(g942.lds_bytes_per_cu == 64 * 1024);
  CHECK(g950.lds_bytes_per_cu == 160 * 1024);
  // Multi-wave workgroups: at most 16 per CU; one-wave workgroups are not counted against it.
  CHECK(occupancy(Arch::Gfx950, 8, 16, 0, 128, 64).by_workgroup == 8);
  CHECK(occupancy(Arch::Gfx950, 8, 16, 0, 64, 64).by_workgroup == 8);
  CHECK(occupancy(Arch::Gfx950, 8, 16, 0, 65, 64).by_workgroup == 8);
  CHECK(occupancy(Arch::Gfx950, 8, 108, 0, 256, 64).by_sgprs == 7);
}

TEST_CASE("kernel_stats of a code object with several kernels asks which one") {
  const std::string two = R"(target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @first() { ret void }
define amdgpu_kernel void @second() { ret void }
)";
  const auto bytes = weft::testing::compile_ll(two, "gfx950");
  const std::string e = error_of([&] { kernel_stats(bytes); });
  CHECK(e.find("2 kernels") != std::string::npos);
  const CodeObject code = CodeObject::load(bytes);
  const auto all = code_object_stats(code);
  REQUIRE(all.size() == 2);
  CHECK(all[0].kernel == "first");
  CHECK(all[1].kernel == "second");
  CHECK(all[1].count("s_endpgm") == 1);
  CHECK(error_of([&] { kernel_stats(std::vector<uint8_t>{1, 2, 3}); }) != "");
}

TEST_CASE("a descriptor that disagrees with the metadata is an error naming the field") {
  Variant v;
  v.lds_words = 12345;  // 49380 bytes: a value that occurs once, in the descriptor's first field
  auto bytes = weft::testing::compile_ll(kernel_ir(v), "gfx942");
  const uint8_t le[4] = {0xe4, 0xc0, 0x00, 0x00};
  const auto at = std::search(bytes.begin(), bytes.end(), std::begin(le), std::end(le));
  REQUIRE(at != bytes.end());
  REQUIRE(std::search(at + 1, bytes.end(), std::begin(le), std::end(le)) == bytes.end());
  CHECK(kernel_stats(bytes).lds_bytes == 49380);
  at[0] = 0xe8;  // the descriptor now says 49384
  const std::string e = error_of([&] { kernel_stats(bytes); });
  INFO(e);
  CHECK(e.find("disagree on the LDS size") != std::string::npos);
  CHECK(e.find("metadata 49380, descriptor 49384") != std::string::npos);
}

TEST_CASE("MUBUF loads into LDS count apart from loads into registers") {
  const std::string ir = R"(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)
declare <4 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v4i32(ptr addrspace(8), i32, i32, i32)
@tile = internal addrspace(3) global [1024 x i32] undef
define amdgpu_kernel void @k(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 4096, i32 159744)
  %o = mul i32 %t, 16
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %r, ptr addrspace(3) @tile, i32 16, i32 %o, i32 0, i32 0, i32 0)
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %r, ptr addrspace(3) getelementptr (i32, ptr addrspace(3) @tile, i32 256), i32 16, i32 %o, i32 1024, i32 0, i32 0)
  %v = call <4 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v4i32(ptr addrspace(8) %r, i32 %o, i32 0, i32 0)
  %q = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %t
  store <4 x i32> %v, ptr addrspace(1) %q
  ret void
}
)";
  const auto bytes = weft::testing::compile_ll(ir, "gfx950");
  const KernelStats s = kernel_stats(bytes);
  CHECK(s.count("buffer_load_dwordx4 lds") == 2);
  CHECK(s.count("buffer_load_dwordx4") == 1);
  CHECK(s.count_prefix("buffer_load_dwordx4") == 3);
  const auto want = objdump_counts(bytes, Arch::Gfx950);
  CHECK(want.at("buffer_load_dwordx4 lds") == 2);
  CHECK(s.instructions == want);
  CHECK(s.lds_bytes == 4096);
}
