"""Every answer consistent (issue 50): what a numpy user gets wrong is named by argument and by
what is allowed, what a mechanism returns is audited as it is or refused, and the page and the
record say the same thing.

False-failure rates: the correct mechanisms here are gated at β = 1e-6 (`assert_dp`'s default)
or audited at the package's default β = 1e-3 and asserted not to violate, so each such test
fails on a correct mechanism with at most that probability (all are seeded, so a given run is
deterministic). The buggy mechanisms are power checks on gross bugs (the exact count, noise at a
quarter of its scale).
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dp_audit

ROOT = Path(__file__).resolve().parents[2]


def audit_binary() -> str:
    return os.environ.get("DP_AUDIT_BIN") or str(ROOT / "target" / "release" / "audit")


def laplace_count(data, n, seed):
    return float(len(data)) + np.random.default_rng(seed).laplace(0.0, 1.0, n)


D, D_PRIME = [1.0, 0.0, 1.0], [1.0, 0.0]


# --- what the mechanism returns ------------------------------------------------------------


def test_complex_releases_are_a_type_error_not_their_real_part():
    """The imaginary part carries the exact count: converting to float64 would drop it and the
    audit would pass a mechanism that publishes the data."""

    def leaks_in_the_imaginary_part(data, n, seed):
        noise = np.random.default_rng(seed).laplace(0.0, 1.0, n)
        return noise + 1j * len(data)

    with pytest.raises(TypeError, match="complex numbers"):
        dp_audit.audit_callable(leaks_in_the_imaginary_part, "pure:1", D, D_PRIME, samples=1000)


def test_complex_releases_after_the_first_call_are_a_type_error_too():
    """The probe's call (n = 2) is real; the audit's calls are complex: refused there too."""

    def complex_later(data, n, seed):
        out = np.random.default_rng(seed).laplace(0.0, 1.0, n)
        return out if n == 2 else out + 1j * len(data)

    with pytest.raises(TypeError, match="complex numbers"):
        dp_audit.audit_callable(complex_later, "pure:1", D, D_PRIME, samples=1000,
                                check="mechanism")


def test_an_array_of_none_is_a_type_error_naming_objects_not_nan():
    with pytest.raises(TypeError, match="Python objects"):
        dp_audit.audit_callable(lambda data, n, seed: [None] * n, "pure:1", D, D_PRIME,
                                samples=1000)


def test_a_mechanism_that_edits_its_input_in_place_is_audited_on_the_pair_given():
    """Every call, the first included, gets its own copy of the dataset: an edit in place
    changes neither the pair nor the next call. The count with Laplace noise keeps pure:1
    (gated at β = 1e-6)."""
    d = np.array(D)

    def edits_in_place(data, n, seed):
        count = float(len(data))
        data += 1000.0  # a careless in-place edit
        return count + np.random.default_rng(seed).laplace(0.0, 1.0, n)

    dp_audit.assert_dp(edits_in_place, "pure:1", [(d, D_PRIME)], check="mechanism",
                       samples=20_000)
    assert d.tolist() == D  # the caller's array is untouched


# --- arguments named, with what is allowed --------------------------------------------------


@pytest.mark.parametrize("samples", [2**64, 50, 0, -1])
def test_samples_out_of_range_names_the_argument_and_the_range(samples):
    for call in (lambda: dp_audit.audit_callable(laplace_count, "pure:1", D, D_PRIME,
                                                 samples=samples),
                 lambda: dp_audit.audit_run(laplace_count, "pure:1", samples=samples)):
        with pytest.raises(ValueError, match=r"samples=.*allowed: an integer from 100 to"):
            call()


def test_samples_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"samples=1000\.0; allowed: an integer from 100"):
        dp_audit.audit_callable(laplace_count, "pure:1", D, D_PRIME, samples=1000.0)


def test_one_sample_minimum_in_every_entry_point():
    """The same 100 releases per side are accepted by the gate and by audit_run."""
    dp_audit.audit_callable(laplace_count, "pure:1", D, D_PRIME, samples=100, check="mechanism")
    with pytest.raises(ValueError, match="from 100"):
        dp_audit.audit_run(laplace_count, "pure:1", samples=99)


@pytest.mark.parametrize("name", [123, "", b"m"])
def test_a_bad_name_says_which_argument(name):
    for call in (lambda: dp_audit.audit_callable(laplace_count, "pure:1", D, D_PRIME,
                                                 name=name),
                 lambda: dp_audit.audit_run(laplace_count, "pure:1", name=name)):
        with pytest.raises(TypeError, match=r"^name="):
            call()


def test_write_samples_to_an_unwritable_path_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="cannot be written"):
        dp_audit.write_samples(np.zeros(10), str(tmp_path / "no-such-dir" / "a.bin"))


# --- reproduce lines name the function as the user imports it ------------------------------


def test_a_nested_function_is_named_by_its_own_name_not_its_qualified_one():
    def outer():
        def noisy_count(data, n, seed):
            return laplace_count(data, n, seed)
        return noisy_count

    rec = dp_audit.audit_callable(outer(), "pure:1", D, D_PRIME, samples=1000,
                                  check="mechanism")
    assert rec.name == "noisy_count"
    assert "<locals>" not in rec.reproduce and "assert_dp(noisy_count," in rec.reproduce


def test_a_module_function_is_named_with_its_import():
    rec = dp_audit.audit_callable(laplace_count, "pure:1", D, D_PRIME, samples=1000,
                                  check="mechanism")
    assert rec.reproduce.startswith(f"from {laplace_count.__module__} import laplace_count; "
                                    "dp_audit.assert_dp(laplace_count,"), rec.reproduce


# --- ledger claims in process ----------------------------------------------------------------


def test_a_ledger_claim_is_audited_in_process(tmp_path):
    """`ledger:FILE[:DELTA]`, as `audit run --claim` takes it: one Gaussian sum at noise
    multiplier 1 on a sum of sensitivity 1 keeps the PLD accountant's (ε, δ) at δ = 1e-5
    (gated at β = 1e-6); noise at a quarter of that scale does not."""
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text('{"event": "sampling", "probability": 1.0, "repetitions": 1}\n'
                      '{"event": "gaussian-sum", "noise_multiplier": 1.0}\n')

    def gaussian_sum(sigma):
        def m(data, n, seed):
            return float(np.sum(data)) + np.random.default_rng(seed).normal(0.0, sigma, n)
        return m

    claim = f"ledger:{ledger}:1e-5"
    dp_audit.assert_dp(gaussian_sum(1.0), claim, [(D, D_PRIME)], check="mechanism",
                       samples=50_000, name="gaussian_sum")
    with pytest.raises(AssertionError, match="violation in the mechanism layer"):
        dp_audit.assert_dp(gaussian_sum(0.25), claim, [(D, D_PRIME)], check="mechanism",
                           samples=50_000, name="gaussian_sum_quarter")


def test_a_missing_ledger_names_the_claim():
    with pytest.raises((ValueError, OSError), match=r"claim='ledger:/no/such/ledger.jsonl'"):
        dp_audit.audit_callable(laplace_count, "ledger:/no/such/ledger.jsonl", D, D_PRIME,
                                samples=1000)


# --- the page says what the record says ------------------------------------------------------


def test_the_page_of_a_budgeted_run_shows_how_hard_it_looked_and_the_records_layout(tmp_path):
    rec = dp_audit.audit_run(laplace_count, "pure:1", record_range=(0, 1), dataset_size=3,
                             check="mechanism", flags=["--budget", "15"])
    d = rec.to_dict()
    assert "effort" in d, list(d)
    saved = tmp_path / "record.json"
    saved.write_text(rec.json())
    out = subprocess.run([audit_binary(), "report", str(saved), "--report-dir",
                          str(tmp_path / "reports")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (html,) = (tmp_path / "reports").glob("*/index.html")
    page = html.read_text()
    assert "how hard it looked" in page
    assert f"audit.json layout {d['schema_version']}" in page
    assert "report schema" not in page


# --- one layer, one answer -------------------------------------------------------------------


def test_no_layer_block_says_both_no_violation_and_violated():
    """Float noise at a fifth of its scale (OpenDP's scale-1 misuse on a sum of sensitivity 5,
    in numpy), in each layer alone and both, at a few sizes: wherever the text says the claim is
    violated, the verdict is a violation (deterministic: seeded)."""

    def wrong_scale(data, n, seed):
        return float(np.sum(data)) + np.random.default_rng(seed).laplace(0.0, 1.0, n)

    d, d_prime = [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0, 5.0]
    for check in ("float", "mechanism", "both"):
        for samples in (300, 3000):
            rec = dp_audit.audit_callable(wrong_scale, "pure:1", d, d_prime, samples=samples,
                                          check=check)
            for block in rec.text().split("\n--- pair ")[1:]:
                if "the claim is violated" in block:
                    assert "verdict      violation found" in block, block


# --- one pin -------------------------------------------------------------------------------


def test_every_page_pins_the_scikit_learn_the_tests_install():
    """The scikit-learn range tests/python.rs installs is the one every doc and example names."""
    import re

    pin = re.search(r'"scikit-learn([^"]*)"', (ROOT / "tests" / "python.rs").read_text()).group(1)
    files = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md",
             *(ROOT / "examples").rglob("*.py"), *(ROOT / "python").rglob("*.py"),
             *(ROOT / "tests").glob("*.rs")]
    for f in files:
        for m in re.finditer(r"scikit-learn\s*([<>=][^\"'`\s)]*)", f.read_text(errors="replace")):
            assert m.group(1) == pin, f"{f}: scikit-learn{m.group(1)}; the tests install {pin}"
