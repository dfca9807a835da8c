"""Fuzz targets: hostile input must end in a documented exception, never in a crash.

Each target takes the bytes of one input and either returns or raises one of its
``ALLOWED`` exception types (the errors the API documents for bad input).  Anything
else is a finding: a crash or hang of the process, another exception type, or a
broken invariant (AssertionError).  ``run.py`` drives the targets with atheris;
the seed corpus of each is ``corpus/<target>/``.

Inputs are text where that lets a seed be read and written by hand (restrictions,
operator descriptions as JSON); bytes that do not parse as such are read with
atheris' FuzzedDataProvider, so every mutation means something.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import tempfile
from typing import Any, Callable

import numpy as np

import aoe_native as aoe
from aoe_native import BankError, SearchSpace
from aoe_native._core.space import eval_restriction
from aoe_native.ascend.ops import op_model
from aoe_native.bank import store as bank_store
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import partition

# ---- restrictions and search spaces ------------------------------------------------------
# ValueError: syntax errors, unknown names, limits (length, nesting, value lists).
SPACE_ALLOWED = (ValueError,)


def _space_input(data: bytes) -> tuple[dict[str, list[int]], list[str]]:
    """First line: parameters as ``name=v1,v2;name=...``; every further line a restriction."""
    text = data.decode("utf-8", errors="replace")
    head, _, rest = text.partition("\n")
    params: dict[str, list[int]] = {}
    for part in head.split(";")[:6]:
        name, _, values = part.partition("=")
        vals = []
        for v in values.split(",")[:12]:
            try:
                vals.append(int(v))
            except ValueError:
                continue
        params[name.strip()] = vals
    return params, rest.split("\n")[:8] if rest else []


def fuzz_space(data: bytes) -> None:
    params, restrictions = _space_input(data)
    space = SearchSpace(params, restrictions)
    assert len(space) <= space.cartesian_size
    for i in range(min(len(space), 4)):
        cfg = space[i]
        assert space.violated(cfg) is None, (cfg, restrictions)
        assert space.index(cfg) == i
    # The restrictions' bytecode agrees with their tree interpreter on the first configurations.
    names = space.param_names
    rows = np.array(list(itertools.islice(itertools.product(*space.param_values), 32)), dtype=np.int64)
    for r in space.restrictions:
        got, want = eval_restriction(r, names, rows.reshape(-1, len(names))), \
            eval_restriction(r, names, rows.reshape(-1, len(names)), reference=True)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (r, rows)


# ---- estimate and tune_op ------------------------------------------------------------------
# ValueError: unsupported op/dtype/SoC, bad shapes, attributes or tilings, limits;
# TypeError: a value of the wrong type (a string for a dimension...).
OPS_ALLOWED = (ValueError, TypeError)
_SOCS = ["Ascend910B3", "Ascend910B4", "Ascend310P3", "Ascend910A", "Ascend950PR_9579"]
_DTYPES = ["float16", "float32", "bfloat16", "int8", "int32", "fp16", "float64", ""]


def _attr_names() -> list[str]:
    names = {a for e in aoe.op_table() for a in (e["attrs"] or [])}
    return sorted(names | {"ops", "to", "alpha", "perm", "axes"})


def _op_from_provider(data: bytes) -> dict[str, Any]:
    import atheris
    fdp = atheris.FuzzedDataProvider(data)
    ops = aoe.supported_ops()
    anames = _attr_names()

    def integer() -> int:
        kind = fdp.ConsumeIntInRange(0, 3)
        if kind == 0:
            return fdp.ConsumeIntInRange(1, 512)
        if kind == 1:
            return fdp.ConsumeIntInRange(-4, 70000)
        if kind == 2:
            return fdp.ConsumeInt(8)
        return fdp.ConsumeInt(10)  # beyond int64 too

    op = fdp.PickValueInList(ops) if fdp.ConsumeProbability() < 0.95 else fdp.ConsumeUnicodeNoSurrogates(8)
    inputs = [[integer() for _ in range(fdp.ConsumeIntInRange(0, 5))] for _ in range(fdp.ConsumeIntInRange(0, 4))]
    attrs: dict[str, Any] = {}
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        name = fdp.PickValueInList(anames)
        kind = fdp.ConsumeIntInRange(0, 4)
        if kind == 0:
            attrs[name] = integer()
        elif kind == 1:
            attrs[name] = [integer() for _ in range(fdp.ConsumeIntInRange(0, 5))]
        elif kind == 2:
            attrs[name] = fdp.PickValueInList(ops + ["NOTSET", "SAME_UPPER", "VALID"])
        elif kind == 3:
            attrs[name] = fdp.ConsumeFloat()
        else:
            attrs[name] = [fdp.PickValueInList(ops) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    return {"op": op, "inputs": inputs, "dtype": fdp.PickValueInList(_DTYPES), "soc": fdp.PickValueInList(_SOCS),
            "attrs": attrs, "tiling_changes": [integer() for _ in range(fdp.ConsumeIntInRange(0, 3))],
            "tune": fdp.ConsumeBool(), "max_evals": fdp.ConsumeIntInRange(1, 30)}


def fuzz_ops(data: bytes) -> None:
    """``{"op", "inputs", "dtype", "soc", "attrs", "tiling" or "tiling_changes", "tune", "max_evals"}``
    as JSON, or any bytes (FuzzedDataProvider)."""
    try:
        desc = json.loads(data)
        if not isinstance(desc, dict):
            raise ValueError
    except ValueError:
        desc = _op_from_provider(data)
    op, inputs, attrs = desc.get("op", "MatMul"), desc.get("inputs", []), desc.get("attrs")
    dtype, soc = desc.get("dtype", "float16"), desc.get("soc", "Ascend910B3")
    if isinstance(soc, str) and soc not in _SOCS:
        soc = "Ascend910B3"
    tiling = desc.get("tiling")
    if tiling is None:
        tiling = aoe.baseline_tiling(op, inputs, dtype, soc, attrs)
        changes = desc.get("tiling_changes") or []
        for name, v in zip(sorted(tiling), changes if isinstance(changes, list) else []):
            tiling[name] = v
    if isinstance(tiling, dict) and all(isinstance(v, int) and -2**63 <= v < 2**63 for v in tiling.values()):
        # the unchecked fast path (only the range check): NaN or a time, never a crash
        model = op_model(op, inputs, dtype, soc, attrs)
        row = [tiling.get(n, 1) for n in model.param_names]
        t = model.estimate_batch(np.array([row], dtype=np.int64), False)[0]
        assert math.isnan(t) or (math.isfinite(t) and t >= 0), (row, t)
    est = aoe.estimate(op, inputs, dtype, soc, tiling, attrs)
    assert math.isfinite(est.time_us) and est.time_us >= 0, est
    if desc.get("tune"):
        max_evals = desc.get("max_evals", 10)
        if isinstance(max_evals, int) and not isinstance(max_evals, bool):
            max_evals = max(1, min(max_evals, 30))  # the budget is the caller's: keep each input fast
        r = aoe.tune_op(op, inputs, dtype, soc, attrs, max_evals=max_evals, seed=0)
        assert math.isfinite(r.time_us) and 0 <= r.time_us <= r.baseline_us, r


# ---- ONNX import ---------------------------------------------------------------------------
# ValueError: unreadable or malformed model, failed shape inference, bad input shapes, limits;
# KeyError: an input shape for a name that is not an input (load_graph's documented errors).
ONNX_ALLOWED = (ValueError, KeyError)


def fuzz_onnx(data: bytes) -> None:
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as d:
        path = os.path.join(d, "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
        graph = load_graph(path)
    graph.largest_tensor()
    part = partition(graph, aoe.supported_ops())
    for task in part.tasks[:4]:
        try:
            aoe.baseline_tiling(task.op_type, task.inputs, "float16", "Ascend910B3", task.attrs)
        except ValueError:  # the cost model refuses what it cannot model, with a message
            pass


def mutate_onnx(data: bytes, max_size: int, seed: int) -> bytes:
    """Structure-aware mutation: change one field of a parsed model (a dimension, an
    attribute, an op type, a tensor name), else fall back to atheris' byte mutation."""
    import random

    import atheris
    import onnx
    rng = random.Random(seed)
    try:
        model = onnx.load_model_from_string(data)
    except Exception:
        return atheris.Mutate(data, max_size)
    g = model.graph
    dims = [d for vi in list(g.input) + list(g.output) + list(g.value_info)
            for d in vi.type.tensor_type.shape.dim]
    ints = [a for n in g.node for a in n.attribute if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)]
    choice = rng.randrange(6)
    big = [0, -1, 1, 2**31, 2**40, 2**62, 2**63 - 1, rng.randrange(1, 4096)]
    try:
        changed = _change_field(g, choice, big, dims, ints, rng)
        out = model.SerializeToString() if changed else b""
    except Exception:  # names protobuf hands out as bytes, values out of a field's range
        changed = False
    return out if changed and len(out) <= max_size else atheris.Mutate(data, max_size)


def _change_field(g: Any, choice: int, big: list[int], dims: list[Any], ints: list[Any], rng: Any) -> bool:
    import onnx
    if choice == 0 and dims:
        rng.choice(dims).dim_value = rng.choice(big)
    elif choice == 1 and ints:
        a = rng.choice(ints)
        if a.type == onnx.AttributeProto.INT:
            a.i = rng.choice(big)
        elif a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.choice(big)
    elif choice == 2 and g.node:
        rng.choice(g.node).op_type = rng.choice(["MatMul", "Conv", "Gemm", "Add", "Softmax", "MaxPool", "Reshape",
                                                 "Transpose", "ReduceMean", "LayerNormalization", "Unknown"])
    elif choice == 3 and g.node:
        n = rng.choice(g.node)
        if n.input:
            n.input[rng.randrange(len(n.input))] = rng.choice([x for m in g.node for x in m.output] + [""])
    elif choice == 4 and len(g.node) > 1:
        del g.node[rng.randrange(len(g.node))]
    else:
        return False
    return True


# ---- the bank loader and merge ----------------------------------------------------------------
# BankError: a damaged, foreign or unreadable bank file (it names the file).
BANK_ALLOWED = (BankError,)


# Bank writes fsync: in memory (tmpfs) they cost nothing, so the fuzzer runs 10x faster.
_SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def fuzz_bank(data: bytes) -> None:
    """``data`` is a bank file: load it, look up the nearest entries, merge it into another
    bank, and check that the merged bank reads back."""
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as d:
        src = os.path.join(d, "src", "Ascend910B3")
        os.makedirs(src)
        with open(os.path.join(src, "MatMul.json"), "wb") as f:
            f.write(data)
        bank = bank_store.Bank(src, "Ascend910B3").load()
        bank.nearest("MatMul", [[64, 64], [64, 32]], "float16", {})
        bank.stats()
        dst = os.path.join(d, "dst")
        if bank.entries:
            bank_store.merge_banks([src], dst)
            merged = bank_store.Bank(dst).load()
            assert set(merged.entries) == set(bank.entries)
        shutil.rmtree(d, ignore_errors=True)


# ---- gradient-split tuning inputs: cluster files and timelines -----------------------------
# ValueError: ClusterError and TimelineError (missing fields, bad rates, inconsistent timelines,
# size and nesting limits), and the backend's segment limit.
GDAT_ALLOWED = (ValueError,)


def fuzz_gdat(data: bytes) -> None:
    """``data`` is read both as a cluster file and as a timeline file; when both load, the
    tuned plan must be no slower than any baseline the same model scores."""
    from aoe_native.cluster import Cluster
    from aoe_native.gradients.timeline import load_timeline

    with tempfile.TemporaryDirectory(dir=_SCRATCH) as d:
        path = os.path.join(d, "input.json")
        with open(path, "wb") as f:
            f.write(data)
        cluster, timeline = None, None
        try:
            cluster = Cluster.load(path)
            assert cluster.allreduce_us(1 << 20) >= 0
        except ValueError:
            pass
        timeline = load_timeline(path)
    plan = aoe.tune_gradients(timeline[:256], cluster or aoe.Cluster(ranks=8, alpha_us=20.0, gbps=100.0),
                              max_buckets=8)
    assert all(plan.time_us <= t * (1 + 1e-9) + 1e-9 for t in plan.baselines.values()), plan.baselines


TARGETS: dict[str, tuple[Callable[[bytes], None], tuple[type[BaseException], ...]]] = {
    "space": (fuzz_space, SPACE_ALLOWED),
    "ops": (fuzz_ops, OPS_ALLOWED),
    "onnx": (fuzz_onnx, ONNX_ALLOWED),
    "bank": (fuzz_bank, BANK_ALLOWED),
    "gdat": (fuzz_gdat, GDAT_ALLOWED),
}
MUTATORS = {"onnx": mutate_onnx}
