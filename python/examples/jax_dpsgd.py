"""One DP-SGD step in JAX (logistic regression, full batch), audited in-process by dp_audit.

The step (Abadi et al. 2016): per-example gradients of the log loss at θ₀ (``jax.vmap`` of
``jax.grad``), each clipped to L2 norm ≤ CLIP, summed, Gaussian noise of standard deviation
NOISE_MULTIPLIER·CLIP added to the sum (``jax.random.normal``), then θ₁ = θ₀ − LR·(noisy
sum)/LOT with a fixed lot size LOT. The release is θ₁ (weight and bias). Adding or removing one
record moves the clipped sum by at most CLIP: one step is the Gaussian mechanism of noise
multiplier z, the claim ``dpsgd:1:Z:1`` (sampling rate 1, one step), i.e. (1/z)-GDP.

The buggy configuration is a real JAX mistake: ``jax.grad`` of the summed loss (the batch's
gradient, no ``vmap``), clipped to CLIP as a whole. The clipped aggregate can turn around when
one record is added: it moves by up to 2·CLIP, so the step spends μ = 2/z, not 1/z. The pair
below makes it turn: D's two records pull the gradient one way, D′'s third pulls it back twice
as hard (D's clipped sum ≈ (3.95, 0.66), D′'s ≈ (−3.99, 0.33): a shift of 7.94 ≈ 2·CLIP).

JAX computes in float32 by default: the releases' low bits tell D from D′ (float noise added
to an exact value, Mironov 2012), so the algorithm is gated with ``check="mechanism"``.

Run: ``python python/examples/jax_dpsgd.py`` (needs ``pip install jax``; CPU is enough). All
randomness comes from ``jax.random`` keys made from the engine's per-chunk seed: every audit
here is deterministic.
"""

import numpy as np

import jax
import jax.numpy as jnp

CLIP = 4.0
NOISE_MULTIPLIER = 1.0
LR = 0.1
LOT = 4.0  # the lot size the sum is divided by: a constant
THETA0 = jnp.zeros(2)
CLAIM = f"dpsgd:1:{NOISE_MULTIPLIER}:1"

# Records (x, y). Gradient at θ₀ = 0: (σ(0) − y)·(x, 1). D: (3, 0.5) twice, summed (6, 1);
# D′ adds (24, 1), of gradient (−12, −0.5): per example it is clipped to norm CLIP (a shift of
# CLIP), in the aggregate it turns the clipped sum around.
D = [[6.0, 0.0], [6.0, 0.0]]
D_PRIME = D + [[24.0, 1.0]]


def _loss(theta, record):
    z = record[0] * theta[0] + theta[1]
    return jnp.logaddexp(0.0, z) - record[1] * z  # −log-likelihood of y under σ(z)


def _clip(g):
    norms = jnp.linalg.norm(g, axis=-1, keepdims=True)
    return g / jnp.maximum(1.0, norms / CLIP)


@jax.jit
def per_example_clipped_sum(data):
    return _clip(jax.vmap(jax.grad(_loss), in_axes=(None, 0))(THETA0, data)).sum(axis=0)


@jax.jit
def batch_gradient_clipped(data):
    total = jax.grad(lambda t: jax.vmap(_loss, in_axes=(None, 0))(t, data).sum())(THETA0)
    return _clip(total)


def _key(seed):
    # The engine's seed is 64 bits; a PRNGKey takes 32, the other 32 are folded in.
    return jax.random.fold_in(jax.random.PRNGKey(np.uint32(seed & 0xFFFFFFFF)),
                              np.uint32(seed >> 32))


def _step(clipped_sum):
    def mechanism(dataset, n, seed):
        data = jnp.asarray(np.asarray(dataset, dtype=np.float32).reshape(-1, 2))
        noise = jax.random.normal(_key(seed), (n, 2)) * (NOISE_MULTIPLIER * CLIP)
        theta1 = THETA0 - LR * (clipped_sum(data)[None, :] + noise) / LOT
        return np.asarray(theta1, dtype=np.float64)

    return mechanism


correct = _step(per_example_clipped_sum)
batch_clipped = _step(batch_gradient_clipped)


if __name__ == "__main__":
    import dp_audit

    for name, mech in [("correct", correct), ("batch_clipped", batch_clipped)]:
        rec = dp_audit.audit_callable(mech, CLAIM, D, D_PRIME, samples=200_000,
                                      failure_probability=1e-6, name=f"jax_dpsgd_{name}")
        print(f"== {name}: claim {CLAIM}: {rec.verdict} (mechanism layer: "
              f"{'violation' if rec.mechanism_violation else 'no violation'}, float layer: "
              f"{'violation' if rec.float_violation else 'no violation'})")
        print(rec.text())
