"""One DP-SGD step in numpy (logistic regression, full batch), audited in-process by dp_audit.

The step (Abadi et al. 2016): per-example gradients of the log loss at θ₀, each clipped to L2
norm ≤ CLIP, summed, Gaussian noise of standard deviation NOISE_MULTIPLIER·CLIP added to the sum,
then θ₁ = θ₀ − LR·(noisy sum)/LOT with a fixed lot size LOT (not the data's size, which would
change the sensitivity). The release is θ₁ (two numbers: weight and bias). Adding or removing
one record moves the clipped sum by at most CLIP, so one step is the Gaussian mechanism of
noise multiplier z = NOISE_MULTIPLIER: the claim ``dpsgd:1:Z:1`` (sampling rate 1, one step),
i.e. (1/z)-GDP.

The buggy configuration is a real mistake: the noise's standard deviation set to
NOISE_MULTIPLIER alone, not scaled by the clipping norm. It is invisible at CLIP = 1 and spends
μ = CLIP/z instead of 1/z at any other clipping norm; here CLIP = 4.

Run: ``python python/examples/numpy_dpsgd.py``. All randomness comes from
``np.random.default_rng(seed)``: every audit here is deterministic.
"""

import numpy as np

CLIP = 4.0
NOISE_MULTIPLIER = 1.0
LR = 0.1
LOT = 4.0  # the lot size the sum is divided by: a constant
THETA0 = np.zeros(2)
CLAIM = f"dpsgd:1:{NOISE_MULTIPLIER}:1"

# Records (x, y). D′ adds a record whose gradient at θ₀, (σ(0) − y)·(x, 1) = (5, 0.5), is
# clipped to norm CLIP: the sum moves by the full sensitivity.
D = [[0.5, 1.0], [-1.0, 0.0], [2.0, 1.0], [0.0, 0.0]]
D_PRIME = D + [[10.0, 0.0]]


def _clipped_gradient_sum(dataset):
    data = np.asarray(dataset, dtype=np.float64).reshape(-1, 2)
    x, y = data[:, 0], data[:, 1]
    features = np.stack([x, np.ones_like(x)], axis=1)
    p = 1.0 / (1.0 + np.exp(-(features @ THETA0)))
    grads = (p - y)[:, None] * features
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    grads = grads / np.maximum(1.0, norms / CLIP)
    return grads.sum(axis=0)


def _step(noise_std):
    def mechanism(dataset, n, seed):
        rng = np.random.default_rng(seed)
        g = _clipped_gradient_sum(dataset)
        noisy = g[None, :] + rng.normal(0.0, noise_std, size=(n, 2))
        return THETA0[None, :] - LR * noisy / LOT

    return mechanism


correct = _step(NOISE_MULTIPLIER * CLIP)
noise_not_scaled_by_clip = _step(NOISE_MULTIPLIER)


if __name__ == "__main__":
    import dp_audit

    for name, mech in [("correct", correct), ("noise_not_scaled_by_clip", noise_not_scaled_by_clip)]:
        rec = dp_audit.audit_callable(mech, CLAIM, D, D_PRIME, samples=200_000,
                                      failure_probability=1e-6, name=f"dpsgd_step_{name}")
        print(f"== {name}: claim {CLAIM}: {rec.verdict} (mechanism layer: "
              f"{'violation' if rec.mechanism_violation else 'no violation'}, float layer: "
              f"{'violation' if rec.float_violation else 'no violation'})")
        print(rec.text())
