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


def _optional(shapes: list) -> list[list[int]]:
    """Absent optional inputs (``None``) as the empty shape the operator table takes."""
    return [[] if s is None else s for s in shapes]


def _dtypes_attr(shapes: list, dtypes: list) -> list[str]:
    """``input_dtypes``: one dtype per input, "" for an absent optional one."""
    return ["" if s is None else str(d) for s, d in zip(shapes, dtypes)]




def _unary(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # Gelu's approximate does not choose the kernel: the benchmark's torch gelu runs CANN's Gelu for
    # 'none' and 'tanh' alike (the records' notes: "reference kernels: Gelu x1"), whose TBE compute
    # (gelu.py) is the tanh form either way.
    _need(rid, op, shapes, 1)
    return op, shapes, dtypes[0], {}


def _exp(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    """Exp(base, scale, shift) = exp((shift + scale x) ln(base)), base -1 for e.  The benchmark's
    reference (cann-bench scripts/baseline/refs/level1.py, exp_ref) compiles scale * x + shift, then
    * ln(base) when that is not 0, then exp, through torchair, whose GE buffer fusion runs the chain as
    one kernel: CANN's Exp with these scalars (vector.cpp, exp_scalar_apis).  A base <= 0 or 1 (ln 1 =
    0) takes e and no multiply there: base -1 to CANN's Exp.  Not charged: the reference's multiply by 1
    and add of 0, which its graph keeps (the unfused records' notes list Mul with scale 1, Add with
    shift 0) and CANN's Exp skips."""
    _need(rid, op, shapes, 1)
    out = {k: float(attrs[k]) for k in ("base", "scale", "shift") if k in attrs}
    base = out.get("base", -1.0)
    if base <= 0 or base == 1.0:
        out["base"] = -1.0
    return op, shapes, dtypes[0], out


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


# aclnnAdaptiveAvgPool3d's parameter checks (ops-nn pooling/adaptive_avg_pool3d/op_api/
# aclnn_adaptive_avg_pool3d.cpp: CheckInputOutputDims, CheckDtypeValid, CheckOutShape): a CDHW or
# NCDHW input, float32/float16/bfloat16 (dtypeSupportListOrigin, 910B..910E), three positive sizes.
_POOL3D_DTYPES = ("float32", "float16", "bfloat16")


def _adaptive_avg_pool3d(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 1)
    if len(shapes[0]) not in (4, 5):
        raise ValueError(f"record {rid}: {op} takes a CDHW or NCDHW input (4 or 5 dims), got {shapes[0]}")
    if dtypes[0] not in _POOL3D_DTYPES:
        raise ValueError(f"record {rid}: {op} takes {', '.join(_POOL3D_DTYPES)}, got {dtypes[0]}")
    size = attrs.get("output_size")
    if not (isinstance(size, list) and len(size) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)):
        raise ValueError(f"record {rid}: {op}'s attrs['output_size'] must be three positive sizes, got {size!r}")
    # SelectAdaptiveAvgPool3D: output 1x1x1 is one ReduceMean over D, H, W (keep dims); any other
    # size runs DoAdaptiveAvgPool3D, on 910B three kernels (Transpose NCDHW->NDHWC, the
    # channels-last AdaptiveAvgPool3d kernel, Transpose back), which the model does not have.
    if size != [1, 1, 1]:
        raise UnmodelledOperator(op, f"output_size {size}: CANN runs Transpose + AdaptiveAvgPool3d + Transpose "
                                     "(only the global pool, one ReduceMean, is modelled)", rid)
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


# ---- issue 49: optimizer and MoE routing kernels (optimizer.cpp, moe_routing.cpp) ----------

def _flatten_tensor_lists(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Foreach record holds one LIST of tensors per input and one dtype for all: the model
    takes the lists flattened one after the other, one dtype per tensor, the length of a list
    as attrs["tensor_count"].  Lists of different lengths are an error naming the record."""
    inputs = record.get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(x, list) and x and isinstance(x[0], list) for x in inputs):
        return record  # not lists of shapes: _checked names what is wrong
    rid = record.get("id", "?")
    lengths = [len(x) for x in inputs]
    if len(set(lengths)) != 1:
        raise ValueError(f"record {rid}: {record.get('op')}'s tensor lists have different lengths {lengths}")
    dtypes = record.get("dtype") or []
    if not isinstance(dtypes, list) or len(dtypes) not in (1, len(inputs)):
        raise ValueError(f"record {rid}: 'dtype' must give one dtype, or one per list, got {dtypes!r}")
    flat_dtypes = [dtypes[min(i, len(dtypes) - 1)] for i in range(len(inputs)) for _ in range(lengths[0])]
    attrs = {**(record.get("attrs") or {}), "tensor_count": lengths[0]}
    return {**record, "inputs": [s for x in inputs for s in x], "dtype": flat_dtypes, "attrs": attrs}


def _foreach_addcdiv(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # The scalar (x1 + scalar * x2 / x3) does not change the cost.
    return op, shapes, dtypes[0], {"tensor_count": int(attrs["tensor_count"])}


def _foreach_norm(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # The benchmark's scalar is the norm's p: 1 and 2 run ForeachNorm, inf and other p ran
    # CANN's LpNormV2 kernels (the records say which); norm_type 0 = inf, 3 = another p.
    p = float(attrs.get("scalar", 2.0))
    norm = 0 if math.isinf(p) else (int(p) if p in (1.0, 2.0) else 3)
    return op, shapes, dtypes[0], {"tensor_count": int(attrs["tensor_count"]), "norm_type": norm}


def _apply_adamw(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # var, m, v, grad (max_grad_norm with amsgrad); lr, betas, eps and weight decay are scalars.
    shapes = [s if s is not None else [] for s in shapes]
    out = {"maximize": int(bool(attrs.get("maximize", False))), "amsgrad": int(bool(attrs.get("amsgrad", False)))}
    return op, shapes, dtypes[0], out


def _gcd(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 2)
    if dtypes[0] != dtypes[1]:
        raise UnmodelledOperator(op, f"mixed input dtypes {dtypes}", rid)
    return op, shapes, dtypes[0], {}


def _routing(*int_attrs: str) -> Callable[..., Translation]:
    """A routing kernel: absent optional inputs as [], input_dtypes from the record, the
    named integer attributes (booleans as 0/1); eps and other float scalars are dropped."""
    def translate(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
        out: dict[str, Any] = {k: int(attrs[k]) for k in int_attrs if k in attrs}
        out["input_dtypes"] = _dtypes_attr(shapes, dtypes)
        return op, _optional(shapes), dtypes[0], out
    return translate


def _sinkhorn(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 1)
    return op, shapes, dtypes[0], {"iter_step": int(attrs.get("iter_step", 20))}


_LIST_INPUT_OPS = frozenset({"ForeachAddcdivScalar", "ForeachNorm"})
_ISSUE49_OPTIMIZER_ROUTING: dict[str, Callable[..., Translation]] = {
    "ForeachAddcdivScalar": _foreach_addcdiv, "ForeachNorm": _foreach_norm, "ApplyAdamW": _apply_adamw,
    "Gcd": _gcd, "MhcSinkhorn": _sinkhorn,
    "MoeGatingTopKSoftmax": _routing("k"),
    "MoeInitRouting": _routing("expert_num", "active_num", "expert_capacity", "drop_pad_mode"),
    "MoeReRouting": _routing("expert_token_num_type", "idx_type"),
    "MoeFinalizeRouting": _routing("drop_pad_mode"),
}
# ---- end of issue 49 optimizer/routing block ----------------------------------------------
# ---- the LLM matmuls (qmm49): the benchmark's torch_npu calls -> the operator table's order ----

def _weight_quant_matmul(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # npu_weight_quant_batchmatmul(x, weight, antiquant_scale, antiquant_offset, ..., bias): the
    # benchmark passes x, weight, scale, then the offset and the bias it has (case notes:
    # "有offset无bias" = offset, no bias).  The operator takes x, weight, antiquant_scale,
    # antiquant_offset, quant_scale, quant_offset, bias.
    if not 3 <= len(shapes) <= 5 or any(s is None for s in shapes[:3]):
        raise ValueError(f"record {rid}: {op} takes x, weight, antiquant_scale and optionally the offset and "
                         f"the bias, got {shapes!r}")
    inputs, dts = list(shapes[:4]), list(dtypes[:4])
    if len(shapes) == 5:
        inputs += [None, None, shapes[4]]
        dts += ["", "", dtypes[4]]
    out = {"input_dtypes": _dtypes_attr(inputs, dts)}
    if "antiquant_group_size" in attrs:
        out["antiquant_group_size"] = int(attrs["antiquant_group_size"])
    return "WeightQuantBatchMatmul", _optional(inputs), dtypes[0], out


def _quant_matmul(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # npu_quant_matmul(x1, x2, scale, offset=, pertoken_scale=, bias=, output_dtype=): the record
    # lists x1, x2, scale, offset, pertoken_scale, bias; the operator takes the bias before the
    # per-token scale.
    if not 3 <= len(shapes) <= 6 or any(s is None for s in shapes[:3]):
        raise ValueError(f"record {rid}: {op} takes x1, x2, scale and optionally offset, pertoken_scale, bias, "
                         f"got {shapes!r}")
    padded, pd = shapes + [None] * (6 - len(shapes)), dtypes + [""] * (6 - len(dtypes))
    inputs, dts = padded[:4] + [padded[5], padded[4]], pd[:4] + [pd[5], pd[4]]
    while len(inputs) > 3 and inputs[-1] is None:
        inputs.pop()
        dts.pop()
    out: dict[str, Any] = {"input_dtypes": _dtypes_attr(inputs, dts),
                           "output_dtype": str(attrs.get("output_dtype") or "float16")}
    for k in ("transpose_x1", "transpose_x2"):
        if k in attrs:
            out[k] = int(bool(attrs[k]))
    return "QuantBatchMatmulV3", _optional(inputs), dtypes[0], out


def _grouped_matmul(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # npu_grouped_matmul(x, weight, bias, group_list=cumulative, split_item, transpose_weight).
    if not 2 <= len(shapes) <= 3 or shapes[0] is None or shapes[1] is None:
        raise ValueError(f"record {rid}: {op} takes x, weight and optionally bias, got {shapes!r}")
    out = {"group_list": [int(v) for v in attrs.get("group_list", [])],
           "group_list_type": int(attrs.get("group_list_type", 0)),
           "transpose_weight": int(bool(attrs.get("transpose_weight", False))),
           "input_dtypes": _dtypes_attr(shapes, dtypes)}
    return "GroupedMatmul", _optional(shapes), dtypes[0], out


# ---- LLM vector kernels (norm_quant.cpp; docs/llm_operators.md) ----------------------------------

def _input_dtypes(shapes: list, dtypes: list) -> dict[str, Any]:
    """``input_dtypes`` where the inputs mix dtypes ("" for an absent one), else nothing."""
    present = {d for s, d in zip(shapes, dtypes) if s is not None}
    return {"input_dtypes": _dtypes_attr(shapes, dtypes)} if len(present) > 1 else {}


def _norm_quant(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # RmsNorm, AddRmsNormDynamicQuant, DynamicQuant, DequantSwigluQuant: the record's inputs in
    # aclnn order (epsilon does not change the cost).
    if not shapes or shapes[0] is None:
        raise ValueError(f"record {rid}: {op} has no x")
    out = _input_dtypes(shapes, dtypes)
    if op == "DequantSwigluQuant":
        out["activate_left"] = int(bool(attrs.get("activate_left", False)))
    return op, _optional(shapes), dtypes[0], out


def _group_norm(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # The benchmark's reference runs CANN's GroupNormSilu kernel (its notes: "GroupNormSilu x1"), which
    # aclnnGroupNorm calls with activate_silu false (hicann/ops-nn norm/group_norm/op_host/op_api/
    # aclnn_group_norm.cpp).
    _need(rid, op, shapes, 3)
    groups = attrs.get("num_groups")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise ValueError(f"record {rid}: GroupNorm needs an integer num_groups, got {groups!r}")
    return "GroupNormSilu", shapes, dtypes[0], {"num_groups": int(groups), "activate_silu": 0}


def _swiglu(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    _need(rid, op, shapes, 1)
    return "SwiGlu", shapes, dtypes[0], {"dim": int(attrs.get("dim", -1))}


def _rope(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    # The reference concatenates the half-size cos/sin [S, D/2] to [S, D] and broadcasts them to
    # [B, S, 1, D] (BSND, layout 0) or [B, 1, S, D] (BNSD, layout 1) before the kernel: the
    # kernel's inputs are those (the record's time includes those helper kernels).
    _need(rid, op, shapes, 4)
    q, k, cos = shapes[0], shapes[1], shapes[2]
    code = attrs.get("layout", 0)
    layout = {0: "BSND", 1: "BNSD"}.get(code) if isinstance(code, int) else None
    mode = {"half": "half", "interleaved": "interleave", "interleave": "interleave"}.get(str(attrs.get("rotaryMode", "half")))
    if layout is None or mode is None:
        raise UnmodelledOperator(op, f"layout {attrs.get('layout')!r}, rotaryMode {attrs.get('rotaryMode')!r}", rid)
    if len(q) != 4 or len(cos) != 2:
        raise ValueError(f"record {rid}: ApplyRotaryPosEmb expects 4-D query/key and [S, D/2] cos/sin, got {shapes}")
    b, s, d = q[0], cos[0], 2 * cos[1]
    trig = [b, s, 1, d] if layout == "BSND" else [b, 1, s, d]
    return "ApplyRotaryPosEmb", [q, k, trig, trig], dtypes[0], {"input_layout": layout, "rotary_mode": mode}


_TRANSLATIONS: dict[str, Callable[..., Translation]] = {
    "RmsNorm": _norm_quant, "AddRmsNormDynamicQuant": _norm_quant, "DynamicQuant": _norm_quant,
    "DequantSwigluQuant": _norm_quant, "GroupNorm": _group_norm, "SwiGlu": _swiglu, "ApplyRotaryPosEmb": _rope,
    "Sigmoid": _unary, "Gelu": _unary, "Mish": _unary, "Exp": _exp,
    "Maximum": _binary, "Minimum": _binary,
    "Softmax": _softmax, "Transpose": _transpose, "StridedSlice": _strided_slice,
    "AdaptiveAvgPool3D": _adaptive_avg_pool3d, "Gather": _gather_elements, "MatMul": _matmul,
    "WeightQuantBatchMatmul": _weight_quant_matmul, "QuantBatchMatmulV3": _quant_matmul,
    "GroupedMatmul": _grouped_matmul,
    **_ISSUE49_OPTIMIZER_ROUTING,
}


# ---- attention (issue 49): GQA, MHA and MLA are cann-bench task names whose
# reference call is one FusedInferAttentionScore kernel (the records' notes say so). -------------

def _attention_layout(rid: str, op: str, attrs: dict) -> str:
    layout = str(attrs.get("inputLayout", attrs.get("input_layout", "BSND")))
    if layout not in ("BSND", "BNSD", "BSH", "TND"):
        raise UnmodelledOperator(op, f"input layout {layout!r}", rid)
    return layout


def _attention_attrs(rid: str, op: str, attrs: dict) -> dict[str, Any]:
    """The layout and is_causal -> causal, which every attention record has."""
    return {"input_layout": _attention_layout(rid, op, attrs), "causal": int(bool(attrs.get("is_causal", False)))}


def _attention(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    """GQA/MHA: query, key, value."""
    _need(rid, op, shapes, 3)
    return "FusedInferAttentionScore", shapes, dtypes[0], _attention_attrs(rid, op, attrs)


def _mla(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    """MLA: q_nope, q_rope, k_nope, k_rope, value.  The kernel takes the rope parts beside the
    nope parts (query_rope/key_rope); its cost is that of one head dim of nope + rope for Q K^T,
    so the model takes query and key with the two concatenated along the head dim."""
    _need(rid, op, shapes, 5)
    out = _attention_attrs(rid, op, attrs)
    q_nope, q_rope, k_nope, k_rope, value = shapes
    if q_nope[:-1] != q_rope[:-1] or k_nope[:-1] != k_rope[:-1]:
        raise ValueError(f"record {rid}: MLA rope inputs {q_rope}, {k_rope} do not match the nope ones "
                         f"{q_nope}, {k_nope} except in the head dim")
    query = q_nope[:-1] + [q_nope[-1] + q_rope[-1]]
    key = k_nope[:-1] + [k_nope[-1] + k_rope[-1]]
    if "numKVHeads" in attrs:
        out["num_key_value_heads"] = int(attrs["numKVHeads"])
    return "FusedInferAttentionScore", [query, key, value], dtypes[0], out


def _sparse_flash_attention(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    """query, key, value, sparse_indices (top-k key positions per query token and KV head)."""
    _need(rid, op, shapes, 4)
    return "SparseFlashAttention", shapes, dtypes[0], _attention_attrs(rid, op, attrs)


def _mla_prolog(rid: str, op: str, shapes: list, dtypes: list, attrs: dict) -> Translation:
    """token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, the two RmsNorm gammas,
    rope_sin, rope_cos (the record's inputs, the KV caches absent)."""
    present = [s for s in shapes if s is not None]
    if len(present) < 7:
        raise ValueError(f"record {rid}: MlaProlog takes at least 7 inputs, got {shapes!r}")
    out: dict[str, Any] = {}
    if "n_heads" in attrs:
        out["num_heads"] = int(attrs["n_heads"])
    return "MlaProlog", present, dtypes[0], out


_TRANSLATIONS.update({
    "GQA": _attention, "MHA": _attention, "MLA": _mla,
    "SparseFlashAttention": _sparse_flash_attention, "MlaProlog": _mla_prolog,
})


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
    if record.get("op") in _LIST_INPUT_OPS:
        record = _flatten_tensor_lists(record)
    rid, op, shapes, dtypes, attrs = _checked(record)
    out = _TRANSLATIONS[op](rid, op, shapes, dtypes, attrs)
    if op == "Gcd":
        out = _gcd_steps_of_case(out, str(record.get("notes", "")))
    return out


# Gcd's step count is data dependent (Stein's loop runs until every lane's b is 0): where a
# record's case note states the data as equal operands ("相同值", gcd = n) the loop ends after one
# subtraction; all zeros ("零值", gcd = 0) skip it (the model's minimum, one step, is charged).
# Any other data keeps the model's assumed count.
_GCD_ONE_STEP_CASES = ("相同值", "零值")


def _gcd_steps_of_case(t: Translation, notes: str) -> Translation:
    op, shapes, dtype, attrs = t
    if any(c in notes for c in _GCD_ONE_STEP_CASES):
        attrs = {**attrs, "iterations": 1}
    return op, shapes, dtype, attrs


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
