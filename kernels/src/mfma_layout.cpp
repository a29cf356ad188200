#include "weft/kernels/mfma_layout.h"

#include "weft/dsl/builder.h"

namespace weft::tile {

// Every 16-bit-input MFMA of these targets lays its fragments out alike: the lanes form
// 64/m_or_n groups; lane l holds row (or column) l % m of A (B), and k / groups consecutive k
// values starting at (l / m) * (k / groups). D holds, per lane, column l % n and 4-row bands:
// for 16x16, rows 4*(l/16) + e; for 32x32, rows 8*(e/4) + 4*(l/32) + e%4.
std::pair<UOp, UOp> MfmaLayout::a(const UOp& lane, const UOp& e) const {
  const int64_t m = shape.m;
  return {lane % m, (lane / m) * a_elements + e};
}

std::pair<UOp, UOp> MfmaLayout::b(const UOp& lane, const UOp& e) const {
  const int64_t n = shape.n;
  return {(lane / n) * b_elements + e, lane % n};
}

std::pair<UOp, UOp> MfmaLayout::d(const UOp& lane, const UOp& e) const {
  const int64_t n = shape.n;
  if (shape.m == 16) return {(lane / 16) * 4 + e, lane % n};
  return {(e / 4) * 8 + (lane / 32) * 4 + e % 4, lane % n};
}

MfmaLayout mfma_layout(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input) {
  const bool gfx950 = arch == "gfx950";
  if (arch != "gfx950" && arch != "gfx942") throw Error("mfma_layout: unknown target '" + std::string(arch) + "' (gfx942, gfx950)");
  // fp8: the target's own format (CDNA3's fnuz e4m3, CDNA4's OCP e4m3), 16x16x32 and 32x32x16.
  const DType fp8 = gfx950 ? dtypes::fp8e4m3 : dtypes::fp8e4m3fnuz;
  const bool sixteen = input == dtypes::float16 || input == dtypes::bfloat16;
  if (!sixteen && input != fp8)
    throw Error("mfma_layout: " + input.name() + " inputs on " + std::string(arch) + "; the tile layer knows f16, bf16 and " + fp8.name() +
                " MFMA layouts there");
  const bool known = sixteen ? (m == 16 && n == 16 && (k == 16 || (gfx950 && k == 32))) || (m == 32 && n == 32 && (k == 8 || (gfx950 && k == 16)))
                             : (m == 16 && n == 16 && k == 32) || (m == 32 && n == 32 && k == 16);
  if (!known)
    throw Error("mfma_layout: no " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + input.name() +
                " MFMA on " + std::string(arch));
  MfmaLayout l;
  l.shape = WmmaArg{m, n, k, input, dtypes::float32, 64};
  l.a_elements = m * k / 64;
  l.b_elements = k * n / 64;
  l.d_elements = m * n / 64;
  return l;
}

}  // namespace weft::tile
