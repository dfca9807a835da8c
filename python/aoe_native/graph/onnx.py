"""The ONNX front-end: load a model, fix its input shapes, infer every tensor's shape and
build the graph IR (:mod:`aoe_native.graph.ir`).

Only structure and shapes are read; weights are never loaded (external data is skipped),
so multi-GB exported models import as fast as the structure-only zoo graphs.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .ir import Graph, Node, Tensor

__all__ = ["parse_input_shape", "load_graph"]

# Nodes whose output depends only on input shapes: folded into constants by a compiler.
_SHAPE_OPS = frozenset({"Shape", "Size"})
# Small constant tensors whose values are kept (axes, split sizes, reshape targets).
_MAX_CONST_ELEMENTS = 4096
# Limits checked before any work on a model that may be hostile: a protobuf message cannot
# exceed 2 GiB (weights beyond that are external data, which is not read), and a graph of a
# million nodes is ten times the largest exported LLM graphs we know of.
_MAX_MODEL_BYTES = 2**31
_MAX_NODES = 1_000_000
_MAX_DIM = 2**63 - 1
# Elements of all 1-D tensors for ONNX's data propagation: ~600 MB at most; the zoo's BERT
# and GPT-2 have ~120,000.
_MAX_VECTOR_ELEMENTS = 2**22


# --------------------------------------------------------------------------- input shapes
def parse_input_shape(spec: str | Mapping[str, Any] | None) -> dict[str, list[int]]:
    """Parse AOE's --input_shape syntax, e.g. "input_ids:1,128;attention_mask:1,128".

    A mapping {name: dims} is accepted as is (after validation)."""
    if spec is None or spec == "":
        return {}
    items: list[tuple[str, Any]]
    if isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        items = []
        for part in str(spec).split(";"):
            part = part.strip()
            if not part:
                continue
            name, sep, dims = part.rpartition(":")
            if not sep or not name:
                raise ValueError(f"--input_shape entry {part!r} is not of the form name:d1,d2,...")
            items.append((name.strip(), dims.split(",") if dims.strip() else []))
    out: dict[str, list[int]] = {}
    for name, dims in items:
        parsed = []
        for d in dims:
            try:
                v = int(str(d).strip())
            except ValueError:
                raise ValueError(f"--input_shape {name!r}: dimension {d!r} is not an integer") from None
            if v < 1:
                raise ValueError(f"--input_shape {name!r}: dimension {v} must be >= 1")
            if v > _MAX_DIM:
                raise ValueError(f"--input_shape {name!r}: dimension {v} is beyond the 64-bit range")
            parsed.append(v)
        if name in out:
            raise ValueError(f"--input_shape names input {name!r} twice")
        out[name] = parsed
    return out


def _dims(type_proto: onnx.TypeProto) -> list[int | str] | None:
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    dims: list[int | str] = []
    for d in type_proto.tensor_type.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or "?")
    return dims


def _dtype_name(elem_type: int) -> str:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except Exception:
        return ""


def _fix_inputs(model: onnx.ModelProto, shapes: dict[str, list[int]], where: str) -> None:
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    data_inputs = [vi for vi in graph.input if vi.name not in init_names]
    by_name = {vi.name: vi for vi in data_inputs}
    for name in shapes:
        if name not in by_name:
            raise KeyError(f"{where}: --input_shape names {name!r}, which is not an input of the model "
                           f"(inputs: {', '.join(sorted(by_name)) or 'none'})")
    for vi in data_inputs:
        dims = _dims(vi.type)
        if vi.name in shapes:
            new = shapes[vi.name]
            if dims is not None and len(dims) != len(new):
                raise ValueError(f"{where}: input {vi.name!r} has rank {len(dims)} ({dims}), "
                                 f"--input_shape gives rank {len(new)} ({new})")
            for i, (old, v) in enumerate(zip(dims or [], new)):
                if isinstance(old, int) and old != v:
                    raise ValueError(f"{where}: input {vi.name!r} dimension {i} is fixed to {old} in the model, "
                                     f"--input_shape gives {v}")
            shape = vi.type.tensor_type.shape
            shape.ClearField("dim")
            for v in new:
                shape.dim.add().dim_value = v
        elif dims is None or any(not isinstance(d, int) for d in dims):
            raise ValueError(f"{where}: input {vi.name!r} has dynamic or unknown dimensions {dims}; "
                             f"fix them with --input_shape \"{vi.name}:d1,d2,...\"")


def _attr_values(node: onnx.NodeProto, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            try:
                out[a.name] = numpy_helper.to_array(a.t)
            except Exception as e:  # undefined element type, data shorter than its dims... (found by fuzzing)
                raise ValueError(f"{where}: attribute {a.name!r} is not a readable tensor "
                                 f"({type(e).__name__}: {e})") from None
        elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            out[a.name] = "<subgraph>"
        else:
            v = helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else (list(v) if isinstance(v, (list, tuple)) or
                                                                   type(v).__name__.startswith("Repeated") else v)
    return out


def _load_small_external(model: onnx.ModelProto, base_dir: str) -> None:
    """Read the small external tensors (reshape targets, axes...) that shape inference needs;
    large weights stay on disk (and may be absent)."""
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data
    for t in model.graph.initializer:
        if uses_external_data(t) and int(np.prod(t.dims)) <= _MAX_CONST_ELEMENTS:
            try:
                load_external_data_for_tensor(t, base_dir)
                t.data_location = onnx.TensorProto.DEFAULT
                del t.external_data[:]
            except Exception:  # missing/short data file: shapes that need the value stay unknown
                pass


def _vector_elements(g: onnx.GraphProto) -> int:
    """Elements of the 1-D tensors of a graph that are not initializers (those are not propagated)."""
    inits = {t.name for t in g.initializer}
    total = 0
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.name not in inits and len(dims) == 1 and dims[0].HasField("dim_value"):
            total += max(dims[0].dim_value, 0)
    return total


def _check_nodes(g: onnx.GraphProto, where: str) -> None:
    """Refuse what ONNX shape inference lets through (found by fuzzing): a string field holding
    invalid UTF-8, which protobuf hands out as bytes, nodes with fewer inputs or outputs than
    their operator's schema requires, attributes of another type than the schema's."""
    for i, n in enumerate(g.node):
        for s in [n.op_type, n.name, n.domain, *n.input, *n.output, *(a.name for a in n.attribute)]:
            if not isinstance(s, str):
                raise ValueError(f"{where}: not a readable ONNX model (node {i} has a name that is not UTF-8: {s!r})")
        if n.domain in ("", "ai.onnx") and onnx.defs.has(n.op_type):
            schema = onnx.defs.get_schema(n.op_type)
            if len(n.input) < schema.min_input or len(n.output) < schema.min_output:
                raise ValueError(f"{where}: node {n.name or i} ({n.op_type}) has {len(n.input)} inputs and "
                                 f"{len(n.output)} outputs; {n.op_type} needs at least {schema.min_input} and "
                                 f"{schema.min_output}")
            for a in n.attribute:
                spec = schema.attributes.get(a.name)
                if spec is not None and a.type != spec.type:
                    raise ValueError(f"{where}: node {n.name or i} ({n.op_type}) attribute {a.name!r} is of type "
                                     f"{onnx.AttributeProto.AttributeType.Name(a.type)}, the operator takes "
                                     f"{onnx.AttributeProto.AttributeType.Name(spec.type)}")
    for t in list(g.input) + list(g.output) + list(g.value_info) + list(g.initializer):
        if not isinstance(t.name, str):
            raise ValueError(f"{where}: not a readable ONNX model (tensor name {t.name!r} is not UTF-8)")


def load_graph(model_or_path: str | os.PathLike | onnx.ModelProto,
               input_shape: str | Mapping[str, Any] | None = None) -> Graph:
    """Load an ONNX model (path or ModelProto), fix its inputs and infer all shapes.

    Raises ValueError (unreadable/malformed model, bad or missing input shapes) or KeyError
    (an --input_shape name that is not a model input), each naming the model."""
    if isinstance(model_or_path, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(model_or_path)
        path, where = None, f"model {model.graph.name or '<unnamed>'}"
    else:
        path = os.fspath(model_or_path)
        where = path
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: model file not found")
        if os.path.getsize(path) > _MAX_MODEL_BYTES:
            raise ValueError(f"{path}: {os.path.getsize(path)} bytes, more than the 2 GiB an ONNX protobuf can hold "
                             f"(larger weights belong in external data files)")
        try:
            model = onnx.load(path, load_external_data=False)
        except Exception as e:  # protobuf DecodeError and friends
            raise ValueError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from None
        if not model.graph.node:
            raise ValueError(f"{path}: not a readable ONNX model (no graph nodes; truncated or not ONNX?)")
        _load_small_external(model, os.path.dirname(os.path.abspath(path)))
    if len(model.graph.node) > _MAX_NODES:
        raise ValueError(f"{where}: {len(model.graph.node)} nodes, more than the limit of {_MAX_NODES}")
    _check_nodes(model.graph, where)
    shapes = parse_input_shape(input_shape)
    _fix_inputs(model, shapes, where)
    try:
        # ONNX's data propagation (which folds the Shape -> ... -> Reshape chains of exported
        # models) keeps ~150 bytes per element of 1-D tensors: 2^31 elements exhaust any memory
        # (found by fuzzing).  It runs only when the 1-D tensors, known from a first pass
        # without it, stay within a budget.
        inferred = onnx.shape_inference.infer_shapes(model)
        if _vector_elements(inferred.graph) <= _MAX_VECTOR_ELEMENTS:
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:
        raise ValueError(f"{where}: ONNX shape inference failed ({e})") from None
    g = inferred.graph

    tensors: dict[str, Tensor] = {}
    const_values: dict[str, np.ndarray] = {}
    for t in g.initializer:
        tensors[t.name] = Tensor(t.name, tuple(int(d) for d in t.dims), _dtype_name(t.data_type), const=True)
        n_el = int(np.prod(t.dims)) if len(t.dims) else 1
        if n_el <= _MAX_CONST_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL:
            try:
                const_values[t.name] = numpy_helper.to_array(t)
            except Exception:
                pass
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.name in tensors:
            continue
        dims = _dims(vi.type)
        shape = tuple(dims) if dims is not None and all(isinstance(d, int) for d in dims) else None
        tensors[vi.name] = Tensor(vi.name, shape, _dtype_name(vi.type.tensor_type.elem_type))
    inputs = {vi.name: tensors[vi.name].shape for vi in g.input if not tensors[vi.name].const}

    nodes: list[Node] = []
    for i, n in enumerate(g.node):
        attrs = _attr_values(n, f"{where}: node {n.name or i} ({n.op_type})")
        node = Node(i, n.name or f"{n.op_type}_{i}", n.op_type, list(n.input), list(n.output), attrs)
        nodes.append(node)
        for o in n.output:
            tensors.setdefault(o, Tensor(o, None, ""))
        # Constant folding: a node computed only from constants (or from shapes) is no kernel.
        if n.op_type == "Constant" and "value" in attrs:
            val = np.asarray(attrs["value"])
            tensors[n.output[0]].const = True
            tensors[n.output[0]].shape = tuple(val.shape)
            if val.size <= _MAX_CONST_ELEMENTS:
                const_values[n.output[0]] = val
        elif n.op_type in _SHAPE_OPS or (n.input and all(not x or (x in tensors and tensors[x].const)
                                                          for x in n.input) and n.domain in ("", "ai.onnx")):
            for o in n.output:
                tensors[o].const = True
    return Graph(g.name or (os.path.splitext(os.path.basename(path))[0] if path else "model"), path, nodes,
                 tensors, inputs, [o.name for o in g.output], const_values)


