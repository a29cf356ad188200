// graph_rewrite with the symbolic simplifier on a large generated kernel graph: thousands of
// loads and stores whose indices carry the redundant structure tiled launches produce
// ((g*T + l) // T, % T, nested divisions, offsets). Reports input nodes simplified per second.
//
//   bench_rewrite --benchmark_counters_tabular=true
//
// "Fresh" builds a graph no earlier iteration built (new constants), so every node the
// simplifier makes is new to the hash-consing table; "Warm" simplifies the same graph again,
// as a recompile of an unchanged kernel would.
#include <benchmark/benchmark.h>

#include "weft/dsl/builder.h"
#include "weft/lowering/symbolic.h"

using namespace weft;

namespace {

UOp generated_kernel(int stores, int64_t salt) {
  constexpr int64_t T = 64;
  UOp in = placeholder({1 << 22}, dtypes::float32, 1), out = placeholder({1 << 22}, dtypes::float32, 0);
  UOp g = range(1024, 0, AxisType::GLOBAL), l = range(T, 1, AxisType::LOCAL), k = range(16, 2, AxisType::LOOP);
  std::vector<UOp> effects;
  for (int s = 0; s < stores; ++s) {
    UOp linear = g * T + l;
    UOp row = linear / T, col = linear % T;
    UOp offset = constant(Wide(s) * 7919 + Wide(salt) * 1000003);
    UOp idx = ((row * T + col) * 16 + k + offset) % (1 << 22);
    UOp src = ((idx / 16) / 4) * 64 + idx % 64 + (k * 2 + 1) / 2 - k;
    effects.push_back(out[idx].store(in[src % (1 << 22)].load() * 2.0).end({g, l, k}));
  }
  return sink({"generated"}, effects);
}

void count_nodes(benchmark::State& state, const UOp& graph) {
  state.counters["nodes"] = static_cast<double>(toposort(graph).size());
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(toposort(graph).size()) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

void BM_SimplifyWarm(benchmark::State& state) {
  UOp graph = generated_kernel(static_cast<int>(state.range(0)), 0);
  for (auto _ : state) benchmark::DoNotOptimize(simplify(graph));
  count_nodes(state, graph);
}

void BM_SimplifyFresh(benchmark::State& state) {
  int64_t salt = 1;
  UOp graph;
  for (auto _ : state) {
    state.PauseTiming();
    graph = generated_kernel(static_cast<int>(state.range(0)), salt++);
    state.ResumeTiming();
    benchmark::DoNotOptimize(simplify(graph));
  }
  count_nodes(state, graph);
}

}  // namespace

BENCHMARK(BM_SimplifyWarm)->Arg(256)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimplifyFresh)->Arg(256)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
