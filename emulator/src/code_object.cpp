// Code-object parsing. Every read goes through Bytes::read, which checks the range against
// the file first: the loader is fed truncated and mutated files by the fuzz test.
#include "weft/emulator/code_object.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#define MSGPACK_NO_BOOST
#include <msgpack.hpp>

#include "weft/dsl/error.h"

namespace weft::emu {
namespace {

constexpr uint16_t kMachineAmdgpu = 224;      // EM_AMDGPU
constexpr uint8_t kOsAbiAmdgpuHsa = 64;       // ELFOSABI_AMDGPU_HSA
constexpr uint32_t kNoteAmdgpuMetadata = 32;  // NT_AMDGPU_METADATA
constexpr uint32_t kMachGfx942 = 0x4c, kMachGfx950 = 0x4f;

[[noreturn]] void corrupt(const std::string& what) { throw Error("code object: " + what); }

class Bytes {
 public:
  explicit Bytes(const std::vector<uint8_t>& b) : b_(b) {}
  bool has(uint64_t offset, uint64_t size) const { return offset <= b_.size() && size <= b_.size() - offset; }
  void need(uint64_t offset, uint64_t size, const std::string& what) const {
    if (!has(offset, size))
      corrupt(what + " (bytes " + std::to_string(offset) + "+" + std::to_string(size) + ") lies outside the " +
              std::to_string(b_.size()) + "-byte file; is it truncated?");
  }
  template <class T>
  T read(uint64_t offset, const std::string& what) const {
    need(offset, sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + offset, sizeof(T));
    return v;
  }
  std::string cstring(uint64_t offset, uint64_t limit, const std::string& what) const {
    need(offset, 1, what);
    const uint64_t end = std::min<uint64_t>(limit, b_.size());
    std::string s;
    for (uint64_t i = offset; i < end && b_[i] != 0; ++i) s.push_back(static_cast<char>(b_[i]));
    return s;
  }
  const uint8_t* data() const { return b_.data(); }
  size_t size() const { return b_.size(); }

 private:
  const std::vector<uint8_t>& b_;
};

struct Section {
  std::string name;
  Elf64_Shdr header;
};

// ---- metadata (msgpack) ----

const msgpack::object* find_key(const msgpack::object& map, const std::string& key) {
  if (map.type != msgpack::type::MAP) return nullptr;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const auto& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && std::string(kv.key.via.str.ptr, kv.key.via.str.size) == key) return &kv.val;
  }
  return nullptr;
}

uint32_t get_u32(const msgpack::object& map, const std::string& key, uint32_t fallback = 0) {
  const msgpack::object* v = find_key(map, key);
  if (!v) return fallback;
  if (v->type != msgpack::type::POSITIVE_INTEGER || v->via.u64 > UINT32_MAX) corrupt("metadata field " + key + " is not a 32-bit count");
  return static_cast<uint32_t>(v->via.u64);
}

std::string get_str(const msgpack::object& map, const std::string& key) {
  const msgpack::object* v = find_key(map, key);
  if (!v) return "";
  if (v->type != msgpack::type::STR) corrupt("metadata field " + key + " is not a string");
  return std::string(v->via.str.ptr, v->via.str.size);
}

void read_kernel_metadata(const msgpack::object& m, Kernel& k) {
  k.kernarg_segment_size = get_u32(m, ".kernarg_segment_size");
  k.kernarg_segment_align = get_u32(m, ".kernarg_segment_align");
  k.group_segment_fixed_size = get_u32(m, ".group_segment_fixed_size");
  k.private_segment_fixed_size = get_u32(m, ".private_segment_fixed_size");
  k.sgpr_count = get_u32(m, ".sgpr_count");
  k.vgpr_count = get_u32(m, ".vgpr_count");
  k.agpr_count = get_u32(m, ".agpr_count");
  k.sgpr_spill_count = get_u32(m, ".sgpr_spill_count");
  k.vgpr_spill_count = get_u32(m, ".vgpr_spill_count");
  k.wavefront_size = get_u32(m, ".wavefront_size", 64);
  k.max_flat_workgroup_size = get_u32(m, ".max_flat_workgroup_size");
  if (const msgpack::object* args = find_key(m, ".args")) {
    if (args->type != msgpack::type::ARRAY) corrupt("kernel " + k.name + ": metadata .args is not a list");
    for (uint32_t i = 0; i < args->via.array.size; ++i) {
      const msgpack::object& a = args->via.array.ptr[i];
      KernelArg arg{get_str(a, ".name"), get_u32(a, ".offset"), get_u32(a, ".size"), get_str(a, ".value_kind"),
                    get_str(a, ".address_space")};
      if (uint64_t{arg.offset} + arg.size > k.kernarg_segment_size)
        corrupt("kernel " + k.name + ": argument " + std::to_string(i) + " ends past the kernarg segment");
      k.args.push_back(std::move(arg));
    }
  }
}

std::map<std::string, msgpack::object_handle> parse_metadata(const uint8_t* data, size_t size,
                                                             std::vector<msgpack::object_handle>& keep) {
  std::map<std::string, msgpack::object_handle> by_name;
  try {
    // No list, map or string in `size` bytes can hold more than `size` entries: the limits stop
    // a corrupt length field from making the parser allocate gigabytes.
    const msgpack::unpack_limit limit(size, size, size, size, size, 64);
    keep.push_back(msgpack::unpack(reinterpret_cast<const char*>(data), size, nullptr, nullptr, limit));
    const msgpack::object& root = keep.back().get();
    const msgpack::object* kernels = find_key(root, "amdhsa.kernels");
    if (!kernels || kernels->type != msgpack::type::ARRAY) corrupt("metadata has no amdhsa.kernels list");
    for (uint32_t i = 0; i < kernels->via.array.size; ++i) {
      const msgpack::object& k = kernels->via.array.ptr[i];
      by_name.emplace(get_str(k, ".name"), msgpack::object_handle(k, nullptr));
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    corrupt(std::string("the AMDGPU metadata note is not valid msgpack (") + e.what() + ")");
  }
  return by_name;
}

}  // namespace

const char* arch_name(Arch a) { return a == Arch::Gfx950 ? "gfx950" : "gfx942"; }

class CodeObjectParser {
 public:
  explicit CodeObjectParser(CodeObject& co) : co_(co), bytes_(co.bytes_) {}

  void parse() {
    read_header();
    read_sections();
    read_text();
    read_kernels();
  }

 private:
  void read_header() {
    if (bytes_.size() < sizeof(Elf64_Ehdr)) corrupt("file of " + std::to_string(bytes_.size()) + " bytes is too short for an ELF header");
    eh_ = bytes_.read<Elf64_Ehdr>(0, "ELF header");
    if (std::memcmp(eh_.e_ident, ELFMAG, SELFMAG) != 0) corrupt("not an ELF file (bad magic)");
    if (eh_.e_ident[EI_CLASS] != ELFCLASS64 || eh_.e_ident[EI_DATA] != ELFDATA2LSB) corrupt("not a little-endian ELF64 file");
    if (eh_.e_machine != kMachineAmdgpu) corrupt("ELF machine " + std::to_string(eh_.e_machine) + " is not AMDGPU (224)");
    if (eh_.e_ident[EI_OSABI] != kOsAbiAmdgpuHsa) corrupt("OS/ABI " + std::to_string(eh_.e_ident[EI_OSABI]) + " is not AMDGPU HSA (64)");
    co_.flags_ = eh_.e_flags;
    const uint32_t mach = eh_.e_flags & 0xff;
    if (mach == kMachGfx942) co_.arch_ = Arch::Gfx942;
    else if (mach == kMachGfx950) co_.arch_ = Arch::Gfx950;
    else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", mach);
      corrupt(std::string("GPU ") + hex + " in e_flags is not gfx942 (0x4c) or gfx950 (0x4f)");
    }
  }

  void read_sections() {
    if (eh_.e_shentsize != sizeof(Elf64_Shdr)) corrupt("section header size " + std::to_string(eh_.e_shentsize) + " is not 64");
    if (eh_.e_shnum == 0) corrupt("no section headers");
    bytes_.need(eh_.e_shoff, uint64_t{eh_.e_shnum} * sizeof(Elf64_Shdr), "section header table");
    std::vector<Elf64_Shdr> headers;
    for (uint16_t i = 0; i < eh_.e_shnum; ++i)
      headers.push_back(bytes_.read<Elf64_Shdr>(eh_.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), "section header"));
    if (eh_.e_shstrndx >= headers.size()) corrupt("section name table index is out of range");
    const Elf64_Shdr& names = headers[eh_.e_shstrndx];
    bytes_.need(names.sh_offset, names.sh_size, "section name table");
    for (const Elf64_Shdr& h : headers) {
      if (h.sh_type != SHT_NOBITS && h.sh_type != SHT_NULL) bytes_.need(h.sh_offset, h.sh_size, "a section's contents");
      if (h.sh_name >= names.sh_size) corrupt("a section name lies outside the name table");
      sections_.push_back({bytes_.cstring(names.sh_offset + h.sh_name, names.sh_offset + names.sh_size, "section name"), h});
    }
  }

  const Section* section(const std::string& name) const {
    for (const Section& s : sections_)
      if (s.name == name) return &s;
    return nullptr;
  }

  void read_text() {
    const Section* text = section(".text");
    if (!text) corrupt("no .text section");
    co_.text_address_ = text->header.sh_addr;
    co_.text_offset_ = text->header.sh_offset;
    co_.text_size_ = text->header.sh_size;
  }

  // The file offset of `size` bytes at virtual address `addr`, from the section holding them.
  uint64_t file_offset(uint64_t addr, uint64_t size, const std::string& what) const {
    for (const Section& s : sections_) {
      const Elf64_Shdr& h = s.header;
      if (h.sh_type == SHT_NOBITS || !(h.sh_flags & SHF_ALLOC)) continue;
      if (addr >= h.sh_addr && size <= h.sh_size && addr - h.sh_addr <= h.sh_size - size) return h.sh_offset + (addr - h.sh_addr);
    }
    corrupt(what + " at address " + std::to_string(addr) + " is in no loaded section");
  }

  struct Symbol {
    std::string name;
    Elf64_Sym sym;
  };

  std::vector<Symbol> symbols() const {
    const Section* symtab = section(".symtab");
    if (!symtab) symtab = section(".dynsym");
    if (!symtab) corrupt("no symbol table");
    if (symtab->header.sh_link >= sections_.size()) corrupt("the symbol table's string table index is out of range");
    const Elf64_Shdr& strtab = sections_[symtab->header.sh_link].header;
    std::vector<Symbol> out;
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= symtab->header.sh_size; off += sizeof(Elf64_Sym)) {
      auto sym = bytes_.read<Elf64_Sym>(symtab->header.sh_offset + off, "symbol");
      if (sym.st_name >= strtab.sh_size) corrupt("a symbol name lies outside its string table");
      out.push_back({bytes_.cstring(strtab.sh_offset + sym.st_name, strtab.sh_offset + strtab.sh_size, "symbol name"), sym});
    }
    return out;
  }

  // The descriptor of the note section that carries the msgpack metadata.
  std::pair<const uint8_t*, size_t> metadata_note() const {
    for (const Section& s : sections_) {
      if (s.header.sh_type != SHT_NOTE) continue;
      uint64_t off = s.header.sh_offset, end = s.header.sh_offset + s.header.sh_size;
      while (off + 12 <= end) {
        auto namesz = bytes_.read<uint32_t>(off, "note header"), descsz = bytes_.read<uint32_t>(off + 4, "note header");
        auto type = bytes_.read<uint32_t>(off + 8, "note header");
        uint64_t name_off = off + 12, desc_off = name_off + ((uint64_t{namesz} + 3) & ~uint64_t{3});
        uint64_t next = desc_off + ((uint64_t{descsz} + 3) & ~uint64_t{3});
        if (next > end) corrupt("a note runs past the end of its section");
        std::string name = bytes_.cstring(name_off, name_off + namesz, "note name");
        if (name == "AMDGPU" && type == kNoteAmdgpuMetadata) return {bytes_.data() + desc_off, descsz};
        off = next;
      }
    }
    corrupt("no AMDGPU metadata note (NT_AMDGPU_METADATA)");
  }

  KernelDescriptor read_descriptor(uint64_t offset) const {
    KernelDescriptor d;
    d.group_segment_fixed_size = bytes_.read<uint32_t>(offset + 0, "kernel descriptor");
    d.private_segment_fixed_size = bytes_.read<uint32_t>(offset + 4, "kernel descriptor");
    d.kernarg_size = bytes_.read<uint32_t>(offset + 8, "kernel descriptor");
    d.kernel_code_entry_byte_offset = bytes_.read<int64_t>(offset + 16, "kernel descriptor");
    d.rsrc3 = bytes_.read<uint32_t>(offset + 44, "kernel descriptor");
    d.rsrc1 = bytes_.read<uint32_t>(offset + 48, "kernel descriptor");
    d.rsrc2 = bytes_.read<uint32_t>(offset + 52, "kernel descriptor");
    d.code_properties = bytes_.read<uint16_t>(offset + 56, "kernel descriptor");
    d.kernarg_preload = bytes_.read<uint16_t>(offset + 58, "kernel descriptor");
    return d;
  }

  void read_kernels() {
    std::vector<Symbol> syms = symbols();
    auto [meta, meta_size] = metadata_note();
    std::vector<msgpack::object_handle> keep;
    auto metadata = parse_metadata(meta, meta_size, keep);
    for (const Symbol& kd : syms) {
      if (kd.name.size() <= 3 || !kd.name.ends_with(".kd") || ELF64_ST_TYPE(kd.sym.st_info) != STT_OBJECT) continue;
      Kernel k;
      k.name = kd.name.substr(0, kd.name.size() - 3);
      uint64_t kd_off = file_offset(kd.sym.st_value, 64, "kernel descriptor of " + k.name);
      k.descriptor = read_descriptor(kd_off);
      k.code_address = kd.sym.st_value + static_cast<uint64_t>(k.descriptor.kernel_code_entry_byte_offset);
      auto func = std::find_if(syms.begin(), syms.end(), [&](const Symbol& s) { return s.name == k.name && ELF64_ST_TYPE(s.sym.st_info) == STT_FUNC; });
      k.code_size = func != syms.end() ? func->sym.st_size : 0;
      if (k.code_address < co_.text_address_ || k.code_address - co_.text_address_ >= co_.text_size_)
        corrupt("kernel " + k.name + ": its code entry is outside .text");
      k.code_size = std::min(k.code_size, co_.text_size_ - (k.code_address - co_.text_address_));
      auto m = metadata.find(k.name);
      if (m == metadata.end()) corrupt("kernel " + k.name + " has a descriptor but no metadata");
      read_kernel_metadata(m->second.get(), k);
      co_.kernels_.push_back(std::move(k));
    }
    if (co_.kernels_.empty()) corrupt("no kernels (no <name>.kd descriptor symbols)");
  }

  CodeObject& co_;
  Bytes bytes_;
  Elf64_Ehdr eh_{};
  std::vector<Section> sections_;
};

CodeObject CodeObject::load(std::vector<uint8_t> bytes) {
  CodeObject co;
  co.bytes_ = std::move(bytes);
  CodeObjectParser(co).parse();
  return co;
}

CodeObject CodeObject::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open code object '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return load(std::move(bytes));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

const Kernel& CodeObject::kernel(const std::string& name) const {
  for (const Kernel& k : kernels_)
    if (k.name == name) return k;
  std::string names;
  for (const Kernel& k : kernels_) names += (names.empty() ? "" : ", ") + k.name;
  throw Error("no kernel named '" + name + "' in the code object (it has: " + names + ")");
}

std::span<const uint8_t> CodeObject::text() const { return {bytes_.data() + text_offset_, text_size_}; }

std::span<const uint8_t> CodeObject::code_at(uint64_t address, uint64_t size) const {
  if (address < text_address_ || address - text_address_ > text_size_ || size > text_size_ - (address - text_address_))
    throw Error("code at address " + std::to_string(address) + " (+" + std::to_string(size) + ") is outside .text");
  return text().subspan(address - text_address_, size);
}

}  // namespace weft::emu
