#!/usr/bin/env python3
"""A clamped sum with textbook Laplace noise in doubles, as people write it, speaking the exec protocol.

Releases clamp-sum(D) + Lap(b / epsilon), b = max(|lower|, |upper|) (the add/remove sensitivity
of a sum of records clamped to [lower, upper]), the noise drawn by inverse CDF from
random.Random(seed).random(): epsilon-DP in the real-number model, so the mechanism layer of an
audit should pass it; in binary64 the doubles it can print depend on the sum (Mironov 2012), so
the floating-point layer should not.

    audit run --exec 'python3 examples/exec/textbook_laplace_sum.py' --claim pure:1 --record-range -5:5 --dataset-size 10

--noise-factor F multiplies the noise scale (default 1): F = 0.5 is the bug "noise halved", true
epsilon 2, which the mechanism layer should find. --cost-us U spends about U microseconds of CPU per
release (a stand-in for a slow library adapter; the output does not change). --grid G rounds each
release to a multiple of G (e.g. 2^-10 = 0.0009765625): a post-processing of the real-valued
mechanism, so still epsilon-DP, and every printed double is then a function of the rounded value,
so the floating-point layer has nothing left to find (up to the chance, about 2^-40 per release,
that a float rounding error moves a value across a grid midpoint).
"""
import argparse
import json
import math
import random
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--lower", type=float, default=-5.0)
    ap.add_argument("--upper", type=float, default=5.0)
    ap.add_argument("--noise-factor", type=float, default=1.0)
    ap.add_argument("--cost-us", type=float, default=0.0)
    ap.add_argument("--grid", type=float, default=0.0)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    total = 0.0
    for r in req["dataset"]:
        x = float(r[0] if isinstance(r, list) else r)
        total += min(max(x, a.lower), a.upper)
    scale = a.noise_factor * max(abs(a.lower), abs(a.upper)) / a.epsilon
    out = []
    cost = a.cost_us * 1e-6
    for _ in range(int(req["samples"])):
        if cost > 0:
            end = time.perf_counter() + cost
            while time.perf_counter() < end:
                pass
        u = rng.random() - 0.5
        noise = -scale * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))
        y = total + noise
        if a.grid > 0:
            y = round(y / a.grid) * a.grid
        out.append(repr(y))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
