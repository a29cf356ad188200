// Lowering passes end to end: fragments, reductions, shared memory with implicit barriers,
// range splitting, scalar parameters, and the errors of bad kernels and bad launches. Every
// kernel runs on both emulated targets against a host reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/emulator/listing.h"
#include "weft/lowering/passes.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

namespace {

size_t count_ops(const lower::LoweredKernel& k, Op op) {
  return static_cast<size_t>(std::count_if(k.program.begin(), k.program.end(), [&](const lower::LinearOp& s) {
    return s.op.op() == op && s.kind == lower::LinearOp::Kind::Effect;
  }));
}

// Fills a 64x8 output through a fragment of 8 threads (8x8 each), writing row r as r*8+col,
// with the fragment indexed by `row(ty, ir)`.
void check_fragment(const std::function<UOp(const UOp&, const UOp&)>& row) {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp c = placeholder({64, 8}, dtypes::float32, 0);
    UOp ty = range(8, 0, AxisType::LOCAL), ir = range(8, 1, AxisType::LOOP), j = range(8, 2, AxisType::LOOP);
    UOp frag = placeholder({8, 8}, dtypes::float32, 0, AddrSpace::REG).unshard({0}, {ty});
    UOp r = row(ty, ir);
    UOp fill = frag[{r, j}].set((r * 8 + j).cast(dtypes::float32), {ir, j});
    UOp ir2 = range(8, 3, AxisType::LOOP), j2 = range(8, 4, AxisType::LOOP);
    UOp r2 = row(ty, ir2);
    UOp k = sink({"frag"}, {c[{r2, j2}].store(fill[{r2, j2}].load() * 2.0).end({ir2, j2, ty})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto out = weft::testing::poisoned(*dev, dtypes::float32, 512);
    const rt::DeviceArray args[] = {out};
    compiled.launch(*dev, args);
    auto y = get<float>(*dev, out);
    for (int i = 0; i < 512; ++i) REQUIRE(y[static_cast<size_t>(i)] == 2.0f * static_cast<float>(i));
  }
}

}  // namespace

WEFT_DEVICE_TEST_CASE("fragments: contiguous and strided ownership give the right values") {
  check_fragment([](const UOp& ty, const UOp& ir) { return ty * 8 + ir; });  // contiguous
  check_fragment([](const UOp& ty, const UOp& ir) { return ty + ir * 8; });  // strided
}

TEST_CASE("fragments: an index no thread owns alone is an error naming it") {
  UOp c = placeholder({64, 8}, dtypes::float32, 0);
  UOp ty = range(8, 0, AxisType::LOCAL), ir = range(8, 1, AxisType::LOOP), j = range(8, 2, AxisType::LOOP);
  UOp frag = placeholder({8, 8}, dtypes::float32, 0, AddrSpace::REG).unshard({0}, {ty});
  UOp k = sink({"bad_frag"}, {c[{ty + ir, j}].store(frag[{ty + ir, j}].load()).end({j, ir, ty})});
  CHECK_THROWS_WITH_AS(lower::lower(k), doctest::Contains("cannot shard index"), Error);
  CHECK_THROWS_WITH_AS(lower::lower(k), doctest::Contains("pass resolve_unshard"), Error);
}

WEFT_DEVICE_TEST_CASE("fragments: a two-axis UNSHARD over a 4x4 thread grid") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    // A 16x16 tile; thread (ty, tx) owns the 4x4 block at (ty*4, tx*4); out = tile + in.
    UOp in = placeholder({16, 16}, dtypes::float32, 1), out = placeholder({16, 16}, dtypes::float32, 0);
    UOp tx = range(4, 0, AxisType::LOCAL), ty = range(4, 1, AxisType::LOCAL);
    UOp frag = alloc_fragment({16, 16}, dtypes::float32, {0, 1}, {ty, tx}, 7);
    UOp i = range(4, 2, AxisType::LOOP), j = range(4, 3, AxisType::UPCAST);
    UOp r = ty * 4 + i, c = tx * 4 + j;
    UOp filled = frag[{r, c}].set(in[{r, c}].load() * 3.0, {i, j});
    UOp i2 = range(4, 4, AxisType::LOOP), j2 = range(4, 5, AxisType::UPCAST);
    UOp r2 = ty * 4 + i2, c2 = tx * 4 + j2;
    UOp k = sink({"frag2d"}, {out[{r2, c2}].store(filled[{r2, c2}].load() + 1.0).end({i2, j2, tx, ty})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats(256);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 256);
    for (size_t n = 0; n < 256; ++n) REQUIRE(y[n] == x[n] * 3.0f + 1.0f);
  }
}

WEFT_DEVICE_TEST_CASE("reductions: a row sum over a REDUCE range, and a max") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({32, 48}, dtypes::float32, 1), out = placeholder({32, 2}, dtypes::float32, 0);
    UOp i = range(32, 0, AxisType::GLOBAL), kr = range(48, 1, AxisType::REDUCE), km = range(48, 2, AxisType::REDUCE);
    UOp sum = in[{i, kr}].load().reduce(Op::ADD, {kr});
    UOp mx = in[{i, km}].load().reduce(Op::MAX, {km});
    UOp k = sink({"row_stats"}, {group({out[{i, constant(Wide(0))}].store(sum), out[{i, constant(Wide(1))}].store(mx)}).end({i})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats(32 * 48);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 64);
    for (size_t r = 0; r < 32; ++r) {
      double s = 0, m = -1e30, mag = 0;
      for (size_t c = 0; c < 48; ++c) s += x[r * 48 + c], m = std::max(m, double(x[r * 48 + c])), mag += std::abs(x[r * 48 + c]);
      CHECK(std::abs(y[r * 2] - s) <= 1e-6 * mag + 1e-7);
      CHECK(y[r * 2 + 1] == static_cast<float>(m));
    }
  }
}

WEFT_DEVICE_TEST_CASE("shared memory: a tiled matmul with GLOBAL and LOCAL ranges and implicit barriers") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    constexpr int64_t N = 64, T = 16;
    UOp a = placeholder({N, N}, dtypes::float32, 1), b = placeholder({N, N}, dtypes::float32, 2), c = placeholder({N, N}, dtypes::float32, 0);
    UOp gx = range(N / T, 0, AxisType::GLOBAL), gy = range(N / T, 1, AxisType::GLOBAL);
    UOp lx = range(T, 2, AxisType::LOCAL), ly = range(T, 3, AxisType::LOCAL);
    UOp kt = range(N / T, 4, AxisType::LOOP), kk = range(T, 5, AxisType::REDUCE);
    UOp as = alloc_shared({T, T}, dtypes::float32, 0), bs = alloc_shared({T, T}, dtypes::float32, 1);
    UOp row = gy * T + ly, col = gx * T + lx;
    UOp st_a = as[{ly, lx}].store(a[{row, kt * T + lx}].load());
    UOp st_b = bs[{ly, lx}].store(b[{kt * T + ly, col}].load());
    UOp acc = alloc_fragment({N, N}, dtypes::float32, {}, {}, 9);  // a plain per-thread register
    (void)acc;
    UOp accum = placeholder({1}, dtypes::float32, 9, AddrSpace::REG);
    UOp zero = accum[constant(Wide(0))].store(constant(0.0, dtypes::float32));
    UOp partial = (as.after({st_a, st_b})[{ly, kk}].load() * bs.after({st_a, st_b})[{kk, lx}].load()).reduce(Op::ADD, {kk});
    UOp upd = accum.after({zero, kt})[constant(Wide(0))].set(accum.after({zero, kt})[constant(Wide(0))].load() + partial, {kt});
    UOp k = sink({"tiled_matmul"}, {c[{row, col}].store(upd[constant(Wide(0))].load()).end({lx, ly, gx, gy})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    // One barrier after the two tile stores (both tiles read after the same stores), one at
    // the end of the kt loop body (the tiles are overwritten next iteration).
    CHECK(count_ops(compiled.lowered(), Op::BARRIER) == 2);
    auto [grid, block] = compiled.launch_dims({});
    CHECK(grid.x == 4);
    CHECK(grid.y == 4);
    CHECK(block.x == 16);
    CHECK(block.y == 16);
    auto xa = weft::testing::random_floats(N * N), xb = weft::testing::random_floats(N * N);
    auto da = put(*dev, dtypes::float32, xa), db = put(*dev, dtypes::float32, xb);
    auto dc = weft::testing::poisoned(*dev, dtypes::float32, N * N);
    const rt::DeviceArray args[] = {dc, da, db};
    compiled.launch(*dev, args);
    auto y = get<float>(*dev, dc);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, mag = 0;
        for (int64_t q = 0; q < N; ++q) s += double(xa[i * N + q]) * xb[q * N + j], mag += std::abs(double(xa[i * N + q]) * xb[q * N + j]);
        REQUIRE(std::abs(y[static_cast<size_t>(i * N + j)] - s) <= 1e-5 * mag + 1e-6);
      }
  }
}

WEFT_DEVICE_TEST_CASE("barriers: two LOCAL buffers stored separately get two barriers") {
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp s1 = alloc_shared({64}, dtypes::float32, 0), s2 = alloc_shared({64}, dtypes::float32, 1);
  UOp st1 = s1[l].store(in[l].load());
  UOp v1 = s1.after({st1})[63 - l].load();
  UOp st2 = s2[l].store(v1 * 2.0);
  UOp v2 = s2.after({st2})[(l + 1) % 64].load();
  UOp k = sink({"two_locals"}, {out[l].store(v2).end({l})});
  auto lowered = lower::lower(k);
  CHECK(count_ops(lowered, Op::BARRIER) == 2);
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats(64);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 64);
    for (size_t i = 0; i < 64; ++i) REQUIRE(y[i] == 2.0f * x[63 - (i + 1) % 64]);
  }
}

WEFT_DEVICE_TEST_CASE("coalescing: an aliased double-buffer slot written in a prologue and in a loop body keeps both stores") {
  // LDS is (2, 64): the prologue fills slot 0, iteration t fills slot (t+1)%2 with row t+1 and
  // reads slot t%2. Slot 0 is written from two sites; both stores must survive.
  constexpr int64_t T = 6;
  UOp in = placeholder({T + 1, 64}, dtypes::float32, 1), out = placeholder({T, 64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL), t = range(T, 1, AxisType::LOOP);
  UOp buf = alloc_shared({2, 64}, dtypes::float32, 0);
  UOp pro = buf[{constant(Wide(0)), l}].store(in[{constant(Wide(0)), l}].load());
  UOp cur = buf.after({pro, t})[{t % 2, (l + 5) % 64}].load();
  UOp body = group({out[{t, l}].store(cur), buf.after({pro, t})[{(t + 1) % 2, l}].store(in[{t + 1, l}].load())});
  UOp k = sink({"double_buffer"}, {body.end({t, l})});
  auto lowered = lower::lower(k);
  size_t lds_stores = 0;
  for (const auto& s : lowered.program)
    if (s.op.op() == Op::STORE) {
      UOp b = s.op.src(0).src(0);
      while (b.op() == Op::AFTER) b = b.src(0);
      lds_stores += b.arg_as<BufferArg>().space == AddrSpace::LOCAL;
    }
  CHECK(lds_stores == 2);
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats((T + 1) * 64);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, static_cast<size_t>(T * 64));
    for (int64_t r = 0; r < T; ++r)
      for (int64_t c = 0; c < 64; ++c) REQUIRE(y[static_cast<size_t>(r * 64 + c)] == x[static_cast<size_t>(r * 64 + (c + 5) % 64)]);
  }
}

WEFT_DEVICE_TEST_CASE("split_ranges splits a LOOP range used as r//c and r%c, and leaves GLOBAL and LOCAL ranges whole") {
  UOp in = placeholder({8, 4}, dtypes::float32, 1), out = placeholder({8, 4}, dtypes::float32, 0);
  UOp g = range(32, 0, AxisType::GLOBAL), r = range(32, 1, AxisType::LOOP);
  UOp k = sink({"split"}, {group({out[{g / 4, g % 4}].store(in[{g / 4, g % 4}].load())}).end({g})});
  UOp k2 = sink({"split2"}, {out[{r / 4, r % 4}].store(in[{r / 4, r % 4}].load() + 1.0).end({r})});
  auto ranges_of = [](const UOp& graph) {
    std::vector<UOp> rs;
    for (const UOp& u : toposort(graph))
      if (u.op() == Op::RANGE) rs.push_back(u);
    return rs;
  };
  UOp s1 = lower::split_ranges(lower::flatten_views(k));
  REQUIRE(ranges_of(s1).size() == 1);
  CHECK(ranges_of(s1)[0].arg_as<RangeArg>().axis == AxisType::GLOBAL);
  UOp s2 = lower::split_ranges(k2);
  auto rs = ranges_of(s2);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].src(0).const_int() * rs[1].src(0).const_int() == 32);
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, k2);
    auto x = weft::testing::random_floats(32);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 32);
    for (size_t i = 0; i < 32; ++i) REQUIRE(y[i] == x[i] + 1.0f);
  }
}

WEFT_DEVICE_TEST_CASE("scalar parameters: an int32 element count, and index math that needs an int64 parameter") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    // out[i] = in[i] * 2 for i < n, with n bound at launch; 64 threads per workgroup.
    UOp n = variable("n", 1, 1 << 20);
    UOp in = placeholder(std::vector<UOp>{n.cast(dtypes::index)}, dtypes::float32, 1);
    UOp out = placeholder(std::vector<UOp>{n.cast(dtypes::index)}, dtypes::float32, 0);
    UOp i = range(n, 0, AxisType::LOOP);
    UOp k = sink({"scale_n"}, {out[i].store(in[i].load() * 2.0).end({i})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats(1000);
    auto a = put(*dev, dtypes::float32, x);
    auto o = weft::testing::poisoned(*dev, dtypes::float32, 1000);
    const rt::DeviceArray args[] = {o, a};
    compiled.launch(*dev, args, {{"n", int64_t{1000}}});
    auto y = get<float>(*dev, o);
    for (size_t q = 0; q < 1000; ++q) REQUIRE(y[q] == x[q] * 2.0f);
    CHECK_THROWS_WITH_AS(compiled.launch(*dev, args, {{"n", int64_t{999}}}), doctest::Contains("holds 1000 elements"), Error);
    CHECK_THROWS_WITH_AS(compiled.launch(*dev, args), doctest::Contains("scalar argument n int32 is not given"), Error);
    CHECK_THROWS_WITH_AS(compiled.launch(*dev, args, {{"n", int64_t{0}}}), doctest::Contains("outside its bounds"), Error);
    CHECK_THROWS_WITH_AS(compiled.launch(*dev, args, {{"n", 1000.0f}}), doctest::Contains("scalar n is an integer, given a float"), Error);
    CHECK_THROWS_WITH_AS(compiled.launch(*dev, args, {{"n", int64_t{1000}}, {"m", int64_t{1}}}), doctest::Contains("has no scalar parameter named m"),
                         Error);

    // base is 2^35: base + i does not fit int32, (base + i) - base is i.
    UOp base = variable("base", int64_t{1} << 34, int64_t{1} << 40, dtypes::int64);
    UOp j = range(256, 1, AxisType::GLOBAL);
    UOp far = base.cast(dtypes::index) + j;
    // (far % 1000) is computed in int64 and fits int32: it is narrowed, then * 3 / 7 is int32.
    UOp term = (far % 7).cast(dtypes::float32) + ((far % 1000) * 3 / 7).cast(dtypes::float32);
    UOp k64 = sink({"offset64"}, {out[(far - base.cast(dtypes::index)) % 1000].store(in[j].load() + term).end({j})});
    auto lowered = lower::lower(k64);
    bool has_int64 = false, narrowed = false;
    for (const auto& s : lowered.program) {
      has_int64 |= s.op.dtype() == dtypes::int64;
      narrowed |= s.op.op() == Op::CAST && s.op.dtype() == dtypes::int32 && s.op.src(0).dtype() == dtypes::int64;
    }
    CHECK(has_int64);
    CHECK(narrowed);
    auto c64 = rt::CompiledKernel::compile(*dev, k64);
    const int64_t b = (int64_t{1} << 35) + 3;
    auto o2 = weft::testing::poisoned(*dev, dtypes::float32, 1000);
    const rt::DeviceArray args2[] = {o2, a};
    c64.launch(*dev, args2, {{"base", b}, {"n", int64_t{1000}}});
    auto y2 = get<float>(*dev, o2);
    for (int64_t q = 0; q < 256; ++q)
      REQUIRE(y2[static_cast<size_t>(q)] == x[static_cast<size_t>(q)] + (static_cast<float>((b + q) % 7) + static_cast<float>((b + q) % 1000 * 3 / 7)));
  }
}

WEFT_DEVICE_TEST_CASE("launch errors: a buffer of the wrong dtype, the wrong count, an unknown scalar") {
  auto dev = rt::open_device(weft::testing::devices()[0]);
  UOp in = placeholder({16}, dtypes::float32, 1), out = placeholder({16}, dtypes::float32, 0);
  UOp i = range(16, 0, AxisType::LOCAL);
  auto compiled = rt::CompiledKernel::compile(*dev, sink({"copy16"}, {out[i].store(in[i].load()).end({i})}));
  auto f = weft::testing::poisoned(*dev, dtypes::float32, 16);
  auto wrong = put(*dev, dtypes::int32, std::vector<int32_t>(16, 1));
  const rt::DeviceArray bad_dtype[] = {f, wrong};
  CHECK_THROWS_WITH_AS(compiled.launch(*dev, bad_dtype), doctest::Contains("holds int32, the kernel's buf1 float32[16] is float32"), Error);
  const rt::DeviceArray one[] = {f};
  CHECK_THROWS_WITH_AS(compiled.launch(*dev, one), doctest::Contains("takes 2 buffers, given 1"), Error);
  const rt::DeviceArray ok[] = {f, f};
  CHECK_THROWS_WITH_AS(compiled.launch(*dev, ok, {{"m", int64_t{3}}}), doctest::Contains("no scalar parameter named m"), Error);
}

WEFT_DEVICE_TEST_CASE("LDS DMA: async_copy renders as buffer_load ... lds (dword on gfx942, dwordx4 on gfx950) and cp.async on CUDA") {
  struct Case {
    std::string target;
    int64_t elements;
  };
  std::vector<Case> cases;  // gfx942 copies one dword per lane; gfx950 and cp.async 4 and 16 bytes
  for (const std::string& target : weft::testing::devices())
    for (int64_t elements : {1, 4})
      if (target != "emu:gfx942" || elements == 1) cases.push_back({target, elements});
  for (Case c : cases) {
    CAPTURE(c.target);
    CAPTURE(c.elements);
    auto dev = rt::open_device(c.target);
    const int64_t E = c.elements, W = 64 * E;
    UOp in = placeholder({8, W}, dtypes::float32, 1), out = placeholder({8, W}, dtypes::float32, 0);
    UOp l = range(64, 0, AxisType::LOCAL), r = range(8, 1, AxisType::LOOP), r2 = range(8, 2, AxisType::LOOP);
    UOp j = range(E, 3, AxisType::UPCAST);
    UOp lds = alloc_shared({8, W}, dtypes::float32, 0);
    UOp copy = async_copy(lds[{r, l * E}], in[{r, l * E}], E).end({r});
    // Read back reversed along the row: the data must have gone through LDS.
    UOp col = l * E + j;
    UOp k = sink({"lds_dma"}, {out[{r2, col}].store(lds.after({copy})[{r2, (W - 1) - col}].load()).end({r2, j, l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    CHECK(count_ops(compiled.lowered(), Op::BARRIER) == 1);
    auto x = weft::testing::random_floats(static_cast<size_t>(8 * W));
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, static_cast<size_t>(8 * W));
    for (int64_t q = 0; q < 8; ++q)
      for (int64_t p = 0; p < W; ++p) REQUIRE(y[static_cast<size_t>(q * W + p)] == x[static_cast<size_t>(q * W + W - 1 - p)]);
  }
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("LDS DMA: a destination that is not base + lane*elements is an error naming it") {
  auto dev = rt::open_device("emu:gfx950");
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp lds = alloc_shared({64}, dtypes::float32, 0);
  UOp copy = async_copy(lds[63 - l], in[l], 1);
  UOp k = sink({"bad_dma"}, {out[l].store(lds.after({copy})[l].load()).end({l})});
  CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*dev, k), doctest::Contains("is not base + lidx0*1"), Error);
}

TEST_CASE("wave priority is a typed statement: s_setprio in the code object") {
  auto dev = rt::open_device("emu:gfx942");
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp up = wave_priority(2);
  UOp st = out[l].store(in.after({up})[l].load() + 1.0);
  UOp k = sink({"prio"}, {group({up, st, wave_priority(0, {st})}).end({l})});
  auto compiled = rt::CompiledKernel::compile(*dev, k);
  CHECK(count_ops(compiled.lowered(), Op::PRIORITY) == 2);
  std::ostringstream listing;
  emu::write_listing(emu::CodeObject::load(compiled.code_object()), listing);
  CHECK(listing.str().find("s_setprio 2") != std::string::npos);
  CHECK(listing.str().find("s_setprio 0") != std::string::npos);
  auto x = weft::testing::random_floats(64);
  auto y = weft::testing::run_float_kernel(*dev, compiled, x, 64);
  for (size_t q = 0; q < 64; ++q) REQUIRE(y[q] == x[q] + 1.0f);
  CHECK_THROWS_WITH_AS(wave_priority(4), doctest::Contains("wave priority 4 is not 0, 1, 2 or 3"), Error);
}
#endif  // WEFT_HAVE_LLVM

WEFT_DEVICE_TEST_CASE("the compile cache: the same kernel built again (other LOCAL ids) is not compiled again") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    rt::CompileCache cache(std::nullopt);  // memory only
    auto build = [] {
      UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
      UOp l = range(64, 0, AxisType::LOCAL);
      UOp s = alloc_shared({64}, dtypes::float32);  // an id from the per-thread counter
      UOp st = s[l].store(in[l].load() * 2.0);
      return sink({"cached"}, {out[l].store(s.after({st})[63 - l].load()).end({l})});
    };
    auto first = rt::CompiledKernel::compile(*dev, build(), &cache);
    alloc_shared({8}, dtypes::float32);  // moves the id counter on
    auto second = rt::CompiledKernel::compile(*dev, build(), &cache);
    CHECK_FALSE(first.times().cached);
    CHECK(second.times().cached);
    CHECK(cache.stats().compiles == 1);
    CHECK(cache.stats().memory_hits == 1);
    auto x = weft::testing::random_floats(64);
    auto y = weft::testing::run_float_kernel(*dev, second, x, 64);
    for (size_t q = 0; q < 64; ++q) REQUIRE(y[q] == 2.0f * x[63 - q]);
  }
}
