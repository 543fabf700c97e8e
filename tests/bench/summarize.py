#!/usr/bin/env python3
"""Medians of "stack test figure value" lines: ours, reference, ratio."""
import statistics
import sys
from collections import defaultdict

vals = defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 4:
        continue
    try:
        vals[(f[1], f[2], f[0])].append(float(f[3]))
    except ValueError:
        pass
keys = sorted({(t, m) for (t, m, _) in vals})
print(f"{'test':<10}{'figure':<34}{'ours':>12}{'reference':>12}{'ours/ref':>10}")
for t, m in keys:
    o, r = vals.get((t, m, "ours")), vals.get((t, m, "ref"))
    mo = statistics.median(o) if o else float("nan")
    mr = statistics.median(r) if r else float("nan")
    ratio = mo / mr if o and r and mr else float("nan")
    print(f"{t:<10}{m:<34}{mo:>12.3f}{mr:>12.3f}{ratio:>10.2f}")
print("(medians over rounds; times: lower is better; rates and Gb/s: higher is better)")
