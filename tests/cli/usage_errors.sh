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
expect 2 "needs an AMD target" dump matmul_relu --after=asm --target sm_90
expect 2 "needs an NVIDIA target" dump matmul_relu --after=cuda
expect 2 "stats reads AMD code objects" stats matmul_relu --target sm_90
expect 2 "has a fixed shape; it takes no --size" stats add_one_flat --size 64,64,64
expect 2 "size is M,N,K" stats matmul_relu --size 64,64
expect 2 "no kernel named 'nope'" stats nope
expect 2 "stats: --input is hk_gemm's" stats matmul_relu --input fp8
expect 2 "which suite or kernel" bench
expect 2 "a size is N or MxNxK" bench gemm --sizes 64x64
expect 2 "takes a positive integer" bench gemm --sizes 0
expect 2 "takes a positive integer" bench gemm --repetitions many
expect 2 "unknown option '--bogus'" bench gemm --bogus
expect 1 "no suite or kernel named 'nope'" bench nope
expect 1 "no suite or kernel named 'nope'" bench nope --no-framework-peers
expect 1 "no suite or kernel named 'nope'" bench nope --no-hold
if [ "${2:-}" = llvm ]; then
  expect 2 "no pass named 'bogus'" dump matmul_relu --after=bogus
  expect 2 "say what to print" dump matmul_relu
  expect 2 "has no host entry point" run scale_n
  expect 2 "'float8' is not float32" run matmul_relu --dtype float8
  expect 2 "unknown option '--grid'" run matmul_relu --grid 4
  expect 2 "moe_dispatch's --size is T,E,k,D" run moe_dispatch --size 3,4
  expect 2 "moe_route_backward takes no --dtype" run moe_route_backward --dtype float32
  expect 2 "moe_layer's --size is T,E,k,D,F" run moe_layer --size 37,8,2,64
  expect 2 "moe_layer takes no --dtype" run moe_layer --dtype float32
  expect 2 "moe_combine's rows \\(--dtype\\) are bfloat16 or float32" run moe_combine --dtype float16
  expect 2 "epilogue is hopper_gemm's" run hk_gemm --epilogue bias
  expect 2 "input is hk_gemm's and hopper_gemm's" run matmul_relu --input fp8
  expect 2 "hk_gemm's --input 'float16' is not bfloat16, fp8 or float8_e4m3 \\(gfx950's fp8\\)" run hk_gemm --input float16
  expect 2 "hk_gemm takes M, N >= 1 and K >= 16, a multiple of 16" run hk_gemm --input fp8 --size 64,64,24
  expect 2 "epilogue 'tanh' is not bias, relu, gelu, scale=tensor or scale=row" run hopper_gemm --epilogue bias,tanh
  expect 2 "input 'float16' is not bfloat16 or float8_e4m3fn" run hopper_gemm --input float16
  expect 2 "hopper_gemm's --schedule 'pipelined' is not cooperative, cooperative-64b, ping-pong or ping-pong-wide" run hopper_gemm --schedule pipelined
  expect 2 "hk_gemm's --schedule 'ping-pong-wide' is not ping-pong or pipelined" run hk_gemm --schedule ping-pong-wide
  expect 2 "schedule is hk_gemm's \\(ping-pong or pipelined\\) and hopper_gemm's" run matmul_relu --schedule ping-pong
  expect 2 "takes M, N >= 1 and K >= 16, a multiple of 16" run hopper_gemm --input float8_e4m3fn --size 64,64,24
  expect 2 "mask is flash_attention's \\(causal or none\\)" run matmul_relu --mask causal
  expect 2 "mask 'diagonal' is not causal or none" run flash_attention --mask diagonal
  expect 2 "flash_attention's --size is BH,SQ,SK or BH,SQ,SK,D" run flash_attention --size 2,3
  expect 2 "flash_attention takes BH, SQ, SK >= 1" run flash_attention --size 2,0,4
  expect 2 "only moe_layer runs over a mesh of devices" run moe_route --device "emu:gfx950 x 4"
  expect 2 "device count divides T and E" run moe_layer --device "emu:gfx950 x 3" --size 64,8,2,64,64
  expect 2 "device count divides T and E" run moe_layer --device "emu:gfx950 x 2x2" --size 64,8,2,64,64
fi
# A failure while working (not a usage error) exits with 1.
if [ "${2:-}" = llvm ]; then
  expect 1 "M, N and K must be positive multiples of the 64-wide tile" run matmul_relu --size 100,64,64
  expect 1 "unknown device|emulator runs gfx942 and gfx950" run matmul_relu --device emu:gfx1100
  expect 1 "M, N and K must be positive multiples of the 64-wide tile" stats matmul_relu --size 100,64,64
  expect 1 "tokens must be >= 1, got 0" run moe_dispatch --size 0,8,2,64
  expect 1 "hidden \\(D\\) must be a multiple of 8" run moe_layer --size 37,8,2,60,64
  expect 1 "is not sizes like 4 or 2x2" run moe_layer --device "emu:gfx950 x 0"
  expect 1 "flash_attention: a head dimension of 96; the kernel takes 64 or 128" run flash_attention --size 1,16,16,96
  expect 1 "hopper_gemm: needs an sm_90 \\(Hopper\\) device, this one is gfx950" run hopper_gemm --input float8_e4m3fn --epilogue scale=row,gelu --size 128,128,64
fi
exit $fail
