"""Measuring configurations for real: timing on the host, process isolation, and
distribution over the devices of several hosts.

On a device, a measurement can raise, hang or crash the process.  :class:`IsolatedObjective`
runs the user's measurement in a worker process, so a hang (timeout) or a crash
(segfault, ``os._exit``) marks only that configuration failed, with a message
saying what happened, and tuning goes on with a fresh worker.

:class:`RayObjective` spreads batches of measurements over Ray workers, one device each,
with the same isolation in every worker.

:func:`measure` times a callable on the host CPU the way tuners time kernels:
warm-up runs, then the median of several timed runs.
"""

from __future__ import annotations

import copy
import math
import multiprocessing as mp
import pickle
import statistics
import time
import traceback
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .tuning import BatchObjective, BatchResult

__all__ = ["measure", "IsolatedObjective", "MeasurementError", "RayObjective"]

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


_NO_LIMIT_S = 1e9  # a timeout longer than this (~32 years) is no timeout


class IsolatedObjective:
    """Wraps ``fn(config) -> float`` to run in a separate worker process.

    Args:
        fn: the measurement.  With the default ``"fork"`` start method it may be
            any callable (closures and lambdas too); with ``"spawn"`` it must be
            importable (a module-level function).
        timeout: seconds one measurement may take before the worker is killed and
            the configuration fails with "timed out"; ``None`` or ``math.inf``: no limit.
        start_method: ``multiprocessing`` start method.

    Use as a context manager (or call :meth:`close`) to stop the worker.
    """

    def __init__(self, fn: Callable[[dict[str, int]], float], timeout: float | None = 60.0,
                 start_method: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"IsolatedObjective needs a callable, got {fn!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive (or None for no limit), got {timeout}")
        self.fn = fn
        # Pipe.poll cannot wait past ~292 years (a C timestamp): longer is no limit.
        self.timeout = None if timeout is None or timeout > _NO_LIMIT_S else float(timeout)
        methods = mp.get_all_start_methods()
        self._ctx = mp.get_context(start_method or ("fork" if "fork" in methods else "spawn"))
        if self._ctx.get_start_method() != "fork":  # the worker gets fn by pickle: fail now, not per configuration
            try:
                pickle.dumps(fn)
            except Exception as e:
                raise TypeError(f"with start_method {self._ctx.get_start_method()!r} the measurement is sent to the "
                                f"worker by pickle, and {fn!r} cannot be ({type(e).__name__}: {e}); use a "
                                "module-level function, or the 'fork' start method") from None
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker, args=(child, self.fn), daemon=True)
        try:
            proc.start()
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self._proc, self._conn = proc, parent  # only a started worker is kept (and later joined)

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


class _Bound:
    """fn(context, config) as the fn(config) an IsolatedObjective runs."""

    def __init__(self, fn: Callable[[Any, dict[str, int]], float], context: Any) -> None:
        self.fn, self.context = fn, context

    def __call__(self, config: dict[str, int]) -> float:
        return self.fn(self.context, config)


class _RayWorker:
    """One Ray actor: holds a device (its resources) and an isolated measurement process,
    restarted only when the measured context (e.g. the task) changes."""

    def __init__(self, fn: Callable[..., float], timeout: float | None) -> None:
        self.fn, self.timeout = fn, timeout
        self.objective: IsolatedObjective | None = None
        self.context: Any = None

    def ready(self) -> bool:
        return True

    def measure(self, config: dict[str, int], context: Any = None) -> tuple[str, Any]:
        """fn(config), or fn(context, config) when a context (never None) is given."""
        if self.objective is None or not (context is self.context or context == self.context):
            if self.objective is not None:
                self.objective.close()
            fn = self.fn if context is None else _Bound(self.fn, context)
            self.objective, self.context = IsolatedObjective(fn, timeout=self.timeout), context
        try:
            return "ok", float(self.objective(config))
        except Exception as e:  # the configuration fails, the worker stays
            return "error", str(e)


class RayObjective(BatchObjective):
    """Measures batches of configurations on Ray workers, for :func:`aoe_native.tune`.

    Args:
        fn: ``fn(config) -> value`` (lower is better), run on a worker.  Ray sends it to
            the workers, so it must be serialisable (cloudpickle: module-level
            functions, closures over plain data).
        param_names: the space's parameter names (``space.param_names``), in order.
        workers: Ray actors to start; default: as many as the cluster has of
            `resources` (e.g. every ``"NPU"`` of every host), at least one.
        resources: what one worker holds, e.g. ``{"NPU": 1}`` for one device
            (default ``{"CPU": 1}``).
        timeout: seconds one measurement may take (see :class:`IsolatedObjective`;
            ``None``: no limit).
        batch: configurations per batch the strategy proposes.  Kept independent of
            the number of workers, so that the same seed gives the same run on any
            cluster (results are returned in proposal order, never arrival order).
        start_timeout: seconds the workers may take to start: an error after this long
            rather than a hang (a cluster that lacks the resources altogether is refused
            at once, from ``ray.cluster_resources()``, unless `autoscale`).
        autoscale: the cluster grows on demand (a Ray autoscaler adds nodes with
            `resources` when workers wait for them): resources it does not have yet are
            not refused, and the workers get `start_timeout` to be placed.  Give
            `workers` then: the cluster's present size says nothing.

    Each worker runs `fn` in its own isolated process: a measurement that raises,
    hangs or crashes fails only its configuration (NaN; the reason is kept in
    :attr:`errors`), and the run goes on.  Use with a strategy that proposes batches,
    e.g. ``tune(space, obj, strategy="forest", strategy_options={"batch": obj.max_batch})``.
    :meth:`bind` measures another space (a task) on the same workers with
    ``fn(context, config)``.  Starts a local Ray if none is running (``ray.init()``
    first to join a cluster).  Install with ``pip install 'aoe-native[ray]'``.
    """

    def __init__(self, fn: Callable[..., float], param_names: Sequence[str], workers: int | None = None,
                 resources: Mapping[str, float] | None = None, timeout: float | None = 60.0, batch: int = 8,
                 start_timeout: float = 300.0, autoscale: bool = False) -> None:
        try:
            import ray
            from ray.util import ActorPool
        except ImportError:
            raise ImportError("RayObjective needs Ray: pip install 'aoe-native[ray]'") from None
        if not callable(fn):
            raise TypeError(f"RayObjective needs a callable, got {fn!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive (or None for no limit), got {timeout}")
        if not start_timeout > 0:
            raise ValueError(f"start_timeout must be positive, got {start_timeout}")
        resources = dict(resources or {"CPU": 1})
        if any(not v > 0 for v in resources.values()):
            raise ValueError(f"resources must be positive amounts, got {resources}")
        if not ray.is_initialized():
            ray.init()
        have = ray.cluster_resources()
        if workers is None:
            if autoscale:
                raise ValueError("RayObjective: with autoscale, give workers= (how many to start): the cluster's "
                                 "present resources do not say how far it will grow")
            workers = max(1, int(min(have.get(k, 0.0) // v for k, v in resources.items())))
        if int(workers) < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        short = {k: have.get(k, 0.0) for k, v in resources.items() if have.get(k, 0.0) < v * int(workers)}
        if short and not autoscale:  # Ray would queue the workers for ever
            raise ValueError(f"RayObjective: {int(workers)} worker(s) of {resources} need more than the Ray cluster "
                             f"has ({', '.join(f'{k}: {n:g}' for k, n in short.items())}); start Ray with those "
                             "resources (ray start --resources / ray.init(resources=...)) or ask for fewer workers")
        asked = dict(resources)
        # Ray takes CPUs and GPUs as keywords, every other resource by name.
        cpus, gpus = resources.pop("CPU", 0), resources.pop("GPU", 0)
        actor = ray.remote(_RayWorker).options(num_cpus=cpus, num_gpus=gpus, resources=resources or None,
                                              max_restarts=-1, max_task_retries=0)
        self.names = list(param_names)
        self.context: Any = None
        self.workers = [actor.remote(fn, None if timeout is None else float(timeout)) for _ in range(int(workers))]
        try:  # fail here, clearly, if the workers cannot load `fn`, not batch after batch later
            ray.get([w.ready.remote() for w in self.workers], timeout=start_timeout)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise RuntimeError(f"RayObjective: the {int(workers)} worker(s) of {asked} "
                               f"did not start within {start_timeout:g} s (can the cluster place them? see "
                               "`ray status`)") from None
        except ray.exceptions.RayError as e:
            self.close()
            raise RuntimeError(f"RayObjective: the Ray workers could not start with {fn!r} (is it importable on "
                               f"the workers? ship its module with runtime_env): {str(e).splitlines()[0]}") from None
        self._pool = ActorPool(self.workers)
        self.errors: dict[tuple[int, ...], str] = {}
        super().__init__(self._measure_rows, max_batch=batch)

    def bind(self, context: Any, param_names: Sequence[str]) -> "RayObjective":
        """The same workers measuring ``fn(context, config)`` over `param_names`."""
        if context is None:
            raise ValueError("bind needs a context (None means: no context)")
        bound = copy.copy(self)
        bound.context, bound.names, bound.errors = context, list(param_names), {}
        bound.fn = bound._measure_rows
        return bound

    def _measure_rows(self, rows: np.ndarray) -> BatchResult:
        configs = [{n: int(v) for n, v in zip(self.names, row)} for row in rows]
        ctx = self.context
        out, why = [], []
        # ActorPool.map yields in submission order: the run does not depend on arrival order.
        for config, (status, value) in zip(configs, self._pool.map(lambda a, c: a.measure.remote(c, ctx), configs)):
            if status == "ok":
                out.append(value)
                why.append("")
            else:  # the reason goes to the run's failures (and to `errors`)
                self.errors[tuple(config.values())] = value
                out.append(math.nan)
                why.append(value)
        return BatchResult(out, why)

    def close(self) -> None:
        """Stop the workers (the Ray runtime itself is left running)."""
        import ray

        for w in self.workers:
            ray.kill(w)
        self.workers = []

    def __enter__(self) -> "RayObjective":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
