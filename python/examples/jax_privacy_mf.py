"""JAX Privacy's matrix-factorization noise (DP-BandMF / DP-FTRL), audited in-process by dp_audit.

The training run: E = EPOCHS epochs of b = STEPS_PER_EPOCH steps, n = E·b steps, the data
visited in the same order every epoch (the fixed-epoch, b-min-separation participation of
Choquette-Choo et al. 2023 with k = E participations). A record (s, g) ∈ [0, 1]² sits at epoch
position t₀ = min(⌊s·b⌋, b − 1) and contributes its gradient g, clipped to CLIP by JAX Privacy's
``clipping.clip_pytree``, at the E steps t₀, t₀ + b, …, t₀ + (E − 1)·b. The gradient stream x
(x_t the sum of the clipped contributions at step t) goes through JAX Privacy's own parts:

  - strategy C: the banded lower-triangular Toeplitz matrix of
    ``toeplitz.optimal_max_error_strategy_coefs(b)`` (the square root of the prefix-sum matrix,
    Fichtenberger, Henzinger & Upadhyay 2023, kept for b bands: c = (1, 1/2) at b = 2);
  - sensitivity: ``toeplitz.minsep_sensitivity_squared(coef, min_sep=b, max_participations=E,
    n=n)`` (the library's b-min-sep sensitivity, Theorem 2 of arXiv:2405.13763), √5 here;
  - noise: ``noise_addition.matrix_factorization_privatizer(
    toeplitz.inverse_as_streaming_matrix(coef), stddev=σ, prng_key=key)``, the optax
    privatizer that adds σ·C⁻¹·z to the gradients, one step per ``update`` call;
  - calibration: σ = CLIP·Δ/μ for the target μ = MU, claim ``gdp:MU``.

The release is the n noisy prefix sums Σ_{s≤t} (x_s + σ·(C⁻¹z)_s), i.e. the iterates of SGD with
learning rate −1 from θ = 0 on the privatized gradients: A·x + A·C⁻¹·σz = B·(C·x + σz) with
B = A·C⁻¹ square and invertible, a post-processing of the Gaussian mechanism C·x + σz in both
directions. It is therefore exactly (‖C·u‖·CLIP/σ)-GDP on a neighbouring pair whose stream
differs by CLIP·u (Dong, Roth & Su 2022), and μ-GDP over all pairs when Δ is the largest ‖C·u‖
over the participation patterns: the claim. This is the catalogue entry ``mf-ftrl-banded``
(docs/seeds/mf-ftrl.md) computed by JAX Privacy instead of by dp-audit: the same C, the same Δ,
the same witness pair.

Two mistakes, through the same library (the catalogue's twins):

  - ``single_participation``: σ from ``toeplitz.sensitivity_squared(coef, n)``, which the library
    documents as "Sensitivity^2 under single participation" (the largest column norm √1.25), while
    each record takes part E = 4 times: the run spends (Δ/Δ₁)·μ = 2-GDP against the claimed 1.
  - ``unbanded_noise``: σ computed for the banded C_b (Δ = √5), the noise generated for the dense
    square root C_n (``inverse_as_streaming_matrix(optimal_max_error_strategy_coefs(n))``): the
    strategy applied is not the one accounted for; its b-min-sep sensitivity (the same library
    function) is √12.7587, so the run spends √12.7587/√5 = 1.5974-GDP against the claimed 1.

Witness: D = {(0.3, 0.5), (0.7, 0.5)}, D′ = D plus the record (0.25, 1) at position 0, whose
pattern u₀ = (1, 0, 1, 0, 1, 0, 1, 0) reaches the largest ‖C·u‖ for both C (checked by
``pattern_norm`` against the library's sensitivity in python/tests/test_libraries.py).

Sample axis: each release is a one-parameter training run. One privatizer run on a model of N
parameters, all fed the same scalar gradient stream, makes N of them at once: the privatizer's
noise is ``jax.random.normal`` over the model's shape, independent across parameters, and
correlated only along the steps by C⁻¹, so each parameter's trajectory is one independent release.

JAX computes in float32 by default (noise and prefix sums): float noise added to an exact value
has no proof for the bits of its releases (Mironov 2012), so the tests gate the algorithm alone
with ``check="mechanism"``. Here the float layer found nothing at 2·10⁵ releases per side (its
ε ≥ 2.10 at δ = 10⁻⁵ against the claimed 4.377, 2026-11-28), unlike jax_dpsgd.py's single step:
that is no evidence that the bits keep the claim. The library's sensitivity is computed in
float32 too: √5 comes out as 2.2360680103 > √5 = 2.2360679775, so σ is rounded up (the safe
side).

Run: ``python python/examples/jax_privacy_mf.py`` (needs ``pip install jax-privacy``, version
2.0.0 measured; CPU is enough). All randomness comes from ``jax.random`` keys made from the
engine's per-chunk seed: every audit here is deterministic.
"""

import functools

import numpy as np

import jax
import jax.numpy as jnp
from jax_privacy import clipping, noise_addition
from jax_privacy.matrix_factorization import toeplitz

EPOCHS = 4
STEPS_PER_EPOCH = 2  # b: the separation of a record's participations, and the number of bands
STEPS = EPOCHS * STEPS_PER_EPOCH
CLIP = 1.0
MU = 1.0
CLAIM = f"gdp:{MU}"

# The banded strategy the noise is calibrated for, and the dense one the second mistake applies.
BANDED = toeplitz.optimal_max_error_strategy_coefs(STEPS_PER_EPOCH)
DENSE = toeplitz.optimal_max_error_strategy_coefs(STEPS)


def minsep_sensitivity(coef):
    """The library's sensitivity of C under b-min-sep participation, at most E times."""
    return float(jnp.sqrt(toeplitz.minsep_sensitivity_squared(
        coef, min_sep=STEPS_PER_EPOCH, max_participations=EPOCHS, n=STEPS)))


SENSITIVITY = minsep_sensitivity(BANDED)  # √5 = 2.2360680 (float32, rounded up)
SINGLE_SENSITIVITY = float(jnp.sqrt(toeplitz.sensitivity_squared(BANDED, STEPS)))  # √1.25

D = [[0.3, 0.5], [0.7, 0.5]]
D_PRIME = D + [[0.25, 1.0]]


def pattern_norm(coef, position):
    """‖C·u‖ in float64 for u the indicator of the E steps of a record at epoch position
    `position` (the exact shift of the pair, per unit of clipped gradient)."""
    c = np.asarray(toeplitz.materialize_lower_triangular(coef, STEPS), dtype=np.float64)
    u = np.zeros(STEPS)
    u[position::STEPS_PER_EPOCH] = 1.0
    return float(np.linalg.norm(c @ u))


def _stream(dataset):
    """x_t: the sum of the clipped gradients of the records taking part in step t."""
    records = np.asarray(dataset, dtype=np.float64).reshape(-1, 2)
    x = np.zeros(STEPS)
    for s, g in records:
        position = min(int(np.floor(s * STEPS_PER_EPOCH)), STEPS_PER_EPOCH - 1)
        clipped, _ = clipping.clip_pytree(jnp.asarray([g], dtype=jnp.float32), CLIP)
        x[position::STEPS_PER_EPOCH] += float(clipped[0])
    return x


def _key(seed):
    # The engine's seed is 64 bits; a PRNGKey takes 32, the other 32 are folded in.
    return jax.random.fold_in(jax.random.PRNGKey(np.uint32(seed & 0xFFFFFFFF)),
                              np.uint32(seed >> 32))


@functools.partial(jax.jit, static_argnames=("n", "stddev", "noise_coef"))
def _train(x, key, *, n, stddev, noise_coef):
    privatizer = noise_addition.matrix_factorization_privatizer(
        toeplitz.inverse_as_streaming_matrix(jnp.asarray(noise_coef, dtype=jnp.float32)),
        stddev=stddev, prng_key=key)
    state = privatizer.init(jnp.zeros(n, dtype=jnp.float32))
    theta = jnp.zeros(n, dtype=jnp.float32)
    iterates = []
    for t in range(STEPS):
        noisy, state = privatizer.update(jnp.full(n, x[t], dtype=jnp.float32), state)
        theta = theta + noisy
        iterates.append(theta)
    return jnp.stack(iterates, axis=1)  # (n, STEPS): the noisy prefix sums


def _mf_release(sensitivity, noise_coef):
    stddev = CLIP * sensitivity / MU

    def mechanism(dataset, n, seed):
        x = jnp.asarray(_stream(dataset), dtype=jnp.float32)
        out = _train(x, _key(seed), n=int(n), stddev=float(stddev),
                     noise_coef=tuple(float(c) for c in np.asarray(noise_coef)))
        return np.asarray(out, dtype=np.float64)

    return mechanism


correct = _mf_release(SENSITIVITY, BANDED)
single_participation = _mf_release(SINGLE_SENSITIVITY, BANDED)
unbanded_noise = _mf_release(SENSITIVITY, DENSE)

# What each configuration spends on the witness, in float64 (the claim is MU for all three).
TRUE_MU = {
    "correct": CLIP * pattern_norm(BANDED, 0) / (CLIP * SENSITIVITY / MU),
    "single_participation": CLIP * pattern_norm(BANDED, 0) / (CLIP * SINGLE_SENSITIVITY / MU),
    "unbanded_noise": CLIP * pattern_norm(DENSE, 0) / (CLIP * SENSITIVITY / MU),
}


def library_epsilon(delta):
    """The library's own accounting of the correct run, as its BandMF execution plan does it:
    ``amplified_bandmf_event`` with the noise multiplier per unit column norm (σ/(CLIP·‖c‖)),
    sampling probability 1 (every record in every epoch), through dp_accounting's PLD
    accountant (add-or-remove-one). Returns ε at `delta`."""
    import dp_accounting
    from jax_privacy.experimental import accounting

    z = CLIP * SENSITIVITY / MU / (CLIP * float(jnp.linalg.norm(BANDED)))
    event = accounting.amplified_bandmf_event(
        noise_multiplier=z, iterations=STEPS, num_bands=STEPS_PER_EPOCH, sampling_prob=1.0)
    acc = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    return acc.compose(event).get_epsilon(delta)


if __name__ == "__main__":
    import time

    import dp_audit

    print(f"JAX Privacy b-min-sep sensitivity {SENSITIVITY:.10f}, single participation "
          f"{SINGLE_SENSITIVITY:.10f}, dense C {minsep_sensitivity(DENSE):.10f}; "
          f"library's accountant: eps = {library_epsilon(1e-5):.4f} at delta = 1e-5")
    for name, mech in [("correct", correct), ("single_participation", single_participation),
                       ("unbanded_noise", unbanded_noise)]:
        start = time.perf_counter()
        rec = dp_audit.audit_callable(mech, CLAIM, D, D_PRIME, samples=200_000,
                                      failure_probability=1e-6, name=f"jax_privacy_mf_{name}")
        print(f"== {name}: claim {CLAIM}, true mu on the witness {TRUE_MU[name]:.4f}: "
              f"{rec.verdict} (mechanism layer: "
              f"{'violation' if rec.mechanism_violation else 'no violation'}, float layer: "
              f"{'violation' if rec.float_violation else 'no violation'}; "
              f"{time.perf_counter() - start:.1f} s)")
        print(rec.text())
