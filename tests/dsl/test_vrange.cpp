#include <doctest/doctest.h>

#include "weft/dsl/builder.h"

using namespace weft;

namespace {
void range_is(const UOp& u, Wide lo, Wide hi) {
  CHECK(wide_to_string(u.vmin()) == wide_to_string(lo));
  CHECK(wide_to_string(u.vmax()) == wide_to_string(hi));
}
}  // namespace

TEST_CASE("value ranges of leaves") {
  range_is(constant(Wide(5)), 5, 5);
  range_is(range(16, 0), 0, 15);
  range_is(special(64, "lidx0"), 0, 63);
  range_is(variable("n", 3, 9, dtypes::int32), 3, 9);
  range_is(constant(Wide(1), dtypes::bool_), 1, 1);
  range_is(placeholder({4}, dtypes::int8, 0)[constant(Wide(0))].load(), -128, 127);
}

TEST_CASE("value ranges of arithmetic") {
  UOp a = variable("a", -3, 5, dtypes::index), b = variable("b", 2, 4, dtypes::index);
  range_is(a + b, -1, 9);
  range_is(a - b, -7, 3);
  range_is(a * b, -12, 20);
  range_is(-a, -5, 3);
  range_is(a * -2, -10, 6);
  range_is(a / b, -1, 2);   // truncating: -3/2 = -1, 5/2 = 2
  range_is(a % b, -3, 3);   // sign of the dividend, |r| < 4: -3 % 4 = -3
  range_is(b % 8, 2, 4);    // smaller than the divisor: unchanged
  range_is(max(a, b), 2, 5);
  range_is(min(a, b), -3, 4);
  range_is(a < b, 0, 1);
  range_is(b < constant(Wide(5)), 1, 1);
  range_is(b < constant(Wide(2)), 0, 0);
  range_is(where(a < b, a, b), -3, 5);
  range_is(b << 3, 16, 32);
  range_is(b >> 1, 1, 2);
  range_is(b & 1, 0, 1);
  range_is(a.cast(dtypes::uint8), 0, 255);   // negative values wrap: anything
  range_is(b.cast(dtypes::uint8), 2, 4);
}

TEST_CASE("value ranges widen to the dtype when arithmetic may wrap") {
  UOp x = variable("x", 0, 2000000000, dtypes::int32);
  range_is(x + x, -2147483648, 2147483647);
  range_is(x * 2, -2147483648, 2147483647);
  UOp y = variable("y", 0, 1000000000, dtypes::int32);
  range_is(y + y, 0, 2000000000);
  UOp big = variable("big", 0, int64_t{1} << 62, dtypes::int64);
  range_is(big * 2, -(Wide(1) << 63), (Wide(1) << 63) - 1);  // 2^63 does not fit in int64
  range_is(big + big / 2, 0, (Wide(1) << 62) + (Wide(1) << 61));
}
