#!/usr/bin/env python3
"""A clamped sum whose noise scale is computed before the clamping, from the records themselves
(slow-suite program).

Start-up 1.5 s of CPU, 4 ms of CPU per release (see _slowlib.py). Add-remove neighbours.

Bug: the pipeline computes the sensitivity as the largest record's magnitude,
max(1, max |x|), then clamps the records to [lower, upper] = [0, 10] and releases
sum + Lap(sensitivity / epsilon) on a grid of 2^-8. The order is the bug: the scale should be
the clamping bound (max(|lower|, |upper|) = 10), fixed before any record is read; computed from
the records, it is small exactly when every record is small.

# Guarantee (add-remove neighbours, claim pure:1)
Adding a record in [0, 10] moves the clamped sum by at most 10.
- Buggy: on D = [0] * 10 (scale 1 / epsilon = 1, sum 0) vs D' = D + [10] (scale 10, sum 10),
  at the release y = 10 the densities are exp(-10) / 2 and 1 / 20, a log-ratio of 7.7, and the
  ratio is unbounded in the tails: not epsilon-DP for any epsilon (true epsilon = infinity).
  Datasets holding a record near 10 get the right scale, so only datasets of small records show
  the bug.
- Fixed (--fixed): scale = max(|lower|, |upper|) / epsilon = 10: true epsilon = 1.

    audit run --exec 'python3 examples/exec/slow/sum_scale_before_clamp.py' --claim pure:1 --record-range 0:10 --dataset-size 10
"""
from _slowlib import arguments, clamp, laplace, releases, request


def main():
    a = arguments(__doc__, startup=1.5, cost_ms=4.0)
    rows, n, rng = request()
    if a.fixed:
        sensitivity = max(abs(a.lower), abs(a.upper))
    else:
        sensitivity = max([1.0] + [abs(x) for x in rows])
    total = sum(clamp(x, a.lower, a.upper) for x in rows)
    scale = sensitivity / a.epsilon
    releases(n, a.cost_ms, lambda: total + laplace(rng, scale))


if __name__ == "__main__":
    main()
