// Flash attention's building blocks in the tile layer, on both emulated CDNA targets: row
// statistics (row_max, row_sum) and row broadcasts on an accumulator loaded from global memory,
// and one 64 x 64 attention block per workgroup, O = softmax(Q K^T * scale) V, against
// double-precision host references with fresh random inputs and poisoned outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <sstream>

#include "kernel_harness.h"
#include "weft/emulator/listing.h"
#include "weft/kernels/tiles.h"

using namespace weft;
using namespace weft::tile;

using weft::testing::random_bf16;

namespace {

const UOp zero_index() { return constant(Wide(0)); }

// ---- row statistics ----

// Each wave loads an acc_rows x cols accumulator of X (waves stacked down the rows, workgroups
// after them) and writes: out0 = X - row_max, out1 = X * row_sum, out2 = X / row_sum,
// out3 = [row_max, row_sum] (rows x 2), out4 = exp2(X).
UOp row_stats_kernel(const std::string& arch, int64_t wave_rows, int64_t acc_rows, int64_t cols, int64_t blocks, const std::optional<Layout>& layout) {
  const UOp rows = constant(Wide(blocks * wave_rows * acc_rows)), width = constant(Wide(cols));
  const gl x = global(5, rows, width, dtypes::float32);
  const gl out_sub = global(0, rows, width, dtypes::float32), out_mul = global(1, rows, width, dtypes::float32);
  const gl out_div = global(2, rows, width, dtypes::float32), out_stats = global(3, rows, constant(Wide(2)), dtypes::float32);
  const gl out_exp = global(4, rows, width, dtypes::float32);
  Workgroup wg(arch, {constant(Wide(blocks))}, wave_rows, 1);
  const UOp row0 = (wg.block(0) * wave_rows + wg.wave_row()) * acc_rows;
  acc held = accumulator(wg, acc_rows, cols);
  if (layout) held.layout = *layout;
  const acc xs = load(wg, held, x, row0, zero_index());
  const rv m = row_max(wg, xs), s = row_sum(wg, xs);
  return sink({"row_stats"}, {store(wg, out_sub, sub_row(xs, m), row0, zero_index()), store(wg, out_mul, mul_row(xs, s), row0, zero_index()),
                              store(wg, out_div, div_row(xs, s), row0, zero_index()), store(wg, out_stats, m, row0, zero_index()),
                              store(wg, out_stats, s, row0, constant(Wide(1))), store(wg, out_exp, exp2(xs), row0, zero_index())});
}

void check_row_stats(int64_t wave_rows, int64_t acc_rows, int64_t cols, int64_t blocks, const std::optional<Layout>& layout = std::nullopt) {
  const int64_t rows = blocks * wave_rows * acc_rows;
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    CAPTURE(wave_rows);
    CAPTURE(acc_rows);
    CAPTURE(cols);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, row_stats_kernel(dev->arch(), wave_rows, acc_rows, cols, blocks, layout));
    const std::vector<float> x = weft::testing::random_floats(static_cast<size_t>(rows * cols), -4.0f, 4.0f);
    const size_t n = x.size();
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, n), weft::testing::poisoned(*dev, dtypes::float32, n),
                                    weft::testing::poisoned(*dev, dtypes::float32, n),
                                    weft::testing::poisoned(*dev, dtypes::float32, static_cast<size_t>(rows * 2)),
                                    weft::testing::poisoned(*dev, dtypes::float32, n), weft::testing::put(*dev, dtypes::float32, x)};
    compiled.launch(*dev, args);
    const auto sub = weft::testing::get<float>(*dev, args[0]), mul = weft::testing::get<float>(*dev, args[1]);
    const auto div = weft::testing::get<float>(*dev, args[2]), stats = weft::testing::get<float>(*dev, args[3]);
    const auto ex = weft::testing::get<float>(*dev, args[4]);
    int bad = 0;
    for (int64_t r = 0; r < rows && bad < 5; ++r) {
      double mx = -INFINITY, sum = 0, abs_sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double v = x[static_cast<size_t>(r * cols + c)];
        mx = std::max(mx, v);
        sum += v;
        abs_sum += std::abs(v);
      }
      // The maximum and X - max are exact in fp32 (max is one of the inputs; the difference of
      // two floats within a factor of 2^24 is rounded once, as the host rounds it). The fp32
      // sum in a different order than the host's is off by at most cols * 2^-24 * sum |x|.
      const double sum_tol = static_cast<double>(cols) * std::ldexp(1.0, -24) * abs_sum;
      const auto at = [&](int64_t c) { return static_cast<size_t>(r * cols + c); };
      if (stats[static_cast<size_t>(2 * r)] != static_cast<float>(mx) || std::abs(stats[static_cast<size_t>(2 * r + 1)] - sum) > sum_tol) {
        ++bad;
        FAIL_CHECK("row " << r << ": max " << stats[static_cast<size_t>(2 * r)] << " (want " << mx << "), sum "
                          << stats[static_cast<size_t>(2 * r + 1)] << " (want " << sum << ")");
      }
      for (int64_t c = 0; c < cols; ++c) {
        const double v = x[at(c)];
        const bool ok = sub[at(c)] == static_cast<float>(static_cast<float>(v) - static_cast<float>(mx)) &&
                        std::abs(mul[at(c)] - v * sum) <= std::abs(v) * sum_tol + std::abs(v * sum) * std::ldexp(1.0, -23) &&
                        // x / s with s off by sum_tol: relative error sum_tol / |s|, plus the division's rounding.
                        std::abs(div[at(c)] - v / sum) <= std::abs(v / sum) * (sum_tol / std::abs(sum) * 2 + std::ldexp(1.0, -22)) &&
                        // v_exp_f32: 1 ulp (CDNA ISA guide), and the host's rounding.
                        std::abs(ex[at(c)] - std::exp2(v)) <= std::exp2(v) * std::ldexp(1.0, -21);
        if (!ok && bad++ < 5)
          FAIL_CHECK("(" << r << ", " << c << "): x " << v << ", x - max " << sub[at(c)] << ", x * sum " << mul[at(c)] << " (want " << v * sum
                         << "), x / sum " << div[at(c)] << " (want " << v / sum << "), exp2 " << ex[at(c)] << " (want " << std::exp2(v) << ")");
      }
    }
    CHECK(bad == 0);
  }
}

// ---- one attention block ----

constexpr int64_t kBlock = 64, kHead = 64;

// O = softmax(Q K^T * scale) V for the 64 x 64 block of queries and keys of each workgroup:
// Q, K, V and O are [B * 64, 64], block b in rows 64b .. 64b + 63. Four waves, stacked down
// the rows (4 x 1): each wave owns 16 query rows and all 64 keys, so a softmax row never
// leaves its wave (row statistics are lane shuffles only, no LDS reduction across waves),
// while the waves share one copy of K and V in shared memory, as in HipKittens' attention.
UOp attention_block_kernel(const std::string& arch, double scale) {
  const UOp blocks = variable("B", 1, 1 << 16);
  const UOp rows = blocks.cast(dtypes::index) * kBlock, head = constant(Wide(kHead));
  const gl o = global(0, rows, head, dtypes::float32), q = global(1, rows, head, dtypes::bfloat16);
  const gl k = global(2, rows, head, dtypes::bfloat16), v = global(3, rows, head, dtypes::bfloat16);
  Workgroup wg(arch, {blocks}, 4, 1);
  const int64_t wave_rows = kBlock / wg.wave_rows();
  const st q_smem = shared(kBlock, kHead, dtypes::bfloat16, SharedSwizzle::st_16x32);
  const st k_smem = shared(kBlock, kHead, dtypes::bfloat16, SharedSwizzle::st_16x32);
  const st vt_smem = shared(kHead, kBlock, dtypes::bfloat16, SharedSwizzle::st_16x32);  // V^T: d x keys
  const st p_smem = shared(kBlock, kBlock, dtypes::bfloat16, SharedSwizzle::st_16x32);
  const UOp row0 = wg.block(0) * kBlock, wave_row0 = wg.wave_row() * wave_rows, stage = zero_index();

  // Q and K direct to LDS, V transposed through registers.
  const UOp fills = group({load(wg, q_smem, stage, q, row0, zero_index()), load(wg, k_smem, stage, k, row0, zero_index())});
  const UOp ready = barrier({wait_counts({.vm = 0}, {fills})});
  const UOp v_stored = load_transposed(wg, vt_smem, stage, v, row0, zero_index());

  // S = Q K^T, in log2 units: softmax(x) = 2^(x log2 e - max) / sum.
  const tile::rt q_tile = load(wg, q_smem.after({ready}), stage, MatrixOperand::A, wave_rows, wg.wave_row());
  const tile::rt k_tile = load(wg, k_smem.after({ready}), stage, MatrixOperand::B, kBlock, zero_index());
  const acc s = mma_ABt(wg, zero(accumulator(wg, wave_rows, kBlock), wg), q_tile, k_tile, {});
  const acc logits = map(s, [&](const UOp& x) { return x * (scale * M_LOG2E); });
  const acc p = exp2(sub_row(logits, row_max(wg, logits)));
  const rv l = row_sum(wg, p);

  // P (C layout) -> bf16 in LDS -> A operand; O = P V = P (V^T)^T, then / l.
  const UOp p_stored = store(wg, p_smem, stage, p, wave_row0, zero_index());
  const tile::rt p_tile = load(wg, p_smem.after({p_stored}), stage, MatrixOperand::A, wave_rows, wg.wave_row());
  const tile::rt vt_tile = load(wg, vt_smem.after({v_stored}), stage, MatrixOperand::B, kHead, zero_index());
  const acc out = div_row(mma_ABt(wg, zero(accumulator(wg, wave_rows, kHead), wg), p_tile, vt_tile, {}), l);
  return sink({"attention_block"}, {store(wg, o, out, row0 + wave_row0, zero_index())});
}

void check_attention(int64_t blocks) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(kHead));
  const size_t n = static_cast<size_t>(blocks * kBlock * kHead);
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    CAPTURE(blocks);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, attention_block_kernel(dev->arch(), scale));
    // Q and K in [-2, 2] give logits spread over several units, so the softmax is far from
    // uniform and a wrong max or row would show.
    std::vector<double> q, k, v;
    const auto qb = random_bf16(n, -2, 2, q), kb = random_bf16(n, -2, 2, k), vb = random_bf16(n, -1, 1, v);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, n), weft::testing::put(*dev, dtypes::bfloat16, qb, "Q"),
                                    weft::testing::put(*dev, dtypes::bfloat16, kb, "K"), weft::testing::put(*dev, dtypes::bfloat16, vb, "V")};
    compiled.launch(*dev, args, {{"B", blocks}});
    const auto got = weft::testing::get<float>(*dev, args[0]);
    int bad = 0;
    double worst = 0;  // the largest error as a fraction of its tolerance
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t i = 0; i < kBlock; ++i) {
        const auto at = [&](const std::vector<double>& t, int64_t row, int64_t c) { return t[static_cast<size_t>((b * kBlock + row) * kHead + c)]; };
        std::vector<double> p(kBlock);
        double mx = -INFINITY, l = 0;
        for (int64_t j = 0; j < kBlock; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < kHead; ++c) dot += at(q, i, c) * at(k, j, c);
          p[static_cast<size_t>(j)] = dot * scale;
          mx = std::max(mx, p[static_cast<size_t>(j)]);
        }
        for (double& x : p) l += (x = std::exp(x - mx));
        for (int64_t c = 0; c < kHead; ++c) {
          double want = 0, magnitude = 0;
          for (int64_t j = 0; j < kBlock; ++j) {
            want += p[static_cast<size_t>(j)] / l * at(v, j, c);
            magnitude += p[static_cast<size_t>(j)] / l * std::abs(at(v, j, c));
          }
          // P enters P V rounded to bf16 (8 significant bits: relative error <= 2^-9 for each
          // p_j), while l sums the fp32 P; so O is off by at most 2^-9 * sum_j p_j |v_j| / l.
          // The rest (fp32 logits from exact bf16 products, v_exp_f32's 1 ulp, fp32 sums of 64
          // terms) is below 2^-16 relative: 2^-8 leaves a factor 2 for it.
          const double tol = std::ldexp(1.0, -8) * magnitude + 1e-7;
          const float o = got[static_cast<size_t>((b * kBlock + i) * kHead + c)];
          worst = std::max(worst, std::abs(o - want) / tol);
          if (!(std::abs(o - want) <= tol) && bad++ < 5)
            FAIL_CHECK("block " << b << ", O[" << i << "][" << c << "] = " << o << ", want " << want << " (tolerance " << tol << ")");
        }
      }
    INFO("largest error / tolerance: " << worst);
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("tiles: row_max and row_sum and row broadcasts on 4 waves of 16 x 64") { check_row_stats(4, 16, 64, 2); }

TEST_CASE("tiles: row_max and row_sum and row broadcasts on 1 wave of 64 x 32") { check_row_stats(1, 64, 32, 1); }

TEST_CASE("tiles: row statistics where a lane's registers span columns (as in mma.sync's C layout), on 64 lanes") {
  // A 16x16 sub-tile whose register bit 0 is column bit 0 and register bit 1 row bit 3 (mma.sync's
  // C fragment: each lane holds pairs of columns of two rows 8 apart); lane bits 0-2 are column
  // bits 1-3, lane bits 3-5 row bits 0-2. A row vector's two registers of one row must agree, and
  // its stores write each row once.
  const Layout pairs({{"register", 2}, {"lane", 6}}, {{"row", 4}, {"col", 4}},
                     std::vector<Layout::Coords>{{{"col", 1}}, {{"row", 8}}, {{"col", 2}}, {{"col", 4}}, {{"col", 8}},
                                                 {{"row", 1}}, {{"row", 2}}, {{"row", 4}}});
  check_row_stats(4, 16, 64, 2, pairs);
}

TEST_CASE("tiles: attention on one 64 x 64 block") { check_attention(1); }

TEST_CASE("tiles: attention on 3 independent blocks") { check_attention(3); }

TEST_CASE("tiles: attention operations reject shapes they cannot take") {
  Workgroup wg("gfx950", {constant(Wide(1))}, 1, 1);
  const acc a = accumulator(wg, 32, 64), b = accumulator(wg, 16, 64);
  CHECK_THROWS_WITH_AS(sub_row(a, row_max(wg, b)), doctest::Contains("a row vector of 16 rows (4 values a lane per 16 rows) does not fit the 32x64 accumulator"), Error);
  CHECK_THROWS_WITH_AS(div_row(b, row_sum(wg, a)), doctest::Contains("div_row: a row vector of 32 rows"), Error);
  const st small = shared(16, 32, dtypes::bfloat16, SharedSwizzle::st_16x32);
  CHECK_THROWS_WITH_AS(store(wg, small, zero_index(), a, zero_index(), zero_index()),
                       doctest::Contains("a 32x64 accumulator does not fit in a 16x32 tile"), Error);
  const gl f32 = global(0, constant(Wide(64)), constant(Wide(64)), dtypes::float32);
  CHECK_THROWS_WITH_AS(load_transposed(wg, small, zero_index(), f32, zero_index(), zero_index()),
                       doctest::Contains("the shared tile holds bfloat16, the global tensor float32"), Error);
  // A layout whose register bit selects a row and a column at once has no row vector.
  acc diagonal = b;
  diagonal.layout = Layout({{"register", 2}, {"lane", 6}}, {{"row", 4}, {"col", 4}},
                           std::vector<Layout::Coords>{{{"row", 1}, {"col", 1}}, {{"row", 8}}, {{"col", 2}}, {{"col", 4}}, {{"col", 8}},
                                                       {{"row", 2}}, {{"row", 4}}, {{"col", 1}}});
  CHECK_THROWS_WITH_AS(row_max(wg, diagonal), doctest::Contains("row_max: the 16x64 accumulator's register bit 0 selects a column and a row"), Error);
}


TEST_CASE("tiles: the attention block's code has its MFMAs and one exp2 per element and shuffles for the row statistics and three barriers") {
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto compiled = rt::CompiledKernel::compile(*dev, attention_block_kernel(dev->arch(), 0.125));
    std::ostringstream listing;
    emu::write_listing(emu::CodeObject::load(compiled.code_object()), listing);
    std::map<std::string, int> count;
    std::istringstream lines(listing.str());
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string pc, mnemonic;
      if (words >> pc >> mnemonic) ++count[mnemonic];
    }
    INFO(listing.str());
    // Per wave: S and O are 16 x 64 each, 4 sub-tiles of k steps of 32 (gfx950) or 16 (gfx942).
    const bool gfx950 = dev->arch() == "gfx950";
    CHECK(count[gfx950 ? "v_mfma_f32_16x16x32_bf16" : "v_mfma_f32_16x16x16_bf16"] == (gfx950 ? 16 : 32));
    CHECK(count["v_exp_f32_e32"] == 16);  // a lane's 16 elements of P
    // Row max and row sum: 4 rows a lane, one shuffle for each of the 4 column lane bits.
    CHECK(count["ds_bpermute_b32"] == 2 * 4 * 4);
    CHECK(count["s_barrier"] == 3);  // Q/K fills, V^T stores, P stores
  }
}
