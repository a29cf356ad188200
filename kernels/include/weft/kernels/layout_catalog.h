// The layouts of layouts.h by name, for `weft layout` and the docs:
//   mfma.ARCH.MxNxK.DTYPE.OPERAND    mfma.gfx950.16x16x32.bf16.A (ARCH gfx942|gfx950, DTYPE
//                                    f16|bf16|fp8 (the target's fp8), OPERAND A|B|C)
//   mma.m16n8k16.DTYPE.OPERAND       mma.m16n8k16.f16.C (DTYPE f16|bf16)
//   KIND.DTYPE.ROWSxCOLS             st_16x32.bf16.16x32, unswizzled.f32.8x8 (KIND a
//                                    SharedSwizzle, DTYPE f32|f16|bf16|fp8)
//   lds_dma.BYTES                    lds_dma.16 (BYTES 1|2|4|16)
//   waves.ROWSxCOLS                  waves.2x4
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "weft/kernels/layout.h"

namespace weft::tile {

struct NamedLayout {
  std::string name;
  Layout layout;
  int element_bytes;  // the size of one element the layout places (for bank pictures)
};

// One line per entry: every fixed name, and for shared tiles and wave grids the pattern with
// ROWSxCOLS to fill in, each with a short description after a tab.
std::vector<std::string> layout_catalog();

// The first part of every name: mfma, mma, the SharedSwizzle kinds, lds_dma, waves.
std::vector<std::string> layout_families();

// The layout called `name`. Throws weft::Error saying what is wrong with the name (an unknown
// family, target, shape, dtype or operand, or sizes the layout does not take).
NamedLayout find_layout(std::string_view name);

}  // namespace weft::tile
