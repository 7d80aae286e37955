"""test_samples: the same record as `audit test` on the same releases, byte for byte."""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dp_audit

ROOT = Path(__file__).resolve().parents[2]


def audit_binary():
    """The CLI built from this checkout (target/release/audit), or $DP_AUDIT_BIN."""
    b = os.environ.get("DP_AUDIT_BIN") or str(ROOT / "target" / "release" / "audit")
    if not Path(b).exists():
        pytest.skip(f"the audit CLI is not built at {b} (cargo build --release)")
    return b


def sides(seed, n=20_000, shift=1.0, dim=1):
    r = np.random.default_rng(seed)
    return r.laplace(0, 1, (n, dim)), r.laplace(shift, 1, (n, dim))


@pytest.mark.parametrize("claim,seed,check,dim", [
    ("pure:0.5", 0, "both", 1),      # a violation in the mechanism layer
    ("pure:2", 7, "mechanism", 1),   # no violation
    ("approx:1:1e-5", 3, "both", 2),
])
def test_json_is_the_clis_byte_for_byte(tmp_path, claim, seed, check, dim):
    a, b = sides(1, dim=dim)
    rec = dp_audit.test_samples(a, b, claim, seed=seed, check=check)
    dp_audit.write_samples(a, tmp_path / "a.bin")
    dp_audit.write_samples(b, tmp_path / "b.bin")
    # The record's own reproduce line is the command that gives it.
    cmd = shlex.split(rec.reproduce)
    assert cmd[0] == "audit"
    out = subprocess.run([audit_binary(), *cmd[1:], "--json", "--no-report"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == rec.code, out.stderr
    assert out.stdout == rec.json()
    text = subprocess.run([audit_binary(), *cmd[1:], "--no-report"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert text.stdout == rec.text()


@pytest.mark.parametrize("claim,kw", [
    ("pure:0.5", dict()),                                   # a violation, stops early
    ("pure:2", dict(max_samples=5000, first_batch=50, check="mechanism", seed=4)),
])
def test_sequential_is_the_clis_byte_for_byte(tmp_path, claim, kw):
    """`audit test --sequential`: the betting test on the releases in their order, both
    renderings the CLI's on the same files."""
    a, b = sides(1)
    rec = dp_audit.test_samples(a, b, claim, sequential=True, **kw)
    dp_audit.write_samples(a, tmp_path / "a.bin")
    dp_audit.write_samples(b, tmp_path / "b.bin")
    cmd = shlex.split(rec.reproduce)
    assert "--sequential" in cmd
    out = subprocess.run([audit_binary(), *cmd[1:], "--json", "--no-report"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == rec.code, out.stderr
    assert out.stdout == rec.json()
    text = subprocess.run([audit_binary(), *cmd[1:], "--no-report"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert text.stdout == rec.text()
    # Laplace(0, 1) against Laplace(1, 1) is exactly 1-DP: pure:0.5 is refuted, pure:2 is not.
    assert rec.violation_found == (claim == "pure:0.5")


def test_halved_noise_is_a_mechanism_violation():
    r = np.random.default_rng(5)
    # Laplace sum of 10 records in [0, 1] for ε = 1 with noise of scale 0.5 (half of 1/ε).
    a = 5.0 + r.laplace(0, 0.5, 50_000)
    b = 6.0 + r.laplace(0, 0.5, 50_000)
    rec = dp_audit.test_samples(a, b, "pure:1", check="mechanism")
    assert rec.violation_found and rec.verdict == "violation"
    assert "mechanism (real-valued)" in rec.text()


@pytest.mark.parametrize("bad,err,words", [
    (dict(claim="pure:-1"), ValueError, "pure:-1"),
    (dict(claim="bogus:1"), ValueError, "allowed"),
    (dict(check="bits"), ValueError, "allowed"),
    (dict(failure_probability=2.0), ValueError, "0 < β < 1"),
    (dict(testers="nope"), ValueError, "nope"),
    (dict(max_samples=100), ValueError, "sequential=True"),
    (dict(sequential=True, testers="mmd"), ValueError, "betting test"),
    (dict(sequential=True, first_batch=0), ValueError, "first_batch=0"),
])
def test_bad_settings_are_exceptions(bad, err, words):
    a, b = sides(2, n=1000)
    kw = dict(claim="pure:1")
    kw.update(bad)
    with pytest.raises(err, match=words):
        dp_audit.test_samples(a, b, **kw)


def test_bad_arrays_are_exceptions():
    a, b = sides(3, n=1000)
    a[10, 0] = np.nan
    with pytest.raises(ValueError, match=r"a\[10, 0\] is nan"):
        dp_audit.test_samples(a, b, "pure:1")
    with pytest.raises(ValueError, match="shape"):
        dp_audit.test_samples(np.zeros((2, 2, 2)), b, "pure:1")
    with pytest.raises(ValueError, match="dimension"):
        dp_audit.test_samples(np.zeros((10, 2)), b, "pure:1")
    with pytest.raises(TypeError):
        dp_audit.test_samples(["x", "y"], b, "pure:1")
