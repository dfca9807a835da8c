"""The evaluator seam: how a tuning job measures one task.

A job never calls the cost model or a device directly; it holds a :class:`TaskEvaluator`
and asks it for a task's tiling space, its default (baseline) tiling and time, the time of
a given tiling, and a budgeted search round.  The same job therefore runs on the cost model
(:class:`CostModelEvaluator`) or on real measurements (:class:`MeasuredEvaluator`).
Evaluators are plain, picklable objects: the scheduler sends them to worker processes
together with the task, so a worker never looks a SoC up again.
"""
from __future__ import annotations

import contextlib
import importlib.util
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

import numpy as np

from .._core.space import SearchSpace
from ..ascend import ops
from ..ascend.ops import nearest_valid_tilings
from ..ascend.platforms import Platform, native_platform
from ..runners import IsolatedObjective, MeasurementError, RayObjective
from ..tuning import tune

__all__ = ["TaskLike", "RoundResult", "TaskEvaluator", "CostModelEvaluator", "MeasuredEvaluator", "RayEvaluator",
           "nearest_valid_tilings"]

Tiling = dict[str, int]
PRIOR_STRATEGIES = ("auto", "forest")  # the strategies that take a prior (Strategy::uses_prior)
Known = tuple[np.ndarray, np.ndarray]  # (indices into a task's tiling space, times in us)


class TaskLike(Protocol):
    """What an evaluator reads of a task (a :class:`aoe_native.graph.partition.Task`)."""
    op_type: str
    inputs: list[list[int]]
    dtype: str
    attrs: dict[str, Any]


@dataclass
class RoundResult:
    """One search round of one task: the best tiling found and what it cost to find it."""
    tiling: Tiling
    time_us: float
    baseline_tiling: Tiling
    baseline_us: float
    roofline_us: float           # lower bound of the task's time (0: unknown)
    evaluations: int
    space_size: int
    trace: np.ndarray = field(default_factory=lambda: np.zeros(0))  # best so far per evaluation
    # the round's evaluations: indices into the task's tiling space and their times (us)
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    prior: bool = False  # whether the search had the cost model's estimates as its prior (measured rounds)


class TaskEvaluator(ABC):
    """How a job measures tasks.  Subclasses must be picklable (sent to workers)."""

    #: shown in reports ("cost model", "measured", ...)
    name: str = "evaluator"
    #: whether a task's later rounds are given its earlier rounds' results (``known``) so that no
    #: tiling is evaluated twice: worth it when an evaluation is a measurement
    remember_rounds: bool = True

    def __init__(self, platform: Platform | str) -> None:
        self.platform = native_platform(platform)

    # The tiling space and the default tiling come from the SoC's limits, whatever measures them.
    def space(self, task: TaskLike) -> SearchSpace:
        return ops.tiling_space(task.op_type, task.inputs, task.dtype, self.platform, attrs=task.attrs or None)

    def baseline_tiling(self, task: TaskLike) -> Tiling:
        t = ops.baseline_tiling(task.op_type, task.inputs, task.dtype, self.platform, attrs=task.attrs or None)
        return {k: int(v) for k, v in t.items()}

    def complete_tiling(self, task: TaskLike, tiling: Mapping[str, int]) -> Tiling:
        """A stored tiling (bank entry, plan) as the task's model reads it now: knobs the
        model gained since it was stored get their defaults, so an old entry is still served."""
        t = ops.complete_tiling(task.op_type, task.inputs, task.dtype, self.platform, tiling,
                                attrs=task.attrs or None)
        return {k: int(v) for k, v in t.items()}

    def baseline_kind(self, task: TaskLike) -> str:
        """What the default tiling stands for ("CANN MatMulV3 default", "approximate CANN default")."""
        return ops.baseline_kind(task.op_type, task.inputs, task.dtype, self.platform, attrs=task.attrs or None)

    def baseline(self, task: TaskLike) -> tuple[Tiling, float]:
        """The default tiling and its time."""
        tiling = self.baseline_tiling(task)
        return tiling, self.estimate(task, tiling)

    @abstractmethod
    def estimate(self, task: TaskLike, tiling: Mapping[str, int]) -> float:
        """Time (us) of one tiling."""

    @abstractmethod
    def tune(self, task: TaskLike, max_evals: int, seed: int, initial: Sequence[Mapping[str, int]] = (),
             time_limit: float | None = None, known: Known | None = None) -> RoundResult:
        """One search round: at most `max_evals` evaluations (and `time_limit` seconds),
        starting from the `initial` tilings (found for this task or for similar shapes).
        `known`: (indices, times) of the task's earlier rounds, which the search learns from
        and does not evaluate again; the result's ids/values are this round's own."""


class CostModelEvaluator(TaskEvaluator):
    """The analytical AI Core model of the platform; searches with :func:`aoe_native.tune_op`."""

    name = "cost model"
    # An estimate costs about what looking it up does, and continuing a round makes the
    # neighbourhood walks step over known tilings: side by side on ResNet-50 (aoe, 2 workers,
    # median of 3) the same result took 1.48 M estimates in 6.8 s with fresh rounds and 1.19 M
    # in 9.2 s with continued ones.
    remember_rounds = False

    def __init__(self, platform: Platform | str, strategy: str = ops.TUNE_OP_POLICY) -> None:
        super().__init__(platform)
        self.strategy = strategy

    def estimate(self, task: TaskLike, tiling: Mapping[str, int]) -> float:
        return float(ops.estimate(task.op_type, task.inputs, task.dtype, self.platform, dict(tiling),
                                  attrs=task.attrs or None).time_us)

    def tune(self, task: TaskLike, max_evals: int, seed: int, initial: Sequence[Mapping[str, int]] = (),
             time_limit: float | None = None, known: Known | None = None) -> RoundResult:
        r = ops.tune_op(task.op_type, task.inputs, dtype=task.dtype, soc_version=self.platform,
                        attrs=task.attrs or None, strategy=self.strategy, max_evals=max_evals,
                        time_limit=time_limit, seed=seed, initial_tilings=list(initial) or None, known=known)
        return RoundResult({k: int(v) for k, v in r.tiling.items()}, float(r.time_us),
                           {k: int(v) for k, v in r.baseline_tiling.items()}, float(r.baseline_us),
                           float(r.roofline_us), int(r.evaluations), int(r.space_size),
                           np.asarray(r.trace, dtype=np.float64), r.history_ids, r.history_values)


class _TaskMeasure:
    """measure(task, tiling) bound to one task, as the config -> time callable tune() takes."""

    def __init__(self, measure: Callable[[TaskLike, Tiling], float], task: TaskLike) -> None:
        self.measure, self.task = measure, task

    def __call__(self, config: Tiling) -> float:
        return float(self.measure(self.task, dict(config)))


class MeasuredEvaluator(TaskEvaluator):
    """Real measurements: ``measure(task, tiling) -> us`` runs (compiles, launches, times)
    one tiling of a task on a device.  Each measurement runs in a worker process
    (:class:`aoe_native.runners.IsolatedObjective`), so one that raises, hangs past
    `timeout` or crashes fails only its tiling and tuning goes on.  The tiling space and the
    default tiling are the platform's; the search is the tuner's `strategy`.

    With ``parallel > 1`` the job sends the evaluator to worker processes, so `measure`
    must then be picklable (a module-level function); one device, one worker is the usual
    setup (:class:`RayEvaluator` spreads measurements over many).

    ``prior`` (on by default): the search takes the cost model's estimate of every tiling of
    the task as its prior (``tune(..., prior=...)``): the model's best tilings are measured
    first and the search learns the model's error from the measurements, so a good tiling
    takes far fewer measurements (docs/operator_tuning.md, bench/bench_prior.py).  Off, or
    with a strategy that takes no prior, the search starts from the default tiling alone."""

    name = "measured"

    def __init__(self, platform: Platform | str, measure: Callable[[TaskLike, Tiling], float],
                 timeout: float = 60.0, strategy: str = "auto", prior: bool = True) -> None:
        super().__init__(platform)
        if not callable(measure):
            raise TypeError(f"measure must be a callable (task, tiling) -> us, got {measure!r}")
        if not isinstance(prior, bool):
            raise TypeError(f"prior must be True or False, got {prior!r}")
        self.measure, self.timeout, self.strategy, self.prior = measure, float(timeout), strategy, prior
        # task key -> the measured time of its default tiling (the job measures it before tuning,
        # to rank the tasks; the first round then knows it instead of measuring it again)
        self._defaults: dict[str, float] = {}

    def baseline(self, task: TaskLike) -> tuple[Tiling, float]:
        tiling, us = super().baseline(task)
        self._defaults[task.key] = us
        return tiling, us

    @contextlib.contextmanager
    def _objective(self, task: TaskLike, space: SearchSpace) -> Iterator[tuple[Any, dict[str, float]]]:
        """The objective tune() runs for `task`, and the strategy options it needs."""
        with IsolatedObjective(_TaskMeasure(self.measure, task), timeout=self.timeout) as objective:
            yield objective, {}

    def model_prior(self, task: TaskLike, space: SearchSpace) -> np.ndarray | None:
        """The cost model's estimate (us) of every tiling of ``space``, the search's prior; None when
        ``prior`` is off or the strategy takes none.  A tiling the model cannot estimate (NaN) gets
        the slowest estimate, so the prior never ranks it first."""
        if not self.prior or self.strategy not in PRIOR_STRATEGIES:
            return None
        est = ops.estimate_batch(task.op_type, task.inputs, task.dtype, self.platform, space.configs(),
                                 attrs=task.attrs or None)
        finite = np.isfinite(est)
        if not finite.any():
            return None  # nothing to rank by
        return np.where(finite, est, est[finite].max())

    def _run(self, task: TaskLike, space: SearchSpace, max_evals: int, seed: int, start: list[Tiling],
             strategy: str, *, time_limit: float | None = None, known: Known | None = None,
             prior: np.ndarray | None = None) -> Any:
        with self._objective(task, space) as (objective, options):
            return tune(space, objective, strategy=strategy, max_evals=max(max_evals, len(start)),
                        time_limit=time_limit, seed=seed, initial_configs=start,
                        strategy_options=options if strategy == self.strategy else None, known=known, prior=prior)

    def estimate(self, task: TaskLike, tiling: Mapping[str, int]) -> float:
        # A space of exactly this tiling: it need not be in the pruned search space.
        names = list(self.space(task).param_names)
        one = SearchSpace.from_configs(names, np.array([[int(tiling[n]) for n in names]], dtype=np.int64))
        res = self._run(task, one, 1, 0, [dict(tiling)], "exhaustive")
        if res.failed:
            raise MeasurementError(f"{task.op_type} {dict(tiling)}: {res.failed[0][1]}")
        return float(res.best_value)

    def tune(self, task: TaskLike, max_evals: int, seed: int, initial: Sequence[Mapping[str, int]] = (),
             time_limit: float | None = None, known: Known | None = None) -> RoundResult:
        space = self.space(task)
        baseline = self.baseline_tiling(task)
        base_id = space.index(baseline)
        # the default first (or, outside the pruned space, its nearest searched tiling, as tune_op)
        start = nearest_valid_tilings(space, [baseline, *initial])
        key = getattr(task, "key", None)
        measured = self._defaults.get(key) if key is not None else None  # the default's time, if measured
        if base_id is not None and measured is not None:  # known, not measured again
            ids, values = known if known is not None else (np.zeros(0, dtype=np.int64), np.zeros(0))
            known = (np.append(ids, base_id), np.append(values, measured))
        res = self._run(task, space, max_evals, seed, start, self.strategy, time_limit=time_limit, known=known,
                        prior=self.model_prior(task, space))
        if base_id is None:  # a default outside the pruned space: measured apart, once
            base_us = measured if measured is not None else self.estimate(task, baseline)
            if key is not None:
                self._defaults[key] = base_us
        else:  # measured in an earlier round, or first in this one
            ids, values = res.history_ids, res.history_values
            if known is not None:
                ids, values = np.concatenate([known[0], ids]), np.concatenate([known[1], values])
            hit = np.flatnonzero(ids == base_id)
            base_us = float(values[hit[0]]) if len(hit) else math.inf
        if res.best_config is None or not base_us > res.best_value:
            best, best_us = baseline, base_us
        else:
            best, best_us = {k: int(v) for k, v in res.best_config.items()}, float(res.best_value)
        return RoundResult(best, best_us, baseline, base_us, 0.0, res.evaluations, len(space),
                           np.asarray(res.trace, dtype=np.float64), res.history_ids, res.history_values, res.prior)


class RayEvaluator(MeasuredEvaluator):
    """Measurements spread over Ray workers, one device each (:class:`aoe_native.runners.RayObjective`):
    the surrogate-guided search proposes `batch` tilings at a time and the workers measure
    them in parallel, each isolated as in :class:`MeasuredEvaluator`.  The batch size, not
    the number of workers, shapes the search, so the same seed gives the same result on any
    cluster.  Run the job with ``parallel=1``: Ray is the parallelism.  The workers start
    on first use and are kept for the whole job (:meth:`close` stops them)."""

    name = "measured on Ray"

    def __init__(self, platform: Platform | str, measure: Callable[[TaskLike, Tiling], float],
                 workers: int | None = None, resources: Mapping[str, float] | None = None,
                 timeout: float = 60.0, batch: int = 8, autoscale: bool = False, prior: bool = True) -> None:
        if importlib.util.find_spec("ray") is None:  # said now, not as a failure of every task
            raise ImportError("RayEvaluator needs Ray: pip install 'aoe-native[ray]'")
        super().__init__(platform, measure, timeout, strategy="forest", prior=prior)
        self.workers, self.resources, self.batch, self.autoscale = workers, resources, int(batch), bool(autoscale)
        self._ray: RayObjective | None = None

    @contextlib.contextmanager
    def _objective(self, task: TaskLike, space: SearchSpace) -> Iterator[tuple[Any, dict[str, float]]]:
        if self._ray is None:
            self._ray = RayObjective(self.measure, space.param_names, self.workers, self.resources, self.timeout,
                                     self.batch, autoscale=self.autoscale)
        yield self._ray.bind(task, space.param_names), {"batch": self.batch}

    def close(self) -> None:
        if self._ray is not None:
            self._ray.close()
            self._ray = None

    def __getstate__(self) -> dict[str, Any]:  # workers stay with the process that started them
        return {**self.__dict__, "_ray": None}
