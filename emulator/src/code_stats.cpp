// Kernel statistics from a code object: metadata, the descriptor cross-check, occupancy and
// static instruction counts.
//
// The occupancy model (waves per SIMD), from LLVM's AMDGPU back end (AMDGPUBaseInfo.cpp and
// GCNSubtarget.cpp, which compute the "Occupancy" llc prints) and AMD's CDNA3/CDNA4 documents:
// - a SIMD holds at most 8 waves on gfx90a and later (LLVM's getMaxWavesPerEU); a CU has 4 SIMDs;
// - VGPRs: gfx90a and later have one unified file of 512 registers per lane per SIMD shared by
//   VGPRs and AGPRs, allocated in granules of 8 (getTotalNumVGPRs, getVGPRAllocGranule); a wave
//   is allocated what its kernel descriptor says (at least align(.vgpr_count, 8)), so waves =
//   512 / that;
// - SGPRs: the GFX8+ table of getOccupancyWithNumSGPRs: up to 80 SGPRs 10 waves, 88 9, 100 8,
//   more 7 (above this target's maximum of 8 except past 100);
// - LDS: 64 KiB per CU on gfx942 (MI300 ISA guide, "Local Data Share") and 160 KiB on gfx950
//   (CDNA4 ISA guide; LLVM's getAddressableLocalMemorySize); as many workgroups fit in a CU as
//   the static LDS allows, their waves spread over the 4 SIMDs (waves = ceil(groups * waves per
//   group / 4)); LDS allocation granularity is not modelled;
// - the workgroup: at most 32 waves per CU, and at most 16 workgroups of more than one wave
//   (one barrier each; getMaxWorkGroupsPerCU), by the kernel's .max_flat_workgroup_size.
// tests/emulator/test_code_stats.cpp checks this model against the occupancy llc-22 prints.
#include "weft/emulator/code_stats.h"

#include <algorithm>

#include "weft/dsl/error.h"
#include "weft/emulator/isa.h"

namespace weft::emu {
namespace {

constexpr int kMaxWavesPerSimd = 8, kSimdsPerCu = 4, kMaxWorkgroupsPerCu = 16;
constexpr uint32_t kUnifiedVgprs = 512, kVgprGranule = 8;

uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }

uint32_t lds_bytes_per_cu(Arch arch) { return arch == Arch::Gfx950 ? 160 * 1024 : 64 * 1024; }

int waves_by_sgprs(uint32_t sgprs) {
  const int waves = sgprs <= 80 ? 10 : sgprs <= 88 ? 9 : sgprs <= 100 ? 8 : 7;
  return std::min(waves, kMaxWavesPerSimd);
}

// Waves per SIMD when `groups` workgroups of `waves_per_group` waves share a CU.
int waves_for_groups(int groups, int waves_per_group) {
  return std::min(kMaxWavesPerSimd, ceil_div(groups * waves_per_group, kSimdsPerCu));
}

// The instruction's key for the counts: its mnemonic, and " lds" for MUBUF loads into LDS.
std::string mnemonic_key(const Inst& in) {
  std::string m = in.info->mnemonic;
  if (in.family == Family::MUBUF && ((in.word[0] >> 16) & 1)) m += " lds";
  return m;
}

void count_instructions(const CodeObject& code, const Kernel& k, KernelStats& s) {
  const auto bytes = code.code_at(k.code_address, k.code_size);
  s.code_bytes = bytes.size();
  for (size_t off = 0; off < bytes.size();) {
    CodeLine line;
    line.offset = k.code_address - code.text_address() + off;
    const auto inst = decode(bytes.subspan(off), code.arch());
    if (inst) {
      line.mnemonic = mnemonic_key(*inst);
      line.text = disassemble(*inst, code.arch()).value_or(inst->info->mnemonic);
      off += inst->size;
    } else {
      line.mnemonic = line.text = ".long";
      off += 4;
    }
    ++s.instructions[line.mnemonic];
    ++s.instruction_total;
    s.code.push_back(std::move(line));
  }
}

[[noreturn]] void disagree(const Kernel& k, const std::string& field, uint64_t metadata, uint64_t descriptor) {
  throw Error("kernel " + k.name + ": the metadata note and the kernel descriptor disagree on " + field + " (metadata " +
              std::to_string(metadata) + ", descriptor " + std::to_string(descriptor) + ")");
}

// The descriptor holds the same facts in its own form (llvm/Support/AMDHSAKernelDescriptor.h):
// segment sizes in bytes, the AGPR base in ACCUM_OFFSET, and the VGPRs a wave is allocated in
// blocks of 8 minus one (COMPUTE_PGM_RSRC1 bits 5:0 on gfx90a and later). LLVM 22 may allocate
// more VGPRs than the kernel uses, as many as keep the occupancy its other limits allow, so the
// allocation must cover the metadata's count but may exceed it.
uint32_t allocated_vgprs(const KernelDescriptor& d) { return ((d.rsrc1 & 0x3f) + 1) * kVgprGranule; }

void cross_check(const Kernel& k) {
  const KernelDescriptor& d = k.descriptor;
  if (d.group_segment_fixed_size != k.group_segment_fixed_size)
    disagree(k, "the LDS size (group segment)", k.group_segment_fixed_size, d.group_segment_fixed_size);
  if (d.private_segment_fixed_size != k.private_segment_fixed_size)
    disagree(k, "the scratch size (private segment)", k.private_segment_fixed_size, d.private_segment_fixed_size);
  if (allocated_vgprs(d) < k.vgpr_count)
    disagree(k, "the VGPRs (the descriptor allocates fewer than the kernel uses)", k.vgpr_count, allocated_vgprs(d));
  if (k.agpr_count > 0 && static_cast<uint32_t>(d.accum_offset()) + k.agpr_count != k.vgpr_count)
    disagree(k, "the AGPR base (accum_offset + AGPRs = VGPRs)", k.vgpr_count, static_cast<uint32_t>(d.accum_offset()) + k.agpr_count);
}

}  // namespace

Occupancy occupancy(Arch arch, uint32_t vgprs, uint32_t sgprs, uint32_t lds_bytes, uint32_t workgroup_size, uint32_t wavefront_size) {
  Occupancy o;
  o.max_waves_per_simd = kMaxWavesPerSimd;
  o.lds_bytes_per_cu = lds_bytes_per_cu(arch);
  o.waves_per_workgroup = std::max(1, ceil_div(static_cast<int>(std::max(workgroup_size, 1u)), static_cast<int>(std::max(wavefront_size, 1u))));
  o.by_vgprs = std::min<int>(kMaxWavesPerSimd, kUnifiedVgprs / align_up(std::max(vgprs, 1u), kVgprGranule));
  o.by_sgprs = waves_by_sgprs(sgprs);
  // A one-wave workgroup needs no barrier, so only multi-wave ones count against the 16.
  const int groups_by_waves = kMaxWavesPerSimd * kSimdsPerCu / o.waves_per_workgroup;
  const int groups = o.waves_per_workgroup == 1 ? groups_by_waves : std::min(kMaxWorkgroupsPerCu, groups_by_waves);
  o.by_workgroup = waves_for_groups(groups, o.waves_per_workgroup);
  o.by_lds = lds_bytes == 0 ? kMaxWavesPerSimd
                            : waves_for_groups(static_cast<int>(o.lds_bytes_per_cu / lds_bytes), o.waves_per_workgroup);
  o.waves_per_simd = std::min({kMaxWavesPerSimd, o.by_vgprs, o.by_sgprs, o.by_lds, o.by_workgroup});
  // Every limit that binds, LDS and the workgroup first: LLVM raises a kernel's VGPR allocation
  // to what the other limits allow, so a VGPR limit equal to another one is usually its echo.
  const std::pair<int, const char*> limits[] = {{o.by_lds, "lds"}, {o.by_workgroup, "workgroup"}, {o.by_sgprs, "sgprs"}, {o.by_vgprs, "vgprs"}};
  for (const auto& [waves, name] : limits)
    if (o.waves_per_simd < kMaxWavesPerSimd && waves == o.waves_per_simd) o.limited_by += (o.limited_by.empty() ? "" : ",") + std::string(name);
  if (o.limited_by.empty()) o.limited_by = "none";
  return o;
}

uint64_t KernelStats::count(std::string_view mnemonic) const {
  const auto it = instructions.find(std::string(mnemonic));
  return it == instructions.end() ? 0 : it->second;
}

uint64_t KernelStats::count_prefix(std::string_view prefix) const {
  uint64_t n = 0;
  for (const auto& [m, c] : instructions)
    if (m.starts_with(prefix)) n += c;
  return n;
}

uint64_t KernelStats::count_text(std::string_view text) const {
  // Whole words: "s_load_dword" is not "s_load_dwordx2"; a query that ends at a separator
  // ("s_load_dword ") already ends a word.
  const bool ends_word = text.empty() || text.back() == ' ' || text.back() == ',';
  return static_cast<uint64_t>(std::count_if(code.begin(), code.end(), [&](const CodeLine& l) {
    return l.text.starts_with(text) &&
           (ends_word || l.text.size() == text.size() || l.text[text.size()] == ' ' || l.text[text.size()] == ',');
  }));
}

KernelStats kernel_stats(const CodeObject& code, const Kernel& k) {
  cross_check(k);
  KernelStats s;
  s.kernel = k.name;
  s.arch = code.arch();
  s.vgprs = k.vgpr_count;
  s.agprs = k.agpr_count;
  s.arch_vgprs = k.vgpr_count - std::min(k.agpr_count, k.vgpr_count);
  s.sgprs = k.sgpr_count;
  s.lds_bytes = k.group_segment_fixed_size;
  s.scratch_bytes = k.private_segment_fixed_size;
  s.vgpr_spills = k.vgpr_spill_count;
  s.sgpr_spills = k.sgpr_spill_count;
  s.wavefront_size = k.wavefront_size;
  s.max_flat_workgroup_size = k.max_flat_workgroup_size;
  s.allocated_vgprs = allocated_vgprs(k.descriptor);
  s.occupancy = occupancy(code.arch(), s.allocated_vgprs, k.sgpr_count, k.group_segment_fixed_size, k.max_flat_workgroup_size, k.wavefront_size);
  count_instructions(code, k, s);
  return s;
}

std::vector<KernelStats> code_object_stats(const CodeObject& code) {
  std::vector<KernelStats> all;
  for (const Kernel& k : code.kernels()) all.push_back(kernel_stats(code, k));
  return all;
}

KernelStats kernel_stats(std::span<const uint8_t> elf) {
  const CodeObject code = CodeObject::load(std::vector<uint8_t>(elf.begin(), elf.end()));
  if (code.kernels().size() != 1)
    throw Error("kernel_stats: the code object has " + std::to_string(code.kernels().size()) +
                " kernels; pass the CodeObject and the kernel to look at one of several");
  return kernel_stats(code, code.kernels().front());
}

}  // namespace weft::emu
