// Casts to and from the fp8 formats, as graphs a renderer can emit with what every target has.
//
// A CAST with an fp8 side is first reduced to the two conversions targets have instructions
// for, float32 -> fp8 and fp8 -> float32 (fp8_cast_through_float32). Where the target has no
// instruction for a format (OCP formats on gfx942, fnuz formats on gfx950 and NVIDIA, every
// fp8 format before sm_89) or the source is float64, the renderer emits the conversion as
// integer arithmetic in the IR (fp8_cast_in_software): bitcasts, shifts, masks, compares,
// selects, integer <-> float casts and one exact float multiply, which both renderers have.
//
// Semantics (docs/ir.md, CAST), the host's encode_float(..., Overflow::Saturate) bit for bit:
//   to fp8:   round to nearest, ties to even, subnormals included; a value whose rounded
//             magnitude exceeds the largest finite one, and an infinity, becomes the largest
//             finite value of its sign; NaN becomes the canonical NaN (0x7F / 0x7E with the
//             sign for OCP e4m3 / e5m2, 0x80 for fnuz); -0 stays -0 (0x00 in fnuz formats).
//   from fp8: exact; a NaN pattern gives a quiet float32 NaN (0x7FC00000 here).
#pragma once

#include <vector>

#include "weft/dsl/uop.h"

namespace weft::lower {

// `x`: a float32 or float64 scalar. The fp8 value (dtype `to`) nearest to it, as above.
UOp fp8_from_float(const UOp& x, DType to);

// `q`: a scalar of an fp8 dtype. Its exact value as float32.
UOp fp8_to_float32(const UOp& q);

// A CAST to or from an fp8 dtype as an equal graph whose fp8 conversions are all scalar CASTs
// float32 -> fp8, fp8 -> float32 or float64 -> fp8: other dtypes go through float32 (exact:
// every fp8 value is a float32, and an integer that float32 rounds, beyond 2^24, saturates
// anyway), vectors lane by lane. Such a scalar CAST is returned as it is.
UOp fp8_cast_through_float32(const UOp& cast);

// Whether `cast` is one of those scalar CASTs (fp8_cast_in_software takes only these).
bool is_fp8_conversion(const UOp& cast);

// One of those scalar CASTs in integer arithmetic (fp8_from_float / fp8_to_float32).
UOp fp8_cast_in_software(const UOp& cast);

// The nodes of `expansion` a renderer emits to give it, each after its sources: everything but
// `input` (a node it has emitted already) and what lies above `input`.
std::vector<UOp> expansion_order(const UOp& expansion, const UOp& input);

}  // namespace weft::lower
