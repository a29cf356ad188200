// Deep graphs through the whole pipeline: a chain of 100,000 values or effects must lower without
// exhausting the stack (every walk on lower()'s path is iterative), and the linear program must
// still list each node after what it uses.
#include <doctest/doctest.h>

#include <unordered_set>

#include "weft/dsl/builder.h"
#include "weft/lowering/pipeline.h"

namespace weft::lower {
namespace {

// Far past what recursion survives on an 8 MiB stack (about 30,000 links).
constexpr int kDepth = 100000;
constexpr int kEffectDepth = 50000;  // each link is several nodes (index, store, after)

// Every value or effect of the program comes after the values it uses.
void check_order(const LoweredKernel& k) {
  std::unordered_set<const Node*> written;
  size_t early = 0;
  for (const LinearOp& s : k.program) {
    if (s.kind == LinearOp::Kind::Value)
      for (const UOp& u : s.op.src())
        early += u.op() != Op::PLACEHOLDER && u.op() != Op::AFTER && u.op() != Op::RANGE && !u.is_effect() && !written.count(u.node());
    written.insert(s.op.node());
  }
  CHECK_MESSAGE(early == 0, early << " values are used before they are written");
}

}  // namespace

TEST_CASE("lower: a chain of 100,000 float additions lowers without exhausting the stack") {
  UOp in = placeholder({1}, dtypes::float32, 1), out = placeholder({1}, dtypes::float32, 0);
  UOp zero = constant(Wide(0));
  UOp v = in[zero].load();
  // Distinct constants, so no two links of the chain are the same node.
  for (int i = 1; i <= kDepth; ++i) v = v + constant(static_cast<double>(i), dtypes::float32);
  LoweredKernel k = lower(sink({"deep_adds"}, {out[zero].store(v)}));
  size_t adds = 0;
  for (const LinearOp& s : k.program) adds += s.kind == LinearOp::Kind::Value && s.op.op() == Op::ADD;
  CHECK(adds >= kDepth);
  check_order(k);
}

TEST_CASE("lower: a chain of 50,000 stores, each after the one before, lowers in order") {
  UOp out = placeholder({kEffectDepth}, dtypes::float32, 0);
  UOp buf = out;
  for (int i = 0; i < kEffectDepth; ++i) {
    UOp st = buf[constant(Wide(i))].store(constant(static_cast<double>(i), dtypes::float32));
    buf = out.after({st});
  }
  UOp last = out[constant(Wide(0))].store(buf[constant(Wide(kEffectDepth - 1))].load());
  LoweredKernel k = lower(sink({"deep_stores"}, {last}));
  size_t n = 0;
  for (const LinearOp& s : k.program) n += s.kind == LinearOp::Kind::Effect && s.op.op() == Op::STORE;
  CHECK(n == kEffectDepth + 1);
  check_order(k);
}

}  // namespace weft::lower
