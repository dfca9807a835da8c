"""Measuring configurations for real: timing on the host and process isolation.

On a device, a measurement can raise, hang or crash the process.  :class:`IsolatedObjective`
runs the user's measurement in a worker process, so a hang (timeout) or a crash
(segfault, ``os._exit``) marks only that configuration failed, with a message
saying what happened, and tuning goes on with a fresh worker.

:func:`measure` times a callable on the host CPU the way tuners time kernels:
warm-up runs, then the median of several timed runs.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import time
import traceback
from typing import Any, Callable, Mapping

Config = Mapping[str, int]


def measure(fn: Callable[[], Any], repeats: int = 7, warmup: int = 1, min_seconds: float = 0.0) -> float:
    """Median wall time of ``fn()`` in milliseconds.

    Runs ``warmup`` untimed calls, then at least ``repeats`` timed calls (more,
    until ``min_seconds`` have been spent, for very short kernels).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        fn()
    times: list[float] = []
    spent = 0.0
    while len(times) < repeats or spent < min_seconds:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(dt * 1e3)
        spent += dt
    return statistics.median(times)


def _worker(conn: Any, fn: Callable[[dict[str, int]], float]) -> None:
    # A crash is reported by the parent with its signal; a traceback dump from a
    # faulthandler inherited through fork would only clutter the parent's output.
    import faulthandler

    faulthandler.disable()
    while True:
        try:
            config = conn.recv()
        except EOFError:
            return
        if config is None:
            return
        try:
            conn.send(("ok", float(fn(config))))
        except Exception as e:  # reported to the parent as this configuration's failure
            conn.send(("error", f"{type(e).__name__}: {e}", traceback.format_exc(limit=5)))


class MeasurementError(RuntimeError):
    """A measurement failed in the worker: raised, timed out or crashed."""


class IsolatedObjective:
    """Wraps ``fn(config) -> float`` to run in a separate worker process.

    Args:
        fn: the measurement.  With the default ``"fork"`` start method it may be
            any callable (closures and lambdas too); with ``"spawn"`` it must be
            importable (a module-level function).
        timeout: seconds one measurement may take before the worker is killed and
            the configuration fails with "timed out".
        start_method: ``multiprocessing`` start method.

    Use as a context manager (or call :meth:`close`) to stop the worker.
    """

    def __init__(self, fn: Callable[[dict[str, int]], float], timeout: float = 60.0,
                 start_method: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"IsolatedObjective needs a callable, got {fn!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.fn = fn
        self.timeout = float(timeout)
        methods = mp.get_all_start_methods()
        self._ctx = mp.get_context(start_method or ("fork" if "fork" in methods else "spawn"))
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child, self.fn), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def _kill(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        self._conn.close()
        self.restarts += 1
        return proc.exitcode

    def __call__(self, config: dict[str, int]) -> float:
        if self._proc is None or not self._proc.is_alive():
            if self._proc is not None:
                self._kill()
            self._start()
        try:
            self._conn.send(dict(config))
            if not self._conn.poll(self.timeout):
                self._kill()
                raise MeasurementError(f"measurement timed out after {self.timeout:g} s")
            reply = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self._kill()
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            raise MeasurementError(f"measurement process crashed ({how})") from None
        if reply[0] == "error":
            raise MeasurementError(reply[1])
        return reply[1]

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self._proc.join(1)
        if self._proc is not None:
            self._kill()
            self.restarts -= 1

    def __enter__(self) -> "IsolatedObjective":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
