#!/bin/sh
# The emulator's speed as a user sees it (issue 14): whole `weft-emu run` processes on one host
# thread, plain and in hazard mode (--sanitize), on two loops compiled by LLVM 22 for gfx950:
#   VALU: three dependent v_fma_f32 per iteration, 4000 iterations, 256 workgroups of 256
#   MFMA: one v_mfma_f32_16x16x32_bf16 per iteration, 4000 iterations, 64 one-wave workgroups
# Prints the best of REPS runs of each (the process's wall time: start-up, decoding and the
# launch), per wave-instruction and per loop iteration.
# usage: tools/emulator-speed.sh [BUILD_DIR] [REPS]   (a Release build: -DCMAKE_BUILD_TYPE=Release)
set -eu
build=${1:-build}
reps=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
emu="$build/tools/weft-emu"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
llc=$(command -v llc-22 || echo /usr/lib/llvm-22/bin/llc)
lld=$(command -v ld.lld-22 || echo /usr/lib/llvm-22/bin/ld.lld)
for k in valu_loop mfma_loop; do
  "$llc" -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -O3 -filetype=obj "$here/bench/data/$k.ll" -o "$dir/$k.o"
  "$lld" -shared "$dir/$k.o" -o "$dir/$k.hsaco"
done
head -c 1024 /dev/urandom > "$dir/ab.bin"
valu() { "$emu" run "$dir/valu_loop.hsaco" --kernel valu --grid 256 --block 256 --arg "out:262144:$dir/o" --arg i32:4000 --threads 1 "$@"; }
mfma() { "$emu" run "$dir/mfma_loop.hsaco" --kernel mfma --grid 64 --block 64 --arg "in:$dir/ab.bin" --arg "out:65536:$dir/o" --arg i32:4000 --threads 1 "$@"; }
best() {  # best REPS wall seconds of a command
  b=""
  i=0
  while [ "$i" -lt "$reps" ]; do
    t0=$(date +%s.%N)
    "$@" > /dev/null
    t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    if [ -z "$b" ] || awk -v t="$t" -v b="$b" 'BEGIN { exit !(t < b) }'; then b=$t; fi
    i=$((i + 1))
  done
  echo "$b"
}
count() { "$@" --stats | sed -n 's/^instructions: \([0-9]*\) wave-instructions$/\1/p'; }
n_valu=$(count valu)
n_mfma=$(count mfma)
v=$(best valu); vs=$(best valu --sanitize)
m=$(best mfma); ms=$(best mfma --sanitize)
awk -v n="$n_valu" -v t="$v" -v ts="$vs" -v m="$n_mfma" -v u="$m" -v us="$ms" 'BEGIN {
  print "loop   wave-instructions  plain s   per wave-instr  per iteration  hazard mode s  ratio"
  printf "VALU   %17d  %7.3f   %11.2f ns  %10.2f ns  %13.3f  %5.2f\n", n, t, t * 1e9 / n, t * 1e9 / (1024 * 4000), ts, ts / t
  printf "MFMA   %17d  %7.3f   %11.2f ns  %10.2f ns  %13.3f  %5.2f\n", m, u, u * 1e9 / m, u * 1e9 / (64 * 4000), us, us / u
  print "issue 14: VALU <= 6 ns per wave-instruction, MFMA <= 300 ns per iteration, hazard mode <= 3x"
}'
