"""A MatMul task (our op type, ONNX-convention shapes, dtype, attributes) and MatMulV3's bank key.

How MatMulV3 fills its key at query time (hicann/ops-nn @ e5c3fa93
``matmul_v3_base_tiling.cpp:977-1028``; reference doc A.5): m and n rounded up to 16, k to 16
(fp16/bf16) or 8 (fp32), a flag per dimension saying whether it already was; dtypes as
ge::DataType with BF16 keyed as FLOAT16; formats ND unless the storage is FRACTAL_NZ;
transposes and the bias flag; batches 1; the float ratios 0, 1, 1, 0; reserved fields 0.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from .keys import DT_FLOAT, DT_FLOAT16, FORMAT_FRACTAL_NZ, FORMAT_ND, KEY_FIELDS

__all__ = ["MATMUL_OPS", "task_info", "task_of_info", "round_up"]

# Our op types a MatMulV3 can run (the cost model's MatMul, its alias, and ONNX Gemm).
MATMUL_OPS = ("MatMul", "MatMulV2", "Gemm")
# Our dtype names -> the ge::DataType in the key (BF16 is keyed as FLOAT16, A.5).
_KEY_DTYPE = {"float16": DT_FLOAT16, "bfloat16": DT_FLOAT16, "float32": DT_FLOAT}
_KEY_DTYPE_NAME = {DT_FLOAT16: "float16", DT_FLOAT: "float32"}
_FORMATS = {"ND": FORMAT_ND, "FRACTAL_NZ": FORMAT_FRACTAL_NZ}
# Attributes that make the kernel more than a MatMulV3 (a fused epilogue, a split policy).
_FUSING_ATTRS = ("epilogue", "relu", "mix_ratio", "workspace_slots", "nonuniform_split")


def round_up(x: int, q: int) -> int:
    """`x` rounded up to a multiple of `q`."""
    return -(-x // q) * q


def _k_quantum(key_dtype: int) -> int:
    return 8 if key_dtype == DT_FLOAT else 16  # A.5: k rounded to 16 (fp16/bf16) or 8 (fp32)


def _flag(attrs: Mapping[str, Any], name: str) -> int | None:
    v = attrs.get(name, 0)
    if isinstance(v, bool) or v in (0, 1):
        return int(v)
    return None


def _transposes(op_type: str, attrs: Mapping[str, Any]) -> tuple[bool, bool, bool] | str:
    """(trans_a, trans_b, bias attr) of the task, or why MatMulV3 does not serve it."""
    gemm = op_type == "Gemm"
    names = ("transA", "transB") if gemm else ("transpose_a", "transpose_b")
    allowed = set(names) | {"bias", "out_dtype"} | ({"alpha", "beta"} if gemm else set())
    unknown = sorted(k for k in attrs if k not in allowed and k not in _FUSING_ATTRS)
    if unknown:
        return f"attribute(s) {', '.join(unknown)} not part of a MatMulV3 key"
    fused = [k for k in _FUSING_ATTRS if attrs.get(k)]
    if fused:
        return f"a fused kernel ({', '.join(fused)}) is not a plain MatMulV3"
    if gemm and any(isinstance(attrs.get(k, 1.0), bool) or not isinstance(attrs.get(k, 1.0), (int, float))
                    or attrs.get(k, 1.0) != 1.0 for k in ("alpha", "beta")):
        return "Gemm with alpha or beta other than 1 is not a plain MatMulV3"
    flags = [_flag(attrs, n) for n in (*names, "bias")]
    if None in flags:
        return f"transpose/bias attributes must be 0 or 1, got {dict(attrs)!r}"
    return bool(flags[0]), bool(flags[1]), bool(flags[2])


def task_info(op_type: str, inputs: Sequence[Sequence[int]], dtype: str, attrs: Mapping[str, Any] | None = None,
              formats: Sequence[str] | None = None) -> dict[str, Any] | str:
    """The MatMulV3 ``info_dict`` CANN builds for this task, or a string saying why MatMulV3
    does not serve it (another op type, a batch, int8, a fused epilogue, ...).

    inputs: ONNX convention, ``[[M, K], [K, N]]`` (``[K, M]`` / ``[N, K]`` when transposed),
    optionally a bias ``[N]`` (or ``[1, N]``) as a third input."""
    attrs = dict(attrs or {})
    if op_type not in MATMUL_OPS:
        return f"op type {op_type} is not a MatMul"
    if dtype not in _KEY_DTYPE:
        return f"dtype {dtype} is not served by MatMulV3 (float16, bfloat16, float32)"
    if attrs.get("out_dtype") not in (None, dtype):
        return f"out_dtype {attrs['out_dtype']} differs from the input dtype"
    tr = _transposes(op_type, attrs)
    if isinstance(tr, str):
        return tr
    trans_a, trans_b, bias = tr
    shapes = [list(s) for s in inputs]
    if len(shapes) not in (2, 3) or any(len(s) != 2 for s in shapes[:2]):
        return f"MatMulV3's key is for 2-D A and B (batch 1), got inputs {shapes}"
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for s in shapes for d in s):
        return f"inputs must be positive integer shapes, got {shapes}"
    (a0, a1), (b0, b1) = shapes[0], shapes[1]
    M, K = (a1, a0) if trans_a else (a0, a1)
    Kb, N = (b1, b0) if trans_b else (b0, b1)
    if K != Kb:
        return f"inner dimensions differ: A {shapes[0]}, B {shapes[1]}"
    if len(shapes) == 3:
        if math.prod(shapes[2]) != N or len(shapes[2]) > 2 or shapes[2][-1] != N:
            return f"a third input {shapes[2]} is not a per-column bias [N] (only that is MatMulV3's bias)"
        bias = True
    fmts = list(formats) if formats is not None else ["ND"] * len(shapes)
    if any(f not in _FORMATS for f in fmts):
        return f"formats {fmts} are not ND or FRACTAL_NZ"
    kd = _KEY_DTYPE[dtype]
    kq = _k_quantum(kd)
    info: dict[str, Any] = {
        "m": round_up(M, 16), "k": round_up(K, kq), "n": round_up(N, 16),
        **{f"batch_{x}{i}": 1 for x in "ab" for i in range(1, 5)},
        "l1_fused_num": 0.0, "aub_double_num": 1.0, "bub_double_num": 1.0, "fused_double_operand_num": 0.0,
        "a_dtype": kd, "b_dtype": kd, "out_dtype": kd,
        "a_format": _FORMATS[fmts[0]], "b_format": _FORMATS[fmts[1]], "out_format": FORMAT_ND,
        "trans_a_flag": trans_a, "trans_b_flag": trans_b, "bias_flag": bias, "reserved_bool": False,
        "m_align_flag": M % 16 == 0, "k_align_flag": K % kq == 0, "n_align_flag": N % 16 == 0,
        **{f"reserved_params{i}": 0 for i in range(1, 7)},
    }
    return {n: info[n] for n, _ in KEY_FIELDS}


def _standard(info: Mapping[str, Any]) -> str | None:
    """Why `info` is not a key MatMulV3 builds for a 2-D ND task (None: it is)."""
    if any(info[f"batch_{x}{i}"] != 1 for x in "ab" for i in range(1, 5)):
        return "batch fields other than 1 (MatMulV3 sets them to 1)"
    if (info["l1_fused_num"], info["aub_double_num"], info["bub_double_num"],
            info["fused_double_operand_num"]) != (0.0, 1.0, 1.0, 0.0):
        return "float fields other than 0, 1, 1, 0 (MatMulV3's values)"
    if info["reserved_bool"] or any(info[f"reserved_params{i}"] for i in range(1, 7)):
        return "non-zero reserved fields"
    if not info["a_dtype"] == info["b_dtype"] == info["out_dtype"] or info["a_dtype"] not in _KEY_DTYPE_NAME:
        kinds = (info["a_dtype"], info["b_dtype"], info["out_dtype"])
        return f"dtypes {kinds} are not one of FLOAT16 (1, also BF16) or FLOAT (0) for A, B and the output"
    if (info["a_format"], info["b_format"], info["out_format"]) != (FORMAT_ND,) * 3:
        return "a FRACTAL_NZ operand (the cost model takes ND MatMuls)"
    return None


def task_of_info(info: Mapping[str, Any]) -> tuple[list[list[int]], str, dict[str, int]] | str:
    """A MatMul task (inputs, dtype, attrs) whose key is exactly `info` (a checked
    ``info_dict``), or why there is none.  The key keeps only rounded sizes: an unaligned
    dimension is represented by the rounded size minus 1 (every size of its 16-wide (k: 8 or
    16) class has the same key); bf16 tasks share the float16 key and come back as float16."""
    why = _standard(info)
    if why:
        return why
    kq = _k_quantum(info["a_dtype"])
    for name, q in (("m", 16), ("k", kq), ("n", 16)):
        if info[name] <= 0 or info[name] % q:
            return f"{name}={info[name]} is not a positive multiple of {q}, as MatMulV3 rounds it"
    M, K, N = (info[d] if info[f"{d}_align_flag"] else info[d] - 1 for d in ("m", "k", "n"))
    inputs = [[K, M] if info["trans_a_flag"] else [M, K], [N, K] if info["trans_b_flag"] else [K, N]]
    if info["bias_flag"]:
        inputs.append([N])
    attrs = {n: 1 for n, f in (("transpose_a", "trans_a_flag"), ("transpose_b", "trans_b_flag")) if info[f]}
    dtype = _KEY_DTYPE_NAME[info["a_dtype"]]
    again = task_info("MatMul", inputs, dtype, attrs)
    if again != {n: info[n] for n, _ in KEY_FIELDS}:  # pragma: no cover - the rules above are its inverse
        return "no MatMul task has this key"
    return inputs, dtype, attrs
