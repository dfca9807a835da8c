"""Replay of recorded search spaces: Kernel Tuner cache files in, and out.

A cache file (format: Kernel Tuner's ``cache=`` JSON, described in
``shared/datasets/README.md``) holds one record per benchmarked configuration.
:func:`load` turns a complete cache into a search space of exactly the
recorded configurations and a native objective that looks their times up, so a
strategy can be scored in simulation without the hardware.  :func:`save` writes
a tuning run in the same format, so our results open in Kernel Tuner's tools.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ._core.space import SearchSpace, TableObjective
from .fileio import atomic_write_text, read_json


class Run(Protocol):
    """What :func:`save` reads of a tuning run (a :class:`aoe_native.TuneResult`)."""
    space: SearchSpace
    history_ids: np.ndarray
    history_values: np.ndarray

_REQUIRED = ("tune_params_keys", "cache")
# Limits on a cache file, checked before parsing: Kernel Tuner's caches of millions of
# records stay well under 2 GiB and nest 4 levels.
_MAX_FILE_BYTES = 2**31
_MAX_DEPTH = 32


@dataclass
class Replay:
    """A recorded search space.

    ``space`` holds exactly the recorded configurations, ``objective`` returns
    the recorded value of each (failed records fail), ``optimum`` is the best
    recorded value and ``values`` the value per configuration index (NaN for
    failed ones).

    Parameters whose recorded values are not all integers (floats, strings,
    booleans) are searched by code: ``labels[name][code]`` is the recorded
    value, codes follow the sorted order of the values, and :meth:`decode`
    turns a configuration back into recorded values.
    """

    path: str
    space: SearchSpace
    objective: TableObjective
    values: np.ndarray
    objective_name: str
    metadata: dict[str, Any]
    labels: dict[str, list[Any]] = field(default_factory=dict)

    def decode(self, config: dict[str, int]) -> dict[str, Any]:
        """A configuration of ``space`` with coded parameters back to their recorded values."""
        return {k: self.labels[k][v] if k in self.labels else v for k, v in config.items()}

    @property
    def optimum(self) -> float:
        return float(np.nanmin(self.values))

    @property
    def optimum_config(self) -> dict[str, int]:
        return self.space.config(int(np.nanargmin(self.values)))

    @property
    def failed(self) -> int:
        return int(np.isnan(self.values).sum())

    @property
    def median(self) -> float:
        """Median over all records, failed ones counted as the worst value."""
        worst = np.nanmax(self.values)
        return float(np.median(np.where(np.isnan(self.values), worst, self.values)))


def _is_int(value: Any) -> bool:
    # Within int64 (the space's values); larger integers are coded like any other value.
    return ((isinstance(value, int) and not isinstance(value, bool)) or
            (isinstance(value, float) and value.is_integer())) and -2**63 <= value < 2**63


def _order(value: Any) -> tuple:
    # Numbers (booleans as 0/1) by value, before anything else by its text.
    if isinstance(value, (int, float)):
        return (0, float(value), "")
    return (1, 0.0, json.dumps(value, sort_keys=True))


def _codes(column: list[Any]) -> tuple[list[int], list[Any] | None]:
    """Integer values as they are; any other column coded by the sorted order of its values."""
    if all(_is_int(v) for v in column):
        return [int(v) for v in column], None
    # Distinct by JSON text, so 2 and 2.0, or 1 and true, stay two recorded values.
    text = [json.dumps(v, sort_keys=True) for v in column]
    value_of = dict(zip(text, column))
    order = sorted(value_of, key=lambda t: _order(value_of[t]))
    code = {t: i for i, t in enumerate(order)}
    return [code[t] for t in text], [value_of[t] for t in order]


def load(path: str | os.PathLike[str], objective: str | None = None,
         higher_is_better: bool | None = None) -> Replay:
    """Read a Kernel Tuner cache file.

    Args:
        path: the ``.json`` cache file.
        objective: the record field to optimise; defaults to the file's
            ``objective`` entry, else ``"time"``.
        higher_is_better: maximise the field (a rate such as ``"GFLOP/s"``): the
            replay's values are then its negatives, so that smaller stays better.
            Default False, except that a field named like a rate (``.../s``) must
            say which way it goes.

    A record whose objective is not a finite number (e.g. ``"RuntimeFailedConfig"``)
    is a failed configuration.
    """
    path = os.fspath(path)
    try:
        data = read_json(path, _MAX_FILE_BYTES, _MAX_DEPTH)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    except ValueError as e:  # size or nesting limit, not UTF-8
        raise ValueError(f"{path}: {e}") from None
    if not isinstance(data, dict) or any(k not in data for k in _REQUIRED):
        raise ValueError(f"{path}: not a Kernel Tuner cache file (needs keys {', '.join(_REQUIRED)})")
    names = data["tune_params_keys"]
    if (not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names)
            or len(set(names)) != len(names)):
        raise ValueError(f"{path}: tune_params_keys must be a list of distinct parameter names, got {names!r}")
    cache = data["cache"]
    if not isinstance(cache, dict) or not cache:
        raise ValueError(f"{path}: the cache holds no records")
    objective_field = objective or data.get("objective") or "time"
    if not isinstance(objective_field, str):
        raise ValueError(f"{path}: the objective must be a record field name, got {objective_field!r}")
    if higher_is_better is None:
        if objective_field.endswith("/s"):
            raise ValueError(f"{path}: objective {objective_field!r} looks like a rate; say whether to maximise it "
                             "(higher_is_better=True) or minimise it (False)")
        higher_is_better = False
    sign = -1.0 if higher_is_better else 1.0
    for key, rec in cache.items():
        if not isinstance(rec, dict):
            raise ValueError(f"{path}: record {key!r} is not an object")
        for n in names:
            if n not in rec:
                raise ValueError(f"{path}: record {key!r} has no value for parameter {n!r}")
    if not any(objective_field in rec for rec in cache.values()):
        raise ValueError(f"{path}: no record has the objective field {objective_field!r}")
    rows = np.empty((len(cache), len(names)), dtype=np.int64)
    labels: dict[str, list[Any]] = {}
    records = list(cache.values())
    for j, n in enumerate(names):
        codes, lab = _codes([rec[n] for rec in records])
        rows[:, j] = codes
        if lab is not None:
            labels[n] = lab
    raw: list[float] = []
    reasons: list[str] = []
    for rec in records:
        v = rec.get(objective_field)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            raw.append(sign * float(v))
            reasons.append("")
        else:
            raw.append(math.nan)
            reasons.append(str(v) if v is not None else f"record has no {objective_field!r}")
    try:
        space = SearchSpace.from_configs(names, rows)
    except ValueError as e:  # e.g. two records of one configuration
        raise ValueError(f"{path}: {e}") from None
    ids = space.indices(rows)
    values = np.full(len(space), math.nan)
    ordered_reasons = [""] * len(space)
    values[ids] = raw
    for i, reason in zip(ids, reasons):
        ordered_reasons[i] = reason
    meta = {k: v for k, v in data.items() if k != "cache"}
    return Replay(path=path, space=space, objective=TableObjective(values, ordered_reasons), values=values,
                  objective_name=objective_field, metadata=meta, labels=labels)


def save(result: Run, path: str | os.PathLike[str], kernel_name: str = "aoe_native",
         device_name: str = "unknown", problem_size: Any = None, objective: str = "time",
         labels: dict[str, list[Any]] | None = None) -> None:
    """Write a tuning run as a Kernel Tuner cache file (one record per
    evaluated configuration; failed ones as ``"RuntimeFailedConfig"``).
    ``labels`` (a replay's :attr:`Replay.labels`) writes coded parameters as
    their recorded values."""
    space = result.space
    names = list(space.param_names)
    labels = labels or {}

    def recorded(name: str, v: int) -> Any:
        return labels[name][v] if name in labels else int(v)

    cache: dict[str, Any] = {}
    stamp = time.strftime("%Y-%m-%d %H:%M:%S+00:00", time.gmtime())
    for cfg_id, value in zip(result.history_ids, result.history_values):
        values = [recorded(n, v) for n, v in space.config(int(cfg_id)).items()]
        record: dict[str, Any] = dict(zip(names, values))
        if math.isfinite(value):
            record[objective] = float(value)
            record["times"] = [float(value)]
        else:
            record[objective] = "RuntimeFailedConfig"
        record.update({"compile_time": 0.0, "verification_time": 0, "benchmark_time": 0.0,
                       "framework_time": 0.0, "strategy_time": 0, "timestamp": stamp})
        cache[",".join(str(v) for v in values)] = record
    data = {
        "device_name": device_name,
        "kernel_name": kernel_name,
        "problem_size": problem_size if problem_size is not None else [],
        "tune_params_keys": names,
        "tune_params": {n: [recorded(n, v) for v in vals] for n, vals in zip(names, space.param_values)},
        "objective": objective,
        "cache": cache,
    }
    atomic_write_text(os.fspath(path), json.dumps(data, indent=1))
