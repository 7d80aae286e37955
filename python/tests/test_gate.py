"""The gate in pytest: a correct noisy count passes, the same count with halved noise fails.

False-failure probability: ``assert_dp`` fails a mechanism that keeps its claim with probability
at most ``failure_probability`` = 1e-6 (its default; β split evenly over the pairs, the layers and
each audit's bounds). The seed is fixed (``dp_audit.DEFAULT_GATE_SEED``), so each test below is
deterministic: the same code gives the same verdict on every run and machine.
"""

import numpy as np
import pytest

import dp_audit

EPSILON = 1.0
D = [0.5, 0.5, 0.5, 0.5]
PAIRS = [(D, D + [1.0])]  # add one record: the count moves by 1


def _count(noise_epsilon):
    """|D| + two-sided geometric noise (the discrete Laplace of parameter e^-ε'): the
    difference of two i.i.d. geometric variables. The outputs are integers, so their
    floating-point representation is exact and cannot leak (the gate skips that layer and says
    so); a float Laplace noise added to the count would leak through its low bits (Mironov
    2012) and fail the float layer, which is why the correct mechanism is built this way."""

    def noisy_count(dataset, n, seed):
        rng = np.random.default_rng(seed)
        p = 1.0 - np.exp(-noise_epsilon)
        noise = rng.geometric(p, n) - rng.geometric(p, n)
        return (len(dataset) + noise).astype(np.float64)

    return noisy_count


correct_count = _count(EPSILON)
halved_noise_count = _count(2 * EPSILON)  # noise scale 1/(2ε): half the noise the claim needs


def laplace_sum(dataset, n, seed):
    """A clamped sum with float Laplace noise of scale 1/ε: right in the real-valued model, so
    it is gated with check="mechanism" (its float layer would fail, as for any textbook
    float Laplace)."""
    rng = np.random.default_rng(seed)
    return float(np.clip(dataset, 0, 1).sum()) + rng.laplace(0.0, 1.0 / EPSILON, n)


def test_correct_count_passes():
    rec = dp_audit.assert_dp(correct_count, f"pure:{EPSILON}", PAIRS)
    assert not rec.violation_found
    assert "skipped" in rec.text()  # integer outputs: the float layer is skipped, and says why


def test_float_laplace_passes_the_mechanism_layer():
    dp_audit.assert_dp(laplace_sum, f"pure:{EPSILON}", PAIRS, check="mechanism")


def test_halved_noise_fails_with_a_readable_message():
    with pytest.raises(AssertionError) as e:
        dp_audit.assert_dp(halved_noise_count, f"pure:{EPSILON}", PAIRS)
    msg = str(e.value)
    assert "does not keep its claim pure:1" in msg
    assert "violation in the mechanism layer" in msg
    assert "VIOLATION FOUND in the mechanism layer" in msg
    assert "reproduce" in msg


def test_audit_callable_is_deterministic():
    a = dp_audit.audit_callable(halved_noise_count, "pure:1", D, D + [1.0], samples=20_000)
    b = dp_audit.audit_callable(halved_noise_count, "pure:1", D, D + [1.0], samples=20_000)
    assert a.json() == b.json() and a.mechanism_violation


def test_callable_errors_are_python_exceptions():
    def raises(dataset, n, seed):
        raise KeyError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        dp_audit.audit_callable(raises, "pure:1", D, D + [1.0], samples=1000)

    calls = []

    def wrong_shape(dataset, n, seed):
        calls.append(n)
        return np.zeros(2 if len(calls) == 1 else n + 1)

    with pytest.raises(ValueError, match="shape"):
        dp_audit.audit_callable(wrong_shape, "pure:1", D, D + [1.0], samples=1000)

    def nan(dataset, n, seed):
        return np.full(n, np.nan)

    with pytest.raises(ValueError, match="finite|nan"):
        dp_audit.audit_callable(nan, "pure:1", D, D + [1.0], samples=1000)

    with pytest.raises(ValueError, match="allowed"):
        dp_audit.audit_callable(correct_count, "pure:x", D, D + [1.0], samples=1000)
