#include "weft/kernels/layout_catalog.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "weft/dsl/error.h"
#include "weft/kernels/layouts.h"

namespace weft::tile {
namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      parts.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

// "16x32" (or "16x16x32" with count 3) as numbers; nullopt if it is not that.
std::optional<std::vector<int64_t>> dims(const std::string& s, size_t count) {
  std::vector<int64_t> out;
  for (const std::string& p : split(s, 'x')) {
    int64_t v = 0;
    const auto r = std::from_chars(p.data(), p.data() + p.size(), v);
    if (p.empty() || r.ec != std::errc() || r.ptr != p.data() + p.size() || v <= 0) return std::nullopt;
    out.push_back(v);
  }
  if (out.size() != count) return std::nullopt;
  return out;
}

std::optional<MatrixOperand> operand(const std::string& s) {
  if (s == "A") return MatrixOperand::A;
  if (s == "B") return MatrixOperand::B;
  if (s == "C") return MatrixOperand::C;
  return std::nullopt;
}

// The short dtype names; fp8 is the target's own format for an MFMA.
std::optional<DType> short_dtype(const std::string& s, std::string_view arch) {
  if (s == "f32") return dtypes::float32;
  if (s == "f16") return dtypes::float16;
  if (s == "bf16") return dtypes::bfloat16;
  if (s == "fp8") return arch == "gfx942" ? dtypes::fp8e4m3fnuz : dtypes::fp8e4m3;
  return std::nullopt;
}

// The short name of an MFMA input dtype: f16, bf16, fp8 (either target's fp8).
std::string short_name(DType d) {
  if (d == dtypes::float16) return "f16";
  if (d == dtypes::bfloat16) return "bf16";
  return "fp8";
}

// The MFMA names, from the registry (mfma_shapes): by target, then shape in registry order,
// then dtype.
std::vector<std::string> mfma_names() {
  std::vector<std::string> names;
  std::vector<std::string> seen;
  for (const MfmaShape& s : mfma_shapes()) {
    const std::string prefix = "mfma." + std::string(s.arch) + "." + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    if (std::find(seen.begin(), seen.end(), prefix) != seen.end()) continue;
    seen.push_back(prefix);
    for (const MfmaShape& t : mfma_shapes())
      if (t.arch == s.arch && t.m == s.m && t.n == s.n && t.k == s.k) names.push_back(prefix + "." + short_name(t.input));
  }
  return names;
}

[[noreturn]] void bad(std::string_view name, const std::string& why) { throw Error("no layout named '" + std::string(name) + "': " + why); }

NamedLayout mfma(std::string_view name, const std::vector<std::string>& p) {
  if (p.size() != 5) bad(name, "an MFMA operand is mfma.ARCH.MxNxK.DTYPE.A|B|C");
  const auto mnk = dims(p[2], 3);
  const auto input = short_dtype(p[3], p[1]);
  const auto which = operand(p[4]);
  if (!mnk) bad(name, "'" + p[2] + "' is not MxNxK");
  if (!input) bad(name, "'" + p[3] + "' is not f16, bf16 or fp8");
  if (!which) bad(name, "'" + p[4] + "' is not A, B or C");
  Layout l = mfma_operand(p[1], (*mnk)[0], (*mnk)[1], (*mnk)[2], *input, *which);
  return {std::string(name), l, *which == MatrixOperand::C ? 4 : input->itemsize()};
}

NamedLayout mma(std::string_view name, const std::vector<std::string>& p) {
  if (p.size() != 4 || p[1] != "m16n8k16") bad(name, "an mma.sync operand is mma.m16n8k16.f16|bf16.A|B|C");
  const auto input = short_dtype(p[2], "");
  const auto which = operand(p[3]);
  if (!input || (*input != dtypes::float16 && *input != dtypes::bfloat16)) bad(name, "'" + p[2] + "' is not f16 or bf16");
  if (!which) bad(name, "'" + p[3] + "' is not A, B or C");
  return {std::string(name), mma_m16n8k16_operand(*input, *which), *which == MatrixOperand::C ? 4 : 2};
}

NamedLayout shared(std::string_view name, SharedSwizzle kind, const std::vector<std::string>& p) {
  if (p.size() != 3) bad(name, "a shared tile is KIND.DTYPE.ROWSxCOLS");
  const auto dtype = short_dtype(p[1], "");
  const auto rc = dims(p[2], 2);
  if (!dtype) bad(name, "'" + p[1] + "' is not f32, f16, bf16 or fp8");
  if (!rc) bad(name, "'" + p[2] + "' is not ROWSxCOLS");
  return {std::string(name), shared_tile(kind, (*rc)[0], (*rc)[1], *dtype), dtype->itemsize()};
}

}  // namespace

std::vector<std::string> layout_catalog() {
  std::vector<std::string> lines;
  for (const std::string& name : mfma_names())
    for (const char* op : {"A", "B", "C"})
      lines.push_back(name + "." + op + "\tMFMA " + op + " operand (register, lane) -> (row, col)");
  for (const char* d : {"f16", "bf16"})
    for (const char* op : {"A", "B", "C"})
      lines.push_back(std::string("mma.m16n8k16.") + d + "." + op + "\tmma.sync " + op + " operand (register, lane) -> (row, col)");
  for (SharedSwizzle kind : all_swizzles()) {
    std::string dts, cols;  // the dtypes the kind takes, and their subtile's columns
    std::set<int64_t> widths;
    int64_t rows = 0;
    for (const char* d : {"f32", "f16", "bf16", "fp8"}) {
      const int itemsize = short_dtype(d, "")->itemsize();
      if (!swizzle_supports(kind, itemsize)) continue;
      const auto [r, c] = subtile_shape(kind, itemsize);
      rows = r;
      widths.insert(c);
      dts += std::string(dts.empty() ? "" : "|") + d;
      cols += std::string(cols.empty() ? "" : ", ") + std::to_string(c) + " (" + d + ")";
    }
    // One subtile width for every dtype (HipKittens' kinds), or one a dtype (swizzle_64b's and swizzle_128b's bytes).
    if (widths.size() == 1) cols = std::to_string(*widths.begin());
    lines.push_back(std::string(swizzle_name(kind)) + "." + dts + ".ROWSxCOLS\tshared tile (row, col) -> offset in elements; ROWS, COLS powers of two, multiples of " +
                    std::to_string(rows) + " and " + cols);
  }
  for (int b : {1, 2, 4, 16}) lines.push_back("lds_dma." + std::to_string(b) + "\tLDS DMA destination (byte, lane) -> offset in bytes");
  lines.push_back("waves.ROWSxCOLS\twave grid (wave) -> (wave_row, wave_col), row-major");
  return lines;
}

std::vector<std::string> layout_families() {
  std::vector<std::string> families{"mfma", "mma"};
  for (SharedSwizzle kind : all_swizzles()) families.emplace_back(swizzle_name(kind));
  families.insert(families.end(), {"lds_dma", "waves"});
  return families;
}

NamedLayout find_layout(std::string_view name) {
  const std::vector<std::string> p = split(name, '.');
  if (p[0] == "mfma") return mfma(name, p);
  if (p[0] == "mma") return mma(name, p);
  for (SharedSwizzle kind : all_swizzles())
    if (p[0] == swizzle_name(kind)) return shared(name, kind, p);
  if (p[0] == "lds_dma") {
    int bytes = 0;
    const auto r = p.size() == 2 ? std::from_chars(p[1].data(), p[1].data() + p[1].size(), bytes) : std::from_chars_result{nullptr, std::errc::invalid_argument};
    if (r.ec != std::errc() || r.ptr != p[1].data() + p[1].size()) bad(name, "LDS DMA is lds_dma.BYTES");
    return {std::string(name), lds_dma_destination(bytes), 1};
  }
  if (p[0] == "waves") {
    const auto rc = p.size() == 2 ? dims(p[1], 2) : std::nullopt;
    if (!rc) bad(name, "a wave grid is waves.ROWSxCOLS");
    return {std::string(name), wave_grid((*rc)[0], (*rc)[1]), 1};
  }
  std::string families;
  for (const std::string& f : layout_families()) families += (families.empty() ? "" : ", ") + f;
  bad(name, "the families are " + families);
}

}  // namespace weft::tile
