#include "weft/emulator/listing.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "weft/emulator/isa.h"

namespace weft::emu {
namespace {

std::string hex_words(const Inst& in) {
  std::string s;
  char buf[16];
  for (int i = 0; i < in.size / 4; ++i) {
    std::snprintf(buf, sizeof buf, "%s0x%08x", i ? " " : "", in.word[i]);
    s += buf;
  }
  return s;
}

}  // namespace

void write_listing(const CodeObject& code, std::ostream& out) {
  for (const Kernel& k : code.kernels()) {
    out << k.name << ":\n";
    const auto bytes = code.code_at(k.code_address, k.code_size);
    for (size_t off = 0; off < bytes.size();) {
      const uint64_t text_offset = k.code_address - code.text_address() + off;
      const auto inst = decode(bytes.subspan(off), code.arch());
      char where[32];
      std::snprintf(where, sizeof where, "%llx: ", static_cast<unsigned long long>(text_offset));
      if (!inst) {
        uint32_t w = 0;
        std::memcpy(&w, bytes.data() + off, std::min<size_t>(4, bytes.size() - off));
        char buf[32];
        std::snprintf(buf, sizeof buf, ".long 0x%08x", w);
        out << where << buf << "\n";
        off += 4;
        continue;
      }
      const auto text = disassemble(*inst, code.arch());
      if (text) out << where << *text << "\n";
      else out << where << inst->info->mnemonic << " ; operands not printed by weft, words " << hex_words(*inst) << "\n";
      off += inst->size;
    }
  }
}


}  // namespace weft::emu
