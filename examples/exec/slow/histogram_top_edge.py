#!/usr/bin/env python3
"""A noisy histogram whose bin edges mishandle the range's top end (slow-suite program).

Start-up 3 s of CPU, 1 ms of CPU per release (see _slowlib.py). Records are clamped to
[lower, upper] = [0, 10] and counted in K = 5 bins of width 2; each count gets Lap(1 / epsilon).
Each release is the vector of noisy counts, on a grid of 2^-8.

Bug: a record's bin is floor((x - lower) / width), which is K for x = upper exactly. The program
keeps a sixth "overflow" bin for such indices and releases it without noise: the author
believed it always empty (values are "below upper") and saw no reason to noise a zero.

# Guarantee (add-remove neighbours, claim pure:1)
Adding one record changes one count by 1: the L1 sensitivity of the K noised counts is 1, so
Lap(1 / epsilon) on each gives epsilon-DP.
- Buggy: on D without a record at 10 and D' = D + [10] the overflow bin is exactly 0 against
  exactly 1: the event "overflow = 1" has probability 0 under D and 1 under D'. Not
  epsilon-DP for any epsilon (true epsilon = infinity); only datasets with a record exactly at
  the range's top show it (elsewhere the buggy program is the fixed one plus a constant 0).
- Fixed (--fixed): the index is min(floor((x - lower) / width), K - 1), the top edge belongs to
  the last bin, and the K noised counts are released: true epsilon = 1.

    audit run --exec 'python3 examples/exec/slow/histogram_top_edge.py' --claim pure:1 --record-range 0:10 --dataset-size 10
"""
import math

from _slowlib import arguments, clamp, laplace, releases, request

BINS = 5


def main():
    a = arguments(__doc__, startup=3.0, cost_ms=1.0)
    rows, n, rng = request()
    width = (a.upper - a.lower) / BINS
    counts = [0] * (BINS + 1)
    for x in rows:
        i = int(math.floor((clamp(x, a.lower, a.upper) - a.lower) / width))
        if a.fixed:
            i = min(i, BINS - 1)
        counts[i] += 1
    scale = 1.0 / a.epsilon
    if a.fixed:
        one = lambda: [c + laplace(rng, scale) for c in counts[:BINS]]  # noqa: E731
    else:
        one = lambda: [c + laplace(rng, scale) for c in counts[:BINS]] + [float(counts[BINS])]  # noqa: E731
    releases(n, a.cost_ms, one)


if __name__ == "__main__":
    main()
