"""Lowering: express each node of the graph IR as an operator of the Ascend cost model.

The operator vocabulary (names, families, operand counts, attributes) comes from the C++
operator table through :func:`aoe_native.ascend.ops.op_table`; this module only maps ONNX
node conventions (attributes, optional inputs, constant axes) onto it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ascend.ops import auto_pads, op_table
from .ir import Graph, Node
from .llm_rewrite import LLM_KINDS

__all__ = ["NARY_OPS", "OpSpec", "UnsupportedNode", "VIEW_OPS", "map_node", "unary_ops"]

# Nodes that only reinterpret a tensor: no kernel is launched for them.
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
# Data-movement ops whose innermost changed axis is found by comparing input and output shapes.
_CHANGED_AXIS_OPS = frozenset({"Slice", "Pad", "Expand", "Tile"})


@dataclass
class OpSpec:
    """A node expressed in the cost model's terms."""
    op_type: str
    inputs: list[list[int]]
    attrs: dict[str, Any]
    kind: str  # "cube", "vector", "elementwise"


class UnsupportedNode(Exception):
    """Raised by map_node for a node we do not model; the message is the reason."""


@functools.lru_cache(maxsize=None)
def _elementwise_ops() -> frozenset[str]:
    return frozenset(name for e in op_table() if e["family"] == "elementwise" and e["name"] != "FusedElementwise"
                     for name in [e["name"], *e["aliases"]])


@functools.lru_cache(maxsize=None)
def _movement_ops() -> frozenset[str]:
    return frozenset(e["name"] for e in op_table() if e["family"] == "movement")


def _innermost_changed_axis(x: list[int], out: list[int]) -> int:
    """The last axis along which input and output differ (right-aligned, as broadcasting)."""
    xs = [1] * (len(out) - len(x)) + list(x)
    changed = [i for i, (a, b) in enumerate(zip(xs, out)) if a != b]
    return changed[-1] if changed else len(out) - 1


def _movement(graph: Graph, node: Node) -> OpSpec:
    """A data-movement node: its data operands, output shape and the axis it works along."""
    op, a = node.op_type, node.attrs
    out = _shape(graph, node.outputs[0], node)
    x = _shape(graph, node.inputs[0], node)
    attrs: dict[str, Any] = {"output_shape": out}
    inputs = [x]
    if op == "Concat":
        inputs = [_shape(graph, t, node) for t in node.inputs if t]
        attrs["axis"] = int(a["axis"]) % len(out)
    elif op in ("Split", "Gather", "GatherElements"):
        attrs["axis"] = int(a.get("axis", 0)) % len(x)
        if op != "Split":
            inputs.append(_shape(graph, node.inputs[1], node))
        if op == "Gather":  # the output's rank is data rank - 1 + indices rank
            attrs["axis"] = min(attrs["axis"], len(out) - 1)
    elif op in _CHANGED_AXIS_OPS:
        attrs["axis"] = _innermost_changed_axis(x, out)
        if op == "Pad":
            attrs["mode"] = str(a.get("mode", "constant"))
    elif op == "Resize":
        attrs["mode"] = str(a.get("mode", "nearest"))
        if attrs["mode"] not in ("nearest", "linear"):
            raise UnsupportedNode(f"Resize mode {attrs['mode']!r} is not modelled (nearest and linear are)")
    elif op in ("DepthToSpace", "SpaceToDepth"):
        attrs["blocksize"] = int(a["blocksize"])
    return OpSpec(op, inputs, attrs, "vector")


def _conv_transpose(graph: Graph, node: Node) -> OpSpec:
    """ConvTranspose as the backward-data convolution CANN runs for it (Conv2DBackpropInput /
    Conv2DTranspose), which multiplies no inserted zeros.  Its work is that of sh*sw stride-1
    convolutions of the undilated input, one per output phase, each with a sub-kernel of
    ceil(kh/sh) x ceil(kw/sw) taps (the sub-pixel form: Shi et al. 2016, "Is the
    deconvolution layer the same as a convolutional layer?", arXiv:1609.07009).  For the cube
    model they are one Conv of the input with sh*sw times the output channels, padded so that
    its output covers ceil(Hout/sh) x ceil(Wout/sw) pixels; the pixel shuffle that interleaves
    the phases is the output write.  Stride 1 is the plain convolution it was before."""
    a = node.attrs
    x, w = _shape(graph, node.inputs[0], node), _shape(graph, node.inputs[1], node)
    out = _shape(graph, node.outputs[0], node)
    if len(x) != 4:
        raise UnsupportedNode(f"only 2-D transposed convolution is modelled (input rank {len(x)})")
    group = int(a.get("group", 1))
    strides = [int(v) for v in a.get("strides", [1, 1])]
    dil = [int(v) for v in a.get("dilations", [1, 1])]
    if dil != [1, 1] and strides != [1, 1]:
        raise UnsupportedNode(f"ConvTranspose with strides {strides} and dilations {dil} is not modelled")
    cout = w[1] * group  # W is [Cin, Cout/group, kh, kw]
    sub = [-(-w[2] // strides[0]), -(-w[3] // strides[1])]
    pads = []
    for i in range(2):  # total padding for a stride-1 output of ceil(out / stride) pixels
        span = dil[i] * (sub[i] - 1) + 1
        total = max(0, -(-out[2 + i] // strides[i]) + span - 1 - x[2 + i])
        pads.append((total // 2, total - total // 2))
    cw = [cout * strides[0] * strides[1], w[0] // group, sub[0], sub[1]]
    inputs = [x, cw] + ([[cw[0]]] if len(node.inputs) > 2 and node.inputs[2] else [])
    return OpSpec("Conv", inputs, {"strides": [1, 1], "pads": [pads[0][0], pads[1][0], pads[0][1], pads[1][1]],
                                   "dilations": dil, "group": group}, "cube")


# N-ary element-wise ops: Sum and Mean are Adds (Mean then a scale), Max and Min pairwise;
# partition expands them into one step per pair.
NARY_OPS = {"Sum": "Add", "Mean": "Add", "Max": "Max", "Min": "Min"}


@functools.lru_cache(maxsize=None)
def unary_ops() -> frozenset[str]:
    """Element-wise ops that take one tensor operand in the cost model (ONNX may give them
    optional extra inputs, such as Clip's bounds)."""
    return frozenset(name for e in op_table() if e["family"] == "elementwise" and e["operands"] == 1
                     for name in [e["name"], *e["aliases"]])


def _shape(graph: Graph, tensor: str, node: Node) -> list[int]:
    s = graph.shape(tensor)
    if s is None:
        raise UnsupportedNode(f"shape of input {tensor!r} unknown after shape inference")
    return list(s) if s else [1]


def _axes(graph: Graph, node: Node, rank: int) -> list[int] | None:
    if "axes" in node.attrs:
        axes = list(node.attrs["axes"])
    elif len(node.inputs) > 1 and node.inputs[1]:
        if node.inputs[1] not in graph.const_values:
            raise UnsupportedNode("reduction axes are not a constant")
        axes = [int(a) for a in np.asarray(graph.const_values[node.inputs[1]]).reshape(-1)]
    else:
        return None
    return sorted(a % rank for a in axes)


# Fused LLM matmuls whose activation CANN takes as [M, K].
_FOLDED_M = frozenset({"WeightQuantBatchMatmul", "QuantBatchMatmulV3"})


def _llm_kernel(graph: Graph, node: Node) -> OpSpec:
    """A fused LLM operator the import made (graph/llm_patterns.py): its inputs are already in
    CANN's order, an absent optional input is an empty shape.  SwiGlu's kernel reads gate and up
    as one [..., 2F] tensor (CANN's convention); the import keeps them as two graph tensors."""
    inputs = [(list(graph.shape(t) or ()) or [1]) if t else [] for t in node.inputs]  # a scalar is [1]
    if node.op_type == "SwiGlu" and len(inputs) == 2:
        inputs = [inputs[0][:-1] + [inputs[0][-1] + inputs[1][-1]]]
    if node.op_type in _FOLDED_M and len(inputs[0]) > 2:  # [..., M, K]: the leading dims fold into M
        inputs[0] = [int(np.prod(inputs[0][:-1])), inputs[0][-1]]
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_")}
    return OpSpec(node.op_type, inputs, attrs, "vector")


def map_node(graph: Graph, node: Node) -> OpSpec:
    """Express `node` as a cost-model operator; raises UnsupportedNode with the reason."""
    op = node.op_type
    a = node.attrs
    if any(graph.shape(o) is None for o in node.outputs[:1]):
        raise UnsupportedNode("output shape unknown after shape inference")
    if op in LLM_KINDS:
        return _llm_kernel(graph, node)
    if op == "GatherND":  # rows gathered by index tuples: the movement of a Gather of its output
        x, idx = _shape(graph, node.inputs[0], node), _shape(graph, node.inputs[1], node)
        out = _shape(graph, node.outputs[0], node)
        batch = int(a.get("batch_dims", 0))
        return OpSpec("Gather", [x, idx[:-1] or [1]], {"output_shape": out, "axis": min(batch, len(out) - 1)}, "vector")
    if op == "Conv":
        x, w = _shape(graph, node.inputs[0], node), _shape(graph, node.inputs[1], node)
        if len(x) != 4:
            raise UnsupportedNode(f"only 2-D convolution is modelled (input rank {len(x)})")
        strides = list(a.get("strides", [1, 1]))
        dil = list(a.get("dilations", [1, 1]))
        pads = list(a.get("pads", [0, 0, 0, 0]))
        auto = a.get("auto_pad", "NOTSET")
        if auto != "NOTSET":
            try:
                pads = auto_pads(str(auto), x, w, strides, dil)
            except ValueError as e:
                raise UnsupportedNode(str(e)) from None
        inputs = [x, w] + ([_shape(graph, node.inputs[2], node)] if len(node.inputs) > 2 and node.inputs[2] else [])
        return OpSpec("Conv", inputs, {"strides": strides, "pads": pads, "dilations": dil,
                                       "group": int(a.get("group", 1))}, "cube")
    if op == "ConvTranspose":
        return _conv_transpose(graph, node)
    if op in _movement_ops():
        return _movement(graph, node)
    if op == "MatMul":
        x, w = _shape(graph, node.inputs[0], node), _shape(graph, node.inputs[1], node)
        if len(x) < 2 or len(w) < 2:
            raise UnsupportedNode("MatMul with a 1-D operand")
        if len(w) == 2:  # [..., M, K] x [K, N]: the leading dims fold into M
            return OpSpec("MatMul", [[int(np.prod(x[:-1])), x[-1]], w], {}, "cube")
        return OpSpec("BatchMatMul", [x, w], {}, "cube")
    if op == "Gemm":
        inputs = [_shape(graph, t, node) for t in node.inputs if t]
        return OpSpec("Gemm", inputs, {"transA": int(a.get("transA", 0)), "transB": int(a.get("transB", 0))}, "cube")
    if op in NARY_OPS:
        shapes = [_shape(graph, t, node) for t in node.inputs if t]
        base = NARY_OPS[op] if len(shapes) > 1 else "Identity"
        return OpSpec(base, shapes, {}, "elementwise")
    if op in _elementwise_ops():
        return OpSpec(op, [_shape(graph, t, node) for t in node.inputs if t], {}, "elementwise")
    if op == "LRN":
        if not isinstance(a.get("size"), int):
            raise UnsupportedNode("LRN without an integer size attribute")
        return OpSpec(op, [_shape(graph, node.inputs[0], node)], {"size": a["size"]}, "vector")
    if op == "BatchNormalization":  # inference BN: a per-channel scale and shift
        return OpSpec(op, [_shape(graph, node.inputs[0], node)], {}, "elementwise")
    if op in ("ReduceSum", "ReduceMean", "ReduceMax"):
        x = _shape(graph, node.inputs[0], node)
        axes = _axes(graph, node, len(x))
        if axes is None:
            if a.get("noop_with_empty_axes", 0):
                raise UnsupportedNode("reduction with no axes is a no-op")
            axes = list(range(len(x)))
        return OpSpec(op, [x], {"axes": axes, "keepdims": int(a.get("keepdims", 1))}, "vector")
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        x = _shape(graph, node.inputs[0], node)
        return OpSpec("ReduceMean" if op == "GlobalAveragePool" else "ReduceMax", [x],
                      {"axes": list(range(2, len(x))), "keepdims": 1}, "vector")
    if op in ("MaxPool", "AveragePool"):
        x = _shape(graph, node.inputs[0], node)
        if len(x) != 4:
            raise UnsupportedNode(f"only 2-D pooling is modelled (input rank {len(x)})")
        if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            raise UnsupportedNode(f"{op} with auto_pad={a['auto_pad']} is not modelled")
        if len(node.outputs) > 1 and node.outputs[1]:
            raise UnsupportedNode("MaxPool with an Indices output is not modelled")
        attrs = {"kernel_shape": list(a["kernel_shape"]), "strides": list(a.get("strides", [1, 1])),
                 "pads": list(a.get("pads", [0, 0, 0, 0])), "ceil_mode": int(a.get("ceil_mode", 0))}
        if op == "MaxPool":
            attrs["dilations"] = list(a.get("dilations", [1, 1]))
        return OpSpec(op, [x], attrs, "vector")
    if op == "Softmax":
        x = _shape(graph, node.inputs[0], node)
        return OpSpec(op, [x], {"axis": int(a.get("axis", -1)) % len(x)}, "vector")
    if op == "LayerNormalization":
        inputs = [_shape(graph, t, node) for t in node.inputs if t]
        return OpSpec(op, inputs, {"axis": int(a.get("axis", -1)) % len(inputs[0]),
                                   "epsilon": float(a.get("epsilon", 1e-5))}, "vector")
    if op == "Transpose":
        x = _shape(graph, node.inputs[0], node)
        perm = [int(p) for p in a.get("perm", list(range(len(x)))[::-1])]
        return OpSpec(op, [x], {"perm": perm}, "vector")
    raise UnsupportedNode(f"operator {op} is not modelled")
