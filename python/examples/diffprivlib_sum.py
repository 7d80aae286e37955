"""A clamped sum released with diffprivlib's Laplace mechanism, audited in-process by dp_audit.

The user's code: records clamped to [0, UPPER], summed, then
``diffprivlib.mechanisms.Laplace(epsilon=ε, sensitivity=…).randomise(total)``. The buggy
configuration is a real mistake: ``sensitivity=1`` (what a count needs) on a sum of records
that may each be as large as UPPER, so the release spends UPPER·ε, not ε.

Run: ``python python/examples/diffprivlib_sum.py`` (needs ``pip install diffprivlib``).

Randomness: diffprivlib takes a ``random_state``; the engine's per-chunk seed is passed to it,
so every audit here is deterministic.
"""

import numpy as np

from diffprivlib.mechanisms import Laplace

EPSILON = 1.0
UPPER = 5.0  # records are clamped to [0, UPPER]: the sum's sensitivity is UPPER

D = [1.0, 2.0, 3.0, 4.0]
D_PRIME = D + [UPPER]  # one more record, at the top of the range
CLAIM = f"pure:{EPSILON}"


def _laplace_sum(sensitivity):
    def mechanism(dataset, n, seed):
        total = float(np.clip(np.asarray(dataset, dtype=float), 0.0, UPPER).sum())
        lap = Laplace(epsilon=EPSILON, sensitivity=sensitivity,
                      random_state=np.random.RandomState(seed % 2**32))
        # diffprivlib releases one value per call (about 5 µs each); no vector form to use.
        return np.fromiter((lap.randomise(total) for _ in range(n)), dtype=np.float64, count=n)

    return mechanism


correct = _laplace_sum(UPPER)
sensitivity_too_small = _laplace_sum(1.0)


if __name__ == "__main__":
    import dp_audit

    for name, mech in [("correct", correct), ("sensitivity_too_small", sensitivity_too_small)]:
        rec = dp_audit.audit_callable(mech, CLAIM, D, D_PRIME, samples=100_000,
                                      failure_probability=1e-6, name=f"diffprivlib_sum_{name}")
        print(f"== {name}: claim {CLAIM}: {rec.verdict} (mechanism layer: "
              f"{'violation' if rec.mechanism_violation else 'no violation'}, float layer: "
              f"{'violation' if rec.float_violation else 'no violation'})")
        print(rec.text())
