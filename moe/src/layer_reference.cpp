// The MoE layer's host reference (layer.h, layer_reference.h): every stage in double, rounded to
// bf16 where the device rounds, with a bound on |device - reference| carried through.
#include "layer_reference.h"

#include <cmath>

#include "weft/dsl/float_formats.h"

namespace weft::moe {

namespace detail {

namespace {

constexpr double kFp32 = 0x1p-24;    // fp32's unit roundoff (24 significant bits)
constexpr double kBf16 = 0x1p-8;     // bf16's (8 significant bits)
constexpr double kTiny = 0x1p-126;   // fp32's subnormal range (flushed to zero on some targets)
constexpr double kSiluSlope = 1.1;   // max |silu'(x)| = 1.0998...

double bf16(double v) { return bf16_to_float(float_to_bf16(static_cast<float>(v))); }

// The bound after both sides round to bf16: |bf16(p_dev) - bf16(p_ref)| <= e + 2^-8 |p_dev| +
// 2^-8 |p_ref| where |p_dev - p_ref| <= e (plus the subnormals' absolute spacing).
double rounded(double e, double ref) { return e + kBf16 * (2 * std::abs(ref) + e) + kTiny; }

double silu(double g) { return g / (1 + std::exp(-g)); }

size_t at(int64_t row, int64_t cols, int64_t col) { return static_cast<size_t>(row * cols + col); }

}  // namespace

Bounded exact(std::vector<double> values, int64_t cols) {
  Bounded b;
  b.cols = cols;
  b.bound.assign(values.size(), 0.0);
  b.value = std::move(values);
  return b;
}

// An fp32 sum of K exact products (bf16 x bf16 fits fp32's 24 bits) in any order is within
// (K + 1) 2^-24 of the sum of the products' magnitudes (first order; K <= 2^15 here). The
// inputs' bounds pass on through |W|.
Bounded project(const Bounded& in, const std::vector<double>& w, const std::vector<int32_t>& experts, int64_t n) {
  const int64_t rows = in.rows(), k = in.cols;
  Bounded out;
  out.cols = n;
  out.value.resize(static_cast<size_t>(rows * n));
  out.bound.resize(out.value.size());
  const double gamma = static_cast<double>(k + 1) * kFp32;
  for (int64_t i = 0; i < rows; ++i) {
    const double* x = &in.value[at(i, k, 0)];
    const double* ex = &in.bound[at(i, k, 0)];
    for (int64_t c = 0; c < n; ++c) {
      const double* wr = &w[at(experts[static_cast<size_t>(i)] * n + c, k, 0)];
      double sum = 0, magnitude = 0, carried = 0;
      for (int64_t j = 0; j < k; ++j) {
        sum += x[j] * wr[j];
        magnitude += std::abs(x[j] * wr[j]);
        carried += ex[j] * std::abs(wr[j]);
      }
      out.value[at(i, n, c)] = bf16(sum);
      out.bound[at(i, n, c)] = rounded(carried + gamma * (magnitude + carried), sum);
    }
  }
  return out;
}

// The device's fp32 silu(g) * u: g * log2(e), exp2, 1 +, reciprocal, two products; the
// argument's rounding grows with |g|. (8 + |g|) 2^-22 relative is a generous bound for both
// targets' exp2 and reciprocal (CDNA's v_exp_f32 / v_rcp_f32 and PTX's ex2.approx / rcp are
// within a few ulps).
Bounded silu_mul(const Bounded& h) {
  const int64_t rows = h.rows(), f = h.cols / 2;
  Bounded out;
  out.cols = f;
  out.value.resize(static_cast<size_t>(rows * f));
  out.bound.resize(out.value.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < f; ++c) {
      const double g = h.value[at(i, 2 * f, c)], u = h.value[at(i, 2 * f, f + c)];
      const double eg = h.bound[at(i, 2 * f, c)], eu = h.bound[at(i, 2 * f, f + c)];
      const double p = silu(g) * u;
      // |silu(g') u' - silu(g) u| <= |silu(g') - silu(g)| |u'| + |silu(g)| |u' - u|.
      const double carried = kSiluSlope * eg * (std::abs(u) + eu) + std::abs(silu(g)) * eu;
      const double arithmetic = (8 + std::abs(g) + eg) * 0x1p-22 * (std::abs(silu(g)) + kSiluSlope * eg) * (std::abs(u) + eu) + kTiny;
      out.value[at(i, f, c)] = bf16(p);
      out.bound[at(i, f, c)] = rounded(carried + arithmetic, p);
    }
  return out;
}

// fp32 products and a sum of k terms in order of j: (k + 1) 2^-24 of the terms' magnitudes.
Bounded combine(const Bounded& ys, const std::vector<int64_t>& slot_of_row, const RoutingPlan& plan, int64_t top_k) {
  const int64_t d = ys.cols, tokens = static_cast<int64_t>(plan.dest_row.size()) / top_k;
  Bounded out;
  out.cols = d;
  out.value.resize(static_cast<size_t>(tokens * d));
  out.bound.resize(out.value.size());
  const double gamma = static_cast<double>(top_k + 1) * kFp32;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < d; ++c) {
      double sum = 0, magnitude = 0, carried = 0;
      for (int64_t j = 0; j < top_k; ++j) {
        const size_t choice = static_cast<size_t>(t * top_k + j);
        const int64_t slot = slot_of_row[static_cast<size_t>(plan.dest_row[choice])];
        const double w = plan.weights[choice], v = ys.value[at(slot, d, c)], e = ys.bound[at(slot, d, c)];
        sum += w * v;
        magnitude += std::abs(w) * (std::abs(v) + e);
        carried += std::abs(w) * e;
      }
      out.value[at(t, d, c)] = bf16(sum);
      out.bound[at(t, d, c)] = rounded(carried + gamma * magnitude, sum);
    }
  return out;
}

RealRows real_rows(const MoeShape& shape, const RoutingPlan& plan) {
  RealRows r;
  r.slot_of_row.assign(plan.row_token.size(), -1);
  for (size_t row = 0; row < plan.row_token.size(); ++row) {
    if (plan.row_token[row] < 0) continue;
    r.slot_of_row[row] = static_cast<int64_t>(r.rows.size());
    r.rows.push_back(static_cast<int64_t>(row));
    r.experts.push_back(plan.block_expert[row / static_cast<size_t>(shape.block_rows)]);
  }
  return r;
}

std::vector<double> gather_rows(const std::vector<double>& all, const std::vector<int64_t>& rows, int64_t cols) {
  std::vector<double> out;
  out.reserve(rows.size() * static_cast<size_t>(cols));
  for (int64_t r : rows) out.insert(out.end(), all.begin() + r * cols, all.begin() + (r + 1) * cols);
  return out;
}

}  // namespace detail

MoeLayerReference moe_layer_reference(const MoeLayerConfig& config, const MoeLayerHost& host, const RoutingPlan& plan) {
  using namespace detail;
  const MoeShape s = config.shape();
  const int64_t d = config.hidden, f = config.ffn;
  const RealRows real = real_rows(s, plan);
  std::vector<int64_t> tokens;
  for (int64_t r : real.rows) tokens.push_back(plan.row_token[static_cast<size_t>(r)]);
  const Bounded xs = exact(gather_rows(host.x, tokens, d), d);
  const Bounded h = project(xs, host.w1, real.experts, 2 * f);
  const Bounded a = silu_mul(h);
  const Bounded ys = project(a, host.w2, real.experts, d);
  Bounded y = combine(ys, real.slot_of_row, plan, s.top_k);
  return {std::move(y.value), std::move(y.bound)};
}

}  // namespace weft::moe
