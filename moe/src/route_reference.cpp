// route's host reference in double precision and the comparison of a device result with it
// (route.h): exact ids except for ties within the device's rounding.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "weft/moe/route.h"

namespace weft::moe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// How far apart two sigmoid scores may be and still tie within the device's float32 rounding
// (scores lie in about [-1, 2]; the device's error is a few 2^-24).
constexpr double kScoreTolerance = 1e-5;
// How far a device weight may be from the reference's: relative, plus an absolute floor.
constexpr double kWeightRelative = 1e-5, kWeightAbsolute = 1e-6;

// One token's scores as the rules of route.h rank them.
struct TokenScores {
  std::vector<double> score;  // softmax: the logit; sigmoid: s + bias (meaningless where nan)
  std::vector<double> sig;    // sigmoid: s (0 for NaN)
  std::vector<bool> nan;
};

TokenScores scores_of(const RouteConfig& c, const double* x, const std::vector<double>& bias) {
  TokenScores s;
  for (int64_t e = 0; e < c.experts; ++e) {
    const double v = x[e];
    s.nan.push_back(std::isnan(v));
    if (c.scoring == Scoring::SoftmaxTopK) {
      s.score.push_back(v);
      s.sig.push_back(0);
    } else {
      const double sg = std::isnan(v) ? 0.0 : 1.0 / (1.0 + std::exp(-v));
      s.sig.push_back(sg);
      s.score.push_back(sg + bias[static_cast<size_t>(e)]);
    }
  }
  return s;
}

// a ranks before b: numbers before NaN, larger first, then the lower id.
bool before(const TokenScores& s, int64_t a, int64_t b) {
  const auto ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
  if (s.nan[ia] != s.nan[ib]) return !s.nan[ia];
  if (!s.nan[ia] && s.score[ia] != s.score[ib]) return s.score[ia] > s.score[ib];
  return a < b;
}

int64_t group_size(const RouteConfig& c) { return c.scoring == Scoring::SigmoidGroupedTopK ? c.experts / c.n_group : c.experts; }
int64_t groups(const RouteConfig& c) { return c.scoring == Scoring::SigmoidGroupedTopK ? c.n_group : 1; }

// A group's score: the sum of its two best selection scores (NaN counts as -inf).
std::vector<double> group_scores(const RouteConfig& c, const TokenScores& s) {
  const int64_t gs = group_size(c);
  std::vector<double> out;
  for (int64_t h = 0; h < groups(c); ++h) {
    double a = -kInf, b = -kInf;
    for (int64_t e = h * gs; e < (h + 1) * gs; ++e) {
      const double v = s.nan[static_cast<size_t>(e)] ? -kInf : s.score[static_cast<size_t>(e)];
      if (v > a) b = a, a = v;
      else if (v > b) b = v;
    }
    out.push_back(gs == 1 ? a : a + b);
  }
  return out;
}

// The k best experts among the groups in `kept`.
std::vector<int32_t> top_k_of(const RouteConfig& c, const TokenScores& s, const std::vector<bool>& kept) {
  std::vector<int64_t> eligible;
  for (int64_t e = 0; e < c.experts; ++e)
    if (kept[static_cast<size_t>(e / group_size(c))]) eligible.push_back(e);
  std::partial_sort(eligible.begin(), eligible.begin() + c.top_k, eligible.end(), [&](int64_t a, int64_t b) { return before(s, a, b); });
  return std::vector<int32_t>(eligible.begin(), eligible.begin() + c.top_k);
}

// The group selections a device may make: the reference's, and where group scores tie within
// rounding at the cut, every choice among the tied ones.
std::vector<std::vector<bool>> group_selections(const RouteConfig& c, const TokenScores& s, double tolerance) {
  const int64_t G = groups(c), keep = c.scoring == Scoring::SigmoidGroupedTopK ? c.topk_group : 1;
  if (keep == G) return {std::vector<bool>(static_cast<size_t>(G), true)};
  const std::vector<double> score = group_scores(c, s);
  std::vector<int64_t> order(static_cast<size_t>(G));
  for (int64_t h = 0; h < G; ++h) order[static_cast<size_t>(h)] = h;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)]; });
  const double cut = score[static_cast<size_t>(order[static_cast<size_t>(keep - 1)])];
  auto near = [&](double v) { return v == cut || std::abs(v - cut) <= tolerance; };
  std::vector<bool> sure(static_cast<size_t>(G), false);
  std::vector<int64_t> tied;
  for (int64_t h = 0; h < G; ++h) {
    const double v = score[static_cast<size_t>(h)];
    if (near(v)) tied.push_back(h);
    else if (v > cut) sure[static_cast<size_t>(h)] = true;
  }
  const int64_t need = keep - static_cast<int64_t>(std::count(sure.begin(), sure.end(), true));
  std::vector<std::vector<bool>> out;
  std::vector<bool> pick = sure;
  std::function<void(size_t, int64_t)> choose = [&](size_t from, int64_t left) {
    if (left == 0) return out.push_back(pick);
    for (size_t i = from; i + static_cast<size_t>(left) <= tied.size(); ++i) {
      pick[static_cast<size_t>(tied[i])] = true;
      choose(i + 1, left - 1);
      pick[static_cast<size_t>(tied[i])] = false;
    }
  };
  choose(0, need);
  return out;
}

// The weights of choosing `ids`, by the rules of route.h.
std::vector<double> weights_of(const RouteConfig& c, const TokenScores& s, const std::vector<int32_t>& ids) {
  std::vector<double> w;
  const double k = static_cast<double>(ids.size());
  if (c.scoring == Scoring::SoftmaxTopK) {
    double m = -kInf;
    for (int32_t e : ids) m = std::max(m, s.nan[static_cast<size_t>(e)] ? -kInf : s.score[static_cast<size_t>(e)]);
    double sum = 0;
    for (int32_t e : ids) {
      const double v = s.nan[static_cast<size_t>(e)] ? -kInf : s.score[static_cast<size_t>(e)];
      w.push_back(v == m ? 1.0 : std::exp(v - m));
      sum += w.back();
    }
    for (double& x : w) x /= sum;
    return w;
  }
  double sum = 0;
  for (int32_t e : ids) sum += s.sig[static_cast<size_t>(e)];
  for (int32_t e : ids) {
    double x = s.sig[static_cast<size_t>(e)];
    if (c.normalize) x = sum > 0 ? x / sum : 1.0 / k;
    w.push_back(x * static_cast<double>(static_cast<float>(c.scaling)));
  }
  return w;
}

void check_sizes(const RouteConfig& c, const std::vector<double>& logits, const std::vector<double>& bias) {
  c.validate();
  if (static_cast<int64_t>(logits.size()) != c.tokens * c.experts)
    throw Error("moe route: " + std::to_string(logits.size()) + " logits for tokens * experts = " + std::to_string(c.tokens * c.experts));
  if (c.scoring == Scoring::SigmoidGroupedTopK && static_cast<int64_t>(bias.size()) != c.experts)
    throw Error("moe route: the correction bias has " + std::to_string(bias.size()) + " values for " + std::to_string(c.experts) + " experts");
}

}  // namespace

RouteResult route_reference(const RouteConfig& c, const std::vector<double>& logits, const std::vector<double>& bias) {
  check_sizes(c, logits, bias);
  RouteResult r;
  for (int64_t t = 0; t < c.tokens; ++t) {
    const TokenScores s = scores_of(c, logits.data() + t * c.experts, bias);
    const std::vector<int32_t> ids = top_k_of(c, s, group_selections(c, s, 0.0).front());
    const std::vector<double> w = weights_of(c, s, ids);
    r.expert_ids.insert(r.expert_ids.end(), ids.begin(), ids.end());
    r.weights.insert(r.weights.end(), w.begin(), w.end());
  }
  return r;
}

gemm::Check check_route(const RouteConfig& c, const std::vector<double>& logits, const std::vector<double>& bias,
                        const std::vector<int32_t>& expert_ids, const std::vector<float>& weights) {
  check_sizes(c, logits, bias);
  const auto k = static_cast<size_t>(c.top_k);
  if (expert_ids.size() != static_cast<size_t>(c.tokens) * k || weights.size() != expert_ids.size())
    throw Error("moe route: check_route needs tokens * top_k ids and weights");
  const double tolerance = c.scoring == Scoring::SoftmaxTopK ? 0.0 : kScoreTolerance;
  gemm::Check check;
  auto bad = [&](const std::string& what) {
    if (check.bad++ == 0) check.first_bad = what;
  };
  for (int64_t t = 0; t < c.tokens; ++t) {
    const TokenScores s = scores_of(c, logits.data() + t * c.experts, bias);
    const std::vector<int32_t> got(expert_ids.begin() + static_cast<long>(t * c.top_k), expert_ids.begin() + static_cast<long>((t + 1) * c.top_k));
    const std::string token = "token " + std::to_string(t);
    ++check.count;
    bool valid = true;
    for (size_t j = 0; j < k && valid; ++j)
      valid = got[j] >= 0 && got[j] < c.experts && std::find(got.begin(), got.begin() + static_cast<long>(j), got[j]) == got.begin() + static_cast<long>(j);
    if (!valid) {
      bad(token + ": expert ids out of range or repeated");
      continue;
    }
    // The ids must be some admissible selection's ranking, choice by choice within rounding.
    bool admissible = false;
    std::vector<int32_t> want;
    for (const std::vector<bool>& kept : group_selections(c, s, tolerance)) {
      const std::vector<int32_t> ref = top_k_of(c, s, kept);
      if (want.empty()) want = ref;
      bool ok = true;
      for (size_t j = 0; j < k && ok; ++j) {
        const auto d = static_cast<size_t>(got[j]), r = static_cast<size_t>(ref[j]);
        // A different expert within rounding; an exact tie only where rounding moved the
        // reference's expert to another place of this token's choices.
        const bool in_got = std::find(got.begin(), got.end(), ref[j]) != got.end();
        ok = got[j] == ref[j] || (kept[d / static_cast<size_t>(group_size(c))] && !s.nan[d] && !s.nan[r] &&
                                  std::abs(s.score[d] - s.score[r]) <= tolerance && (s.score[d] != s.score[r] || in_got));
      }
      // Exactly equal scores are in order of id.
      for (size_t j = 0; j + 1 < k && ok; ++j) {
        const auto a = static_cast<size_t>(got[j]), b = static_cast<size_t>(got[j + 1]);
        const bool tie = s.nan[a] == s.nan[b] && (s.nan[a] || s.score[a] == s.score[b]);
        ok = !tie || got[j] < got[j + 1];
      }
      admissible |= ok;
    }
    if (!admissible) {
      std::string g, w;
      for (size_t j = 0; j < k; ++j) g += " " + std::to_string(got[j]), w += " " + std::to_string(want[j]);
      bad(token + ": experts" + g + ", expected" + w);
      continue;
    }
    const std::vector<double> ref = weights_of(c, s, got);
    for (size_t j = 0; j < k; ++j) {
      const double dev = weights[static_cast<size_t>(t) * k + j], tol = kWeightRelative * std::abs(ref[j]) + kWeightAbsolute;
      const double err = std::isnan(dev) ? kInf : std::abs(dev - ref[j]);
      ++check.count;
      check.max_error = std::max(check.max_error, err);
      check.worst_ratio = std::max(check.worst_ratio, err / tol);
      if (err > tol) bad(token + ": weight " + std::to_string(j) + " = " + std::to_string(dev) + ", expected " + std::to_string(ref[j]));
    }
  }
  return check;
}

}  // namespace weft::moe
