// llvm-objdump-22 as the oracle for the decoder: disassembles a stream of dwords (assembled into
// an object by llvm-mc-22 from `.long` lines) and reports, for each instruction it found, its
// offset, size and text (nullopt where it printed `.long`: an invalid encoding).
#pragma once

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace weft::testing {

struct OracleInst {
  uint32_t size = 4;
  std::optional<std::string> text;
};

inline std::string run_command(const std::string& cmd) {
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  if (pclose(pipe) != 0) throw std::runtime_error("command failed: " + cmd);
  return out;
}

// Parses llvm-objdump's "\t<text>  // <12 hex digits>: <8-digit hex words> [<target>]" lines.
// (Hand-written rather than std::regex: GCC 12 warns inside <regex> under the sanitizers.)
inline std::map<uint64_t, OracleInst> parse_objdump(const std::string& listing) {
  std::map<uint64_t, OracleInst> out;
  auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  size_t start = 0;
  while (start < listing.size()) {
    size_t end = listing.find('\n', start);
    if (end == std::string::npos) end = listing.size();
    const std::string l = listing.substr(start, end - start);
    start = end + 1;
    const size_t mark = l.rfind("// ");
    if (l.empty() || l[0] != '\t' || mark == std::string::npos || mark + 3 + 14 > l.size()) continue;
    const std::string address = l.substr(mark + 3, 12);
    if (!std::all_of(address.begin(), address.end(), is_hex) || l.compare(mark + 15, 2, ": ") != 0) continue;
    size_t p = mark + 17, words = 0;
    while (p + 8 <= l.size() && std::all_of(l.begin() + static_cast<long>(p), l.begin() + static_cast<long>(p + 8), is_hex)) {
      ++words;
      p += 8;
      if (p < l.size() && l[p] == ' ') ++p;
      if (p < l.size() && l[p] == '<') break;  // a branch target annotation
    }
    if (words == 0) continue;
    size_t text_end = mark;
    while (text_end > 1 && l[text_end - 1] == ' ') --text_end;
    OracleInst inst;
    inst.size = 4 * static_cast<uint32_t>(words);
    const std::string text = l.substr(1, text_end - 1);
    if (text.rfind(".long", 0) != 0) inst.text = text;
    out[std::stoull(address, nullptr, 16)] = inst;
  }
  return out;
}

inline std::map<uint64_t, OracleInst> objdump_words(const std::vector<uint32_t>& words, const std::string& mcpu) {
  char dir_template[] = "/tmp/weft-oracle-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  const std::string base = std::string(dir) + "/w";
  {
    std::ofstream s(base + ".s");
    s << ".text\n";
    char buf[32];
    for (uint32_t w : words) {
      std::snprintf(buf, sizeof buf, ".long 0x%08x\n", w);
      s << buf;
    }
  }
  run_command(std::string(WEFT_LLVM_MC) + " -triple=amdgcn-amd-amdhsa -mcpu=" + mcpu + " -filetype=obj " + base + ".s -o " + base + ".o");
  const std::string listing = run_command(std::string(WEFT_LLVM_OBJDUMP) + " -d --mcpu=" + mcpu + " " + base + ".o 2>/dev/null");
  run_command("rm -rf " + std::string(dir));
  return parse_objdump(listing);
}

// llvm-objdump's listing of a whole code object, by virtual address.
inline std::map<uint64_t, OracleInst> objdump_code_object(const std::vector<uint8_t>& bytes, const std::string& mcpu) {
  char dir_template[] = "/tmp/weft-oracle-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  const std::string path = std::string(dir) + "/k.hsaco";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const std::string listing = run_command(std::string(WEFT_LLVM_OBJDUMP) + " -d --mcpu=" + mcpu + " " + path + " 2>/dev/null");
  run_command("rm -rf " + std::string(dir));
  return parse_objdump(listing);
}

}  // namespace weft::testing
