#!/bin/sh
# Compiles a small kernel with LLVM 22 for gfx950, shows its disassembly as weft's emulator
# decodes it, runs it on the emulator over 1000 random dwords and checks the result bit-exactly.
# usage: tools/emulator-demo.sh [BUILD_DIR]
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
llc=$(command -v llc-22 || echo /usr/lib/llvm-22/bin/llc)
lld=$(command -v ld.lld-22 || echo /usr/lib/llvm-22/bin/ld.lld)
"$llc" -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj "$here/tests/cli/data/copy_scale.ll" -o "$dir/k.o"
"$lld" -shared "$dir/k.o" -o "$dir/k.hsaco"
echo "== weft-emu disasm (gfx950)"
"$build/tools/weft-emu" disasm "$dir/k.hsaco" | grep -v 's_nop 0$'
head -c 4000 /dev/urandom > "$dir/in.bin"
echo "== weft-emu run: 16 workgroups x 64 work-items copy 1000 random dwords"
"$build/tools/weft-emu" run "$dir/k.hsaco" --kernel copy --grid 16 --block 64 \
  --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:1000 --stats
if cmp -s "$dir/in.bin" "$dir/out.bin"; then
  echo "== result: the output equals the input, bit for bit"
else
  echo "== result: MISMATCH" >&2
  exit 1
fi
