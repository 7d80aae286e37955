#!/usr/bin/env python3
"""dp-audit exec adapter for IBM's diffprivlib: the differentially private mean `tools.mean`.

Every release is one call of

    diffprivlib.tools.mean(dataset, epsilon=EPS, bounds=(LO, HI), random_state=...)

which clips the records to [LO, HI] and adds Laplace noise of sensitivity (HI - LO)/n (n = the
number of records), truncated to [LO, HI]. diffprivlib states this as EPS-DP for datasets of a
known size n that differ in one record: audit it under replace-one neighbors,

    audit run --exec 'python3 examples/exec/diffprivlib_mean.py --epsilon 1 --bounds 0:1' \
        --claim pure:1 --neighbors replace-one --record-range 0:1

Install: pip install diffprivlib==0.6.6 "scikit-learn>=1.4,<1.8" (the project's one pin, as
tests/python.rs installs it: diffprivlib 0.6.6 needs a scikit-learn below 1.8).

Seeding: diffprivlib takes a `random_state`; the adapter builds a numpy RandomState (MT19937)
from the request's seed through numpy's SeedSequence (all 64 bits of the seed are used), so a
dp-audit run is reproducible from its --seed. Each release gets a fresh BudgetAccountant: the
releases are independent runs of the mechanism, not one budget spent 50 000 times.

Protocol: one JSON request on stdin, {"dataset": [...], "samples": N, "seed": S}; N lines on
stdout, one number each.
"""
import argparse
import json
import sys
import warnings


def parse_bounds(text):
    lo, sep, hi = text.partition(":")
    try:
        lo, hi = float(lo), float(hi)
    except ValueError:
        lo = hi = float("nan")
    if not sep or not (lo < hi):
        sys.exit(f"--bounds {text!r}: expected LO:HI with LO < HI, e.g. 0:1")
    return lo, hi


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--bounds", default="0:1", help="LO:HI given to diffprivlib (default 0:1)")
    args = ap.parse_args()
    lo, hi = parse_bounds(args.bounds)

    try:
        import numpy as np
        from diffprivlib import BudgetAccountant
        from diffprivlib.tools import mean
    except ImportError as e:
        sys.exit(f"cannot import diffprivlib ({e}); install: pip install diffprivlib==0.6.6 'scikit-learn>=1.4,<1.8'")

    req = json.load(sys.stdin)
    data = np.asarray(req["dataset"], dtype=float)
    rng = np.random.RandomState(np.random.MT19937(np.random.SeedSequence(req["seed"])))
    out = []
    with warnings.catch_warnings():
        # diffprivlib warns when records fall outside the bounds (it clips them): expected here.
        warnings.simplefilter("ignore")
        for _ in range(req["samples"]):
            v = mean(data, epsilon=args.epsilon, bounds=(lo, hi), random_state=rng,
                     accountant=BudgetAccountant())
            out.append(repr(float(v)))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
