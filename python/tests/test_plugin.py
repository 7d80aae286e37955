"""The pytest plugin (``dp_audit.pytest_plugin``, loaded through the package's ``pytest11`` entry
point): the ``dp_gate`` fixture, the ``dp_audit`` marker, ``--dp-audit-report DIR`` and
pytest-xdist, each in a pytest run of its own (``pytester``).

False-failure rate: the correct mechanism below (a count with two-sided geometric noise, integer
outputs, so the float layer is skipped) is gated at the package's default β = 1e-6: a mechanism
keeping its claim fails with probability at most 1e-6 over the gate's seed. The seed is fixed
(``dp_audit.DEFAULT_GATE_SEED``), so every verdict here is deterministic. The failing mechanism
releases the exact count (no noise at all): its bound is ≈ 1 where ``pure:1`` allows 0, a
failure by a wide margin at 1000 releases per side.
"""

import json
import os

import pytest

from dp_audit.pytest_plugin import report_folder_name

pytest_plugins = ["pytester"]

MECHANISMS = '''
import numpy as np
import pytest

D = [0.5, 0.5, 0.5, 0.5]
PAIRS = [(D, D + [1.0])]


def noisy_count(dataset, n, seed):
    rng = np.random.default_rng(seed)
    p = 1.0 - np.exp(-1.0)
    return (len(dataset) + rng.geometric(p, n) - rng.geometric(p, n)).astype(np.float64)


def exact_count(dataset, n, seed):
    return np.full(n, float(len(dataset)))
'''

PASSING = MECHANISMS + '''

def test_noisy_count(dp_gate):
    rec = dp_gate(noisy_count, "pure:1", PAIRS, samples=5000)
    assert not rec.violation_found
'''

FAILING = MECHANISMS + '''

def test_exact_count(dp_gate):
    dp_gate(exact_count, "pure:1", PAIRS, samples=1000)
'''


def _test_file(pytester, text, name="test_gates"):
    return pytester.makepyfile(**{name: text})


def test_a_passing_gate_passes(pytester):
    _test_file(pytester, PASSING)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    # The header states the seed and β, and that no report is written.
    result.stdout.fnmatch_lines(["dp-audit *: dp_gate seed 1592646266 (0x5EEDDA7A)*β = 1e-06*"
                                 "reports: none*"])


def test_a_failing_gate_leads_with_what_was_violated_and_what_to_do(pytester):
    _test_file(pytester, FAILING)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    lines = [line for line in result.stdout.lines if line.startswith("E ")]
    # The two lines a developer acts on, then where the report is, then the full account.
    assert "AssertionError: exact_count breaks its claim pure:1 in the mechanism layer: on " \
        "pair 0, H_e^1" in lines[0], lines[0]
    assert "where the claim allows at most 0" in lines[0], lines[0]
    assert lines[1].lstrip("E ").startswith("next: fix the algorithm"), lines[1]
    assert "seed 1592646266, 1000 samples per side, β = 1e-06" in lines[1]
    assert "test_gates.py::test_exact_count" in lines[1]
    assert lines[2].lstrip("E ").startswith("report: none written (rerun with "
                                            "--dp-audit-report"), lines[2]
    assert "dp-audit gate: VIOLATION FOUND in the mechanism layer" in out
    # The short summary line carries the first line (cut to the terminal's width).
    result.stdout.fnmatch_lines(["FAILED *test_exact_count - AssertionError: exact_count*"])


def test_a_float_layer_failure_says_so(pytester):
    # Float Laplace noise on the count: right in the real-valued model, but its low-order bits
    # leak (Mironov 2012); at 200000 releases per side the float layer's bound is ≈ 0.006 where
    # pure:1 allows 0.
    _test_file(pytester, MECHANISMS + '''

def float_laplace_count(dataset, n, seed):
    return len(dataset) + np.random.default_rng(seed).laplace(0.0, 1.0, n)


def test_float_laplace(dp_gate):
    dp_gate(float_laplace_count, "pure:1", PAIRS, check="float", samples=200_000)
''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E * float_laplace_count breaks its claim pure:1 in the floating-point layer: on pair 0,*",
        "E * next: the outputs' floating-point bits * pass check='mechanism'; the gate is *",
    ])


def test_the_failure_is_an_assertion_error_with_the_record(pytester):
    _test_file(pytester, MECHANISMS + '''

def test_caught(dp_gate):
    with pytest.raises(AssertionError) as e:
        dp_gate(exact_count, "pure:1", PAIRS, samples=1000)
    assert e.value.record.mechanism_violation
    assert e.value.report is None
''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_marker_sets_the_gates_defaults(pytester):
    _test_file(pytester, MECHANISMS + '''
pytestmark = pytest.mark.dp_audit(samples=100_000, check="float")


@pytest.mark.dp_audit(samples=3000)
def test_marked(dp_gate):
    rec = dp_gate(noisy_count, "pure:1", PAIRS, check="mechanism")
    (pair, layer, record), = rec.records  # the call's check="mechanism" wins over the module's
    assert layer == "mechanism"
    assert '"samples_per_side": 3000' in record  # the test's marker wins over the module's


@pytest.mark.dp_audit(sample=3000)
def test_misspelt(dp_gate):
    pass
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*dp_audit(sample=…): unknown setting(s); allowed: check, "
                                 "seed,*"])


def _files(folder):
    """{relative path: bytes} of every file under ``folder``."""
    out = {}
    for base, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(base, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder)] = f.read()
    return out


def test_reports_are_written_per_test(pytester):
    _test_file(pytester, PASSING + FAILING.replace(MECHANISMS, ""))
    root = pytester.path / "reports"
    result = pytester.runpytest("-p", "no:cacheprovider", "--dp-audit-report", "reports")
    result.assert_outcomes(passed=1, failed=1)
    folders = sorted(p.name for p in root.iterdir())
    names = {report_folder_name(f"test_gates.py::{t}") for t in ("test_noisy_count",
                                                               "test_exact_count")}
    assert folders == sorted(names | {"index.html"}), folders  # no temporary left behind
    failing = root / report_folder_name("test_gates.py::test_exact_count")
    # The failure names the report, which exists when the message is shown.
    result.stdout.fnmatch_lines([f"E * report: {failing / 'index.html'}"])
    gates = json.loads((failing / "gates.json").read_text())
    assert gates["test"] == "test_gates.py::test_exact_count"
    assert gates["verdict"] == "violation"
    assert gates["gates"][0]["mechanism"] == "exact_count"
    runs = [p for p in failing.iterdir() if p.is_dir()]
    assert len(runs) == 1  # the mechanism layer (the float layer is skipped: integer outputs)
    page = (runs[0] / "index.html").read_text()
    assert "exact_count" in page and "pure:1" in page
    # The test's page: the gate's verdict and its audits, each linked to its page.
    test_page = (failing / "index.html").read_text()
    assert f'<a href="{runs[0].name}/index.html">' in test_page
    assert "<td>mechanism</td><td>violation</td>" in test_page
    assert "test_gates.py::test_noisy_count" in (root / "index.html").read_text()


def test_a_gate_record_writes_its_report(tmp_path):
    import numpy as np

    import dp_audit

    def exact_count(dataset, n, seed):
        return np.full(n, float(len(dataset)))

    rec = dp_audit.audit_callable(exact_count, "pure:1", [0.0, 1.0], [0.0], samples=1000)
    index = rec.write_report(tmp_path / "gate")
    assert index == str(tmp_path / "gate" / "index.html")
    page = open(index, encoding="utf-8").read()
    assert "exact_count (pure:1): violation" in page
    (run,) = [p for p in (tmp_path / "gate").iterdir() if p.is_dir()]
    assert (run / "audit.json").is_file() and (run / "index.html").is_file()
    assert f'<a href="{run.name}/index.html">' in page
    assert "\ntime " not in page  # no wall time: the same bytes on every run


def test_a_report_that_cannot_be_written_does_not_hide_the_violation(pytester):
    _test_file(pytester, MECHANISMS + '''
import dp_audit.pytest_plugin


def refuse(rec, directory):
    raise OSError("disk full")


def test_exact_count(dp_gate, monkeypatch):
    monkeypatch.setattr(dp_audit.pytest_plugin._gate_report, "write_pages", refuse)
    dp_gate(exact_count, "pure:1", PAIRS, samples=1000)


def test_noisy_count(dp_gate, monkeypatch):
    monkeypatch.setattr(dp_audit.pytest_plugin._gate_report, "write_pages", refuse)
    dp_gate(noisy_count, "pure:1", PAIRS, samples=1000)
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--dp-audit-report", "reports")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["E * exact_count breaks its claim pure:1*",
                                 "E * report: not written (disk full)",
                                 "E * OSError: disk full"])
    # Nothing half-written: the temporary folders are gone.
    assert [p.name for p in (pytester.path / "reports").iterdir()] == ["index.html"]


def test_report_folder_names_are_safe_and_distinct():
    a = report_folder_name("tests/test_x.py::test_y[a/b]")
    b = report_folder_name("tests/test_x.py::test_y[a-b]")
    assert a != b
    assert all(c.isalnum() or c in "_.-" for c in a + b)
    assert not a.startswith(".")


def test_without_xdist_loaded(pytester):
    # The plugin never imports xdist: it runs the same with xdist blocked.
    _test_file(pytester, PASSING)
    pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist").assert_outcomes(passed=1)


def test_xdist_workers_write_the_same_reports_as_one_process(pytester):
    pytest.importorskip("xdist", reason="pytest-xdist is not installed: `python -m pip install "
                                        "pytest-xdist` to run the plugin under -n 2")
    params = MECHANISMS + '''

@pytest.mark.parametrize("samples", [1000, 2000, 3000, 4000])
def test_noisy(dp_gate, samples):
    dp_gate(noisy_count, "pure:1", PAIRS, samples=samples)


@pytest.mark.parametrize("samples", [1000, 2000])
def test_exact(dp_gate, samples):
    dp_gate(exact_count, "pure:1", PAIRS, samples=samples)
'''
    _test_file(pytester, params)
    one = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "--dp-audit-report",
                             "one")
    one.assert_outcomes(passed=4, failed=2)
    two = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                        "--dp-audit-report", "two")
    two.assert_outcomes(passed=4, failed=2)
    two.stdout.fnmatch_lines(["*2 workers*"])
    a, b = _files(pytester.path / "one"), _files(pytester.path / "two")
    # Every test's folder, whole, and nothing else (no temporary): the same bytes whatever the
    # worker count, but for the gate's text account (its audits' wall times).
    assert sorted(a) == sorted(b)
    assert len({p.split(os.sep)[0] for p in a}) == 6 + 1
    for p in a:
        if not p.endswith("gates.txt"):
            assert a[p] == b[p], p
