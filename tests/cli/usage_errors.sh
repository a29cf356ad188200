#!/usr/bin/env bash
# Usage errors: exit status 2, the message on stderr, nothing on stdout.
set -u
weft=$1
fail=0
expect() {  # expect STATUS STDERR_REGEX ARGS...
  local want=$1 regex=$2
  shift 2
  local out err status
  out=$("$weft" "$@" 2>/tmp/weft_cli_err.$$)
  status=$?
  err=$(cat /tmp/weft_cli_err.$$)
  rm -f /tmp/weft_cli_err.$$
  if [ "$status" -ne "$want" ] || ! grep -qE "$regex" <<<"$err" || [ -n "$out" ]; then
    echo "FAIL: weft $* -> status $status (want $want), stderr '$err', stdout '$out'"
    fail=1
  fi
}
expect 2 "no command given"
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "which kernel" ir
expect 2 "no kernel named 'nope'" ir nope
expect 2 "unknown option '--bogus'" ir matmul_tiled --bogus
exit $fail
