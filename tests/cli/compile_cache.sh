#!/usr/bin/env bash
# `weft run` and the compile cache on disk: code objects go to $WEFT_CACHE_DIR and nowhere under
# $HOME; a corrupted entry is compiled again and rewritten (the same bytes as before), not loaded.
set -u
weft=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home WEFT_CACHE_DIR=$work/cache
unset XDG_CACHE_HOME
mkdir -p "$HOME"
fail() { echo "FAIL: $*"; exit 1; }
run() { "$weft" run mfma_tile --device emu:gfx950 --seed 3 >"$work/out" 2>&1 || { cat "$work/out"; fail "weft run failed"; }; }

run
entries=("$WEFT_CACHE_DIR"/*.hsaco)
[ -f "${entries[0]}" ] || fail "no code object in \$WEFT_CACHE_DIR after a run"
[ -z "$(ls -A "$HOME")" ] || fail "weft wrote under \$HOME: $(find "$HOME")"
cp "${entries[0]}" "$work/original"

# Flip the last byte (inside the code object) and run again.
size=$(stat -c %s "${entries[0]}")
last=$(od -An -tu1 -j $((size - 1)) -N1 "${entries[0]}" | tr -d ' ')
printf "$(printf '\\%03o' $(((last + 1) % 256)))" | dd of="${entries[0]}" bs=1 seek=$((size - 1)) conv=notrunc status=none
cmp -s "${entries[0]}" "$work/original" && fail "the corruption did not change the file"
run
grep -q "PASSED" "$work/out" || { cat "$work/out"; fail "the run after the corruption did not pass"; }
cmp -s "${entries[0]}" "$work/original" || fail "the corrupted entry was not rewritten with the compiled code object"
echo "compile cache: entries in \$WEFT_CACHE_DIR only; a corrupted entry was recompiled and rewritten"
