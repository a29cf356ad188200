// The tile layer's operand orientations, column statistics, shared vectors and group-scoped
// fills, on both emulated CDNA targets: mma_AB / mma_ABt / mma_AtB / mma_AtBt with operands from
// shared tiles and straight from global memory (load(rt, gl)) against a double-precision host
// product (an identity B bit-exact), col_max / col_sum and the column broadcasts, row statistics
// exchanged between waves through a shared vector, a shared vector to and from global memory,
// and two wave groups each filling its own tile; then the errors for shapes and orientations
// the operations cannot take. Fresh random inputs (seed printed), outputs poisoned.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>

#include "kernel_harness.h"
#include "occurrences.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/nvrtc.h"
#include "weft/emulator/code_stats.h"
#include "weft/runtime/inspect.h"
#include "weft/kernels/fragments.h"
#include "weft/kernels/pipeline.h"
#include "weft/kernels/tiles.h"

using namespace weft;
using namespace weft::tile;

using weft::testing::occurrences;
using weft::testing::random_bf16;

namespace {

UOp zero_index() { return constant(Wide(0)); }
UOp index(int64_t v) { return constant(Wide(v)); }
size_t at(int64_t i) { return static_cast<size_t>(i); }

// ---- the four products ----

enum class Product { AB, ABt, AtB, AtBt };
const char* product_name(Product p) {
  switch (p) {
    case Product::AB: return "mma_AB";
    case Product::ABt: return "mma_ABt";
    case Product::AtB: return "mma_AtB";
    case Product::AtBt: return "mma_AtBt";
  }
  return "?";
}
// A is stored K x M (A^T of the product) for At; B is stored N x K for Bt.
bool a_transposed(Product p) { return p == Product::AtB || p == Product::AtBt; }
bool b_transposed(Product p) { return p == Product::ABt || p == Product::AtBt; }

constexpr int64_t kBlock = 64, kWave = 32, kK = 64;

// C (M x N, fp32) = op(A) op(B) with A and B in bf16 as stored (A: M x K or K x M; B: K x N or
// N x K), K <= 64. A 64 x 64 block of C per workgroup, 2 x 2 waves of 32 x 32; the operands
// come through shared tiles (direct-to-LDS fills, st_16x32) or straight from global memory.
UOp product_kernel(const std::string& arch, Product p, bool via_global, int64_t m, int64_t n, int64_t k) {
  const bool a_t = a_transposed(p), b_t = b_transposed(p);
  const UOp M = index(m), N = index(n), K = index(k);
  const gl out = global(0, M, N, dtypes::float32);
  const gl a = a_t ? global(1, K, M, dtypes::bfloat16) : global(1, M, K, dtypes::bfloat16);
  const gl b = b_t ? global(2, N, K, dtypes::bfloat16) : global(2, K, N, dtypes::bfloat16);
  Workgroup wg(arch, {index((n + kBlock - 1) / kBlock), index((m + kBlock - 1) / kBlock)}, 2, 2, is_nvidia(arch) ? 32 : 64);
  const UOp row0 = wg.block(1) * kBlock, col0 = wg.block(0) * kBlock;
  const UOp wave_row0 = row0 + wg.wave_row() * kWave, wave_col0 = col0 + wg.wave_col() * kWave;
  const Major a_major = a_t ? Major::col : Major::row, b_major = b_t ? Major::row : Major::col;
  const auto [ar, br] = [&]() -> std::pair<tile::rt, tile::rt> {
    using enum MatrixOperand;
    if (via_global)
      return {a_t ? load(wg, a, a_major, kK, kWave, zero_index(), wave_row0, A) : load(wg, a, a_major, kWave, kK, wave_row0, zero_index(), A),
              b_t ? load(wg, b, b_major, kWave, kK, wave_col0, zero_index(), B) : load(wg, b, b_major, kK, kWave, zero_index(), wave_col0, B)};
    const st as = a_t ? shared(kK, kBlock, dtypes::bfloat16, SharedSwizzle::st_16x32) : shared(kBlock, kK, dtypes::bfloat16, SharedSwizzle::st_16x32);
    const st bs = b_t ? shared(kBlock, kK, dtypes::bfloat16, SharedSwizzle::st_16x32) : shared(kK, kBlock, dtypes::bfloat16, SharedSwizzle::st_16x32);
    const UOp fills = group({a_t ? load(wg, as, zero_index(), a, zero_index(), row0) : load(wg, as, zero_index(), a, row0, zero_index()),
                             b_t ? load(wg, bs, zero_index(), b, col0, zero_index()) : load(wg, bs, zero_index(), b, zero_index(), col0)});
    const UOp ready = barrier({wait_counts({.vm = 0}, {fills})});
    return {load(wg, as.after({ready}), zero_index(), a_major, kWave, wg.wave_row(), A),
            load(wg, bs.after({ready}), zero_index(), b_major, kWave, wg.wave_col(), B)};
  }();
  const acc c0 = zero(accumulator(wg, kWave, kWave), wg);
  acc c = c0;
  switch (p) {
    case Product::AB: c = mma_AB(wg, c0, ar, br, {}); break;
    case Product::ABt: c = mma_ABt(wg, c0, ar, br, {}); break;
    case Product::AtB: c = mma_AtB(wg, c0, ar, br, {}); break;
    case Product::AtBt: c = mma_AtBt(wg, c0, ar, br, {}); break;
  }
  return sink({product_name(p)}, {store(wg, out, c, wave_row0, wave_col0)});
}

// An identity B (k == n) makes C = op(A) exactly: each output is one bf16 product by 1 plus
// zeros, so it must match bit for bit.
void check_product(Product p, bool via_global, int64_t m, int64_t n, int64_t k, bool identity = false) {
  const bool a_t = a_transposed(p), b_t = b_transposed(p);
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    CAPTURE(product_name(p));
    CAPTURE(via_global);
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    CAPTURE(identity);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, product_kernel(dev->arch(), p, via_global, m, n, k));
    std::vector<double> a, b;
    const auto ab = random_bf16(at(m * k), -1, 1, a);
    auto bb = random_bf16(at(k * n), -1, 1, b);
    if (identity)
      for (int64_t i = 0; i < k * n; ++i) {
        b[at(i)] = i / n == i % n ? 1.0 : 0.0;  // k == n: symmetric, the same stored either way
        bb[at(i)] = float_to_bf16(static_cast<float>(b[at(i)]));
      }
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, at(m * n)), weft::testing::put(*dev, dtypes::bfloat16, ab, "A"),
                                    weft::testing::put(*dev, dtypes::bfloat16, bb, "B")};
    compiled.launch(*dev, args);
    const auto got = weft::testing::get<float>(*dev, args[0]);
    const auto a_at = [&](int64_t i, int64_t kk) { return a_t ? a[at(kk * m + i)] : a[at(i * k + kk)]; };
    const auto b_at = [&](int64_t kk, int64_t j) { return b_t ? b[at(j * k + kk)] : b[at(kk * n + j)]; };
    int bad = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0, magnitude = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          want += a_at(i, kk) * b_at(kk, j);
          magnitude += std::abs(a_at(i, kk) * b_at(kk, j));
        }
        // bf16 products are exact in fp32; k fp32 additions in some order are off by at most
        // k * 2^-23 * sum |a b| (2^-23: an NVIDIA tensor core may truncate where it adds, not
        // round). The identity is exact.
        const double tol = identity ? 0.0 : static_cast<double>(k) * std::ldexp(1.0, -23) * magnitude;
        const float o = got[at(i * n + j)];
        if (!(std::abs(o - want) <= tol) && bad++ < 5) FAIL_CHECK("C[" << i << "][" << j << "] = " << o << ", want " << want << " (tolerance " << tol << ")");
      }
    CHECK(bad == 0);
  }
}

void check_all_shapes(Product p, bool via_global) {
  check_product(p, via_global, 64, 64, 64);
  check_product(p, via_global, 64, 64, 64, true);
  // Ragged in M, N and K: 2 x 2 workgroups, zeros past the edges (stored rows whole 16-byte
  // fill vectors: 104, 72 and 40 bf16; 100 columns are an error, below).
  check_product(p, via_global, 104, 72, 40);
}

// ---- column statistics ----

// Each of `wave_rows` waves (stacked down the rows) loads an acc_rows x cols block of X and
// writes: out0 = X - col_max, out1 = X * col_sum, out2 = X / col_sum (its block), out3 rows
// 2w and 2w + 1 = col_max and col_sum of wave w's block.
UOp col_stats_kernel(const std::string& arch, int64_t wave_rows, int64_t acc_rows, int64_t cols) {
  const UOp rows = index(wave_rows * acc_rows), width = index(cols);
  const gl x = global(4, rows, width, dtypes::float32);
  const gl out_sub = global(0, rows, width, dtypes::float32), out_mul = global(1, rows, width, dtypes::float32);
  const gl out_div = global(2, rows, width, dtypes::float32), out_stats = global(3, index(2 * wave_rows), width, dtypes::float32);
  Workgroup wg(arch, {index(1)}, wave_rows, 1);
  const UOp row0 = wg.wave_row() * acc_rows;
  const acc xs = load(wg, accumulator(wg, acc_rows, cols), x, row0, zero_index());
  const cv m = col_max(wg, xs), s = col_sum(wg, xs);
  return sink({"col_stats"}, {store(wg, out_sub, sub_col(xs, m), row0, zero_index()), store(wg, out_mul, mul_col(xs, s), row0, zero_index()),
                              store(wg, out_div, div_col(xs, s), row0, zero_index()), store(wg, out_stats, m, wg.wave_row() * 2, zero_index()),
                              store(wg, out_stats, s, wg.wave_row() * 2 + 1, zero_index())});
}

void check_col_stats(int64_t wave_rows, int64_t acc_rows, int64_t cols) {
  const int64_t rows = wave_rows * acc_rows;
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    CAPTURE(wave_rows);
    CAPTURE(acc_rows);
    CAPTURE(cols);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, col_stats_kernel(dev->arch(), wave_rows, acc_rows, cols));
    const std::vector<float> x = weft::testing::random_floats(at(rows * cols), -4.0f, 4.0f);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, x.size()), weft::testing::poisoned(*dev, dtypes::float32, x.size()),
                                    weft::testing::poisoned(*dev, dtypes::float32, x.size()),
                                    weft::testing::poisoned(*dev, dtypes::float32, at(2 * wave_rows * cols)), weft::testing::put(*dev, dtypes::float32, x)};
    compiled.launch(*dev, args);
    const auto sub = weft::testing::get<float>(*dev, args[0]), mul = weft::testing::get<float>(*dev, args[1]);
    const auto div = weft::testing::get<float>(*dev, args[2]), stats = weft::testing::get<float>(*dev, args[3]);
    int bad = 0;
    for (int64_t w = 0; w < wave_rows; ++w)
      for (int64_t c = 0; c < cols; ++c) {
        double mx = -INFINITY, sum = 0, abs_sum = 0;
        for (int64_t r = w * acc_rows; r < (w + 1) * acc_rows; ++r) {
          const double v = x[at(r * cols + c)];
          mx = std::max(mx, v);
          sum += v;
          abs_sum += std::abs(v);
        }
        // The maximum and X - max are exact; an fp32 sum in another order is off by at most
        // rows * 2^-24 * sum |x|.
        const double sum_tol = static_cast<double>(acc_rows) * std::ldexp(1.0, -24) * abs_sum;
        const float got_max = stats[at(2 * w * cols + c)], got_sum = stats[at((2 * w + 1) * cols + c)];
        if ((got_max != static_cast<float>(mx) || !(std::abs(got_sum - sum) <= sum_tol)) && bad++ < 5)
          FAIL_CHECK("wave " << w << ", column " << c << ": max " << got_max << " (want " << mx << "), sum " << got_sum << " (want " << sum << ")");
        for (int64_t r = w * acc_rows; r < (w + 1) * acc_rows; ++r) {
          const size_t i = at(r * cols + c);
          const double v = x[i];
          const bool ok = sub[i] == static_cast<float>(static_cast<float>(v) - static_cast<float>(mx)) &&
                          std::abs(mul[i] - v * sum) <= std::abs(v) * sum_tol + std::abs(v * sum) * std::ldexp(1.0, -23) &&
                          std::abs(div[i] - v / sum) <= std::abs(v / sum) * (sum_tol / std::abs(sum) * 2 + std::ldexp(1.0, -22));
          if (!ok && bad++ < 5)
            FAIL_CHECK("(" << r << ", " << c << "): x " << v << ", x - max " << sub[i] << ", x * sum " << mul[i] << " (want " << v * sum << "), x / sum "
                           << div[i] << " (want " << v / sum << ")");
        }
      }
    CHECK(bad == 0);
  }
}

// ---- shared vectors ----

// Two waves side by side (1 x 2), each holding 32 rows x 32 of the 64 columns of X: each writes
// its partial row maximum to its stage of a shared vector, and after a barrier both read both
// stages and subtract the whole row's maximum: out0 = X - row_max(X). Besides, a shared vector
// of 40 is filled from column 1 of V (37 x 2: zeros past row 36) and written to out1 (40 x 1).
UOp shared_vector_kernel(const std::string& arch) {
  const gl x = global(2, index(32), index(64), dtypes::float32), v = global(3, index(37), index(2), dtypes::float32);
  const gl out = global(0, index(32), index(64), dtypes::float32), out_v = global(1, index(40), index(1), dtypes::float32);
  Workgroup wg(arch, {index(1)}, 1, 2);
  const UOp col0 = wg.wave_col() * 32;
  const acc xs = load(wg, accumulator(wg, 32, 32), x, zero_index(), col0);
  const sv partial = shared_vector(32, dtypes::float32, 2);
  const UOp put = store(wg, partial, wg.wave_col(), row_max(wg, xs), zero_index());
  const sv shared_max = partial.after({barrier({put})});
  const rv left = load_rows(wg, shared_max, index(0), xs, zero_index()), right = load_rows(wg, shared_max, index(1), xs, zero_index());
  rv whole = left;
  for (size_t i = 0; i < whole.values.size(); ++i) whole.values[i] = max(left.values[i], right.values[i]);

  const sv staged = shared_vector(40, dtypes::float32);
  const UOp filled = load(wg, staged, zero_index(), v, zero_index(), index(1));
  return sink({"shared_vectors"}, {store(wg, out, sub_row(xs, whole), zero_index(), col0),
                                   store(wg, out_v, staged.after({barrier({filled})}), zero_index(), zero_index(), zero_index())});
}

// ---- group-scoped fills ----

// A 2 x 2 wave grid: the top row of waves fills one 64 x 64 tile from X while the bottom row
// fills another from Y (each group alone moves its whole tile); then every thread copies both
// tiles out through a fragment. X and Y are ragged (zeros past their edges).
UOp group_fill_kernel(const std::string& arch, int64_t x_rows, int64_t x_cols, int64_t y_rows, int64_t y_cols) {
  const gl out_x = global(0, index(64), index(64), dtypes::bfloat16), out_y = global(1, index(64), index(64), dtypes::bfloat16);
  const gl x = global(2, index(x_rows), index(x_cols), dtypes::bfloat16), y = global(3, index(y_rows), index(y_cols), dtypes::bfloat16);
  Workgroup wg(arch, {index(1)}, 2, 2);
  const st x_smem = shared(64, 64, dtypes::bfloat16, SharedSwizzle::st_16x32), y_smem = shared(64, 64, dtypes::bfloat16, SharedSwizzle::st_16x32);
  const UOp fx = load(wg, wave_rows(wg, index(0), 1), x_smem, zero_index(), x, zero_index(), zero_index());
  const UOp fy = load(wg, wave_rows(wg, index(1), 1), y_smem, zero_index(), y, zero_index(), zero_index());
  const UOp ready = barrier({wait_counts({.vm = 0}, {fx, fy})});
  const rf xr = load(wg, fragment(wg, 64, 64, dtypes::bfloat16, 16), x_smem.after({ready}));
  const rf yr = load(wg, fragment(wg, 64, 64, dtypes::bfloat16, 16), y_smem.after({ready}));
  return sink({"group_fill"}, {store(wg, out_x, xr, zero_index(), zero_index()), store(wg, out_y, yr, zero_index(), zero_index())});
}

// The wave-grid row that fills is a kernel variable R (0 or 1 of a 2 x 2 grid), the run-time
// form of groups that take turns: the tile is filled from X by that row's two waves, then copied
// out by every thread.
UOp chosen_group_kernel(const std::string& arch) {
  const gl out = global(0, index(64), index(64), dtypes::bfloat16), x = global(1, index(64), index(64), dtypes::bfloat16);
  Workgroup wg(arch, {index(1)}, 2, 2);
  const st smem = shared(64, 64, dtypes::bfloat16, SharedSwizzle::st_16x32);
  const UOp fill = load(wg, wave_rows(wg, variable("R", 0, 1), 1), smem, zero_index(), x, zero_index(), zero_index());
  const rf copy = load(wg, fragment(wg, 64, 64, dtypes::bfloat16, 16), smem.after({barrier({wait_counts({.vm = 0}, {fill})})}));
  return sink({"chosen_group_fill"}, {store(wg, out, copy, zero_index(), zero_index())});
}

}  // namespace

// On NVIDIA the shared-tile operands are read with ldmatrix: as stored where k runs along the
// tile's rows (A of AB, B of ABt), transposed where it runs down its columns.
WEFT_DEVICE_TEST_CASE("tile ops: mma_AB from shared tiles") { check_all_shapes(Product::AB, false); }
WEFT_DEVICE_TEST_CASE("tile ops: mma_ABt from shared tiles") { check_all_shapes(Product::ABt, false); }
WEFT_DEVICE_TEST_CASE("tile ops: mma_AtB from shared tiles") { check_all_shapes(Product::AtB, false); }
WEFT_DEVICE_TEST_CASE("tile ops: mma_AtBt from shared tiles") { check_all_shapes(Product::AtBt, false); }
WEFT_DEVICE_TEST_CASE("tile ops: mma_AB with register tiles loaded from global memory") { check_all_shapes(Product::AB, true); }
WEFT_DEVICE_TEST_CASE("tile ops: mma_AtBt with register tiles loaded from global memory") { check_all_shapes(Product::AtBt, true); }

TEST_CASE("tile ops: col_max and col_sum and column broadcasts on 2 waves of 32 x 64") { check_col_stats(2, 32, 64); }
TEST_CASE("tile ops: col_max and col_sum and column broadcasts on 1 wave of 16 x 32") { check_col_stats(1, 16, 32); }

TEST_CASE("tile ops: row maxima exchanged between waves through a shared vector and a shared vector to and from global memory") {
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, shared_vector_kernel(dev->arch()));
    const std::vector<float> x = weft::testing::random_floats(32 * 64, -4.0f, 4.0f), v = weft::testing::random_floats(37 * 2);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, x.size()), weft::testing::poisoned(*dev, dtypes::float32, 40),
                                    weft::testing::put(*dev, dtypes::float32, x), weft::testing::put(*dev, dtypes::float32, v)};
    compiled.launch(*dev, args);
    const auto out = weft::testing::get<float>(*dev, args[0]), out_v = weft::testing::get<float>(*dev, args[1]);
    int bad = 0;
    for (int64_t r = 0; r < 32; ++r) {
      float mx = -INFINITY;
      for (int64_t c = 0; c < 64; ++c) mx = std::max(mx, x[at(r * 64 + c)]);
      for (int64_t c = 0; c < 64; ++c)
        if (out[at(r * 64 + c)] != x[at(r * 64 + c)] - mx && bad++ < 5)
          FAIL_CHECK("(" << r << ", " << c << "): " << out[at(r * 64 + c)] << ", want " << x[at(r * 64 + c)] - mx);
    }
    for (int64_t i = 0; i < 40; ++i) {
      const float want = i < 37 ? v[at(i * 2 + 1)] : 0.0f;
      if (out_v[at(i)] != want && bad++ < 5) FAIL_CHECK("vector element " << i << ": " << out_v[at(i)] << ", want " << want);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("tile ops: two wave groups each fill their own tile") {
  // Ragged columns in whole 16-byte lane vectors: load(st, gl) zero-fills per lane vector (a
  // vector that starts inside the tensor is read whole).
  const int64_t x_rows = 50, x_cols = 56, y_rows = 64, y_cols = 40;
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, group_fill_kernel(dev->arch(), x_rows, x_cols, y_rows, y_cols));
    std::vector<double> xd, yd;
    const auto xb = random_bf16(at(x_rows * x_cols), -1, 1, xd), yb = random_bf16(at(y_rows * y_cols), -1, 1, yd);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::bfloat16, 64 * 64), weft::testing::poisoned(*dev, dtypes::bfloat16, 64 * 64),
                                    weft::testing::put(*dev, dtypes::bfloat16, xb, "X"), weft::testing::put(*dev, dtypes::bfloat16, yb, "Y")};
    compiled.launch(*dev, args);
    const auto out_x = weft::testing::get<uint16_t>(*dev, args[0]), out_y = weft::testing::get<uint16_t>(*dev, args[1]);
    int bad = 0;
    const auto check = [&](const char* name, const std::vector<uint16_t>& got, const std::vector<uint16_t>& in, int64_t rows, int64_t cols) {
      for (int64_t r = 0; r < 64; ++r)
        for (int64_t c = 0; c < 64; ++c) {
          const uint16_t want = r < rows && c < cols ? in[at(r * cols + c)] : 0;
          if (got[at(r * 64 + c)] != want && bad++ < 5) FAIL_CHECK(name << "[" << r << "][" << c << "] = bits " << int{got[at(r * 64 + c)]} << ", want " << int{want});
        }
    };
    check("X", out_x, xb, x_rows, x_cols);
    check("Y", out_y, yb, y_rows, y_cols);
    CHECK(bad == 0);
  }
}

TEST_CASE("tile ops: a wave group chosen at run time fills a tile") {
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, chosen_group_kernel(dev->arch()));
    for (int64_t r = 0; r < 2; ++r) {
      CAPTURE(r);
      std::vector<double> xd;
      const auto xb = random_bf16(64 * 64, -1, 1, xd);
      const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::bfloat16, 64 * 64), weft::testing::put(*dev, dtypes::bfloat16, xb, "X")};
      compiled.launch(*dev, args, {{"R", r}});
      const auto got = weft::testing::get<uint16_t>(*dev, args[0]);
      int bad = 0;
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != xb[i] && bad++ < 5) FAIL_CHECK("element " << i << ": bits " << int{got[i]} << ", want " << int{xb[i]});
      CHECK(bad == 0);
    }
  }
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("tile ops: the LDS reads of the four products") {
  // Per wave on gfx950: A and B are 32 x 64 operands, 2 x 2 sub-tiles of 16 x 32. A row-major
  // operand of a K-contiguous tile is one ds_read_b128 per sub-tile; a col-major operand keeps a
  // lane's 8 k values a row apart, and ds_read_b64_tr_b16 reads them 4 at once (2 per sub-tile),
  // no 2-byte read left.
  for (Product p : {Product::AB, Product::ABt, Product::AtB, Product::AtBt}) {
    CAPTURE(product_name(p));
    const emu::KernelStats s = emu::kernel_stats(rt::inspect(product_kernel("gfx950", p, false, 64, 64, 64), "gfx950").code_object);
    const uint64_t col_major = (a_transposed(p) ? 1 : 0) + (b_transposed(p) ? 0 : 1);
    CHECK(s.count("ds_read_b128") == 4 * (2 - col_major));
    CHECK(s.count("ds_read_b64_tr_b16") == 8 * col_major);
    CHECK(s.count_prefix("ds_read_u16") + s.count_prefix("ds_read_u8") == 0);
    CHECK(s.count("v_mfma_f32_16x16x32_bf16") == 8);
  }
}

TEST_CASE("tile ops: on gfx942 a col-major operand stays one 2-byte LDS read per value") {
  // gfx942 has no transposing LDS read: per wave 2 x 4 sub-tiles of 16 x 16, a lane's 4 k values
  // each its own ds_read_u16 in a col-major operand, one ds_read_b64 per row-major sub-tile.
  for (Product p : {Product::AB, Product::AtBt}) {
    CAPTURE(product_name(p));
    const emu::KernelStats s = emu::kernel_stats(rt::inspect(product_kernel("gfx942", p, false, 64, 64, 64), "gfx942").code_object);
    const uint64_t col_major = (a_transposed(p) ? 1 : 0) + (b_transposed(p) ? 0 : 1);
    CHECK(s.count_prefix("ds_read_b64_tr") == 0);
    CHECK(s.count_prefix("ds_read_u16") + s.count_prefix("ds_read_u8") == 32 * col_major);
    CHECK(s.count("v_mfma_f32_16x16x16_bf16") == 16);
  }
}
#endif

namespace {

// Where ldmatrix.x4 puts value v of lane L, as PTX defines it: (the lane t that names the row,
// the element e of that row). As stored, lane L holds elements 2(L%4), +1 of row L/4 of matrix
// v/2; transposed, element L/4 of rows 2(L%4), +1.
std::pair<int64_t, int64_t> ldmatrix_source(int64_t lane, int64_t v, bool transposed) {
  const int64_t m = v / 2, j = v % 2;
  if (transposed) return {8 * m + 2 * (lane % 4) + j, lane / 4};
  return {8 * m + lane / 4, 2 * (lane % 4) + j};
}

// Every value of every lane that ldmatrix delivers through `read` is the element `to_offset`
// asks for.
void check_ldmatrix_delivers(const Layout& to_offset, const Layout& read, bool transposed) {
  int bad = 0;
  for (int64_t lane = 0; lane < 32; ++lane)
    for (int64_t v = 0; v < 8; ++v) {
      const auto [t, e] = ldmatrix_source(lane, v, transposed);
      const int64_t got = read.apply({{"register", e}, {"lane", t}}).at("offset");
      const int64_t want = to_offset.apply({{"register", v}, {"lane", lane}}).at("offset");
      if (got != want && bad++ < 5) FAIL_CHECK("lane " << lane << " value " << v << ": offset " << got << ", want " << want);
    }
  CHECK(bad == 0);
}

// An mma.sync operand sub-tile (16 x 16 of bf16) of a shared tile, to its offsets: `major` as
// load(rt, st) takes it, the sub-tile at the tile's origin.
Layout operand_offsets(const Workgroup& wg, MatrixOperand which, Major major, const st& tile) {
  const Layout natural = operand_layout(wg, dtypes::bfloat16, which);
  const Major natural_major = which == MatrixOperand::A ? Major::row : Major::col;
  const Layout sub = major == natural_major ? natural : transposed(natural);
  const int row_bits = std::countr_zero(static_cast<uint64_t>(tile.rows)) - 4, col_bits = std::countr_zero(static_cast<uint64_t>(tile.cols)) - 4;
  return (sub * Layout::identity("rest_row", "row", row_bits) * Layout::identity("rest_col", "col", col_bits)).then(tile.layout);
}

}  // namespace

TEST_CASE("tile ops: ldmatrix's layout delivers what the mma.sync operands ask for, as stored or transposed") {
  // As load(rt, st) reads on NVIDIA: k along a row-major tile's columns is read as stored, k
  // down its rows transposed; both operands, unswizzled and swizzled tiles.
  Workgroup wg("sm_90", {index(1)}, 1, 1, 32);
  for (SharedSwizzle swizzle : {SharedSwizzle::unswizzled, SharedSwizzle::swizzle_64b, SharedSwizzle::st_16x32})
    for (MatrixOperand which : {MatrixOperand::A, MatrixOperand::B})
      for (Major major : {Major::row, Major::col}) {
        CAPTURE(swizzle_name(swizzle));
        CAPTURE(which == MatrixOperand::A ? "A" : "B");
        CAPTURE(major == Major::row ? "row" : "col");
        const st tile = shared(64, 64, dtypes::bfloat16, swizzle);
        const Layout to_offset = operand_offsets(wg, which, major, tile);
        // A row-major operand (k along the tile's rows) fits as stored, a col-major one only transposed.
        const bool want_transposed = major == Major::col;
        CHECK_FALSE(matrix_read_layout(to_offset, !want_transposed).has_value());
        const std::optional<Layout> read = matrix_read_layout(to_offset, want_transposed);
        REQUIRE(read.has_value());
        check_ldmatrix_delivers(to_offset, *read, want_transposed);
      }
  // Neither fits a tile whose rows and columns interleave bit by bit (no 8 consecutive elements
  // along either), nor a layout of other than 8 registers and 32 lanes.
  const Layout interleaved({{"row", 4}, {"col", 4}}, {{"offset", 8}},
                           {{{"offset", 1}}, {{"offset", 4}}, {{"offset", 16}}, {{"offset", 64}}, {{"offset", 2}}, {{"offset", 8}}, {{"offset", 32}}, {{"offset", 128}}});
  const Layout a = operand_layout(wg, dtypes::bfloat16, MatrixOperand::A).then(interleaved);
  CHECK_FALSE(matrix_read_layout(a, false).has_value());
  CHECK_FALSE(matrix_read_layout(a, true).has_value());
  Workgroup cdna("gfx950", {index(1)}, 1, 1);
  const Layout mfma = operand_layout(cdna, dtypes::bfloat16, MatrixOperand::A);
  CHECK_FALSE(matrix_read_layout((mfma * Layout::identity("rest", "col", 1)).then(shared(16, 64, dtypes::bfloat16, SharedSwizzle::unswizzled).layout), false).has_value());
}

TEST_CASE("tile ops: on NVIDIA the four products read their shared operands with one ldmatrix per sub-tile and compile") {
  // Per warp: A and B are 32 x 64 operands, 2 x 4 sub-tiles of 16 x 16 each, 8 ldmatrix.x4 an
  // operand: as stored where k runs along the tile's rows, transposed where it runs down them;
  // no 2-byte shared read left.
  lower::LowerOptions options;
  options.wave_size = 32;
  for (Product p : {Product::AB, Product::ABt, Product::AtB, Product::AtBt}) {
    CAPTURE(product_name(p));
    const auto lowered = lower::lower(product_kernel("sm_90", p, false, 64, 64, 64), options);
    const std::string src = cuda::render_cuda(lowered, 90);
    const size_t transposed = (a_transposed(p) ? 1 : 0) + (b_transposed(p) ? 0 : 1);
    CHECK(occurrences(src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 8 * (2 - transposed));
    CHECK(occurrences(src, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 8 * transposed);
    CHECK(occurrences(src, "mma.sync.aligned.m16n8k16") == 32);
    // Word m of a read holds values 2m (low half) and 2m + 1, as mma.sync's operands pack them.
    CHECK(src.find(".v[0] = (unsigned short)w0; ") != std::string::npos);
    CHECK(src.find(".v[7] = (unsigned short)(w3 >> 16);") != std::string::npos);
    if (rt::nvrtc_available()) CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
  }
}

namespace {

// D (16 x 16, fp32) = bf16(A B) E on one warp, A B (16 x 32) kept in registers as the A operand
// of the second product (as_operand): A 16 x 32, B 32 x 32 (K x N), E 32 x 16 (K x N), all bf16
// from global memory.
UOp chained_product_kernel(const std::string& arch) {
  const gl out = global(0, index(16), index(16), dtypes::float32), a = global(1, index(16), index(32), dtypes::bfloat16);
  const gl b = global(2, index(32), index(32), dtypes::bfloat16), e = global(3, index(32), index(16), dtypes::bfloat16);
  Workgroup wg(arch, {index(1)}, 1, 1, 32);
  using enum MatrixOperand;
  const acc first = mma_AB(wg, zero(accumulator(wg, 16, 32), wg), load(wg, a, Major::row, 16, 32, zero_index(), zero_index(), A),
                           load(wg, b, Major::col, 32, 32, zero_index(), zero_index(), B), {});
  const acc second = mma_AB(wg, zero(accumulator(wg, 16, 16), wg), as_operand(wg, first, dtypes::bfloat16, A),
                            load(wg, e, Major::col, 32, 16, zero_index(), zero_index(), B), {});
  return sink({"chained_product"}, {store(wg, out, second, zero_index(), zero_index())});
}

}  // namespace

TEST_CASE("tile ops: where the C layout is the A layout (NVIDIA) an accumulator is the next product's A operand, from registers") {
  Workgroup nvidia("sm_90", {index(1)}, 1, 1, 32), cdna("gfx950", {index(1)}, 1, 1);
  CHECK(accumulator_feeds_operand(nvidia, dtypes::bfloat16, MatrixOperand::A));
  CHECK_FALSE(accumulator_feeds_operand(nvidia, dtypes::bfloat16, MatrixOperand::B));  // B's lanes run along k
  CHECK_FALSE(accumulator_feeds_operand(cdna, dtypes::bfloat16, MatrixOperand::A));
  CHECK_FALSE(accumulator_feeds_operand(nvidia, dtypes::bfloat16, MatrixOperand::C));
  // mma.sync's C register e of a 16x16 sub-tile is its A register e: the operand's registers
  // are the accumulator's, in order, rounded.
  const acc c = accumulator(nvidia, 32, 48);
  const tile::rt p = as_operand(nvidia, c, dtypes::bfloat16, MatrixOperand::A);
  CHECK((p.major == Major::row && p.rows == 32 && p.cols == 48 && p.k_step() == 16 && p.parts.size() == 6));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t kk = 0; kk < 3; ++kk)
      for (int64_t r = 0; r < 8; ++r) CHECK(p.operand(i, kk).src(static_cast<size_t>(r)).same(c.element(i, kk, r).load().cast(dtypes::bfloat16)));
  CHECK_THROWS_WITH_AS(as_operand(cdna, accumulator(cdna, 16, 32), dtypes::bfloat16, MatrixOperand::A),
                       doctest::Contains("as_operand: on gfx950 the accumulator's C layout does not hold the A operand of bfloat16 in the same lanes"), Error);
  CHECK_THROWS_WITH_AS(as_operand(nvidia, c, dtypes::bfloat16, MatrixOperand::B), doctest::Contains("does not hold the B operand"), Error);
  CHECK_THROWS_WITH_AS(as_operand(nvidia, c, dtypes::bfloat16, MatrixOperand::C), doctest::Contains("not a register operand of itself"), Error);
  // Rendered for sm_90 the chained product reads no shared memory and compiles.
  lower::LowerOptions options;
  options.wave_size = 32;
  const auto lowered = lower::lower(chained_product_kernel("sm_90"), options);
  const std::string src = cuda::render_cuda(lowered, 90);
  CHECK(occurrences(src, "mma.sync.aligned.m16n8k16") == 2 * 2 * 2 + 2 * 1 * 2);
  CHECK(occurrences(src, "__shared__") == 0);
  if (rt::nvrtc_available()) CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
}

TEST_CASE("tile ops: an accumulator as the next product's A operand, on an NVIDIA GPU: exact where A B is, and against a host reference [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const auto compiled = rt::CompiledKernel::compile(*dev, chained_product_kernel(dev->arch()));
  // A and B small integers: A B is an integer below 2^8 in magnitude, exact in fp32 and bf16, so
  // the first product and its rounding are exact and the register map is checked bit for bit.
  // E: [I; 0] selects A B's first 16 columns exactly, then random values within fp32 error.
  const auto integers = [](size_t n, std::vector<double>& values) {
    const std::vector<float> f = weft::testing::random_floats(n, -2.5f, 2.5f);
    std::vector<uint16_t> bits(n);
    values.resize(n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = std::round(f[i]);
      bits[i] = float_to_bf16(static_cast<float>(values[i]));
    }
    return bits;
  };
  std::vector<double> a, b;
  const auto ab = integers(16 * 32, a), bb = integers(32 * 32, b);
  for (const bool select : {true, false}) {
    CAPTURE(select);
    std::vector<double> e(32 * 16);
    std::vector<uint16_t> eb = random_bf16(32 * 16, -1, 1, e);
    if (select)
      for (size_t i = 0; i < e.size(); ++i) {
        e[i] = i / 16 == i % 16 ? 1.0 : 0.0;
        eb[i] = float_to_bf16(static_cast<float>(e[i]));
      }
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, 16 * 16), weft::testing::put(*dev, dtypes::bfloat16, ab, "A"),
                                    weft::testing::put(*dev, dtypes::bfloat16, bb, "B"), weft::testing::put(*dev, dtypes::bfloat16, eb, "E")};
    compiled.launch(*dev, args);
    const auto got = weft::testing::get<float>(*dev, args[0]);
    int bad = 0;
    for (int64_t i = 0; i < 16; ++i)
      for (int64_t j = 0; j < 16; ++j) {
        double want = 0, magnitude = 0;
        for (int64_t k = 0; k < 32; ++k) {
          double p = 0;
          for (int64_t q = 0; q < 32; ++q) p += a[at(i * 32 + q)] * b[at(q * 32 + k)];
          want += p * e[at(k * 16 + j)];
          magnitude += std::abs(p * e[at(k * 16 + j)]);
        }
        const double tol = select ? 0.0 : 32 * std::ldexp(1.0, -24) * magnitude;
        if (!(std::abs(got[at(i * 16 + j)] - want) <= tol) && bad++ < 5)
          FAIL_CHECK("D[" << i << "][" << j << "] = " << got[at(i * 16 + j)] << ", want " << want << " (tolerance " << tol << ")");
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("tile ops: shapes and orientations the operations cannot take are errors naming the operation") {
  // A fill copies 16 bytes a lane: a tensor whose rows are not whole vectors would misalign them.
  for (const std::string arch : {"gfx950", "sm_90"}) {
    CAPTURE(arch);
    const std::string message = "load(st, gl): the tensor's rows are 100 elements; a fill copies 8 consecutive elements (16 bytes) a lane on " + arch +
                                ", so the column count must be a multiple of 8";
    CHECK_THROWS_WITH_AS(product_kernel(arch, Product::AtB, false, 100, 72, 40), doctest::Contains(message.c_str()), Error);
  }
  Workgroup wg("gfx950", {index(1)}, 2, 2);
  const st nk = shared(64, 64, dtypes::bfloat16, SharedSwizzle::st_16x32);
  const tile::rt row = load(wg, nk, zero_index(), Major::row, 64, zero_index()), col = load(wg, nk, zero_index(), Major::col, 64, zero_index());
  const acc c = accumulator(wg, 64, 64), small = accumulator(wg, 32, 64);
  CHECK_THROWS_WITH_AS(mma_AB(wg, c, row, row, {}), doctest::Contains("mma_AB: B is a 64x64 register tile in row layout; this product takes it in col layout (k along its rows)"), Error);
  CHECK_THROWS_WITH_AS(mma_AtB(wg, c, row, col, {}), doctest::Contains("mma_AtB: A is a 64x64 register tile in row layout"), Error);
  CHECK_THROWS_WITH_AS(mma_AtBt(wg, c, col, col, {}), doctest::Contains("mma_AtBt: B is a 64x64 register tile in col layout; this product takes it in row layout (k along its columns)"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, col, row, {}), doctest::Contains("mma_ABt: A is a 64x64 register tile in col layout"), Error);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, small, row, row, {}), doctest::Contains("mma_ABt: A 64x64 (M x K) and B 64x64 (N x K) do not make the 32x64 accumulator"), Error);
  CHECK_THROWS_WITH_AS(mma_AB(wg, small, row, col, {}), doctest::Contains("mma_AB: A 64x64 (M x K) and B 64x64 (K x N) do not make the 32x64 accumulator"), Error);
  // transpose() relabels the same registers: a 64 x 32 col-major tile is the 32 x 64 row-major
  // tile whose operand (i, kk) is the same vector, and back.
  const tile::rt tall = load(wg, nk, zero_index(), Major::col, 32, zero_index()), seen = transpose(tall);
  CHECK((seen.major == Major::row && seen.rows == 32 && seen.cols == 64 && seen.sub_rows == 16 && seen.sub_cols == 32));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t kk = 0; kk < 2; ++kk) CHECK(seen.operand(i, kk).same(tall.operand(i, kk)));
  CHECK(transpose(seen).major == Major::col);
  CHECK(transpose(seen).part(1, 0).same(tall.part(1, 0)));
  // k_slice keeps the sub-tiles of some k steps, no data moved; after() orders their uses.
  const tile::rt second = k_slice(row, 1, 1);
  CHECK((second.rows == 64 && second.cols == 32 && second.parts.size() == 4));
  for (int64_t i = 0; i < 4; ++i) CHECK(second.operand(i, 0).same(row.operand(i, 1)));
  CHECK(k_slice(col, 0, 1).operand(3, 0).same(col.operand(3, 0)));
  CHECK_THROWS_WITH_AS(k_slice(row, 1, 2), doctest::Contains("k_slice: k steps [1, 3) of a register tile of 2 k steps of 32"), Error);
  // mn_slice keeps some M/N sub-tiles, every k step; subtile is a window of the accumulator's
  // sub-tiles (the same buffer), and a product into it writes only its sub-tiles.
  const tile::rt lower = mn_slice(row, 2, 2);
  CHECK((lower.rows == 32 && lower.cols == 64 && lower.parts.size() == 4));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t kk = 0; kk < 2; ++kk) CHECK(lower.operand(i, kk).same(row.operand(i + 2, kk)));
  CHECK(mn_slice(col, 1, 1).operand(0, 1).same(col.operand(1, 1)));
  CHECK_THROWS_WITH_AS(mn_slice(row, 3, 2), doctest::Contains("mn_slice: sub-tiles [3, 5) of a register tile of 4 M/N sub-tiles"), Error);
  const acc bottom = subtile(c, 32, 32, 16, 48);
  CHECK((bottom.rows == 32 && bottom.cols == 48 && bottom.first_tile_row == 2 && bottom.first_tile_col == 1 && bottom.buffer.same(c.buffer)));
  CHECK(bottom.element(0, 0, 3).same(c.element(2, 1, 3)));
  CHECK(subtile(bottom, 16, 16, 32, 16).element(0, 0, 0).same(c.element(3, 3, 0)));
  const acc updated = mma_ABt(wg, subtile(c, 32, 32, 0, 64), lower, row, {});
  const UOp written = updated.written();
  for (const UOp& s : written.src()) CHECK(s.src(0).src(1).const_int() >= 2);  // stores to sub-tile rows 2 and 3 only
  CHECK_THROWS_WITH_AS(subtile(c, 8, 16, 0, 64), doctest::Contains("subtile: rows [8, 24) and columns [0, 64) are not whole 16x16 sub-tiles of a 64x64 accumulator"), Error);
  CHECK_THROWS_WITH_AS(subtile(c, 48, 32, 0, 64), doctest::Contains("rows [48, 80)"), Error);
  const UOp fence = barrier({}, BarrierFence::None);
  const tile::rt ordered = second.after({fence});
  CHECK((ordered.parts[0].op() == Op::AFTER && ordered.parts[0].src(0).same(second.parts[0]) && ordered.parts[0].src(1).same(fence)));
  CHECK_THROWS_WITH_AS(static_cast<void>(c.written()), doctest::Contains("acc::written: this accumulator was not written by a tile operation"), Error);
  CHECK(zero(c, wg).written().op() == Op::GROUP);
  CHECK_THROWS_WITH_AS(staggered(Workgroup("gfx950", {index(1)}, 1, 4), fence),
                       doctest::Contains("staggered: the ping-pong pairs two rows of waves; this wave grid has 1"), Error);
  CHECK_THROWS_WITH_AS(load(wg, nk, zero_index(), Major::col, 24, zero_index()), doctest::Contains("load(rt, st): 24 columns of a 64x64 K x (M or N) tile in 32 x 16 operand sub-tiles"), Error);
  CHECK_THROWS_WITH_AS(load(wg, nk, zero_index(), Major::row, 48, zero_index()), doctest::Contains("load(rt, st): 48 rows of a 64x64"), Error);
  const gl g = global(0, index(64), index(64), dtypes::bfloat16), g32 = global(1, index(64), index(64), dtypes::float32);
  CHECK_THROWS_WITH_AS(load(wg, g, Major::row, 24, 64, zero_index(), zero_index()), doctest::Contains("load(rt, gl): a 24x64 row-major tile is not whole 16 x 32 operand sub-tiles"), Error);
  CHECK_THROWS_WITH_AS(load(wg, g, Major::col, 16, 64, zero_index(), zero_index()), doctest::Contains("load(rt, gl): a 16x64 col-major tile is not whole 32 x 16"), Error);
  CHECK_THROWS_WITH_AS(load(wg, g32, Major::row, 16, 32, zero_index(), zero_index()), doctest::Contains("bfloat16 or float16 inputs, or float8_e4m3 on gfx950, not float32"), Error);
  const st f16_tile = shared(64, 64, dtypes::float16, SharedSwizzle::st_16x32);
  CHECK_THROWS_WITH_AS(mma_ABt(wg, c, row, load(wg, f16_tile, zero_index(), Major::row, 64, zero_index()), {}),
                       doctest::Contains("mma_ABt: A holds bfloat16, B float16; one MFMA takes one input type"), Error);
  // Column vectors: shapes and layouts.
  const acc narrow = accumulator(wg, 64, 32);
  CHECK_THROWS_WITH_AS(sub_col(narrow, col_max(wg, small)), doctest::Contains("sub_col: a column vector of 64 columns does not fit the 64x32 accumulator"), Error);
  CHECK_THROWS_WITH_AS(div_col(c, col_sum(wg, narrow)), doctest::Contains("div_col: a column vector of 32 columns does not fit the 64x64 accumulator"), Error);
  acc spread = small;
  spread.layout = mma_m16n8k16_operand(dtypes::float16, MatrixOperand::C);
  CHECK_THROWS_WITH_AS(col_max(wg, spread), doctest::Contains("col_max: the 32x64 accumulator's register bit 0 selects a column; a column vector needs every register of a lane in one column"), Error);
  // Shared vectors.
  const sv short_vector = shared_vector(16, dtypes::float32);
  CHECK_THROWS_WITH_AS(store(wg, short_vector, zero_index(), row_max(wg, small), zero_index()), doctest::Contains("store(sv, rv): 32 values at offset 0 do not fit a shared vector of 16"), Error);
  CHECK_THROWS_WITH_AS(load_cols(wg, short_vector, zero_index(), c, index(8)), doctest::Contains("load_cols(sv): 64 values at offset 8 do not fit a shared vector of 16"), Error);
  CHECK_THROWS_WITH_AS(shared_vector(0, dtypes::float32), doctest::Contains("shared_vector: 1 stages of 0 elements"), Error);
  // Wave groups.
  CHECK_THROWS_WITH_AS(wave_rows(wg, index(1), 2), doctest::Contains("wave_rows: rows 1 .. 2 are outside the 2 x 2 wave grid"), Error);
  CHECK_THROWS_WITH_AS(wave_rows(wg, index(0), 3), doctest::Contains("wave_rows: 3 rows of a 2 x 2 wave grid"), Error);
  const WaveGroup top = wave_rows(wg, index(0), 1);
  CHECK(top.waves == 2);
  CHECK(wave_rows(wg, index(0), 2).waves == 4);
  CHECK(fill_instructions(wg, top, nk) == 2 * fill_instructions(wg, nk));
  // Waves outside a group issue nothing: its rounds are a loop whose trip count is 0 there (the
  // kernels above cannot see that: a non-member would write what a member writes). The whole
  // workgroup unrolls them.
  const UOp group_fill = load(wg, top, nk, zero_index(), g, zero_index(), zero_index()), fill = load(wg, nk, zero_index(), g, zero_index(), zero_index());
  REQUIRE((group_fill.op() == Op::END && fill.op() == Op::END));
  CHECK(group_fill.src(1).arg_as<RangeArg>().axis == AxisType::LOOP);
  CHECK(group_fill.src(1).src(0).same((top.member.cast(dtypes::index) * fill_instructions(wg, top, nk))));
  CHECK(fill.src(1).arg_as<RangeArg>().axis == AxisType::UNROLL);
  const st tiny = shared(16, 32, dtypes::bfloat16, SharedSwizzle::st_16x32);
  CHECK_THROWS_WITH_AS(load(wg, top, tiny, zero_index(), g, zero_index(), zero_index()),
                       doctest::Contains("load(st, gl): a 16x32 tile is not a whole number of direct-to-LDS rounds of 1024 elements (128 threads x 8)"), Error);
}
