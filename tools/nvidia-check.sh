#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (and no LLVM): build weft with -DWEFT_LLVM=OFF, run the kernel
# tests (which then run on `cuda`), compute-sanitizer's memcheck and racecheck on the CUDA kernel
# tests, and the GEMM benchmarks against cuBLAS. Prints a short summary last.
# usage: tools/nvidia-check.sh [BUILD_DIR] [OUT_DIR]
set -u
build=${1:-build-nvidia}
out=${2:-.}
jobs=$(nproc)
summary=()
step() {  # step NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  if "$@" >"$log" 2>&1; then summary+=("$name: ok ($((SECONDS - t0)) s)"); else summary+=("$name: FAILED ($((SECONDS - t0)) s, see $(basename "$log"))"); fi
}
step configure "$out/configure.log" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_LLVM=OFF
step build "$out/build.log" cmake --build "$build" -j "$jobs"
step tests "$out/tests.log" ctest --test-dir "$build" --output-on-failure -j 8
cuda_tests='*cuda]*,*CUDA*,*NVIDIA*'  # every [cuda] case of WEFT_DEVICE_TEST_CASE, and the NVIDIA-only ones
if command -v compute-sanitizer >/dev/null; then
  step memcheck "$out/memcheck.log" compute-sanitizer --tool memcheck --error-exitcode 3 "$build/tests/weft_tests_kernels" -tc="$cuda_tests"
  step racecheck "$out/racecheck.log" compute-sanitizer --tool racecheck --error-exitcode 3 "$build/tests/weft_tests_kernels" -tc="$cuda_tests"
else
  summary+=("compute-sanitizer: not installed")
fi
if [ -x "$build/bench/bench_cuda_gemm" ]; then
  step bench "$out/bench.log" "$build/bench/bench_cuda_gemm" --benchmark_min_time=0.5s --benchmark_counters_tabular=true
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
grep -E "test cases:|tests passed|ERROR SUMMARY|RACECHECK SUMMARY" "$out"/tests.log "$out"/memcheck.log "$out"/racecheck.log 2>/dev/null | tail -12
[ -f "$out/bench.log" ] && grep -E "^BM_|^Benchmark" "$out/bench.log"
