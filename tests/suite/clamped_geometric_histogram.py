#!/usr/bin/env python3
"""A histogram of noisy counts, each clamped to a public range (correct).

Implements: records in [0, 8) are keys (floor, clamped to 0..7); the release is the 8 counts,
  each plus two-sided geometric noise with ratio e^{-eps} (the integer Laplace) and then clamped
  to [0, 20], so the outputs have atoms at 0 and 20.
Source: the geometric mechanism (Ghosh, Roughgarden, Sundararajan, STOC 2009) on a histogram
  (Dwork, McSherry, Nissim, Smith 2006: L1 sensitivity 1 under add-remove); clamping to a public
  range is post-processing, as libraries do to keep counts non-negative.
Claim: pure:1, records in [0, 8], dimension 1, 20 records, add-remove.
True privacy loss: exactly eps = 1. Adding a record changes one count by 1; that count's noisy
  value has likelihood ratio e^{±eps} at every integer, clamping merges tails with the same
  bound (the atoms' masses are in ratio at most e), and the other counts do not move.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--keys", type=int, default=8)
    ap.add_argument("--cap", type=int, default=20)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    counts = [0] * a.keys
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        counts[min(max(int(math.floor(x)), 0), a.keys - 1)] += 1
    rand, log, floor = rng.random, math.log, math.floor
    out = []
    for _ in range(int(req["samples"])):
        vals = []
        for c in counts:
            g1 = int(floor(log(1.0 - rand()) / -a.epsilon))
            g2 = int(floor(log(1.0 - rand()) / -a.epsilon))
            vals.append(str(min(max(c + g1 - g2, 0), a.cap)))
        out.append("[" + ", ".join(vals) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
