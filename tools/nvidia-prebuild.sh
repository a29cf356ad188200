#!/usr/bin/env bash
# Builds `weft` for the lent NVIDIA machines here, so that a job there spends its device time
# timing, not compiling (two trees took minutes of a lease's 30; here ccache makes a rebuild of
# an unchanged revision take seconds). Each REV is a git revision, or `.` for the working tree;
# its binary (Release, -DWEFT_LLVM=OFF, stripped) goes to OUT_DIR/weft-<name>, where <name> is
# the revision's short hash (`new` for `.`). Usage:
#   tools/nvidia-prebuild.sh OUT_DIR REV...
#   tools/nvidia-prebuild.sh .devdeps/bin 9a84ada .     # weft-9a84ada and weft-new
# Then carry OUT_DIR (git-ignored under .devdeps) and pass the binaries to tools/nvidia-ab.sh.
# The binaries link only glibc (2.34 or later), libstdc++ (GCC 11's or later) and libgcc_s (GCC
# 12's or later: its _Float16 helpers), per `objdump -T`: the CUDA driver and NVRTC are dlopen'ed where they run. Whether a binary built on this machine's image runs on the lent
# image is checked by the first job that uses one (docs/nvidia.md).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: tools/nvidia-prebuild.sh OUT_DIR REV..." >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
root=$(git rev-parse --show-toplevel)
launcher=$(command -v ccache >/dev/null && echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache" || true)
build() {  # build SOURCE_DIR NAME
  local src=$1 name=$2
  export CCACHE_BASEDIR=$src  # (paths relative to the tree: a fresh temporary tree still hits the cache)
  cmake -S "$src" -B "$src/build-prebuilt" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_LLVM=OFF $launcher >"$out/configure-$name.log" 2>&1 ||
    { echo "nvidia-prebuild: $name did not configure (see $out/configure-$name.log)" >&2; exit 1; }
  cmake --build "$src/build-prebuilt" -j "$(nproc)" --target weft >"$out/build-$name.log" 2>&1 ||
    { echo "nvidia-prebuild: $name did not build (see $out/build-$name.log)" >&2; grep -m5 -A5 error "$out/build-$name.log" >&2; exit 1; }
  strip -o "$out/weft-$name" "$src/build-prebuilt/tools/weft"
  echo "$out/weft-$name"
}
for rev in "$@"; do
  if [ "$rev" = . ]; then
    build "$root" new
    continue
  fi
  hash=$(git -C "$root" rev-parse --short "$rev^{commit}")  # (a tag names its commit)
  tree=$(mktemp -d)
  git -C "$root" archive "$hash" | tar x -C "$tree"
  build "$tree" "$hash"
  rm -rf "$tree"
done
