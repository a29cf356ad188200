// docs/emulator.md's "Not executed" list against the emulator itself: every opcode of the ISA
// tables that has no semantics must be named there (by its mnemonic, or a pattern of the list's
// own notation), so the list stays exactly what a kernel may stop on.
#include <doctest/doctest.h>

#include <fstream>
#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "weft/emulator/emulator.h"
#include "weft/emulator/isa.h"

using namespace weft::emu;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The section from its heading to the next level-2 heading.
std::string not_executed_section(const std::string& doc) {
  const size_t begin = doc.find("### Not executed");
  REQUIRE(begin != std::string::npos);
  return doc.substr(begin, doc.find("\n## ", begin) - begin);
}

// A backticked name of the list, as a pattern. The list's notation: `a/b/c` within a part
// separated by '_' is one of the alternatives (`v_min3/max3_f16/i16` is four names), `[_hi]` is an
// optional part and `*` any run of name characters. (A matcher of its own: GCC 12's <regex>
// trips -Werror=maybe-uninitialized.)
class Pattern {
 public:
  explicit Pattern(const std::string& text) {
    for (size_t at = 0; at < text.size();) {
      const char c = text[at];
      if (c == '*') {
        elements_.push_back({true, {}});
        ++at;
      } else if (c == '[') {
        const size_t end = text.find(']', at);
        REQUIRE_MESSAGE(end != std::string::npos, "unclosed [ in `" << text << "`");
        elements_.push_back({false, {"", text.substr(at + 1, end - at - 1)}});
        at = end + 1;
      } else if (is_word(c)) {
        size_t end = at;
        while (end < text.size() && (is_word(text[end]) || text[end] == '/')) ++end;
        Element e{false, {}};
        for (size_t from = at; from <= end;) {  // one part: alternatives separated by '/'
          const size_t to = std::min(text.find('/', from), end);
          e.options.push_back(text.substr(from, to - from));
          from = to + 1;
        }
        elements_.push_back(e);
        at = end;
      } else {
        elements_.push_back({false, {std::string(1, c)}});
        ++at;
      }
    }
  }
  bool matches(const std::string& name) const { return match(0, name, 0); }

 private:
  struct Element {
    bool any_run;                      // *
    std::vector<std::string> options;  // else one of these
  };
  static bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
  bool match(size_t i, const std::string& name, size_t pos) const {
    if (i == elements_.size()) return pos == name.size();
    const Element& e = elements_[i];
    if (e.any_run) {
      for (size_t end = pos;; ++end) {
        if (match(i + 1, name, end)) return true;
        if (end == name.size() || !(is_word(name[end]) || name[end] == '_')) return false;
      }
    }
    return std::any_of(e.options.begin(), e.options.end(),
                       [&](const std::string& o) { return name.compare(pos, o.size(), o) == 0 && match(i + 1, name, pos + o.size()); });
  }
  std::vector<Element> elements_;
};

// An opcode's name without its encoding suffix, as the list writes it.
std::string base_name(std::string m) {
  for (const char* suffix : {"_e32", "_e64", "_sdwa", "_dpp"})
    if (m.size() > std::string(suffix).size() && m.ends_with(suffix)) return m.substr(0, m.size() - std::string(suffix).size());
  return m;
}

}  // namespace

TEST_CASE("docs/emulator.md's Not executed list names every opcode the emulator has no semantics for") {
  const std::string section = not_executed_section(read_file(WEFT_DOCS_DIR "/emulator.md"));
  std::vector<Pattern> patterns;
  for (size_t open = section.find('`'); open != std::string::npos; open = section.find('`', open + 1)) {
    const size_t close = section.find('`', open + 1);
    REQUIRE(close != std::string::npos);
    const std::string name = section.substr(open + 1, close - open - 1);
    // Names only: the notation's own examples (`*`, `a/b`, `[_x]`) would match too much.
    if (std::count_if(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }) >= 3)
      patterns.emplace_back(name);
    open = close;
  }
  REQUIRE(patterns.size() > 100);  // the list was found and read
  for (const char* made_up : {"v_bogus_f32", "s_nothing_b32", "global_load_nothing"})  // the list cannot match anything at all
    CHECK_MESSAGE(std::none_of(patterns.begin(), patterns.end(), [&](const Pattern& p) { return p.matches(made_up); }), made_up);
  size_t unexecuted = 0;
  std::vector<std::string> unlisted;
  for (const OpcodeInfo& row : opcode_table()) {
    if (executes(row.mnemonic)) continue;
    ++unexecuted;
    const std::string name = row.mnemonic, base = base_name(name);
    const bool listed = std::any_of(patterns.begin(), patterns.end(), [&](const Pattern& p) { return p.matches(name) || p.matches(base); });
    if (!listed && (unlisted.empty() || unlisted.back() != base)) unlisted.push_back(base);
  }
  CHECK(unexecuted > 0);
  std::string names;
  for (const std::string& n : unlisted) names += " " + n;
  CHECK_MESSAGE(unlisted.empty(), unlisted.size() << " opcodes without semantics are missing from the list:" << names);
}

TEST_CASE("the list's notation: alternatives within a part, optional parts, wildcards") {
  const Pattern three("v_min3/max3/med3_f16/i16/u16"), d16("*_load_ubyte/sbyte/short_d16[_hi]"), dot("v_dot2c_*");
  CHECK(three.matches("v_max3_i16"));
  CHECK_FALSE(three.matches("v_max3_f32"));
  CHECK(d16.matches("global_load_short_d16_hi"));
  CHECK(d16.matches("flat_load_ubyte_d16"));
  CHECK_FALSE(d16.matches("global_load_dword"));
  CHECK(dot.matches("v_dot2c_f32_f16"));
  CHECK_FALSE(dot.matches("v_dot2_f32_f16"));
  CHECK(base_name("v_add_f32_e32") == "v_add_f32");
}
