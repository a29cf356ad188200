// The lowering passes one at a time: what each produces, and the errors each raises. (The
// kernels tests run whole pipelines on the emulator.)
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>

#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/passes.h"

namespace weft::lower {
namespace {

size_t count(const UOp& g, Op op) {
  auto nodes = toposort(g);
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [&](const UOp& u) { return u.op() == op; }));
}

bool any_dtype(const UOp& g, DType dt) {
  for (const UOp& u : toposort(g))
    if (u.dtype() == dt) return true;
  return false;
}

// out[i*4 + j] = in[i*4 + j] with j UPCAST(4): four stores a group apart.
UOp upcast_copy() {
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp i = range(16, 0, AxisType::GLOBAL), j = range(4, 1, AxisType::UPCAST);
  return sink({"upcast_copy"}, {out[i * 4 + j].store(in[i * 4 + j].load()).end({i, j})});
}

}  // namespace

TEST_CASE("expand_ranges repeats an UPCAST store per value, and coalesce_stores merges them into one vector store") {
  UOp g = simplify_kernel(flatten_views(upcast_copy()));
  UOp expanded = simplify_kernel(expand_ranges(g));
  CHECK(count(expanded, Op::STORE) == 4);
  CHECK(count(expanded, Op::GROUP) == 1);
  UOp coalesced = coalesce_stores(expanded);
  REQUIRE(count(coalesced, Op::STORE) == 1);
  for (const UOp& u : toposort(coalesced))
    if (u.op() == Op::STORE) CHECK(u.src(1).dtype() == dtypes::float32.vec(4));
}

TEST_CASE("coalesce_stores keeps stores that write one address from two sites scalar, and keeps both") {
  UOp in = placeholder({8}, dtypes::float32, 1), out = placeholder({8}, dtypes::float32, 0);
  UOp zero = constant(Wide(0)), one = constant(Wide(1));
  UOp a = out[zero].store(in[zero].load()), b = out[one].store(in[one].load());
  UOp again = out[zero].store(in[one].load() * 2.0);  // slot 0 written twice
  UOp g = sink({"aliased"}, {group({a, b, again})});
  UOp c = coalesce_stores(g);
  CHECK(count(c, Op::STORE) == 3);
  for (const UOp& u : toposort(c))
    if (u.op() == Op::STORE) CHECK_FALSE(u.src(1).dtype().is_vector());
}

TEST_CASE("lower_index_dtype: int32 where ranges prove it, int64 where a value needs it") {
  LaunchDims launch;
  UOp small = lower_index_dtype(ranges_to_hardware(simplify_kernel(flatten_views(upcast_copy())), launch));
  CHECK_FALSE(any_dtype(small, dtypes::index));
  CHECK_FALSE(any_dtype(small, dtypes::int64));
  UOp base = variable("base", 0, int64_t{1} << 40, dtypes::int64);
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp i = range(64, 0, AxisType::LOOP);
  UOp far = base.cast(dtypes::index) + i;
  UOp k = sink({"wide"}, {out[i].store(in[i].load() + (far % 3).cast(dtypes::float32)).end({i})});
  UOp wide = lower_index_dtype(simplify_kernel(flatten_views(k)));
  CHECK_FALSE(any_dtype(wide, dtypes::index));
  CHECK(any_dtype(wide, dtypes::int64));
  CHECK(any_dtype(wide, dtypes::int32));  // the loop counter itself still fits
}

// A value computed in int64 whose own range fits int32 (a wide value clamped, a remainder) is
// narrowed where it feeds int32 arithmetic, so the division after it is 32-bit.
TEST_CASE("lower_index_dtype narrows a wide-computed value whose range fits before the int32 arithmetic it feeds") {
  UOp base = variable("base", 0, int64_t{1} << 40, dtypes::int64), n = variable("n", 1, 1000);
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp i = range(64, 0, AxisType::LOOP);
  UOp clamped = min(base.cast(dtypes::index) + i, n.cast(dtypes::index) - 1);  // computed from an int64 value
  UOp k = sink({"narrowed"}, {out[i].store(in[i].load() + (clamped / 7 + i).cast(dtypes::float32)).end({i})});
  UOp lowered = lower_index_dtype(simplify_kernel(flatten_views(k)));
  int divisions = 0, narrowings = 0;
  for (const UOp& u : toposort(lowered)) {
    divisions += u.op() == Op::IDIV;
    if (u.op() == Op::IDIV) CHECK(u.dtype() == dtypes::int32);
    if (u.op() == Op::MIN) CHECK(u.dtype() == dtypes::int64);  // its source needs 64 bits
    narrowings += u.op() == Op::CAST && u.dtype() == dtypes::int32 && u.src(0).dtype() == dtypes::int64;
  }
  CHECK(divisions == 1);
  CHECK(narrowings >= 1);
}

TEST_CASE("ranges_to_hardware: launch dimensions from GLOBAL and LOCAL ranges, and their limits") {
  LaunchDims launch;
  UOp out = placeholder({8, 8, 8, 8}, dtypes::float32, 0);
  UOp g0 = range(8, 0, AxisType::GLOBAL), g1 = range(8, 1, AxisType::GLOBAL), l0 = range(8, 2, AxisType::LOCAL);
  UOp l1 = range(8, 3, AxisType::LOCAL);
  UOp k = sink({"dims"}, {out[{g0, g1, l0, l1}].store(constant(1.0, dtypes::float32)).end({g0, g1, l0, l1})});
  UOp hw = ranges_to_hardware(k, launch);
  CHECK(count(hw, Op::RANGE) == 0);
  CHECK(count(hw, Op::SPECIAL) == 4);
  CHECK(launch.grid[0].const_int() == 8);
  CHECK(launch.grid[1].const_int() == 8);
  CHECK(launch.grid[2].const_int() == 1);
  CHECK(launch.block[1].const_int() == 8);
  UOp four = placeholder({2, 2, 2, 2}, dtypes::float32, 0);
  std::vector<UOp> gs;
  for (int64_t id = 0; id < 4; ++id) gs.push_back(range(2, id, AxisType::GLOBAL));
  UOp too_many = sink({"four"}, {four.index(gs).store(constant(1.0, dtypes::float32)).end(gs)});
  CHECK_THROWS_WITH_AS(ranges_to_hardware(too_many, launch), doctest::Contains("4 GLOBAL ranges; the hardware has 3"), Error);
  UOp big = placeholder({2048}, dtypes::float32, 0);
  UOp l = range(2048, 0, AxisType::LOCAL);
  UOp wide = sink({"wide"}, {big[l].store(constant(1.0, dtypes::float32)).end({l})});
  CHECK_THROWS_WITH_AS(ranges_to_hardware(wide, launch), doctest::Contains("2048 work-items per workgroup; at most 1024"), Error);
}

TEST_CASE("lower names the pass of an error, and linearize names a range used outside its loop") {
  UOp out = placeholder({8}, dtypes::float32, 0);
  UOp i = range(8, 0, AxisType::LOOP);
  UOp never_ended = sink({"unended"}, {out[i].store(constant(1.0, dtypes::float32))});
  CHECK_THROWS_WITH_AS(lower(never_ended), doctest::Contains("pass linearize: range 0 (LOOP) is used outside the loop"), Error);
  CHECK_THROWS_WITH_AS(check_pass_name("frobnicate"), doctest::Contains("the passes are: verify pin_loop_bodies resolve_unshard"), Error);
  CHECK_NOTHROW(check_pass_name("insert_barriers"));
}

TEST_CASE("linearize: loops around their bodies, a reduction's accumulator reset inside its outer loop") {
  UOp in = placeholder({4, 8}, dtypes::float32, 1), out = placeholder({4}, dtypes::float32, 0);
  UOp i = range(4, 0, AxisType::LOOP), k = range(8, 1, AxisType::REDUCE);
  UOp kern = sink({"rowsum"}, {out[i].store(in[{i, k}].load().reduce(Op::ADD, {k})).end({i})});
  LoweredKernel lk = lower(kern);
  // loop i { store acc = 0; loop k { acc += ... } store out }.
  int depth = 0, init_depth = -1;
  for (const LinearOp& s : lk.program) {
    if (s.kind == LinearOp::Kind::LoopBegin) ++depth;
    if (s.kind == LinearOp::Kind::LoopEnd) --depth;
    if (s.kind == LinearOp::Kind::Effect && s.op.op() == Op::STORE && s.op.src(1).is_const() && init_depth < 0) init_depth = depth;
  }
  CHECK(init_depth == 1);
  CHECK(depth == 0);
  CHECK(program_string(lk).find("loop int32") != std::string::npos);
}

TEST_CASE("linearize: a loop's barrier that names a prologue writes the prologue once, before the loop") {
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL), k = range(4, 1, AxisType::LOOP);
  UOp s = alloc_shared({128}, dtypes::float32);
  UOp prologue = s[l].store(in[l].load());                     // stage 0, once
  UOp refill = s[l + 64].store(in[l].load() * k.cast(dtypes::float32));  // stage 1, every step
  UOp ready = barrier({prologue, refill});
  UOp sum = s.after({ready})[63 - l].load() + s.after({ready})[127 - l].load();
  UOp kern = sink({"prologue"}, {out[l].store(sum).end({k, l})});
  LoweredKernel lk = lower(kern);
  int depth = 0, prologue_stores = 0, loop_stores = 0;
  for (const LinearOp& op : lk.program) {
    if (op.kind == LinearOp::Kind::LoopBegin) ++depth;
    if (op.kind == LinearOp::Kind::LoopEnd) --depth;
    if (op.kind != LinearOp::Kind::Effect || op.op.op() != Op::STORE) continue;
    UOp buf = op.op.src(0).src(0);
    while (buf.op() == Op::AFTER) buf = buf.src(0);
    if (buf.arg_as<BufferArg>().space == AddrSpace::LOCAL) ++(depth == 0 ? prologue_stores : loop_stores);
  }
  CHECK(prologue_stores == 1);
  CHECK(loop_stores == 1);
}

// The depth (open loops) at which each step of `lk` that `is` accepts is written, in program order.
std::vector<int> depths_of(const LoweredKernel& lk, const std::function<bool(const LinearOp&)>& is) {
  std::vector<int> depths;
  int depth = 0;
  for (const LinearOp& op : lk.program) {
    if (op.kind == LinearOp::Kind::LoopBegin) ++depth;
    if (op.kind == LinearOp::Kind::LoopEnd) --depth;
    if (is(op)) depths.push_back(depth);
  }
  return depths;
}

// The depth of each STORE or ATOMIC of `lk`, in program order.
std::vector<int> effect_depths(const LoweredKernel& lk) {
  return depths_of(lk, [](const LinearOp& op) { return op.op.op() == Op::STORE || op.op.op() == Op::ATOMIC; });
}

TEST_CASE("linearize: an effect a loop body lists stays in the loop where another effect of the body names it") {
  // for r in range(n): flag[0] = 1; out[r] = flag[0]. flag's store does not use r, and out's
  // names it through AFTER; it was written once before the loop (and ran even where n = 0).
  UOp flag = placeholder({1}, dtypes::float32, 0), out = placeholder({8}, dtypes::float32, 1);
  UOp r = range(variable("n", 0, 8), 0, AxisType::LOOP);
  UOp set = flag[constant(Wide(0))].store(constant(1.0, dtypes::float32));
  UOp copy = out[r].store(flag.after({set})[constant(Wide(0))].load());
  CHECK(effect_depths(lower(sink({"listed"}, {group({set, copy}).end({r})}))) == std::vector<int>{1, 1});
  // The same with the named effect listed after its user, and with an atomic count.
  CHECK(effect_depths(lower(sink({"listed_after"}, {group({copy, set}).end({r})}))) == std::vector<int>{1, 1});
  UOp count = placeholder({1}, dtypes::int32, 0);  // (flag is not in this kernel)
  UOp add = atomic(AtomicOp::Add, count[constant(Wide(0))], constant(Wide(1), dtypes::int32));
  UOp seen = out[r].store(count.after({add})[constant(Wide(0))].load().cast(dtypes::float32));
  CHECK(effect_depths(lower(sink({"listed_atomic"}, {group({add, seen}).end({r})}))) == std::vector<int>{1, 1});
  // An effect the body names but does not list is still written once, before the loop.
  CHECK(effect_depths(lower(sink({"prologue_named"}, {copy.end({r})}))) == std::vector<int>{0, 1});
}

TEST_CASE("linearize: a listed effect stays in its loop where a barrier between it and its read names it") {
  // for r in range(n): flag[0] = 0; flag[0] += 1; out[2r] = r; out[2r + 1] = 2r: the reset does
  // not use r and is named through AFTER as a group of its own, listed in the body (a guard).
  UOp flag = placeholder({1}, dtypes::float32, 0), out = placeholder({16}, dtypes::float32, 1);
  UOp r = range(variable("n", 0, 8), 0, AxisType::LOOP);
  const UOp at0 = constant(Wide(0));
  UOp zero = group({flag[at0].store(constant(0.0, dtypes::float32))});
  UOp bump = flag[at0].store(flag.after({zero})[at0].load() + 1.0);
  UOp pair = group({out[r * 2].store(r.cast(dtypes::float32)), out[r * 2 + 1].store(r.cast(dtypes::float32) * 2.0)});
  CHECK(effect_depths(lower(sink({"listed_group"}, {group({zero, bump, pair}).end({r})}))) == std::vector<int>{1, 1, 1});
  // A shared tile written and read in every iteration: insert_barriers puts a barrier between
  // the fill and the read and ends the body with a write-after-read barrier. Effects that do not
  // use r were written once, before the loop: the body ended by the second barrier listed
  // nothing but that barrier (the reset and the count), and the first barrier, when it uses no
  // loop range, took the listed effects before it along (the fill of `early`).
  UOp l = range(64, 1, AxisType::LOCAL), in = placeholder({64}, dtypes::float32, 2);
  UOp s = alloc_shared({64}, dtypes::float32);
  UOp fill = s[l].store(in[l].load() * r.cast(dtypes::float32) + flag.after({bump})[at0].load());
  UOp read = out[l % 16].store(s.after({fill})[63 - l].load(), l < 16);
  CHECK(effect_depths(lower(sink({"barrier_ended"}, {group({zero, bump, fill, read}).end({r, l})}))) == std::vector<int>{1, 1, 1, 1});
  UOp early = s[l].store(in[l].load() + flag.after({bump})[at0].load());
  UOp late = out[l % 16].store(s.after({early})[63 - l].load() + r.cast(dtypes::float32), l < 16);
  CHECK(effect_depths(lower(sink({"barrier_named"}, {group({zero, bump, early, late}).end({r, l})}))) == std::vector<int>{1, 1, 1, 1});
  // Ordered after a listed effect through another unlisted one: t[0] = flag[0] + 1 (after the
  // listed reset), u[0] = t[0] * 2, out[r] = u[0]. u and t use no range and are not listed, but
  // written before the loop they would take the reset along.
  UOp t = placeholder({1}, dtypes::float32, 2), u = placeholder({1}, dtypes::float32, 3);
  UOp to_t = t[at0].store(flag.after({zero})[at0].load() + 1.0);
  UOp to_u = u[at0].store(t.after({to_t})[at0].load() * 2.0);
  UOp use = out[r].store(u.after({to_u})[at0].load() + r.cast(dtypes::float32));
  CHECK(effect_depths(lower(sink({"chain"}, {group({zero, use}).end({r})}))) == std::vector<int>{1, 1, 1, 1});
}

// The depth (open loops) at which the first value that `is` accepts is written; -1 if none is.
int value_depth(const LoweredKernel& lk, const std::function<bool(const UOp&)>& is) {
  const std::vector<int> depths = depths_of(lk, [&](const LinearOp& op) { return op.kind == LinearOp::Kind::Value && is(op.op); });
  return depths.empty() ? -1 : depths.front();
}

// Whether `u` is an integer division by an expression that mentions `name`.
bool divides_by(const UOp& u, const std::string& name) {
  return u.op() == Op::IDIV && expr_string(u.src(1), 200).find(name) != std::string::npos;
}

TEST_CASE("linearize: a loop-invariant value is written before the loops it does not depend on") {
  // for i in range(4): for j in range(8): out[i * 8 + j] = i * 1000 / rows_n + i * 1000 / maybe_zero + i * 1000 / from_f + j + in[i]
  //                    for k in range(8): out2[i * 8 + k] = i * 1000 / rows_n + k
  UOp in = placeholder({4}, dtypes::float32, 1), out = placeholder({32}, dtypes::float32, 0), out2 = placeholder({32}, dtypes::float32, 2);
  UOp i = range(4, 0, AxisType::LOOP), j = range(8, 1, AxisType::LOOP), k = range(8, 2, AxisType::LOOP);
  UOp n = variable("rows_n", 1, 1 << 20).cast(dtypes::index), m = variable("maybe_zero", 0, 1 << 20).cast(dtypes::index);
  UOp from_f = max((i.cast(dtypes::float32) * 0.5).cast(dtypes::index), constant(Wide(1), dtypes::index));  // >= 1, but from a float
  UOp sum = (i * 1000 / n + i * 1000 / m + i * 1000 / from_f + j).cast(dtypes::float32) + in[i].load();
  UOp first = out[i * 8 + j].store(sum).end({j}), second = out2[i * 8 + k].store((i * 1000 / n + k).cast(dtypes::float32)).end({k});
  const LoweredKernel lk = lower(sink({"invariant"}, {group({first, second}).end({i})}));
  // i * 1000 / rows_n uses only i and divides by rows_n >= 1: written once in i's loop, before
  // j's, and reused in k's.
  const auto by_rows_n = [](const UOp& u) { return divides_by(u, "rows_n"); };
  CHECK(value_depth(lk, by_rows_n) == 1);
  CHECK(std::count_if(lk.program.begin(), lk.program.end(), [&](const LinearOp& op) { return op.kind == LinearOp::Kind::Value && by_rows_n(op.op); }) == 1);
  // Dividing by maybe_zero before j's loop could divide by zero where j's loop runs no iteration
  // (not here, but the rule does not look at trip counts); a divisor cast from a float may be
  // poison (NaN) in LLVM whatever its range; in[i] may be written by the loop's effects: all
  // three are written where they are used, inside j's loop.
  CHECK(value_depth(lk, [](const UOp& u) { return divides_by(u, "maybe_zero"); }) == 2);
  CHECK(value_depth(lk, [](const UOp& u) {
          if (u.op() != Op::IDIV) return false;
          const auto nodes = toposort(u.src(1));
          return std::any_of(nodes.begin(), nodes.end(), [](const UOp& s) { return s.op() == Op::CAST && s.src(0).dtype().is_float(); });
        }) == 2);
  CHECK(value_depth(lk, [](const UOp& u) { return u.op() == Op::LOAD; }) == 2);
  CHECK(effect_depths(lk) == std::vector<int>{2, 2});
}

TEST_CASE("pin_loop_bodies: an effect that uses a loop's range only through a value that folds stays in the loop") {
  // for r in range(n), n in [0, 1]: flag[r // 2] = 1; out[r] = flag[0]. The store to flag is not
  // listed; it lies in the loop through r // 2, which the simplifier folds to 0 (r is 0 or 1).
  UOp flag = placeholder({1}, dtypes::float32, 0), out = placeholder({8}, dtypes::float32, 1);
  UOp r = range(variable("n", 0, 1), 0, AxisType::LOOP);
  UOp set = flag[r / 2].store(constant(1.0, dtypes::float32));
  UOp copy = out[r].store(flag.after({set})[constant(Wide(0))].load());
  const UOp kernel = sink({"folded"}, {copy.end({r})});
  // The pass lists it in the END's body: END(GROUP(copy, set), r).
  const UOp pinned = pin_loop_bodies(kernel);
  const UOp end = pinned.src(0);
  REQUIRE(end.op() == Op::END);
  REQUIRE(end.src(0).op() == Op::GROUP);
  CHECK(end.src(0).src(1).same(set));
  CHECK(effect_depths(lower(kernel)) == std::vector<int>{1, 1});
  // An effect that does not use the range stays out of the body (a prologue), and one that uses a
  // range closed inside the body is left to that inner loop.
  UOp prologue = flag[constant(Wide(0))].store(constant(2.0, dtypes::float32));
  CHECK(pin_loop_bodies(sink({"prologue"}, {out[r].store(flag.after({prologue})[constant(Wide(0))].load()).end({r})})).src(0).src(0).op() == Op::STORE);
  UOp buf = placeholder({4}, dtypes::float32, 2);
  UOp k = range(4, 1, AxisType::LOOP);
  UOp inner = buf[k].store(constant(3.0, dtypes::float32));
  UOp read = out[r + k].store(buf.after({inner})[k].load());
  const UOp outer_body = pin_loop_bodies(sink({"nested"}, {read.end({k}).end({r})})).src(0).src(0);
  REQUIRE(outer_body.op() == Op::END);  // END(r)'s body is END(k), nothing pinned beside it
  REQUIRE(outer_body.src(0).op() == Op::GROUP);
  CHECK(outer_body.src(0).src(1).same(inner));
  // An END that also closes a hardware range (no loop) pins for its loop range.
  UOp g = range(4, 3, AxisType::GLOBAL);
  UOp per_g = out[g * 2 + r].store(flag.after({set})[constant(Wide(0))].load());
  CHECK(effect_depths(lower(sink({"with_workgroups"}, {per_g.end({r, g})}))) == std::vector<int>{1, 1});
}

TEST_CASE("pin_loop_bodies: an END of two loop ranges pins an effect that uses only the outer one in the outer loop") {
  // for r in range(n), n in [0, 1], for k in range(4), one END: flag[r // 2] = 1 (uses r only,
  // through a value that folds to 0); out[r * 4 + k] = flag[0]. The store to flag belongs in r's
  // loop, once an iteration, not before the loops (where it ran although n = 0).
  UOp flag = placeholder({1}, dtypes::float32, 0), out = placeholder({8}, dtypes::float32, 1);
  UOp r = range(variable("n", 0, 1), 0, AxisType::LOOP), k = range(4, 1, AxisType::LOOP);
  UOp set = flag[r / 2].store(constant(1.0, dtypes::float32));
  UOp copy = out[r * 4 + k].store(flag.after({set})[constant(Wide(0))].load());
  CHECK(effect_depths(lower(sink({"two_loops"}, {copy.end({r, k})}))) == std::vector<int>{1, 2});
  // The ENDs are nested (r outermost) with the pinned store beside k's loop in r's body.
  const UOp outer = pin_loop_bodies(sink({"two_loops"}, {copy.end({k, r})})).src(0);
  REQUIRE(outer.op() == Op::END);
  REQUIRE(outer.src().size() == 2);
  CHECK(outer.src(1).same(r));
  REQUIRE(outer.src(0).op() == Op::GROUP);
  CHECK(outer.src(0).src(0).op() == Op::END);
  CHECK(outer.src(0).src(1).same(set));
  // With a workgroup range in the END, an effect that uses it and r lies in r's loop too.
  UOp g = range(2, 3, AxisType::GLOBAL);
  UOp set_g = flag[g / 2 + r / 2].store(constant(1.0, dtypes::float32));
  UOp copy_g = out[g * 4 + r * 4 + k].store(flag.after({set_g})[constant(Wide(0))].load());
  CHECK(effect_depths(lower(sink({"two_loops_g"}, {copy_g.end({r, k, g})}))) == std::vector<int>{1, 2});
  // An END whose loops pin nothing is left as it was, also beside one that pins.
  UOp r2 = range(2, 4, AxisType::LOOP), k2 = range(2, 5, AxisType::LOOP);
  UOp plain = out[r2 * 2 + k2].store(constant(2.0, dtypes::float32)).end({r2, k2});
  const UOp unpinned = sink({"plain"}, {plain});
  CHECK(pin_loop_bodies(unpinned).same(unpinned));
  const UOp both = pin_loop_bodies(sink({"both"}, {group({copy.end({r, k}), plain})}));
  REQUIRE(both.src(0).op() == Op::GROUP);
  CHECK(both.src(0).src(0).src().size() == 2);  // nested: END(GROUP(END(copy, k), set), r)
  CHECK(both.src(0).src(1).same(plain));        // as written: END(store, r2, k2)
}

TEST_CASE("pin_loop_bodies: three loop ranges, and an unrolled range, in one END") {
  // for r in range(n), n in [0, 1]; for j in range(2); for k in range(2): flag[r // 2] = 1 (r only),
  // out[r * 4 + j * 2 + k] = flag[0]. The store to flag runs in r's loop, outside j's and k's.
  UOp flag = placeholder({1}, dtypes::float32, 0), out = placeholder({8}, dtypes::float32, 1);
  UOp r = range(variable("n", 0, 1), 0, AxisType::LOOP), j = range(2, 1, AxisType::LOOP), k = range(2, 2, AxisType::LOOP);
  UOp set = flag[r / 2].store(constant(1.0, dtypes::float32));
  UOp copy = out[r * 4 + j * 2 + k].store(flag.after({set})[constant(Wide(0))].load());
  CHECK(effect_depths(lower(sink({"three_loops"}, {copy.end({k, r, j})}))) == std::vector<int>{1, 3});
  // With an unrolled range u in place of k (two copies of the store in j's loop, two elements
  // apart so they are not merged), the store to flag still runs in r's loop.
  UOp u = range(2, 3, AxisType::UNROLL);
  UOp copy_u = out[r * 4 + j + u * 2].store(flag.after({set})[constant(Wide(0))].load());
  CHECK(effect_depths(lower(sink({"loops_unrolled"}, {copy_u.end({r, j, u})}))) == std::vector<int>{1, 2, 2});
}

TEST_CASE("pin_loop_bodies: it pins neither an atomic that is only a value nor the statements of a when() it pins") {
  // (cur and tmp are slot 1 of two kernels.)
  UOp out = placeholder({16}, dtypes::float32, 0), cur = placeholder({2}, dtypes::int32, 1), tmp = placeholder({2}, dtypes::float32, 1);
  UOp r = range(variable("n", 0, 8), 0, AxisType::LOOP);
  const auto count = [](const LoweredKernel& lk, Op op, int64_t slot) {
    int n = 0;
    for (const LinearOp& s : lk.program) {
      if (s.op.op() != op) continue;
      UOp buf = s.op.src(0).src(0);
      while (buf.op() == Op::AFTER) buf = buf.src(0);
      n += buf.arg_as<BufferArg>().slot == slot;
    }
    return n;
  };
  // out[atomic_add(cur[r % 2], 1)] = 1 where r < 4: the atomic is the store's index (a value). A
  // pinned copy of it would outlive resolve_when's guarded one and add once more in every iteration.
  UOp slot = atomic(AtomicOp::Add, cur[r % 2], constant(Wide(1), dtypes::int32)).cast(dtypes::index);
  UOp guarded_add = when(r < 4, {out[slot].store(constant(1.0, dtypes::float32))});
  CHECK(count(lower(sink({"atomic_index"}, {guarded_add.end({r})})), Op::ATOMIC, 1) == 1);
  // tmp[r % 2] = r where r < 4, then out[r] = tmp[r % 2]: the when is reached through AFTER and
  // pinned whole; its store, pinned beside it, would run unguarded.
  UOp w = when(r < 4, {tmp[r % 2].store(r.cast(dtypes::float32))});
  UOp copy = out[r].store(tmp.after({w})[r % 2].load());
  const LoweredKernel lk = lower(sink({"when_after"}, {copy.end({r})}));
  CHECK(count(lk, Op::STORE, 1) == 1);
  for (const LinearOp& s : lk.program)
    if (s.op.op() == Op::STORE && s.op.src(0).src(0).op() == Op::PLACEHOLDER && s.op.src(0).src(0).arg_as<BufferArg>().slot == 1)
      CHECK(s.op.src(0).src().size() == 3);  // guarded: the INDEX carries the when's condition
}

TEST_CASE("canonical_allocations: the same kernel built after other allocations hashes the same") {
  auto build = [] {
    UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
    UOp l = range(64, 0, AxisType::LOCAL);
    UOp s = alloc_shared({64}, dtypes::float32);  // an id from the per-thread counter
    UOp st = s[l].store(in[l].load());
    return sink({"via_lds"}, {out[l].store(s.after({st})[63 - l].load()).end({l})});
  };
  UOp first = build();
  alloc_shared({4}, dtypes::float32);  // moves the counter on
  UOp second = build();
  CHECK_FALSE(first.same(second));
  CHECK(canonical_allocations(first).same(canonical_allocations(second)));
}

}  // namespace weft::lower

namespace weft::lower {
namespace {

// out = in * 2 + d over 4 devices: each device's DEVICE index d selects its block of 16.
UOp device_scale(const UOp& d) {
  UOp in = placeholder({16}, dtypes::float32, 1).unshard({0}, {d}), out = placeholder({16}, dtypes::float32, 0).unshard({0}, {d});
  UOp i = range(16, 1, AxisType::GLOBAL);
  return sink({"device_scale"}, {out[d * 16 + i].store(in[d * 16 + i].load() * 2.0 + d.cast(dtypes::float32)).end({i, d})});
}

}  // namespace

TEST_CASE("resolve_unshard and resolve_devices: a device shard indexed by its own block, the DEVICE range a variable") {
  const UOp d = range(4, 0, AxisType::DEVICE);
  const UOp k = device_scale(d);
  const UOp resolved = resolve_devices(resolve_unshard(k));
  size_t device_ranges = 0, unshards = 0;
  for (const UOp& u : toposort(resolved)) {
    device_ranges += u.op() == Op::RANGE && u.arg_as<RangeArg>().axis == AxisType::DEVICE;
    unshards += u.op() == Op::UNSHARD;
    if (u.op() == Op::INDEX) CHECK(u.src(1).same(range(16, 1, AxisType::GLOBAL)));  // d*16 + i on the device's own shard: i
    if (u.op() == Op::END) CHECK(u.src().size() == 2);                                 // the store and i: d is no loop
  }
  CHECK(device_ranges == 0);
  CHECK(unshards == 0);
  CHECK(count(resolved, Op::DEFINE_VAR) == 1);  // the d added to each value
  const UOp var = device_variable(d);
  CHECK(var.arg_as<VarArg>().name == "device0");
  CHECK(var.arg_as<VarArg>().min == 0);
  CHECK(var.arg_as<VarArg>().max == 3);

  const std::vector<MeshAxis> mesh = mesh_axes(k);
  REQUIRE(mesh.size() == 1);
  CHECK(mesh[0].size == 4);
  CHECK(mesh[0].variable == "device0");
  const auto splits = device_splits(k, mesh);
  CHECK(splits.at(0) == std::vector<int64_t>{0});
  CHECK(splits.at(1) == std::vector<int64_t>{0});
  const auto params = kernel_params(k);  // the device index is a scalar parameter
  CHECK(std::any_of(params.begin(), params.end(), [](const KernelParam& p) { return p.kind == KernelParam::Kind::Scalar && p.name == "device0"; }));
}

TEST_CASE("device shards: a strided index, an index another device owns, and a run-time DEVICE size are errors") {
  const UOp d = range(4, 0, AxisType::DEVICE);
  UOp in = placeholder({16}, dtypes::float32, 1).unshard({0}, {d}), out = placeholder({16}, dtypes::float32, 0).unshard({0}, {d});
  UOp i = range(16, 1, AxisType::GLOBAL);
  // Strided ownership is a fragment's layout, not a sharded array's (contiguous blocks).
  UOp strided = sink({"strided"}, {out[d + i * 4].store(in[d + i * 4].load()).end({i, d})});
  CHECK_THROWS_WITH_AS(resolve_unshard(strided), doctest::Contains("a device owns a contiguous block"), Error);
  // The next device's block.
  UOp neighbour = sink({"neighbour"}, {out[d * 16 + i].store(in[((d + 1) % 4) * 16 + i].load()).end({i, d})});
  CHECK_THROWS_WITH_AS(resolve_unshard(neighbour), doctest::Contains("cannot shard index"), Error);
  // A GLOBAL buffer unsharded over a LOCAL range.
  UOp l = range(4, 2, AxisType::LOCAL);
  UOp over_local = sink({"over_local"}, {placeholder({16}, dtypes::float32, 0).unshard({0}, {l})[l * 16 + i].store(constant(1.0, dtypes::float32)).end({i, l})});
  CHECK_THROWS_WITH_AS(resolve_unshard(over_local), doctest::Contains("a GLOBAL buffer shards over DEVICE ranges"), Error);
  // A mesh axis has a constant size.
  UOp n = variable("n", 1, 8);
  UOp dn = range(n, 0, AxisType::DEVICE);
  UOp runtime_size = sink({"runtime_size"}, {placeholder({16}, dtypes::float32, 0)[i].store(constant(1.0, dtypes::float32)).end({i, dn})});
  CHECK_THROWS_WITH_AS(lower(runtime_size), doctest::Contains("has a run-time size"), Error);
}

TEST_CASE("resolve_devices: a reduction over a DEVICE range, and one DEVICE range splitting two axes, are errors") {
  const UOp d = range(4, 0, AxisType::DEVICE);
  const UOp in = placeholder({16}, dtypes::float32, 1).unshard({0}, {d}), out = placeholder({1}, dtypes::float32, 0);
  const UOp sum = in[d * 16].load().reduce(Op::ADD, {d});  // a sum across devices: a collective
  const UOp across = sink({"across"}, {out[constant(Wide(0))].store(sum)});
  CHECK_THROWS_WITH_AS(lower(across), doctest::Contains("REDUCE over DEVICE range 0: a reduction across devices is a collective"), Error);
  const UOp twice = placeholder({4, 4}, dtypes::float32, 0).unshard({0, 1}, {d, d});
  const UOp i = range(4, 1, AxisType::GLOBAL);
  const UOp both = sink({"both"}, {twice[{d * 4 + i, d * 4 + i}].store(constant(1.0, dtypes::float32)).end({i, d})});
  CHECK_THROWS_WITH_AS(lower(both), doctest::Contains("along two axes; a mesh axis splits one axis of a tensor"), Error);
}

TEST_CASE("linearize: a prefetched load is written where its issued effect stands, ahead of the work listed after it") {
  const UOp a = placeholder({64}, dtypes::int32, 2), b = placeholder({64}, dtypes::float32, 1);
  const UOp first = placeholder({64}, dtypes::float32, 0), last = placeholder({64}, dtypes::int32, 3);
  const UOp i = range(64, 0, AxisType::LOOP);
  // The position of the first LOAD of `dtype` in the program.
  const auto first_load = [](const LoweredKernel& lk, DType dtype) {
    for (size_t n = 0; n < lk.program.size(); ++n)
      if (lk.program[n].op.op() == Op::LOAD && lk.program[n].op.dtype() == dtype) return n;
    return lk.program.size();
  };
  // Without prefetch, a[i] is loaded where it is first used: after b[i]'s work.
  const LoweredKernel plain = lower(sink({"plain"}, {group({first[i].store(b[i].load() + 1.0f), last[i].store(a[i].load())}).end({i})}));
  CHECK(first_load(plain, dtypes::float32) < first_load(plain, dtypes::int32));
  const Prefetched early = prefetch({a[i].load()});
  const LoweredKernel ahead = lower(sink({"ahead"}, {group({early.issued, first[i].store(b[i].load() + 1.0f), last[i].store(early.values[0])}).end({i})}));
  CHECK(first_load(ahead, dtypes::int32) < first_load(ahead, dtypes::float32));
  CHECK_THROWS_WITH_AS(prefetch({a[i].vec(4).load()}), doctest::Contains("prefetch: takes scalar values of a concrete dtype, got LOAD of int32.vec4"), Error);
  CHECK_THROWS_WITH_AS(prefetch({i * 2}), doctest::Contains("got MUL of index"), Error);
}

}  // namespace weft::lower
