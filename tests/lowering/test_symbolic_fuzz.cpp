// Brute-force soundness of the simplifier: random integer expressions over variables with
// small ranges must keep their value on every assignment, and the value range of the
// simplified expression must contain every value it takes. Set WEFT_FUZZ_SEED to replay a run;
// WEFT_FUZZ_COUNT to run more expressions.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>

#include "expr_eval.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/symbolic.h"

using namespace weft;

namespace {

struct Var {
  std::string name;
  int64_t lo, hi;
  UOp node;
};

class ExprGen {
 public:
  ExprGen(std::mt19937_64& rng, const std::vector<Var>& vars, DType dtype = dtypes::index)
      : rng_(rng), vars_(vars), dtype_(dtype) {}

  UOp expr(int depth) {
    if (depth == 0 || pick(5) == 0) return leaf();
    switch (pick(12)) {
      case 0:
      case 1: return expr(depth - 1) + expr(depth - 1);
      case 2: return expr(depth - 1) - expr(depth - 1);
      case 3:
      case 4: return expr(depth - 1) * small_const(-4, 4);
      case 5: return expr(depth - 1) * expr(depth - 1);
      case 6: return expr(depth - 1) / divisor();
      case 7: return expr(depth - 1) % divisor();
      case 8: return max(expr(depth - 1), expr(depth - 1));
      case 9: return min(expr(depth - 1), expr(depth - 1));
      case 10: return where(condition(depth - 1), expr(depth - 1), expr(depth - 1));
      default: return -expr(depth - 1);
    }
  }

  UOp condition(int depth) {
    UOp a = expr(depth), b = pick(2) ? expr(depth) : small_const(-12, 12);
    switch (pick(5)) {
      case 0: return a < b;
      case 1: return a.ne(b);
      case 2: return a.eq(b);
      case 3: return a >= b;
      default: return (!(a < b)) & (b < a + 3);
    }
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  UOp small_const(int lo, int hi) { return constant(wrap_to(dtype_, Wide(lo + pick(hi - lo + 1))), dtype_); }
  UOp leaf() { return pick(3) ? vars_[static_cast<size_t>(pick(static_cast<int>(vars_.size())))].node : small_const(-8, 8); }
  UOp divisor() {
    // Nonzero: the expression must be defined everywhere for the comparison to mean anything.
    int d = 1 + pick(7);
    return constant(wrap_to(dtype_, Wide(pick(4) == 0 ? -d : d)), dtype_);
  }

  std::mt19937_64& rng_;
  const std::vector<Var>& vars_;
  DType dtype_;
};

std::vector<testing::Assignment> all_assignments(const std::vector<Var>& vars) {
  std::vector<testing::Assignment> out{{}};
  for (const Var& v : vars) {
    std::vector<testing::Assignment> next;
    for (const auto& a : out)
      for (int64_t x = v.lo; x <= v.hi; ++x) {
        auto b = a;
        b.vars[v.name] = x;
        next.push_back(std::move(b));
      }
    out = std::move(next);
  }
  return out;
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* s = std::getenv(name);
  return s ? std::strtoull(s, nullptr, 10) : fallback;
}

// The original and simplified expressions agree at `assignment`, and each value lies in its
// expression's value range; a failure names the seed, the expressions and the assignment.
void check_agreement(const UOp& e, const UOp& s, const testing::Assignment& assignment, uint64_t seed, uint64_t n) {
  auto want = testing::evaluate(e, assignment);
  auto got = testing::evaluate(s, assignment);
  const bool ok = want && got && *want == *got && s.vmin() <= *got && *got <= s.vmax() && e.vmin() <= *want && *want <= e.vmax();
  if (ok) return;
  std::string values;
  for (const auto& [k, v] : assignment.vars) values += k + "=" + wide_to_string(v) + " ";
  FAIL("seed " << seed << " expression " << n << ": " << expr_string(e) << "\n  simplified: " << expr_string(s) << "\n  at "
               << values << "original " << (want ? wide_to_string(*want) : "undefined") << " in [" << wide_to_string(e.vmin())
               << ", " << wide_to_string(e.vmax()) << "], simplified " << (got ? wide_to_string(*got) : "undefined") << " in ["
               << wide_to_string(s.vmin()) << ", " << wide_to_string(s.vmax()) << "]");
}

}  // namespace

TEST_CASE("fuzz: simplified expressions agree with the original on every assignment") {
  const uint64_t seed = env_or("WEFT_FUZZ_SEED", std::random_device{}());
  const uint64_t count = env_or("WEFT_FUZZ_COUNT", 10000);
  MESSAGE("simplifier fuzz seed " << seed << " (replay with WEFT_FUZZ_SEED=" << seed << "), " << count << " expressions");
  std::mt19937_64 rng(seed);
  uint64_t checked = 0, changed = 0;
  for (uint64_t n = 0; n < count; ++n) {
    std::vector<Var> vars;
    for (const char* name : {"a", "b", "c"}) {
      int64_t lo = static_cast<int64_t>(rng() % 9) - 5, hi = lo + static_cast<int64_t>(rng() % 6);
      vars.push_back({name, lo, hi, variable(name, lo, hi, dtypes::index)});
    }
    ExprGen gen(rng, vars);
    UOp e = rng() % 8 == 0 ? gen.condition(3) : gen.expr(4);
    UOp s = simplify(e);
    changed += !s.same(e);
    for (const auto& assignment : all_assignments(vars)) {
      check_agreement(e, s, assignment, seed, n);
      ++checked;
    }
  }
  MESSAGE(count << " expressions, " << changed << " changed by the simplifier, " << checked << " assignments checked");
  CHECK(changed > count / 2);  // the generator must exercise the rules, not only leave trees alone
}

// The same check where int32 arithmetic wraps: variables range up to the limits of int32, so
// sums and products overflow, and every rule must either respect two's-complement wrapping or
// stay away (value ranges that may wrap are the full range of the dtype). Assignments are
// sampled, the bounds of each variable always included.
TEST_CASE("fuzz: simplification is sound where int32 and uint32 arithmetic wraps") {
  const uint64_t seed = env_or("WEFT_FUZZ_SEED", std::random_device{}());
  const uint64_t count = env_or("WEFT_FUZZ_COUNT", 10000) / 4;
  MESSAGE("int32 wrap fuzz seed " << seed << " (replay with WEFT_FUZZ_SEED=" << seed << "), " << count << " expressions");
  std::mt19937_64 rng(seed);
  const int64_t kMax = 2147483647, kMin = -kMax - 1;
  for (uint64_t n = 0; n < count; ++n) {
    std::vector<Var> vars;
    for (const char* name : {"a", "b", "c"}) {
      int64_t lo, hi;
      switch (rng() % 3) {
        case 0: lo = kMax - static_cast<int64_t>(rng() % 1000), hi = kMax; break;
        case 1: lo = kMin, hi = kMin + static_cast<int64_t>(rng() % 1000); break;
        default: lo = kMin + static_cast<int64_t>(rng() % (1ull << 31)), hi = lo + static_cast<int64_t>(rng() % (1ull << 31)); break;
      }
      vars.push_back({name, lo, hi, variable(name, lo, hi, dtypes::int32)});
    }
    // Every other expression computes in uint32, on the variables' bit patterns.
    const DType dt = n % 2 ? dtypes::uint32 : dtypes::int32;
    if (dt == dtypes::uint32)
      for (Var& v : vars) v.node = v.node.cast(dtypes::uint32);
    ExprGen gen(rng, vars, dt);
    UOp e = rng() % 8 == 0 ? gen.condition(3) : gen.expr(4);
    UOp s = simplify(e);
    for (int sample = 0; sample < 64; ++sample) {
      testing::Assignment assignment;
      for (const Var& v : vars) {
        const uint64_t span = static_cast<uint64_t>(v.hi - v.lo) + 1;
        assignment.vars[v.name] = sample == 0 ? v.lo : sample == 1 ? v.hi : v.lo + static_cast<int64_t>(rng() % span);
      }
      check_agreement(e, s, assignment, seed, n);
    }
  }
}
