#include "weft/lowering/pattern.h"

#include <algorithm>

#include "weft/dsl/print.h"

namespace weft {

struct Pat::Node {
  std::optional<OpSet> ops;  // nullopt: any op
  std::optional<std::vector<DType>> dtypes;
  std::optional<std::vector<Scalar>> scalars;
  bool integral = false;
  std::optional<Arg> arg;
  std::optional<std::vector<Pat>> src;  // nullopt: any sources
  bool commutative = false;
  bool prefix = false;
  std::string name;
};

namespace {

// A non-owning reference to a callable, so the matcher's continuations cost no allocation.
class FunctionRef {
 public:
  template <class F>
  FunctionRef(F& f) : obj_(&f), call_([](void* o) { return (*static_cast<F*>(o))(); }) {}  // NOLINT
  bool operator()() const { return call_(obj_); }

 private:
  void* obj_;
  bool (*call_)(void*);
};

}  // namespace

// Matching is a backtracking search written in continuation-passing style: each step calls
// `rest` for the remainder of the match, and undoes its captures when `rest` fails, so a
// commutative source order that binds a name inconsistently is retried the other way.
class Matcher {
 public:
  explicit Matcher(Match& m) : m_(m) {}

  bool match(const Pat::Node& p, const UOp& u, FunctionRef rest) {
    if (!accepts(p, u)) return false;
    const size_t mark = m_.bound_.size();
    if (!p.name.empty()) {
      auto it = std::find_if(m_.bound_.begin(), m_.bound_.end(), [&](const auto& b) { return b.first == p.name; });
      if (it != m_.bound_.end()) {
        if (!it->second.same(u)) return false;
      } else {
        m_.bound_.emplace_back(p.name, u);
      }
    }
    if (match_sources(p, u, rest)) return true;
    m_.bound_.resize(mark);
    return false;
  }

 private:
  static bool accepts(const Pat::Node& p, const UOp& u) {
    if (p.ops && !p.ops->contains(u.op())) return false;
    if (p.dtypes && std::find(p.dtypes->begin(), p.dtypes->end(), u.dtype()) == p.dtypes->end()) return false;
    if (p.scalars && std::find(p.scalars->begin(), p.scalars->end(), u.dtype().scalar) == p.scalars->end()) return false;
    if (p.integral && !u.dtype().is_integral()) return false;
    if (p.arg && !(*p.arg == u.arg())) return false;
    return true;
  }

  bool match_sources(const Pat::Node& p, const UOp& u, FunctionRef rest) {
    if (!p.src) return rest();
    const auto& pats = *p.src;
    const auto& src = u.src();
    if (p.prefix ? src.size() < pats.size() : src.size() != pats.size()) return false;
    if (match_list(pats, src, 0, false, rest)) return true;
    return p.commutative && pats.size() == 2 && match_list(pats, src, 0, true, rest);
  }

  bool match_list(const std::vector<Pat>& pats, const std::vector<UOp>& src, size_t i, bool swapped, FunctionRef rest) {
    if (i == pats.size()) return rest();
    size_t j = swapped ? 1 - i : i;
    auto next = [&] { return match_list(pats, src, i + 1, swapped, rest); };
    return match(pats[i].node(), src[j], FunctionRef(next));
  }

  Match& m_;
};

// ---- Pat ----

Pat Pat::var(std::string name) {
  auto n = std::make_shared<Node>();
  n->name = std::move(name);
  return Pat(std::move(n));
}

Pat Pat::cvar(std::string name) {
  auto n = std::make_shared<Node>();
  n->ops = OpSet{Op::CONST};
  n->name = std::move(name);
  return Pat(std::move(n));
}

Pat Pat::op(OpSet ops, std::vector<Pat> src) {
  auto n = std::make_shared<Node>();
  n->ops = ops;
  n->src = std::move(src);
  return Pat(std::move(n));
}

Pat Pat::op(OpSet ops) {
  auto n = std::make_shared<Node>();
  n->ops = ops;
  return Pat(std::move(n));
}

Pat Pat::modified(const std::function<void(Node&)>& change) const {
  auto n = std::make_shared<Node>(*n_);
  change(*n);
  return Pat(std::move(n));
}

Pat Pat::named(std::string name) const { return modified([&](Node& n) { n.name = std::move(name); }); }
Pat Pat::dtype(std::vector<DType> allowed) const { return modified([&](Node& n) { n.dtypes = std::move(allowed); }); }
Pat Pat::scalar(std::vector<Scalar> allowed) const { return modified([&](Node& n) { n.scalars = std::move(allowed); }); }
Pat Pat::integral() const { return modified([](Node& n) { n.integral = true; }); }
Pat Pat::arg(Arg value) const { return modified([&](Node& n) { n.arg = std::move(value); }); }
Pat Pat::commutative() const { return modified([](Node& n) { n.commutative = true; }); }
Pat Pat::prefix() const { return modified([](Node& n) { n.prefix = true; }); }

namespace {
Pat binary_pat(Op op, const Pat& a, const Pat& b) {
  Pat p = Pat::op(OpSet{op}, {a, b});
  return opsets::commutative.contains(op) ? p.commutative() : p;
}
}  // namespace

Pat operator+(const Pat& a, const Pat& b) { return binary_pat(Op::ADD, a, b); }
Pat operator-(const Pat& a, const Pat& b) { return binary_pat(Op::SUB, a, b); }
Pat operator*(const Pat& a, const Pat& b) { return binary_pat(Op::MUL, a, b); }
Pat operator/(const Pat& a, const Pat& b) { return binary_pat(Op::IDIV, a, b); }
Pat operator%(const Pat& a, const Pat& b) { return binary_pat(Op::MOD, a, b); }
Pat operator<(const Pat& a, const Pat& b) { return binary_pat(Op::CMPLT, a, b); }
Pat pat_ne(const Pat& a, const Pat& b) { return binary_pat(Op::CMPNE, a, b); }
Pat pat_eq(const Pat& a, const Pat& b) { return binary_pat(Op::CMPEQ, a, b); }
Pat pat_max(const Pat& a, const Pat& b) { return binary_pat(Op::MAX, a, b); }
Pat pat_min(const Pat& a, const Pat& b) { return binary_pat(Op::MIN, a, b); }

// ---- Match ----

UOp Match::operator[](std::string_view name) const {
  for (const auto& [n, u] : bound_)
    if (n == name) return u;
  throw Error("internal: pattern capture '" + std::string(name) + "' is not bound");
}

bool Match::has(std::string_view name) const {
  return std::any_of(bound_.begin(), bound_.end(), [&](const auto& b) { return b.first == name; });
}

bool matches(const Pat& pattern, const UOp& node, Match* out) {
  Match local;
  Match& m = out ? *out : local;
  m.root_ = node;
  auto done = [] { return true; };
  return Matcher(m).match(pattern.node(), node, FunctionRef(done));
}

// ---- PatternSet ----

PatternSet::PatternSet(std::initializer_list<Rule> rules) : rules_(rules) { index_rules(); }
PatternSet::PatternSet(std::vector<Rule> rules) : rules_(std::move(rules)) { index_rules(); }

void PatternSet::index_rules() {
  for (auto& v : by_op_) v.clear();
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    const auto& ops = rules_[i].pattern.node().ops;
    for (int op = 0; op < kOpCount; ++op)
      if (!ops || ops->contains(static_cast<Op>(op))) by_op_[static_cast<size_t>(op)].push_back(i);
  }
}

PatternSet PatternSet::operator+(const PatternSet& more) const {
  std::vector<Rule> all = rules_;
  all.insert(all.end(), more.rules_.begin(), more.rules_.end());
  return PatternSet(std::move(all));
}

std::optional<UOp> PatternSet::apply(const UOp& node, void* ctx) const {
  Match m;  // reused across rules: its capture list keeps its storage
  m.root_ = node;
  m.ctx_ = ctx;
  for (uint32_t i : by_op_[static_cast<size_t>(node.op())]) {
    const Rule& rule = rules_[i];
    m.bound_.clear();
    std::optional<UOp> result;
    auto accept = [&] {
      result = rule.rewrite(m);
      return result.has_value() && !result->same(node);
    };
    if (Matcher(m).match(rule.pattern.node(), node, FunctionRef(accept))) return result;
  }
  return std::nullopt;
}

}  // namespace weft
