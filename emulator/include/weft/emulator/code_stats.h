// What a kernel's code object says about it: registers, LDS, scratch and spills from the AMDGPU
// metadata note (cross-checked against the 64-byte kernel descriptor), the occupancy they allow
// on a CDNA3/CDNA4 compute unit, and its static instruction counts from the emulator's decoder.
// `weft stats` prints them; tests assert on them (no scratch, LDS within the target's limit, the
// number of MFMAs a kernel issues).
//
//   const emu::KernelStats s = emu::kernel_stats(code_object_bytes);  // the code object's one kernel
//   CHECK(s.scratch_bytes == 0);
//   CHECK(s.count_prefix("v_mfma_") == 16);
//   CHECK(s.count("buffer_load_dwordx4 lds") > 0);
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/emulator/code_object.h"

namespace weft::emu {

// Waves per SIMD a kernel can keep resident, and what limits it. Each `by_*` is the limit that
// resource alone sets; `waves_per_simd` is the smallest (the hardware's maximum is 8 on gfx90a and
// later). The model and its sources are in code_stats.cpp.
struct Occupancy {
  int waves_per_simd = 0;
  int by_vgprs = 0, by_sgprs = 0, by_lds = 0, by_workgroup = 0;
  int max_waves_per_simd = 0;      // the target's maximum
  uint32_t lds_bytes_per_cu = 0;   // 64 KiB on gfx942, 160 KiB on gfx950
  int waves_per_workgroup = 0;     // from .max_flat_workgroup_size and the wave size
  // The limits that bind, comma-separated in the order lds, workgroup, sgprs, vgprs ("lds,vgprs"),
  // or "none" when the target's maximum is reached.
  std::string limited_by;
};

// One decoded instruction of a kernel's code.
struct CodeLine {
  uint64_t offset = 0;   // in .text
  std::string mnemonic;  // the instruction key used by KernelStats::instructions
  std::string text;      // as llvm-objdump prints it (the mnemonic and words where weft does not print it)
};

struct KernelStats {
  std::string kernel;
  Arch arch = Arch::Gfx942;
  // From the metadata note. `vgprs` is the unified count a wave allocates (architectural VGPRs up
  // to the AGPR base, then the AGPRs); `arch_vgprs` = vgprs - agprs.
  uint32_t vgprs = 0, arch_vgprs = 0, agprs = 0, sgprs = 0;
  // From the kernel descriptor: the unified VGPRs a wave is allocated (blocks of 8). LLVM may
  // allocate more than `vgprs`, up to what keeps the occupancy the other limits allow.
  uint32_t allocated_vgprs = 0;
  uint32_t lds_bytes = 0;      // .group_segment_fixed_size (static LDS)
  uint32_t scratch_bytes = 0;  // .private_segment_fixed_size, per work-item
  uint32_t vgpr_spills = 0, sgpr_spills = 0;
  uint32_t wavefront_size = 64, max_flat_workgroup_size = 0;
  uint64_t code_bytes = 0;
  Occupancy occupancy;
  // Static instruction counts by mnemonic (LLVM's, with its encoding suffix, e.g. "v_add_f32_e32",
  // "v_mfma_f32_16x16x32_bf16"). MUBUF loads into LDS count under "<mnemonic> lds" (as
  // llvm-objdump prints the modifier: "buffer_load_dwordx4 lds"); words that do not decode
  // count under ".long".
  std::map<std::string, uint64_t> instructions;
  uint64_t instruction_total = 0;
  std::vector<CodeLine> code;  // every instruction in order, for finer questions ("s_setprio 1")

  uint64_t count(std::string_view mnemonic) const;
  uint64_t count_prefix(std::string_view prefix) const;  // summed over mnemonics starting with it
  // Instructions whose printed text starts with `text` ("s_setprio 1") as whole words: "s_load_dword"
  // and "s_load_dword " count s_load_dword, never s_load_dwordx2.
  uint64_t count_text(std::string_view text) const;
};

// The statistics of `kernel` of `code`. Throws weft::Error when the metadata and the kernel
// descriptor disagree (LDS, scratch, fewer VGPRs allocated than used, AGPR base), naming the field.
KernelStats kernel_stats(const CodeObject& code, const Kernel& kernel);
// Every kernel of a code object, in its order.
std::vector<KernelStats> code_object_stats(const CodeObject& code);
// The one kernel of a code object (what weft compiles); a weft::Error if it has several or none.
KernelStats kernel_stats(std::span<const uint8_t> elf);

// The occupancy model alone (for tests of the model).
Occupancy occupancy(Arch arch, uint32_t vgprs, uint32_t sgprs, uint32_t lds_bytes, uint32_t workgroup_size, uint32_t wavefront_size);

}  // namespace weft::emu
