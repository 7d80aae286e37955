"""Reference values for the PLD accountant's Laplace, randomized-response and
attribution-summary events (docs/seeds/pld-events.md), from Google's dp_accounting 0.6.0
(`pip install dp-accounting==0.6.0`), PLDAccountant defaults (value_discretization_interval
1e-4, pessimistic connect-the-dots), add/remove neighbors unless said, and exact values
(randomized response composed T times: trinomial sums in exact rational arithmetic, read
with mpmath-free float logs).

Run:  python3 -m venv /work/venv-dpacct && /work/venv-dpacct/bin/pip install dp-accounting==0.6.0
      /work/venv-dpacct/bin/python docs/design/pld-events/reference.py
The printed lines are the constants of accounting/src/pld/tests_events.rs.
"""
import math
from fractions import Fraction

import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution as PLD

NR = dp_accounting.NeighboringRelation
DELTA = 1e-5


def acct_eps(event, relation=NR.ADD_OR_REMOVE_ONE, delta=DELTA):
    a = pld_privacy_accountant.PLDAccountant(relation)
    a.compose(event)
    return a.get_epsilon(delta)


def rr_noise(eps, k):
    # dp_accounting's RR: the input w.p. 1 - p + p/k, each other w.p. p/k: e^eps = (1-p+p/k)/(p/k).
    return k / (math.exp(eps) + k - 1)


def rr_exact_delta(eps0, k, T, eps):
    """delta(eps) of T-fold k-RR, exact: losses +eps0 (mass p), 0 ((k-2) r), -eps0 (r)."""
    e = math.exp(eps0)
    p, r = e / (e + k - 1), 1 / (e + k - 1)
    total = 0.0
    for i in range(T + 1):          # i atoms at +eps0
        for j in range(T - i + 1):  # j atoms at -eps0
            loss = (i - j) * eps0
            if loss <= eps:
                continue
            m = math.comb(T, i) * math.comb(T - i, j)
            mass = m * p**i * r**j * ((k - 2) * r) ** (T - i - j) if k > 2 or T - i - j == 0 else 0.0
            total += mass * (-math.expm1(eps - loss))
    return total


def eps_of_delta(f, delta, lo=0.0, hi=50.0):
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


rows = []
# 1. One Laplace sum, b = 1 (add/remove, sensitivity 1).
rows.append(("LAPLACE_B1_T1", acct_eps(dp_event.LaplaceDpEvent(1.0))))
# 2. Ten Laplace sums, b = 2.
rows.append(("LAPLACE_B2_T10", acct_eps(dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(2.0), 10))))
# 3. Poisson-subsampled Laplace, q = 0.01, b = 1, T = 1000.
rows.append(("POISSON_LAPLACE_Q01_B1_T1000", acct_eps(dp_event.SelfComposedDpEvent(
    dp_event.PoissonSampledDpEvent(0.01, dp_event.LaplaceDpEvent(1.0)), 1000))))
# 4. Randomized response, eps = 0.5, k = 4, T = 50 (replace-one: dp_accounting's RR relation).
#    NB: dp_accounting 0.6.0's PLDAccountant composes a RandomizedResponseDpEvent ONCE inside a
#    SelfComposedDpEvent (its branch ignores `count`: with T = 20, eps = 1, k = 4 it answered
#    0.99998, the eps of one step), so the PLD is built and self-composed directly here.
rr = PLD.from_randomized_response(rr_noise(0.5, 4), 4).self_compose(50)
rows.append(("RR_E05_K4_T50", rr.get_epsilon_for_delta(DELTA)))
rows.append(("RR_E05_K4_T50_EXACT", eps_of_delta(lambda e: rr_exact_delta(0.5, 4, 50, e), DELTA)))
rows.append(("RR_E05_K4_T50_SELF_COMPOSED_EVENT_BUG", acct_eps(dp_event.SelfComposedDpEvent(
    dp_event.RandomizedResponseDpEvent(rr_noise(0.5, 4), 4), 50), NR.REPLACE_ONE)))
# 5. Attribution summary L = 4, t = 40 (eps0 = 0.1), T = 100: the one-key discrete Laplace pair
#    (the lower bound's pair) and binary RR with eps0 (the upper bound's pair).
rows.append(("ARA_ONE_KEY_L4_T40_T100", acct_eps(dp_event.SelfComposedDpEvent(
    dp_event.DiscreteLaplaceDpEvent(1 / 40, 4), 100))))
rows.append(("ARA_RR2_E01_T100_EXACT", eps_of_delta(lambda e: rr_exact_delta(0.1, 2, 100, e), DELTA)))
# 6. A mixed ledger: 1000 steps of Poisson Gaussian (q = 0.01, z = 1) and 10 full-batch
#    Laplace sums (b = 10).
rows.append(("MIXED_GAUSS_Q01_Z1_T1000_LAPLACE_B10_T10", acct_eps(dp_event.ComposedDpEvent([
    dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 1000),
    dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(10.0), 10)]))))

print(f"# dp_accounting {dp_accounting.__version__ if hasattr(dp_accounting, '__version__') else '0.6.0'}, delta = {DELTA}")
for name, v in rows:
    print(f"const {name}: f64 = {v!r};")
