#!/usr/bin/env python3
"""A sum of records in [0, 1] plus Gaussian noise, speaking the exec protocol, for Bayesian DP audits.

Releases sum(D) + N(0, (sigma * bound)^2), the records clamped to [0, bound], the noise drawn
from random.Random(seed).gauss. With the default bound 1 (the records' true range) it keeps the
exact Bayesian DP of the Gaussian sum: for the data of examples/bdp-data-small.txt, sigma = 1 and
epsilon = 1 that is delta_mu = 1.41e-2 (mean over the records x' of
Phi(x'/(2 sigma) - epsilon sigma / x'), rounded up), so

    audit run --exec 'python3 examples/exec/bdp_gaussian_sum.py' --claim bdp:1:0.0141 \\
        --data examples/bdp-data-small.txt --record-range 0:1 --dataset-size 3 --samples 20000

should not flag it. The dataset's last record is the differing record x' (add-remove: D' = D
with x' appended). examples/exec/bdp_gaussian_sum_ignores_outliers.py is the buggy twin.

A request with "datasets" (a list of datasets) instead of "dataset" asks for one release per
dataset, in order: with --exec-datasets N, `audit run --draw-dataset` sends N datasets per
process instead of starting one process per release.

--bound B: the largest record the noise is calibrated for (default 1); records are clamped to
[0, 1] whatever B is, so B < 1 is the bug "noise calibrated for the in-distribution records,
ignoring outliers".
"""
import argparse
import json
import random
import sys


def main(default_bound=1.0):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--bound", type=float, default=default_bound)
    a = ap.parse_args()
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    scale = a.sigma * a.bound

    def clamped_sum(dataset):
        return sum(min(max(float(r[0] if isinstance(r, list) else r), 0.0), 1.0) for r in dataset)

    if "datasets" in req:
        # Many datasets, one release each, in order (audit run --exec-datasets N, used with
        # --draw-dataset: every release has a dataset of its own).
        out = [repr(clamped_sum(d) + rng.gauss(0.0, scale)) for d in req["datasets"]]
    else:
        total = clamped_sum(req["dataset"])
        out = [repr(total + rng.gauss(0.0, scale)) for _ in range(int(req["samples"]))]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
