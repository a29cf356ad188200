#!/usr/bin/env bash
# cmake/compiler_sources_hash.cmake, the build identity in the compile cache's key: any change to
# a compiler source gives another identity; an unchanged tree leaves the generated file alone
# (nothing is recompiled).
set -u
cmake=$1 script=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/src/passes"
printf 'int a() { return 1; }\n' >"$work/src/a.cpp"
printf 'int b() { return 2; }\n' >"$work/src/passes/b.cpp"
printf '%s\n' "$work/src/a.cpp" "$work/src/passes/b.cpp" >"$work/list"
hash() { "$cmake" -DROOT="$work/src" -DLIST="$work/list" -DOUTPUT="$work/id.cpp" -P "$script" || fail "the script failed"; grep -o '"[0-9a-f]\{64\}"' "$work/id.cpp"; }
first=$(hash)
[ -n "$first" ] || fail "no 64-digit identity in the generated file"
stamp=$(stat -c %Y.%y "$work/id.cpp")
sleep 1
[ "$(hash)" = "$first" ] || fail "the same sources gave another identity"
[ "$(stat -c %Y.%y "$work/id.cpp")" = "$stamp" ] || fail "an unchanged identity rewrote the generated file"
printf 'int b() { return 3; }\n' >"$work/src/passes/b.cpp"   # one character
second=$(hash)
[ "$second" != "$first" ] || fail "an edited source kept the identity"
mv "$work/src/passes/b.cpp" "$work/src/passes/c.cpp"          # same contents, another path
printf '%s\n' "$work/src/a.cpp" "$work/src/passes/c.cpp" >"$work/list"
[ "$(hash)" != "$second" ] || fail "a renamed source kept the identity"
echo "build identity: changes with a source's contents and path, stable otherwise"
