#include "weft/kernels/layout_svg.h"

#include <algorithm>
#include <vector>

#include "weft/dsl/error.h"

namespace weft::tile {
namespace {

constexpr int kCellW = 44, kCellH = 22, kMargin = 36, kTitle = 24;

bool has(const std::vector<LayoutDim>& dims, const std::string& name) {
  return std::any_of(dims.begin(), dims.end(), [&](const LayoutDim& d) { return d.name == name; });
}

int64_t size_of(const std::vector<LayoutDim>& dims, const std::string& name) {
  for (const LayoutDim& d : dims)
    if (d.name == name) return int64_t{1} << d.bits;
  return 1;
}

// One colour per value of `i` out of `n`, spread around the hue circle, light enough to read
// black text on.
std::string colour(int64_t i, int64_t n) { return "hsl(" + std::to_string(i * 360 / std::max<int64_t>(n, 1)) + ",70%,78%)"; }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

struct Cell {
  std::string label, fill;
};

// The grid of cells with the title and the row and column numbers around it.
std::string draw(const std::string& title, const std::string& down, const std::string& across, const std::vector<std::vector<Cell>>& cells) {
  const int64_t rows = static_cast<int64_t>(cells.size()), cols = rows ? static_cast<int64_t>(cells[0].size()) : 0;
  const int64_t width = 2 * kMargin + cols * kCellW, height = kTitle + 2 * kMargin + rows * kCellH;
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) +
                  "\" font-family=\"monospace\" font-size=\"10\">\n";
  s += "<text x=\"" + std::to_string(kMargin) + "\" y=\"16\" font-size=\"13\">" + escape(title) + "</text>\n";
  s += "<text x=\"" + std::to_string(kMargin) + "\" y=\"" + std::to_string(kTitle + kMargin - 20) + "\">" + escape(across) + " &#8594;</text>\n";
  s += "<text x=\"4\" y=\"" + std::to_string(kTitle + kMargin - 8) + "\">" + escape(down) + " &#8595;</text>\n";
  for (int64_t c = 0; c < cols; ++c)
    s += "<text x=\"" + std::to_string(kMargin + c * kCellW + kCellW / 2) + "\" y=\"" + std::to_string(kTitle + kMargin - 4) +
         "\" text-anchor=\"middle\">" + std::to_string(c) + "</text>\n";
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t y = kTitle + kMargin + r * kCellH;
    s += "<text x=\"" + std::to_string(kMargin - 4) + "\" y=\"" + std::to_string(y + kCellH / 2 + 4) + "\" text-anchor=\"end\">" + std::to_string(r) + "</text>\n";
    for (int64_t c = 0; c < cols; ++c) {
      const Cell& cell = cells[static_cast<size_t>(r)][static_cast<size_t>(c)];
      const int64_t x = kMargin + c * kCellW;
      s += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(kCellW) + "\" height=\"" +
           std::to_string(kCellH) + "\" fill=\"" + cell.fill + "\" stroke=\"white\"/>";
      s += "<text x=\"" + std::to_string(x + kCellW / 2) + "\" y=\"" + std::to_string(y + kCellH / 2 + 4) + "\" text-anchor=\"middle\">" + escape(cell.label) +
           "</text>\n";
    }
  }
  return s + "</svg>\n";
}

// Who holds each element: the matrix's cells labelled lane/register, coloured by lane.
std::string operand_picture(const Layout& l, const SvgOptions& o) {
  const int64_t rows = size_of(l.out_dims(), "row"), cols = size_of(l.out_dims(), "col");
  const int64_t lanes = size_of(l.in_dims(), "lane"), registers = size_of(l.in_dims(), "register");
  std::vector<std::vector<Cell>> cells(static_cast<size_t>(rows), std::vector<Cell>(static_cast<size_t>(cols), Cell{"", "#eeeeee"}));
  for (int64_t lane = 0; lane < lanes; ++lane)
    for (int64_t reg = 0; reg < registers; ++reg) {
      const Layout::Coords at = l.apply({{"lane", lane}, {"register", reg}});
      Cell& c = cells[static_cast<size_t>(at.at("row"))][static_cast<size_t>(at.at("col"))];
      c.label = std::to_string(lane) + "/" + std::to_string(reg);
      c.fill = colour(lane, lanes);
    }
  return draw(o.title + " (cell: lane/register)", "row", "col", cells);
}

// Where each coordinate lands: offsets coloured by their 4-byte bank.
std::string memory_picture(const Layout& l, const SvgOptions& o) {
  const std::string down = has(l.in_dims(), "row") ? "row" : "lane";
  const std::string across = has(l.in_dims(), "col") ? "col" : "byte";
  if (!has(l.in_dims(), down) || !has(l.in_dims(), across) || l.in_dims().size() != 2)
    throw Error("layout_svg: a memory layout is drawn over (row, col) or (lane, byte)");
  const int64_t rows = size_of(l.in_dims(), down), cols = size_of(l.in_dims(), across);
  std::vector<std::vector<Cell>> cells(static_cast<size_t>(rows), std::vector<Cell>(static_cast<size_t>(cols)));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t offset = l.apply({{down, r}, {across, c}}).at("offset");
      const int64_t bank = offset * o.element_bytes / 4 % o.banks;
      cells[static_cast<size_t>(r)][static_cast<size_t>(c)] = {std::to_string(offset), colour(bank, o.banks)};
    }
  return draw(o.title + " (cell: offset; colour: bank of " + std::to_string(o.banks) + ")", down, across, cells);
}

// A wave grid: the grid of waves, each cell labelled with its wave and coloured by it.
std::string wave_picture(const Layout& l, const SvgOptions& o) {
  const int64_t rows = size_of(l.out_dims(), "wave_row"), cols = size_of(l.out_dims(), "wave_col"), waves = size_of(l.in_dims(), "wave");
  std::vector<std::vector<Cell>> cells(static_cast<size_t>(rows), std::vector<Cell>(static_cast<size_t>(cols), Cell{"", "#eeeeee"}));
  for (int64_t w = 0; w < waves; ++w) {
    const Layout::Coords at = l.apply({{"wave", w}});
    cells[static_cast<size_t>(at.at("wave_row"))][static_cast<size_t>(at.at("wave_col"))] = {"wave " + std::to_string(w), colour(w, waves)};
  }
  return draw(o.title, "wave_row", "wave_col", cells);
}

}  // namespace

std::string layout_svg(const Layout& layout, const SvgOptions& options) {
  const auto& in = layout.in_dims();
  const auto& out = layout.out_dims();
  if (has(in, "lane") && has(in, "register") && has(out, "row") && has(out, "col") && in.size() == 2 && out.size() == 2)
    return operand_picture(layout, options);
  if (out.size() == 1 && out[0].name == "offset") return memory_picture(layout, options);
  if (in.size() == 1 && in[0].name == "wave" && has(out, "wave_row") && has(out, "wave_col") && out.size() == 2) return wave_picture(layout, options);
  throw Error("layout_svg: no picture for a layout that is not (register, lane) -> (row, col), (..) -> (offset) or (wave) -> (wave_row, wave_col)");
}

}  // namespace weft::tile
