"""The pytest plugin of ``dp_audit`` (docs/python.md, "pytest plugin"), loaded by pytest through
the ``pytest11`` entry point once the package is installed.

- ``dp_gate``: a fixture; ``dp_gate(mechanism, claim, pairs, **settings)`` runs the gate of
  ``dp_audit.assert_dp`` (same defaults: seed ``DEFAULT_GATE_SEED``, 200000 samples per side,
  β = 1e-6, both layers) and returns its ``GateRecord``; a violation fails the test with an
  ``AssertionError`` (``.record``, ``.report``) whose first lines say what was violated, what
  to do next and where the report is, the gate's full account after.
- ``@pytest.mark.dp_audit(**settings)``: the defaults of the ``dp_gate`` calls of the tests it
  marks (a test, a class, a module's ``pytestmark``); a call's own keywords win.
- ``--dp-audit-report DIR``: each test's gates' HTML report in ``DIR/<test>/`` (the folder named
  from the test's node id, made filesystem-safe), written whole or not at all, and
  ``DIR/index.html`` listing the tests at the end of the session.

Under pytest-xdist each test runs on one worker and writes only its own folder (a temporary
folder, then a rename); the gate is seeded, so its verdict does not depend on the worker count
or order (for a mechanism that takes all its randomness from the seed it is given). The plugin
does not import xdist.
"""

from __future__ import annotations

import hashlib
import html
import inspect
import json
import os
import re
import shutil
import tempfile
from typing import Any, Callable, List, Optional, Sequence

import pytest

import dp_audit
from dp_audit import _gate_report

# The settings of a gate call, with assert_dp's defaults (read from its signature, so the two
# cannot drift apart).
_SIGNATURE = inspect.signature(dp_audit.assert_dp)
_SETTINGS = ("check", "seed", "samples", "failure_probability", "neighboring", "name", "timeout")
_DEFAULTS = {k: _SIGNATURE.parameters[k].default for k in _SETTINGS}
# What a marker may set: every setting but the mechanism's name (one per call).
_MARK_SETTINGS = tuple(k for k in _SETTINGS if k != "name")

_OPTION = "--dp-audit-report"
_TMP_PREFIX = ".dp-audit-tmp-"
_OLD_PREFIX = ".dp-audit-old-"
_GATES_FILE = "gates.json"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("dp-audit", "dp-audit: differential-privacy gates (dp_gate)")
    group.addoption(
        _OPTION, metavar="DIR", default=None, dest="dp_audit_report",
        help="write each test's dp_gate HTML report to DIR/<test>/ (one folder per test, named "
             "from its node id; written whole or not at all) and DIR/index.html listing them")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "dp_audit(**settings): defaults for the dp_gate calls of the marked tests: "
        + ", ".join(_MARK_SETTINGS) + " (a call's own keywords win; see docs/python.md)")
    root = config.getoption("dp_audit_report")
    if root:
        # Absolute once, here: pytest-xdist hands the controller's options to its workers.
        root = os.path.abspath(os.path.expanduser(root))
        config.option.dp_audit_report = root
        try:
            os.makedirs(root, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=root, prefix=_TMP_PREFIX)
            probe.close()
        except OSError as e:
            raise pytest.UsageError(
                f"{_OPTION} {root}: the folder cannot be created or written ({e}); choose "
                "another DIR") from e


def pytest_report_header(config) -> List[str]:
    root = config.getoption("dp_audit_report")
    where = root if root else f"none (add {_OPTION} DIR for HTML reports)"
    return [f"dp-audit {dp_audit.__version__}: dp_gate seed {_DEFAULTS['seed']} "
            f"(0x{_DEFAULTS['seed']:X}) unless a test sets seed=, β = "
            f"{_DEFAULTS['failure_probability']:g} per gate; reports: {where}"]


def report_folder_name(nodeid: str) -> str:
    """The folder of a test's report: its node id with every character outside
    ``[A-Za-z0-9_.-]`` turned into ``-`` (at most 120 characters), then 10 hex digits of the
    node id's SHA-256, so that two node ids never share a folder."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", nodeid).strip("-.")[:120].rstrip("-.") or "test"
    return f"{slug}-{hashlib.sha256(nodeid.encode('utf-8')).hexdigest()[:10]}"


def _mark_settings(node) -> dict:
    """The settings of the ``dp_audit`` markers on a test, the closest (the test's own) winning."""
    settings: dict = {}
    for mark in reversed(list(node.iter_markers("dp_audit"))):
        if mark.args:
            raise TypeError(f"@pytest.mark.dp_audit{mark.args!r}: positional arguments; allowed: "
                            "keywords " + ", ".join(_MARK_SETTINGS))
        bad = sorted(set(mark.kwargs) - set(_MARK_SETTINGS))
        if bad:
            raise TypeError(f"@pytest.mark.dp_audit({', '.join(bad)}=…): unknown setting(s); "
                            "allowed: " + ", ".join(_MARK_SETTINGS))
        settings.update(mark.kwargs)
    return settings


class DPGate:
    """The ``dp_gate`` fixture's value: call it as ``dp_gate(mechanism, claim, pairs, **settings)``.

    ``settings``: those of ``dp_audit.assert_dp`` (``check``, ``seed``, ``samples``,
    ``failure_probability``, ``neighboring``, ``name``, ``timeout``), by default the test's
    ``dp_audit`` marker's, else assert_dp's. Returns the ``GateRecord``; raises
    ``AssertionError`` on a violation, its first lines what was violated, what to do next and
    where the report is, the gate's account after (``.record``: the ``GateRecord``;
    ``.report``: the report's path or ``None``). ``.records``: the test's gates so far; ``.report``:
    the path of its report's ``index.html`` (``None`` without ``--dp-audit-report``)."""

    def __init__(self, nodeid: str, root: Optional[str], marked: dict, properties: list):
        self._nodeid = nodeid
        self._root = root
        self._marked = marked
        self._properties = properties
        self.records: List[dp_audit.GateRecord] = []
        self._claims: List[str] = []

    @property
    def report(self) -> Optional[str]:
        if self._root is None:
            return None
        return os.path.join(self._root, report_folder_name(self._nodeid), "index.html")

    def __call__(self, mechanism: Callable, claim: str, pairs: Sequence, **settings: Any):
        __tracebackhide__ = True
        bad = sorted(set(settings) - set(_SETTINGS))
        if bad:
            raise TypeError(f"dp_gate({', '.join(bad)}=…): unknown setting(s); allowed: "
                            + ", ".join(_SETTINGS))
        given = {**_DEFAULTS, **self._marked, **settings}
        rec = dp_audit._gate(mechanism, claim, pairs, **given)
        self.records.append(rec)
        self._claims.append(claim)
        report, unwritten = None, None
        if self._root is not None:
            try:
                report = self._write()
            except OSError as e:
                unwritten = e
        if report is not None and not any(k == "dp_audit_report" for k, _ in self._properties):
            # For JUnit XML (``record_property``'s list) and for xdist's controller.
            self._properties.append(("dp_audit_report", report))
        if rec.violation_found:
            # A plain AssertionError (pytest's summary line shows "AssertionError: <what>"),
            # carrying the record and the report's path; a report that could not be written
            # does not hide the violation.
            failure = AssertionError(_failure_message(rec, claim, given, self._nodeid, report,
                                                      unwritten))
            failure.record, failure.report = rec, report
            raise failure
        if unwritten is not None:
            raise unwritten
        return rec

    def _write(self) -> str:
        """Writes the test's folder with every gate so far: built in a temporary folder beside
        it, then renamed into place (a reader sees the old folder, none, or the new one whole)."""
        final = os.path.join(self._root, report_folder_name(self._nodeid))
        tmp = tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=self._root)
        try:
            pages = [_gate_report.write_pages(r, tmp) for r in self.records]
            n = len(self.records)
            title = (f"dp-audit: {self._nodeid}" if n == 1
                     else f"dp-audit: {self._nodeid} ({n} gates)")
            _write_text(os.path.join(tmp, "index.html"), _gate_report.gate_html(
                title, list(zip(self.records, self._claims, pages))))
            gates = {
                "test": self._nodeid,
                "verdict": ("violation" if any(r.violation_found for r in self.records)
                            else "no-violation"),
                "gates": [{"mechanism": r.name, "claim": c, "verdict": r.verdict,
                           "mechanism_violation": r.mechanism_violation,
                           "float_violation": r.float_violation, "reproduce": r.reproduce,
                           "audits": json.loads(r.json())}
                          for r, c in zip(self.records, self._claims)],
            }
            _write_text(os.path.join(tmp, _GATES_FILE),
                        json.dumps(gates, ensure_ascii=False, indent=2) + "\n")
            _write_text(os.path.join(tmp, "gates.txt"),
                        "\n".join(r.text() for r in self.records))
            os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide the report from a web server
            old = None
            if os.path.lexists(final):
                old = tempfile.mkdtemp(prefix=_OLD_PREFIX, dir=self._root)
                os.rename(final, os.path.join(old, "report"))
            os.rename(tmp, final)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return os.path.join(final, "index.html")


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _worst_bound(rec, layer: str):
    """(pair, bound, record) of the largest margin among the violating bounds of ``layer``."""
    best = None
    for i, lay, js in rec.records:
        if lay != layer:
            continue
        d = json.loads(js)
        for section in d.get("layers", []):
            for b in section.get("bounds", []):
                if b.get("violation"):
                    margin = b["value"] - b["allowed"]
                    if best is None or margin > best[0]:
                        best = (margin, i, b, d)
    return None if best is None else best[1:]


def _failure_message(rec, claim: str, given: dict, nodeid: str, report: Optional[str],
                     unwritten: Optional[OSError] = None) -> str:
    layer = "mechanism" if rec.mechanism_violation else "floating-point"
    what = f"{rec.name} breaks its claim {claim} in the {layer} layer"
    worst = _worst_bound(rec, layer)
    if worst is not None:
        i, b, d = worst
        what += (f": on pair {i}, {b['divergence']} {b['direction']} ≥ {b['value']:.4g} where "
                 f"the claim allows at most {b['allowed']:.4g}")
        e = d.get("empirical_epsilon") or {}
        if e.get("lower_bound") is not None and e.get("claimed_epsilon") is not None:
            what += (f" (ε ≥ {e['lower_bound']:.4g} at δ = {e['delta']:g}; claimed ε = "
                     f"{e['claimed_epsilon']:g})")
    if layer == "mechanism":
        fix = ("fix the algorithm (its noise scale, sensitivity or budget), or state the claim "
               "it keeps")
    else:
        fix = ("the outputs' floating-point bits (low-order bits, binade) reveal which dataset "
               "was used: draw the noise on a grid independent of the data (snapping, or "
               "discrete Laplace/Gaussian noise on an integer query); to gate the algorithm "
               "alone, pass check='mechanism'")
    nxt = (f"next: {fix}; the gate is deterministic (seed {given['seed']}, {given['samples']} "
           f"samples per side, β = {given['failure_probability']:g}): rerun pytest '{nodeid}'")
    if report is not None:
        where = f"report: {report}"
    elif unwritten is not None:
        where = f"report: not written ({unwritten})"
    else:
        where = f"report: none written (rerun with {_OPTION} DIR for the HTML report)"
    return f"{what}\n{nxt}\n{where}\n\n{rec.text()}"


@pytest.fixture
def dp_gate(request) -> DPGate:
    """``dp_gate(mechanism, claim, pairs, **settings)``: the DP gate of ``dp_audit.assert_dp``
    in a test (see ``DPGate``); settings default to the test's ``dp_audit`` marker's."""
    return DPGate(request.node.nodeid, request.config.getoption("dp_audit_report"),
                  _mark_settings(request.node), request.node.user_properties)


def pytest_sessionfinish(session) -> None:
    config = session.config
    root = config.getoption("dp_audit_report")
    if not root or hasattr(config, "workerinput") or not os.path.isdir(root):
        return  # an xdist worker: the controller writes the index once every worker is done
    _write_index(root)


def _write_index(root: str) -> None:
    """``root/index.html``: one row per test folder holding a ``gates.json``, by node id."""
    rows = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, _GATES_FILE)
        if name.startswith(".") or not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                g = json.load(f)
        except (OSError, ValueError):
            continue
        what = "; ".join(f"{x['mechanism']} ({x['claim']}): {x['verdict']}" for x in g["gates"])
        rows.append((g["test"], name, g["verdict"], what))
    rows.sort()
    body = "\n".join(
        f"<tr class=\"{'bad' if v == 'violation' else 'ok'}\"><td><a href=\"{html.escape(n)}/"
        f"index.html\">{html.escape(t)}</a></td><td>{html.escape(v)}</td>"
        f"<td>{html.escape(w)}</td></tr>"
        for t, n, v, w in rows)
    page = ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>dp-audit gates</title><style>body{font-family:sans-serif}"
            "td{padding:2px 8px}.bad td{color:#b00}</style></head><body>\n"
            f"<h1>dp-audit gates: {len(rows)} test(s)</h1>\n<table>\n"
            "<tr><th>test</th><th>verdict</th><th>gates</th></tr>\n"
            f"{body}\n</table>\n</body></html>\n")
    _gate_report.write_text_atomically(os.path.join(root, "index.html"), page)
