#!/usr/bin/env python3
"""Peer for bench/bench_rewrite.cpp: tinygrad's graph_rewrite with its `symbolic` rules on the
same generated kernel graph (N stores whose indices carry tiled-launch structure).

  PYTHONPATH=/path/to/tinygrad python3 bench/peers/tinygrad_simplify.py 256 2048

Prints one line per size: input nodes, best time of several fresh runs, nodes/s. tinygrad is
not a dependency of weft; point PYTHONPATH at a checkout to run this.
"""
import sys
import time

from tinygrad.dtype import dtypes
from tinygrad.uop.ops import AxisType, UOp, graph_rewrite
from tinygrad.uop.symbolic import symbolic


def generated_kernel(stores: int, salt: int) -> UOp:
  T = 64
  inp = UOp.placeholder((1 << 22,), dtypes.float32, 1)
  out = UOp.placeholder((1 << 22,), dtypes.float32, 0)
  g = UOp.range(1024, 0, AxisType.GLOBAL)
  l = UOp.range(T, 1, AxisType.LOCAL)
  k = UOp.range(16, 2, AxisType.LOOP)
  effects = []
  for s in range(stores):
    linear = g * T + l
    row, col = linear // T, linear % T
    offset = s * 7919 + salt * 1000003
    idx = ((row * T + col) * 16 + k + offset) % (1 << 22)
    src = ((idx // 16) // 4) * 64 + idx % 64 + (k * 2 + 1) // 2 - k
    effects.append(out.index(idx).store(inp.index(src % (1 << 22)).load() * 2.0).end(g, l, k))
  return UOp.sink(*effects)


def main() -> None:
  sizes = [int(a) for a in sys.argv[1:]] or [256, 2048]
  salt = 1
  for n in sizes:
    best = float("inf")
    nodes = 0
    for _ in range(3):
      graph = generated_kernel(n, salt)
      salt += 1
      nodes = len(graph.toposort())
      t0 = time.perf_counter()
      graph_rewrite(graph, symbolic)
      best = min(best, time.perf_counter() - t0)
    print(f"tinygrad symbolic stores={n} nodes={nodes} time={best * 1e3:.1f} ms nodes/s={nodes / best / 1e3:.1f}k")


if __name__ == "__main__":
  main()
