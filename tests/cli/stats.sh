#!/usr/bin/env bash
# weft stats: the table and the JSON for example kernels on both AMD targets, --size, and the
# numbers checked against what the kernels are: mfma_tile issues one MFMA of the shape --size
# names and uses no LDS; matmul_relu's shared A and B tiles are its LDS; neither spills or needs scratch;
# hk_gemm on gfx950's fp8 (--input fp8) issues the f8f6f4 MFMA.
set -u
weft=$1
fail=0
check() {  # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what"
    fail=1
  fi
}
for target in gfx950 gfx942; do
  table=$("$weft" stats mfma_tile --target "$target") || { echo "FAIL: weft stats mfma_tile --target $target exited $?"; exit 1; }
  echo "$table"
  for row in "^mfma_tile on $target\$" "^  VGPRs +[0-9]+ \\([0-9]+ architectural \\+ [0-9]+ AGPRs; [0-9]+ allocated of 512\\)" \
             "^  SGPRs +[0-9]+" "^  LDS +0 bytes per workgroup" "^  scratch +0 bytes per work-item" "^  spills +0 VGPRs, 0 SGPRs" \
             "^  occupancy +[1-8] waves? per SIMD of 8" "^  code +[0-9]+ bytes, [0-9]+ instructions" "^ +1  v_mfma_f32_16x16x16_?f16\$" \
             "^ +1  s_endpgm\$"; do
    check "$target table has /$row/" grep -qE "$row" <<<"$table"
  done
  json=$("$weft" stats mfma_tile --target "$target" --size 32,32,8 --json) || { echo "FAIL: weft stats --json exited $?"; exit 1; }
  echo "$json"
  check "$target JSON parses and has the documented fields" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
for k in ["kernel", "target", "vgprs", "arch_vgprs", "agprs", "allocated_vgprs", "sgprs", "lds_bytes", "scratch_bytes",
          "vgpr_spills", "sgpr_spills", "wavefront_size", "max_flat_workgroup_size", "code_bytes", "instruction_total",
          "occupancy", "instructions"]:
    assert k in s, k
for k in ["waves_per_simd", "max_waves_per_simd", "limited_by", "by_vgprs", "by_sgprs", "by_lds", "by_workgroup",
          "lds_bytes_per_cu", "waves_per_workgroup"]:
    assert k in s["occupancy"], k
assert s["target"] == sys.argv[2] and s["kernel"] == "mfma_tile"
assert s["scratch_bytes"] == 0 and s["vgpr_spills"] == 0 and s["lds_bytes"] == 0
mfmas = sum(n for m, n in s["instructions"].items() if m.startswith("v_mfma_"))
assert mfmas == 1, mfmas  # one 32x32x8 MFMA
assert "v_mfma_f32_32x32x8_f16" in s["instructions"] or "v_mfma_f32_32x32x8f16" in s["instructions"], s["instructions"]
assert sum(s["instructions"].values()) == s["instruction_total"]
assert 1 <= s["occupancy"]["waves_per_simd"] <= 8
' "$json" "$target"
done
# matmul_relu 128x128x64: its A and B tiles in LDS (64x64 float32 each, 32 KiB), on gfx942's 64 KiB.
json=$("$weft" stats matmul_relu --target gfx942 --size 128,128,64 --json) || { echo "FAIL: matmul_relu stats exited $?"; exit 1; }
check "matmul_relu LDS is its two 64x64 float32 tiles" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["lds_bytes"] == 2 * 64 * 64 * 4, s["lds_bytes"]
assert s["occupancy"]["lds_bytes_per_cu"] == 64 * 1024
assert s["scratch_bytes"] == 0
' "$json"
# hk_gemm on gfx950's fp8: the f8f6f4 MFMA 16x16x128, 32 a K step (8 x 4 sub-tiles a wave), none of the 16x16x32.
json=$("$weft" stats hk_gemm --input fp8 --json) || { echo "FAIL: hk_gemm --input fp8 stats exited $?"; exit 1; }
check "hk_gemm on fp8 issues gfx950's f8f6f4 MFMAs" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["instructions"].get("v_mfma_f32_16x16x128_f8f6f4") == 32, s["instructions"]
assert not any(m.startswith("v_mfma_f32_16x16x32") for m in s["instructions"]), s["instructions"]
assert s["scratch_bytes"] == 0
' "$json"
exit $fail
