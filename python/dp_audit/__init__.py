"""dp_audit: black-box auditing of differential-privacy claims, the dp-audit engine in Python.

The same engine and the same records as the ``audit`` CLI (see docs/python.md):

- ``test_samples(a, b, claim)``: ``audit test`` on two arrays of releases; its JSON record is the
  CLI's, byte for byte, on the same releases written as files (``write_samples``).
- ``audit_callable(mechanism, claim, d, d_prime)``: a Python ``mechanism(dataset, n, seed)``
  audited in-process on one neighboring pair, both layers (mechanism and floating point).
- ``assert_dp(mechanism, claim, pairs)``: the gate for pytest; raises ``AssertionError``.
- ``account(ledger, delta=…)``: ``audit accountant`` (PLD and RDP ε at δ) on a ledger file or a
  list of ledger events, or on T steps at (q, z); its JSON is the CLI's.
- ``audit_run(mechanism, claim)``: ``audit run --exec`` on a Python callable: the dataset search
  and plan of an exec program, in-process.
- ``one_run(train, claim)``: ``audit one-run --exec`` with the training done by a Python
  function (white- or black-box scores of the canaries); its JSON is the CLI's.
- ``account_bayesian(distances, …)``: ``audit accountant --bayesian`` (Bayesian DP from
  gradient-distance samples, beside the DP accountants); its JSON is the CLI's.
- ``one_run_trainer(params=…)``: ``audit one-run`` with the built-in canary DP-SGD trainer; its
  JSON is the CLI's.

Every entry point that calls your function limits each call (``timeout=``, seconds; ``None``: no
limit): a call past it is abandoned and ``TimeoutError`` is raised, naming the function, the
limit, the dataset size and n. Ctrl-C stops an audit with ``KeyboardInterrupt``.
"""

from __future__ import annotations

import json as _json
import math as _math
from dataclasses import dataclass as _dataclass
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as _np

from . import _calls, _native
from . import noise  # dp_audit.noise: float-safe noise (snapping, discrete Laplace/Gaussian)

__version__ = _native.__version__

# The engine's defaults, written once in its options types (dp_audit::modes), read here for the
# signatures below.
_DEFAULTS = _native.defaults()
_TEST = _DEFAULTS["test"]
_ONE_RUN = _DEFAULTS["one_run"]
_ACCOUNTANT = _DEFAULTS["accountant"]

__all__ = [
    "final_model",
    "Record",
    "GateRecord",
    "test_samples",
    "audit_callable",
    "assert_dp",
    "write_samples",
    "account",
    "AccountRecord",
    "one_run",
    "OneRunRecord",
    "audit_run",
    "account_bayesian",
    "BayesianAccountRecord",
    "one_run_trainer",
    "DEFAULT_GATE_SEED",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_TRAIN_TIMEOUT",
]

#: The gate's fixed seed (the Rust gate's ``Gate::DEFAULT_SEED``).
DEFAULT_GATE_SEED = 0x5EED_DA7A

#: Seconds one call of a mechanism may take by default (``timeout=`` of ``audit_callable``,
#: ``assert_dp`` and ``audit_run``): the exec protocol's ``--exec-timeout`` default. A call asks
#: for one chunk of releases (4096 in the gate, ``--exec-batch``, 50000, in ``audit_run``), so
#: 60 s is 15 ms per release in the gate; a mechanism slower than that needs a higher limit.
DEFAULT_CALL_TIMEOUT = 60.0

#: Seconds one training run of ``one_run`` may take by default: ``audit one-run --exec``'s
#: ``--exec-timeout`` default.
DEFAULT_TRAIN_TIMEOUT = 600.0

#: The longest ``timeout=`` accepted: a week.
_MAX_TIMEOUT = 604_800.0


def _timeout(t, name: str = "timeout", most: float = _MAX_TIMEOUT) -> Optional[float]:
    """A time limit in seconds: a number above 0 and at most ``most``, or None (no limit)."""
    if t is None:
        return None
    if isinstance(t, bool) or not isinstance(t, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"{name}={t!r}; allowed: seconds (a number above 0, at most {most:g}) or "
                        "None for no limit")
    v = float(t)
    if not (_math.isfinite(v) and 0.0 < v <= most):
        raise ValueError(f"{name}={t!r}; allowed: seconds above 0, at most {most:g}, or None for "
                         "no limit")
    return v


_CHECKS = ("both", "mechanism", "float")


def _releases(x: Any, name: str) -> _np.ndarray:
    """A 2-D C-contiguous float64 array (releases × dimension), without a copy when ``x`` is
    one already; a 1-D array is a view of shape (n, 1)."""
    try:
        a = _np.asarray(x, dtype=_np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: cannot be read as a float64 array ({e}); allowed: a numpy array "
                        "or sequence of numbers, shape (n,) or (n, dim)") from e
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    elif a.ndim != 2:
        raise ValueError(f"{name}: array of shape {a.shape}; allowed: shape (n,) or (n, dim) "
                         "(releases × dimension)")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name}: array of shape {a.shape} holds no releases; allowed: n ≥ 1, dim ≥ 1")
    bad = ~_np.isfinite(a)
    if bad.any():
        i, j = _np.argwhere(bad)[0]
        raise ValueError(f"{name}[{i}, {j}] is {a[i, j]}; releases must be finite")
    return _np.ascontiguousarray(a)


def _check(check: str) -> str:
    if check not in _CHECKS:
        raise ValueError(f"check={check!r}; allowed: 'both', 'mechanism' or 'float'")
    return check


def _beta(b: float) -> float:
    if not isinstance(b, (int, float)) or not (0.0 < float(b) < 1.0):
        raise ValueError(f"failure_probability={b!r}; allowed: a number with 0 < β < 1")
    return float(b)


def _seed(s: int) -> int:
    if isinstance(s, bool) or not isinstance(s, (int, _np.integer)) or not (0 <= int(s) < 2**64):
        raise ValueError(f"seed={s!r}; allowed: an integer in [0, 2^64)")
    return int(s)


#: Releases per side every entry point that draws them accepts (``samples=``): the engine's
#: bounds (``audit run --samples``), the same in ``audit_callable``, ``assert_dp`` and
#: ``audit_run``.
_SAMPLES_MIN = _DEFAULTS["run"]["samples_min"]
_SAMPLES_MAX = _DEFAULTS["run"]["samples_max"]


def _samples(v, name: str = "samples") -> int:
    """Releases per side: an integer from ``_SAMPLES_MIN`` to ``_SAMPLES_MAX``."""
    allowed = f"allowed: an integer from {_SAMPLES_MIN} to {_SAMPLES_MAX:,} (releases per side)"
    if isinstance(v, bool) or not isinstance(v, (int, _np.integer)):
        raise TypeError(f"{name}={v!r}; {allowed}")
    if not (_SAMPLES_MIN <= int(v) <= _SAMPLES_MAX):
        raise ValueError(f"{name}={v!r}; {allowed}")
    return int(v)


def _callable_name(f: Any, name: Any) -> str:
    """The name messages and reproduce lines give the callable: ``name`` when given (a
    string), else the name it is imported by: its ``__qualname__`` (``Class.method``), or its
    ``__name__`` when it is defined inside a function (``f.<locals>.g`` is not a name a user
    can type), or its type's name for a callable object."""
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"name={name!r}; allowed: a non-empty string (the mechanism's name in "
                            "messages, records and reproduce lines) or None for the callable's own")
        return name
    qual = getattr(f, "__qualname__", None)
    if isinstance(qual, str) and qual:
        if "<locals>" in qual or "<lambda>" in qual:
            own = getattr(f, "__name__", None)
            return own if isinstance(own, str) and own and own != "<lambda>" else "lambda"
        return qual
    return type(f).__name__


def _import_line(f: Any) -> str:
    """``from MODULE import NAME; `` for a callable importable by its module and qualified
    name (not one defined in ``__main__``, inside a function, or a lambda); else ``""``."""
    mod, qual = getattr(f, "__module__", None), getattr(f, "__qualname__", None)
    if not (isinstance(mod, str) and isinstance(qual, str)) or mod in ("__main__", "builtins"):
        return ""
    if "<" in qual:
        return ""
    return f"from {mod} import {qual.split('.')[0]}; "


@_dataclass(frozen=True)
class Record:
    """The result record of a test: the CLI's JSON record and text."""

    _json: str
    _text: str
    code: int

    def json(self) -> str:
        """The record as ``audit test … --json`` prints it (same bytes)."""
        return self._json

    def text(self) -> str:
        """The record as ``audit test`` prints it without ``--json``."""
        return self._text

    def to_dict(self) -> dict:
        return _json.loads(self._json)

    @property
    def verdict(self) -> str:
        """``"violation"`` or ``"no-violation"``."""
        return self.to_dict()["verdict"]

    @property
    def violation_found(self) -> bool:
        return self.code == 1

    @property
    def reproduce(self) -> Optional[str]:
        """The ``audit test`` command that gives this record on the releases written as files
        (``write_samples(a, "a.bin")``, ``write_samples(b, "b.bin")``)."""
        return self.to_dict().get("reproduce")

    def __str__(self) -> str:
        return self._text


def test_samples(a, b, claim: str, *, seed: int = _TEST["seed"],
                 failure_probability: float = _TEST["failure_probability"],
                 testers: str = _TEST["testers"], check: str = _TEST["check"],
                 names: Tuple[str, str] = ("a.bin", "b.bin"), sequential: bool = False,
                 max_samples: Optional[int] = None,
                 first_batch: Optional[int] = None) -> Record:
    """``audit test`` on two arrays of releases (shape (n,) or (n, dim)), side a drawn on D and
    side b on D′: the claim tested in the layers ``check`` names, β = ``failure_probability``.

    ``sequential=True``: the anytime-valid betting test (``audit test --sequential``) on the
    releases in their order, up to ``max_samples`` per side (default: all of the smaller side),
    its first (training-only) batch ``first_batch`` releases per side (default 20).

    The record is the one ``audit test --samples-a A --samples-b B --claim CLAIM --json`` prints
    on the same releases in files named ``names`` (``write_samples``); its reproduce line is that
    command."""
    if not isinstance(claim, str):
        raise TypeError(f"claim={claim!r}; allowed: a string such as 'pure:1' or 'approx:1:1e-5'")
    if not isinstance(testers, str):
        raise TypeError(f"testers={testers!r}; allowed: a comma-separated string or 'all'")
    if len(names) != 2 or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"names={names!r}; allowed: two non-empty file names")
    aa, bb = _releases(a, "a"), _releases(b, "b")
    if aa.shape[1] != bb.shape[1]:
        raise ValueError(f"a has releases of dimension {aa.shape[1]}, b of dimension {bb.shape[1]}; "
                         "allowed: the same dimension on both sides")
    if not sequential and (max_samples is not None or first_batch is not None):
        raise ValueError("max_samples or first_batch without sequential=True; allowed: those "
                         "settings with sequential=True only")
    if sequential and not _native.runs_sequentially(testers):
        raise ValueError(f"testers={testers!r} with sequential=True; the sequential test uses its "
                         "own betting test, leave testers out")
    js, text, code = _native.test_samples(
        aa, bb, claim, _seed(seed), _beta(failure_probability), testers, _check(check), names[0],
        names[1], bool(sequential),
        None if max_samples is None else _positive_int(max_samples, "max_samples"),
        None if first_batch is None else _positive_int(first_batch, "first_batch"))
    return Record(js, text, code)


def write_samples(a, path: str) -> None:
    """Writes releases (shape (n,) or (n, dim)) as an ``audit test`` shard: ``.bin``, JSON lines
    (``.jsonl``), ``.gz`` or ``.zst``, by the file name."""
    _native.write_samples(_releases(a, "a"), str(path))


@_dataclass(frozen=True)
class GateRecord:
    """What the gate found on a Python mechanism: per pair and layer, the audit's record."""

    records: Tuple[Tuple[int, str, str], ...]
    explanation: str
    mechanism_violation: bool
    float_violation: bool
    reproduce: str
    name: str = "mechanism"

    @property
    def violation_found(self) -> bool:
        return self.mechanism_violation or self.float_violation

    @property
    def verdict(self) -> str:
        return "violation" if self.violation_found else "no-violation"

    def text(self) -> str:
        """The gate's account: the verdict naming the layer, each audit's bounds, how to
        reproduce."""
        return self.explanation + f"reproduce    {self.reproduce}\n"

    def json(self) -> str:
        """A JSON array, one object per audit: {"pair": i, "layer": …, "record": the audit's
        result record (as ``audit run --json`` writes a fixed-pair audit)}."""
        parts = [_json.dumps({"pair": i, "layer": layer, "record": _json.loads(rec)},
                             ensure_ascii=False, indent=2) for i, layer, rec in self.records]
        return "[\n" + ",\n".join(parts) + "\n]"

    def write_report(self, directory) -> str:
        """The gate's HTML report in ``directory`` (created if needed): each audit's page (one per
        pair and layer) in ``directory/<run-id>/`` (``audit.json``, ``index.html``, the bound
        figures), as ``audit report`` renders a saved record, each written whole or not at all;
        then ``directory/index.html``, the gate's page: its verdict, its audits (pair, layer,
        verdict, largest bound against what the claim allows) linked to their pages, the
        reproduce line and the account (without wall times: the same bytes on every run).
        Returns that page's path. One gate per directory: a second one's page replaces it."""
        import os
        from . import _gate_report
        directory = os.fsdecode(directory)
        os.makedirs(directory, exist_ok=True)
        pages = _gate_report.write_pages(self, directory)
        index = os.path.join(directory, "index.html")
        _gate_report.write_text_atomically(index, _gate_report.gate_html(
            f"dp-audit gate: {self.name}", [(self, _gate_report.claim_of(self), pages)]))
        return index

    def __str__(self) -> str:
        return self.text()


def _dataset(x, name: str) -> _np.ndarray:
    try:
        a = _np.asarray(x, dtype=_np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: cannot be read as a float64 array ({e}); allowed: a list or "
                        "array of numbers (scalar records) or of equal-length rows") from e
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError(f"{name}: shape {a.shape}; allowed: (records,) or (records, dim)")
    if not _np.isfinite(a).all():
        raise ValueError(f"{name}: holds a non-finite value; records must be finite")
    return _np.ascontiguousarray(a)


def _probe(mechanism: Callable, d: _np.ndarray, name: str, timeout: Optional[float],
           raise_it: str) -> int:
    """The release dimension, from one call with n = 2 (seed 0), given ``timeout`` seconds.
    The call gets its own copy of the dataset, as every call does: a mechanism that edits its
    input in place changes neither the pair nor the next call's dataset."""
    data = (d.reshape(-1) if d.shape[1] == 1 else d).copy()
    try:
        value = _calls.call(
            mechanism, (data, 2, 0), timeout,
            lambda: f"the mechanism {name} did not return within its time limit of {timeout:g} s "
                    f"per call (called with a dataset of {d.shape[0]} records, n = 2, seed = 0, to "
                    f"learn the release dimension); the call was abandoned. {raise_it}")
    except TimeoutError:
        raise
    except Exception as e:
        raise RuntimeError(f"the mechanism {name} raised {type(e).__name__}: {e} when called as "
                           "mechanism(dataset, 2, 0)") from e
    try:
        out = _np.asarray(_real_releases(value, name, 2), dtype=_np.float64)
    except (TypeError, ValueError) as e:
        if isinstance(e, TypeError) and str(e).startswith(f"the mechanism {name} returned"):
            raise
        raise TypeError(f"the mechanism {name} returned a value numpy cannot read as float64 "
                        f"({e}) for n = 2; allowed: an array of n releases, shape (n,) or "
                        "(n, dim)") from e
    if out.ndim == 1 and out.shape[0] == 2:
        return 1
    if out.ndim == 2 and out.shape[0] == 2 and out.shape[1] >= 1:
        return int(out.shape[1])
    raise ValueError(f"the mechanism {name} returned shape {out.shape} for n = 2; allowed: (n,) "
                     "or (n, dim), one row per release")


def _real_releases(value: Any, name: str, n: int) -> Any:
    """``value`` when numpy reads it as real numbers; ``TypeError`` naming the mechanism and
    what it returned when they are complex (numpy would drop the imaginary part, and with it
    whatever it carries), objects (``None``, mixed types) or text."""
    kind = _np.asarray(value).dtype.kind
    if kind == "c":
        raise TypeError(f"the mechanism {name} returned complex numbers for n = {n}; allowed: "
                        "real numbers (int, float or bool), one row per release. Converting "
                        "them would drop the imaginary part, and what it carries would go "
                        "unaudited: return the real and imaginary parts as two columns")
    if kind not in "biuf":
        what = {"O": "Python objects (e.g. None or mixed types)", "U": "strings", "S": "bytes"}
        raise TypeError(f"the mechanism {name} returned {what.get(kind, f'values of numpy kind {kind!r}')} "
                        f"for n = {n}; allowed: real numbers (int, float or bool), one row per "
                        "release")
    return value


_RAISE_GATE = "Give it more time per call with timeout=SECONDS (timeout=None: no limit)"


def _gate(mechanism, claim, pairs, *, check, seed, samples, failure_probability, neighboring,
          name, timeout) -> GateRecord:
    if not callable(mechanism):
        raise TypeError(f"mechanism={mechanism!r}; allowed: a callable mechanism(dataset, n, seed)")
    if not isinstance(claim, str):
        raise TypeError(f"claim={claim!r}; allowed: a string such as 'pure:1' or 'approx:1:1e-5'")
    samples = _samples(samples)
    own_name = name is None
    name = _callable_name(mechanism, name)
    built = []
    for i, p in enumerate(pairs):
        try:
            d, d2 = p
        except (TypeError, ValueError) as e:
            raise TypeError(f"pairs[{i}]={p!r}; allowed: a (d, d_prime) tuple of datasets") from e
        built.append((_dataset(d, f"pairs[{i}][0]"), _dataset(d2, f"pairs[{i}][1]")))
    if not built:
        raise ValueError("pairs is empty; allowed: at least one (d, d_prime) neighboring pair")
    timeout = _timeout(timeout)
    dim = _probe(mechanism, built[0][0], name, timeout, _RAISE_GATE)
    records, explanation, mech, flt = _native.gate(
        mechanism, name, claim, neighboring, built, dim, int(samples), _seed(seed),
        _beta(failure_probability), _check(check), timeout)
    reproduce = (f"{_import_line(mechanism) if own_name else ''}"
                 f"dp_audit.assert_dp({name}, {claim!r}, pairs, check={check!r}, seed={seed}, "
                 f"samples={samples}, failure_probability={failure_probability!r}) — deterministic: "
                 "the same call on the same code gives the same verdict")
    return GateRecord(tuple(records), explanation, mech, flt, reproduce, name)


def audit_callable(mechanism: Callable, claim: str, d, d_prime, *,
                   samples: int = _DEFAULTS["gate"]["samples"], seed: int = 0,
                   failure_probability: float = _DEFAULTS["run"]["failure_probability"],
                   check: str = _TEST["check"],
                   neighboring: str = "add-remove", name: Optional[str] = None,
                   timeout: Optional[float] = DEFAULT_CALL_TIMEOUT) -> GateRecord:
    """Audits ``mechanism(dataset, n, seed) -> array of n releases`` in-process on the pair
    (d, d_prime): ``samples`` releases per side and layer, both layers by default. Each chunk of
    releases is one call, with a seed drawn from the engine's seeded generator: the mechanism
    must take all its randomness from that seed (e.g. ``np.random.default_rng(seed)``).

    ``timeout``: seconds one call may take (default 60; ``None``: no limit). A call past it is
    abandoned and ``TimeoutError`` is raised, naming the mechanism, the limit, the dataset's size
    and n."""
    return _gate(mechanism, claim, [(d, d_prime)], check=check, seed=seed, samples=samples,
                 failure_probability=failure_probability, neighboring=neighboring, name=name,
                 timeout=timeout)


def assert_dp(mechanism: Callable, claim: str, pairs: Sequence, *, check: str = "both",
              seed: int = DEFAULT_GATE_SEED, samples: int = 200_000,
              failure_probability: float = 1e-6, neighboring: str = "add-remove",
              name: Optional[str] = None,
              timeout: Optional[float] = DEFAULT_CALL_TIMEOUT) -> GateRecord:
    """The gate: raises ``AssertionError`` when a violation of ``claim`` is found on any pair in
    any layer ``check`` names. A mechanism that keeps its claim fails with probability at most
    ``failure_probability`` (β split over pairs, layers and bounds); the seed is fixed, so a run
    is deterministic. ``check="mechanism"`` gates the algorithm alone (the output values),
    ``check="float"`` the floating-point layer alone. ``timeout``: seconds one call may take
    (default 60; ``None``: no limit); past it ``TimeoutError`` is raised (not ``AssertionError``:
    the gate has no verdict)."""
    rec = _gate(mechanism, claim, pairs, check=check, seed=seed, samples=samples,
                failure_probability=failure_probability, neighboring=neighboring, name=name,
                timeout=timeout)
    if rec.violation_found:
        layer = ("mechanism layer" if rec.mechanism_violation else "floating-point layer")
        raise AssertionError(f"{rec.name} does not keep its claim {claim} (violation in the {layer}):\n"
                             + rec.text())
    return rec


# --- the accountants ------------------------------------------------------------------------


class _PrintedAccount:
    """What the two accountant records share: the ``--json`` bytes and their fields; each
    subclass's ``text()`` runs its accountant again for the text."""

    _json: str

    def json(self) -> str:
        return self._json

    def to_dict(self) -> dict:
        return _json.loads(self._json)

    @property
    def delta(self) -> float:
        return self.to_dict()["delta"]

    def __str__(self) -> str:
        return self.text()


@_dataclass(frozen=True)
class AccountRecord(_PrintedAccount):
    """What ``audit accountant`` prints: ``.json()`` is its ``--json`` output (same bytes),
    ``.text()`` its text; the ε bounds as properties."""

    _json: str
    _args: tuple

    def text(self) -> str:
        """The CLI's text (computed on first use: the accountants run again)."""
        return _native.account(*self._args[:-1], False)

    @property
    def epsilon(self) -> float:
        """The PLD accountant's ε at δ, an upper bound (rounded up): the ε to report."""
        return self.to_dict()["pld"]["epsilon_upper"]

    @property
    def epsilon_lower(self) -> float:
        """The optimistic PLD's ε: the true ε of the composition lies in [epsilon_lower, epsilon]."""
        return self.to_dict()["pld"]["epsilon_lower"]

    @property
    def rdp_epsilon(self) -> Optional[float]:
        """The RDP accountant's ε (add-remove only; ``None`` for replace-one)."""
        r = self.to_dict().get("rdp")
        return None if r is None else r["epsilon"]

    @property
    def noise_multiplier(self) -> Optional[float]:
        """With ``target_epsilon``: the z found; with one block of steps: the z given."""
        return self.to_dict().get("noise_multiplier")

def _ledger_text(events, name: str) -> str:
    """A list of ledger events (dicts) as the JSON lines ``--ledger FILE`` reads."""
    if isinstance(events, dict):
        events = [events]
    if not isinstance(events, (list, tuple)):
        raise TypeError(f"ledger={events!r}; allowed: a file path, or a list of ledger events "
                        "(dicts such as {'event': 'sampling', 'probability': 0.01, "
                        "'repetitions': 1000})")
    lines = []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise TypeError(f"ledger[{i}]={e!r}; allowed: a dict, one ledger event "
                            "(docs/accountant.md)")
        try:
            lines.append(_json.dumps(e, allow_nan=False))
        except (TypeError, ValueError) as err:
            raise ValueError(f"ledger[{i}]={e!r} is not JSON ({err}); allowed: numbers and "
                             "strings as in docs/accountant.md") from err
    return "\n".join(lines) + "\n"


def _positive_int(v, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, _np.integer)) or not (1 <= int(v) < 2**64):
        raise ValueError(f"{name}={v!r}; allowed: a whole number ≥ 1")
    return int(v)


def _number(v, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"{name}={v!r}; allowed: a number")
    return float(v)


def account(ledger=None, *, delta: float, sampling_rate: Optional[float] = None,
            noise_multiplier: Optional[float] = None, steps: Optional[int] = None,
            target_epsilon: Optional[float] = None, neighbors: str = _ACCOUNTANT["neighbors"],
            policy: Optional[str] = None, name: str = "ledger.jsonl") -> AccountRecord:
    """``audit accountant``: DP-SGD's ε at ``delta`` by the PLD accountant (an upper bound and
    the optimistic estimate) and the RDP accountant.

    ``ledger``: a path to a ledger file (what ``--ledger FILE`` reads), or a list of ledger
    events (dicts, the JSON of one ledger line each), named ``name`` in the record; or ``None``
    with ``sampling_rate``, ``steps`` and ``noise_multiplier`` (one block of T steps), or with
    ``target_epsilon`` instead of ``noise_multiplier`` (the smallest z that reaches it).
    ``policy`` (``--policy``, with ``sampling_rate``/``steps`` only): how those batches are drawn,
    ``"poisson"`` (left out) or ``"fixed-size"`` (B = q·n without replacement each step, with
    ``neighbors="replace-one"`` only); a ledger's sampling events say their own policy.
    ``.json()`` is the CLI's ``--json`` output on the same ledger (a list is the file whose
    lines are its events' ``json.dumps``, named ``name``)."""
    if not isinstance(neighbors, str):
        raise TypeError(f"neighbors={neighbors!r}; allowed: 'add-remove', 'replace-one' or "
                        "'zero-out'")
    delta = _number(delta, "delta")
    path = text = None
    if ledger is not None:
        given = [k for k, v in [("sampling_rate", sampling_rate), ("steps", steps),
                                ("noise_multiplier", noise_multiplier),
                                ("target_epsilon", target_epsilon),
                                ("policy", policy)] if v is not None]
        if given:
            raise ValueError(f"a ledger with {', '.join(given)}; allowed: a ledger alone (its "
                             "sampling events say their policy), or sampling_rate, steps and "
                             "noise_multiplier (or target_epsilon) without one")
        if isinstance(ledger, (str, bytes)) or hasattr(ledger, "__fspath__"):
            import os
            path = os.fsdecode(ledger)
        else:
            if not isinstance(name, str) or not name:
                raise ValueError(f"name={name!r}; allowed: a non-empty file name")
            path, text = name, _ledger_text(ledger, name)
    else:
        missing = [k for k, v in [("sampling_rate", sampling_rate), ("steps", steps)] if v is None]
        if noise_multiplier is None and target_epsilon is None:
            missing.append("noise_multiplier (or target_epsilon)")
        if missing:
            raise ValueError(f"no ledger and no {', '.join(missing)}; allowed: a ledger, or "
                             "sampling_rate, steps and noise_multiplier (or target_epsilon)")
        if noise_multiplier is not None and target_epsilon is not None:
            raise ValueError("noise_multiplier and target_epsilon both given; allowed: one of "
                             "them (target_epsilon finds the noise multiplier)")
        sampling_rate = _number(sampling_rate, "sampling_rate")
        steps = _positive_int(steps, "steps")
        if noise_multiplier is not None:
            noise_multiplier = _number(noise_multiplier, "noise_multiplier")
        if target_epsilon is not None:
            target_epsilon = _number(target_epsilon, "target_epsilon")
        if policy is not None and not isinstance(policy, str):
            raise TypeError(f"policy={policy!r}; allowed: 'poisson' or 'fixed-size'")
    args = (delta, neighbors, path, text, sampling_rate, noise_multiplier, steps, target_epsilon,
            policy, True)
    return AccountRecord(_native.account(*args), args)


@_dataclass(frozen=True)
class BayesianAccountRecord(_PrintedAccount):
    """What ``audit accountant --bayesian`` prints: ``.json()`` is its ``--json`` output (same
    bytes), ``.text()`` its text; the ε values as properties."""

    _json: str
    _args: tuple

    def text(self) -> str:
        """The CLI's text (computed on first use: the accountants run again)."""
        return _native.account_bayesian(*self._args[:-1], False)

    @property
    def epsilon(self) -> float:
        """ε_μ at δ_μ = delta: Bayesian DP (Triastcyn & Faltings 2020), the typical case over
        the data the distances were drawn from; weaker than DP."""
        return self.to_dict()["bayesian"]["epsilon"]

    @property
    def rdp_epsilon(self) -> float:
        """The RDP accountant's ε for the same run: DP, the worst case."""
        return self.to_dict()["rdp_epsilon"]

    @property
    def moments_epsilon(self) -> float:
        """The moments accountant's ε (the Bayesian accountant at distances = the clipping
        bound)."""
        return self.to_dict()["moments_accountant_epsilon"]

    @property
    def noise_multiplier(self) -> float:
        """The noise multiplier accounted: the one given, or the one ``target_epsilon`` found."""
        return self.to_dict()["noise_multiplier"]

    @property
    def calibration(self) -> Optional[dict]:
        """With ``target_epsilon``: the z found, its ε_μ, and the moments and PLD accountants'
        z for the same ε with the ratios; ``None`` otherwise."""
        return self.to_dict().get("calibration")

def _percent_list(v, name: str, default: str) -> str:
    """Percentages as the CLI's comma-separated text (each number's repr: the same double)."""
    if v is None:
        return default
    if isinstance(v, str):
        return v
    try:
        return ",".join(repr(_number(x, name)) for x in v)
    except TypeError as e:
        raise TypeError(f"{name}={v!r}; allowed: a list of numbers (percentages), or a "
                        "comma-separated string such as '50,90,99'") from e


def account_bayesian(data, *, sampling_rate: float, steps: int, delta: float,
                     noise_multiplier: Optional[float] = None,
                     target_epsilon: Optional[float] = None, gamma: Optional[float] = None,
                     distance_quantiles=None, markov_percentiles=None,
                     estimator: Optional[str] = None, max_distance: Optional[float] = None,
                     group: Optional[int] = None,
                     name: str = "distances.txt") -> BayesianAccountRecord:
    """``audit accountant --bayesian --data FILE`` (docs/bayesian.md): Bayesian DP (Triastcyn &
    Faltings 2020), ε_μ at δ_μ = ``delta`` for T = ``steps`` steps of DP-SGD at sampling rate q
    and noise multiplier z, from samples of the distance ‖g − g'‖/C between a record's clipped
    gradient and its neighbour's (each in [0, 2]), beside the moments and RDP accountants' DP ε.

    ``data``: a path to the distance file (one number per line, what ``--data FILE`` reads), or
    an array or list of distances, named ``name`` in the record (the file whose lines are their
    ``repr``). ``gamma``: the probability that the estimate under-states the cost, folded into δ
    (default δ/1000). ``distance_quantiles`` (default 50, 90, 99, 100) and
    ``markov_percentiles`` (default 50, 90, 99): lists of percentages, or the CLI's
    comma-separated text. ``estimator``: ``"distribution-free"`` (the default: a DKW band on the
    distances in [0, ``max_distance``], default 1, no normality assumed; binary distances left
    to the default get the Clopper–Pearson bound) or ``"student-t"`` (the paper's estimator,
    which assumes normality and was measured under-stating the cost more often than γ at high
    orders: docs/bayesian.md, Theorem 4 check). ``group``: K ≥ 1, the guarantee for datasets
    differing in K records drawn i.i.d. from μ (Proposition 4: (Kε_μ, K·e^{(K−1)ε_μ}·δ_μ), in
    ``to_dict()["group"]``; default 1). ``target_epsilon`` instead of ``noise_multiplier``
    (``--target-epsilon`` with ``--bayesian``): the smallest z whose ε_μ is at most it, with the
    moments and PLD accountants' z for the same ε beside it (``.calibration``), and the account
    at that z. ``.json()`` is the CLI's ``--json`` output on the same file."""
    delta = _number(delta, "delta")
    sampling_rate = _number(sampling_rate, "sampling_rate")
    if (noise_multiplier is None) == (target_epsilon is None):
        raise ValueError(f"noise_multiplier={noise_multiplier!r}, target_epsilon={target_epsilon!r}; "
                         "allowed: exactly one of them (the z to account, or the ε_μ to reach)")
    if noise_multiplier is not None:
        noise_multiplier = _number(noise_multiplier, "noise_multiplier")
    if target_epsilon is not None:
        target_epsilon = _number(target_epsilon, "target_epsilon")
    steps = _positive_int(steps, "steps")
    if gamma is not None:
        gamma = _number(gamma, "gamma")
    quantiles = _percent_list(distance_quantiles, "distance_quantiles",
                              _ACCOUNTANT["distance_quantiles"])
    markov = _percent_list(markov_percentiles, "markov_percentiles",
                           _ACCOUNTANT["markov_percentiles"])
    if estimator is not None and not isinstance(estimator, str):
        raise TypeError(f"estimator={estimator!r}; allowed: 'distribution-free' or 'student-t'")
    if max_distance is not None:
        max_distance = _number(max_distance, "max_distance")
    if group is not None:
        group = _positive_int(group, "group")
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        import os
        path, text = os.fsdecode(data), None
        if not os.path.isfile(path):
            raise FileNotFoundError(f"data={path!r}: no such file; allowed: a file of distances "
                                    "(one number in [0, 2] per line), or an array of them")
    else:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name={name!r}; allowed: a non-empty file name")
        try:
            a = _np.asarray(data, dtype=_np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"data: cannot be read as numbers ({e}); allowed: a file path, or "
                            "an array or list of distances in [0, 2]") from e
        if a.ndim != 1:
            raise ValueError(f"data: shape {a.shape}; allowed: a 1-D array or list of distances "
                             "(one per sample)")
        # repr is each double's shortest round-trip form: the engine reads the same bits.
        path, text = name, "".join(repr(float(x)) + "\n" for x in a)
    args = (delta, path, text, sampling_rate, noise_multiplier, steps, gamma, quantiles, markov,
            estimator, max_distance, group, target_epsilon, True)
    return BayesianAccountRecord(_native.account_bayesian(*args), args)


# --- one-run audits -------------------------------------------------------------------------


@_dataclass(frozen=True)
class OneRunRecord(Record):
    """The record of a one-run audit: ``.json()`` and ``.text()`` are what
    ``audit one-run --exec NAME …`` prints (with and without ``--json``) when ``sh -c NAME``
    prints the scores ``train`` returned; ``.reproduce`` is that command."""

    _reproduce: str = ""

    @property
    def reproduce(self) -> Optional[str]:
        return self._reproduce


def one_run(train: Callable, claim: str, *, canaries: int = _ONE_RUN["canaries"],
            data: Optional[str] = None,
            record_range: Tuple[float, float] = (0.0, 1.0), record_dim: int = 1,
            guesses: Optional[Sequence[Tuple[int, int]]] = None,
            independent_canaries: bool = False, seed: int = _ONE_RUN["seed"],
            failure_probability: float = _ONE_RUN["failure_probability"],
            name: Optional[str] = None,
            timeout: Optional[float] = DEFAULT_TRAIN_TIMEOUT) -> OneRunRecord:
    """``audit one-run --exec`` with the training in this process: one training run, audited
    from its canaries (Steinke, Nasr & Jagielski 2023).

    ``train(request) -> m scores``: ``request`` is the protocol's dict (``seed``, ``dataset``,
    ``canaries``: m records drawn uniformly from ``record_range``^``record_dim``, ``included``:
    their inclusion bits, each true with probability 1/2). Train once on the dataset plus the
    included canaries, seeding all randomness from ``request["seed"]``, and score each canary
    from what the training releases, never from the bits: white-box (e.g. each iterate's
    alignment with a gradient canary) or black-box (e.g. minus the final model's loss on an
    input canary). ``claim``: ``pure:EPS``, ``approx:EPS:DELTA``, ``gdp:MU`` or
    ``ledger:FILE[:DELTA]``. ``data``: a file of records (``--data``). ``guesses``: (K+, K-)
    pairs. The record is the CLI's, byte for byte (``audit one-run --exec NAME`` with a program
    printing the same scores).

    ``timeout``: seconds the training may take (default 600, as ``audit one-run --exec``;
    ``None``: no limit); past it the call is abandoned and ``TimeoutError`` is raised."""
    if not callable(train):
        raise TypeError(f"train={train!r}; allowed: a callable train(request) -> scores")
    if not isinstance(claim, str):
        raise TypeError(f"claim={claim!r}; allowed: a string such as 'gdp:1' or 'approx:2:1e-5'")
    name = _callable_name(train, name)
    canaries = _positive_int(canaries, "canaries")
    record_dim = _positive_int(record_dim, "record_dim")
    try:
        lo, hi = (float(x) for x in record_range)
    except (TypeError, ValueError) as e:
        raise TypeError(f"record_range={record_range!r}; allowed: a pair (lo, hi) of numbers") from e
    rng_text = None if (lo, hi) == (0.0, 1.0) else f"{lo!r}:{hi!r}"
    dim_arg = None if record_dim == 1 else record_dim
    guess_text = None
    if guesses is not None:
        try:
            guess_text = ",".join(f"{_positive_or_zero(kp)}:{_positive_or_zero(km)}"
                                  for kp, km in guesses)
        except (TypeError, ValueError) as e:
            raise ValueError(f"guesses={guesses!r}; allowed: a list of (K+, K-) pairs of whole "
                             "numbers ≥ 0") from e
    if data is not None:
        import os
        data = os.fsdecode(data)
    cache = {}

    def scores_text(request: str) -> str:
        # The request is the same for both renderings (text and JSON): train once.
        if request not in cache:
            out = train(_json.loads(request))
            try:
                a = _np.asarray(out, dtype=_np.float64)
            except (TypeError, ValueError) as e:
                raise _BadScoresType(f"train returned {type(out).__name__}, not numbers ({e}); "
                                f"allowed: {canaries} scores, one per canary in order") from e
            if a.ndim != 1:
                raise _BadScores(f"train returned an array of shape {a.shape}; allowed: shape "
                                 f"({canaries},), one score per canary in order")
            bad = ~_np.isfinite(a)
            if bad.any():
                i = int(_np.argmax(bad))
                raise _BadScores(f"train's score {i + 1} is {a[i]}; allowed: finite numbers")
            # repr of a float is its shortest round-trip form: the engine reads the same bits.
            cache[request] = "[" + ", ".join(repr(float(x)) for x in a) + "]"
        return cache[request]

    timeout = _timeout(timeout)
    common = (scores_text, name, claim, canaries, data, rng_text, dim_arg, guess_text,
              bool(independent_canaries), _seed(seed), _beta(failure_probability))
    try:
        js, code, reproduce = _native.one_run(*common, True, timeout)
        text, _, _ = _native.one_run(*common, False, timeout)
    except RuntimeError as e:
        # Scores of the wrong kind are the caller's error, raised as such (not as the
        # RuntimeError that wraps an exception of the training itself).
        if isinstance(e.__cause__, (_BadScores, _BadScoresType)):
            raise e.__cause__ from None
        raise
    return OneRunRecord(js, text, code, reproduce)


class _BadScores(ValueError):
    """Scores ``train`` returned that are not m finite numbers."""


class _BadScoresType(TypeError):
    """A value ``train`` returned that is not numbers."""


def _positive_or_zero(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, _np.integer)) or int(v) < 0:
        raise ValueError(f"{v!r} is not a whole number ≥ 0")
    return int(v)


def one_run_trainer(*, canaries: int = _ONE_RUN["canaries"], threat_model: str = "white-box",
                    dataset: str = "synthetic", params: Optional[dict] = None,
                    guesses: Optional[Sequence[Tuple[int, int]]] = None,
                    seed: int = _ONE_RUN["seed"],
                    failure_probability: float = _ONE_RUN["failure_probability"],
                    score: str = "loss", text: bool = False) -> OneRunRecord:
    """``audit one-run`` without ``--exec``: the built-in canary DP-SGD trainer (docs/one-run.md)
    trained once, its claim (the trainer's own accountant) audited from its m = ``canaries``
    canaries. ``threat_model``: ``white-box`` (every iterate released, gradient canaries) or
    ``black-box`` (final model, input canaries); ``dataset``: ``synthetic`` or ``winequality``;
    ``params``: the trainer's ``--param NAME=VALUE`` settings as a dict (records, steps,
    sampling_rate, noise_multiplier, clip, …, and the bugs noise_scale, sampling_rate_ratio,
    batch_clip, clip_after_noise; see ``audit one-run --help``); ``score``: the black-box
    membership score, ``loss`` or ``calibrated`` (docs/one-run.md).

    ``.json()`` is ``audit one-run … --json``'s output, byte for byte, and ``.reproduce`` that
    command; ``.text()`` only with ``text=True`` (the trainer runs again)."""
    words = ["one-run"]
    canaries = _positive_int(canaries, "canaries")
    if canaries != _ONE_RUN["canaries"]:
        words += ["--canaries", str(canaries)]
    for value, flag, default in [(threat_model, "--threat-model", "white-box"),
                                 (dataset, "--dataset", "synthetic"), (score, "--score", "loss")]:
        if not isinstance(value, str):
            raise TypeError(f"{flag[2:].replace('-', '_')}={value!r}; allowed: a string")
        if value != default:
            words += [flag, value]
    if params is not None:
        if not isinstance(params, dict):
            raise TypeError(f"params={params!r}; allowed: a dict such as "
                            "{'noise_multiplier': 1.1, 'steps': 100}")
        for k, v in params.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(
                    v, (int, float, str, _np.integer, _np.floating)):
                raise TypeError(f"params[{k!r}]={v!r}; allowed: a name and a number")
            words += ["--param", f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}"]
    if guesses is not None:
        try:
            words += ["--guesses", ",".join(f"{_positive_or_zero(kp)}:{_positive_or_zero(km)}"
                                            for kp, km in guesses)]
        except (TypeError, ValueError) as e:
            raise ValueError(f"guesses={guesses!r}; allowed: a list of (K+, K-) pairs of whole "
                             "numbers ≥ 0") from e
    seed = _seed(seed)
    if seed != _ONE_RUN["seed"]:
        words += ["--seed", str(seed)]
    beta = _beta(failure_probability)
    if beta != _ONE_RUN["failure_probability"]:
        words += ["--failure-probability", repr(beta)]
    js, code = _native.one_run_trainer(words + ["--json", "--no-report", "--quiet"])
    txt = _native.one_run_trainer(words + ["--no-report", "--quiet"])[0] if text else ""
    return OneRunRecord(js, txt, code, _json.loads(js).get("reproduce") or "")


def final_model(*, params: Optional[dict] = None, runs: int = 1000, exploration_runs: int = 200,
                initial_model: str = "auto", target: str = "auto", seed: int = 0,
                failure_probability: Optional[float] = None) -> dict:
    """``audit final-model``: the built-in DP-SGD trainer audited from its final model over many
    training runs, with the initial model and the target record chosen by the auditor on
    exploration runs (docs/final-model.md). ``params``: the trainer's ``--param`` settings as a
    dict (noise_multiplier, steps, records, …, and the bug noise_scale). Returns the JSON record
    (``audit final-model --json``) as a dict; ``record["audit"]["violation"]`` is the verdict,
    ``record["exit_code"]`` the CLI's exit code (1: violation found)."""
    words = ["final-model", "--runs", str(_positive_int(runs, "runs")),
             "--exploration-runs", str(_positive_int(exploration_runs, "exploration_runs")),
             "--seed", str(_seed(seed))]
    for value, flag in [(initial_model, "--initial-model"), (target, "--target")]:
        if not isinstance(value, str):
            raise TypeError(f"{flag[2:].replace('-', '_')}={value!r}; allowed: a string")
        words += [flag, value]
    if failure_probability is not None:
        words += ["--failure-probability", repr(_beta(failure_probability))]
    if params is not None:
        if not isinstance(params, dict):
            raise TypeError(f"params={params!r}; allowed: a dict such as "
                            "{'noise_multiplier': 2.5, 'noise_scale': 0.5}")
        for k, v in params.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(
                    v, (int, float, _np.integer, _np.floating)):
                raise TypeError(f"params[{k!r}]={v!r}; allowed: a name and a number")
            words += ["--param", f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}"]
    js, code = _native.final_model(words + ["--json"])
    record = _json.loads(js)
    record["exit_code"] = code
    return record


# --- audit run on a callable ------------------------------------------------------------------


class _Default:
    """``timeout`` left out of ``audit_run``: ``--exec-timeout`` from ``flags``, else 60 s."""

    def __repr__(self) -> str:
        return "60 s unless flags give --exec-timeout"


_DEFAULT = _Default()


def audit_run(mechanism: Callable, claim: str, *, record_range: Tuple[float, float] = (0.0, 1.0),
              record_dim: int = 1, dataset_size: int = 3, neighboring: str = "add-remove",
              samples: Optional[int] = None, seed: int = _DEFAULTS["run"]["seed"],
              failure_probability: float = _DEFAULTS["run"]["failure_probability"],
              check: Optional[str] = None, setting: Optional[str] = None,
              privacy_unit: Optional[str] = None, flags: Sequence[str] = (),
              name: Optional[str] = None, text: bool = False,
              timeout: Any = _DEFAULT) -> Record:
    """``audit run --exec NAME --claim CLAIM …`` with the mechanism a Python callable
    ``mechanism(dataset, n, seed) -> n releases``: the default dataset search (random search over
    datasets of ``dataset_size`` records in ``record_range``^``record_dim``), the ε-estimate and
    confirming audits, both layers, as for an exec program, with one call per chunk of releases
    instead of one process. ``flags``: any other ``audit run`` flags, as words (e.g.
    ``["--trials", "10"]``, ``["--finder", "fixed", "--pairs", "pairs.jsonl"]``).

    ``check``: ``"both"``, ``"mechanism"`` or ``"float"`` (``--check``); left out, both layers.
    ``setting`` (``--setting``): where the mechanism runs, ``"central"`` (left out),
    ``"local"`` or ``"shuffle"``; ``privacy_unit`` (``--privacy-unit``): what one neighbouring
    change is, in your words (e.g. ``"one patient's visits"``; left out, the relation's words).
    Both are for the record, the text and the HTML report only (the audit is the same) and are
    checked as the CLI checks them. A Bayesian DP claim (``bdp:EPS:DELTA``) takes ``flags=["--data", FILE]`` and no ``check``.

    ``flags=["--sequential", "--pairs", "pair.jsonl"]``: the anytime-valid sequential audit
    (``audit run --exec … --sequential``) on the one pair of that file, both layers, stopping
    as soon as a violation is established (``--max-samples``, ``--first-batch`` as in the CLI).

    The record is ``audit run … --json``'s (``.json()``): the callable is called with the sizes
    and seeds an exec program would be (``--exec-batch`` releases per call, default 50000), so a
    program printing the same releases (each value's ``repr``) for the same request gives the
    same record. ``.text()`` is its text only with ``text=True`` (the run is made again,
    deterministically: twice the time). Seed all the mechanism's randomness from the seed it is
    given.

    Time: ``timeout`` is seconds one call may take (``--exec-timeout``; default 60, as for an
    exec program; ``None``: no limit); past it the call is abandoned and ``TimeoutError`` is
    raised. Give it here or as ``flags=["--exec-timeout", "S"]``, not both. With a time budget
    the search also gives each call a limit of its own, and a call past it is retried with fewer
    releases, as an exec program's request is. ``flags=["--budget", "T"]``: no call runs past T
    after the start; a call that would is abandoned and, unless the engine answers with what it
    has, ``TimeoutError`` is raised."""
    if not callable(mechanism):
        raise TypeError(f"mechanism={mechanism!r}; allowed: a callable mechanism(dataset, n, seed)")
    if not isinstance(claim, str):
        raise TypeError(f"claim={claim!r}; allowed: a string such as 'pure:1' or 'approx:1:1e-5'")
    if isinstance(flags, str) or not all(isinstance(f, str) for f in flags):
        raise TypeError(f"flags={flags!r}; allowed: a list of strings (command-line words)")
    name = _callable_name(mechanism, name)
    record_dim = _positive_int(record_dim, "record_dim")
    dataset_size = _positive_int(dataset_size, "dataset_size")
    try:
        lo, hi = (float(x) for x in record_range)
    except (TypeError, ValueError) as e:
        raise TypeError(f"record_range={record_range!r}; allowed: a pair (lo, hi) of numbers") from e
    words = ["run", "--exec", name, "--claim", claim, "--record-range", f"{lo!r}:{hi!r}",
             "--record-dim", str(record_dim), "--dataset-size", str(dataset_size),
             "--neighbors", str(neighboring), "--seed", str(_seed(seed)),
             "--failure-probability", repr(_beta(failure_probability))]
    if check is not None:
        # Left out, the CLI's default: both layers (a Bayesian DP claim has one view, no layers).
        words += ["--check", _check(check)]
    if samples is not None:
        words += ["--samples", str(_samples(samples))]
    # Checked by the CLI's parser, as for an exec program (the same errors, exit code 2 there).
    for flag, value, allowed in [("--setting", setting, "'central', 'local' or 'shuffle'"),
                                 ("--privacy-unit", privacy_unit, "a string of 1 to 200 characters")]:
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"{flag[2:].replace('-', '_')}={value!r}; allowed: {allowed}")
            words += [flag, value]
    in_flags = _flag_value(flags, "--exec-timeout")
    if timeout is not _DEFAULT and in_flags is not None:
        raise ValueError(f"timeout={timeout!r} and flags with --exec-timeout {in_flags}; allowed: "
                         "one of them (both set the time one call may take)")
    if timeout is _DEFAULT:
        try:
            limit = DEFAULT_CALL_TIMEOUT if in_flags is None else _timeout(float(in_flags))
        except (TypeError, ValueError):
            limit = DEFAULT_CALL_TIMEOUT  # the CLI's parser names the bad value
    else:
        limit = _timeout(timeout, most=86_400.0)
        if limit is not None:
            # As an exec program's command line: the record and reproduce line say it.
            words += ["--exec-timeout", repr(limit)]
    words += list(flags)
    probe = _np.full((dataset_size, record_dim), lo)
    dim = _probe(mechanism, probe, name, limit, _RAISE_RUN)
    no_ceiling = limit is None
    js, code = _native.run(mechanism, words + ["--json", "--no-report", "--quiet"], dim,
                           no_ceiling)
    txt = (_native.run(mechanism, words + ["--no-report", "--quiet"], dim, no_ceiling)[0]
           if text else "")
    return Record(js, txt, code)


_RAISE_RUN = ("Give it more time per call with timeout=SECONDS or flags=[\"--exec-timeout\", "
              "\"SECONDS\"] (timeout=None: no limit), or ask for fewer releases per call with "
              "--exec-batch")


def _flag_value(flags: Sequence[str], flag: str) -> Optional[str]:
    """The value of ``flag`` in command-line words (``--flag V`` or ``--flag=V``), if given."""
    words = list(flags)
    for i, w in enumerate(words):
        if w == flag:
            return words[i + 1] if i + 1 < len(words) else ""
        if w.startswith(flag + "="):
            return w[len(flag) + 1:]
    return None
