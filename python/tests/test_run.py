"""audit_run: `audit run --exec` on a Python callable, in-process: the default dataset search,
ε estimate and confirming audits of an exec program, without a process per call.

False-failure probability: β = 1e-3 (the default) for a mechanism that keeps its claim, split
by the run over its search and layers; every mechanism here takes its randomness from the seed
it is given and the run's seed is fixed, so each test is deterministic.
"""

import numpy as np
import pytest

import dp_audit

# A short search of a fixed number of trials (a --budget in seconds would make the search
# depend on the machine's speed); the bug below shows on any dataset.
FLAGS = ["--trials", "4"]


def laplace_sum(scale):
    """A sum of records in [0, 1] with float Laplace noise: sensitivity 1, so scale 1/ε keeps
    pure:ε in the values (not in the float bits: check="mechanism")."""

    def mechanism(dataset, n, seed):
        rng = np.random.default_rng(seed)
        return float(np.clip(dataset, 0, 1).sum()) + rng.laplace(0.0, scale, n)

    return mechanism


def test_the_default_search_finds_too_little_noise_and_passes_enough():
    bad = dp_audit.audit_run(laplace_sum(0.25), "pure:1", check="mechanism", flags=FLAGS,
                             name="laplace_sum_quarter_noise")
    assert bad.violation_found and bad.to_dict()["verdict"] == "violation"
    ok = dp_audit.audit_run(laplace_sum(1.0), "pure:1", check="mechanism", flags=FLAGS,
                            name="laplace_sum")
    assert not ok.violation_found


def test_the_record_names_the_callable_and_its_reproduce_line_is_an_audit_command():
    rec = dp_audit.audit_run(laplace_sum(0.25), "pure:1", check="mechanism", flags=FLAGS,
                             name="laplace_sum_quarter_noise", text=True)
    assert "laplace_sum_quarter_noise" in rec.json()
    assert "audit run --exec laplace_sum_quarter_noise --claim pure:1" in rec.json()
    assert "VIOLATION" in rec.text()
    again = dp_audit.audit_run(laplace_sum(0.25), "pure:1", check="mechanism", flags=FLAGS,
                               name="laplace_sum_quarter_noise")
    assert again.json() == rec.json()  # deterministic


def test_errors_are_python_exceptions():
    with pytest.raises(ValueError, match="--bogus"):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", flags=["--bogus"])
    with pytest.raises(ValueError, match='epsilon = "x"'):
        dp_audit.audit_run(laplace_sum(1.0), "pure:x")
    with pytest.raises(ValueError, match="sequential"):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", flags=["--sequential"])

    calls = []

    def raises_later(dataset, n, seed):
        calls.append(n)
        if len(calls) > 1:
            raise KeyError("boom")
        return np.zeros(n)

    with pytest.raises(RuntimeError, match="boom"):
        dp_audit.audit_run(raises_later, "pure:1", flags=FLAGS)
