#!/usr/bin/env python3
"""Randomized response on each bit of a record at the whole budget (composition over the bits
not accounted).

Implements: a record is 4 bits (each coordinate rounded to 0 or 1); each bit of each record is
  kept with probability e^eps / (1 + e^eps) and flipped otherwise; the release is the number of
  reported ones per bit position (4 counts). Claimed eps-DP per record, but each bit spends eps:
  a record's 4 bits are 4 eps (the budget should be eps/4 per bit, as in RAPPOR's per-bit
  accounting, Erlingsson, Pihur, Korolova, CCS 2014).
Source: Erlingsson, Pihur, Korolova, "RAPPOR" (CCS 2014), and Wang, Blocki, Li, Jha (USENIX
  Security 2017) on per-bit budgets of unary encodings: each of the d bits a record sets must
  share the budget.
Claim: pure:1, records in [0, 1], dimension 4, 10 records, replace-one.
True privacy loss: 4 (= 4 eps): replacing a record 0000 by 1111 changes all 4 bits; the counts
  of the 4 positions are independent randomized responses, and the loss is 4 eps on the output
  where all four flipped bits are reported as their values.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    recs = []
    for r in req["dataset"]:
        r = r if isinstance(r, list) else [r]
        recs.append([1 if float(v) >= 0.5 else 0 for v in r])
    d = len(recs[0]) if recs else 4
    keep = math.exp(a.epsilon) / (1.0 + math.exp(a.epsilon))  # BUG: eps per bit, not eps/d
    rand = rng.random
    out = []
    for _ in range(int(req["samples"])):
        counts = [0] * d
        for rec in recs:
            for j, b in enumerate(rec):
                counts[j] += b if rand() < keep else 1 - b
        out.append("[" + ", ".join(str(c) for c in counts) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
