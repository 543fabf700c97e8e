#!/usr/bin/env python3
"""Write an ibsim topology: a two-level fat tree.

    gen-fattree.py [--leaves L] [--spines S] [--hosts H] [--ports P] [--links K]

L leaf switches with H single-port HCAs each, every leaf joined to every
spine by K parallel links; all switches have P ports.  The first node is a
host ("H-1-1"), so umad2sim attaches there and the tools start from a CA,
as on a real cluster.  Defaults: 16 leaves x 18 hosts, 8 spines, 36-port
switches, 2 links: 288 HCAs + 24 switches.
"""
import argparse
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--leaves", type=int, default=16)
ap.add_argument("--spines", type=int, default=8)
ap.add_argument("--hosts", type=int, default=18)
ap.add_argument("--ports", type=int, default=36)
ap.add_argument("--links", type=int, default=2)
a = ap.parse_args()
if a.hosts + a.spines * a.links > a.ports or a.leaves * a.links > a.ports:
    sys.exit("gen-fattree: not enough switch ports for that shape")

out = []
# hosts first: port 1 of each HCA goes to its leaf
for l in range(1, a.leaves + 1):
    for h in range(1, a.hosts + 1):
        out.append(f'Hca\t1 "H-{l}-{h}"\n[1]\t"L-{l}"[{h}]\n')
for l in range(1, a.leaves + 1):
    rec = [f'Switch\t{a.ports} "L-{l}"']
    for h in range(1, a.hosts + 1):
        rec.append(f'[{h}]\t"H-{l}-{h}"[1]')
    p = a.hosts
    for s in range(1, a.spines + 1):
        for k in range(a.links):
            p += 1
            rec.append(f'[{p}]\t"S-{s}"[{(l - 1) * a.links + k + 1}]')
    out.append("\n".join(rec) + "\n")
for s in range(1, a.spines + 1):
    rec = [f'Switch\t{a.ports} "S-{s}"']
    for l in range(1, a.leaves + 1):
        for k in range(a.links):
            rec.append(f'[{(l - 1) * a.links + k + 1}]\t"L-{l}"'
                       f'[{a.hosts + (s - 1) * a.links + k + 1}]')
    out.append("\n".join(rec) + "\n")
sys.stdout.write("\n".join(out))
