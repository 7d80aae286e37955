"""Calls of a user's function that can be given up on (see python/src/calls.rs).

A Python call cannot be killed, so each call of a mechanism or training function runs on a
``Worker``: a daemon thread that takes jobs from its queue and makes the call from Python code.
The caller waits for the answer with a time limit; past it the worker is abandoned (a
``TimeoutError`` is injected into its thread, which stops a pure-Python loop at its next
bytecode, and the worker stops after the job), its answer, if it ever comes, is dropped, and the
process can exit without waiting for it (a daemon thread).
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Optional

from . import _native


def _serve(jobs: "queue.SimpleQueue") -> None:
    try:
        while True:
            job = jobs.get()
            if job is None:
                return
            function, args, reply = job
            job = None
            try:
                value, error = function(*args), None
            except BaseException as e:  # noqa: B902 - everything goes back to the caller
                value, error = None, e
            reply(value, error)
            function = args = reply = value = error = None
    except BaseException:
        # A time-out's TimeoutError arriving after the job ended: the worker was abandoned and
        # has nothing more to do.
        return


class Worker:
    """A daemon thread that makes calls from its queue, one at a time."""

    __slots__ = ("_jobs", "ident")

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        thread = threading.Thread(target=_serve, args=(self._jobs,), name="dp_audit call",
                                  daemon=True)
        thread.start()
        self.ident = thread.ident

    def submit(self, function: Callable, args: tuple, reply: Callable[[Any, Any], None]) -> None:
        """Calls ``function(*args)``, then ``reply(value, None)`` or ``reply(None, exception)``."""
        self._jobs.put((function, args, reply))

    def stop(self) -> None:
        """Ends the thread after the job it is making."""
        self._jobs.put(None)


def call(function: Callable, args: tuple, timeout: Optional[float],
         message: Callable[[], str]) -> Any:
    """``function(*args)``, given up on after ``timeout`` seconds (``None``: no limit) with
    ``TimeoutError(message())``. Ctrl-C interrupts the wait (``KeyboardInterrupt``)."""
    if timeout is None:
        return function(*args)
    done = threading.Event()
    box = []

    def reply(value, error):
        box.append((value, error))
        done.set()

    worker = Worker()
    worker.submit(function, args, reply)
    try:
        finished = done.wait(timeout)
    except BaseException:
        _native.abandon_worker(worker)
        raise
    if not finished:
        _native.abandon_worker(worker)
        raise TimeoutError(message())
    worker.stop()
    value, error = box[0]
    if error is not None:
        raise error
    return value
