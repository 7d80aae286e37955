#!/usr/bin/env python3
"""Binary randomized response at exactly e^eps odds (correct, equality case).

Implements (local DP): each record in [0, 1] is a bit v = 1 if x >= 0.5 else 0; report v with
  probability e^eps/(1 + e^eps), else 1 - v. Output: the vector of the n reports.
Source: Warner, "Randomized Response" (JASA 1965); the eps-LDP calibration is Dwork & Roth,
  "The Algorithmic Foundations of Differential Privacy" (2014), Sec. 3.2, and Kairouz et al.
  (2014) show it optimal for binary data; diffprivlib's mechanisms.Binary is this mechanism.
Claim: pure:1, records in [0, 1], dimension 1, 10 records, replace-one.
True privacy loss: exactly eps = 1. Flipping one person's bit swaps the probabilities
  e^eps/(1 + e^eps) and 1/(1 + e^eps) of that report: the ratio is e^eps on the events
  "report_i = v" (equality); the other reports are unchanged.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    bits = [1 if float(r[0] if isinstance(r, list) else r) >= 0.5 else 0 for r in req["dataset"]]
    p = math.exp(a.epsilon) / (1.0 + math.exp(a.epsilon))
    rand = rng.random
    out = []
    for _ in range(int(req["samples"])):
        out.append("[" + ", ".join(str(b if rand() < p else 1 - b) for b in bits) + "]")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
