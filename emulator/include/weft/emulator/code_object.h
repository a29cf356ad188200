// HSA code objects as LLVM 22 writes them for gfx942 and gfx950: the ELF file, its kernels,
// their 64-byte kernel descriptors and the AMDGPU metadata note. Loading checks every offset
// and size against the file, so a truncated or corrupt file is an error, never a crash.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace weft::emu {

enum class Arch { Gfx942, Gfx950 };
const char* arch_name(Arch a);  // "gfx942", "gfx950"

// One explicit or hidden kernel argument, from the metadata's `.args`.
struct KernelArg {
  std::string name;           // empty for hidden arguments
  uint32_t offset = 0, size = 0;
  std::string value_kind;     // "global_buffer", "by_value", "hidden_block_count_x", ...
  std::string address_space;  // "global", "generic", ... for pointers; empty otherwise
  bool is_hidden() const { return value_kind.rfind("hidden_", 0) == 0; }
};

// The fields of the 64-byte kernel descriptor (llvm/Support/AMDHSAKernelDescriptor.h).
struct KernelDescriptor {
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  uint32_t kernarg_size = 0;
  int64_t kernel_code_entry_byte_offset = 0;  // from the descriptor's own address
  uint32_t rsrc3 = 0, rsrc1 = 0, rsrc2 = 0;
  uint16_t code_properties = 0;
  uint16_t kernarg_preload = 0;

  // Decoded fields.
  int user_sgpr_count() const { return static_cast<int>((rsrc2 >> 1) & 0x1f); }
  bool private_segment_enabled() const { return rsrc2 & 1; }
  bool workgroup_id_enabled(int dim) const { return (rsrc2 >> (7 + dim)) & 1; }
  bool workgroup_info_enabled() const { return (rsrc2 >> 10) & 1; }
  int workitem_id_dims() const { return static_cast<int>(((rsrc2 >> 11) & 3) + 1); }  // 1: X, 2: XY, 3: XYZ
  int accum_offset() const { return static_cast<int>(((rsrc3 & 0x3f) + 1) * 4); }       // first AGPR in the unified file
  bool has_private_segment_buffer() const { return code_properties & (1 << 0); }
  bool has_dispatch_ptr() const { return code_properties & (1 << 1); }
  bool has_queue_ptr() const { return code_properties & (1 << 2); }
  bool has_kernarg_segment_ptr() const { return code_properties & (1 << 3); }
  bool has_dispatch_id() const { return code_properties & (1 << 4); }
  bool has_flat_scratch_init() const { return code_properties & (1 << 5); }
  bool has_private_segment_size() const { return code_properties & (1 << 6); }
  int kernarg_preload_dwords() const { return kernarg_preload & 0x7f; }
  int kernarg_preload_offset() const { return kernarg_preload >> 7; }  // in dwords
};

struct Kernel {
  std::string name;
  uint64_t code_address = 0;  // virtual address of the first instruction
  uint64_t code_size = 0;     // bytes, from the symbol (may be 0 if the symbol has no size)
  KernelDescriptor descriptor;
  // From the metadata note.
  std::vector<KernelArg> args;
  uint32_t kernarg_segment_size = 0;
  uint32_t kernarg_segment_align = 0;
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  // On gfx90a and later `.vgpr_count` counts the unified register file a wave allocates: the
  // architectural VGPRs up to the AGPR base (accum_offset, a multiple of 4) plus the AGPRs.
  uint32_t sgpr_count = 0, vgpr_count = 0, agpr_count = 0;
  uint32_t sgpr_spill_count = 0, vgpr_spill_count = 0;
  uint32_t wavefront_size = 64;
  uint32_t max_flat_workgroup_size = 0;
};

class CodeObject {
 public:
  // Parses a code object; throws weft::Error naming what is wrong with the file.
  static CodeObject load(std::vector<uint8_t> bytes);
  static CodeObject load_file(const std::string& path);

  Arch arch() const { return arch_; }
  uint32_t elf_flags() const { return flags_; }
  const std::vector<Kernel>& kernels() const { return kernels_; }
  // Throws weft::Error listing the kernels there are if `name` is not one of them.
  const Kernel& kernel(const std::string& name) const;

  // The executable code: `.text` and its virtual address.
  uint64_t text_address() const { return text_address_; }
  std::span<const uint8_t> text() const;
  // The bytes at a virtual address inside `.text`; throws if the range leaves `.text`.
  std::span<const uint8_t> code_at(uint64_t address, uint64_t size) const;

 private:
  std::vector<uint8_t> bytes_;
  Arch arch_ = Arch::Gfx942;
  uint32_t flags_ = 0;
  uint64_t text_address_ = 0, text_offset_ = 0, text_size_ = 0;
  std::vector<Kernel> kernels_;
  friend class CodeObjectParser;
};

}  // namespace weft::emu
