#!/usr/bin/env python3
"""A mean whose noise scale depends on the data: a noisy sum divided by the true count
(slow-suite program).

Start-up 0.5 s of CPU, 6 ms of CPU per release (see _slowlib.py). Records are clamped to
[lower, upper] = [0, 10].

Bug: release (sum + Lap(upper / epsilon)) / max(n, 1), on a grid of 2^-8. The sum is noised
correctly, but dividing by the true n (treated as public) makes the noise's scale,
upper / (epsilon * n), depend on the data: under add-remove n is what is protected.

# Guarantee (add-remove neighbours, claim pure:1)
- Buggy: on D = [0] vs D' = [0, 0] the release is Lap(10) against Lap(10) / 2 = Lap(5); the
  log-ratio of their densities is ln(1/2) + |y| / 10 at y, unbounded: not epsilon-DP for any
  epsilon (true epsilon = infinity; it exceeds 1 on |y| > 17, probability 0.18 under Lap(10)).
  The larger n, the closer the two scales (n vs n + 1), so small datasets show it best.
- Fixed (--fixed): the sum gets Lap(upper / (epsilon / 2)) and the count Lap(1 / (epsilon / 2))
  (sensitivities 10 and 1 under add-remove), and the release is noisy sum / max(noisy count, 1):
  epsilon / 2 + epsilon / 2 = epsilon by basic composition, and the division is
  post-processing: true epsilon = 1.

    audit run --exec 'python3 examples/exec/slow/mean_true_n.py' --claim pure:1 --record-range 0:10 --dataset-size 10
"""
from _slowlib import arguments, clamp, laplace, releases, request


def main():
    a = arguments(__doc__, startup=0.5, cost_ms=6.0)
    rows, n, rng = request()
    clamped = [clamp(x, a.lower, a.upper) for x in rows]
    total = sum(clamped)
    bound = max(abs(a.lower), abs(a.upper))
    if a.fixed:
        def one():
            s = total + laplace(rng, bound / (a.epsilon / 2))
            c = len(clamped) + laplace(rng, 1.0 / (a.epsilon / 2))
            return s / max(c, 1.0)
    else:
        def one():
            return (total + laplace(rng, bound / a.epsilon)) / max(len(clamped), 1)
    releases(n, a.cost_ms, one)


if __name__ == "__main__":
    main()
