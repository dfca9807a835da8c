"""Operator tuning on Ascend with the analytical AI Core cost model (OPAT-style).

``tune_op`` searches the tiling space of one operator (TCubeTiling knobs for
cube ops; cores, UB tile and buffering for vector ops) with the native tuner;
``estimate`` / ``estimate_batch`` give the model's time for given tilings.
Shapes use ONNX conventions; op types accept ONNX and Ascend names.
"""

from __future__ import annotations

import functools
import math
import numbers
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Union

import numpy as np

from .._core import ascend as _native
from .._core.space import SearchSpace
from ..tuning import check_max_evals, improvement, tune
from .platforms import DEFAULT_SOC, Platform, is_builtin, native_platform


__all__ = ["Estimate", "OpTuneResult", "baseline_tiling", "baseline_kind", "BASELINE_EXACT", "BASELINE_APPROXIMATE",
           "complete_tiling", "estimate", "estimate_batch", "supported_ops",
           "op_table", "op_model", "build_op_model", "clear_caches", "tiling_space", "tune_op", "choose_strategy", "auto_pads", "TUNE_OP_POLICY",
           "nearest_valid_tilings"]

Shape = Sequence[int]
PlatformLike = Union[str, Platform]

# tune_op's default: a policy, not a strategy.  A cost-model evaluation takes
# microseconds, so the best strategy depends on the budget (choose_strategy):
TUNE_OP_POLICY = "by_budget"
# spaces up to this size are searched exhaustively when no budget is given (the
# native objective evaluates millions of tilings per second);
EXHAUSTIVE_LIMIT = 400_000
# larger ones get this many evaluations;
DEFAULT_MAX_EVALS = 200_000
# the tuner's "auto" (surrogate-guided first) spends about a millisecond of model time per
# evaluation: worth it for budgets up to MODEL_BUDGET_LIMIT evaluations, where it finds the best
# tilings, not for larger or time-limited ones, where every strategy reaches the optimum and
# CHEAP_STRATEGY does so in a fraction of the time.  The figures behind this choice:
# `python bench/bench_strategies.py --policy` (docs/search_quality.md).
MODEL_BUDGET_LIMIT = 2_000
CHEAP_STRATEGY = "bandit"

# Integers handed to the core are int64 (it checks tighter ranges itself).
_INT64_MAX = 2**63 - 1
# ONNX TensorProto data types accepted for Cast's "to".
_ONNX_DTYPES = {1: "float32", 10: "float16", 16: "bfloat16", 3: "int8", 6: "int32"}
# Float attributes that do not change the cost (scalars folded into the kernel).
# Real-valued attributes: Exp's base, scale and shift reach the native model (its 910B
# instruction chain, vector.cpp exp_scalar_apis); the others do not change the cost.
_FLOAT_ATTRS = {"alpha", "beta", "epsilon", "momentum", "min", "max", "base", "scale", "shift"}
# Attributes accepted for ONNX compatibility that the model derives itself.
_IGNORED_ATTRS = {"noop_with_empty_axes", "stash_type"}
# What a default ("before") tiling stands for (baseline_kind): CANN MatMulV3's own heuristic
# (MatMul/Gemm on A2/A3 SoCs, shapes its restatement reproduces), or a stand-in for CANN's
# default (Conv: 910B's Conv2D tiling is closed TBE code; other ops and SoCs: this model's rules).
BASELINE_EXACT = "CANN MatMulV3 default"
BASELINE_APPROXIMATE = "approximate CANN default"


@dataclass(frozen=True)
class Estimate:
    """Model time of one tiling: ``time_us`` and a ``breakdown`` dict (per-pipe
    times ``mte2_us``, ``mte1_us``, ``cube_us``, ``fixpipe_us``, ``vector_us``,
    ``mte3_us``, ``head_us``; bytes per level; ``flops``; ``bound``;
    ``roofline_us``; ``cores_used``)."""

    time_us: float
    breakdown: dict[str, Any]
    tiling: dict[str, int]


@dataclass
class OpTuneResult:
    """Outcome of :func:`tune_op`.  ``strategy`` is the strategy that ran (the
    default policy picks one, see :func:`choose_strategy`)."""

    tiling: dict[str, int]
    time_us: float
    baseline_tiling: dict[str, int]
    baseline_us: float
    roofline_us: float
    breakdown: dict[str, Any]
    evaluations: int
    space_size: int
    trace: np.ndarray
    op_type: str
    inputs: list[list[int]]
    dtype: str
    soc_version: str
    strategy: str = ""
    elapsed_s: float = 0.0
    # BASELINE_EXACT or BASELINE_APPROXIMATE: what baseline_tiling stands for (baseline_kind)
    baseline_kind: str = BASELINE_APPROXIMATE
    extra: dict[str, Any] = field(default_factory=dict)
    # this run's evaluations (indices into the tiling space, times in us): `known` of a later run
    history_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    history_values: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def improvement(self) -> float:
        """AOE's performance improvement, baseline / tuned - 1 (>= 0: the baseline is evaluated)."""
        return improvement(self.baseline_us, self.time_us)


def supported_ops() -> list[str]:
    """Op types accepted by the cost model (ONNX names and Ascend aliases)."""
    return list(_native.supported_ops())


@functools.lru_cache(maxsize=None)
def _op_table() -> tuple[dict[str, Any], ...]:
    return tuple(_native.op_table())


def op_table() -> list[dict[str, Any]]:
    """The cost model's operator vocabulary, one dict per operator: ``name``,
    ``aliases``, ``family``, ``operands`` (element-wise ops) and ``attrs`` (the
    attribute names it accepts; None: any)."""
    return [dict(e) for e in _op_table()]


@functools.lru_cache(maxsize=None)
def _allowed_attrs() -> dict[str, frozenset[str] | None]:
    return {e["name"]: None if e["attrs"] is None else frozenset(e["attrs"]) for e in _op_table()}


# ---- input normalisation -----------------------------------------------------------

def _shapes(inputs: Any, op_type: str) -> list[list[int]]:
    if isinstance(inputs, np.ndarray):
        inputs = inputs.tolist()
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
        raise TypeError(f"{op_type}: inputs must be a list of shapes (lists of ints), got {inputs!r}")
    out = []
    for i, s in enumerate(inputs):
        if isinstance(s, (str, bytes)) or not isinstance(s, (Sequence, np.ndarray)):
            raise TypeError(f"{op_type}: input {i} must be a shape (list of ints), got {s!r}")
        dims = []
        for d in s:
            if isinstance(d, bool) or not isinstance(d, numbers.Integral):
                raise TypeError(f"{op_type}: input {i} shape {list(s)!r}: dimension {d!r} is not an integer")
            if d <= 0:
                raise ValueError(f"{op_type}: input {i} shape {list(s)!r}: dimension {int(d)} must be positive")
            if d > _INT64_MAX:
                raise ValueError(f"{op_type}: input {i} shape {list(s)!r}: dimension {int(d)} is beyond the 64-bit range")
            dims.append(int(d))
        out.append(dims)
    return out


def _attr_int(op_type: str, name: str, v: Any) -> int:
    # The core takes int64 and range-checks further; a larger Python int is refused here.
    if not -_INT64_MAX <= int(v) <= _INT64_MAX:
        raise ValueError(f"{op_type}: attribute {name!r} value {int(v)} is beyond the 64-bit range")
    return int(v)


def _attrs(attrs: Mapping[str, Any] | None, op_type: str):
    ints: dict[str, list[int]] = {}
    strs: dict[str, list[str]] = {}
    floats: dict[str, float] = {}
    for k, v in dict(attrs or {}).items():
        if not isinstance(k, str):
            raise TypeError(f"{op_type}: attribute names must be strings, got {k!r}")
        if k in _IGNORED_ATTRS:
            continue
        if k == "to" and isinstance(v, numbers.Integral) and not isinstance(v, bool):
            if int(v) not in _ONNX_DTYPES:
                raise ValueError(f"{op_type}: Cast to ONNX type {v} is not supported (supported: {_ONNX_DTYPES})")
            strs[k] = [_ONNX_DTYPES[int(v)]]
        elif isinstance(v, bool) or (isinstance(v, numbers.Integral)):
            ints[k] = [_attr_int(op_type, k, v)]
        elif isinstance(v, numbers.Real):
            if k not in _FLOAT_ATTRS:
                raise TypeError(f"{op_type}: attribute {k!r} must be an integer, got {v!r}")
            if not math.isfinite(float(v)):
                raise ValueError(f"{op_type}: attribute {k!r} must be finite, got {v!r}")
            floats[k] = float(v)
        elif isinstance(v, str):
            strs[k] = [v]
        elif isinstance(v, (Sequence, np.ndarray)):
            items = list(v)
            if all(isinstance(x, str) for x in items) and items:
                strs[k] = items
            elif all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in items):
                ints[k] = [_attr_int(op_type, k, x) for x in items]
            else:
                raise TypeError(f"{op_type}: attribute {k!r} must be a list of ints or of strings, got {v!r}")
        else:
            raise TypeError(f"{op_type}: attribute {k!r} has unsupported type {type(v).__name__}")
    return ints, strs, floats


def auto_pads(mode: str, x: Sequence[int], w: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int]) -> list[int]:
    """ONNX auto_pad of a 2-D convolution as explicit pads [top, left, bottom, right]
    (SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the beginning); the cost
    model's own rule, which a Conv's ``auto_pad`` attribute applies (ValueError for
    other modes)."""
    return list(_native.conv_auto_pads(str(mode), list(x), list(w), list(strides), list(dilations)))


def _check_attr_names(kind: str, op_type: str, attrs: Mapping[str, Any] | None) -> None:
    # The native model rejects unknown names among those it receives; this also covers the
    # ones it never sees (float attributes, the ignored ONNX ones).
    allowed = _allowed_attrs().get(kind)
    if allowed is None or not attrs:
        return
    unknown = sorted(k for k in attrs if k not in allowed)
    if unknown:
        raise ValueError(f"{op_type}: unknown attribute(s) {', '.join(map(repr, unknown))}; "
                         f"{op_type} accepts {', '.join(sorted(allowed))}")


def _freeze(x: Any) -> Any:
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple, np.ndarray)):
        return tuple(_freeze(v) for v in x)
    return x


_cache_lock = threading.Lock()
_models: dict[Any, Any] = {}
_spaces: dict[Any, Any] = {}
_CACHE_MAX = 512


def _build(op_type: str, shapes: list[list[int]], dtype: str, plat: Platform, attrs: Mapping[str, Any] | None):
    ints, strs, floats = _attrs(attrs, op_type)
    m = _native.op_model(plat, op_type, shapes, dtype, ints, strs, floats)
    _check_attr_names(m.kind, op_type, attrs)
    return m


def build_op_model(op_type: str, inputs: Sequence[Shape], dtype: str, platform: Platform,
                   attrs: Mapping[str, Any] | None = None) -> Any:
    """Like :func:`op_model` but not cached: for callers that try many platforms
    (calibration), which would otherwise flush the cache of everyone else's models."""
    return _build(op_type, _shapes(inputs, op_type), dtype, platform, attrs)


def _model(op_type: str, inputs: Any, dtype: str, soc: PlatformLike, attrs: Mapping[str, Any] | None):
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a string, got {op_type!r}")
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a string, got {dtype!r}")
    plat = native_platform(soc)  # clear error for unknown SoCs
    shapes = _shapes(inputs, op_type)
    # A Platform object, or a user SoC (loading its file again replaces it), is keyed by its
    # numbers: two with one name may differ.
    plat_key = soc if isinstance(soc, str) and is_builtin(soc) else _freeze(plat.to_dict())
    key = (op_type, _freeze(shapes), dtype, plat_key, _freeze(dict(attrs or {})))
    with _cache_lock:
        m = _models.get(key)
    if m is None:
        m = _build(op_type, shapes, dtype, plat, attrs)
        with _cache_lock:
            if len(_models) >= _CACHE_MAX:
                _models.clear()
                _spaces.clear()
            _models[key] = m
    return m, key


def _space_of(model: Any, key: Any) -> SearchSpace:
    with _cache_lock:
        s = _spaces.get(key)
    if s is None:
        s = model.space()
        with _cache_lock:
            _spaces[key] = s
    return s


def _completed(model: Any, tiling: Mapping[str, Any]) -> dict[str, Any]:
    """`tiling` with each knob the model gained after it was stored (``added_defaults``) filled
    with the value that reproduces the model without that knob."""
    return {**{k: v for k, v in model.added_defaults.items() if k not in tiling}, **tiling}


def _tiling_row(model: Any, tiling: Mapping[str, int] | Sequence[int]) -> list[int]:
    names = list(model.param_names)
    if isinstance(tiling, Mapping):
        tiling = _completed(model, tiling)
        unknown = [k for k in tiling if k not in names]
        missing = [k for k in names if k not in tiling]
        if unknown or missing:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if unknown:
                parts.append(f"unknown {', '.join(map(str, unknown))}")
            raise ValueError(f"{model.kind} tiling: {'; '.join(parts)} (parameters: {', '.join(names)})")
        values = [tiling[k] for k in names]
    else:
        values = list(tiling)
        if len(values) != len(names):
            raise ValueError(f"{model.kind} tiling has {len(values)} values, expected {len(names)} ({', '.join(names)})")
    row = []
    for n, v in zip(names, values):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{model.kind} tiling: {n}={v!r} is not an integer")
        if not -_INT64_MAX <= v <= _INT64_MAX:
            raise ValueError(f"{model.kind} tiling: {n}={v} is beyond the 64-bit range")
        row.append(int(v))
    return row


# ---- public API ------------------------------------------------------------------------

def op_model(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: PlatformLike = DEFAULT_SOC,
             attrs: Mapping[str, Any] | None = None) -> Any:
    """The native cost model of one operator (``_core.ascend.OpModel``, cached): its tiling
    parameters, restrictions, baseline, roofline, ``estimate`` and ``estimate_batch``."""
    return _model(op_type, inputs, dtype, soc_version, attrs)[0]


def clear_caches() -> None:
    """Forget the cached operator models and tiling spaces (benchmarks time cold starts)."""
    with _cache_lock:
        _models.clear()
        _spaces.clear()


def tiling_space(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: PlatformLike = DEFAULT_SOC,
                 attrs: Mapping[str, Any] | None = None) -> SearchSpace:
    """The searched tiling space of the operator: hardware limits plus pruning rules
    as restrictions (every configuration in it runs on the SoC)."""
    model, key = _model(op_type, inputs, dtype, soc_version, attrs)
    return _space_of(model, key)


def baseline_tiling(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: PlatformLike = DEFAULT_SOC,
                    attrs: Mapping[str, Any] | None = None) -> dict[str, int]:
    """The tiling CANN would run without tuning: MatMulV3's heuristic for MatMul/Gemm on A2/A3
    SoCs, else a stand-in (:func:`baseline_kind` says which)."""
    model, _ = _model(op_type, inputs, dtype, soc_version, attrs)
    return dict(zip(model.param_names, model.baseline))


def baseline_kind(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: PlatformLike = DEFAULT_SOC,
                  attrs: Mapping[str, Any] | None = None) -> str:
    """What :func:`baseline_tiling` stands for: ``BASELINE_EXACT`` ("CANN MatMulV3 default", CANN
    MatMulV3's heuristic, for MatMul/Gemm on A2/A3 SoCs) or ``BASELINE_APPROXIMATE`` ("approximate
    CANN default": Conv, whose 910B tiling is closed TBE code, BatchMatMul, other ops and SoCs, and
    the MatMul shapes CANN tiles with code that is not public).  Outputs print it next to gains."""
    model, _ = _model(op_type, inputs, dtype, soc_version, attrs)
    return str(model.baseline_kind)


def complete_tiling(op_type: str, inputs: Sequence[Shape], dtype: str, soc_version: PlatformLike,
                    tiling: Mapping[str, int], attrs: Mapping[str, Any] | None = None) -> dict[str, int]:
    """A stored tiling (bank entry, plan) as the current model reads it: a knob added to the
    operator since it was stored gets its default, which gives the time it had without the knob.
    Other parameters are left as they are (:func:`estimate` still names unknown or missing ones)."""
    model, _ = _model(op_type, inputs, dtype, soc_version, attrs)
    return _completed(model, tiling)


def estimate(op_type: str, inputs: Sequence[Shape], dtype: str, soc_version: PlatformLike,
             tiling: Mapping[str, int] | Sequence[int], attrs: Mapping[str, Any] | None = None) -> Estimate:
    """Model time of one tiling.  The tiling must meet the hardware restrictions
    (it need not be in the pruned search space); otherwise ValueError names the
    violated restriction.  A mapping that lacks a knob added since it was stored
    is read with that knob's default (:func:`complete_tiling`)."""
    model, _ = _model(op_type, inputs, dtype, soc_version, attrs)
    row = _tiling_row(model, tiling)
    bad = model.violation(row)
    if bad:
        raise ValueError(f"{model.kind} tiling {dict(zip(model.param_names, row))} violates the restriction: {bad}")
    b = model.estimate(row)
    return Estimate(time_us=b["time_us"], breakdown=b, tiling=dict(zip(model.param_names, row)))


def estimate_batch(op_type: str, inputs: Sequence[Shape], dtype: str, soc_version: PlatformLike, tilings: Any,
                   attrs: Mapping[str, Any] | None = None) -> np.ndarray:
    """Model times (us) of many tilings: an int64 array with one row per tiling,
    columns in ``tiling_space(...).param_names`` order.  Rows that violate a
    hardware restriction give NaN."""
    model, _ = _model(op_type, inputs, dtype, soc_version, attrs)
    arr = np.asarray(tilings)
    if arr.ndim != 2 or arr.shape[1] != len(model.param_names):
        raise ValueError(f"tilings must have shape (n, {len(model.param_names)}) with columns "
                         f"{', '.join(model.param_names)}; got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"tilings must be an integer array, got dtype {arr.dtype}")
    return model.estimate_batch(np.ascontiguousarray(arr, dtype=np.int64))


def choose_strategy(space_size: int, max_evals: int | None, time_limit: float | None) -> tuple[str, int | None]:
    """The ``"by_budget"`` policy of :func:`tune_op` (and so of ``aoe``): the strategy
    and evaluation budget for a cost-model search of a space of ``space_size`` tilings.

    - no budget: ``"exhaustive"`` up to ``EXHAUSTIVE_LIMIT`` tilings, else
      ``CHEAP_STRATEGY`` with ``DEFAULT_MAX_EVALS`` evaluations;
    - up to ``MODEL_BUDGET_LIMIT`` evaluations: ``"auto"`` (the tuner's default,
      surrogate-guided search);
    - larger or time-limited budgets: ``CHEAP_STRATEGY``, whose cost per evaluation
      is a few microseconds.

    """
    check_max_evals(max_evals)
    if max_evals is None and time_limit is None:
        if space_size <= EXHAUSTIVE_LIMIT:
            return "exhaustive", None
        max_evals = DEFAULT_MAX_EVALS
    if max_evals is not None and max_evals <= MODEL_BUDGET_LIMIT:
        return "auto", max_evals
    return CHEAP_STRATEGY, max_evals


def nearest_valid_tilings(space: SearchSpace, tilings: Sequence[Mapping[str, int]]) -> list[dict[str, int]]:
    """Map tilings found for other shapes onto this space: each becomes the valid tiling
    closest to it (L1 distance of log2(1 + value) over the parameters), since a
    neighbour's block sizes often break this shape's limits by a step or two."""
    names = list(space.param_names)
    out: list[dict[str, int]] = []
    logs = configs = None

    def log_distance(rows: np.ndarray, want: np.ndarray) -> np.ndarray:
        return np.abs(np.log2(1.0 + np.maximum(rows, 0).astype(np.float64)) - want).sum(axis=1)

    for t in tilings:
        if set(t) != set(names):
            continue  # a tiling of another parameterisation says nothing here
        if space.index(dict(t)) is not None:  # already valid: as is
            if t not in out:
                out.append(dict(t))
            continue
        want = np.log2(1.0 + np.maximum(np.array([t[n] for n in names], dtype=np.float64), 0))
        # One or two knobs away first (a default tiling the pruning drops, e.g. the cube's
        # unitFlag 0 and kReorderLoad 0): thousands of lookups, where the nearest over the whole
        # space materialises it (0.4 s for a 2048^3 MatMul).
        one = [(p, int(v)) for p, vals in enumerate(space.param_values) for v in vals if v != t[names[p]]]
        found = None
        for changes in (((c,) for c in one), ((a, b) for i, a in enumerate(one) for b in one[i + 1:] if a[0] < b[0])):
            rows = []
            for change in changes:
                row = [int(t[n]) for n in names]
                for p, v in change:
                    row[p] = v
                rows.append(row)
            if not rows:
                continue
            rows_a = np.array(rows, dtype=np.int64)
            ok = rows_a[space.indices(rows_a) >= 0]
            if len(ok):
                found = ok[int(np.argmin(log_distance(ok, want)))]
                break
        if found is not None:
            cfg = {n: int(v) for n, v in zip(names, found)}
            if cfg not in out:
                out.append(cfg)
            continue
        if logs is None:  # materialise the space only when a tiling needs moving
            configs = space.configs()
            if len(configs) == 0:
                break
            logs = np.log2(1.0 + np.maximum(configs, 0).astype(np.float64))
        row = configs[int(np.argmin(np.abs(logs - want).sum(axis=1)))]
        cfg = {n: int(v) for n, v in zip(names, row)}
        if cfg not in out:
            out.append(cfg)
    return out


def tune_op(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: PlatformLike = DEFAULT_SOC,
            attrs: Mapping[str, Any] | None = None, *, strategy: str = TUNE_OP_POLICY, max_evals: int | None = None,
            time_limit: float | None = None, seed: int = 0,
            initial_tilings: Sequence[Mapping[str, int]] | None = None,
            known: tuple[Any, Any] | None = None) -> OpTuneResult:
    """Tune the tiling of one operator with the cost model.

    ``soc_version`` is a SoC name or a :class:`Platform`.  ``strategy`` is a name
    from :func:`aoe_native.strategies` (``"auto"`` means the tuner's default, as
    everywhere) or the default policy ``"by_budget"``, which picks the strategy
    from the space size and the budget (:func:`choose_strategy`).
    ``initial_tilings`` (tiling dicts, e.g. winners for similar shapes) are
    evaluated first, after the default tiling; one the space does not hold is moved to
    its nearest tiling there (:func:`nearest_valid_tilings`), one of another
    parameterisation is skipped.  The baseline tiling is always evaluated, so
    ``improvement >= 0``.  ``known``: ``(history_ids, history_values)``
    of an earlier run of the same operator, continued without evaluating them again.
    """
    model, key = _model(op_type, inputs, dtype, soc_version, attrs)
    space = _space_of(model, key)
    names = list(model.param_names)
    baseline = list(model.baseline)
    base = model.estimate(baseline)
    if initial_tilings is not None and (isinstance(initial_tilings, (str, Mapping)) or
                                        not all(isinstance(t, Mapping) for t in initial_tilings)):
        raise TypeError(f"initial_tilings must be a list of tiling dicts, got {initial_tilings!r}")
    # The default tiling first; each start mapped to the nearest tiling of the searched space (the
    # default itself may be pruned: the cube's has unitFlag 0, which the space never keeps).
    init = nearest_valid_tilings(space, [dict(zip(names, baseline)), *(initial_tilings or [])])
    strat = strategy  # the budget is checked by choose_strategy or by tune, whichever takes it first
    if strategy == TUNE_OP_POLICY:
        strat, max_evals = choose_strategy(len(space), max_evals, time_limit)
    if len(space) == 0:
        raise RuntimeError(f"internal: empty tiling space for {model.kind} {inputs}")
    res = tune(space, model.objective(check_tilings=False), strategy=strat, max_evals=max_evals, time_limit=time_limit, seed=seed,
               initial_configs=init, known=known)
    best = res.best_config
    best_us = float(res.best_value) if best is not None else math.inf
    if best is None or base["time_us"] <= best_us:
        best, best_us = dict(zip(names, baseline)), base["time_us"]
    b = model.estimate([best[n] for n in names])
    return OpTuneResult(
        tiling=dict(best), time_us=best_us, baseline_tiling=dict(zip(names, baseline)), baseline_us=base["time_us"],
        roofline_us=model.roofline_us, breakdown=b,
        evaluations=int(res.evaluations), space_size=len(space), trace=np.asarray(res.trace, dtype=float),
        op_type=op_type, inputs=[list(s) for s in _shapes(inputs, op_type)], dtype=dtype,
        soc_version=native_platform(soc_version).name, strategy=strat, elapsed_s=float(res.elapsed_s),
        baseline_kind=str(model.baseline_kind),
        history_ids=res.history_ids, history_values=res.history_values)
