// A layout as an SVG picture (plain text, no dependencies), for `weft layout NAME --svg FILE`.
//   - An operand layout, ("register", "lane") -> ("row", "col"): the matrix as a grid, each
//     cell labelled "lane/register" (who holds it) and coloured by lane.
//   - A memory layout, (..) -> ("offset"): a grid of its two inputs ("row" down and "col"
//     across for a shared tile; "lane" down and "byte" across for LDS DMA), each cell labelled
//     with its offset and coloured by the 4-byte bank, offset * element_bytes / 4 % banks.
//   - A wave grid, ("wave") -> ("wave_row", "wave_col"): the grid, each cell its wave.
// Exactly one <rect> per cell, nothing else drawn as a rect.
#pragma once

#include <string>

#include "weft/kernels/layout.h"

namespace weft::tile {

struct SvgOptions {
  std::string title;
  int element_bytes = 2;  // memory layouts: bytes per offset step
  int banks = 64;         // memory layouts: LDS banks of 4 bytes (CDNA4: 64)
};

// Throws weft::Error for a layout that is neither kind.
std::string layout_svg(const Layout& layout, const SvgOptions& options);

}  // namespace weft::tile
