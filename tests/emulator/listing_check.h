// Every instruction of every kernel of a code object must print as llvm-objdump prints it.
#pragma once

#include <doctest/doctest.h>

#include "llvm_oracle.h"
#include "weft/emulator/code_object.h"
#include "weft/emulator/isa.h"

namespace weft::testing {

inline void check_listing_matches_objdump(const std::vector<uint8_t>& bytes, emu::Arch arch) {
  const emu::CodeObject code = emu::CodeObject::load(bytes);
  const auto oracle = objdump_code_object(bytes, emu::arch_name(arch));
  for (const emu::Kernel& k : code.kernels()) {
    const auto text = code.code_at(k.code_address, k.code_size);
    for (size_t off = 0; off < text.size();) {
      const uint64_t va = k.code_address + off;
      const auto inst = emu::decode(text.subspan(off), arch);
      const auto want = oracle.find(va);
      REQUIRE_MESSAGE(want != oracle.end(), k.name << " +" << off << ": llvm-objdump has no instruction here");
      REQUIRE_MESSAGE(inst, k.name << " +" << off << ": not decoded; llvm-objdump: " << want->second.text.value_or(".long"));
      const auto got = emu::disassemble(*inst, arch);
      CHECK_MESSAGE(got == want->second.text, k.name << " +" << off << ": weft `" << got.value_or("(not printed)") << "`, llvm `"
                                                     << want->second.text.value_or(".long") << "`");
      off += inst->size;
    }
  }
}

}  // namespace weft::testing
