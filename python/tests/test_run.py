"""audit_run: `audit run --exec` on a Python callable, in-process: the default dataset search,
ε estimate and confirming audits of an exec program, without a process per call.

False-failure probability: β = 1e-3 (the default) for a mechanism that keeps its claim, split
by the run over its search and layers; every mechanism here takes its randomness from the seed
it is given and the run's seed is fixed, so each test is deterministic.
"""

import json
import math
import random
import shlex
import subprocess

import numpy as np
import pytest

import dp_audit
from test_samples import ROOT, audit_binary

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
    # A sequential audit tests one given pair (a program has no witness pair).
    with pytest.raises(ValueError, match="--pairs FILE"):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", flags=["--sequential"])

    calls = []

    def raises_later(dataset, n, seed):
        calls.append(n)
        if len(calls) > 1:
            raise KeyError("boom")
        return np.zeros(n)

    with pytest.raises(RuntimeError, match="boom"):
        dp_audit.audit_run(raises_later, "pure:1", flags=FLAGS)


def test_setting_and_privacy_unit_are_refused_as_the_cli_refuses_them():
    # The CLI's checks of --setting/--privacy-unit for --exec, its words (exit code 2 there).
    with pytest.raises(ValueError, match='--setting "bogus"; allowed: central, local or shuffle'):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", setting="bogus", flags=FLAGS)
    with pytest.raises(ValueError, match=r'--privacy-unit " "; allowed: 1 to 200 characters'):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", privacy_unit=" ", flags=FLAGS)
    with pytest.raises(ValueError, match="no control characters"):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", privacy_unit="one\nrecord", flags=FLAGS)
    with pytest.raises(ValueError, match="1 to 200 characters"):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", privacy_unit="x" * 201, flags=FLAGS)
    with pytest.raises(ValueError, match='--setting "bogus"'):  # the same through flags
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", flags=FLAGS + ["--setting", "bogus"])
    with pytest.raises(TypeError, match="setting=2; allowed"):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", setting=2, flags=FLAGS)
    with pytest.raises(TypeError, match="privacy_unit=.*; allowed"):
        dp_audit.audit_run(laplace_sum(1.0), "pure:1", privacy_unit=["a"], flags=FLAGS)


# --- the same record as the CLI's on a program that prints the same releases ----------------

PROGRAM = "python3 examples/exec/textbook_laplace_sum.py"


def textbook(noise_factor=1.0, lower=-5.0, upper=5.0, epsilon=1.0):
    """examples/exec/textbook_laplace_sum.py (the README's stdlib program) as a callable: the
    same arithmetic on the same random.Random(seed) draws, so the same request gives the same
    releases (the program prints each value's repr, which reads back as the same double)."""

    def mechanism(dataset, n, seed):
        rng = random.Random(seed)
        total = 0.0
        for x in dataset:
            total += min(max(float(x), lower), upper)
        scale = noise_factor * max(abs(lower), abs(upper)) / epsilon
        out = []
        for _ in range(n):
            u = rng.random() - 0.5
            noise = -scale * math.copysign(1.0, u) * math.log(1.0 - 2.0 * abs(u))
            out.append(total + noise)
        return out

    return mechanism


def cli(rec):
    words = shlex.split(rec.reproduce)
    assert words[0] == "audit"
    return subprocess.run([audit_binary(), *words[1:], "--json", "--no-report", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True)


def pair_file(tmp_path):
    p = tmp_path / "pair.jsonl"
    p.write_text(json.dumps({"first": [0.0] * 10, "second": [0.0] * 10 + [5.0]}) + "\n")
    return str(p)


@pytest.mark.parametrize("factor,violation", [(0.5, True), (1.0, False)])
def test_sequential_gives_the_clis_record(tmp_path, factor, violation):
    """`audit run --exec PROGRAM --sequential --pairs FILE`: both layers, β = 1e-3 split over
    them, seed 0 (deterministic). The mechanism layer of the halved noise (true ε = 2 against
    the claimed 1) is caught; the correct noise passes the mechanism layer (its float layer
    fails by design: Mironov 2012, the README's finding)."""
    name = f"{PROGRAM} --noise-factor {factor}"
    rec = dp_audit.audit_run(textbook(factor), "pure:1", record_range=(-5, 5), dataset_size=10,
                             name=name, flags=["--sequential", "--pairs", pair_file(tmp_path),
                                               "--max-samples", "20000"])
    out = cli(rec)
    assert out.returncode == rec.code, out.stderr
    assert out.stdout == rec.json()
    layers = {l["layer"]: l["verdict"] for l in rec.to_dict()["layers"]}
    assert layers["mechanism"] == ("violation" if violation else "no-violation"), layers


def test_the_fixed_n_search_gives_the_clis_record():
    """`audit run --exec PROGRAM --trials 2 --samples 20000`: the search, ε estimate and
    confirming audits call the callable with the program's requests (sizes and seeds), so the
    record is the CLI's, byte for byte."""
    name = f"{PROGRAM} --noise-factor 0.5"
    rec = dp_audit.audit_run(textbook(0.5), "pure:1", record_range=(-5, 5), dataset_size=10,
                             samples=20000, name=name, flags=["--trials", "2"], check="mechanism")
    # The command as given: the reproduce line with --trials 2 again (it names the trials
    # scored, which gives the same pairs and samples but another stopping reason).
    words = shlex.split(rec.reproduce)
    words[words.index("--trials") + 1] = "2"
    out = subprocess.run([audit_binary(), *words[1:], "--json", "--no-report", "--quiet"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == rec.code, out.stderr
    assert out.stdout == rec.json()
    assert rec.violation_found


def bdp_gaussian_sum(bound=1.0, sigma=1.0):
    """examples/exec/bdp_gaussian_sum.py [--bound B] as a callable (the same random.Random(seed)
    draws): the Gaussian sum whose noise is calibrated for records up to B."""

    def mechanism(dataset, n, seed):
        rng = random.Random(seed)
        total = sum(min(max(float(r), 0.0), 1.0) for r in dataset)
        return [total + rng.gauss(0.0, sigma * bound) for _ in range(n)]

    return mechanism


@pytest.mark.parametrize("bound,code", [(1.0, 0), (0.2, 1)])
def test_a_bayesian_claim_gives_the_clis_record(bound, code):
    """`audit run --exec PROGRAM --claim bdp:1:0.0141 --data examples/bdp-data-small.txt`
    (docs/bayesian.md): one bound at β = 1e-3, seed 0, deterministic. The twin calibrated for
    records up to 0.2 (the outlier at 0.95 left out) is caught, as the CLI catches the program
    (bound 4.5e-2 against 1.41e-2 allowed); the correct sum is not."""
    name = "python3 examples/exec/bdp_gaussian_sum.py" + ("" if bound == 1.0 else f" --bound {bound}")
    rec = dp_audit.audit_run(bdp_gaussian_sum(bound), "bdp:1:0.0141", name=name,
                             flags=["--data", "examples/bdp-data-small.txt", "--samples", "20000"])
    out = cli(rec)
    assert out.returncode == rec.code == code, out.stderr
    assert out.stdout == rec.json()


UNIT = "one patient's visits"


@pytest.mark.parametrize("how", ["keywords", "flags"])
def test_setting_and_privacy_unit_reach_the_record_text_and_report_as_for_a_program(tmp_path,
                                                                                    how):
    """`audit run --exec PROGRAM … --setting local --privacy-unit TEXT`: the callable's record is
    the program's, byte for byte, and states the setting and unit (the record, the text and the
    HTML report rendered from the record); the reproduce line keeps both flags. The same
    deterministic run as test_the_fixed_n_search_gives_the_clis_record (seed 0)."""
    name = f"{PROGRAM} --noise-factor 0.5"
    kw = (dict(setting="local", privacy_unit=UNIT) if how == "keywords"
          else dict(flags=["--trials", "2", "--setting", "local", "--privacy-unit", UNIT]))
    flags = [] if how == "flags" else ["--trials", "2"]
    rec = dp_audit.audit_run(textbook(0.5), "pure:1", record_range=(-5, 5), dataset_size=10,
                             samples=20000, name=name, check="mechanism", text=True,
                             **{"flags": flags, **kw})
    d = rec.to_dict()
    assert d["setting"] == "local" and d["privacy_unit"] == UNIT, {
        k: d.get(k) for k in ("setting", "privacy_unit")}
    words = shlex.split(rec.reproduce)
    assert words[words.index("--setting") + 1] == "local"
    assert words[words.index("--privacy-unit") + 1] == UNIT
    # The text: the unit, then the setting in words.
    assert f"unit         {UNIT}; local: each user randomizes" in rec.text()
    # The program's record, byte for byte (the reproduce line with --trials 2, as given).
    words[words.index("--trials") + 1] = "2"
    out = subprocess.run([audit_binary(), *words[1:], "--json", "--no-report", "--quiet"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == rec.code, out.stderr
    assert out.stdout == rec.json()
    # The HTML report of the record (`audit report FILE`) shows both.
    saved = tmp_path / "record.json"
    saved.write_text(rec.json())
    out = subprocess.run([audit_binary(), "report", str(saved), "--report-dir",
                          str(tmp_path / "reports")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (html,) = (tmp_path / "reports").glob("*/index.html")
    page = html.read_text()
    assert "one patient&#39;s visits" in page or "one patient&#x27;s visits" in page \
        or UNIT in page, page[:2000]
    assert "local: each user randomizes" in page


def test_without_them_the_record_says_central_and_the_relations_words(tmp_path):
    """The defaults, as for a program: central, and the unit in the words of the relation."""
    rec = dp_audit.audit_run(textbook(1.0), "pure:1", record_range=(-5, 5), dataset_size=10,
                             neighboring="replace-one", name=PROGRAM,
                             flags=["--sequential", "--pairs", pair_file_replace(tmp_path),
                                    "--max-samples", "20000"])
    d = rec.to_dict()
    assert d["setting"] == "central", d.get("setting")
    assert d["privacy_unit"] == "one record of the dataset, replaced by any other value (replace-one)"
    assert "--setting" not in rec.reproduce


def test_the_sequential_audit_states_them_too(tmp_path):
    """Each layer of the sequential audit wraps a view of the one callable: the setting and unit
    reach its record, which is the program's, byte for byte."""
    rec = dp_audit.audit_run(textbook(1.0), "pure:1", record_range=(-5, 5), dataset_size=10,
                             name=PROGRAM, setting="shuffle", privacy_unit=UNIT,
                             flags=["--sequential", "--pairs", pair_file(tmp_path),
                                    "--max-samples", "20000"])
    d = rec.to_dict()
    assert d["setting"] == "shuffle" and d["privacy_unit"] == UNIT
    out = cli(rec)
    assert out.returncode == rec.code, out.stderr
    assert out.stdout == rec.json()


def pair_file_replace(tmp_path):
    p = tmp_path / "pair-replace.jsonl"
    p.write_text(json.dumps({"first": [0.0] * 10, "second": [0.0] * 9 + [5.0]}) + "\n")
    return str(p)
