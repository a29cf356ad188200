#!/usr/bin/env bash
# Installs what weft needs to build and test, from Debian's packages. Idempotent, and quiet
# when everything is already there. Run as root (CI) or with sudo available.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  doctest-dev libbenchmark-dev libeigen3-dev libmsgpack-cxx-dev
  llvm-22 llvm-22-dev lld-22 liblld-22-dev llvm-22-tools
  zlib1g-dev libzstd-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
