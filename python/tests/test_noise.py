"""dp_audit.noise: each sampler against its exact law, determinism per seed, bad inputs, and the
gate's verdict on a count written with it beside the textbook numpy version.

**Distribution tests.** Each draws N = 200,000 values with a fixed seed and computes Pearson's
chi-square statistic against the sampler's exact law, on the support points whose expected count
is at least 20 and two pooled tails (so every expected count is ≥ 20 and the chi-square
approximation of the statistic's null law is accurate). The bins are arranged so that the degrees
of freedom ν are even, where the chi-square survival function has the closed form
Q(x; 2m) = e^(−x/2)·Σ_{i<m} (x/2)^i/i!, computed exactly below (no scipy). A test fails when
p < 1e-6: a correct sampler fails it with probability about 1e-6 over the choice of the seed (for
the fixed seed used here the verdict is deterministic). Each test also checks its power: the
same samples against a law whose parameter is 5% off must give p < 1e-6, so the test can fail.

**Gate tests.** ``assert_dp`` fails a mechanism that keeps its claim with probability at most
its ``failure_probability`` (1e-6 by default) and is deterministic for its fixed seed.
"""

import math

import numpy as np
import pytest

import dp_audit
from dp_audit import noise

N = 200_000
P_THRESHOLD = 1e-6
MIN_EXPECTED = 20.0


# --- the chi-square test ----------------------------------------------------------------------


def chi2_sf_even(x, dof):
    """P[χ²_dof ≥ x] for an even dof, exactly: e^(−x/2)·Σ_{i<dof/2} (x/2)^i/i!."""
    assert dof % 2 == 0 and dof > 0
    h = x / 2.0
    if h == 0:
        return 1.0
    logs = [i * math.log(h) - math.lgamma(i + 1) for i in range(dof // 2)]
    top = max(logs)
    return math.exp(top - h + math.log(sum(math.exp(v - top) for v in logs)))


def chi2_p(samples, support, probs):
    """Pearson's chi-square p-value of ``samples`` against the law P(support[i]) = probs[i]
    (``support`` sorted, ``probs`` summing to 1 over the whole support): central points with
    expected count ≥ MIN_EXPECTED, the rest pooled into a left and a right tail, one more outer
    point pooled if needed so that the degrees of freedom are even."""
    support = np.asarray(support)
    probs = np.asarray(probs, dtype=np.float64)
    assert abs(probs.sum() - 1.0) < 1e-12, probs.sum()
    n = samples.size
    big = np.flatnonzero(probs * n >= MIN_EXPECTED)
    lo, hi = big[0], big[-1]  # central points support[lo..hi]; tails below lo and above hi
    while True:
        left, right = probs[:lo].sum(), probs[hi + 1:].sum()
        bins = (hi - lo + 1) + (left > 0) + (right > 0)
        if left * n >= MIN_EXPECTED and right * n >= MIN_EXPECTED and (bins - 1) % 2 == 0:
            break
        if left * n < MIN_EXPECTED or (right * n >= MIN_EXPECTED and (bins - 1) % 2):
            lo += 1  # pool one more point into the left tail
        else:
            hi -= 1
    edges = support[lo:hi + 1]
    observed = [np.count_nonzero(samples < edges[0])]
    observed += [np.count_nonzero(samples == v) for v in edges]
    observed += [np.count_nonzero(samples > edges[-1])]
    expected = n * np.concatenate([[left], probs[lo:hi + 1], [right]])
    observed = np.asarray(observed, dtype=np.float64)
    assert observed.sum() == n, "samples off the support"
    stat = float(((observed - expected) ** 2 / expected).sum())
    return chi2_sf_even(stat, len(expected) - 1), len(expected) - 1


def test_the_chi_square_helper_is_right():
    # ν = 2: Q(x) = e^(−x/2); ν = 4 at its median 3.356694: 0.5.
    assert chi2_sf_even(2.0, 2) == pytest.approx(math.exp(-1.0), rel=1e-15)
    assert chi2_sf_even(3.356694, 4) == pytest.approx(0.5, abs=1e-6)
    assert chi2_sf_even(80.0, 20) < 1e-6 < chi2_sf_even(40.0, 20)


# --- the exact laws ---------------------------------------------------------------------------


def discrete_laplace_law(t, k_max=400):
    k = np.arange(-k_max, k_max + 1)
    p = math.tanh(1 / (2 * t)) * np.exp(-np.abs(k) / t)
    return k, p / p.sum()  # the mass beyond k_max (< e^-160) renormalised away


def discrete_gaussian_law(sigma, k_max=200):
    k = np.arange(-k_max, k_max + 1)
    p = np.exp(-(k.astype(np.float64) ** 2) / (2 * sigma**2))
    return k, p / p.sum()


def laplace_cdf(z, lam):
    z = np.asarray(z, dtype=np.float64)
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0) / lam),
                    1 - 0.5 * np.exp(-np.maximum(z, 0) / lam))


def snapping_law(x, epsilon, bound, sensitivity=1.0, noise_factor=1.0):
    """The law of Δ·clamp_B(round_Λ(clamp_B(x/Δ) + Lap(λ))): λ = 1/ε, B = bound/Δ, Λ the
    smallest power of two ≥ 1/ε (the real-number law; the floating-point sampler differs from it
    by rounding errors of relative size 2^-50, far below what N samples resolve). A
    ``noise_factor`` ≠ 1 scales λ alone (a wrong law on the same grid)."""
    grid = 2.0 ** math.ceil(math.log2(1.0 / epsilon))
    lam = noise_factor / epsilon
    b = bound / sensitivity
    c = min(max(x / sensitivity, -b), b)
    j = np.arange(-math.floor(b / grid), math.floor(b / grid) + 1)
    points = j * grid
    upper = np.append((points[:-1] + points[1:]) / 2, np.inf)
    lower = np.insert((points[:-1] + points[1:]) / 2, 0, -np.inf)
    probs = laplace_cdf(upper - c, lam) - laplace_cdf(lower - c, lam)
    return points * sensitivity, probs


# --- each sampler against its law -------------------------------------------------------------


def test_discrete_laplace_has_its_exact_law():
    t = 2.5  # = 5/2: exercises the scale's denominator
    k = noise.discrete_laplace(np.zeros(N, dtype=np.int64), scale=t, seed=11)
    assert k.dtype == np.int64 and k.shape == (N,)
    p, dof = chi2_p(k, *discrete_laplace_law(t))
    assert p > P_THRESHOLD, (p, dof)
    p_wrong, _ = chi2_p(k, *discrete_laplace_law(1.05 * t))
    assert p_wrong < P_THRESHOLD, p_wrong
    # Added to the values: the noise of element i depends on the seed and i only.
    shifted = noise.discrete_laplace(np.full(N, 7, dtype=np.int64), scale=t, seed=11)
    assert np.array_equal(shifted - 7, k)


def test_discrete_gaussian_has_its_exact_law():
    sigma = 1.7  # not a dyadic simple number: σ² is taken exactly from the double 1.7
    k = noise.discrete_gaussian(np.zeros(N, dtype=np.int64), sigma=sigma, seed=12)
    assert k.dtype == np.int64
    p, dof = chi2_p(k, *discrete_gaussian_law(sigma))
    assert p > P_THRESHOLD, (p, dof)
    p_wrong, _ = chi2_p(k, *discrete_gaussian_law(1.05 * sigma))
    assert p_wrong < P_THRESHOLD, p_wrong


@pytest.mark.parametrize("x, epsilon, bound, sensitivity", [
    (1.3, 0.3, 40.0, 1.0),   # λ = 3.33…, grid Λ = 4, an answer off the grid, the clamp in reach
    (10.0, 2.0, 64.0, 4.0),  # sensitivity 4: outputs 4·M(2.5), grid 4·0.5 = 2
])
def test_snapping_laplace_has_its_law(x, epsilon, bound, sensitivity):
    y = noise.snapping_laplace(np.full(N, x), epsilon=epsilon, bound=bound,
                               sensitivity=sensitivity, seed=13)
    assert y.dtype == np.float64
    eps_prime, grid = noise.snapping_guarantee(epsilon=epsilon, bound=bound,
                                               sensitivity=sensitivity)
    assert np.all(np.abs(y) <= bound) and np.all(np.fmod(y, grid) == 0)
    assert epsilon < eps_prime < epsilon * (1 + 2.0**-40)
    p, dof = chi2_p(y, *snapping_law(x, epsilon, bound, sensitivity))
    assert p > P_THRESHOLD, (p, dof)
    p_wrong, _ = chi2_p(y, *snapping_law(x, epsilon, bound, sensitivity, noise_factor=1.05))
    assert p_wrong < P_THRESHOLD, p_wrong


def test_snapping_outputs_lie_on_the_grid_whatever_the_answer():
    x = np.array([0.0, 0.3, 2.0, 2.3, 1e-9, -5.7, 1e6, -1e300])
    y = noise.snapping_laplace(np.repeat(x, 1000), epsilon=3.0, bound=64.0, seed=3)
    assert np.all(np.fmod(y, 0.5) == 0) and np.all(np.abs(y) <= 64.0)
    # No −0.0: the sign of a zero would be representation the value does not carry.
    zeros = y[y == 0]
    assert zeros.size > 100 and not np.signbit(zeros).any()
    # An answer beyond the bound is clamped first: P(output = B) = P(Lap(1/3) ≥ −1/4) ≈ 0.76
    # (a binomial of 1000 draws is above 1/2 but for a probability below 1e-50).
    assert np.mean(y[-2000:-1000] == 64.0) > 0.5 and np.mean(y[-1000:] == -64.0) > 0.5


# --- determinism ------------------------------------------------------------------------------


SAMPLERS = [
    (lambda v, **k: noise.snapping_laplace(v, epsilon=1.0, bound=1024.0, **k), 1.5),
    (lambda v, **k: noise.discrete_laplace(v, scale=3.0, **k), 2),
    (lambda v, **k: noise.discrete_gaussian(v, sigma=3.0, **k), 2),
]


@pytest.mark.parametrize("sampler, value", SAMPLERS)
def test_a_seed_gives_one_array(sampler, value):
    v = np.full((3, 3000), value)
    a, b = sampler(v, seed=5), sampler(v, seed=5)
    assert a.shape == v.shape and np.array_equal(a, b)
    assert not np.array_equal(a, sampler(v, seed=6))
    # The shape does not matter (C order), nor what follows an element (chunks of 4096).
    assert np.array_equal(sampler(v.reshape(-1), seed=5), a.reshape(-1))
    assert np.array_equal(sampler(v.reshape(-1)[:5000], seed=5), a.reshape(-1)[:5000])
    # seed=None: fresh OS randomness each call.
    assert not np.array_equal(sampler(v, seed=None), sampler(v, seed=None))
    # Scalars and lists give arrays of their shape.
    assert sampler(value, seed=1).shape == ()
    assert sampler([value, value], seed=1).shape == (2,)
    assert sampler(np.zeros(0, dtype=type(value)), seed=1).shape == (0,)


def test_the_same_seed_gives_the_same_numbers_on_every_machine():
    # Pinned: changing the key derivation, the chunking or a sampler changes these.
    assert noise.discrete_laplace(np.zeros(8, dtype=np.int64), scale=2.0, seed=2026).tolist() \
        == GOLDEN_LAPLACE
    assert noise.discrete_gaussian(np.zeros(8, dtype=np.int64), sigma=2.0, seed=2026).tolist() \
        == GOLDEN_GAUSSIAN
    assert noise.snapping_laplace(np.zeros(8), epsilon=2.0, bound=64.0, seed=2026).tolist() \
        == GOLDEN_SNAPPING


GOLDEN_LAPLACE = [4, 2, -4, 1, -6, 1, -5, 4]
GOLDEN_GAUSSIAN = [-1, -1, 6, -2, -1, -2, 1, 1]
GOLDEN_SNAPPING = [0.0, 0.0, -1.5, 2.0, 0.5, 0.5, 1.0, 0.0]


# --- bad inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("call, error, words", [
    (lambda: noise.discrete_laplace([1], scale=-1.0, seed=1), ValueError,
     ["scale=-1.0", "allowed: a finite number"]),
    (lambda: noise.discrete_laplace([1], scale=float("nan"), seed=1), ValueError, ["scale=nan"]),
    (lambda: noise.discrete_laplace([1], scale=2.0**41, seed=1), ValueError, ["2^40"]),
    (lambda: noise.discrete_laplace([1], scale=1e-30, seed=1), ValueError, ["2^-64"]),
    (lambda: noise.discrete_laplace([1], scale="2", seed=1), TypeError, ["scale='2'"]),
    (lambda: noise.discrete_laplace([1], scale=True, seed=1), TypeError, ["scale=True"]),
    (lambda: noise.discrete_laplace([1.5], scale=1.0, seed=1), TypeError,
     ["dtype float64", "integer"]),
    (lambda: noise.discrete_laplace([2**70], scale=1.0, seed=1), TypeError, ["dtype object"]),
    (lambda: noise.discrete_laplace(np.array([2**64 - 1], dtype=np.uint64), scale=1.0, seed=1),
     ValueError, ["int64"]),
    (lambda: noise.discrete_laplace(np.full(100, 2**63 - 1), scale=1.0, seed=1), ValueError,
     ["overflows int64", "values["]),
    (lambda: noise.discrete_gaussian([1], sigma=0.0, seed=1), ValueError, ["sigma=0.0"]),
    (lambda: noise.discrete_gaussian([1], sigma=float("inf"), seed=1), ValueError, ["sigma=inf"]),
    (lambda: noise.discrete_gaussian([True], sigma=1.0, seed=1), TypeError, ["dtype bool"]),
    (lambda: noise.snapping_laplace([1.0], epsilon=0, bound=10.0, seed=1), ValueError,
     ["epsilon=0", "> 0"]),
    (lambda: noise.snapping_laplace([1.0], epsilon=1.0, bound=0.5, seed=1), ValueError,
     ["bound=0.5", "Theorem 1"]),
    (lambda: noise.snapping_laplace([1.0], epsilon=1.0, bound=2.0**47, seed=1), ValueError,
     ["bound=", "2^46"]),
    (lambda: noise.snapping_laplace([1.0], epsilon=1.0, bound=10.0, sensitivity=3, seed=1),
     ValueError, ["sensitivity=3", "power of two", "(4)"]),
    (lambda: noise.snapping_laplace([1.0, float("nan")], epsilon=1.0, bound=10.0, seed=1),
     ValueError, ["nan", "index 1", "finite"]),
    (lambda: noise.snapping_laplace(["a"], epsilon=1.0, bound=10.0, seed=1), TypeError,
     ["dtype <U1"]),
    (lambda: noise.snapping_laplace([1.0], epsilon=1.0, bound=10.0, seed=-1), ValueError,
     ["seed=-1", "[0, 2^64)"]),
    (lambda: noise.snapping_laplace([1.0], epsilon=1.0, bound=10.0, seed=2**64), ValueError,
     ["seed="]),
    (lambda: noise.snapping_laplace([1.0], epsilon=1.0, bound=10.0, seed=1.0), TypeError,
     ["seed=1.0"]),
    (lambda: noise.snapping_laplace([1.0], epsilon=1.0, bound=10.0,
                                    seed=np.random.default_rng(1)), TypeError, ["seed=Generator"]),
    (lambda: noise.snapping_laplace([1.0], 1.0, 10.0), TypeError, ["positional"]),
])
def test_bad_inputs_are_named(call, error, words):
    with pytest.raises(error) as e:
        call()
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_numpy_scalars_and_integers_are_accepted():
    a = noise.discrete_laplace(np.arange(5, dtype=np.int32), scale=np.float32(2.0),
                               seed=np.uint64(3))
    assert a.dtype == np.int64
    assert np.array_equal(a, noise.discrete_laplace(np.arange(5), scale=2, seed=3))


# --- the gate: the float layer passes with dp_audit.noise, fails with textbook noise ----------


EPSILON = 2.0  # grid Λ = 1/2: the outputs are not integers, so the float layer really runs
BOUND = 1024.0
D = [0.5, 0.5, 0.5, 0.5]
PAIRS = [(D, D + [1.0])]  # add one record: the count moves by 1 (sensitivity 1)


def textbook_count(dataset, n, seed):
    """|D| + Laplace(1/ε) noise from numpy: right on real numbers, leaks in binary64."""
    return len(dataset) + np.random.default_rng(seed).laplace(0.0, 1.0 / EPSILON, n)


def snapped_count(dataset, n, seed):
    """The same count with dp_audit.noise's snapping Laplace."""
    return noise.snapping_laplace(np.full(n, float(len(dataset))), epsilon=EPSILON, bound=BOUND,
                                  seed=seed)


def discrete_count(dataset, n, seed):
    """The count with exact discrete Laplace noise of scale 1/ε (pure ε-DP)."""
    return noise.discrete_laplace(np.full(n, len(dataset)), scale=1.0 / EPSILON, seed=seed)


SNAPPED_EPSILON = noise.snapping_guarantee(epsilon=EPSILON, bound=BOUND)[0]


def test_a_snapped_count_passes_both_layers():
    rec = dp_audit.assert_dp(snapped_count, f"pure:{SNAPPED_EPSILON!r}", PAIRS, check="both")
    assert not rec.violation_found
    assert "skipped" not in rec.text(), rec.text()  # the float layer ran, and passed
    assert "floating-point (the outputs' representation) layer" in rec.text()


def test_a_discrete_laplace_count_passes_both_layers():
    rec = dp_audit.assert_dp(discrete_count, f"pure:{EPSILON}", PAIRS, check="both")
    assert not rec.violation_found
    assert "skipped" in rec.text()  # integer outputs: nothing in the representation to leak


def test_the_textbook_count_fails_the_float_layer_and_is_told_dp_audit_noise():
    with pytest.raises(AssertionError) as e:
        dp_audit.assert_dp(textbook_count, f"pure:{EPSILON}", PAIRS, check="both")
    msg = str(e.value)
    assert "violation in the floating-point layer" in msg, msg
    assert "VIOLATION FOUND in the floating-point layer" in msg, msg
    for name in ["dp_audit.noise.snapping_laplace", "dp_audit.noise.discrete_laplace",
                 "dp_audit.noise.discrete_gaussian", 'check="mechanism"']:
        assert name in msg, (name, msg)
    assert "dp_audit::" not in msg and "check_layers" not in msg, msg
    # The algorithm itself is right: the mechanism layer alone passes it.
    dp_audit.assert_dp(textbook_count, f"pure:{EPSILON}", PAIRS, check="mechanism")
