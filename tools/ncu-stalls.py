#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source page: for each kernel of

    ncu -i REPORT.ncu-rep --page source --csv --print-source sass > SOURCE.csv

prints the warp-state samples by stall reason, by SASS opcode, and the instructions that hold
the most samples with their two largest reasons. The report must have been taken with source
counters (`ncu --set full`, or `--section SourceCounters`). Usage:

    tools/ncu-stalls.py SOURCE.csv [--top N]

Session 38 found with it that ptxas had moved prefetched `ld.global.nc` loads to their first use
(docs/PERF.md); it is short on purpose, to print on the lent GPU machines, which return only a
few files.
"""
import argparse
import collections
import csv
import io
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"


def number(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def kernels(lines):
    """(name, header, rows) for each kernel's table: each starts with a "Kernel Name" line."""
    starts = [i for i, line in enumerate(lines) if line.startswith('"Kernel Name"')] + [len(lines)]
    for begin, end in zip(starts, starts[1:]):
        name = next(csv.reader([lines[begin]]))[1]
        table = list(csv.reader(io.StringIO("\n".join(lines[begin + 1:end]))))
        if table:
            header = table[0]
            yield name, header, [row for row in table[1:] if len(row) == len(header)]


def opcode(source):
    words = source.split()
    if words and words[0].startswith("@"):  # a predicate
        words = words[1:]
    return words[0] if words else "?"


def report(name, header, rows, top, out):
    if SAMPLES not in header:
        print(f"== {name}: no '{SAMPLES}' column (take the report with source counters)", file=out)
        return
    samples, source = header.index(SAMPLES), header.index("Source")
    reasons = [i for i, column in enumerate(header) if column.startswith("stall_") and "Not Issued" not in column]
    total = sum(number(row[samples]) for row in rows) or 1.0
    print(f"== {name}: {len(rows)} instructions, {total:.0f} samples", file=out)
    by_reason = collections.Counter({header[i][6:]: sum(number(row[i]) for row in rows) for i in reasons})
    print("  reasons: " + ", ".join(f"{r} {100 * v / total:.0f}%" for r, v in by_reason.most_common(8) if v), file=out)
    by_opcode = collections.Counter()
    for row in rows:
        by_opcode[opcode(row[source])] += number(row[samples])
    print("  opcodes: " + ", ".join(f"{o} {100 * v / total:.0f}%" for o, v in by_opcode.most_common(10) if v), file=out)
    heaviest = sorted(range(len(rows)), key=lambda i: -number(rows[i][samples]))[:top]
    for i in sorted(heaviest):
        row = rows[i]
        why = sorted(((number(row[j]), header[j][6:]) for j in reasons), reverse=True)[:2]
        print(f"  {i:5d} {100 * number(row[samples]) / total:5.1f}%  {row[source].strip()[:48]:48s} " +
              " ".join(f"{r}:{v:.0f}" for v, r in why if v), file=out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source_csv")
    parser.add_argument("--top", type=int, default=20, help="instructions to list a kernel (default 20)")
    args = parser.parse_args(argv)
    with open(args.source_csv) as f:
        lines = f.read().splitlines()
    found = False
    for name, header, rows in kernels(lines):
        found = True
        report(name, header, rows, args.top, sys.stdout)
    if not found:
        sys.exit(f"ncu-stalls: no kernel table in {args.source_csv} (expected ncu's --page source --csv output)")


if __name__ == "__main__":
    main(sys.argv[1:])
