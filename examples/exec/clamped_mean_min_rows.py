#!/usr/bin/env python3
"""A clamped mean whose Laplace noise assumes "at least 10 rows", speaking the exec protocol.

Releases clamp-mean(D) + Lap(b), b = (upper - lower) / (MIN_ROWS * epsilon), rounded to a grid
of 2^-8. The author sized the noise for a mean over at least MIN_ROWS = 10 records, but the
program accepts smaller datasets (an empty one releases 0 + noise): on D = [] vs D' = [upper] the
mean moves by `upper` while the noise scale assumes a move of (upper - lower) / 10, so the true
epsilon there is about 10 * upper / (upper - lower) * epsilon (5 at the defaults), far above the
claimed epsilon = 1. On datasets of 10 or more records the claim holds, so a search must reach
the small datasets to find the bug: a default audit has to run more than a handful of trials.

    audit run --exec 'python3 examples/exec/clamped_mean_min_rows.py' --claim pure:1 --record-range 0:10 --dataset-size 10

--startup S spends about S seconds of CPU before reading the request, as importing numpy or a DP
library does (0.1 to 0.5 s), so that audits can be tried on programs as users write them without
depending on those packages. --cost-us U spends about U microseconds of CPU per release.
--slow-above K --slow-us V: on datasets of more than K records each release costs V
microseconds instead (a library model fit whose cost depends on the data). --min-rows M sets
the rows the noise assumes (M = 1 is the correct mechanism). A request of many datasets
({"datasets": [...], "samples": k, "seed": s}, `--exec-datasets N`) gets one release per
dataset, in order.
"""
import argparse
import json
import math
import random
import sys
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--lower", type=float, default=0.0)
    ap.add_argument("--upper", type=float, default=10.0)
    ap.add_argument("--min-rows", type=int, default=10)
    ap.add_argument("--startup", type=float, default=0.0)
    ap.add_argument("--cost-us", type=float, default=0.0)
    ap.add_argument("--slow-above", type=int, default=-1)
    ap.add_argument("--slow-us", type=float, default=0.0)
    a = ap.parse_args()
    burn(a.startup)
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    scale = (a.upper - a.lower) / (a.min_rows * a.epsilon)
    grid = 2.0 ** -8

    def release(dataset):
        rows = [float(r[0] if isinstance(r, list) else r) for r in dataset]
        clamped = [min(max(x, a.lower), a.upper) for x in rows]
        mean = sum(clamped) / max(len(clamped), 1)
        cost = a.cost_us * 1e-6
        if 0 <= a.slow_above < len(rows):
            cost = a.slow_us * 1e-6
        if cost > 0:
            burn(cost)
        u = rng.random() - 0.5
        noise = -scale * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))
        return repr(round((mean + noise) / grid) * grid)

    if "datasets" in req:
        # Many datasets, one release each, in order (audit run --exec-datasets N): one
        # start-up for many candidate datasets.
        out = [release(d) for d in req["datasets"]]
    else:
        out = [release(req["dataset"]) for _ in range(int(req["samples"]))]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
