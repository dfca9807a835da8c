"""Write the seed corpus of the fuzz targets (``corpus/<target>/``), kept in the repository.

    python tests/fuzz/make_corpus.py

Seeds (``seed-*``) are small valid inputs that reach each part of the code (every operator
family, restriction syntax, ONNX graphs in the exporters' style, bank files of both layouts)
plus the hostile inputs of issue 16; ``found-*`` files are inputs the fuzzers found crashing
(kept, not rewritten).  Every fuzz run replays them all first.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def space_seeds() -> list[bytes]:
    from aoe_native.ascend.ops import op_model
    seeds = [
        "a=1,2,4,8;b=16,32,64\na * b <= 128\na % 2 == 0 or b > 16",
        "x=1,2,3,4,5,6;y=1,2,3\n1 <= x < y * 2 <= 8\nnot (x == y)",
        "a=0,1,2;b=-3,-1,0,5\na // b >= 0\nb % a == 0\n(a + b) ** 2 > 3",
        "p=9223372036854775807,1;q=2,-9223372036854775808\np * q > 0\n-q > 0\np + 1 > p",
        "a=1,2\n" + "(" * 199 + "a == 1" + ")" * 199,
        "a=1,2\n" + "not " * 201 + "a == 1",
        "a=1,2\n" + "-" * 300 + "1 == a",
        "a=1,2\na ** a ** a ** 2 < 100 and True or False",
        "a=1;b=2\na b\n1 = a\na && b\n3.5 > a",
    ]
    m = op_model("MatMul", [[256, 512], [512, 128]])
    params = ";".join(f"{n}={','.join(map(str, v[:6]))}" for n, v in zip(m.param_names, m.param_values))
    seeds.append(params + "\n" + "\n".join(m.restrictions[:6]))
    return [s.encode() for s in seeds]


def ops_seeds() -> list[bytes]:
    conv_attrs = {"strides": [2, 2], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
    descs = [
        {"op": "MatMul", "inputs": [[256, 512], [512, 128]], "tune": True, "max_evals": 20},
        {"op": "BatchMatMul", "inputs": [[8, 64, 32], [8, 64, 32]], "attrs": {"transpose_b": 1}},
        {"op": "Gemm", "inputs": [[64, 128], [128, 256], [256]], "attrs": {"transB": 0, "alpha": 1.0}},
        {"op": "Conv", "inputs": [[1, 64, 56, 56], [64, 64, 3, 3]], "attrs": conv_attrs, "tune": True},
        {"op": "Conv", "inputs": [[1, 32, 28, 28], [32, 1, 3, 3]], "attrs": {**conv_attrs, "group": 32},
         "dtype": "float32"},
        {"op": "Add", "inputs": [[4, 128, 768], [768]], "dtype": "bfloat16", "tune": True},
        {"op": "FusedElementwise", "inputs": [[1, 1024], [1, 1024]], "attrs": {"ops": ["Add", "Relu", "Cast"], "to": 1}},
        {"op": "ReduceMean", "inputs": [[8, 512, 7, 7]], "attrs": {"axes": [2, 3], "keepdims": 1}},
        {"op": "Softmax", "inputs": [[12, 128, 128]], "attrs": {"axis": -1}, "dtype": "float32"},
        {"op": "LayerNormalization", "inputs": [[128, 768], [768], [768]], "attrs": {"axis": -1}},
        {"op": "Transpose", "inputs": [[8, 128, 64]], "attrs": {"perm": [0, 2, 1]}, "soc": "Ascend310P3"},
        {"op": "MaxPool", "inputs": [[1, 64, 112, 112]], "attrs": {"kernel_shape": [3, 3], "strides": [2, 2],
                                                                    "pads": [1, 1, 1, 1]}},
        {"op": "AveragePool", "inputs": [[1, 256, 14, 14]], "attrs": {"kernel_shape": [2, 2], "ceil_mode": 1}},
        # hostile: issue 16's tensors beyond the device memory, int64 overflow, huge attributes
        {"op": "MatMul", "inputs": [[2**40, 2**40], [2**40, 2**40]]},
        {"op": "Add", "inputs": [[2**62, 4], [4]]},
        {"op": "MaxPool", "inputs": [[1, 1, 64, 64]], "attrs": {"kernel_shape": [2**31 - 1, 2**31 - 1],
                                                                "pads": [2**31 - 1] * 4}},
        {"op": "MatMul", "inputs": [[64, 64], [64, 64]], "tiling_changes": [2**62, -1, 0]},
    ]
    return [json.dumps(d).encode() for d in descs]


def onnx_seeds() -> list[bytes]:
    f = TensorProto.FLOAT
    mk = lambda nodes, ins, outs, inits=(): helper.make_model(  # noqa: E731
        helper.make_graph(nodes, "seed", ins, outs, list(inits)), opset_imports=[helper.make_opsetid("", 17)])
    vi = helper.make_tensor_value_info
    models = []
    # MLP block: MatMul + bias + Relu, LayerNorm, Softmax
    models.append(mk([helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["a"]),
                      helper.make_node("Relu", ["a"], ["r"]),
                      helper.make_node("LayerNormalization", ["r", "g", "beta"], ["ln"], axis=-1),
                      helper.make_node("Softmax", ["ln"], ["y"], axis=-1)],
                     [vi("x", f, [2, 64, 128]), vi("w", f, [128, 128]), vi("b", f, [128]), vi("g", f, [128]),
                      vi("beta", f, [128])], [vi("y", f, None)]))
    # exporter style: initializers, Constant, a shape chain folding into Reshape, ReduceSum with axes input
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Shape", ["mm"], ["s"]),
             helper.make_node("Gather", ["s", "idx"], ["s2"], axis=0),
             helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
             helper.make_node("Concat", ["s2", "m1"], ["t"], axis=0), helper.make_node("Reshape", ["mm", "t"], ["z"]),
             helper.make_node("ReduceSum", ["z", "axes"], ["r"], keepdims=0)]
    inits = [numpy_helper.from_array(np.zeros((64, 32), np.float32), "w"),
             numpy_helper.from_array(np.array([0, 1], np.int64), "idx"),
             numpy_helper.from_array(np.array([2], np.int64), "axes")]
    models.append(mk(nodes, [vi("x", f, [2, 16, 64])], [vi("r", f, None)], inits))
    # CNN block: Conv (SAME padding) + BatchNorm-free Relu + MaxPool + GlobalAveragePool + Gemm
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], auto_pad="SAME_UPPER"),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["g"]), helper.make_node("Flatten", ["g"], ["fl"]),
             helper.make_node("Gemm", ["fl", "fc"], ["y"], transB=1),
             helper.make_node("Transpose", ["r"], ["tr"], perm=[0, 2, 3, 1])]
    models.append(mk(nodes, [vi("x", f, [1, 8, 32, 32]), vi("w", f, [16, 8, 3, 3]), vi("fc", f, [10, 16])],
                     [vi("y", f, None), vi("tr", f, None)]))
    # issue 16: MatMul inputs 2^40 x 2^40
    models.append(mk([helper.make_node("MatMul", ["a", "b"], ["y"])],
                     [vi("a", TensorProto.FLOAT16, [2**40, 2**40]), vi("b", TensorProto.FLOAT16, [2**40, 2**40])],
                     [vi("y", TensorProto.FLOAT16, None)]))
    return [m.SerializeToString() for m in models]


def bank_seeds() -> list[bytes]:
    from aoe_native.bank.store import SCHEMA, SCHEMA_VERSION, _dump_bank, make_entry
    from aoe_native.graph.partition import task_key
    seeds = []
    v1 = os.path.join(ROOT, "tests", "data", "bank_v1", "Ascend910B3")
    for name in sorted(os.listdir(v1)):
        with open(os.path.join(v1, name), "rb") as fh:
            seeds.append(fh.read())
    tiling = {"baseK": 16, "baseM": 16, "baseN": 64, "dbL0A": 2, "dbL0B": 2, "dbL0C": 2, "depthA1": 16,
              "depthB1": 2, "iterateOrder": 1, "singleCoreM": 16, "singleCoreN": 64, "stepKa": 8, "stepKb": 1,
              "stepM": 1, "stepN": 1}
    entries = {}
    for shapes in ([[64, 64], [64, 32]], [[128, 256], [256, 64]]):
        key = task_key("MatMul", shapes, "float16", ["ND", "ND"], {})
        entries[key] = make_entry("MatMul", shapes, "float16", ["ND", "ND"], {}, tiling, 3.0, 2.5, evaluations=10)
        entries[key]["date"] = "2026-11-23T00:00:00+00:00"  # deterministic seeds
    seeds.append(_dump_bank({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "soc_version": "Ascend910B3",
                             "op_type": "MatMul", "entries": entries}).encode())
    seeds.append(b"[" * 70000)  # issue 16: nesting deeper than the recursion limit (past -max_len: truncated)
    return seeds


def main() -> None:
    for target, seeds in [("space", space_seeds()), ("ops", ops_seeds()), ("onnx", onnx_seeds()),
                          ("bank", bank_seeds())]:
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):  # found-* files (inputs that were findings) are kept
            if old.startswith("seed-"):
                os.unlink(os.path.join(d, old))
        for i, s in enumerate(seeds):
            with open(os.path.join(d, f"seed-{i:02d}"), "wb") as fh:
                fh.write(s)
        print(f"{target}: {len(seeds)} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
