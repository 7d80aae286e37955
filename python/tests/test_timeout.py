"""Time limits of the entry points that call a Python function, and Ctrl-C.

Each call of the callable runs on a worker thread and is given up on past its limit:
``TimeoutError`` (naming the callable, the limit, the dataset's size and n) within the limit plus
a few seconds, and the process still exits at once. ``audit_run`` applies ``--exec-timeout``
per call and ``--budget`` to the whole run. Ctrl-C (SIGINT) stops an audit with
``KeyboardInterrupt``.

These tests decide on time, not on samples: no statistical verdict is asserted, so there is no
false-failure rate beyond the machine's scheduling; the time bounds are generous (a limit of
2 s must fire in under 7 s; a run of budget 10 s must end in under 15 s).
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import dp_audit

PAIR = ([0.0, 1.0, 0.5], [0.0, 1.0])


def sleeper(data, n, seed):
    """Answers the release-dimension probe (n = 2) at once, then sleeps 30 s on every call."""
    if n > 2:
        time.sleep(30)
    return np.zeros(n)


def sleeper_always(data, n, seed):
    time.sleep(30)
    return np.zeros(n)


def laplace_mean(data, n, seed):
    rng = np.random.default_rng(seed)
    return float(np.mean(data)) + rng.laplace(0.0, 1.0, n)


def assert_names_everything(e: TimeoutError, name: str, limit: str):
    msg = str(e)
    assert name in msg, msg
    assert f"time limit of {limit} s" in msg, msg
    assert "records" in msg and "n = " in msg, msg
    assert "timeout=" in msg, msg  # how to raise it


def test_audit_callable_gives_up_on_a_call_past_its_timeout():
    t = time.monotonic()
    with pytest.raises(TimeoutError) as e:
        dp_audit.audit_callable(sleeper, "pure:1", *PAIR, samples=20_000, timeout=2)
    assert time.monotonic() - t < 7
    assert_names_everything(e.value, "sleeper", "2")
    assert "dataset of 3 records" in str(e.value)


def test_assert_dp_gives_up_on_a_call_past_its_timeout():
    t = time.monotonic()
    with pytest.raises(TimeoutError) as e:
        dp_audit.assert_dp(sleeper, "pure:1", [PAIR], samples=20_000, timeout=2)
    assert time.monotonic() - t < 7
    assert_names_everything(e.value, "sleeper", "2")


def test_the_release_dimension_probe_is_limited_too():
    t = time.monotonic()
    with pytest.raises(TimeoutError) as e:
        dp_audit.audit_callable(sleeper_always, "pure:1", *PAIR, samples=20_000, timeout=1.5)
    assert time.monotonic() - t < 6.5
    assert_names_everything(e.value, "sleeper_always", "1.5")
    assert "n = 2" in str(e.value)


def test_audit_run_applies_exec_timeout_and_timeout():
    for kwargs in [dict(flags=["--exec-timeout", "2"]), dict(timeout=2)]:
        t = time.monotonic()
        with pytest.raises(TimeoutError) as e:
            dp_audit.audit_run(sleeper, "pure:1", **kwargs)
        assert time.monotonic() - t < 7, kwargs
        assert_names_everything(e.value, "sleeper", "2")
        assert "--exec-timeout" in str(e.value)


def test_audit_run_ends_within_its_budget_when_the_callable_becomes_slow():
    start = []

    def slows_down(data, n, seed):
        # Fast for its first 3 s, then 30 s per call of more than 2 releases.
        if not start:
            start.append(time.monotonic())
        if n > 2 and time.monotonic() - start[0] > 3:
            time.sleep(30)
        return float(np.sum(data)) + np.random.default_rng(seed).laplace(0.0, 1.0, n)

    t = time.monotonic()
    try:
        rec = dp_audit.audit_run(slows_down, "pure:1", check="mechanism",
                                 flags=["--budget", "10"])
    except TimeoutError as e:
        # The run's deadline (or a call past the search's limit) ended it without a record.
        assert "budget" in str(e) or "s it was given" in str(e), str(e)
    else:
        assert rec.verdict in ("violation", "no-violation")
    assert time.monotonic() - t < 15


def test_one_run_gives_up_on_a_training_past_its_timeout():
    def train(request):
        time.sleep(30)
        return [0.0] * len(request["canaries"])

    t = time.monotonic()
    with pytest.raises(TimeoutError) as e:
        dp_audit.one_run(train, "gdp:1", canaries=100, timeout=1.5)
    assert time.monotonic() - t < 6.5
    msg = str(e.value)
    assert "train" in msg and "time limit of 1.5 s" in msg and "100 canaries" in msg, msg
    with pytest.raises(ValueError, match="timeout=0; allowed"):
        dp_audit.one_run(train, "gdp:1", timeout=0)


def test_a_pure_python_loop_past_its_timeout_is_stopped():
    stopped = threading.Event()

    def spins(data, n, seed):
        if n <= 2:
            return np.zeros(n)
        try:
            while True:
                pass
        except TimeoutError:
            stopped.set()
            raise

    with pytest.raises(TimeoutError):
        dp_audit.audit_callable(spins, "pure:1", *PAIR, samples=20_000, timeout=1)
    # The TimeoutError injected into the worker ends the loop (it would hold the GIL forever).
    assert stopped.wait(5)


def test_a_fast_callable_is_unaffected_and_timeout_none_means_no_limit():
    a = dp_audit.audit_callable(laplace_mean, "pure:1", *PAIR, samples=20_000, timeout=None,
                                check="mechanism")
    b = dp_audit.audit_callable(laplace_mean, "pure:1", *PAIR, samples=20_000,
                                check="mechanism")
    assert a.json() == b.json()  # the limit changes nothing in the record


def test_bad_timeouts_are_refused_by_name():
    for bad in [0, -1, float("nan"), float("inf"), 1e9]:
        with pytest.raises(ValueError, match=f"timeout={bad!r}; allowed: seconds above 0"):
            dp_audit.audit_callable(laplace_mean, "pure:1", *PAIR, timeout=bad)
        with pytest.raises(ValueError, match="timeout="):
            dp_audit.assert_dp(laplace_mean, "pure:1", [PAIR], timeout=bad)
        with pytest.raises(ValueError, match="timeout="):
            dp_audit.audit_run(laplace_mean, "pure:1", timeout=bad)
    for bad in [True, "3"]:
        with pytest.raises(TypeError, match="timeout="):
            dp_audit.audit_callable(laplace_mean, "pure:1", *PAIR, timeout=bad)
    with pytest.raises(ValueError, match="one of them"):
        dp_audit.audit_run(laplace_mean, "pure:1", timeout=3, flags=["--exec-timeout", "3"])
    with pytest.raises(ValueError, match="--exec-timeout"):
        dp_audit.audit_run(laplace_mean, "pure:1", flags=["--exec-timeout", "0"])
    with pytest.raises(ValueError, match="--exec-datasets"):
        dp_audit.audit_run(laplace_mean, "pure:1", flags=["--exec-datasets", "4"])


CHILD = textwrap.dedent("""
    import signal, sys, time
    import numpy as np
    import dp_audit

    # Python's own Ctrl-C handler, whatever the child inherited: a shell that starts the test
    # suite in the background (`cmd &` without job control) passes SIGINT on ignored, and Python
    # then installs no handler, so the signal would do nothing.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def sleeper(data, n, seed):
        if n > 2:
            print("calling", flush=True)
            time.sleep(60)
        return np.zeros(n)

    what = sys.argv[1]
    if what == "gate":
        dp_audit.audit_callable(sleeper, "pure:1", [0.0, 1.0], [0.0], samples=20000,
                                timeout=None)
    elif what == "run":
        dp_audit.audit_run(sleeper, "pure:1", timeout=None, flags=["--trials", "2"])
    elif what == "abandon":
        try:
            dp_audit.audit_callable(sleeper, "pure:1", [0.0, 1.0], [0.0], samples=20000,
                                    timeout=1)
        except TimeoutError:
            print("timed out", flush=True)
""")


def child(what):
    return subprocess.Popen([sys.executable, "-c", CHILD, what], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
@pytest.mark.parametrize("what", ["gate", "run"])
def test_ctrl_c_stops_an_audit_with_keyboard_interrupt(what):
    p = child(what)
    try:
        # The engine is calling the mechanism (calls started together may print on one line).
        assert "calling" in p.stdout.readline()
        t = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=10)
        assert time.monotonic() - t < 5
        assert p.returncode != 0 and "KeyboardInterrupt" in err, err
    finally:
        p.kill()


def test_the_process_exits_while_an_abandoned_call_still_sleeps():
    t = time.monotonic()
    p = child("abandon")
    try:
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert "timed out" in out, err
    assert p.returncode == 0, err
    assert time.monotonic() - t < 20  # not the 60 s the abandoned call sleeps
