#!/usr/bin/env python3
"""A Laplace count written with the Python standard library only, speaking dp-audit's exec protocol.

Releases |D| + Lap(1/epsilon): epsilon-DP under add/remove-one neighbors (a count has
sensitivity 1). Audit it with

    audit run --exec 'python3 examples/exec/stdlib_laplace_count.py --epsilon 1' --claim pure:1

Protocol: one JSON request on stdin, {"dataset": [...], "samples": N, "seed": S}; N lines on
stdout, one number each. All randomness comes from random.Random(S), so a dp-audit run is
reproducible from its --seed.

--scale-factor F multiplies the noise scale (default 1). F < 1 is a deliberate bug: the noise is
too small for the stated epsilon, and an audit of the pure:EPS claim should find it.
"""
import argparse
import json
import math
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--scale-factor", type=float, default=1.0)
    args = ap.parse_args()
    if not (args.epsilon > 0 and args.scale_factor > 0):
        sys.exit(f"--epsilon {args.epsilon} and --scale-factor {args.scale_factor} must be > 0")

    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    count = float(len(req["dataset"]))
    scale = args.scale_factor / args.epsilon
    # Inverse-CDF Laplace draw: u uniform on (-1/2, 1/2), x = -scale * sign(u) * ln(1 - 2|u|).
    # rng.random() is in [0, 1), so 1 - 2|u| is in (0, 1] and the logarithm is finite.
    rand, log, copysign = rng.random, math.log, math.copysign
    out = []
    for _ in range(req["samples"]):
        u = rand() - 0.5
        out.append(repr(count - scale * copysign(1.0, u) * log(1.0 - 2.0 * abs(u))))
    # repr is the shortest string that reads back to the same float, so dp-audit sees exact bits.
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
