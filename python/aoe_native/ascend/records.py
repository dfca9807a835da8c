"""Records of CANN's operator benchmark as the cost model reads them.

A record (schema of ``shared/reference/measured_ops/cann_bench_calibration.json``) names a
CANN operator, its input shapes and dtypes, the attributes of the benchmark's reference
call (``torch``-style: ``dim``, ``perm``, ``begin``/``end``/``strides``, ...) and the SoC.
:func:`predict_record` translates it into an operator of the model (the CANN names are
aliases of the C++ operator table, ``supported_ops()``) and estimates it at the default
tiling.  An operator with no faithful translation raises :class:`UnmodelledOperator`
naming it: nothing is substituted.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any, Callable, Mapping

from . import ops
from .platforms import soc_versions

__all__ = ["UnmodelledOperator", "predict_record", "translate_record", "translated_ops", "record_soc", "case_id",
           "fit_half",
           "load_records", "RECORD_SOCS"]


class UnmodelledOperator(ValueError):
    """A record's operator (or this use of it) has no model; ``op`` names it."""

    def __init__(self, op: str, why: str = "", record: str = ""):
        self.op = op
        where = f"{record}: " if record else ""
        super().__init__(f"{where}operator {op!r} is not modelled" + (f" ({why})" if why else ""))


# The benchmark's SoC names -> built-in soc_version.  "Ascend950PR" is the part the benchmark
# ran without naming its SKU: socs.json's entry of that name (its core count chosen by the fit).
RECORD_SOCS = {"Ascend910B2": "Ascend910B2", "Ascend950PR": "Ascend950PR"}

_KEYS = ("id", "op", "inputs", "dtype", "soc")


def record_soc(record: Mapping[str, Any], soc_map: Mapping[str, str] | None = None) -> str:
    """The soc_version a record ran on (``soc_map`` overrides :data:`RECORD_SOCS`)."""
    soc = record.get("soc")
    table = {**RECORD_SOCS, **(soc_map or {})}
    if soc not in table:
        raise ValueError(f"record {record.get('id', '?')}: unknown soc {soc!r} (known: {', '.join(sorted(table))})")
    name = table[soc]
    if name not in soc_versions():
        raise ValueError(f"record {record.get('id', '?')}: soc {soc!r} maps to {name!r}, which is not a built-in "
                         f"SoC (soc_versions())")
    return name


def case_id(record: Mapping[str, Any]) -> int:
    """The benchmark's case id (``source_where``: "... case N; ..."), which splits the file."""
    m = re.search(r"\bcase (\d+)\b", str(record.get("source_where", "")))
    if not m:
        raise ValueError(f"record {record.get('id', '?')}: no case id in source_where "
                         f"{record.get('source_where')!r}")
    return int(m.group(1))


def fit_half(record: Mapping[str, Any]) -> bool:
    """True for the half calibrate fits on: case id mod 4 in {0, 1}.  The file holds the even
    case ids, so this is case id % 4 == 0; case id % 4 == 2 is the held-out half."""
    return case_id(record) % 4 in (0, 1)


def load_records(path: str) -> list[dict[str, Any]]:
    """The records of a calibration file (a JSON list); ValueError naming the file otherwise."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    return data


# ---- checking a record -------------------------------------------------------------------

def _checked(record: Mapping[str, Any]) -> tuple[str, str, list[list[int]], list[str], dict[str, Any]]:
    if not isinstance(record, Mapping):
        raise ValueError(f"a record must be a mapping, got {type(record).__name__}")
    rid = str(record.get("id", "?"))
    missing = [k for k in _KEYS if k not in record]
    if missing:
        raise ValueError(f"record {rid}: missing key(s) {', '.join(missing)}")
    inputs, dtypes = record["inputs"], record["dtype"]
    if not isinstance(inputs, list) or not isinstance(dtypes, list) or len(inputs) != len(dtypes):
        raise ValueError(f"record {rid}: 'inputs' and 'dtype' must be lists of the same length, got "
                         f"{inputs!r} and {dtypes!r}")
    shapes = []
    for i, s in enumerate(inputs):
        if s is None:
            shapes.append(None)  # an absent optional input
            continue
        if not isinstance(s, list) or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d > 0
                                               for d in s):
            raise ValueError(f"record {rid}: input {i} shape {s!r} is not a list of positive integers")
        shapes.append([int(d) for d in s])
    attrs = record.get("attrs") or {}
    if not isinstance(attrs, Mapping):
        raise ValueError(f"record {rid}: 'attrs' must be a mapping, got {type(attrs).__name__}")
    return rid, str(record["op"]), shapes, [str(d) for d in dtypes], dict(attrs)


def _need(rid: str, op: str, shapes: list, n: int) -> None:
    if len(shapes) != n or any(s is None for s in shapes):
        raise ValueError(f"record {rid}: {op} takes {n} input shape(s), got {shapes!r}")


# ---- translations: CANN operator (benchmark call) -> model operator ---------------------------
# Each returns (op_type, inputs, dtype, attrs) for aoe_native.estimate.

Translation = tuple[str, list[list[int]], str, dict[str, Any]]


def _unary(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # Exp's base/scale/shift and Gelu's approximate are scalars of the same kernel.
    _need(rid, op, shapes, 1)
    return op, shapes, dtypes[0], {}


def _binary(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 2)
    if dtypes[0] != dtypes[1]:
        raise UnmodelledOperator(op, f"mixed input dtypes {dtypes}", rid)
    return op, shapes, dtypes[0], {}


def _softmax(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 1)
    return "SoftmaxV2", shapes, dtypes[0], {"axis": int(attrs.get("dim", -1))}


def _transpose(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 1)
    return "Transpose", shapes, dtypes[0], {"perm": list(attrs.get("perm", []))}


def _slice_extent(rid: str, dim: int, b: int, e: int, s: int) -> int:
    # The benchmark writes end = -1 for "to the end" (its full-slice cases).
    if s <= 0:
        raise UnmodelledOperator("StridedSlice", f"stride {s} (only positive strides are modelled)", rid)
    b = b + dim if b < 0 else b
    e = dim if e == -1 else (e + dim if e < 0 else e)
    b, e = min(max(b, 0), dim), min(max(e, 0), dim)
    if e <= b:
        raise ValueError(f"record {rid}: StridedSlice selects nothing along a dimension of {dim} ({b}:{e}:{s})")
    return (e - b + s - 1) // s


def _strided_slice(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 1)
    x = shapes[0]
    begin, end = list(attrs.get("begin", [])), list(attrs.get("end", []))
    strides = list(attrs.get("strides", [1] * len(begin)))
    if not (len(begin) == len(end) == len(strides)):
        raise ValueError(f"record {rid}: StridedSlice begin/end/strides differ in length")
    bmask, emask = int(attrs.get("begin_mask", 0)), int(attrs.get("end_mask", 0))
    ellipsis, new_axis = int(attrs.get("ellipsis_mask", 0)), int(attrs.get("new_axis_mask", 0))
    if attrs.get("shrink_axis_mask", 0):
        raise UnmodelledOperator(op, "shrink_axis_mask", rid)
    # Specs after dropping new axes (they add a dimension of 1, no data); an ellipsis
    # takes the dimensions the other specs leave.
    specs = [(i, begin[i], end[i], strides[i]) for i in range(len(begin)) if not new_axis >> i & 1]
    n_ell = sum(ellipsis >> i & 1 for i, *_ in specs)
    if n_ell > 1 or len(specs) - n_ell > len(x):
        raise ValueError(f"record {rid}: StridedSlice specs {attrs} do not fit the input {x}")
    out, steps, d = [], [], 0
    for i, b, e, s in specs:
        if ellipsis >> i & 1:
            span = len(x) - (len(specs) - 1)
            out += x[d:d + span]
            steps += [1] * span
            d += span
            continue
        b = 0 if bmask >> i & 1 else int(b)
        e = -1 if emask >> i & 1 else int(e)
        out.append(_slice_extent(rid, x[d], b, e, int(s)))
        steps.append(int(s))
        d += 1
    out += x[d:]
    steps += [1] * (len(x) - d)
    # The sliced axis nearest the front sets the contiguous run (movement model).
    axis = next((j for j in range(len(x)) if out[j] != x[j] or steps[j] != 1), len(x) - 1)
    return "StridedSlice", [x], dtypes[0], {"output_shape": out, "axis": axis, "steps": steps}


def _adaptive_avg_pool3d(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 1)
    size = list(attrs.get("output_size", []))
    if size != [1, 1, 1]:
        raise UnmodelledOperator(op, f"output_size {size} (only the global pool, 1x1x1, is a reduction)", rid)
    return "ReduceMean", shapes, dtypes[0], {"axes": [-3, -2, -1]}


def _gather_elements(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # torch.gather(input, dim, index): output the index's shape, CANN's GatherElementsV2.
    _need(rid, op, shapes, 2)
    return "GatherElementsV2", shapes, dtypes[0], {"output_shape": shapes[1], "axis": int(attrs.get("dim", 0))}


def _matmul(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    shapes = [s for s in shapes if s is not None]
    if len(shapes) != 2:
        raise UnmodelledOperator(op, "bias or more than two inputs", rid)
    if dtypes[0] != dtypes[1]:
        raise UnmodelledOperator(op, f"mixed input dtypes {dtypes}", rid)
    out = {k: int(bool(attrs[k])) for k in ("transpose_a", "transpose_b") if k in attrs}
    return "MatMulV3", shapes, dtypes[0], out


_TRANSLATIONS: dict[str, Callable[..., Translation]] = {
    "Sigmoid": _unary, "Gelu": _unary, "Mish": _unary, "Exp": _unary,
    "Maximum": _binary, "Minimum": _binary,
    "Softmax": _softmax, "Transpose": _transpose, "StridedSlice": _strided_slice,
    "AdaptiveAvgPool3D": _adaptive_avg_pool3d, "Gather": _gather_elements, "MatMul": _matmul,
}


def translated_ops() -> list[str]:
    """The CANN operator names :func:`translate_record` has a translation for (some uses of
    them may still be unmodelled: :class:`UnmodelledOperator`)."""
    return sorted(_TRANSLATIONS)


def translate_record(record: Mapping[str, Any]) -> Translation:
    """(op_type, inputs, dtype, attrs) of the model operator that runs ``record``'s CANN
    operator; :class:`UnmodelledOperator` for an operator without one, ValueError naming
    the record for malformed input."""
    if isinstance(record, Mapping) and record.get("op") not in _TRANSLATIONS and "op" in record:
        raise UnmodelledOperator(str(record["op"]), "no model of it in the operator table", str(record.get("id", "?")))
    rid, op, shapes, dtypes, attrs = _checked(record)
    return _TRANSLATIONS[op](rid, op, shapes, dtypes, attrs)


def predict_record(record: Mapping[str, Any], soc_map: Mapping[str, str] | None = None) -> ops.Estimate:
    """The model's estimate of a calibration record (CANN operator name, inputs, dtypes,
    the benchmark call's attrs, ``soc``) at the default tiling, on the record's SoC
    (``soc_map`` overrides :data:`RECORD_SOCS`, e.g. to score another 950PR entry).

    Raises :class:`UnmodelledOperator` naming an operator the model does not have, and
    ValueError naming the record id for a malformed record or one the model refuses
    (e.g. a dtype the SoC's vector unit lacks)."""
    op_type, inputs, dtype, attrs = translate_record(record)
    soc = record_soc(record, soc_map)
    rid = record.get("id", "?")
    try:
        tiling = ops.baseline_tiling(op_type, inputs, dtype, soc, attrs)
        est = ops.estimate(op_type, inputs, dtype, soc, tiling, attrs)
    except (ValueError, TypeError) as e:
        raise ValueError(f"record {rid} ({record['op']}): {e}") from None
    if not (math.isfinite(est.time_us) and est.time_us > 0):
        raise ValueError(f"record {rid}: the model gave {est.time_us} us")
    return est
