// Work across threads: reductions over LOCAL, GROUP_REDUCE and WARP ranges (every thread gets
// the result), WARP ranges as the waves of a workgroup, and the lane operations (shuffles,
// broadcasts, votes, wave reductions). Each kernel runs on every device at hand against a host
// reference; integer results are exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/verify.h"
#include "weft/runtime/inspect.h"
#include "weft/lowering/cuda_codegen.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

namespace {

// Lanes of a wave on the device: 64 on the CDNA emulator, 32 on NVIDIA.
int64_t wave_of(const std::string& device) { return device.starts_with("cuda") ? 32 : 64; }

std::vector<int32_t> run_int_kernel(rt::Device& dev, const UOp& k, const std::vector<int32_t>& x, size_t out_elements) {
  auto compiled = rt::CompiledKernel::compile(dev, k);
  const rt::DeviceArray args[] = {weft::testing::poisoned(dev, dtypes::int32, out_elements), put(dev, dtypes::int32, x)};
  compiled.launch(dev, args);
  return get<int32_t>(dev, args[0]);
}

// out[t] = the reduction of in[t'] over the threads t' that differ from t only in `reduced`, for
// a workgroup of LOCAL ranges `sizes` (the first the fastest).
void check_local_reduction(const std::vector<int64_t>& sizes, const std::vector<size_t>& reduced, Op op) {
  int64_t threads = 1;
  for (int64_t s : sizes) threads *= s;
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({threads}, dtypes::int32, 1), out = placeholder({threads}, dtypes::int32, 0);
    std::vector<UOp> r;
    UOp tid = constant(Wide(0));
    int64_t stride = 1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      r.push_back(range(sizes[i], static_cast<int64_t>(i), AxisType::LOCAL));
      tid = tid + r.back() * stride;
      stride *= sizes[i];
    }
    std::vector<UOp> over;
    for (size_t i : reduced) over.push_back(r[i]);
    UOp total = in[tid].load().reduce(op, over);
    UOp k = sink({"thread_reduce"}, {out[tid].store(total).end(r)});
    auto x = weft::testing::random_ints(static_cast<size_t>(threads), -1000, 1000);
    auto y = run_int_kernel(*dev, k, x, static_cast<size_t>(threads));
    for (int64_t t = 0; t < threads; ++t) {
      // The threads in t's group: enumerate every assignment of the reduced coordinates.
      std::vector<int64_t> coord(sizes.size());
      int64_t rest = t;
      for (size_t i = 0; i < sizes.size(); ++i) coord[i] = rest % sizes[i], rest /= sizes[i];
      int64_t want = op == Op::ADD ? 0 : op == Op::MAX ? INT32_MIN : INT32_MAX;
      std::function<void(size_t)> visit = [&](size_t j) {
        if (j == reduced.size()) {
          int64_t q = 0, s = 1;
          for (size_t i = 0; i < sizes.size(); ++i) q += coord[i] * s, s *= sizes[i];
          const int64_t v = x[static_cast<size_t>(q)];
          want = op == Op::ADD ? want + v : op == Op::MAX ? std::max(want, v) : std::min(want, v);
          return;
        }
        const int64_t keep = coord[reduced[j]];
        for (int64_t c = 0; c < sizes[reduced[j]]; ++c) coord[reduced[j]] = c, visit(j + 1);
        coord[reduced[j]] = keep;
      };
      visit(0);
      CAPTURE(t);
      REQUIRE(y[static_cast<size_t>(t)] == want);
    }
  }
}

}  // namespace

WEFT_DEVICE_TEST_CASE("a REDUCE over a LOCAL range is a workgroup reduction that every thread receives") {
  SUBCASE("256 threads: across waves (the sum once came out as one thread's value)") { check_local_reduction({256}, {0}, Op::ADD); }
  SUBCASE("one wave") { check_local_reduction({64}, {0}, Op::MAX); }
  SUBCASE("32 threads, less than an AMD wave") { check_local_reduction({32}, {0}, Op::MIN); }
  SUBCASE("96 threads, not a power of two") { check_local_reduction({96}, {0}, Op::ADD); }
  SUBCASE("16 x 16: over the fast axis, within waves") { check_local_reduction({16, 16}, {0}, Op::ADD); }
  SUBCASE("16 x 16: over the slow axis, across waves") { check_local_reduction({16, 16}, {1}, Op::ADD); }
  SUBCASE("8 x 4 x 8: over two of three axes") { check_local_reduction({8, 4, 8}, {0, 2}, Op::MAX); }
}

WEFT_DEVICE_TEST_CASE("the example that was silently serial: a 256-thread sum of 1..256 is 32896") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({256}, dtypes::int32, 1), out = placeholder({1}, dtypes::int32, 0);
    UOp l = range(256, 0, AxisType::LOCAL);
    UOp k = sink({"sum256"}, {out[constant(Wide(0))].store(in[l].load().reduce(Op::ADD, {l}))});
    std::vector<int32_t> x(256);
    std::iota(x.begin(), x.end(), 1);
    CHECK(run_int_kernel(*dev, k, x, 1)[0] == 32896);
  }
}

WEFT_DEVICE_TEST_CASE("float workgroup sums inside a loop over rows match a double reference") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    // 8 rows of 128, one workgroup: each row summed by all 128 threads; the partials' shared
    // buffer is reused every row (the write-after-read barrier keeps rows apart).
    UOp in = placeholder({8, 128}, dtypes::float32, 1), out = placeholder({8}, dtypes::float32, 0);
    UOp l = range(128, 0, AxisType::LOCAL), row = range(8, 1, AxisType::LOOP);
    UOp k = sink({"row_sums"}, {out[row].store(in[{row, l}].load().reduce(Op::ADD, {l})).end({row})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats(8 * 128);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 8);
    for (size_t r = 0; r < 8; ++r) {
      double want = 0;
      for (size_t c = 0; c < 128; ++c) want += x[r * 128 + c];
      CAPTURE(r);
      CHECK(std::abs(y[r] - want) <= 1e-5 * 128);
    }
  }
}

WEFT_DEVICE_TEST_CASE("GROUP_REDUCE: a reduction spread over the threads of a workgroup, with a loop in each thread") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({4, 1024}, dtypes::int32, 1), out = placeholder({4}, dtypes::int32, 0);
    UOp g = range(4, 0, AxisType::GLOBAL), t = range(128, 1, AxisType::GROUP_REDUCE), j = range(8, 2, AxisType::REDUCE);
    UOp k = sink({"group_reduce"}, {out[g].store(in[{g, t * 8 + j}].load().reduce(Op::ADD, {t, j})).end({g})});
    auto x = weft::testing::random_ints(4 * 1024, -50000, 50000);
    auto y = run_int_kernel(*dev, k, x, 4);
    for (size_t r = 0; r < 4; ++r) CHECK(y[r] == std::accumulate(x.begin() + static_cast<long>(r * 1024), x.begin() + static_cast<long>((r + 1) * 1024), 0));
  }
}

WEFT_DEVICE_TEST_CASE("WARP ranges are the waves of a workgroup, and a REDUCE over them combines waves") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const int64_t W = wave_of(target);
    // 2 x 4 waves of W lanes: each wave scales its slice by its (row, column) and the per-lane
    // sums over the 8 waves land in out2.
    UOp in = placeholder({8 * W}, dtypes::int32, 1), out = placeholder({8 * W + W}, dtypes::int32, 0);
    UOp lane = range(W, 0, AxisType::LOCAL), wr = range(2, 1, AxisType::WARP), wc = range(4, 2, AxisType::WARP);
    UOp wave = wr * 4 + wc, at = wave * W + lane;
    UOp scaled = in[at].load() * (wr * 10 + wc + 1).cast(dtypes::int32);
    UOp across = scaled.reduce(Op::ADD, {wr, wc});
    UOp k = sink({"waves"}, {group({out[at].store(scaled), out[lane + 8 * W].store(across)}).end({lane, wr, wc})});
    auto x = weft::testing::random_ints(static_cast<size_t>(8 * W), -1000, 1000);
    auto y = run_int_kernel(*dev, k, x, static_cast<size_t>(9 * W));
    for (int64_t w = 0; w < 8; ++w)
      for (int64_t l = 0; l < W; ++l) REQUIRE(y[static_cast<size_t>(w * W + l)] == x[static_cast<size_t>(w * W + l)] * ((w / 4) * 10 + w % 4 + 1));
    for (int64_t l = 0; l < W; ++l) {
      int64_t want = 0;
      for (int64_t w = 0; w < 8; ++w) want += x[static_cast<size_t>(w * W + l)] * ((w / 4) * 10 + w % 4 + 1);
      REQUIRE(y[static_cast<size_t>(8 * W + l)] == want);
    }
  }
}

WEFT_DEVICE_TEST_CASE("a WARP range over threads that do not fill whole waves is an error naming it") {
  auto dev_name = weft::testing::devices();
  if (dev_name.empty()) return;
  auto dev = rt::open_device(dev_name[0]);
  UOp out = placeholder({64}, dtypes::int32, 0);
  UOp lane = range(16, 0, AxisType::LOCAL), w = range(4, 1, AxisType::WARP);
  UOp k = sink({"bad_warp"}, {out[w * 16 + lane].store(lane.cast(dtypes::int32)).end({lane, w})});
  CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*dev, k), doctest::Contains("WARP range 1 counts waves"), Error);
}

TEST_CASE("THREAD ranges have no lowering: the verifier says so, and a DEVICE range becomes the device index") {
  UOp out = placeholder({4}, dtypes::int32, 0);
  UOp t = range(4, 0, AxisType::THREAD);
  UOp threads = sink({"threads"}, {out[t].store(t.cast(dtypes::int32)).end({t})});
  CHECK_THROWS_WITH_AS(lower::lower(threads), doctest::Contains("axis THREAD, which weft cannot lower yet"), Error);
  // Each device writes its own index into its own buffer (not unsharded: a per-device array).
  UOp d = range(4, 0, AxisType::DEVICE);
  const lower::LoweredKernel k = lower::lower(sink({"devices"}, {out[d].store(d.cast(dtypes::int32)).end({d})}));
  REQUIRE(k.mesh.size() == 1);
  CHECK(k.mesh[0].variable == "device0");
  CHECK(k.mesh[0].size == 4);
  CHECK(k.device_splits.empty());
  CHECK(std::any_of(k.params.begin(), k.params.end(), [](const lower::KernelParam& p) { return p.name == "device0"; }));
}

WEFT_DEVICE_TEST_CASE("shuffles, broadcasts and votes move values between lanes as the host model says") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const int64_t W = wave_of(target), half = W / 2;
    UOp in = placeholder({W}, dtypes::int32, 1), out = placeholder({10 * W}, dtypes::int32, 0);
    UOp l = range(W, 0, AxisType::LOCAL);
    UOp x = in[l].load();
    UOp mask = ballot(x > 0, W);
    std::vector<UOp> rows{shuffle_xor(x, 5, W),
                          shuffle_up(x, 3, half),
                          shuffle_down(x, 2, half),
                          shuffle(x, x & 0xff, half),  // a per-lane source, taken within the group
                          broadcast(x),
                          broadcast(x, constant(Wide(3), dtypes::int32)),
                          (mask & constant(Wide(0xffffffff), dtypes::uint64)).cast(dtypes::int32),
                          (mask >> 32).cast(dtypes::int32),
                          any(x > 990, W).cast(dtypes::int32) + all(x > -1001, W).cast(dtypes::int32) * 2,
                          wave_reduce(x, Op::ADD, W)};
    std::vector<UOp> stores;
    for (size_t i = 0; i < rows.size(); ++i) stores.push_back(out[l + static_cast<int64_t>(i) * W].store(rows[i]));
    UOp k = sink({"lanes"}, {group(stores).end({l})});
    auto x_host = weft::testing::random_ints(static_cast<size_t>(W), -1000, 1000);
    auto y = run_int_kernel(*dev, k, x_host, static_cast<size_t>(10 * W));
    auto at = [&](int64_t row, int64_t lane) { return y[static_cast<size_t>(row * W + lane)]; };
    auto xv = [&](int64_t lane) { return x_host[static_cast<size_t>(lane)]; };
    uint64_t ballot_bits = 0;
    int64_t sum = 0;
    bool any_big = false, all_big = true;
    for (int64_t q = 0; q < W; ++q) {
      if (xv(q) > 0) ballot_bits |= uint64_t{1} << q;
      sum += xv(q);
      any_big |= xv(q) > 990;
      all_big &= xv(q) > -1001;
    }
    for (int64_t q = 0; q < W; ++q) {
      CAPTURE(q);
      const int64_t base = q & ~(half - 1), pos = q & (half - 1);
      CHECK(at(0, q) == xv(q ^ 5));
      CHECK(at(1, q) == (pos >= 3 ? xv(q - 3) : xv(q)));
      CHECK(at(2, q) == (pos + 2 < half ? xv(q + 2) : xv(q)));
      CHECK(at(3, q) == xv(base + ((xv(q) & 0xff) & (half - 1))));
      CHECK(at(4, q) == xv(0));
      CHECK(at(5, q) == xv(3));
      CHECK(static_cast<uint32_t>(at(6, q)) == static_cast<uint32_t>(ballot_bits));
      CHECK(static_cast<uint32_t>(at(7, q)) == static_cast<uint32_t>(ballot_bits >> 32));
      CHECK(at(8, q) == int{any_big} + 2 * int{all_big});
      CHECK(at(9, q) == sum);
    }
  }
}

TEST_CASE("lane operations check their arguments and their target") {
  UOp x = constant(Wide(1), dtypes::int32);
  CHECK_THROWS_WITH_AS(shuffle_xor(x, 64, 64), doctest::Contains("64 is not a lane offset within a group of 64"), Error);
  CHECK_THROWS_WITH_AS(shuffle_xor(x, 1, 48), doctest::Contains("a width is a power of two up to 64"), Error);
  CHECK_THROWS_WITH_AS(ballot(x, 64), doctest::Contains("votes on a bool"), Error);
  CHECK_THROWS_WITH_AS(wave_reduce(x, Op::SUB, 64), doctest::Contains("reduces with ADD, MUL, MAX or MIN"), Error);
  // A 64-lane vote on a 32-lane NVIDIA warp is refused by the CUDA renderer (tested without a GPU).
  UOp out = placeholder({32}, dtypes::int32, 0);
  UOp l = range(32, 0, AxisType::LOCAL);
  UOp k = sink({"wide_vote"}, {out[l].store(any(l < 3, 64).cast(dtypes::int32)).end({l})});
  lower::LowerOptions nvidia;
  nvidia.wave_size = 32;
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lower::lower(k, nvidia), 90), doctest::Contains("NVIDIA warps have 32"), Error);
}

#ifdef WEFT_HAVE_LLVM
namespace {

// One wave copies in to LDS (4 values a lane) and reads it back with one transposing read:
// out[4l + j] = what lane l gets as element j.
UOp transposed_read_kernel() {
  UOp in = placeholder({256}, dtypes::uint16, 1), out = placeholder({256}, dtypes::uint16, 0);
  UOp lds = alloc_shared({256}, dtypes::uint16);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp fill = lds[l * 4].vec(4).store(in[l * 4].vec(4).load());
  UOp ready = barrier({fill});
  UOp four = lds.after({ready})[l * 4].vec(4).load_transposed();
  return sink({"transposed_read"}, {out[l * 4].vec(4).store(four).end({l})});
}

}  // namespace

TEST_CASE("a transposing LDS read gives each lane of a 16-lane group the documented elements on gfx950, and gfx942 refuses it") {
  // The rule from the CDNA4 ISA guide (ds_read_b64_tr_b16): lane i of a group gets as element j
  // value (16j + i) % 4 of the 4 that lane (16j + i) / 4 of its group read.
  auto dev = rt::open_device("emu:gfx950");
  auto compiled = rt::CompiledKernel::compile(*dev, transposed_read_kernel());
  const auto bits = weft::testing::random_ints(256, 0, 65535);
  const std::vector<uint16_t> x(bits.begin(), bits.end());
  const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::uint16, 256), put(*dev, dtypes::uint16, x)};
  compiled.launch(*dev, args);
  const auto got = get<uint16_t>(*dev, args[0]);
  int bad = 0;
  for (int lane = 0; lane < 64; ++lane)
    for (int j = 0; j < 4; ++j) {
      const int group = lane / 16, i = lane % 16, source = 16 * group + (16 * j + i) / 4;
      const uint16_t want = x[static_cast<size_t>(4 * source + (16 * j + i) % 4)];
      if (got[static_cast<size_t>(4 * lane + j)] != want && bad++ < 5)
        FAIL_CHECK("lane " << lane << " element " << j << ": " << got[static_cast<size_t>(4 * lane + j)] << ", want " << want);
    }
  CHECK(bad == 0);
  CHECK_THROWS_WITH_AS(rt::inspect(transposed_read_kernel(), "gfx942"), doctest::Contains("ds_read_b64_tr_b16) is gfx950's; gfx942 has none"), Error);
}
#endif

TEST_CASE("a transposing LDS read takes 4 lanes of a 2-byte type from a LOCAL buffer") {
  UOp lds = alloc_shared({256}, dtypes::uint16), wide = alloc_shared({256}, dtypes::float32), g = placeholder({256}, dtypes::uint16, 0);
  CHECK_THROWS_WITH_AS(lds[constant(Wide(0))].vec(8).load_transposed(), doctest::Contains("4 lanes of a 2-byte type, not"), Error);
  CHECK_THROWS_WITH_AS(wide[constant(Wide(0))].vec(4).load_transposed(), doctest::Contains("4 lanes of a 2-byte type, not"), Error);
  CHECK_THROWS_WITH_AS(g[constant(Wide(0))].vec(4).load_transposed(), doctest::Contains("reads a LOCAL buffer"), Error);
  // Inside when() a masked lane would still feed its group: an error, as for the lane operations.
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp read = lds[l * 4].vec(4).load_transposed();
  UOp guarded = sink({"when_transposed"}, {when(l < 32, {g[l * 4].vec(4).store(read)}).end({l})});
  CHECK_THROWS_WITH_AS(lower::lower(guarded), doctest::Contains("a transposing LDS read needs every lane of its 16-lane group"), Error);
  // The verifier checks the same of a node built by hand.
  const UOp raw = UOp::make(Op::LOAD, dtypes::uint16.vec(4), {g[constant(Wide(0))].vec(4)}, std::string(kTransposeRead16));
  CHECK_THROWS_WITH_AS(verify(raw), doctest::Contains("a transposing read reads a LOCAL buffer"), Error);
  const UOp other = UOp::make(Op::LOAD, dtypes::uint16.vec(4), {lds[constant(Wide(0))].vec(4)}, std::string("sideways"));
  CHECK_THROWS_WITH_AS(verify(other), doctest::Contains("the only ones a load takes are transpose_b16, ldmatrix_b16 and ldmatrix_trans_b16"), Error);
}

TEST_CASE("ldmatrix takes rows of 8 lanes of a 2-byte type from a LOCAL buffer, by every lane, and is NVIDIA's") {
  UOp lds = alloc_shared({256}, dtypes::bfloat16), wide = alloc_shared({256}, dtypes::float32), g = placeholder({256}, dtypes::bfloat16, 0);
  CHECK_THROWS_WITH_AS(lds[constant(Wide(0))].vec(4).load_matrix(false), doctest::Contains("ldmatrix takes 8 lanes of a 2-byte type, not"), Error);
  CHECK_THROWS_WITH_AS(wide[constant(Wide(0))].vec(8).load_matrix(true), doctest::Contains("ldmatrix takes 8 lanes of a 2-byte type, not"), Error);
  CHECK_THROWS_WITH_AS(g[constant(Wide(0))].vec(8).load_matrix(false), doctest::Contains("ldmatrix reads a LOCAL buffer"), Error);
  // Inside when() a masked lane would still name a row for the others: an error.
  UOp l = range(32, 0, AxisType::LOCAL);
  for (bool transposed : {false, true}) {
    CAPTURE(transposed);
    UOp read = lds[l * 8].vec(8).load_matrix(transposed);
    UOp guarded = sink({"when_ldmatrix"}, {when(l < 16, {g[l * 8].vec(8).store(read)}).end({l})});
    CHECK_THROWS_WITH_AS(lower::lower(guarded), doctest::Contains("ldmatrix needs every lane of the warp"), Error);
  }
  // The verifier checks a node built by hand.
  const UOp raw = UOp::make(Op::LOAD, dtypes::bfloat16.vec(8), {g[constant(Wide(0))].vec(8)}, std::string(kMatrixReadTransposed16));
  CHECK_THROWS_WITH_AS(verify(raw), doctest::Contains("ldmatrix reads a LOCAL buffer"), Error);
  // A row that is not known to start on 16 bytes: the CUDA renderer refuses it.
  UOp fill_rows = lds[l * 8].vec(8).store(g[l * 8].vec(8).load());
  UOp skewed = sink({"ldmatrix_skewed"}, {g[l * 8].vec(8).store(lds.after({barrier({fill_rows})})[l * 8 + 4].vec(8).load_matrix(false)).end({l})});
  CHECK_THROWS_WITH_AS(cuda::render_cuda(lower::lower(skewed), 90), doctest::Contains("is not known to be a multiple of 8 elements (16 bytes)"), Error);
  const UOp narrow = UOp::make(Op::LOAD, dtypes::bfloat16.vec(4), {lds[constant(Wide(0))].vec(4)}, std::string(kMatrixRead16));
  CHECK_THROWS_WITH_AS(verify(narrow), doctest::Contains("ldmatrix takes 8 lanes of a 2-byte type, not bfloat16.vec4"), Error);
#ifdef WEFT_HAVE_LLVM
  // No AMDGPU form: an error naming the load, not a plain read.
  UOp fill = lds[l * 8].vec(8).store(g[l * 8].vec(8).load());
  UOp kernel = sink({"ldmatrix_on_amd"}, {g[l * 8].vec(8).store(lds.after({barrier({fill})})[l * 8].vec(8).load_matrix(false)).end({l})});
  CHECK_THROWS_WITH_AS(rt::inspect(kernel, "gfx950"), doctest::Contains("ldmatrix (a cross-lane shared-memory read) is NVIDIA's; AMDGPU has none"), Error);
#endif
}
