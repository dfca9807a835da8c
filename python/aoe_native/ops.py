"""Operator tuning on Ascend with the analytical AI Core cost model (OPAT-style).

``tune_op`` searches the tiling space of one operator (TCubeTiling knobs for
cube ops; cores, UB tile and buffering for vector ops) with the native tuner;
``estimate`` / ``estimate_batch`` give the model's time for given tilings.
Shapes use ONNX conventions; op types accept ONNX and Ascend names.
"""

from __future__ import annotations

import math
import numbers
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from . import _core
from .platforms import native_platform, platform
from .tuning import tune

__all__ = ["Estimate", "OpTuneResult", "baseline_tiling", "estimate", "estimate_batch", "supported_ops",
           "tiling_space", "tune_op"]

Shape = Sequence[int]

# Spaces up to this size are searched exhaustively by strategy="auto" when no
# budget is given (the native objective evaluates millions of tilings per second).
EXHAUSTIVE_LIMIT = 400_000
# Budget of the search strategy on larger spaces.
DEFAULT_MAX_EVALS = 200_000
# The tuner's "auto" (surrogate-guided) spends ~0.1-0.3 ms of model time per
# evaluation: worth it for small budgets, not when a cost-model evaluation takes
# microseconds and the budget is large.  Above this many evaluations (or with a
# time limit alone) "auto" here means CHEAP_STRATEGY, which reaches the
# exhaustive optimum at 20k evaluations on the bench shapes.
MODEL_BUDGET_LIMIT = 2_000
CHEAP_STRATEGY = "bandit"

# ONNX TensorProto data types accepted for Cast's "to".
_ONNX_DTYPES = {1: "float32", 10: "float16", 16: "bfloat16", 3: "int8", 6: "int32"}
# Float attributes that do not change the cost (scalars folded into the kernel).
_FLOAT_ATTRS = {"alpha", "beta", "epsilon", "momentum", "min", "max"}
# Attributes accepted for ONNX compatibility that the model derives itself.
_IGNORED_ATTRS = {"noop_with_empty_axes", "stash_type"}
# Attributes each structured op understands (a misspelt "stride" must not be
# ignored silently).  Elementwise ops take any (their attributes - alpha,
# approximate, ... - do not change the cost).
_CUBE_COMMON = {"epilogue", "out_dtype", "bias", "relu"}
_ALLOWED_ATTRS = {
    "MatMul": _CUBE_COMMON | {"transpose_a", "transpose_b"},
    "BatchMatMul": _CUBE_COMMON | {"transpose_a", "transpose_b"},
    "Gemm": _CUBE_COMMON | {"alpha", "beta", "transA", "transB"},
    "Conv": _CUBE_COMMON | {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
    "ReduceSum": {"axes", "keepdims", "noop_with_empty_axes"},
    "ReduceMean": {"axes", "keepdims", "noop_with_empty_axes"},
    "ReduceMax": {"axes", "keepdims", "noop_with_empty_axes"},
    "ReduceMin": {"axes", "keepdims", "noop_with_empty_axes"},
    "Softmax": {"axis"},
    "LayerNormalization": {"axis", "epsilon", "stash_type"},
    "Transpose": {"perm"},
    "MaxPool": {"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "storage_order"},
    "AveragePool": {"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad"},
}


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
    """Outcome of :func:`tune_op`.  ``improvement`` is the fraction by which the
    tuned tiling is faster than the baseline (>= 0: the baseline is evaluated)."""

    tiling: dict[str, int]
    time_us: float
    baseline_tiling: dict[str, int]
    baseline_us: float
    improvement: float
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
    extra: dict[str, Any] = field(default_factory=dict)


def supported_ops() -> list[str]:
    """Op types accepted by the cost model (ONNX names and Ascend aliases)."""
    return list(_core.ascend_supported_ops())


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
            dims.append(int(d))
        out.append(dims)
    return out


def _attrs(attrs: Mapping[str, Any] | None, op_type: str, inputs: list[list[int]]):
    ints: dict[str, list[int]] = {}
    strs: dict[str, list[str]] = {}
    for k, v in dict(attrs or {}).items():
        if not isinstance(k, str):
            raise TypeError(f"{op_type}: attribute names must be strings, got {k!r}")
        if k in _IGNORED_ATTRS:
            continue
        if k == "to" and isinstance(v, numbers.Integral) and not isinstance(v, bool):
            if int(v) not in _ONNX_DTYPES:
                raise ValueError(f"{op_type}: Cast to ONNX type {v} is not supported (supported: {_ONNX_DTYPES})")
            strs[k] = [_ONNX_DTYPES[int(v)]]
        elif k == "auto_pad":
            ints.update(_auto_pad(str(v), attrs, inputs, op_type))
        elif isinstance(v, bool) or (isinstance(v, numbers.Integral)):
            ints[k] = [int(v)]
        elif isinstance(v, numbers.Real):
            if k not in _FLOAT_ATTRS:
                raise TypeError(f"{op_type}: attribute {k!r} must be an integer, got {v!r}")
            if not math.isfinite(float(v)):
                raise ValueError(f"{op_type}: attribute {k!r} must be finite, got {v!r}")
        elif isinstance(v, str):
            strs[k] = [v]
        elif isinstance(v, (Sequence, np.ndarray)):
            items = list(v)
            if all(isinstance(x, str) for x in items) and items:
                strs[k] = items
            elif all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in items):
                ints[k] = [int(x) for x in items]
            else:
                raise TypeError(f"{op_type}: attribute {k!r} must be a list of ints or of strings, got {v!r}")
        else:
            raise TypeError(f"{op_type}: attribute {k!r} has unsupported type {type(v).__name__}")
    return ints, strs


def _auto_pad(mode: str, attrs: Mapping[str, Any], inputs: list[list[int]], op_type: str) -> dict[str, list[int]]:
    if mode == "NOTSET":
        return {}
    if mode == "VALID":
        return {"pads": [0, 0, 0, 0]}
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"{op_type}: auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got {mode!r}")
    if len(inputs) < 2 or len(inputs[0]) != 4 or len(inputs[1]) != 4:
        raise ValueError(f"{op_type}: auto_pad needs X (NCHW) and W (M, C/group, kH, kW)")
    strides = list(attrs.get("strides", [1, 1]))
    dil = list(attrs.get("dilations", [1, 1]))
    pads_begin, pads_end = [], []
    for i in range(2):
        size, k = inputs[0][2 + i], inputs[1][2 + i]
        out = -(-size // strides[i])
        total = max(0, (out - 1) * strides[i] + (k - 1) * dil[i] + 1 - size)
        small, big = total // 2, total - total // 2
        pads_begin.append(small if mode == "SAME_UPPER" else big)
        pads_end.append(big if mode == "SAME_UPPER" else small)
    return {"pads": pads_begin + pads_end}


def _check_attr_names(kind: str, op_type: str, attrs: Mapping[str, Any] | None, shapes: list[list[int]]) -> None:
    allowed = _ALLOWED_ATTRS.get(kind)
    if allowed is None or not attrs:
        return
    unknown = sorted(k for k in attrs if k not in allowed)
    if unknown:
        raise ValueError(f"{op_type}: unknown attribute(s) {', '.join(map(repr, unknown))}; "
                         f"{op_type} accepts {', '.join(sorted(allowed))}")
    if kind == "Conv" and "kernel_shape" in attrs and list(attrs["kernel_shape"]) != shapes[1][2:]:
        raise ValueError(f"Conv: kernel_shape {list(attrs['kernel_shape'])} does not match W {shapes[1]} "
                         f"(kH, kW = {shapes[1][2:]})")


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


def _model(op_type: str, inputs: Any, dtype: str, soc_version: str, attrs: Mapping[str, Any] | None):
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a string, got {op_type!r}")
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a string, got {dtype!r}")
    platform(soc_version)  # clear error for unknown SoCs
    shapes = _shapes(inputs, op_type)
    key = (op_type, _freeze(shapes), dtype, soc_version, _freeze(dict(attrs or {})))
    with _cache_lock:
        m = _models.get(key)
    if m is None:
        ints, strs = _attrs(attrs, op_type, shapes)
        m = _core.ascend_op_model(native_platform(soc_version), op_type, shapes, dtype, ints, strs)
        _check_attr_names(m.kind, op_type, attrs, shapes)
        with _cache_lock:
            if len(_models) >= _CACHE_MAX:
                _models.clear()
                _spaces.clear()
            _models[key] = m
    return m, key


def _space_of(model: Any, key: Any) -> _core.SearchSpace:
    with _cache_lock:
        s = _spaces.get(key)
    if s is None:
        s = _core.SearchSpace(dict(zip(model.param_names, model.param_values)),
                              list(model.restrictions) + list(model.pruning))
        with _cache_lock:
            _spaces[key] = s
    return s


def _tiling_row(model: Any, tiling: Mapping[str, int] | Sequence[int]) -> list[int]:
    names = list(model.param_names)
    if isinstance(tiling, Mapping):
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
        row.append(int(v))
    return row


# ---- public API ------------------------------------------------------------------------

def tiling_space(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: str = "Ascend910B3",
                 attrs: Mapping[str, Any] | None = None) -> _core.SearchSpace:
    """The searched tiling space of the operator: hardware limits plus pruning rules
    as restrictions (every configuration in it runs on the SoC)."""
    model, key = _model(op_type, inputs, dtype, soc_version, attrs)
    return _space_of(model, key)


def baseline_tiling(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: str = "Ascend910B3",
                    attrs: Mapping[str, Any] | None = None) -> dict[str, int]:
    """The tiling a compiler would pick without tuning (Ascend C recommendations)."""
    model, _ = _model(op_type, inputs, dtype, soc_version, attrs)
    return dict(zip(model.param_names, model.baseline))


def estimate(op_type: str, inputs: Sequence[Shape], dtype: str, soc_version: str,
             tiling: Mapping[str, int] | Sequence[int], attrs: Mapping[str, Any] | None = None) -> Estimate:
    """Model time of one tiling.  The tiling must meet the hardware restrictions
    (it need not be in the pruned search space); otherwise ValueError names the
    violated restriction."""
    model, _ = _model(op_type, inputs, dtype, soc_version, attrs)
    row = _tiling_row(model, tiling)
    bad = model.violation(row)
    if bad:
        raise ValueError(f"{model.kind} tiling {dict(zip(model.param_names, row))} violates the restriction: {bad}")
    b = model.estimate(row)
    return Estimate(time_us=b["time_us"], breakdown=b, tiling=dict(zip(model.param_names, row)))


def estimate_batch(op_type: str, inputs: Sequence[Shape], dtype: str, soc_version: str, tilings: Any,
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


def tune_op(op_type: str, inputs: Sequence[Shape], dtype: str = "float16", soc_version: str = "Ascend910B3",
            attrs: Mapping[str, Any] | None = None, strategy: str = "auto", max_evals: int | None = None,
            time_limit: float | None = None, seed: int = 0,
            initial_tilings: Sequence[Mapping[str, int]] | None = None) -> OpTuneResult:
    """Tune the tiling of one operator with the cost model.

    With ``strategy="auto"`` and no budget, spaces of up to ``EXHAUSTIVE_LIMIT``
    tilings are searched exhaustively (the optimum of the space); larger ones
    with ``DEFAULT_MAX_EVALS`` evaluations.  Budgets of up to
    ``MODEL_BUDGET_LIMIT`` evaluations use the tuner's (surrogate-guided)
    auto strategy; larger or time-limited ones ``CHEAP_STRATEGY``, whose cost
    per evaluation is a few microseconds.
    ``initial_tilings`` (tiling dicts, e.g. winners for similar shapes) are
    evaluated first; ones not in this space are skipped.  The baseline tiling is
    always evaluated, so ``improvement >= 0``.
    """
    model, key = _model(op_type, inputs, dtype, soc_version, attrs)
    space = _space_of(model, key)
    names = list(model.param_names)
    baseline = list(model.baseline)
    base = model.estimate(baseline)
    init: list[dict[str, int]] = []
    for t in [dict(zip(names, baseline))] + list(initial_tilings or []):
        if isinstance(t, Mapping) and set(t) == set(names) and space.index(dict(t)) is not None and t not in init:
            init.append(dict(t))
    strat = strategy
    if strategy == "auto":
        if max_evals is None and time_limit is None:
            if len(space) <= EXHAUSTIVE_LIMIT:
                strat = "exhaustive"
            else:
                max_evals = DEFAULT_MAX_EVALS
        if strat == "auto" and (max_evals is None or max_evals > MODEL_BUDGET_LIMIT):
            strat = CHEAP_STRATEGY
    if len(space) == 0:
        raise RuntimeError(f"internal: empty tiling space for {model.kind} {inputs}")
    res = tune(space, model.objective(), strategy=strat, max_evals=max_evals, time_limit=time_limit, seed=seed,
               initial_configs=init)
    best = res.best_config
    best_us = float(res.best_value) if best is not None else math.inf
    if best is None or base["time_us"] <= best_us:
        best, best_us = dict(zip(names, baseline)), base["time_us"]
    b = model.estimate([best[n] for n in names])
    return OpTuneResult(
        tiling=dict(best), time_us=best_us, baseline_tiling=dict(zip(names, baseline)), baseline_us=base["time_us"],
        improvement=max(0.0, 1.0 - best_us / base["time_us"]), roofline_us=model.roofline_us, breakdown=b,
        evaluations=int(res.evaluations), space_size=len(space), trace=np.asarray(res.trace, dtype=float),
        op_type=op_type, inputs=[list(s) for s in _shapes(inputs, op_type)], dtype=dtype, soc_version=soc_version,
        strategy=strat, elapsed_s=float(res.elapsed_s))
