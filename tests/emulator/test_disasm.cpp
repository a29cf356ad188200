// The decoder against llvm-objdump-22: every instruction of compiled test kernels and random
// instruction words must decode to the oracle's text, or be rejected by both. The printer may
// decline an encoding it does not reproduce (counted and reported), but never differ.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "llvm_oracle.h"
#include "weft/emulator/isa.h"

using namespace weft::emu;
using weft::testing::objdump_words;

namespace {

struct Tally {
  int agree = 0, both_reject = 0, declined = 0, oracle_crashes = 0;
  std::map<std::string, int> declined_by_family;
  std::vector<std::string> declines;  // what LLVM printed for the words weft declined
  std::vector<std::string> mismatches;
};

std::string hex_words(const uint32_t* w, uint32_t n) {
  std::string s;
  char buf[16];
  for (uint32_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%08X", i ? " " : "", w[i]);
    s += buf;
  }
  return s;
}

// Walks the oracle's instruction stream and compares each instruction with ours.
void compare_chunk(const std::vector<uint32_t>& words, Arch arch, Tally& t) {
  std::map<uint64_t, weft::testing::OracleInst> oracle;
  try {
    oracle = objdump_words(words, arch_name(arch));
  } catch (const std::runtime_error&) {
    // llvm-objdump-22 itself crashes on a few encodings; find them by halving and skip them.
    if (words.size() == 1) {
      ++t.oracle_crashes;
      return;
    }
    const auto mid = words.begin() + static_cast<long>(words.size() / 2);
    compare_chunk({words.begin(), mid}, arch, t);
    compare_chunk({mid, words.end()}, arch, t);
    return;
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(words.data());
  const size_t total = words.size() * 4;
  for (const auto& [offset, want] : oracle) {
    const uint32_t* w = words.data() + offset / 4;
    const auto got = decode({bytes + offset, total - offset}, arch);
    const std::string where = hex_words(w, want.size / 4);
    if (!want.text) {
      if (got) t.mismatches.push_back(hex_words(w, got->size / 4) + ": llvm rejects, weft decodes " + got->info->mnemonic);
      else ++t.both_reject;
      continue;
    }
    if (!got) {
      t.mismatches.push_back(where + ": llvm `" + *want.text + "`, weft rejects");
      continue;
    }
    if (got->size != want.size) {
      t.mismatches.push_back(where + ": llvm `" + *want.text + "` is " + std::to_string(want.size) + " bytes, weft " +
                             std::to_string(got->size));
      continue;
    }
    const auto text = disassemble(*got, arch);
    if (!text) {
      ++t.declined;
      ++t.declined_by_family[family_name(got->family)];
      t.declines.push_back(where + ": " + *want.text);
    } else if (*text != *want.text) {
      t.mismatches.push_back(where + ": llvm `" + *want.text + "`, weft `" + *text + "`");
    } else {
      ++t.agree;
    }
  }
}

Tally compare_stream(const std::vector<uint32_t>& words, Arch arch) {
  Tally t;
  constexpr size_t chunk = 4096;
  for (size_t i = 0; i < words.size(); i += chunk)
    compare_chunk({words.begin() + static_cast<long>(i), words.begin() + static_cast<long>(std::min(words.size(), i + chunk))}, arch, t);
  return t;
}

// `max_differ_fraction` / `max_declined_fraction`: the share of words that may print differently from
// LLVM / that weft may decline to print (random words only; compiled kernels allow none).
void report(const Tally& t, const std::string& what, double max_differ_fraction, double max_declined_fraction = 1.0) {
  if (const char* path = std::getenv("WEFT_DISASM_MISMATCHES")) {  // for whoever works on the printer
    std::ofstream out(path + ("." + what));
    for (const std::string& m : t.mismatches) out << m << "\n";
    std::ofstream declined(path + ("." + what + ".declined"));
    for (const std::string& d : t.declines) declined << d << "\n";
  }
  std::string families;
  for (const auto& [f, n] : t.declined_by_family) families += " " + f + ":" + std::to_string(n);
  MESSAGE(what << ": " << t.agree << " agree, " << t.both_reject << " rejected by both, " << t.declined
                << " declined (" << families << " ), " << t.mismatches.size() << " differ; "
                << t.oracle_crashes << " words crash llvm-objdump and are skipped");
  for (size_t i = 0; i < t.mismatches.size() && i < 40; ++i) INFO(t.mismatches[i]);
  std::string first;
  for (size_t i = 0; i < t.mismatches.size() && i < 40; ++i) first += t.mismatches[i] + "\n";
  const double total = t.agree + t.both_reject + t.declined + static_cast<double>(t.mismatches.size());
  CHECK_MESSAGE(static_cast<double>(t.mismatches.size()) <= max_differ_fraction * total, first);
  CHECK(static_cast<double>(t.declined) <= max_declined_fraction * total);
}

std::vector<uint32_t> random_words(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> w(n);
  for (auto& x : w) x = static_cast<uint32_t>(rng());
  return w;
}

uint64_t fuzz_seed() {
  if (const char* s = std::getenv("WEFT_FUZZ_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

}  // namespace

TEST_CASE("decoder agrees with llvm-objdump on random words") {
  const size_t count = std::getenv("WEFT_FUZZ_COUNT") ? std::strtoull(std::getenv("WEFT_FUZZ_COUNT"), nullptr, 0) : 100000;
  for (Arch arch : {Arch::Gfx942, Arch::Gfx950}) {
    const uint64_t seed = fuzz_seed();
    INFO("target " << std::string(arch_name(arch)) << ", WEFT_FUZZ_SEED=" << seed);
    const Tally t = compare_stream(random_words(seed, count), arch);
    // Every word must print as LLVM prints it or be rejected by both. Measured over 2,700,000
    // random words per target: 0-3 per million still differed before the last fixes, none was
    // declined. The limits (3 in 100,000 decoded instructions, i.e. 2 per run of 100,000 words)
    // keep a corner not yet found from failing an unrelated change; every word this test reports
    // is a bug to fix in the generator's probes or the printer, not a tolerance to raise.
    report(t, arch_name(arch), 0.00003, 0.00003);
  }
}

TEST_CASE("decoder agrees with llvm-objdump on gfx950's 16-byte scaled f8f6f4 MFMA") {
  // v_mfma_ld_scale_b32's word (its other bits random), then a 16x16x128 or 32x32x64 f8f6f4
  // MFMA word with operands as compilers write them (aligned VGPR or AGPR tuples, C also an
  // inline constant) and random formats, acc bits and byte selects; scale sources VGPRs nine
  // times in ten (LLVM prints others with notes, which weft declines). abid is 1, which marks
  // the form: with another abid LLVM reads the first word as a standalone v_mfma_ld_scale_b32,
  // which weft does not decode (docs/emulator.md).
  const uint64_t seed = fuzz_seed();
  INFO("WEFT_FUZZ_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> words;
  for (int n = 0; n < 3000; ++n) {
    const auto r = [&] { return static_cast<uint32_t>(rng()); };
    const auto scale_source = [&] { return rng() % 10 ? 256 + r() % 256 : r() % 256; };
    const auto tuple = [&] { return 256 + 2 * (r() % 100); };  // v or a (by the acc bits) 0..198, even
    words.push_back((0x1A7u << 23) | (0x2Cu << 16) | (r() & 0xFFFF));
    words.push_back((r() & ~0x3FFFFu) | (scale_source() << 9) | scale_source());
    const uint32_t abid = 1, op = rng() % 2 ? 0x2D : 0x2E;
    const uint32_t cbsz = r() % 5, blgp = r() % 5, acc_cd = r() % 2, acc = r() % 4, c = rng() % 4 ? tuple() : 128;
    words.push_back((0x1A7u << 23) | (op << 16) | (acc_cd << 15) | (abid << 11) | (cbsz << 8) | (2 * (r() % 100)));
    words.push_back((blgp << 29) | (acc << 27) | (c << 18) | (tuple() << 9) | tuple());
  }
  const Tally t = compare_stream(words, Arch::Gfx950);
  CHECK(t.agree > 1000);
  report(t, "gfx950 scaled MFMA", 0.0);
}
