// Test-time kernel compilation with LLVM 22's command-line tools (llc-22, ld.lld-22): the
// emulator's tests run code objects the real compiler wrote.
#pragma once

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace weft::testing {

inline bool have_llvm_tools() { return std::string(WEFT_LLC).size() > 0 && std::string(WEFT_LLD).size() > 0; }

// Compiles LLVM IR text for `mcpu` (gfx942, gfx950) into a linked HSA code object.
inline std::vector<uint8_t> compile_ll(const std::string& ir, const std::string& mcpu) {
  char dir_template[] = "/tmp/weft-test-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  const std::string base = std::string(dir) + "/k";
  std::ofstream(base + ".ll") << ir;
  const std::string cmd = std::string(WEFT_LLC) + " -mtriple=amdgcn-amd-amdhsa -mcpu=" + mcpu + " -filetype=obj " + base +
                          ".ll -o " + base + ".o && " + WEFT_LLD + " -shared " + base + ".o -o " + base + ".hsaco";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("compiling a test kernel failed: " + cmd);
  std::ifstream in(base + ".hsaco", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (std::system(("rm -rf " + std::string(dir)).c_str()) != 0) throw std::runtime_error("cannot remove " + std::string(dir));
  return bytes;
}

}  // namespace weft::testing
