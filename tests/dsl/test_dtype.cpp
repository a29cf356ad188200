#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "weft/dsl/alu.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/dtype.h"

using namespace weft;

TEST_CASE("dtype properties") {
  CHECK(dtypes::int32.bits() == 32);
  CHECK(dtypes::bfloat16.itemsize() == 2);
  CHECK(dtypes::float32.vec(4).itemsize() == 16);
  CHECK(dtypes::fp8e4m3fnuz.is_fp8());
  CHECK(dtypes::index.is_signed());
  CHECK(dtypes::uint16.is_unsigned());
  CHECK_FALSE(dtypes::bool_.is_int());
  CHECK(dtypes::bool_.is_integral());
  CHECK(dtypes::int8.min_value() == -128);
  CHECK(dtypes::uint64.max_value() == (Wide(1) << 64) - 1);
  CHECK(dtypes::bfloat16.vec(8).name() == "bfloat16.vec8");
  CHECK(dtypes::fp8e5m2fnuz.name() == "float8_e5m2fnuz");
}

TEST_CASE("dtype names round-trip") {
  for (int s = 0; s < kScalarCount; ++s)
    for (int lanes : {1, 2, 16}) {
      DType d{static_cast<Scalar>(s), static_cast<uint16_t>(lanes)};
      auto parsed = parse_dtype(d.name());
      REQUIRE(parsed);
      CHECK(*parsed == d);
    }
  CHECK_FALSE(parse_dtype("float33"));
  CHECK_FALSE(parse_dtype("float32.vec"));
  CHECK_FALSE(parse_dtype("float32.vecx"));
}

TEST_CASE("wrap_to gives two's-complement and modular results") {
  CHECK(wrap_to(dtypes::int8, 128) == -128);
  CHECK(wrap_to(dtypes::int8, -129) == 127);
  CHECK(wrap_to(dtypes::uint8, -1) == 255);
  CHECK(wrap_to(dtypes::uint32, Wide(1) << 32) == 0);
  CHECK(wrap_to(dtypes::int64, (Wide(1) << 63)) == -(Wide(1) << 63));
  CHECK(wrap_to(dtypes::bool_, 7) == 1);
}

TEST_CASE("integer ALU semantics are C's, with wrapping overflow") {
  auto run = [](Op op, DType dt, std::vector<Wide> args) { return exec_int(op, dt, args); };
  // Division truncates toward zero; the remainder has the dividend's sign.
  for (int a = -9; a <= 9; ++a)
    for (int b = -4; b <= 4; ++b) {
      if (b == 0) continue;
      CAPTURE(a);
      CAPTURE(b);
      CHECK(*run(Op::IDIV, dtypes::int32, {a, b}) == a / b);
      CHECK(*run(Op::MOD, dtypes::int32, {a, b}) == a % b);
    }
  CHECK_FALSE(run(Op::IDIV, dtypes::int32, {1, 0}));
  CHECK_FALSE(run(Op::MOD, dtypes::int32, {1, 0}));
  CHECK(*run(Op::IDIV, dtypes::int32, {-2147483648LL, -1}) == -2147483648LL);  // wraps
  CHECK(*run(Op::MUL, dtypes::int32, {65536, 65536}) == 0);
  CHECK(*run(Op::ADD, dtypes::uint8, {200, 100}) == 44);
  CHECK(*run(Op::SHR, dtypes::int32, {-7, 1}) == -4);  // arithmetic shift
  CHECK(*run(Op::SHR, dtypes::uint32, {0xFFFFFFFFLL, 4}) == 0x0FFFFFFF);
  CHECK(*run(Op::SHL, dtypes::int32, {1, 31}) == -2147483648LL);
  CHECK_FALSE(run(Op::SHL, dtypes::int32, {1, 32}));
  CHECK(*run(Op::CMPLT, dtypes::int32, {-1, 0}) == 1);
  CHECK(*run(Op::WHERE, dtypes::int32, {0, 5, 7}) == 7);
  CHECK(*run(Op::CAST, dtypes::int8, {300}) == 44);
}

TEST_CASE("float ALU results are rounded to the dtype") {
  std::vector<double> third{1.0, 3.0};
  CHECK(*exec_float(Op::FDIV, dtypes::float32, third) == static_cast<double>(1.0f / 3.0f));
  CHECK(*exec_float(Op::FDIV, dtypes::float64, third) == 1.0 / 3.0);
  CHECK(round_to(dtypes::bfloat16, 1.0 + 1.0 / 256) == 1.0);  // tie goes to even
  CHECK(round_to(dtypes::float16, 65520.0) == INFINITY);
}

TEST_CASE("rounding to fp8 saturates, as a cast to fp8 does") {
  CHECK(round_to(dtypes::fp8e4m3, 1000.0) == 448.0);
  CHECK(round_to(dtypes::fp8e4m3, -INFINITY) == -448.0);
  CHECK(round_to(dtypes::fp8e5m2, INFINITY) == 57344.0);
  CHECK(round_to(dtypes::fp8e4m3fnuz, 241.0) == 240.0);
  CHECK(round_to(dtypes::fp8e5m2fnuz, -1e9) == -57344.0);
  CHECK(std::isnan(round_to(dtypes::fp8e4m3, NAN)));
  CHECK(round_to(dtypes::fp8e4m3, 0.5 + 1.0 / 32) == 0.5);  // tie between 0.5 and 0.5625 goes to even
  CHECK(constant(1000.0, dtypes::fp8e5m2fnuz).const_float() == 1024.0);  // constants are stored rounded
  CHECK(constant(1e6, dtypes::fp8e4m3).const_float() == 448.0);
}
