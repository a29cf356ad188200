// Looking at compiled code in kernel tests: a code object's listing (as llvm-objdump prints it)
// and line queries on any text (listings, LLVM IR, CUDA source).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

#include "weft/emulator/code_object.h"
#include "weft/emulator/listing.h"
#include "weft/runtime/kernel.h"

namespace weft::testing {

inline std::string listing_of(const rt::CompiledKernel& k) {
  std::ostringstream listing;
  emu::write_listing(emu::CodeObject::load(k.code_object()), listing);
  return listing.str();
}

// Whether one line of `text` holds every one of `parts`.
inline bool has_line(const std::string& text, std::initializer_list<std::string_view> parts) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (std::all_of(parts.begin(), parts.end(), [&](std::string_view p) { return line.find(p) != std::string::npos; })) return true;
  return false;
}

}  // namespace weft::testing
