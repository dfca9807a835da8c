"""The Python face of the tuning loop: :func:`tune` and :class:`TuneResult`."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

import numpy as np

from . import replay
from ._core.space import Objective, SearchSpace
from ._core.space import tune as _native_tune

__all__ = ["BatchObjective", "BatchResult", "PriorLike", "TuneResult", "TuningInterrupted", "improvement", "prior_values",
           "tune"]

Config = dict[str, int]


def improvement(before: float, after: float) -> float:
    """AOE's performance improvement: before / after - 1 (0.25 = 25% faster).  The one
    definition used by every result of this package."""
    return before / after - 1.0 if after > 0 else 0.0


class BatchObjective:
    """Marks a callable that evaluates many configurations at once.

    ``fn`` receives an ``int64`` array with one row per configuration (columns in
    ``space.param_names`` order) and returns one value per row, or a
    :class:`BatchResult` to say why rows failed.  An exception marks the whole batch
    failed; a non-finite value marks one configuration.
    """

    def __init__(self, fn: Callable[[np.ndarray], BatchValues], max_batch: int = 256) -> None:
        if not callable(fn):
            raise TypeError(f"BatchObjective needs a callable, got {fn!r}")
        if int(max_batch) < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self.fn = fn
        self.max_batch = int(max_batch)

    def __call__(self, rows: np.ndarray) -> BatchValues:
        return self.fn(rows)


@dataclass
class BatchResult:
    """What a batch objective may return instead of bare values: ``values[i]`` for row i
    and ``errors[i]``, the reason row i failed ("" or None when it did not)."""

    values: Sequence[float] | np.ndarray
    errors: Sequence[str | None]


# What a batch objective returns: one value per row (a sequence or an array), or a BatchResult.
BatchValues = Union[Sequence[float], np.ndarray, BatchResult]


ObjectiveLike = Union[Callable[[Config], float], BatchObjective, Objective]

# A cheap prediction of the objective: one value per configuration id, or a function of an
# int64 array of configurations (one row each, columns in ``space.param_names`` order).
PriorLike = Union[Sequence[float], np.ndarray, Callable[[np.ndarray], Union[Sequence[float], np.ndarray]]]

PRIOR_CHUNK = 65_536  # rows per call of a callable prior: bounded memory on large spaces


@dataclass
class TuneResult:
    """Outcome of :func:`tune`.

    ``history_ids``/``history_values`` hold every evaluation in order (failed ones
    as ``inf``); ``failed`` pairs each failed configuration with its error.
    """

    space: SearchSpace
    history_ids: np.ndarray
    history_values: np.ndarray
    errors: dict[int, str]
    best_id: int | None
    best_value: float
    elapsed_s: float
    stop_reason: str
    strategy: str
    seed: int
    _trace: np.ndarray | None = field(default=None, repr=False)
    prior: bool = False  # whether the search had a prior (tune(prior=...))

    @property
    def best_config(self) -> Config | None:
        """The best configuration found (None if every evaluation failed)."""
        return None if self.best_id is None else self.space.config(self.best_id)

    @property
    def evaluations(self) -> int:
        return len(self.history_ids)

    @property
    def failed(self) -> list[tuple[Config, str]]:
        """Each failed configuration with its error message, in evaluation order."""
        return [(self.space.config(int(self.history_ids[i])), msg) for i, msg in sorted(self.errors.items())]

    @property
    def history(self) -> list[tuple[Config, float]]:
        """Every evaluated configuration and its value, in evaluation order."""
        return [(self.space.config(int(i)), float(v)) for i, v in zip(self.history_ids, self.history_values)]

    @property
    def history_configs(self) -> np.ndarray:
        """The evaluated configurations as an int64 array (one row per evaluation)."""
        return self.space.configs(self.history_ids)

    @property
    def trace(self) -> np.ndarray:
        """Best value so far after each evaluation (inf until the first success)."""
        if self._trace is None:
            self._trace = np.minimum.accumulate(self.history_values) if len(self.history_values) else np.zeros(0)
        return self._trace

    def save_cache(self, path: str, **metadata: Any) -> None:
        """Write the run as a Kernel Tuner cache file (see :func:`aoe_native.replay.save`)."""
        replay.save(self, path, **metadata)


class TuningInterrupted(KeyboardInterrupt):
    """Raised when a run is interrupted by Ctrl-C; ``partial_result`` keeps what
    was found.  Other exceptions that end a run (a SystemExit from the objective,
    an error raised by ``progress``) are re-raised with ``partial_result`` set."""

    def __init__(self, partial_result: TuneResult, cause: BaseException) -> None:
        super().__init__(f"tuning interrupted after {partial_result.evaluations} evaluations: {cause!r}")
        self.partial_result = partial_result


def _initial_ids(space: SearchSpace, initial_configs: Iterable[Mapping[str, int] | Sequence[int]] | None) -> list[int]:
    ids = []
    for cfg in initial_configs or ():
        i = space.index(cfg)
        if i is None:
            raise ValueError(f"initial configuration {cfg!r} is not a valid configuration of the space")
        ids.append(i)
    return ids


def _strategy_options(options: Mapping[str, float] | None) -> dict[str, float]:
    out = {}
    for key, value in (options or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"strategy option names are strings, got {key!r}")
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise TypeError(f"strategy option {key!r} must be a finite number, got {value!r}")
        out[key] = float(value)
    return out


def check_max_evals(max_evals: Any) -> None:
    """TypeError / ValueError unless max_evals is None or an integer from 1 to below 2**63 (the
    native side's limit).  The one check of a budget, at each public entry point."""
    if max_evals is None:
        return
    if (isinstance(max_evals, bool) or not isinstance(max_evals, numbers.Real) or not math.isfinite(max_evals)
            or int(max_evals) != max_evals):
        raise TypeError(f"max_evals must be an integer, got {max_evals!r}")
    if int(max_evals) >= 2**63:
        raise ValueError(f"max_evals must be below 2**63, got {max_evals!r}")
    if max_evals < 1:
        raise ValueError(f"max_evals must be at least 1, got {max_evals}")


def _known(known: tuple[Any, Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) as int64 and float64 arrays of one length."""
    if known is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    try:
        ids, values = known
    except (TypeError, ValueError):
        raise TypeError("known must be a pair (configuration indices, values)") from None
    ids = np.asarray(ids, dtype=np.int64).ravel()
    values = np.asarray(values, dtype=np.float64).ravel()
    if len(ids) != len(values):
        raise ValueError(f"known: {len(ids)} configuration indices but {len(values)} values")
    return ids, values


def prior_values(space: SearchSpace, prior: PriorLike) -> np.ndarray:
    """The prior as one finite float64 per configuration id of ``space``.

    ``prior`` is an array (or sequence) indexed by configuration id, or a callable given the
    configurations as int64 rows (``space.configs()``, in chunks of up to 65,536) that returns
    one value per row.  ValueError, naming what is wrong, for a callable that raises, a wrong
    length or shape, or a value that is not a finite number (with its configuration).
    """
    n = len(space)
    if callable(prior):
        parts = []
        for start in range(0, n, PRIOR_CHUNK):
            ids = np.arange(start, min(n, start + PRIOR_CHUNK), dtype=np.int64)
            try:
                out = prior(space.configs(ids))
            except Exception as e:
                raise ValueError(f"prior {prior!r} raised {type(e).__name__}: {e} (on configurations {start} to "
                                 f"{ids[-1]})") from e
            part = _as_float_array(out, "prior callable's result")
            if part.shape != ids.shape:
                raise ValueError(f"prior callable returned shape {part.shape} for {len(ids)} configurations "
                                 f"(one value per row)")
            parts.append(part)
        values = np.concatenate(parts) if parts else np.zeros(0)
    else:
        values = _as_float_array(prior, "prior")
        if values.shape != (n,):
            raise ValueError(f"prior has shape {values.shape}, expected ({n},): one value per configuration id of "
                             f"the space")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"prior value {values[i]} for configuration {i} {space.config(i)} is not finite "
                         f"({len(bad)} such values)")
    return values


def _as_float_array(values: Any, what: str) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{what} is a string, not numbers")
    try:
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} is not numbers: {e}") from None
    return out


def tune(
    space: SearchSpace,
    objective: ObjectiveLike,
    strategy: str = "auto",
    *,
    max_evals: int | None = None,
    time_limit: float | None = None,
    seed: int = 0,
    initial_configs: Iterable[Mapping[str, int] | Sequence[int]] | None = None,
    progress: Callable[[int, float], bool | None] | None = None,
    strategy_options: Mapping[str, float] | None = None,
    known: tuple[Sequence[int] | np.ndarray, Sequence[float] | np.ndarray] | None = None,
    prior: PriorLike | None = None,
) -> TuneResult:
    """Search ``space`` for the configuration that minimises ``objective``.

    Args:
        space: the search space; only its valid configurations are evaluated.
        objective: ``f(config: dict) -> float`` (lower is better; an exception or a
            non-finite value marks the configuration failed and the run goes on),
            a :class:`BatchObjective`, or a native :class:`Objective` (runs in C++
            without the GIL).
        strategy: one of :func:`aoe_native.strategies`; ``"auto"`` is the best
            general choice.
        strategy_options: numeric options of the strategy, e.g.
            ``{"population": 50}`` for ``"genetic"``; :func:`aoe_native.strategy_options`
            lists them with their defaults.  An unknown name or a value out of
            range raises ``ValueError``.
        max_evals: at most this many evaluations.  With neither ``max_evals`` nor
            ``time_limit`` the whole space may be evaluated.  The strategy is told it:
            ``"forest"`` (and so ``"auto"``) keeps its space-filling design (20
            points, or P + 1 for P parameters) to a third of the budget
            (``initial_share``), so a small budget is mostly spent where the model points.
        time_limit: stop after this many seconds (checked between evaluations).
        seed: same inputs and seed give the same result.
        initial_configs: configurations evaluated first (warm start).
        known: ``(indices, values)`` of earlier evaluations on this same space, e.g. an
            earlier result's ``history_ids`` and ``history_values``: the strategy learns
            from them first and they are never evaluated again (a search resumed, a second
            round); they are not in this run's history or best and do not count towards
            ``max_evals``.  Non-finite values count as failed.
        prior: a cheap prediction of the objective (lower is better), e.g. a cost model's
            estimate when the objective is a measurement: an array with one value per
            configuration id, or a callable that takes an int64 array of configurations
            (rows in ``space.param_names`` order) and returns one value per row (see
            :func:`prior_values`).  ``"auto"`` and ``"forest"`` evaluate the prior's best
            configuration first, spread a small design over its best 2%, and model the
            objective as ``a * prior + b`` plus a learnt residual (logs of both when both
            are positive), with ``a`` and ``b`` refitted to the results as they come: a
            prior that ranks well saves most of the evaluations, one that is wrong is
            corrected by the results.  Other strategies raise ``ValueError``, as do a prior
            of the wrong length, a non-finite value or a callable that raises.
        progress: called as ``progress(evaluations, best_value)`` after each batch
            (at most ~10 times a second for native objectives); return False to stop.

    No configuration is evaluated twice in one run.  If the run is interrupted
    (Ctrl-C), :class:`TuningInterrupted` carries the partial result.
    """
    if not isinstance(space, SearchSpace):
        raise TypeError(f"space must be an aoe_native.SearchSpace, got {type(space).__name__}")
    batch = 0
    fn: Any = objective
    if isinstance(objective, BatchObjective):
        batch, fn = objective.max_batch, objective.fn
    check_max_evals(max_evals)
    if not isinstance(strategy, str):
        raise TypeError(f"strategy must be a strategy name (aoe_native.strategies()), got {strategy!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    options = _strategy_options(strategy_options)
    prior_array = np.zeros(0) if prior is None else prior_values(space, prior)
    ids, values, errors, best, best_value, _failed, elapsed, reason, pending = _native_tune(
        space, fn, batch, strategy, options, None if max_evals is None else int(max_evals),
        None if time_limit is None else float(time_limit), int(seed), _initial_ids(space, initial_configs),
        *_known(known), prior_array, progress)
    result = TuneResult(space=space, history_ids=ids, history_values=values, errors=dict(errors), best_id=best,
                        best_value=best_value, elapsed_s=elapsed, stop_reason=reason, strategy=strategy, seed=int(seed),
                        prior=prior is not None)
    if pending is not None:
        if isinstance(pending, KeyboardInterrupt):
            raise TuningInterrupted(result, pending) from pending
        pending.partial_result = result  # e.g. SystemExit, or an error raised by `progress`
        raise pending
    return result
