#!/bin/sh
# weft-emu end to end: disassembly equal to llvm-objdump's, a run whose output file is a
# bit-exact copy of its random input, out-of-bounds and usage errors with their exit codes, and
# hazard mode (--sanitize: exit status 3 on a planted bug), and the timeline (--trace, --stats).
# usage: weft_emu.sh WEFT_EMU LLC LLD OBJDUMP DATA_DIR
set -eu
emu=$1 llc=$2 lld=$3 objdump=$4 data=$5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# usage errors: exit status 2 and a message naming the problem ($pattern)
expect_usage() {
  set +e
  "$emu" "$@" 2> "$dir/err.txt"
  rc=$?
  set -e
  [ $rc -eq 2 ] || fail "'$*' exited with $rc, not 2"
  grep -q -e "$pattern" "$dir/err.txt" || fail "'$*': message lacks '$pattern': $(cat "$dir/err.txt")"
}

for arch in gfx942 gfx950; do
  "$llc" -mtriple=amdgcn-amd-amdhsa -mcpu=$arch -filetype=obj "$data/copy_scale.ll" -o "$dir/k.o"
  "$lld" -shared "$dir/k.o" -o "$dir/k.hsaco"

  # disasm: the same instruction texts as llvm-objdump (whitespace aside), in the same order.
  "$emu" disasm "$dir/k.hsaco" | grep -v ':$' | sed 's/^[0-9a-f]*: //' | tr -s ' ' > "$dir/weft.txt"
  "$objdump" -d --mcpu=$arch "$dir/k.hsaco" | grep -P '^\t' | sed 's/^\t//; s/ *\/\/.*//' | tr -s ' ' > "$dir/llvm.txt"
  head -n "$(wc -l < "$dir/weft.txt")" "$dir/llvm.txt" | diff "$dir/weft.txt" - || fail "$arch: disasm differs from llvm-objdump"

  # run: 1000 random dwords copied by 16 workgroups of 64 work-items; the tail is masked off.
  head -c 4000 /dev/urandom > "$dir/in.bin"
  "$emu" run "$dir/k.hsaco" --kernel copy --grid 16 --block 64 --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:1000 --stats > "$dir/stats.txt"
  cmp "$dir/in.bin" "$dir/out.bin" || fail "$arch: output is not a copy of the input"
  grep -q '^waves: 16$' "$dir/stats.txt" || fail "$arch: --stats did not report 16 waves"

  # a planted bug: n larger than the buffers -> out-of-bounds report, exit status 1
  set +e
  "$emu" run "$dir/k.hsaco" --kernel copy --grid 16 --block 64 --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:1024 2> "$dir/err.txt"
  rc=$?
  set -e
  [ $rc -eq 1 ] || fail "$arch: out-of-bounds run exited with $rc, not 1"
  grep -q 'out-of-bounds global access: lane 40' "$dir/err.txt" || fail "$arch: no out-of-bounds report: $(cat "$dir/err.txt")"
done

# hazard mode: the copy runs clean (exit 0, the same output); a planted read before wait and an
# access out of bounds are reported with exit status 3
"$llc" -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj "$data/copy_scale.ll" -o "$dir/k.o"
"$lld" -shared "$dir/k.o" -o "$dir/k.hsaco"
"$emu" run "$dir/k.hsaco" --kernel copy --grid 16 --block 64 --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:1000 --sanitize --schedule-seed 7 ||
  fail "the copy kernel failed in hazard mode"
cmp "$dir/in.bin" "$dir/out.bin" || fail "hazard mode: output is not a copy of the input"
"$llc" -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj "$data/early_read.ll" -o "$dir/early.o"
"$lld" -shared "$dir/early.o" -o "$dir/early.hsaco"
head -c 256 /dev/urandom > "$dir/in64.bin"
set +e
"$emu" run "$dir/early.hsaco" --kernel early --grid 1 --block 64 --arg "in:$dir/in64.bin" --arg "out:256:$dir/early.bin" --sanitize 2> "$dir/err.txt"
rc=$?
set -e
[ $rc -eq 3 ] || fail "a read before wait in hazard mode exited with $rc, not 3: $(cat "$dir/err.txt")"
grep -q 'read before wait: kernel early, workgroup (0,0,0), wave 0, lane 0: PC 0x[0-9a-f]* (v_add_u32_e32) reads v[0-9]*, which the load at PC 0x[0-9a-f]* (global_load_dword) writes' "$dir/err.txt" ||
  fail "no read-before-wait report: $(cat "$dir/err.txt")"
[ -s "$dir/early.bin" ] || fail "hazard mode did not write the output file"
"$emu" run "$dir/early.hsaco" --kernel early --grid 1 --block 64 --arg "in:$dir/in64.bin" --arg "out:256:$dir/early.bin" ||
  fail "without --sanitize the planted kernel must run (memory completes at issue)"
set +e
"$emu" run "$dir/k.hsaco" --kernel copy --grid 16 --block 64 --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:1024 --sanitize 2> "$dir/err.txt"
rc=$?
set -e
[ $rc -eq 3 ] && grep -q 'out of bounds: kernel copy.*out-of-bounds global access' "$dir/err.txt" ||
  fail "hazard mode: out of bounds exited with $rc: $(cat "$dir/err.txt")"

# the timeline: --trace writes a Chrome trace that parses and has a slice per instruction of each
# of the workgroup's waves, --timeline-svg a picture, --stats the model's table
"$emu" run "$dir/k.hsaco" --kernel copy --grid 16 --block 128 --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:1000 \
  --trace "$dir/trace.json" --timeline-svg "$dir/timeline.svg" --timeline-workgroup 3 --stats > "$dir/stats.txt" || fail "a run with --trace failed"
python3 - "$dir/trace.json" <<'PY' || fail "the trace is not what Perfetto reads"
import json, sys
doc = json.load(open(sys.argv[1]))
events = doc["traceEvents"]
names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
assert {"wave 0 (SIMD 0)", "wave 1 (SIMD 1)", "SIMD 0 matrix core"} <= names, names
for wave in (0, 1):
    issued = [e for e in events if e["ph"] == "X" and e.get("tid") == wave and e["cat"] != "stall"]
    assert issued and issued[-1]["name"] == "s_endpgm", issued[-1:]
    assert all(e["dur"] > 0 and "pc" in e["args"] for e in issued)
assert "workgroup (3,0,0)" in json.dumps(doc), "not the workgroup asked for"
PY
grep -q '^<svg' "$dir/timeline.svg" && grep -q 'wave 1 (SIMD 1)' "$dir/timeline.svg" || fail "no timeline picture"
grep -q 'MFMA busy' "$dir/stats.txt" && grep -q '^modelled cycles: ' "$dir/stats.txt" || fail "--stats lacks the timeline table: $(cat "$dir/stats.txt")"
pattern='--timeline-workgroup 16: the grid has 16 workgroups' expect_usage run "$dir/k.hsaco" --kernel copy --grid 16 --block 64 \
  --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:1000 --trace "$dir/t.json" --timeline-workgroup 16
"$emu" run "$dir/k.hsaco" --kernel copy --grid 1 --block 64 --arg "in:$dir/in.bin" --arg "out:4000:$dir/out.bin" --arg i32:64 \
  --print-instructions 2> "$dir/listing.txt" || fail "--print-instructions failed"
grep -q 'wg(0,0,0) wave 0 .*: s_endpgm' "$dir/listing.txt" || fail "--print-instructions printed no s_endpgm"

# a kernel that never ends: stopped at its instruction budget (exit 1), the report names it
"$llc" -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj "$data/spin.ll" -o "$dir/spin.o"
"$lld" -shared "$dir/spin.o" -o "$dir/spin.hsaco"
set +e
"$emu" run "$dir/spin.hsaco" --kernel spin --grid 1 --block 64 --arg "out:4:$dir/spin.bin" --arg i32:7 --max-instructions 5000 2> "$dir/err.txt"
rc=$?
set -e
[ $rc -eq 1 ] || fail "a kernel that never ends exited with $rc, not 1"
grep -q 'kernel spin, PC 0x.*workgroup (0,0,0), wave 0: the wave reached its budget of 5000 instructions' "$dir/err.txt" ||
  fail "no budget report: $(cat "$dir/err.txt")"
# ... and by default too (the default budget), without hanging
set +e
timeout 600 "$emu" run "$dir/spin.hsaco" --kernel spin --grid 1 --block 64 --arg "out:4:$dir/spin.bin" --arg i32:7 2> "$dir/err.txt"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "reached its budget of $("$emu" --help | sed -n 's/.*no limit. Default \([0-9]*\).*/\1/p') instructions" "$dir/err.txt" ||
  fail "the default budget did not stop the kernel (status $rc): $(cat "$dir/err.txt")"
# an even n ends: the same kernel runs to completion under the limit
"$emu" run "$dir/spin.hsaco" --kernel spin --grid 1 --block 64 --arg "out:4:$dir/spin.bin" --arg i32:200 --max-instructions 5000 ||
  fail "a kernel that ends within its budget failed"

# usage errors: exit status 2 and a message naming the problem
pattern='no command given' expect_usage
pattern="unknown command 'frobnicate'" expect_usage frobnicate
pattern='--kernel NAME is required' expect_usage run "$dir/k.hsaco" --grid 1 --block 1
pattern="'x' is not a valid number" expect_usage run "$dir/k.hsaco" --kernel copy --grid x --block 1
pattern="unknown kind 'q'" expect_usage run "$dir/k.hsaco" --kernel copy --grid 1 --block 1 --arg q:1
pattern="--max-instructions: 'lots' is not a valid number" expect_usage run "$dir/k.hsaco" --kernel copy --grid 1 --block 1 --max-instructions lots
# a wrong argument list is a failure of the run (exit 1), named precisely
set +e
"$emu" run "$dir/k.hsaco" --kernel copy --grid 1 --block 64 --arg i32:1 2> "$dir/err.txt"; rc=$?
set -e
[ $rc -eq 1 ] && grep -q 'kernel copy takes 3 arguments, 1 given' "$dir/err.txt" || fail "argument count error: $(cat "$dir/err.txt")"
echo "weft-emu CLI: all checks passed"
