// An instruction's register footprint (what hazard mode checks) against its disassembly (which
// matches llvm-objdump-22): on random instruction words of both targets, the VGPRs, AGPRs and
// numbered SGPRs the text names are exactly the registers the footprint reads or writes. Plus the
// direction and the counter of the memory instructions hazard mode depends on.
#include <doctest/doctest.h>

#include <cctype>
#include <cstring>
#include <random>
#include <set>
#include <string>

#include "test_seed.h"
#include "weft/emulator/footprint.h"
#include "weft/emulator/isa.h"

using namespace weft::emu;

namespace {

// (file, index): 'v' 0-255, 'a' 0-255, 's' the numbered SGPRs.
using Register = std::pair<char, uint32_t>;

// The registers a disassembly names: v5, v[2:3], a[0:3], s7, s[4:5] (not vcc, exec, m0, ttmp:
// hazard mode does not track those by number).
std::set<Register> registers_in(const std::string& text) {
  std::set<Register> out;
  const size_t start = text.find(' ');  // after the mnemonic
  for (size_t i = start == std::string::npos ? text.size() : start; i < text.size(); ++i) {
    const char c = text[i];
    if ((c != 'v' && c != 'a' && c != 's') || (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_')))
      continue;
    uint32_t first = 0, last = 0;
    if (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      first = last = static_cast<uint32_t>(std::stoul(text.substr(i + 1)));
    } else if (i + 1 < text.size() && text[i + 1] == '[') {
      const size_t colon = text.find(':', i), close = text.find(']', i);
      if (colon == std::string::npos || close == std::string::npos || colon > close) continue;
      first = static_cast<uint32_t>(std::stoul(text.substr(i + 2)));
      last = static_cast<uint32_t>(std::stoul(text.substr(colon + 1)));
    } else {
      continue;
    }
    for (uint32_t r = first; r <= last; ++r)
      if (c == 's' || r < 256) out.insert({c, r});  // LLVM prints a tuple past v255 as v[254:257]: there is no v256
  }
  return out;
}

std::set<Register> registers_of(const Footprint& f) {
  std::set<Register> out;
  for (const auto* list : {&f.vgpr_uses, &f.vgpr_defs})
    for (const RegisterRange& r : *list)
      for (uint32_t x = r.first; x < r.first + r.count; ++x) out.insert({x >= 256 ? 'a' : 'v', x % 256});
  for (const Carry& k : f.carries) out.insert({'v', k.from});  // a source too, though not a checked use
  for (const auto* list : {&f.sgpr_uses, &f.sgpr_defs})
    for (const RegisterRange& r : *list)
      for (uint32_t x = r.first; x < r.first + r.count; ++x)
        if (x < 104) out.insert({'s', x});  // s102-s103 appear as the end of a tuple; vcc is printed by name
  return out;
}

std::string names(const std::set<Register>& rs) {
  std::string s;
  for (const auto& [file, index] : rs) s += std::string(1, file) + std::to_string(index) + " ";
  return s;
}

}  // namespace

TEST_CASE("an instruction's footprint names exactly the registers its disassembly names") {
  std::mt19937_64 rng = weft::testing::seeded_rng("test_footprint");
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    CAPTURE(std::string(arch_name(arch)));
    int compared = 0, differ = 0;
    std::string first_difference;
    for (int n = 0; n < 200000; ++n) {
      uint32_t words[3];
      for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
      const std::optional<Inst> inst = decode({reinterpret_cast<const uint8_t*>(words), sizeof words}, arch);
      if (!inst) continue;
      const std::optional<std::string> text = disassemble(*inst, arch);
      if (!text || text->find("Invalid register") != std::string::npos) continue;  // a tuple past v255: no such registers
      ++compared;
      const std::set<Register> printed = registers_in(*text), tracked = registers_of(footprint(*inst));
      if (printed != tracked && differ++ == 0)
        first_difference = *text + " names " + names(printed) + "but the footprint has " + names(tracked);
    }
    INFO(first_difference);
    CHECK(compared > 50000);
    CHECK(differ == 0);
  }
}

TEST_CASE("memory instructions: which registers they write and which counter they are counted on") {
  const auto of = [](std::initializer_list<uint32_t> words) {
    std::vector<uint8_t> bytes(words.size() * 4);
    std::memcpy(bytes.data(), std::data(words), bytes.size());
    const std::optional<Inst> inst = decode(bytes, Arch::Gfx950);
    REQUIRE(inst.has_value());
    return std::make_pair(*disassemble(*inst, Arch::Gfx950), footprint(*inst));
  };
  // global_load_dwordx4 v[4:7], v[0:1], off: writes v4-v7, reads v0-v1, on vmcnt.
  {
    const auto [text, f] = of({0xDC5C8000, 0x047F0000});
    INFO(text);
    REQUIRE(f.vgpr_defs.size() == 1);
    CHECK(f.vgpr_defs[0].first == 4);
    CHECK(f.vgpr_defs[0].count == 4);
    CHECK(f.counter == MemoryCounter::Vm);
    CHECK_FALSE(f.atomic);
  }
  // ds_write_b32 v1, v2: reads both, writes no register, on lgkmcnt.
  {
    const auto [text, f] = of({0xD81A0000, 0x00000201});
    INFO(text);
    CHECK(f.vgpr_defs.empty());
    CHECK(f.vgpr_uses.size() == 2);
    CHECK(f.counter == MemoryCounter::Lgkm);
  }
  // s_load_dwordx2 s[4:5], s[0:1], 0x0: writes s4-s5, returns out of order.
  {
    const auto [text, f] = of({0xC0060100, 0x00000000});
    INFO(text);
    REQUIRE(f.sgpr_defs.size() == 1);
    CHECK(f.sgpr_defs[0].first == 4);
    CHECK(f.sgpr_defs[0].count == 2);
    CHECK(f.counter == MemoryCounter::Smem);
  }
  // ds_add_u32 v1, v2: an LDS atomic.
  {
    const auto [text, f] = of({0xD8000000, 0x00000201});
    INFO(text);
    CHECK(text.starts_with("ds_add_u32"));
    CHECK(f.atomic);
  }
}
