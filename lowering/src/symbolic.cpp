#include "weft/lowering/symbolic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "weft/dsl/alu.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/rewrite.h"

namespace weft {
namespace {

using MaybeUOp = std::optional<UOp>;

// ---- small helpers ------------------------------------------------------------------------

UOp iconst(DType dt, Wide v) { return UOp::make(Op::CONST, dt.element(), {}, wrap_to(dt, v)); }
UOp node(Op op, DType dt, std::initializer_list<UOp> src) { return UOp::make(op, dt, src); }
bool is_int_const(const UOp& u, Wide v) { return u.is_const() && std::holds_alternative<Wide>(u.arg()) && u.const_int() == v; }
bool fits(DType dt, Wide v) { return v >= dt.min_value() && v <= dt.max_value(); }
// A range equal to the dtype's full range may hide wrap-around; rules that reason about exact
// values only fire on expressions whose range proves no overflow happened.
bool bounded(const UOp& u) { return u.vmin() > u.dtype().min_value() || u.vmax() < u.dtype().max_value(); }

Wide floor_div(Wide a, Wide b) {  // b > 0
  Wide q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
Wide ceil_div(Wide a, Wide b) { return -floor_div(-a, b); }
Wide floor_mod(Wide a, Wide b) { return a - b * floor_div(a, b); }
Wide abs_wide(Wide v) { return v < 0 ? -v : v; }
Wide gcd_wide(Wide a, Wide b) {
  a = abs_wide(a);
  b = abs_wide(b);
  while (b != 0) a = std::exchange(b, a % b);
  return a;
}

// ---- canonical order --------------------------------------------------------------------

int op_rank(Op op) {
  switch (op) {
    case Op::DEFINE_VAR: return 0;
    case Op::SPECIAL: return 1;
    case Op::RANGE: return 2;
    default: return 3 + static_cast<int>(op);
  }
}

int compare_nodes(const UOp& a, const UOp& b, int depth) {
  if (a.same(b)) return 0;
  if (int d = op_rank(a.op()) - op_rank(b.op())) return d;
  if (a.op() == Op::DEFINE_VAR) {
    if (int c = a.arg_as<VarArg>().name.compare(b.arg_as<VarArg>().name)) return c;
  } else if (a.op() == Op::RANGE) {
    if (a.arg_as<RangeArg>().id != b.arg_as<RangeArg>().id) return a.arg_as<RangeArg>().id < b.arg_as<RangeArg>().id ? -1 : 1;
  } else if (a.op() == Op::SPECIAL) {
    if (int c = a.arg_as<std::string>().compare(b.arg_as<std::string>())) return c;
  } else if (a.op() == Op::CONST && std::holds_alternative<Wide>(a.arg()) && std::holds_alternative<Wide>(b.arg())) {
    if (a.const_int() != b.const_int()) return a.const_int() < b.const_int() ? -1 : 1;
  }
  if (a.src().size() != b.src().size()) return a.src().size() < b.src().size() ? -1 : 1;
  if (depth < 16)
    for (size_t i = 0; i < a.src().size(); ++i)
      if (int c = compare_nodes(a.src(i), b.src(i), depth + 1)) return c;
  if (a.hash() != b.hash()) return a.hash() < b.hash() ? -1 : 1;
  return 0;
}

// ---- sums and products as term lists ------------------------------------------------------

struct Term {
  UOp base;
  Wide coeff;
};

struct Sum {
  std::vector<Term> terms;  // distinct bases, canonical order, nonzero coefficients
  Wide constant = 0;
};

// The terms of a (possibly nested) ADD of `dt`, with like terms combined. Iterative: long
// accumulation chains are common.
Sum collect_sum(const UOp& root) {
  const DType dt = root.dtype();
  Sum out;
  std::unordered_map<const Node*, size_t> where;
  std::vector<std::pair<UOp, Wide>> stack{{root, 1}};
  while (!stack.empty()) {
    auto [x, scale] = stack.back();
    stack.pop_back();
    if (x.op() == Op::ADD && x.dtype() == dt) {
      stack.emplace_back(x.src(1), scale);
      stack.emplace_back(x.src(0), scale);
    } else if (x.is_const()) {
      out.constant = wrap_to(dt, out.constant + scale * x.const_int());
    } else {
      Wide c = scale;
      UOp base = x;
      if (x.op() == Op::MUL && x.src(1).is_const()) {
        c = wrap_to(dt, scale * x.src(1).const_int());
        base = x.src(0);
      }
      auto [it, fresh] = where.try_emplace(base.node(), out.terms.size());
      if (fresh) out.terms.push_back({base, c});
      else out.terms[it->second].coeff = wrap_to(dt, out.terms[it->second].coeff + c);
    }
  }
  std::erase_if(out.terms, [](const Term& t) { return t.coeff == 0; });
  std::stable_sort(out.terms.begin(), out.terms.end(), [](const Term& a, const Term& b) { return canonical_less(a.base, b.base); });
  return out;
}

Wide coefficient_gcd(const std::vector<Term>& terms, Wide start) {
  return std::accumulate(terms.begin(), terms.end(), start, [](Wide acc, const Term& t) { return gcd_wide(acc, t.coeff); });
}

UOp build_term(DType dt, const Term& t) { return t.coeff == 1 ? t.base : node(Op::MUL, dt, {t.base, iconst(dt, t.coeff)}); }

UOp build_sum(DType dt, const std::vector<Term>& terms, Wide constant) {
  constant = wrap_to(dt, constant);
  if (terms.empty()) return iconst(dt, constant);
  UOp acc = build_term(dt, terms[0]);
  for (size_t i = 1; i < terms.size(); ++i) acc = node(Op::ADD, dt, {acc, build_term(dt, terms[i])});
  if (constant != 0) acc = node(Op::ADD, dt, {acc, iconst(dt, constant)});
  return acc;
}

UOp build_sum(DType dt, const Sum& s) { return build_sum(dt, s.terms, s.constant); }

// ---- constant folding ---------------------------------------------------------------------

MaybeUOp fold_cast(const UOp& x) {
  const UOp& s = x.src(0);
  const DType to = x.dtype();
  if (s.dtype().is_integral()) {
    if (to.is_integral()) return iconst(to, s.const_int());
    if (to.is_float()) return constant(static_cast<double>(s.const_int()), to);
    return std::nullopt;
  }
  double v = s.const_float();
  if (to.is_float()) return constant(v, to);
  if (to.is_bool()) return iconst(to, v != 0);
  if (!to.is_int() || !std::isfinite(v)) return std::nullopt;
  Wide t = static_cast<Wide>(std::trunc(v));
  if (!fits(to, t)) return std::nullopt;  // undefined in C; leave it to the device
  return iconst(to, t);
}

MaybeUOp fold_constants(const Match& m) {
  const UOp x = m.root();
  if (x.dtype().is_vector() || x.src().empty()) return std::nullopt;
  for (const UOp& s : x.src())
    if (!s.is_const()) return std::nullopt;
  if (x.op() == Op::BITCAST) return std::nullopt;
  if (x.op() == Op::CAST) return fold_cast(x);
  const DType operand = x.op() == Op::WHERE ? x.src(1).dtype() : x.src(0).dtype();
  if (operand.is_integral()) {
    std::vector<Wide> v;
    for (const UOp& s : x.src()) v.push_back(s.const_int());
    auto r = exec_int(x.op(), operand, v);
    if (!r) return std::nullopt;
    return iconst(x.dtype(), *r);
  }
  std::vector<double> v;
  for (const UOp& s : x.src()) v.push_back(s.const_float());
  if (opsets::comparison.contains(x.op())) return iconst(dtypes::bool_, compare_float(x.op(), v[0], v[1]));
  auto r = exec_float(x.op(), x.dtype(), v);
  if (!r) return std::nullopt;
  return constant(*r, x.dtype());
}

MaybeUOp fold_known_value(const Match& m) {
  const UOp x = m.root();
  if (x.is_const() || x.dtype().is_vector() || x.vmin() != x.vmax()) return std::nullopt;
  return iconst(x.dtype(), x.vmin());
}

// ---- canonical forms ------------------------------------------------------------------------

MaybeUOp canonical_sum(const Match& m) {
  const UOp x = m.root();
  return build_sum(x.dtype(), collect_sum(x));
}

MaybeUOp neg_to_mul(const Match& m) { return node(Op::MUL, m.root().dtype(), {m["x"], iconst(m.root().dtype(), -1)}); }

MaybeUOp sub_to_add(const Match& m) {
  const DType dt = m.root().dtype();
  return node(Op::ADD, dt, {m["x"], node(Op::MUL, dt, {m["y"], iconst(dt, -1)})});
}

MaybeUOp canonical_product(const Match& m) {
  const UOp x = m.root();
  const DType dt = x.dtype();
  std::vector<UOp> factors;
  Wide c = 1;
  std::vector<UOp> stack{x};
  while (!stack.empty()) {
    UOp f = stack.back();
    stack.pop_back();
    if (f.op() == Op::MUL && f.dtype() == dt) {
      stack.push_back(f.src(1));
      stack.push_back(f.src(0));
    } else if (f.is_const()) {
      c = wrap_to(dt, c * f.const_int());
    } else {
      factors.push_back(f);
    }
  }
  if (c == 0) return iconst(dt, 0);
  // (a + b) * c -> a*c + b*c: keeps index expressions in one canonical sum.
  if (factors.size() == 1 && factors[0].op() == Op::ADD && c != 1) {
    Sum s = collect_sum(factors[0]);
    for (Term& t : s.terms) t.coeff = wrap_to(dt, t.coeff * c);
    return build_sum(dt, s.terms, s.constant * c);
  }
  std::stable_sort(factors.begin(), factors.end(), canonical_less);
  if (factors.empty()) return iconst(dt, c);
  UOp acc = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) acc = node(Op::MUL, dt, {acc, factors[i]});
  if (c != 1) acc = node(Op::MUL, dt, {acc, iconst(dt, c)});
  return acc;
}

// ---- division and modulo ------------------------------------------------------------------

// x // d and x % d for a constant d < 0 in terms of -d (truncating division is odd in d).
MaybeUOp negative_divisor(const Match& m) {
  const UOp x = m.root();
  const Wide d = m["d"].const_int();
  if (d >= 0 || !fits(x.dtype(), -d)) return std::nullopt;
  UOp by = iconst(x.dtype(), -d);
  if (x.op() == Op::MOD) return node(Op::MOD, x.dtype(), {m["x"], by});
  return node(Op::MUL, x.dtype(), {node(Op::IDIV, x.dtype(), {m["x"], by}), iconst(x.dtype(), -1)});
}

// (g*y) // (g*e) == y // e and (g*y) % (g*e) == g*(y % e), for either sign of y.
MaybeUOp divide_common_factor(const UOp& root, const Sum& s, Wide d) {
  Wide g = coefficient_gcd(s.terms, gcd_wide(s.constant, d));
  if (g <= 1) return std::nullopt;
  const DType dt = root.dtype();
  std::vector<Term> terms = s.terms;
  for (Term& t : terms) t.coeff /= g;
  UOp y = build_sum(dt, terms, s.constant / g);
  UOp e = iconst(dt, d / g);
  if (root.op() == Op::IDIV) return node(Op::IDIV, dt, {y, e});
  return node(Op::MUL, dt, {node(Op::MOD, dt, {y, e}), iconst(dt, g)});
}

// With x >= 0 truncation is floor. Write x = d*Q + r with every coefficient of r in [0, d);
// then x//d = Q + floor(r/d) and x%d = r - d*floor(r/d). That is a constant when r's range
// lies within one multiple of d, and r//d, r%d when r >= 0.
MaybeUOp split_divisible_terms(const UOp& root, const Sum& s, Wide d) {
  if (root.src(0).vmin() < 0 || !bounded(root.src(0))) return std::nullopt;
  const DType dt = root.dtype();
  std::vector<Term> quotient, rest;
  for (const Term& t : s.terms) {
    Wide q = floor_div(t.coeff, d), r = floor_mod(t.coeff, d);
    if (q != 0) quotient.push_back({t.base, q});
    if (r != 0) rest.push_back({t.base, r});
  }
  UOp r = build_sum(dt, rest, floor_mod(s.constant, d));
  Wide qk = floor_div(s.constant, d);
  if (bounded(r) && floor_div(r.vmin(), d) == floor_div(r.vmax(), d)) {
    Wide k = floor_div(r.vmin(), d);
    if (root.op() == Op::IDIV) return build_sum(dt, quotient, qk + k);
    Sum rs = collect_sum(r);
    return build_sum(dt, rs.terms, rs.constant - k * d);
  }
  if (quotient.empty() && qk == 0) return std::nullopt;  // nothing divides out
  if (r.vmin() < 0) return std::nullopt;
  UOp by = iconst(dt, d);
  if (root.op() == Op::MOD) return node(Op::MOD, dt, {r, by});
  return node(Op::ADD, dt, {build_sum(dt, quotient, qk), node(Op::IDIV, dt, {r, by})});
}

MaybeUOp fold_divmod(const Match& m) {
  const UOp root = m.root();
  const Wide d = m["d"].const_int();
  const DType dt = root.dtype();
  if (d == 1) return root.op() == Op::IDIV ? m["x"] : iconst(dt, 0);
  if (d == -1) return root.op() == Op::IDIV ? node(Op::MUL, dt, {m["x"], iconst(dt, -1)}) : iconst(dt, 0);
  if (d <= 0) return std::nullopt;
  const UOp& x = m["x"];
  // |x| < d: x % d == x (both signs), and x // d == 0 (the range rule sees that).
  if (root.op() == Op::MOD && x.vmin() > -d && x.vmax() < d && (x.vmin() >= 0 || x.vmax() <= 0)) return x;
  // Both rules read x as the exact integer sum of its terms: not where the sum may wrap.
  if (!bounded(x)) return std::nullopt;
  Sum s = collect_sum(x);
  if (auto r = divide_common_factor(root, s, d)) return r;
  return split_divisible_terms(root, s, d);
}

// (x // c1) // c2 -> x // (c1*c2) for c2 > 0.
MaybeUOp nested_div(const Match& m) {
  Wide c1 = m["c1"].const_int(), c2 = m["c2"].const_int();
  if (c2 <= 0 || c1 == 0 || !fits(m.root().dtype(), c1 * c2)) return std::nullopt;
  return node(Op::IDIV, m.root().dtype(), {m["x"], iconst(m.root().dtype(), c1 * c2)});
}

// (x % c1) % c2 -> x % c2 when c2 divides c1 (both keep the sign of x).
MaybeUOp nested_mod(const Match& m) {
  Wide c1 = m["c1"].const_int(), c2 = m["c2"].const_int();
  if (c2 <= 0 || c1 % c2 != 0) return std::nullopt;
  return node(Op::MOD, m.root().dtype(), {m["x"], m["c2"]});
}

// ---- comparisons --------------------------------------------------------------------------

// A comparison of a sum with a constant, normalised: the sum's constant moved to the other
// side, and the coefficients divided by their gcd g (the caller rounds c/g as its relation needs).
struct SumVsConst {
  std::vector<Term> terms;  // coefficients divided by g
  Wide c;                   // the constant minus the sum's constant, not yet divided
  Wide g;
};

std::optional<SumVsConst> normalise(const UOp& sum, Wide c) {
  if (!bounded(sum)) return std::nullopt;
  Sum s = collect_sum(sum);
  if (s.terms.empty()) return std::nullopt;
  Wide g = coefficient_gcd(s.terms, 0);
  for (Term& t : s.terms) t.coeff /= g;
  return SumVsConst{std::move(s.terms), c - s.constant, g};
}

// sum < c:  g*T < C  <=>  T < ceil(C/g). This includes the seed's c0*x < c1 rule for every sign.
MaybeUOp lt_sum_const(const Match& m) {
  const DType dt = m["x"].dtype();
  auto n = normalise(m["x"], m["c"].const_int());
  if (!n || !fits(dt, ceil_div(n->c, n->g))) return std::nullopt;
  return node(Op::CMPLT, m.root().dtype(), {build_sum(dt, n->terms, 0), iconst(dt, ceil_div(n->c, n->g))});
}

// c < sum:  C < g*T  <=>  floor(C/g) < T.
MaybeUOp const_lt_sum(const Match& m) {
  const DType dt = m["x"].dtype();
  auto n = normalise(m["x"], m["c"].const_int());
  if (!n || !fits(dt, floor_div(n->c, n->g))) return std::nullopt;
  return node(Op::CMPLT, m.root().dtype(), {iconst(dt, floor_div(n->c, n->g)), build_sum(dt, n->terms, 0)});
}

// sum == c and sum != c: g*T == C has no solution unless g divides C.
MaybeUOp eq_sum_const(const Match& m) {
  const DType dt = m["x"].dtype();
  const bool ne = m.root().op() == Op::CMPNE;
  auto n = normalise(m["x"], m["c"].const_int());
  if (!n) return std::nullopt;
  if (n->c % n->g != 0) return iconst(dtypes::bool_, ne);
  if (!fits(dt, n->c / n->g)) return std::nullopt;
  return node(m.root().op(), m.root().dtype(), {build_sum(dt, n->terms, 0), iconst(dt, n->c / n->g)});
}

// x // d < c for d > 0: with truncation, c > 0 gives x < c*d and c <= 0 gives x < (c-1)*d + 1.
MaybeUOp div_lt_const(const Match& m) {
  Wide d = m["d"].const_int(), c = m["c"].const_int();
  if (d <= 0) return std::nullopt;
  Wide bound = c > 0 ? c * d : (c - 1) * d + 1;
  const DType dt = m["x"].dtype();
  if (!fits(dt, bound)) return std::nullopt;
  return node(Op::CMPLT, m.root().dtype(), {m["x"], iconst(dt, bound)});
}

// ---- the rule set ---------------------------------------------------------------------------

MaybeUOp ret(const UOp& u) { return u; }

template <class F>
Rule rule(std::string name, Pat p, F f) {
  return Rule{std::move(name), std::move(p), RewriteFn(std::move(f))};
}

Pat ivar(const char* name) { return Pat::var(name).integral(); }
Pat icvar(const char* name) { return Pat::cvar(name).integral(); }

std::vector<Rule> folding_rules() {
  return {
      rule("fold constants", Pat::op(opsets::alu), fold_constants),
      rule("fold known value", Pat::op(opsets::alu | OpSet{Op::RANGE}).integral(), fold_known_value),
  };
}

std::vector<Rule> identity_rules() {
  auto zero = [](const UOp& u) { return is_int_const(u, 0); };
  return {
      rule("x+0", ivar("x") + icvar("c"), [=](const Match& m) -> MaybeUOp { return zero(m["c"]) ? ret(m["x"]) : std::nullopt; }),
      rule("x*1", ivar("x") * icvar("c"), [](const Match& m) -> MaybeUOp { return is_int_const(m["c"], 1) ? ret(m["x"]) : std::nullopt; }),
      rule("x*0", ivar("x") * icvar("c"), [=](const Match& m) -> MaybeUOp { return zero(m["c"]) ? ret(m["c"]) : std::nullopt; }),
      rule("x*1.0", Pat::var("x") * Pat::cvar("c"), [](const Match& m) -> MaybeUOp {
        return m["c"].dtype().is_float() && m["c"].const_float() == 1.0 ? ret(m["x"]) : std::nullopt; }),
      rule("x-x", Pat::var("x").integral() - Pat::var("x"), [](const Match& m) { return ret(iconst(m.root().dtype(), 0)); }),
      rule("x^x", Pat::op(OpSet{Op::XOR}, {ivar("x"), Pat::var("x")}), [](const Match& m) { return ret(iconst(m.root().dtype(), 0)); }),
      rule("x&x, x|x, max(x,x), min(x,x)", Pat::op(OpSet{Op::AND, Op::OR, Op::MAX, Op::MIN}, {Pat::var("x"), Pat::var("x")}),
           [](const Match& m) { return ret(m["x"]); }),
      rule("x<x, x!=x", Pat::op(OpSet{Op::CMPLT, Op::CMPNE}, {ivar("x"), Pat::var("x")}),
           [](const Match&) { return ret(iconst(dtypes::bool_, 0)); }),
      rule("x==x", pat_eq(ivar("x"), Pat::var("x")), [](const Match&) { return ret(iconst(dtypes::bool_, 1)); }),
      rule("where(c,x,x)", Pat::op(OpSet{Op::WHERE}, {Pat::var(), Pat::var("x"), Pat::var("x")}), [](const Match& m) { return ret(m["x"]); }),
      rule("where(const,a,b)", Pat::op(OpSet{Op::WHERE}, {Pat::cvar("c"), Pat::var("a"), Pat::var("b")}),
           [](const Match& m) { return ret(m["c"].const_int() ? m["a"] : m["b"]); }),
      rule("bool x&c, x|c, x^c", Pat::op(OpSet{Op::AND, Op::OR, Op::XOR}, {Pat::var("x").dtype({dtypes::bool_}), Pat::cvar("c")}).commutative(),
           [](const Match& m) -> MaybeUOp {
             bool c = m["c"].const_int() != 0;
             switch (m.root().op()) {
               case Op::AND: return c ? m["x"] : m["c"];
               case Op::OR: return c ? m["c"] : m["x"];
               default: return c ? MaybeUOp{} : ret(m["x"]);
             }
           }),
      rule("(x!=True)!=True", pat_ne(pat_ne(Pat::var("x").dtype({dtypes::bool_}), Pat::cvar("a")), Pat::cvar("b")),
           [](const Match& m) -> MaybeUOp { return m["a"].const_int() && m["b"].const_int() ? ret(m["x"]) : std::nullopt; }),
      rule("bool x!=False, x==True", Pat::op(OpSet{Op::CMPNE, Op::CMPEQ}, {Pat::var("x").dtype({dtypes::bool_}), Pat::cvar("c")}).commutative(),
           [](const Match& m) -> MaybeUOp {
             return (m.root().op() == Op::CMPNE) != (m["c"].const_int() != 0) ? ret(m["x"]) : std::nullopt; }),
      rule("max/min decided by ranges", Pat::op(OpSet{Op::MAX, Op::MIN}, {ivar("a"), ivar("b")}).commutative(),
           [](const Match& m) -> MaybeUOp {
             const UOp &a = m["a"], &b = m["b"];
             if (m.root().op() == Op::MAX && a.vmin() >= b.vmax()) return a;
             if (m.root().op() == Op::MIN && a.vmax() <= b.vmin()) return a;
             return std::nullopt;
           }),
  };
}

std::vector<Rule> canonical_rules() {
  Pat int_only = Pat::var().integral();
  return {
      rule("-x -> x*-1", Pat::op(OpSet{Op::NEG}, {ivar("x")}).scalar({Scalar::Int8, Scalar::Int16, Scalar::Int32, Scalar::Int64, Scalar::Index}), neg_to_mul),
      rule("x-y -> x+y*-1", (ivar("x") - Pat::var("y")).scalar({Scalar::Int8, Scalar::Int16, Scalar::Int32, Scalar::Int64, Scalar::Index,
                                                                  Scalar::UInt8, Scalar::UInt16, Scalar::UInt32, Scalar::UInt64}), sub_to_add),
      rule("canonical sum", Pat::op(OpSet{Op::ADD}).integral(), [](const Match& m) -> MaybeUOp {
        return m.root().dtype().is_int() && !m.root().dtype().is_vector() ? canonical_sum(m) : std::nullopt; }),
      rule("canonical product", Pat::op(OpSet{Op::MUL}).integral(), [](const Match& m) -> MaybeUOp {
        return m.root().dtype().is_int() && !m.root().dtype().is_vector() ? canonical_product(m) : std::nullopt; }),
  };
}

std::vector<Rule> divmod_rules() {
  Pat div_or_mod = Pat::op(OpSet{Op::IDIV, Op::MOD}, {ivar("x"), icvar("d")});
  return {
      rule("x//d, x%d for d<0", div_or_mod, negative_divisor),
      rule("(x//c1)//c2", Pat::op(OpSet{Op::IDIV}, {Pat::op(OpSet{Op::IDIV}, {ivar("x"), icvar("c1")}), icvar("c2")}), nested_div),
      rule("(x%c1)%c2", Pat::op(OpSet{Op::MOD}, {Pat::op(OpSet{Op::MOD}, {ivar("x"), icvar("c1")}), icvar("c2")}), nested_mod),
      rule("fold x//d, x%d", div_or_mod, fold_divmod),
  };
}

std::vector<Rule> comparison_rules() {
  return {
      rule("x//d < c", Pat::op(OpSet{Op::CMPLT}, {Pat::op(OpSet{Op::IDIV}, {ivar("x"), icvar("d")}), icvar("c")}), div_lt_const),
      rule("sum < c", Pat::op(OpSet{Op::CMPLT}, {Pat::op(OpSet{Op::ADD, Op::MUL}).integral().named("x"), icvar("c")}), lt_sum_const),
      rule("c < sum", Pat::op(OpSet{Op::CMPLT}, {icvar("c"), Pat::op(OpSet{Op::ADD, Op::MUL}).integral().named("x")}), const_lt_sum),
      rule("sum == c, sum != c",
           Pat::op(OpSet{Op::CMPEQ, Op::CMPNE}, {Pat::op(OpSet{Op::ADD, Op::MUL}).integral().named("x"), icvar("c")}).commutative(),
           eq_sum_const),
  };
}

// Ranges that became constants (a range of exactly one iteration is 0) no longer need closing.
std::vector<Rule> range_rules() {
  auto drop_non_ranges = [](const Match& m) -> MaybeUOp {
    const UOp x = m.root();
    std::vector<UOp> src{x.src(0)};
    for (size_t i = 1; i < x.src().size(); ++i)
      if (x.src(i).op() == Op::RANGE) src.push_back(x.src(i));
    if (src.size() == x.src().size()) return std::nullopt;
    if (src.size() == 1) return x.src(0);
    return x.with_src(std::move(src));
  };
  return {rule("END/REDUCE of ranges that became constants", Pat::op(OpSet{Op::END, Op::REDUCE}), drop_non_ranges)};
}

}  // namespace

bool canonical_less(const UOp& a, const UOp& b) { return compare_nodes(a, b, 0) < 0; }

const PatternSet& symbolic_rules() {
  static const PatternSet rules = [] {
    std::vector<Rule> all;
    for (auto part : {folding_rules(), identity_rules(), canonical_rules(), divmod_rules(), comparison_rules(), range_rules()})
      all.insert(all.end(), part.begin(), part.end());
    return PatternSet(std::move(all));
  }();
  return rules;
}

UOp simplify(const UOp& root) { return graph_rewrite(root, symbolic_rules()); }

}  // namespace weft
