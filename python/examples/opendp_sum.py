"""A clamped sum released with OpenDP's Laplace measurement, audited in-process by dp_audit.

The user's code: records clamped to [0, UPPER] and summed in numpy, then OpenDP's
``make_laplace`` on the scalar sum. Adding or removing one record moves the sum by at most
UPPER, so the Laplace scale must be UPPER/ε. The buggy configuration is a real mistake: the
scale computed for sensitivity 1 (the sensitivity of a count), and the claim read off OpenDP's
own privacy map at that wrong input distance (``m.map(1.0)``), so OpenDP reports ε = 1 while the
sum really spends ε = UPPER.

Run: ``python python/examples/opendp_sum.py`` (needs ``pip install opendp``).

Randomness: OpenDP draws its noise from the operating system (by design, so that no seed can be
replayed), so the ``seed`` argument is not used and the releases differ from run to run. The
audit's false-failure probability does not depend on it (a mechanism that keeps its claim fails
with probability at most β whatever its randomness); only the exact bounds printed change.

Speed: one call of the vector Laplace (``vector_domain``/``l1_distance``) on n copies of the sum
adds n independent Laplace draws, each distributed as one release of the scalar measurement
(the same scale, the same 2^k grid), so a chunk of n releases costs one call into OpenDP
instead of n.
"""

import numpy as np

import opendp.prelude as dp

dp.enable_features("contrib")

EPSILON = 1.0
UPPER = 5.0  # records are clamped to [0, UPPER]: the sum's sensitivity is UPPER

# The neighboring pair: D and D plus one record at the top of the range (the sum moves by UPPER).
D = [1.0, 2.0, 3.0, 4.0]
D_PRIME = D + [UPPER]


def _laplace_sum(scale):
    """mechanism(dataset, n, seed): n releases of clamp → sum → OpenDP Laplace(scale)."""
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    laplace = dp.m.make_laplace(*space, scale=scale)

    def mechanism(dataset, n, seed):
        total = float(np.clip(np.asarray(dataset, dtype=float), 0.0, UPPER).sum())
        return np.asarray(laplace([total] * n), dtype=np.float64)

    # What OpenDP says the release spends, for the sensitivity the user passed.
    scalar = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                               scale=scale)
    return mechanism, scalar


# Correct: scale for the sum's sensitivity UPPER; OpenDP's map at d_in = UPPER gives ε.
correct, _correct_scalar = _laplace_sum(UPPER / EPSILON)
CORRECT_CLAIM = f"pure:{_correct_scalar.map(UPPER)}"

# Buggy: the scale of a count (sensitivity 1), and the claim OpenDP gives at d_in = 1.
wrong_sensitivity, _wrong_scalar = _laplace_sum(1.0 / EPSILON)
WRONG_CLAIM = f"pure:{_wrong_scalar.map(1.0)}"


if __name__ == "__main__":
    import dp_audit

    for name, mech, claim in [("correct", correct, CORRECT_CLAIM),
                              ("wrong_sensitivity", wrong_sensitivity, WRONG_CLAIM)]:
        rec = dp_audit.audit_callable(mech, claim, D, D_PRIME, samples=100_000,
                                      failure_probability=1e-6, name=f"opendp_sum_{name}")
        print(f"== {name}: claim {claim}: {rec.verdict}")
        print(rec.text())
