// A code object's kernels as text: each kernel's name, then one instruction per line as
// `<hex offset in .text>: <text>`, the text as llvm-objdump prints it. Words that do not
// decode print as `.long 0x...`; an instruction whose operands weft does not print names its
// mnemonic and words.
#pragma once

#include <ostream>

#include "weft/emulator/code_object.h"

namespace weft::emu {

void write_listing(const CodeObject& code, std::ostream& out);

}  // namespace weft::emu
