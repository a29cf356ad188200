// fp8 casts: the software conversion graphs (lowering/fp8_casts.h) evaluated on the host, and
// DSL kernels on every device at hand (emu:gfx950 and emu:gfx942, an NVIDIA GPU when found)
// against the host converters (dsl/float_formats.h), bit for bit: per-tensor and per-row
// quantization q = cast<fp8>(x * inv_scale) and dequantization x' = cast<float32>(q) * scale in
// all four formats (each target converts its own formats with its instructions and the others
// in integer arithmetic), and casts between fp8 and float16, bfloat16, float64, int32, bool and
// the other fp8 formats. The CUDA renderer's fp8 code also compiles with NVRTC without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "kernel_harness.h"
#include "weft/dsl/alu.h"
#include "weft/dsl/builder.h"
#include "weft/emulator/code_object.h"
#include "weft/emulator/listing.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/fp8_casts.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;
using weft::testing::get;
using weft::testing::poisoned;
using weft::testing::put;

namespace {

const DType kFormats[] = {dtypes::fp8e4m3, dtypes::fp8e5m2, dtypes::fp8e4m3fnuz, dtypes::fp8e5m2fnuz};

FloatFormat format(DType d) { return *d.float_format(); }
uint8_t encode(DType fp8, double v) { return static_cast<uint8_t>(encode_float(format(fp8), v, Overflow::Saturate)); }
double decode(DType fp8, uint8_t q) { return decode_float(format(fp8), q); }
uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// Checks element-wise results without an assertion per element (thousands of them): the test
// stops at the first mismatch, naming it.
#define REQUIRE_SAME(got, want, what)                                                                   \
  do {                                                                                                  \
    if (!((got) == (want))) FAIL(what << ": got " << (got) << ", want " << (want));                     \
  } while (0)

// Whether `got` is what a cast of `v` to `fp8` gives. A NaN becomes the canonical NaN with the
// sign it has as a float32: exactly so on the AMD targets; CUDA's float32 arithmetic does not
// promise the sign of a NaN it passes on, so there any NaN pattern of the format is accepted.
bool cast_gives(const std::string& target, DType fp8, uint8_t got, double v) {
  if (std::isnan(v) && target == "cuda") return std::isnan(decode(fp8, got));
  return got == encode(fp8, v);
}

#define REQUIRE_CAST(target, fp8, got, v, what)                                                         \
  do {                                                                                                  \
    if (!cast_gives(target, fp8, got, v)) FAIL(what << ": got " << hex(got) << ", want " << hex(encode(fp8, v)));  \
  } while (0)

// ---- the software conversion on the host -----------------------------------------------------

// A value of the conversion graphs: integers (and fp8 patterns) in `i`, floats in `f`.
struct Value {
  Wide i = 0;
  double f = 0;
};

// Evaluates `graph` with `input` bound to a value, by the IR's ALU semantics (dsl/alu.h).
class Evaluator {
 public:
  Evaluator(const UOp& graph, const UOp& input) : order_(lower::expansion_order(graph, input)) {
    slot_[input.node()] = 0;
    for (size_t i = 0; i < order_.size(); ++i) slot_[order_[i].node()] = i + 1;
    for (const UOp& n : order_) {
      std::vector<size_t> s;
      for (const UOp& x : n.src()) s.push_back(slot_.at(x.node()));
      sources_.push_back(std::move(s));
    }
  }

  Value operator()(Value in) const {
    std::vector<Value> v(order_.size() + 1);
    v[0] = in;
    for (size_t k = 0; k < order_.size(); ++k) v[k + 1] = step(order_[k], sources_[k], v);
    return v.back();
  }

 private:
  static Value step(const UOp& n, const std::vector<size_t>& s, const std::vector<Value>& v) {
    const DType d = n.dtype();
    Value r;
    if (n.op() == Op::CONST) {
      if (d.is_float()) r.f = n.const_float();
      else r.i = n.const_int();
    } else if (n.op() == Op::BITCAST) {
      const DType from = n.src(0).dtype();
      if (from == dtypes::float32) r.i = bits(static_cast<float>(v[s[0]].f));
      else if (from == dtypes::float64) r.i = static_cast<Wide>(std::bit_cast<uint64_t>(v[s[0]].f));
      else if (d == dtypes::float32) r.f = std::bit_cast<float>(static_cast<uint32_t>(v[s[0]].i));
      else r.i = v[s[0]].i;  // uint8 <-> fp8: fp8 values are kept as their patterns
    } else if (n.op() == Op::CAST) {
      if (d.is_float()) r.f = round_to(d, static_cast<double>(v[s[0]].i));  // the graphs cast only integers to float
      else r.i = wrap_to(d, v[s[0]].i);
    } else if (d.is_float()) {
      std::vector<double> args;
      for (size_t i : s) args.push_back(v[i].f);
      r.f = *exec_float(n.op(), d, args);
    } else {
      std::vector<Wide> args;
      for (size_t i : s) args.push_back(v[i].i);
      const auto x = exec_int(n.op(), opsets::comparison.contains(n.op()) ? n.src(0).dtype() : d, args);
      if (!x) FAIL("undefined " << op_name(n.op()) << " in the conversion graph");
      r.i = *x;
    }
    return r;
  }

  std::vector<UOp> order_;
  std::unordered_map<const Node*, size_t> slot_;
  std::vector<std::vector<size_t>> sources_;
};

UOp leaf(DType d) { return placeholder({1}, d, 0)(0).load(); }

// Values that probe a format's rounding: every value and every midpoint between neighbouring
// values, one float32 step either side, both signs; zeros, infinities, NaNs, float32
// subnormals, values far out of range.
std::vector<float> special_values(DType fp8) {
  std::vector<float> v;
  for (uint32_t c = 0; c <= 0x7F; ++c) {
    const double lo = decode(fp8, static_cast<uint8_t>(c)), hi = decode(fp8, static_cast<uint8_t>(c + 1));
    if (!std::isfinite(lo)) continue;
    const double mid = std::isfinite(hi) ? (lo + hi) / 2 : lo + (lo - decode(fp8, static_cast<uint8_t>(c - 1))) / 2;
    for (double x : {lo, mid})
      for (float y : {static_cast<float>(x), std::nextafter(static_cast<float>(x), 0.0f), std::nextafter(static_cast<float>(x), INFINITY)}) {
        v.push_back(y);
        v.push_back(-y);
      }
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float x : {0.0f, -0.0f, inf, -inf, nan, -nan, 1e30f, -1e30f, 1e-30f, -1e-30f, std::numeric_limits<float>::denorm_min(),
                  std::bit_cast<float>(0x7FA00001u), std::numeric_limits<float>::max()})
    v.push_back(x);
  return v;
}

// Random float32s whose magnitudes spread over 2^-24 .. 2^18 (every fp8 binade, subnormals and
// overflow), and now and then any bits at all.
std::vector<float> random_values(size_t n) {
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<uint32_t> exponent(127 - 24, 127 + 18);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = any(weft::testing::rng());
    v[i] = std::bit_cast<float>(i % 16 == 0 ? r : (r & 0x807FFFFFu) | exponent(weft::testing::rng()) << 23);
  }
  return v;
}

// ---- kernels ---------------------------------------------------------------------------------

constexpr int64_t kCols = 256;  // one row per workgroup, one element per thread

// q[r, c] = cast<fp8>(x[r, c] * inv_scale[r or 0]).
UOp quantize(DType fp8, int64_t rows, bool per_row) {
  UOp q = placeholder({rows, kCols}, fp8, 0), x = placeholder({rows, kCols}, dtypes::float32, 1);
  UOp s = placeholder({per_row ? rows : 1}, dtypes::float32, 2);
  UOp r = range(rows, 0, AxisType::GLOBAL), c = range(kCols, 1, AxisType::LOCAL);
  UOp scale = per_row ? s(r).load() : s(0).load();
  const std::string name = "quantize_" + fp8.name() + (per_row ? "_per_row" : "_per_tensor");
  return sink({name}, {q[{r, c}].store((x[{r, c}].load() * scale).cast(fp8)).end({c, r})});
}

// y[r, c] = cast<float32>(q[r, c]) * scale[r or 0].
UOp dequantize(DType fp8, int64_t rows, bool per_row) {
  UOp y = placeholder({rows, kCols}, dtypes::float32, 0), q = placeholder({rows, kCols}, fp8, 1);
  UOp s = placeholder({per_row ? rows : 1}, dtypes::float32, 2);
  UOp r = range(rows, 0, AxisType::GLOBAL), c = range(kCols, 1, AxisType::LOCAL);
  UOp scale = per_row ? s(r).load() : s(0).load();
  const std::string name = "dequantize_" + fp8.name() + (per_row ? "_per_row" : "_per_tensor");
  return sink({name}, {y[{r, c}].store(q[{r, c}].load().cast(dtypes::float32) * scale).end({c, r})});
}

// out[i] = cast<to>(in[i]) for n elements (a multiple of 256).
UOp convert(DType from, DType to, int64_t n) {
  UOp out = placeholder({n}, to, 0), in = placeholder({n}, from, 1);
  UOp g = range(n / kCols, 0, AxisType::GLOBAL), l = range(kCols, 1, AxisType::LOCAL);
  UOp i = g * kCols + l;
  return sink({"convert_" + from.name() + "_to_" + to.name()}, {out[i].store(in[i].load().cast(to)).end({l, g})});
}

// q[4i + u] = cast<fp8>(x[4i + u]), then y[4i + u] = cast<float32>(q[4i + u]), u an UPCAST range.
UOp upcast_round_trip(DType fp8) {
  UOp q = placeholder({1024}, fp8, 0), y = placeholder({1024}, dtypes::float32, 1), x = placeholder({1024}, dtypes::float32, 2);
  UOp l = range(256, 0, AxisType::LOCAL), u = range(4, 1, AxisType::UPCAST), u2 = range(4, 2, AxisType::UPCAST);
  UOp quantized = q[l * 4 + u].set(x[l * 4 + u].load().cast(fp8), {u});
  return sink({"fp8_upcast_round_trip_" + fp8.name()}, {y[l * 4 + u2].store(quantized[l * 4 + u2].load().cast(dtypes::float32)).end({u2, l})});
}

std::vector<uint8_t> all_codes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i);
  return v;
}

bool native(const std::string& target, DType fp8) {
  const bool fnuz = float_format_info(format(fp8)).fnuz;
  return target == "emu:gfx942" ? fnuz : target == "emu:gfx950" && !fnuz;
}

}  // namespace

TEST_CASE("fp8: the software conversions equal the host converters bit for bit (evaluated on the host)") {
  for (DType fp8 : kFormats) {
    CAPTURE(fp8.name());
    // Decoding: all 256 codes.
    const UOp q = leaf(fp8);
    const Evaluator decoded(lower::fp8_to_float32(q).bitcast(dtypes::uint32), q);
    for (uint32_t c = 0; c < 256; ++c) {
      const double want = decode(fp8, static_cast<uint8_t>(c));
      const auto got = static_cast<uint32_t>(decoded({Wide(c), 0}).i);
      REQUIRE_SAME(hex(got), hex(std::isnan(want) ? 0x7FC00000u : bits(static_cast<float>(want))), "code " << hex(c));
    }
    // Encoding float32: the special values and many random ones.
    const UOp x = leaf(dtypes::float32);
    const Evaluator encoded(lower::fp8_from_float(x, fp8), x);
    std::vector<float> values = special_values(fp8);
    const std::vector<float> more = random_values(30000);
    values.insert(values.end(), more.begin(), more.end());
    for (float f : values) {
      const auto got = static_cast<uint32_t>(encoded({0, f}).i);
      REQUIRE_SAME(hex(got), hex(encode(fp8, f)), f << " (" << hex(bits(f)) << ")");
    }
    // Encoding float64: rounded once, so values just off a midpoint, closer than float32 can
    // say, go the right way.
    const UOp xd = leaf(dtypes::float64);
    const Evaluator encoded_d(lower::fp8_from_float(xd, fp8), xd);
    for (float f : values) {
      for (double d : {static_cast<double>(f), f * (1 + 0x1p-40), f * (1 - 0x1p-40), f + 0x1p-1070}) {
        const auto got = static_cast<uint32_t>(encoded_d({0, d}).i);
        REQUIRE_SAME(hex(got), hex(encode(fp8, d)), "float64 " << d);
      }
    }
    CHECK(values.size() > 30000);  // every one compared above
  }
}

TEST_CASE("fp8: conversion graphs refuse what they cannot convert, naming it") {
  CHECK_THROWS_WITH_AS(lower::fp8_from_float(leaf(dtypes::float16), dtypes::fp8e4m3), doctest::Contains("float32 or float64, got float16"),
                       Error);
  CHECK_THROWS_WITH_AS(lower::fp8_to_float32(leaf(dtypes::int8)), doctest::Contains("scalar fp8 dtype, got int8"), Error);
  const UOp c = leaf(dtypes::float16).cast(dtypes::fp8e5m2);
  CHECK_THROWS_WITH_AS(lower::fp8_cast_in_software(c), doctest::Contains("is not a scalar float32/float64 <-> fp8 CAST"), Error);
  CHECK_THROWS_WITH_AS(lower::fp8_cast_through_float32(leaf(dtypes::float16).cast(dtypes::float32)), doctest::Contains("no fp8 side"), Error);
  // Through float32: float16 first widens exactly; a vector goes lane by lane.
  CHECK(lower::fp8_cast_through_float32(c).same(leaf(dtypes::float16).cast(dtypes::float32).cast(dtypes::fp8e5m2)));
  const UOp v = vectorize({leaf(dtypes::float32), leaf(dtypes::float32)}).cast(dtypes::fp8e4m3.vec(2));
  CHECK(lower::fp8_cast_through_float32(v).op() == Op::VECTORIZE);
}

WEFT_DEVICE_TEST_CASE("fp8: per-tensor and per-row quantize and dequantize, bit-exact, in every format on every device") {
  const int64_t rows = 16;
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    for (DType fp8 : kFormats) {
      CAPTURE(fp8.name());
      const std::vector<float> specials = special_values(fp8);
      for (bool per_row : {false, true}) {
        CAPTURE(per_row);
        // Scales: powers of two (so that x * inv_scale lands exactly on the midpoints of the
        // special values) and, per row, some that are not.
        std::vector<float> inv(per_row ? rows : 1);
        for (size_t r = 0; r < inv.size(); ++r)
          inv[r] = r % 2 ? weft::testing::random_floats(1, 0.01f, 100.0f)[0] : std::ldexp(1.0f, static_cast<int>(r % 7) - 3);
        std::vector<float> x(static_cast<size_t>(rows * kCols));
        const std::vector<float> rnd = random_values(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          const float s = inv[per_row ? i / kCols : 0];
          x[i] = i % 3 ? rnd[i] / s : specials[(i / 3) % specials.size()] / s;
        }
        auto qk = rt::CompiledKernel::compile(*dev, quantize(fp8, rows, per_row));
        if (target.starts_with("emu:")) {
          std::ostringstream listing;
          emu::write_listing(emu::CodeObject::load(qk.code_object()), listing);
          // The target's own formats with its conversion instruction, the others in integer arithmetic.
          const std::string insn = float_format_info(format(fp8)).mantissa_bits == 3 ? "v_cvt_pk_fp8_f32" : "v_cvt_pk_bf8_f32";
          CHECK((listing.str().find(insn) != std::string::npos) == native(target, fp8));
        }
        const rt::DeviceArray qargs[] = {poisoned(*dev, fp8, x.size()), put(*dev, dtypes::float32, x), put(*dev, dtypes::float32, inv)};
        qk.launch(*dev, qargs);
        const auto q = get<uint8_t>(*dev, qargs[0]);
        for (size_t i = 0; i < x.size(); ++i) {
          const float p = x[i] * inv[per_row ? i / kCols : 0];
          REQUIRE_CAST(target, fp8, q[i], p,
                       "element " << i << ": " << x[i] << " * " << inv[per_row ? i / kCols : 0] << " = " << p << " (" << hex(bits(p)) << ")");
        }
        // Dequantize every code and what quantize made.
        std::vector<uint8_t> codes = q;
        for (size_t i = 0; i < 256; ++i) codes[i * 5 % codes.size()] = static_cast<uint8_t>(i);
        auto dk = rt::CompiledKernel::compile(*dev, dequantize(fp8, rows, per_row));
        std::vector<float> scale(inv.size());
        for (size_t r = 0; r < scale.size(); ++r) scale[r] = 1.0f / inv[r];
        const rt::DeviceArray dargs[] = {poisoned(*dev, dtypes::float32, codes.size()), put(*dev, fp8, codes),
                                         put(*dev, dtypes::float32, scale)};
        dk.launch(*dev, dargs);
        const auto y = get<float>(*dev, dargs[0]);
        for (size_t i = 0; i < codes.size(); ++i) {
          const float want = static_cast<float>(decode(fp8, codes[i])) * scale[per_row ? i / kCols : 0];
          if (std::isnan(want)) REQUIRE_SAME(std::isnan(y[i]), true, "element " << i << ", code " << hex(codes[i]) << " is NaN");
          else REQUIRE_SAME(hex(bits(y[i])), hex(bits(want)), "element " << i << ", code " << hex(codes[i]) << " = " << want);
        }
      }
    }
  }
}

namespace {

// Runs convert(from, to) on `in` (raw element bytes) and returns the output's bytes.
int convert_runs = 0;

template <class In, class Out>
std::vector<Out> run_convert(rt::Device& dev, DType from, DType to, const std::vector<In>& in) {
  ++convert_runs;
  auto k = rt::CompiledKernel::compile(dev, convert(from, to, static_cast<int64_t>(in.size())));
  const rt::DeviceArray args[] = {poisoned(dev, to, in.size()), put(dev, from, in)};
  k.launch(dev, args);
  return get<Out>(dev, args[0]);
}

template <class T>
T bits_of(double v, DType d) {
  if constexpr (sizeof(T) == 8) return std::bit_cast<T>(v);
  else if constexpr (sizeof(T) == 4) return static_cast<T>(bits(static_cast<float>(v)));
  else return static_cast<T>(encode_float(format(d), v));
}

}  // namespace

WEFT_DEVICE_TEST_CASE("fp8: casts between fp8 and float16, bfloat16, float64, int32, bool and the other fp8 formats") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    convert_runs = 0;
    for (DType fp8 : kFormats) {
      CAPTURE(fp8.name());
      // float16 and bfloat16 to fp8: every pattern.
      std::vector<uint16_t> halves(65536);
      for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
      for (DType half : {dtypes::float16, dtypes::bfloat16}) {
        CAPTURE(half.name());
        const auto q = run_convert<uint16_t, uint8_t>(*dev, half, fp8, halves);
        for (size_t i = 0; i < halves.size(); ++i) {
          double v = decode_float(format(half), halves[i]);
          if (std::isnan(v) && (halves[i] >> 15)) v = -v;  // decode_float's NaNs are positive
          REQUIRE_CAST(target, fp8, q[i], v, hex(halves[i]) << " = " << v);
        }
      }
      // float64 to fp8: rounded once (values off a midpoint by less than float32 resolves).
      std::vector<double> doubles;
      for (float f : special_values(fp8))
        for (double d : {static_cast<double>(f), f * (1 + 0x1p-40), f * (1 - 0x1p-40)}) doubles.push_back(d);
      doubles.resize((doubles.size() + 255) / 256 * 256, 3.0);
      const auto qd = run_convert<double, uint8_t>(*dev, dtypes::float64, fp8, doubles);
      for (size_t i = 0; i < doubles.size(); ++i) {
        REQUIRE_CAST(target, fp8, qd[i], doubles[i], doubles[i]);
      }
      // int32 to fp8, saturating.
      std::vector<int32_t> ints = weft::testing::random_ints(1024 - 10, -100000, 100000);
      for (int32_t v : {0, 1, -1, 57344, -61440, 16777217, -16777217, 448, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()})
        ints.push_back(v);
      const auto qi = run_convert<int32_t, uint8_t>(*dev, dtypes::int32, fp8, ints);
      for (size_t i = 0; i < ints.size(); ++i) {
        REQUIRE_CAST(target, fp8, qi[i], ints[i], ints[i]);
      }
      // fp8 to float16, bfloat16, float64 (exact), bool (nonzero), int32 (truncated; NaN codes,
      // whose conversion to an integer is undefined, left out) and the other formats.
      const std::vector<uint8_t> codes = all_codes(256);
      auto each_code = [&](auto check) {
        for (uint32_t c = 0; c < 256; ++c) check(c, decode(fp8, static_cast<uint8_t>(c)));
      };
      for (DType half : {dtypes::float16, dtypes::bfloat16}) {
        CAPTURE(half.name());
        const auto h = run_convert<uint8_t, uint16_t>(*dev, fp8, half, codes);
        each_code([&](uint32_t c, double v) {
          if (std::isnan(v)) REQUIRE_SAME(std::isnan(decode_float(format(half), h[c])), true, "code " << hex(c));
          else REQUIRE_SAME(hex(h[c]), hex(bits_of<uint16_t>(v, half)), "code " << hex(c) << " = " << v);
        });
      }
      const auto d = run_convert<uint8_t, uint64_t>(*dev, fp8, dtypes::float64, codes);
      each_code([&](uint32_t c, double v) {
        if (std::isnan(v)) REQUIRE_SAME(std::isnan(std::bit_cast<double>(d[c])), true, "code " << hex(c));
        else REQUIRE_SAME(hex(d[c]), hex(std::bit_cast<uint64_t>(v)), "code " << hex(c) << " = " << v);
      });
      const auto b = run_convert<uint8_t, uint8_t>(*dev, fp8, dtypes::bool_, codes);
      each_code([&](uint32_t c, double v) { REQUIRE_SAME(int(b[c]), int(v != 0), "code " << hex(c) << " = " << v); });
      std::vector<uint8_t> finite;
      for (uint8_t c : codes)
        if (std::isfinite(decode(fp8, c))) finite.push_back(c);
      finite.resize(256, 0x01);
      const auto n = run_convert<uint8_t, int32_t>(*dev, fp8, dtypes::int32, finite);
      for (size_t i = 0; i < finite.size(); ++i)
        REQUIRE_SAME(n[i], static_cast<int32_t>(std::trunc(decode(fp8, finite[i]))), "code " << hex(finite[i]));
      for (DType other : kFormats) {
        if (other == fp8) continue;
        CAPTURE(other.name());
        const auto o = run_convert<uint8_t, uint8_t>(*dev, fp8, other, codes);
        each_code([&](uint32_t c, double v) { REQUIRE_CAST(target, other, o[c], v, "code " << hex(c) << " = " << v); });
      }
    }
    CHECK(convert_runs == 4 * 12);  // every kernel above ran and was checked
  }
}

TEST_CASE("fp8: the CUDA renderer converts OCP formats with cvt on sm_89+ and the rest in integer arithmetic, and NVRTC compiles both") {
  const bool nvrtc = rt::nvrtc_available();
  if (!nvrtc) std::cerr << "fp8 CUDA render test: NVRTC (libnvrtc.so) not found; sources checked, not compiled\n";
  for (DType fp8 : kFormats) {
    CAPTURE(fp8.name());
    const bool ocp = !float_format_info(format(fp8)).fnuz;
    const std::string cvt = float_format_info(format(fp8)).mantissa_bits == 3 ? "e4m3x2" : "e5m2x2";
    for (const UOp& k : {quantize(fp8, 4, true), dequantize(fp8, 4, false), convert(dtypes::float16, fp8, 256), convert(fp8, dtypes::float64, 256),
                         convert(dtypes::float64, fp8, 256), upcast_round_trip(fp8)}) {
      const auto lowered = lower::lower(k);
      for (int sm : {80, 90}) {
        CAPTURE(sm);
        const std::string src = cuda::render_cuda(lowered, sm);
        INFO(src);
        const bool from_f64 = lowered.name.starts_with("convert_float64");
        CHECK((src.find(cvt) != std::string::npos) == (ocp && sm >= 89 && !from_f64));
        if (nvrtc) CHECK(rt::nvrtc_compile(src, lowered.name, "sm_" + std::to_string(sm)).size() > 0);
      }
    }
  }
}

WEFT_DEVICE_TEST_CASE("fp8: constants of fp8 dtypes are their patterns on every device") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    for (DType fp8 : kFormats) {
      CAPTURE(fp8.name());
      UOp a = placeholder({256}, fp8, 0), b = placeholder({256}, fp8, 1);
      UOp l = range(256, 0, AxisType::LOCAL);
      const double big = 1e9, third = 1.0 / 3.0;  // saturates; rounds
      auto k = rt::CompiledKernel::compile(
          *dev, sink({"fp8_constants_" + fp8.name()}, {group({a[l].store(constant(big, fp8)), b[l].store(constant(third, fp8))}).end({l})}));
      const rt::DeviceArray args[] = {poisoned(*dev, fp8, 256), poisoned(*dev, fp8, 256)};
      k.launch(*dev, args);
      const auto qa = get<uint8_t>(*dev, args[0]), qb = get<uint8_t>(*dev, args[1]);
      for (size_t i = 0; i < 256; ++i) REQUIRE_SAME(hex(qa[i]), hex(encode(fp8, big)), "element " << i);
      for (size_t i = 0; i < 256; ++i) REQUIRE_SAME(hex(qb[i]), hex(encode(fp8, third)), "element " << i);
    }
  }
}

WEFT_DEVICE_TEST_CASE("fp8: casts in an UPCAST range, whose fp8 values load and store as vectors") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    for (DType fp8 : {dtypes::fp8e4m3, dtypes::fp8e5m2fnuz}) {
      CAPTURE(fp8.name());
      auto compiled = rt::CompiledKernel::compile(*dev, upcast_round_trip(fp8));
      std::vector<float> xs = special_values(fp8);
      xs.resize(1024, 0.75f);
      const rt::DeviceArray args[] = {poisoned(*dev, fp8, 1024), poisoned(*dev, dtypes::float32, 1024), put(*dev, dtypes::float32, xs)};
      compiled.launch(*dev, args);
      const auto qs = get<uint8_t>(*dev, args[0]);
      const auto ys = get<float>(*dev, args[1]);
      for (size_t i = 0; i < 1024; ++i) {
        REQUIRE_CAST(target, fp8, qs[i], xs[i], "element " << i << " = " << xs[i]);
        const double want = decode(fp8, qs[i]);
        if (std::isnan(want)) REQUIRE_SAME(std::isnan(ys[i]), true, "element " << i);
        else REQUIRE_SAME(hex(bits(ys[i])), hex(bits(static_cast<float>(want))), "element " << i);
      }
      // The fp8 values travel as vectors (the casts themselves are scalar by then).
      const auto& program = compiled.lowered().program;
      CHECK(std::any_of(program.begin(), program.end(), [&](const lower::LinearOp& s) {
        return (s.op.op() == Op::LOAD && s.op.dtype() == fp8.vec(4)) || (s.op.op() == Op::STORE && s.op.src(1).dtype() == fp8.vec(4));
      }));
    }
  }
}
