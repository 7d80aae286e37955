#!/usr/bin/env python3
"""Power of the audits in tests/exec_dpsgd_lib.rs, derived (run in the set-up's venv).

For the pair D = [0, 0], D' = [0, 0, C] the released iterates of jax_privacy_adapter.py are,
per step and in units of the noise std s, increments of -(b_t·C + N_t)/s with b_t ~ Bern(q) on
D' and b_t = 0 on D: the dominating pair of the Poisson-subsampled Gaussian, with shift
mu = C/s (mu = 1/z when the noise is right, C/z with the misconfiguration stddev = z).

One event the hockey-stick tester can choose through the `checkpoints:1` view is "the smallest
increment is below -m", i.e. max_t (b_t·C + N_t)/s > m:

    P = 1 - ((1 - q)·Φ(m) + q·Φ(m - mu))^T   (on D'),     Q = 1 - Φ(m)^T   (on D).

With n held-out releases per side, an oracle that knows the best m bounds P from below and Q
from above by exact Clopper-Pearson bounds at β/2 each; the audit can flag the claim (ε, δ)
when the margin P_low - e^ε·Q_high exceeds δ. This prints, per setting, the library's ε (its
PLD accountant) and that margin at the best m.

    python examples/dpsgd/power.py
"""
import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import norm


def library_epsilon(q_num, q_den, z, steps, delta=1e-5):
    from jax_privacy import accounting

    accountant = accounting.DpsgdTrainingAccountant(
        dp_accountant_config=accounting.PldAccountantConfig())
    params = accounting.DpParams(noise_multipliers=z, num_samples=q_den, batch_size=q_num,
                                 delta=delta)
    return accountant.compute_epsilon(num_updates=steps, dp_params=params)


def oracle_margin(q, mu, steps, epsilon, n, beta=1e-6):
    """Best margin P_low - e^ε·Q_high over thresholds m, with P and Q at that m."""
    m = np.linspace(-2.0, 12.0, 2801)
    p = 1 - ((1 - q) * norm.cdf(m) + q * norm.cdf(m - mu)) ** steps
    q_ = 1 - norm.cdf(m) ** steps
    k_p, k_q = np.floor(p * n), np.ceil(q_ * n)
    with np.errstate(invalid="ignore"):
        p_low = np.where(k_p > 0, beta_dist.ppf(beta / 2, k_p, n - k_p + 1), 0.0)
        q_high = np.where(k_q < n, beta_dist.ppf(1 - beta / 2, k_q + 1, n - k_q), 1.0)
    margin = np.nan_to_num(p_low - np.exp(epsilon) * q_high, nan=-np.inf)
    i = int(np.argmax(margin))
    return margin[i], p[i], q_[i]


def main():
    z = 2.0
    for (q_num, q_den, steps) in [(1, 10, 10), (1, 4, 1)]:
        eps = library_epsilon(q_num, q_den, z, steps)
        q = q_num / q_den
        for clip in (4.0, 2.0):
            mu = clip / z  # the misconfiguration: noise std z where z·C was accounted
            for n in (10_000, 16_000, 100_000):
                margin, p, q_ = oracle_margin(q, mu, steps, eps, n)
                print(f"T={steps} q={q_num}/{q_den} z={z} ε={eps:.8f} stddev=z at C={clip:g}: "
                      f"n={n} P={p:.3f} Q={q_:.4f} margin={margin:.4f}")
        # The correct configuration: shift 1/z; the event's margin must stay ≤ 0 (the claim holds).
        margin, p, q_ = oracle_margin(q, 1.0 / z, steps, eps, 100_000)
        print(f"T={steps} q={q_num}/{q_den} correct: n=100000 margin={margin:.4f} (≤ 0 expected)")


if __name__ == "__main__":
    main()
