#!/usr/bin/env bash
# weft layout: the catalog listing, tables whose cells are checked against the sources'
# formulas (computed here, not pasted output), SVG pictures, and the usage errors.
set -u
weft=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# The cell of `column` (0-based) on the line of `line_name` (e.g. "lane 16") of a table.
cell() {  # cell FILE LINE_NAME COLUMN
  grep "^$2:" "$1" | sed 's/^[^:]*: //' | sed 's/) (/)\n(/g' | sed -n "$(($3 + 1))p"
}

"$weft" layout >"$work/list" || bad "weft layout exited $?"
for name in mfma.gfx950.16x16x32.bf16.A mfma.gfx942.32x32x8.f16.C mma.m16n8k16.bf16.B lds_dma.16; do
  grep -q "^$name	" "$work/list" || bad "the listing lacks $name"
done
grep -q "^st_16x32\.f32|f16|bf16\.ROWSxCOLS	" "$work/list" || bad "the listing lacks the st_16x32 pattern"

# gfx950 16x16x32 bf16 A (CDNA4 ISA): lane l holds row l % 16, k 8 * (l / 16) + register.
"$weft" layout mfma.gfx950.16x16x32.bf16.A --svg "$work/a.svg" >"$work/a" || bad "mfma A exited $?"
head -1 "$work/a" | grep -q "(register 8, lane 64) -> (row 16, col 32)" || bad "mfma A header: $(head -1 "$work/a")"
for lane in 0 5 16 31 47 63; do
  for reg in 0 7; do
    want="($((lane % 16)), $((8 * (lane / 16) + reg)))"
    got=$(cell "$work/a" "lane $lane" $reg)
    [ "$got" = "$want" ] || bad "mfma A lane $lane register $reg: $got, want $want"
  done
done
[ "$(grep -c '^lane ' "$work/a")" -eq 64 ] || bad "mfma A: not 64 lane lines"

# mfma 32x32 C (CDNA3 table): row 8 * (gpr / 4) + 4 * (lane / 32) + gpr % 4, column lane % 32.
"$weft" layout mfma.gfx942.32x32x8.f16.C >"$work/c" || bad "mfma C exited $?"
for lane in 0 33; do
  for gpr in 0 5 15; do
    want="($((8 * (gpr / 4) + 4 * (lane / 32) + gpr % 4)), $((lane % 32)))"
    got=$(cell "$work/c" "lane $lane" $gpr)
    [ "$got" = "$want" ] || bad "mfma C lane $lane gpr $gpr: $got, want $want"
  done
done

# mma.m16n8k16 C (PTX): row groupID + 8 * (i >= 2), column 2 * threadID_in_group + i % 2.
"$weft" layout mma.m16n8k16.f16.C >"$work/mma" || bad "mma C exited $?"
for lane in 0 5 31; do
  for i in 0 1 2 3; do
    want="($((lane / 4 + 8 * (i / 2))), $((2 * (lane % 4) + i % 2)))"
    got=$(cell "$work/mma" "lane $lane" $i)
    [ "$got" = "$want" ] || bad "mma C lane $lane element $i: $got, want $want"
  done
done

# st_16x32 bf16 (HipKittens): byte b = 2 * (32 r + c), swizzled b ^ (((b % 1024) >> 9) << 5).
"$weft" layout st_16x32.bf16.16x32 --svg "$work/st.svg" >"$work/st" || bad "st_16x32 exited $?"
for r in 0 7 8 15; do
  for c in 0 3 16 31; do
    b=$((2 * (32 * r + c)))
    want="($(((b ^ (((b % 1024) >> 9) << 5)) / 2)))"
    got=$(cell "$work/st" "row $r" $c)
    [ "$got" = "$want" ] || bad "st_16x32 row $r col $c: $got, want $want"
  done
done

# LDS DMA, 16 bytes a lane: lane l's byte j at 16 l + j.
"$weft" layout lds_dma.16 >"$work/dma" || bad "lds_dma exited $?"
[ "$(cell "$work/dma" "lane 3" 5)" = "(53)" ] || bad "lds_dma.16 lane 3 byte 5: $(cell "$work/dma" "lane 3" 5)"

# The pictures: well-formed SVG, one rect per matrix or tile cell.
svg_ok() {  # svg_ok FILE RECTS
  head -c 5 "$1" | grep -q '^<svg ' || bad "$1 does not start with <svg"
  [ "$(tail -n 1 "$1")" = "</svg>" ] || bad "$1 does not end with </svg>"
  [ "$(grep -o '<rect ' "$1" | wc -l)" -eq "$2" ] || bad "$1: $(grep -o '<rect ' "$1" | wc -l) rects, want $2"
  [ "$(grep -o '<text' "$1" | wc -l)" -eq "$(grep -o '</text>' "$1" | wc -l)" ] || bad "$1: unbalanced <text>"
}
svg_ok "$work/a.svg" $((16 * 32))
svg_ok "$work/st.svg" $((16 * 32))
grep -q '>16/0</text>' "$work/a.svg" || bad "a.svg does not label lane 16 register 0"
"$weft" layout waves.2x4 --svg "$work/w.svg" >/dev/null || bad "waves.2x4 --svg exited $?"
svg_ok "$work/w.svg" 8

# Usage errors: status 2, the reason on stderr, nothing on stdout.
expect2() {  # expect2 STDERR_REGEX ARGS...
  local regex=$1
  shift
  out=$("$weft" "$@" 2>"$work/err")
  status=$?
  if [ $status -ne 2 ] || ! grep -qE -e "$regex" "$work/err" || [ -n "$out" ]; then
    bad "weft $* -> status $status, stderr '$(cat "$work/err")'"
  fi
}
expect2 "no layout named 'nope'.*the catalog:" layout nope
expect2 "mfma.gfx950.16x16x32.bf16.A" layout nope
expect2 "no 16x16x32 bfloat16 MFMA on gfx942" layout mfma.gfx942.16x16x32.bf16.A
expect2 "powers of two and multiples of the 16 x 32 subtile" layout st_16x32.bf16.24x32
expect2 "--svg needs a layout name" layout --svg "$work/x.svg"
expect2 "unknown option '--bogus'" layout lds_dma.4 --bogus
expect2 "more than one layout" layout lds_dma.4 lds_dma.2
exit $fail
