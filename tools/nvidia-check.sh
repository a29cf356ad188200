#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (and no LLVM): build weft with -DWEFT_LLVM=OFF, run the kernel
# tests (which then run on `cuda`), compute-sanitizer's memcheck, racecheck and synccheck on the
# CUDA kernel tests, the GEMM benchmarks against cuBLAS, and `weft bench SUITE` with JSON and SVG
# for each suite named in WEFT_BENCH_SUITES (e.g. "gemm moe"). Prints a short summary last.
#
# The logs and the bench files go into one archive, OUT_DIR/nvidia-check.tar.gz, beside the
# summary (OUT_DIR/summary.txt): the lent machines' device tool returns only a few files.
# usage: [WEFT_BENCH_SUITES="gemm moe"] tools/nvidia-check.sh [BUILD_DIR] [OUT_DIR]
set -u
build=${1:-build-nvidia}
out=${2:-.}
logs=$(mktemp -d)
jobs=$(nproc)
summary=()
# The lent machines have no msgpack-cxx: its headers travel with the tree in .devdeps (docs/nvidia.md).
[ -d .devdeps/include ] && export CPLUS_INCLUDE_PATH="$PWD/.devdeps/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
step() {  # step NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  if "$@" >"$log" 2>&1; then summary+=("$name: ok ($((SECONDS - t0)) s)"); else summary+=("$name: FAILED ($((SECONDS - t0)) s, see $(basename "$log"))"); fi
}
step configure "$logs/configure.log" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_LLVM=OFF
step build "$logs/build.log" cmake --build "$build" -j "$jobs"
step tests "$logs/tests.log" ctest --test-dir "$build" --output-on-failure -j 8
cuda_tests='*cuda]*,*CUDA*,*NVIDIA*'  # every [cuda] case of WEFT_DEVICE_TEST_CASE, and the NVIDIA-only ones
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    step "$tool" "$logs/$tool.log" compute-sanitizer --tool "$tool" --error-exitcode 3 "$build/tests/weft_tests_kernels" -tc="$cuda_tests"
  done
else
  summary+=("compute-sanitizer: not installed")
fi
if [ -x "$build/bench/bench_cuda_gemm" ]; then
  step bench "$logs/bench.log" "$build/bench/bench_cuda_gemm" --benchmark_min_time=0.5s --benchmark_counters_tabular=true
fi
for suite in ${WEFT_BENCH_SUITES:-}; do
  step "weft bench $suite" "$logs/bench-$suite.txt" "$build/tools/weft" bench "$suite" --device cuda --json "$logs/bench-$suite.json" --plot "$logs/bench-$suite.svg"
done
{
  echo "== summary"
  printf '%s\n' "${summary[@]}"
  grep -hE "test cases:|tests passed|ERROR SUMMARY|RACECHECK SUMMARY" "$logs"/tests.log "$logs"/*check.log 2>/dev/null | tail -12
  [ -f "$logs/bench.log" ] && grep -E "^BM_|^Benchmark" "$logs/bench.log"
  for suite in ${WEFT_BENCH_SUITES:-}; do cat "$logs/bench-$suite.txt" 2>/dev/null; done
} | tee "$out/summary.txt"
tar czf "$out/nvidia-check.tar.gz" -C "$logs" .
