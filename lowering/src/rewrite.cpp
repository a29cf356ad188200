// The rewrite driver. It walks with an explicit stack, not recursion, so graphs thousands of
// nodes deep (long accumulation chains, unrolled loops) do not exhaust the C++ stack.
#include "weft/lowering/rewrite.h"

#include <unordered_map>
#include <unordered_set>

#include "weft/dsl/print.h"

namespace weft {
namespace {

using Memo = std::unordered_map<const Node*, UOp>;

class Rewriter {
 public:
  Rewriter(const PatternSet& rules, const RewriteOptions& opt) : rules_(rules), opt_(opt) {}

  UOp run(const UOp& root) {
    push(root);
    while (!stack_.empty()) step();
    return memo_.at(root.node());
  }

 private:
  enum class Stage { Enter, Sources, Result };
  struct Frame {
    UOp node;     // the node whose result this frame computes
    Stage stage;
    UOp pending;  // Sources: the node whose sources are being rewritten; Result: the rewrite
  };

  void push(const UOp& n) { stack_.push_back({n, Stage::Enter, n}); }

  void step() {
    Frame f = stack_.back();
    stack_.pop_back();
    switch (f.stage) {
      case Stage::Enter: return enter(f);
      case Stage::Sources: return sources_done(f);
      case Stage::Result: return finish(f.node, memo_.at(f.pending.node()));
    }
  }

  void enter(Frame f) {
    if (memo_.count(f.node.node())) return;
    if (!active_.insert(f.node.node()).second)
      throw Error("graph_rewrite: the rules lead " + expr_string(f.node, 200) + " (" + std::string(op_name(f.node.op())) +
                  ") back to itself; a rule set must not undo its own rewrites");
    UOp n = f.node;
    if (opt_.mode == RewriteMode::TopDown) {
      // The node settles first, then its sources.
      while (auto r = apply(n)) n = *r;
      if (!n.same(f.node) && memo_.count(n.node())) return finish(f.node, memo_.at(n.node()));
    }
    stack_.push_back({f.node, Stage::Sources, n});
    for (auto it = n.src().rbegin(); it != n.src().rend(); ++it)
      if (!memo_.count(it->node())) push(*it);
  }

  void sources_done(const Frame& f) {
    const UOp& n = f.pending;
    std::vector<UOp> src;
    src.reserve(n.src().size());
    bool changed = false;
    for (const UOp& s : n.src()) {
      src.push_back(memo_.at(s.node()));
      changed |= !src.back().same(s);
    }
    UOp x = changed ? n.with_src(std::move(src)) : n;
    if (opt_.mode == RewriteMode::TopDown) {
      if (!changed) return finish(f.node, x);
      return again(f.node, x);
    }
    std::optional<UOp> r = apply(x);
    if (!r) return finish(f.node, x);
    if (opt_.mode == RewriteMode::SingleWalk) return finish(f.node, *r);
    again(f.node, *r);
  }

  // `node`'s result is whatever `next` rewrites to.
  void again(const UOp& node, const UOp& next) {
    if (auto it = memo_.find(next.node()); it != memo_.end()) return finish(node, it->second);
    stack_.push_back({node, Stage::Result, next});
    push(next);
  }

  void finish(const UOp& node, const UOp& result) {
    active_.erase(node.node());
    memo_[node.node()] = result;
  }

  std::optional<UOp> apply(const UOp& n) {
    std::optional<UOp> r = rules_.apply(n, opt_.ctx);
    // The budget grows with the nodes seen so far, so no walk is needed up front.
    if (r && ++rewrites_ > opt_.max_rewrites_per_node * (memo_.size() + stack_.size() + 1))
      throw Error("graph_rewrite: no fixed point after " + std::to_string(rewrites_) + " rewrites; last at " + expr_string(n, 200));
    return r;
  }

  const PatternSet& rules_;
  const RewriteOptions& opt_;
  Memo memo_;
  std::unordered_set<const Node*> active_;
  std::vector<Frame> stack_;
  size_t rewrites_ = 0;
};

}  // namespace

UOp graph_rewrite(const UOp& root, const PatternSet& rules, const RewriteOptions& options) {
  return Rewriter(rules, options).run(root);
}

UOp substitute(const UOp& root, const std::vector<std::pair<UOp, UOp>>& replacements) {
  std::unordered_map<const Node*, UOp> table;
  for (const auto& [from, to] : replacements) table[from.node()] = to;
  PatternSet rules{{"substitute", Pat::var(), [&table](const Match& m) -> std::optional<UOp> {
                      auto it = table.find(m.root().node());
                      if (it == table.end()) return std::nullopt;
                      return it->second;
                    }}};
  return graph_rewrite(root, rules, {RewriteMode::TopDown});
}

}  // namespace weft
