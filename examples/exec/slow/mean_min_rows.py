#!/usr/bin/env python3
"""A DP-library-style clamped mean whose noise assumes at least 10 rows (slow-suite program).

Start-up 2 s of CPU, 2 ms of CPU per release (see _slowlib.py). Records are clamped to
[lower, upper] = [0, 10]; the mean of the empty dataset is 0. Release: mean + Lap(b), on a grid
of 2^-8.

Bug: b = (upper - lower) / (MIN_ROWS * epsilon) with MIN_ROWS = 10, the sensitivity of a mean
over at least 10 rows, but the program accepts any number of rows.

# Guarantee (add-remove neighbours, claim pure:1)
Adding a record x in [0, 10] to D moves the clamped mean by at most |x - mean(D)| / (n + 1)
<= 10 / (n + 1), and from D = [] (mean 0) to [x] by x <= 10. With Laplace noise of scale b the
privacy loss is (largest move) / b.
- Buggy: b = 10 / (10 * 1) = 1, so on D = [] vs [10] the loss is 10 / 1: true epsilon = 10
  (only datasets of at most 9 rows exceed epsilon = 1: 10 / (n + 1) > 1 iff n < 9).
- Fixed (--fixed): b = (upper - lower) / epsilon = 10, the mean's sensitivity over all sizes
  including the empty dataset: true epsilon = 1, the claim holds.
Rounding to the grid is post-processing and changes neither.

    audit run --exec 'python3 examples/exec/slow/mean_min_rows.py' --claim pure:1 --record-range 0:10 --dataset-size 10
"""
from _slowlib import arguments, clamp, laplace, releases, request

MIN_ROWS = 10


def main():
    a = arguments(__doc__, startup=2.0, cost_ms=2.0)
    rows, n, rng = request()
    clamped = [clamp(x, a.lower, a.upper) for x in rows]
    mean = sum(clamped) / max(len(clamped), 1)
    min_rows = 1 if a.fixed else MIN_ROWS
    scale = (a.upper - a.lower) / (min_rows * a.epsilon)
    releases(n, a.cost_ms, lambda: mean + laplace(rng, scale))


if __name__ == "__main__":
    main()
