#!/usr/bin/env python3
"""Discrete Laplace on a bounded integer sum (correct, meets its claim with equality).

Implements: records in [0, 10] (e.g. visits per person) clamped and rounded to integers,
  summed (sensitivity 10 under add/remove), plus discrete Laplace noise with scale t = 10/eps,
  P(k) proportional to e^{-|k|/t}, drawn as sign x geometric magnitude with the (sign = -1,
  magnitude = 0) case rejected (Canonne-Kamath-Steinke's Algorithm 2; compare
  discrete_laplace_double_zero.py, which omits the rejection).
Source: Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS
  2020), Algorithm 2; OpenDP and Tumult Analytics release integer sums this way.
Claim: pure:1, records in [0, 10], dimension 1, 20 records, add-remove.
True privacy loss: exactly eps = 1: adding a record 10 shifts the sum by 10 = t eps, and
  P(k)/P(k + 10) = e^{10/t} = e^eps for every k >= 0 (equality). Integer output.
"""
import argparse, json, math, random, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--upper", type=int, default=10)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    total = sum(int(round(min(max(float(r[0] if isinstance(r, list) else r), 0.0), a.upper)))
                for r in req["dataset"])
    alpha = math.exp(-a.epsilon / a.upper)  # e^{-1/t}
    rand = rng.random
    out = []
    for _ in range(int(req["samples"])):
        while True:
            m = 0
            while rand() < alpha:
                m += 1
            neg = rand() < 0.5
            if not (neg and m == 0):  # reject -0 so that 0 is not counted twice
                break
        out.append(str(total - m if neg else total + m))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
