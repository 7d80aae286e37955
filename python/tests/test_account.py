"""account: the same record as `audit accountant --json`, byte for byte, on a ledger file, on the
same events given as a list, and on one block of steps; errors as Python exceptions.

Deterministic: the accountants are numerical (no sampling), so no false-failure rate applies.
"""

import json
import subprocess

import pytest

import dp_audit
from test_samples import ROOT, audit_binary

LEDGER = ROOT / "examples" / "ledger" / "dpsgd.jsonl"


def events():
    return [json.loads(l) for l in LEDGER.read_text().splitlines()
            if l.strip() and not l.startswith("#")]


def cli(*args, cwd=ROOT):
    out = subprocess.run([audit_binary(), "accountant", *args], cwd=cwd, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_ledger_file_gives_the_clis_record():
    path = str(LEDGER)
    rec = dp_audit.account(LEDGER, delta=1e-5)  # a Path or a str
    assert rec.json() == cli("--ledger", path, "--delta", "1e-5", "--json")
    assert rec.text() == cli("--ledger", path, "--delta", "1e-5")
    assert rec.epsilon_lower <= rec.epsilon  # the true ε lies between the PLD's two bounds
    assert rec.rdp_epsilon >= rec.epsilon_lower  # RDP is an upper bound too (looser)


def test_a_list_of_events_is_the_file_of_their_json_lines(tmp_path):
    evs = events()
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    rec = dp_audit.account(evs, delta=1e-5, name="run.jsonl", neighbors="replace-one")
    assert rec.json() == cli("--ledger", "run.jsonl", "--delta", "1e-5", "--neighbors",
                             "replace-one", "--json", cwd=tmp_path)
    assert rec.rdp_epsilon is None  # RDP is for add-remove only, and the record says so


def test_one_block_of_steps_and_the_inverse():
    rec = dp_audit.account(sampling_rate=0.01, noise_multiplier=1.1, steps=100, delta=1e-5)
    assert rec.json() == cli("--sampling-rate", "0.01", "--noise-multiplier", "1.1", "--steps",
                             "100", "--delta", "1e-5", "--json")
    inv = dp_audit.account(sampling_rate=0.01, target_epsilon=rec.epsilon, steps=100, delta=1e-5)
    assert inv.json() == cli("--sampling-rate", "0.01", "--target-epsilon", repr(rec.epsilon),
                             "--steps", "100", "--delta", "1e-5", "--json")
    # z = 1.1 reaches that ε: the search finds it back, erring high by at most its relative
    # tolerance (pld.rs NOISE_SEARCH_RELATIVE_TOLERANCE = 1e-4).
    assert 1.1 * (1 - 1e-4) <= inv.noise_multiplier <= 1.1 * (1 + 1e-4)


@pytest.mark.parametrize("kw,err,words", [
    (dict(ledger=[{"event": "sampling", "probability": 2, "repetitions": 1},
                  {"event": "gaussian-sum", "noise_multiplier": 1}], delta=1e-5),
     ValueError, "probability"),
    (dict(ledger=[{"event": "bogus"}], delta=1e-5), ValueError, "ledger.jsonl"),
    (dict(ledger=["not a dict"], delta=1e-5), TypeError, r"ledger\[0\]"),
    (dict(ledger=42, delta=1e-5), TypeError, "allowed"),
    (dict(ledger="no/such/ledger.jsonl", delta=1e-5), OSError, "no/such/ledger.jsonl"),
    (dict(ledger=[], delta=1e-5, steps=3), ValueError, "a ledger alone"),
    (dict(sampling_rate=0.01, steps=10, delta=1e-5), ValueError, "noise_multiplier"),
    (dict(sampling_rate=1.5, noise_multiplier=1, steps=10, delta=1e-5), ValueError,
     r"sampling_rate 1.5; allowed: 0 < q ≤ 1"),
    (dict(sampling_rate=0.1, noise_multiplier=1, steps=0, delta=1e-5), ValueError, "steps=0"),
    (dict(sampling_rate=0.1, noise_multiplier=1, steps=10, delta=2.0), ValueError,
     r"delta 2; allowed: 0 < δ < 1"),
    (dict(sampling_rate=0.1, noise_multiplier=1, steps=10, delta=1e-5, neighbors="x"),
     ValueError, "neighbors x; allowed"),
])
def test_bad_settings_are_exceptions(kw, err, words):
    with pytest.raises(err, match=words):
        dp_audit.account(**kw)
