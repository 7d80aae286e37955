"""account: the same record as `audit accountant --json`, byte for byte, on a ledger file, on the
same events given as a list, and on one block of steps; account_bayesian: the same record as
`audit accountant --bayesian --json` on a distance file and on an array; errors as Python
exceptions.

Deterministic: the accountants are numerical (no sampling), so no false-failure rate applies.
"""

import json
import subprocess

import numpy as np
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


def test_fixed_size_batches_give_the_clis_record_and_the_ledgers_epsilon():
    """policy="fixed-size" (``--policy fixed-size``): the CLI's record, and the ε of the
    equivalent fixed-size ledger (docs/accountant.md, "Fixed-size batches": q = 2/8, z = 1,
    T = 4, replace-one, 14.192469 at δ = 1e-5, six decimals rounded up)."""
    kw = dict(sampling_rate=0.25, noise_multiplier=1, steps=4, delta=1e-5,
              neighbors="replace-one")
    rec = dp_audit.account(policy="fixed-size", **kw)
    flags = ["--sampling-rate", "0.25", "--noise-multiplier", "1", "--steps", "4", "--delta",
             "1e-5", "--neighbors", "replace-one", "--policy", "fixed-size"]
    assert rec.json() == cli(*flags, "--json")
    assert rec.text() == cli(*flags)
    assert rec.to_dict()["policy"] == "fixed-size"
    assert rec.text().startswith("Gaussian on fixed-size batches")
    ledger = dp_audit.account([{"event": "sampling", "probability": 0.25, "repetitions": 4,
                                "policy": "fixed-size"},
                               {"event": "gaussian-sum", "noise_multiplier": 1.0}],
                              delta=1e-5, neighbors="replace-one")
    assert rec.epsilon == ledger.epsilon and rec.epsilon_lower == ledger.epsilon_lower
    assert 14.192468 < rec.epsilon <= 14.192469
    # Poisson, the default, at the same rate: far below (a fixed-size batch displaces a record).
    poisson = dp_audit.account(**kw)
    assert poisson.to_dict()["policy"] == "poisson" and poisson.epsilon < 6
    assert dp_audit.account(policy="poisson", **kw).json() == poisson.json()
    inv = dp_audit.account(sampling_rate=0.25, target_epsilon=14.2, steps=4, delta=1e-5,
                           neighbors="replace-one", policy="fixed-size")
    assert inv.to_dict()["policy"] == "fixed-size" and 0.99 < inv.noise_multiplier <= 1.0


@pytest.mark.parametrize("kw,err,words", [
    (dict(sampling_rate=0.25, noise_multiplier=1, steps=4, delta=1e-5, policy="fixed-size"),
     ValueError, r"policy fixed-size: .*add-remove neighbors; allowed: replace-one neighbors"),
    (dict(sampling_rate=0.25, noise_multiplier=1, steps=4, delta=1e-5, policy="shuffled",
          neighbors="replace-one"),
     ValueError, "no accountant here amplifies shuffled batches"),
    (dict(sampling_rate=0.25, noise_multiplier=1, steps=4, delta=1e-5, policy="bogus"),
     ValueError, r'policy "bogus"; allowed: poisson or fixed-size'),
    (dict(sampling_rate=0.25, noise_multiplier=1, steps=4, delta=1e-5, policy=1),
     TypeError, "policy=1; allowed"),
    (dict(ledger=[], delta=1e-5, policy="fixed-size"), ValueError, "a ledger alone"),
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


# --- the Bayesian accountant (audit accountant --bayesian) ----------------------------------

DISTANCES = ROOT / "examples" / "bdp-distances.txt"
# A short run (T = 300 steps, not the example's 6000): the same code path, a few seconds.
BAYES = dict(sampling_rate=0.01, noise_multiplier=1.1, steps=300, delta=1e-5)
BAYES_FLAGS = ["--bayesian", "--sampling-rate", "0.01", "--noise-multiplier", "1.1", "--steps",
               "300", "--delta", "1e-5"]


def test_bayesian_on_a_distance_file_gives_the_clis_record():
    rec = dp_audit.account_bayesian(DISTANCES, **BAYES)
    flags = BAYES_FLAGS + ["--data", str(DISTANCES)]
    assert rec.json() == cli(*flags, "--json")
    assert rec.text() == cli(*flags)
    # The default (distribution-free) estimator bounds the cost by moving a DKW band's worth of
    # the samples (9.6 % at m = 1000, γ = 1e-8) to the clipping bound: below the moments
    # accountant (the Bayesian accountant at distance 1; here 1.344 against 1.521), though not
    # below the RDP accountant's better conversion (1.150) on this short run.
    assert rec.to_dict()["estimator_id"] == "distribution-free"
    assert 0 < rec.epsilon < rec.moments_epsilon
    assert rec.rdp_epsilon <= rec.moments_epsilon
    # The paper's Student-t estimate averages over the data: below the worst-case accountants'
    # ε for the same run (0.215 here).
    t = dp_audit.account_bayesian(DISTANCES, estimator="student-t", **BAYES)
    assert 0 < t.epsilon < t.rdp_epsilon
    assert t.to_dict()["distribution_free"]["account"]["epsilon"] == rec.epsilon


def test_bayesian_on_an_array_is_the_file_of_its_reprs(tmp_path):
    rng = np.random.default_rng(1)
    d = np.clip(rng.normal(0.4, 0.2, 500), 0.0, 2.0)
    (tmp_path / "d.txt").write_text("".join(repr(float(x)) + "\n" for x in d))
    # One draw (1.02) is above the default largest distance 1 of the distribution-free
    # estimator (the default): refused by name, accepted with max_distance=2.
    with pytest.raises(ValueError, match=r"distance sample .* max_distance"):
        dp_audit.account_bayesian(d, name="d.txt", **BAYES)
    kw = dict(BAYES, gamma=1e-7, distance_quantiles=[50, 99.5], markov_percentiles="90,99",
              max_distance=2)
    rec = dp_audit.account_bayesian(d, name="d.txt", **kw)
    assert rec.to_dict()["estimator_id"] == "distribution-free"
    assert rec.json() == cli(*BAYES_FLAGS, "--data", "d.txt", "--gamma", "1e-7",
                             "--distance-quantiles", "50,99.5", "--markov-percentiles", "90,99",
                             "--max-distance", "2", "--json", cwd=tmp_path)
    # The paper's Student-t estimator by name: the CLI's --estimator student-t, the
    # distribution-free ε beside it.
    rec = dp_audit.account_bayesian(d, name="d.txt", estimator="student-t", max_distance=2,
                                    **BAYES)
    assert rec.to_dict()["estimator_id"] == "student-t"
    assert rec.epsilon < rec.to_dict()["distribution_free"]["account"]["epsilon"]
    assert rec.json() == cli(*BAYES_FLAGS, "--data", "d.txt", "--estimator", "student-t",
                             "--max-distance", "2", "--json", cwd=tmp_path)
    # Binary distances (0 or 1) take the §4.3.1 binary estimator (Clopper–Pearson bound), as in the CLI.
    b = [0.0] * 90 + [1.0] * 10
    (tmp_path / "b.txt").write_text("".join(repr(x) + "\n" for x in b))
    rec = dp_audit.account_bayesian(b, name="b.txt", **BAYES)
    assert "Clopper–Pearson" in rec.to_dict()["estimator"]
    assert rec.json() == cli(*BAYES_FLAGS, "--data", "b.txt", "--json", cwd=tmp_path)


def test_bayesian_group_is_the_clis_group():
    # Proposition 4 (group privacy): K records give (K·ε_μ, K·e^{(K−1)ε_μ}·δ_μ), as --group K.
    rec = dp_audit.account_bayesian(DISTANCES, group=2, **BAYES)
    assert rec.json() == cli(*BAYES_FLAGS, "--data", str(DISTANCES), "--group", "2", "--json")
    g = rec.to_dict()["group"]
    assert g["records"] == 2 and g["per_record"]["epsilon"] == rec.epsilon
    assert 2 * rec.epsilon <= g["epsilon"] < 2 * rec.epsilon * (1 + 1e-9)
    want = 2 * np.exp(rec.epsilon) * BAYES["delta"]
    assert want <= g["delta"] < want * (1 + 1e-9)


def test_bayesian_target_epsilon_is_the_clis_calibration():
    # --target-epsilon with --bayesian: the smallest z whose ε_μ reaches the target, the
    # moments and PLD accountants' z beside it, then the account at that z.
    kw = dict(sampling_rate=0.01, steps=100, delta=1e-5)
    rec = dp_audit.account_bayesian(DISTANCES, target_epsilon=1.0, **kw)
    flags = ["--bayesian", "--sampling-rate", "0.01", "--steps", "100", "--delta", "1e-5",
             "--target-epsilon", "1", "--data", str(DISTANCES)]
    assert rec.json() == cli(*flags, "--json")
    cal = rec.calibration
    assert cal["noise_multiplier"] == rec.noise_multiplier
    assert rec.epsilon <= 1.0
    assert cal["moments_noise_multiplier"] > 0 and cal["dp_noise_multiplier"] > 0
    with pytest.raises(ValueError, match="exactly one of them"):
        dp_audit.account_bayesian(DISTANCES, **kw)


@pytest.mark.parametrize("data,kw,err,words", [
    ([0.1, 2.5], {}, ValueError, r"line 2: distance 2.5; allowed: 0 to 2"),
    ([0.1, float("nan")], {}, ValueError, "line 2"),
    ([[0.1, 0.2]], {}, ValueError, "1-D"),
    (["x"], {}, TypeError, "data"),
    ("no/such/distances.txt", {}, OSError, "no/such/distances.txt"),
    ([0.1, 0.2], dict(gamma=1e-4), ValueError, r"gamma 0.0001; allowed: 0 < γ < δ"),
    ([0.1, 0.2], dict(sampling_rate=0), ValueError, r"sampling_rate 0; allowed: 0 < q ≤ 1"),
    ([0.1, 0.2], dict(steps=0), ValueError, "steps=0"),
    ([0.1, 0.2], dict(delta=1.0), ValueError, r"delta 1; allowed: 0 < δ < 1"),
    ([0.1, 0.2, 0.3], dict(markov_percentiles=[100]), ValueError, "markov_percentiles 100"),
    ([0.1, 0.2], dict(estimator="student-t"), ValueError,
     r"data distances.txt: .*at least 3"),
    ([0.1, 0.2], dict(estimator="t"), ValueError, r"estimator \"t\"; allowed"),
    ([0.1, 0.2], dict(estimator=1), TypeError, "estimator=1"),
    ([0.1, 0.2, 0.3], dict(group=0), ValueError, "group=0"),
    ([0.1, 0.2, 0.3], dict(group=10**6 + 1), ValueError, "group 1000001: group of"),
    ([0.1, 0.2, 0.3], dict(group=10**5), ValueError, "not below 1"),
])
def test_bayesian_bad_settings_are_exceptions(data, kw, err, words):
    with pytest.raises(err, match=words):
        dp_audit.account_bayesian(data, **{**BAYES, **kw})
