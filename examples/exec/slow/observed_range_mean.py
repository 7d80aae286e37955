#!/usr/bin/env python3
"""A clamped mean whose sensitivity is computed from the data's observed range (slow-suite program).

Start-up 1 s of CPU, 3 ms of CPU per release (see _slowlib.py). Replace-one neighbours: the
number of records n is public. Records are clamped to [lower, upper] = [0, 10].
Release: mean + Lap(b), on a grid of 2^-8.

Bug: b = max(max(D) - min(D), 0.001 * (upper - lower)) / (n * epsilon): the author took the
mean's sensitivity from the range the records actually span instead of the declared one (the
floor only avoids a zero scale). On spread-out data the observed range is the declared one and
the release is correct; on near-constant data the noise all but vanishes.

# Guarantee (replace-one neighbours, claim pure:1)
Replacing one of n records in [0, 10] moves the mean by at most 10 / n.
- Buggy: on D = [5] * 10 the scale is 0.01 / 10 = 0.001, so the release is 5 on the grid with
  probability 1 - exp(-2^-9 / 0.001) = 0.86; on D' = [5] * 9 + [10] the mean is 5.5 and the
  scale 5 / 10 = 0.5, so P'(release = 5) <= 2^-8 * (1 / (2 * 0.5)) * exp(-0.5 / 0.5) = 0.0014.
  The loss on that event is ln(0.86 / 0.0014) = 6.4, and the densities' ratio is unbounded in
  the tails (two Laplace laws of different scales): not epsilon-DP for any epsilon (true
  epsilon = infinity, at least 6.4 on one release).
- Fixed (--fixed): b = (upper - lower) / (n * epsilon), the declared sensitivity: true
  epsilon = 1. (The empty dataset has no replace-one neighbour but itself; it releases noise.)

    audit run --exec 'python3 examples/exec/slow/observed_range_mean.py' --claim pure:1 --record-range 0:10 --dataset-size 10 --neighbors replace-one
"""
from _slowlib import arguments, clamp, laplace, releases, request


def main():
    a = arguments(__doc__, startup=1.0, cost_ms=3.0)
    rows, n, rng = request()
    clamped = [clamp(x, a.lower, a.upper) for x in rows]
    count = max(len(clamped), 1)
    mean = sum(clamped) / count
    if a.fixed:
        sensitivity = (a.upper - a.lower) / count
    else:
        observed = (max(clamped) - min(clamped)) if clamped else 0.0
        sensitivity = max(observed, 0.001 * (a.upper - a.lower)) / count
    scale = sensitivity / a.epsilon
    releases(n, a.cost_ms, lambda: mean + laplace(rng, scale))


if __name__ == "__main__":
    main()
