// Patterns over the IR, in the style of tinygrad's UPat and MLIR's declarative patterns.
//
// A pattern matches a node by op set, dtype, arg and sources; named captures bind nodes (a
// name used twice must bind the same node both times); sources of a commutative pattern match
// in either order. A PatternSet is an ordered list of (pattern, rewrite) rules: for a node,
// rules are tried in order and the first rewrite that returns a node wins.
//
//   PatternSet rules{
//     {"x+0", Pat::var("x") + Pat::cvar("c"), [](const Match& m) -> std::optional<UOp> {
//        if (m["c"].const_int() == 0) return m["x"];
//        return std::nullopt; }},
//   };
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft {

class Pat {
 public:
  // Matches any node; binds it to `name` if a name is given.
  static Pat var(std::string name = "");
  // Matches a CONST node.
  static Pat cvar(std::string name = "");
  // Matches a node whose op is in `ops` and whose sources match `src` in order.
  static Pat op(OpSet ops, std::vector<Pat> src);
  // Matches a node whose op is in `ops`, whatever its sources.
  static Pat op(OpSet ops);

  // Refinements, each returning a new pattern.
  Pat named(std::string name) const;
  Pat dtype(std::vector<DType> allowed) const;          // dtype is one of these
  Pat scalar(std::vector<Scalar> allowed) const;        // element type is one of these
  Pat integral() const;                                 // dtype is an int, index or bool
  Pat arg(Arg value) const;                             // arg equals this
  Pat commutative() const;                              // two sources, in either order
  Pat prefix() const;                                   // sources match a prefix; more may follow

  struct Node;  // the pattern's content (pattern.cpp)
  const Node& node() const { return *n_; }

 private:
  explicit Pat(std::shared_ptr<Node> n) : n_(std::move(n)) {}
  Pat modified(const std::function<void(Node&)>& change) const;
  std::shared_ptr<const Node> n_;
};

// Binary ALU patterns; those of commutative ops match their sources in either order.
Pat operator+(const Pat& a, const Pat& b);
Pat operator-(const Pat& a, const Pat& b);
Pat operator*(const Pat& a, const Pat& b);
Pat operator/(const Pat& a, const Pat& b);  // IDIV
Pat operator%(const Pat& a, const Pat& b);
Pat operator<(const Pat& a, const Pat& b);  // CMPLT
Pat pat_ne(const Pat& a, const Pat& b);
Pat pat_eq(const Pat& a, const Pat& b);
Pat pat_max(const Pat& a, const Pat& b);
Pat pat_min(const Pat& a, const Pat& b);

// The nodes a successful match bound, by name.
class Match {
 public:
  UOp operator[](std::string_view name) const;  // throws if unbound
  bool has(std::string_view name) const;
  UOp root() const { return root_; }
  // The context object graph_rewrite was given (nullptr if none).
  template <class T>
  T& ctx() const { return *static_cast<T*>(ctx_); }
  void* raw_ctx() const { return ctx_; }

 private:
  friend class Matcher;
  friend class PatternSet;
  friend bool matches(const Pat&, const UOp&, Match*);
  std::vector<std::pair<std::string, UOp>> bound_;  // owned names: a Match may outlive its pattern
  UOp root_;
  void* ctx_ = nullptr;
};

using RewriteFn = std::function<std::optional<UOp>(const Match&)>;

struct Rule {
  std::string name;
  Pat pattern;
  RewriteFn rewrite;
};

class PatternSet {
 public:
  PatternSet() = default;
  PatternSet(std::initializer_list<Rule> rules);
  explicit PatternSet(std::vector<Rule> rules);

  // The first rewrite of the first matching rule that returns a node different from `node`.
  std::optional<UOp> apply(const UOp& node, void* ctx = nullptr) const;
  PatternSet operator+(const PatternSet& more) const;  // these rules, then those
  size_t size() const { return rules_.size(); }
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  void index_rules();
  std::vector<Rule> rules_;
  std::array<std::vector<uint32_t>, kOpCount> by_op_;  // rule numbers that can match each op
};

// Whether `pattern` matches `node`; fills `out` with the first consistent set of captures.
bool matches(const Pat& pattern, const UOp& node, Match* out = nullptr);

}  // namespace weft
