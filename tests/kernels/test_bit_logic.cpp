// Three-input bit logic, which LLVM compiles to gfx950's v_bitop3_b32 (a truth table in the
// instruction): every function here against the host on random words, on every device.
#include <doctest/doctest.h>

#include <sstream>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/emulator/listing.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

TEST_CASE("three-input bit functions (v_bitop3 on gfx950) match the host") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({3, 256}, dtypes::int32, 1), out = placeholder({5, 256}, dtypes::int32, 0);
    UOp l = range(256, 0, AxisType::LOCAL);
    UOp a = in[{constant(Wide(0)), l}].load(), b = in[{constant(Wide(1)), l}].load(), c = in[{constant(Wide(2)), l}].load();
    std::vector<UOp> f{(a & b) | (~a & c), a ^ b ^ c, (a | b) & c, (a & b) | (a & c) | (b & c), ~(a | (b ^ c))};
    std::vector<UOp> stores;
    for (size_t i = 0; i < f.size(); ++i) stores.push_back(out[{constant(Wide(static_cast<int64_t>(i))), l}].store(f[i]));
    auto compiled = rt::CompiledKernel::compile(*dev, sink({"bit_logic"}, {group(stores).end({l})}));
    if (target == "emu:gfx950") {
      std::ostringstream listing;
      emu::write_listing(emu::CodeObject::load(compiled.code_object()), listing);
      CHECK(listing.str().find("v_bitop3_b32") != std::string::npos);
    }
    auto x = weft::testing::random_ints(3 * 256, INT32_MIN, INT32_MAX);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::int32, 5 * 256), put(*dev, dtypes::int32, x)};
    compiled.launch(*dev, args);
    auto y = get<int32_t>(*dev, args[0]);
    for (size_t q = 0; q < 256; ++q) {
      const int32_t A = x[q], B = x[256 + q], C = x[512 + q];
      const int32_t want[] = {(A & B) | (~A & C), A ^ B ^ C, (A | B) & C, (A & B) | (A & C) | (B & C), ~(A | (B ^ C))};
      for (size_t i = 0; i < 5; ++i) {
        CAPTURE(q);
        CAPTURE(i);
        REQUIRE(y[i * 256 + q] == want[i]);
      }
    }
  }
}
