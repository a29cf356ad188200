#!/usr/bin/env bash
# A/B timing of this tree against a base tree on an NVIDIA GPU (no LLVM needed), rounds
# alternating so that drift in clocks or neighbours touches both alike. The lent machines get a
# copy of the working tree without .git: make the base a tarball here and carry it, e.g.
#   git archive <base commit> | gzip > .devdeps/base.tgz
#   tools/nvidia-ab.sh .devdeps/base.tgz "$OUT" route+align --device cuda --repetitions 200 --no-framework-peers
# Builds `weft` in both trees (build-ab, Release, -DWEFT_LLVM=OFF), runs `weft bench ARGS...
# --json OUT/ab-<tree>-<round>.json` AB_ROUNDS times (default 2) for each, and prints one line a
# benchmark line: tree, round, size, median and p10-p90 (microseconds), the check.
# AB_NEW_ARGS: more arguments for this tree's runs only (an option the base does not know, e.g.
# --no-hold against a base from before session 37, whose calls started on an idle GPU).
# Prebuilt binaries (tools/nvidia-prebuild.sh) save the job its builds: BASE may be a `weft`
# executable instead of a tarball (a name not ending in .tgz or .tar.gz), and AB_NEW_WEFT names
# this tree's; each one given is not built.
set -u
if [ $# -lt 3 ]; then
  echo "usage: tools/nvidia-ab.sh BASE.tgz OUT_DIR BENCH_ARGS..." >&2
  exit 2
fi
base_tgz=$1 out=$2
shift 2
[ -f "$base_tgz" ] || { echo "nvidia-ab: no base tarball or binary '$base_tgz'" >&2; exit 2; }
out=$(mkdir -p "$out" && cd "$out" && pwd) || exit 2  # (absolute: the builds write their logs there from their trees)
rm -f "$out"/ab-*.json "$out"/ab-*.txt  # (the table lists every ab-*.json there: none from an earlier run)
# The lent machines have no msgpack-cxx: its headers travel with the tree in .devdeps (docs/nvidia.md).
[ -d .devdeps/include ] && export CPLUS_INCLUDE_PATH="$PWD/.devdeps/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
build() {  # build TREE NAME: its weft, or exit
  if ! (cd "$1" && cmake -S . -B build-ab -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_LLVM=OFF >"$out/configure-$2.log" 2>&1 &&
        cmake --build build-ab -j "$(nproc)" --target weft >"$out/build-$2.log" 2>&1); then
    echo "nvidia-ab: the $2 tree did not build (see build-$2.log)" >&2
    grep -m5 -A5 error "$out/build-$2.log" >&2
    exit 1
  fi
}
if ! case "$base_tgz" in *.tgz | *.tar.gz) true ;; *) false ;; esac then
  base_weft=$base_tgz  # a prebuilt binary
else
  base=$(mktemp -d)
  tar xzf "$base_tgz" -C "$base"
  build "$base" base
  base_weft=$base/build-ab/tools/weft
fi
new_weft=${AB_NEW_WEFT:-}
if [ -z "$new_weft" ]; then
  build "$PWD" new
  new_weft=$PWD/build-ab/tools/weft
fi
[ -f "$new_weft" ] || { echo "nvidia-ab: no binary '$new_weft' (AB_NEW_WEFT)" >&2; exit 2; }
for w in base_weft new_weft; do  # (a name without a slash would be looked up on PATH)
  case ${!w} in */*) ;; *) printf -v "$w" './%s' "${!w}" ;; esac
done
chmod +x "$base_weft" "$new_weft" 2>/dev/null || true
for round in $(seq "${AB_ROUNDS:-2}"); do
  for name in base new; do
    weft=$([ $name = new ] && echo "$new_weft" || echo "$base_weft")
    extra=$([ $name = new ] && echo "${AB_NEW_ARGS:-}" || true)
    # shellcheck disable=SC2086  # (AB_NEW_ARGS: words)
    "$weft" bench "$@" $extra --json "$out/ab-$name-$round.json" >"$out/ab-$name-$round.txt" 2>&1 || echo "nvidia-ab: $name round $round failed (see ab-$name-$round.txt)" >&2
  done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
print("tree round size median_us p10-p90_us check")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "ab-*.json"))):
    tree, rnd = os.path.basename(path)[3:-5].rsplit("-", 1)
    for r in json.load(open(path))["results"]:
        s = sorted(r["weft"]["seconds"])
        n = len(s)
        print(tree, rnd, r["size"], "%.2f" % (r["weft"]["median_s"] * 1e6), "%.2f-%.2f" % (s[n // 10] * 1e6, s[9 * n // 10] * 1e6), (r.get("check") or {}).get("ok"))
PY
