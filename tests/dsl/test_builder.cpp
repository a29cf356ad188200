#include <doctest/doctest.h>

#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"

using namespace weft;

TEST_CASE("views keep the shapes they promise") {
  UOp a = placeholder({4, 6}, dtypes::float32, 0);
  CHECK(a.reshape({2, 12}).static_shape() == std::vector<int64_t>{2, 12});
  CHECK(a.permute({1, 0}).static_shape() == std::vector<int64_t>{6, 4});
  CHECK(a.shrink({{1, 3}, {0, 6}}).static_shape() == std::vector<int64_t>{2, 6});
  CHECK(a.pad({{1, 1}, {0, 2}}).static_shape() == std::vector<int64_t>{6, 8});
  CHECK(a.flip({0}).static_shape() == std::vector<int64_t>{4, 6});
  CHECK(a.reshape({4, 1, 6}).expand({4, 3, 6}).static_shape() == std::vector<int64_t>{4, 3, 6});
  CHECK(a.permute({1, 0}).permute({1, 0}).static_shape() == std::vector<int64_t>{4, 6});
}

TEST_CASE("views reject shapes that do not fit, naming the problem") {
  UOp a = placeholder({4, 6}, dtypes::float32, 0);
  CHECK_THROWS_WITH_AS(a.reshape({5, 5}), doctest::Contains("cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements)"), Error);
  CHECK_THROWS_WITH_AS(a.permute({0, 0}), doctest::Contains("not a permutation"), Error);
  CHECK_THROWS_WITH_AS(a.shrink({{0, 5}, {0, 6}}), doctest::Contains("axis 0 bounds [0, 5)"), Error);
  CHECK_THROWS_WITH_AS(a.expand({4, 7}), doctest::Contains("axis 1 of size 6 cannot expand to 7"), Error);
  CHECK_THROWS_WITH_AS(a.pad({{-1, 0}, {0, 0}}), doctest::Contains("negative"), Error);
  CHECK_THROWS_WITH_AS(a.flip({2}), doctest::Contains("axis 2"), Error);
}

TEST_CASE("multi-dimensional indexing checks the number of dimensions") {
  UOp a = placeholder({4, 6}, dtypes::float32, 0);
  UOp i = range(4, 0), j = range(6, 1);
  UOp idx = a[{i, j}];
  CHECK(idx.op() == Op::INDEX);
  CHECK(idx.src().size() == 3);
  CHECK(a(i, 2).src(2).is_const());
  CHECK_THROWS_WITH_AS(a[i], doctest::Contains("1 indices into a 2-dimensional buffer of shape [4, 6]"), Error);
  CHECK_THROWS_WITH_AS((a[{i, constant(1.0, dtypes::float32)}]), doctest::Contains("expected an integer index"), Error);
}

TEST_CASE("load, store, end, after and set build the effect graph") {
  UOp a = placeholder({8}, dtypes::float32, 0);
  UOp out = placeholder({8}, dtypes::float32, 1);
  UOp i = range(8, 0, AxisType::GLOBAL);
  UOp st = out[i].store(a[i].load() * 2.0);
  CHECK(st.op() == Op::STORE);
  UOp e = st.end({i});
  CHECK(e.op() == Op::END);
  UOp after = out.after({e});
  CHECK(after.is_buffer());
  CHECK(after.static_shape() == std::vector<int64_t>{8});
  UOp set = out[i].set(constant(1.0, dtypes::float32), {i});
  CHECK(set.op() == Op::AFTER);
  CHECK(set.src(0).same(out));
  CHECK(set.src(1).op() == Op::END);
  UOp k = sink({"k"}, {e});
  CHECK(k.arg_as<KernelInfo>().name == "k");
  CHECK_THROWS_WITH_AS(st.end({a[i].load()}), doctest::Contains("can only end a range"), Error);
  CHECK_THROWS_WITH_AS((a[i].load() + 1.0).store(constant(1.0, dtypes::float32)), doctest::Contains("can only store through an index"), Error);
  CHECK_THROWS_WITH_AS(out[i].store(constant(Wide(1), dtypes::int32)), doctest::Contains("value of dtype int32 stored into a buffer of float32"), Error);
  CHECK_THROWS_WITH_AS(sink({"bad name"}, {e}), doctest::Contains("not an identifier"), Error);
}

TEST_CASE("arithmetic follows the operand dtype and rejects mixing") {
  UOp x = variable("x", 0, 10, dtypes::int32);
  UOp f = variable_f32("f");
  CHECK((x + 1).dtype() == dtypes::int32);
  CHECK((x / 2).op() == Op::IDIV);
  CHECK((f / 2.0).op() == Op::FDIV);
  CHECK((x < 3).dtype() == dtypes::bool_);
  CHECK((x >= 3).op() == Op::CMPNE);  // !(x < 3)
  CHECK(max(x, x + 1).op() == Op::MAX);
  CHECK(x.cast(dtypes::float32).dtype() == dtypes::float32);
  CHECK(f.bitcast(dtypes::int32).dtype() == dtypes::int32);
  CHECK_THROWS_WITH_AS(x + f, doctest::Contains("different dtypes, int32 (x) and float32 (f)"), Error);
  CHECK_THROWS_WITH_AS(x + 1.5, doctest::Contains("float constant"), Error);
  CHECK_THROWS_WITH_AS(f % 2.0, doctest::Contains("needs integer operands"), Error);
  CHECK_THROWS_WITH_AS(f.bitcast(dtypes::float16), doctest::Contains("changes the size"), Error);
  CHECK_THROWS_WITH_AS(where(x, x, x), doctest::Contains("condition has dtype int32"), Error);
  CHECK_THROWS_WITH_AS(constant(Wide(300), dtypes::int8), doctest::Contains("300 does not fit in int8"), Error);
}

TEST_CASE("scalar parameters: int32, int64 and float32 variables") {
  UOp n = variable("n", 1, 4096, dtypes::int32);
  CHECK(n.vmin() == 1);
  CHECK(n.vmax() == 4096);
  UOp big = variable("big", 0, int64_t{1} << 40, dtypes::int64);
  CHECK(big.vmax() == Wide(1) << 40);
  UOp buf = placeholder(std::vector<UOp>{n}, dtypes::float32, 0);
  CHECK(buf.shape()[0].op() == Op::CAST);  // an int32 dimension becomes an index
  UOp r = range(n, 0, AxisType::GLOBAL);
  CHECK(r.vmax() == 4095);
  CHECK_THROWS_WITH_AS(variable("n", 5, 1), doctest::Contains("min 5 > max 1"), Error);
  CHECK_THROWS_WITH_AS(variable("x", 0, 1, dtypes::float16), doctest::Contains("integer variables are int32, int64 or index"), Error);
  CHECK_THROWS_WITH_AS(variable("x", 0, int64_t{1} << 40, dtypes::int32), doctest::Contains("do not fit in int32"), Error);
  CHECK_THROWS_WITH_AS(placeholder(std::vector<UOp>{n}, dtypes::float32, 0, AddrSpace::LOCAL), doctest::Contains("need constant dimensions"), Error);
}

TEST_CASE("fragments: alloc_fragment is a REG shard unsharded over thread ranges") {
  UOp tx = range(8, 0, AxisType::LOCAL), ty = range(16, 1, AxisType::LOCAL);
  UOp frag = alloc_fragment({64, 64}, dtypes::float32, {0, 1}, {tx, ty});
  CHECK(frag.op() == Op::UNSHARD);
  CHECK(frag.src(0).static_shape() == std::vector<int64_t>{8, 4});
  CHECK(frag.static_shape() == std::vector<int64_t>{64, 64});
  CHECK(frag.src(0).arg_as<BufferArg>().space == AddrSpace::REG);
  CHECK_THROWS_WITH_AS(alloc_fragment({60, 64}, dtypes::float32, {0}, {range(8, 5, AxisType::LOCAL)}),
                       doctest::Contains("size 60 does not divide over 8 threads"), Error);
  UOp reg = placeholder({8, 4}, dtypes::float32, 7, AddrSpace::REG);
  CHECK_THROWS_WITH_AS(reg.unshard({0, 1}, {tx}), doctest::Contains("2 axes but 1 ranges"), Error);
  UOp shared = alloc_shared({64, 64}, dtypes::float16);
  CHECK(shared.arg_as<BufferArg>().space == AddrSpace::LOCAL);
  CHECK_FALSE(alloc_shared({64, 64}, dtypes::float16).same(shared));  // each allocation is its own buffer
}

TEST_CASE("contract, wmma, async copy, custom") {
  UOp u = range(4, 9, AxisType::UPCAST);
  UOp v = (u.cast(dtypes::int32) + 1).cast(dtypes::float16);
  CHECK(v.contract({u}).dtype() == dtypes::float16.vec(4));
  WmmaArg shape{16, 16, 16, dtypes::bfloat16, dtypes::float32, 64};
  UOp a = vectorize(std::vector<UOp>(4, constant(1.0, dtypes::bfloat16)));
  UOp c = vectorize(std::vector<UOp>(4, constant(0.0, dtypes::float32)));
  CHECK(wmma(a, a, c, shape).dtype() == dtypes::float32.vec(4));
  CHECK_THROWS_WITH_AS(wmma(a, a, a, shape), doctest::Contains("C has dtype bfloat16.vec4"), Error);
  UOp g = placeholder({256}, dtypes::float32, 0), s = alloc_shared({256}, dtypes::float32);
  UOp i = range(64, 0, AxisType::LOCAL);
  CHECK(async_copy(s[i * 4], g[i * 4], 4).dtype() == dtypes::float32.vec(4));
  CHECK(custom("s_setprio {0}", {constant(Wide(1), dtypes::int32)}).is_effect());
  CHECK(customi("__shfl({0})", dtypes::float32, {constant(1.0, dtypes::float32)}).dtype() == dtypes::float32);
}
