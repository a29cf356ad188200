// The verifier's rules: each malformed graph is built with the raw UOp::make (the builder
// would refuse it) and must be reported with the node and the rule it breaks.
#include <doctest/doctest.h>

#include "weft/dsl/builder.h"
#include "weft/dsl/verify.h"

using namespace weft;

namespace {

std::string first_problem(const UOp& root) {
  auto v = find_violations(root);
  return v.empty() ? std::string("(none)") : v.front().to_string();
}

}  // namespace

TEST_CASE("a well-formed kernel passes") {
  UOp a = placeholder({8, 8}, dtypes::float32, 0), b = placeholder({8, 8}, dtypes::float32, 1);
  UOp i = range(8, 0, AxisType::GLOBAL), j = range(8, 1, AxisType::LOCAL);
  UOp k = sink({"copy"}, {b[{i, j}].store(a[{i, j}].load()).end({i, j})});
  CHECK_NOTHROW(verify(k));
  CHECK(find_violations(k).empty());
}

TEST_CASE("a store into an ALU value") {
  UOp x = variable("x", 0, 9, dtypes::int32);
  UOp sum = x + 1;
  UOp st = UOp::make(Op::STORE, dtypes::void_, {sum, x});
  CHECK(first_problem(st) == "%3 STORE: store into an ALU value ADD (x+1); a store needs an INDEX into a GLOBAL, LOCAL or REG buffer");
  CHECK_THROWS_WITH_AS(verify(st), doctest::Contains("invalid graph (1 problem):\n  %3 STORE: store into an ALU value"), Error);
}

TEST_CASE("an index with the wrong number of dimensions") {
  UOp a = placeholder({8, 8}, dtypes::float32, 0);
  UOp bad = UOp::make(Op::INDEX, dtypes::float32, {a, constant(Wide(1))});
  CHECK(first_problem(bad).find("index with 1 dimensions into a 2-dimensional buffer") != std::string::npos);
}

TEST_CASE("a range whose end is not an integer") {
  UOp r = UOp::make(Op::RANGE, dtypes::index, {constant(4.0, dtypes::float32)}, RangeArg{0, AxisType::LOOP});
  CHECK(first_problem(r) == "%1 RANGE: RANGE end 4.0 is not an integer (dtype float32)");
}

TEST_CASE("an UNSHARD whose axes and ranges differ in number") {
  UOp reg = placeholder({8, 4}, dtypes::float32, 3, AddrSpace::REG);
  UOp tx = range(8, 0, AxisType::LOCAL);
  UOp bad = UOp::make(Op::UNSHARD, dtypes::float32, {reg, tx}, ShapeArg{{0, 1}});
  CHECK(first_problem(bad).find("UNSHARD has 2 axes but 1 ranges") != std::string::npos);
}

TEST_CASE("an end of a value that is not a range") {
  UOp a = placeholder({8}, dtypes::float32, 0);
  UOp i = range(8, 0);
  UOp st = a[i].store(constant(0.0, dtypes::float32));
  UOp x = variable("x", 0, 7, dtypes::index);
  UOp bad = UOp::make(Op::END, dtypes::void_, {st, x});
  CHECK(first_problem(bad).find("END of DEFINE_VAR x, which is not a range") != std::string::npos);
  UOp bad2 = UOp::make(Op::END, dtypes::void_, {x, i});
  CHECK(first_problem(bad2).find("END of a DEFINE_VAR, which is not an effect") != std::string::npos);
}

TEST_CASE("operand and dtype rules of ALU ops") {
  UOp x = variable("x", 0, 9, dtypes::int32), f = variable_f32("f");
  CHECK(first_problem(UOp::make(Op::ADD, dtypes::int32, {x, f})).find("operands differ in dtype: int32 and float32") != std::string::npos);
  CHECK(first_problem(UOp::make(Op::CMPLT, dtypes::int32, {x, x})).find("result dtype int32 should be bool") != std::string::npos);
  CHECK(first_problem(UOp::make(Op::ADD, dtypes::int32, {x})).find("has 1 sources, expected 2") != std::string::npos);
  CHECK(first_problem(UOp::make(Op::WHERE, dtypes::int32, {x, x, x})).find("condition is int32, not bool") != std::string::npos);
}

TEST_CASE("kernels: a slot or range id used for two things") {
  UOp a = placeholder({8}, dtypes::float32, 0), b = placeholder({8}, dtypes::float16, 0);
  UOp i = range(8, 0);
  UOp k = sink({"k"}, {a[i].store(b[i].load().cast(dtypes::float32)).end({i})});
  CHECK(first_problem(k).find("GLOBAL slot 0 is also used by") != std::string::npos);
  UOp c = placeholder({8}, dtypes::float32, 1);
  UOp j = range(4, 0);
  UOp k2 = sink({"k2"}, {a[i].store(c[j].load()).end({i, j})});
  CHECK(first_problem(k2).find("range id 0 is also used by") != std::string::npos);
}

TEST_CASE("constants, buffers, effects and args") {
  CHECK(first_problem(UOp::make(Op::CONST, dtypes::int8, {}, Wide(1000))).find("1000 does not fit in int8") != std::string::npos);
  CHECK(first_problem(UOp::make(Op::CONST, dtypes::int32, {}, std::string("x"))).find("arg should be a number") != std::string::npos);
  UOp x = variable("x", 0, 9, dtypes::int32);
  CHECK(first_problem(UOp::make(Op::SINK, dtypes::void_, {x}, KernelInfo{"k"})).find("not an effect") != std::string::npos);
  CHECK(first_problem(UOp::make(Op::LOAD, dtypes::int32, {x})).find("loads through an INDEX") != std::string::npos);
  UOp g = placeholder({8}, dtypes::float32, 0), l = alloc_shared({8}, dtypes::float32);
  UOp i = range(8, 0);
  UOp wrong_way = UOp::make(Op::ASYNC_COPY, dtypes::float32, {g[i], l[i]});
  auto v = find_violations(wrong_way);
  REQUIRE(v.size() == 2);
  CHECK(v[0].rule == "destination is not a LOCAL (shared) buffer");
  CHECK(v[1].rule == "source is not a GLOBAL buffer");
}
