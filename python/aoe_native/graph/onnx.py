"""The ONNX front-end: load a model, fix its input shapes, fold constants and infer every
tensor's shape, and build the graph IR (:mod:`aoe_native.graph.ir`).

Only structure, shapes and small constants are read; large weights are never loaded (neither
external data nor values embedded in the file), so multi-GB exported models import in about
the time of the structure-only zoo graphs and in a fraction of their size in memory.
"""
from __future__ import annotations

import ast
import contextlib
import mmap
import os
import re
from typing import Any, Iterable, Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ascend.ops import supported_ops
from .ir import EXPORTER_MADE_PREFIX, RELAYOUT_OPS, Graph, Node, Tensor, numel
from .llm_patterns import LLM_KINDS, fuse_llm_patterns

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
# Where exporters record parameters (torch 2.x dynamo exporter and its onnxscript optimizer).
_FOLDED_FROM_KEY = "pkg.onnxscript.optimizer.folded_from"
_SIGNATURE_KEY = "pkg.torch.export.ExportedProgram.graph_signature"
_MAX_METADATA_CHARS = 1 << 20  # a longer entry is not an exporter's: ignored
# Sources kept per folded constant: a chain of folds must not grow a list per node (hostile
# input); a constant computed from more tensors than this is no parameter's re-layout anyway.
_MAX_SOURCES = 64


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
        if d.HasField("dim_value") and d.dim_value >= 0:  # 0 is a real size (an empty roi, an empty list)
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
                           f"(inputs: {_input_list(model, by_name)})")
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


# Operand names (onnx schemas' formal inputs) that hold parameters, not activations: a graph
# input read only there is a weight the model takes at run time (Caffe2-era exports).
_WEIGHT_OPERANDS = frozenset({"W", "B", "R", "scale", "bias", "mean", "var", "input_mean", "input_var", "slope"})
_MAX_LISTED_INPUTS = 12  # a message that lists hundreds of names hides the few that matter


def _input_list(model: onnx.ModelProto, data_inputs: Mapping[str, Any]) -> str:
    """The model's inputs for an error message: without weights (inputs only read as the weight
    operand of their consumers, e.g. a Conv's W), the ones with dynamic dimensions first, at
    most _MAX_LISTED_INPUTS of them."""
    opset = _default_opset(model)
    weight_use: dict[str, bool] = {}
    for n in model.graph.node:
        formal: list[str] = []
        if n.domain in _DEFAULT_DOMAINS:
            with contextlib.suppress(Exception):
                formal = [f.name for f in onnx.defs.get_schema(n.op_type, opset).inputs]
        for i, x in enumerate(n.input):
            if x in data_inputs:
                is_weight = i > 0 and i < len(formal) and formal[i] in _WEIGHT_OPERANDS
                weight_use[x] = weight_use.get(x, True) and is_weight
    names = [x for x in data_inputs if not weight_use.get(x, False)]
    if not names:
        return "none"
    names.sort(key=lambda x: (all(isinstance(d, int) for d in (_dims(data_inputs[x].type) or ["?"])), x))
    more = len(names) - _MAX_LISTED_INPUTS
    return ", ".join(names[:_MAX_LISTED_INPUTS]) + (f" and {more} more" if more > 0 else "")


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


# ---- reading a model file without its embedded weights ------------------------------------
# onnx.load reads a file whole and parses it: a model with its weights inside the file then
# needs twice its size in memory.  Only structure and shapes are needed, so the file is
# mapped and its protobuf wire format walked (ModelProto.graph -> GraphProto.initializer ->
# TensorProto): everything is copied except the values of large initializers, whose pages are
# never touched; onnx then parses the small remainder.  Field numbers: onnx/onnx.proto.
_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_DIMS = 7, 5, 1
_TENSOR_DATA_TYPE, _TENSOR_NAME, _TENSOR_RAW_DATA = 2, 8, 9
_TENSOR_VALUE_FIELDS = frozenset({4, 5, 7, 9, 10, 11})  # float/int32/int64/raw/double/uint64 data


def _varint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf, start: int, end: int):
    """(field number, wire type, start of the field, start of its payload, end) of each field."""
    pos = start
    while pos < end:
        key, p = _varint(buf, pos)
        wt = key & 7
        if wt == 0:
            nxt = _varint(buf, p)[1]
        elif wt == 1:
            nxt = p + 8
        elif wt == 5:
            nxt = p + 4
        elif wt == 2:
            n, p = _varint(buf, p)
            nxt = p + n
        else:
            raise ValueError(f"unsupported protobuf wire type {wt} at byte {pos}")
        if nxt > end:
            raise ValueError(f"field {key >> 3} at byte {pos} runs past the end of its message (truncated file?)")
        yield key >> 3, wt, pos, p, nxt
        pos = nxt


def _tensor_without_values(buf, start: int, end: int, raw: dict[str, tuple] | None = None) -> bytes:
    """The TensorProto at buf[start:end] without its values when it is large.  Its (dims, data
    type, buf, offset and size of its raw data) go into `raw` by name when it keeps its values
    in raw_data (offsets, not views: a view of the map would keep it from closing)."""
    dims: list[int] = []
    name, dtype, data = "", 0, None
    for field, wt, _, p, nxt in _fields(buf, start, end):
        if field == _TENSOR_NAME and wt == 2:
            name = bytes(buf[p:nxt]).decode("utf-8", "replace")
        elif field == _TENSOR_DATA_TYPE and wt == 0:
            dtype = _varint(buf, p)[0]
        elif field == _TENSOR_RAW_DATA and wt == 2:
            data = (buf, p, nxt - p)
        elif field == _TENSOR_DIMS:
            if wt == 0:
                dims.append(_varint(buf, p)[0])
            else:  # packed
                q = p
                while q < nxt:
                    d, q = _varint(buf, q)
                    dims.append(d)
    keep_values = numel(dims) <= _MAX_CONST_ELEMENTS
    if raw is not None and data is not None and name:
        raw[name] = (tuple(dims), dtype, *data)
    return b"".join(bytes(buf[f0:nxt]) for field, _, f0, _, nxt in _fields(buf, start, end)
                    if keep_values or field not in _TENSOR_VALUE_FIELDS)


def _message(field: int, payload: bytes) -> bytes:
    return _encode_varint(field << 3 | 2) + _encode_varint(len(payload)) + payload


def _read_structure(path: str) -> tuple[onnx.ModelProto, dict[str, tuple[str, ...]]]:
    """The model in `path` without the values of its large embedded initializers, and the
    exporter-made copies among its initializers, embedded or in external data files
    (:func:`_exporter_copies`)."""
    with contextlib.ExitStack() as maps:
        f = maps.enter_context(open(path, "rb"))
        buf = maps.enter_context(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
        parts = []
        raw: dict[str, tuple] = {}
        for field, wt, f0, p, nxt in _fields(buf, 0, len(buf)):
            if field != _MODEL_GRAPH or wt != 2:
                parts.append(bytes(buf[f0:nxt]))
                continue
            graph = b"".join(
                _message(_GRAPH_INITIALIZER, _tensor_without_values(buf, gp, gnxt, raw))
                if gfield == _GRAPH_INITIALIZER and gwt == 2 else bytes(buf[g0:gnxt])
                for gfield, gwt, g0, gp, gnxt in _fields(buf, p, nxt))
            parts.append(_message(_MODEL_GRAPH, graph))
        model = onnx.load_from_string(b"".join(parts))
        raw.update(_external_raw(model, os.path.dirname(os.path.abspath(path)), maps))
        copies = _exporter_copies(raw)
    return model, copies


def _external_raw(model: onnx.ModelProto, base_dir: str, maps: contextlib.ExitStack) -> dict[str, tuple]:
    """`raw` entries (:func:`_exporter_copies`) of the initializers kept in external data files,
    each file mapped once into `maps`.  A model too large for one protobuf (a language model
    whose output projection is tied to its embedding) keeps all its weights there.  A file
    that is missing or too short is skipped: _check_external reports it."""
    files: dict[str, Any] = {}
    raw: dict[str, tuple] = {}
    for t, location, offset, length in _external_tensors(model):
        fpath = os.path.join(base_dir, location)
        if fpath not in files:
            files[fpath] = None
            if os.path.isfile(fpath) and os.path.getsize(fpath) > 0:
                with open(fpath, "rb") as data:
                    files[fpath] = maps.enter_context(mmap.mmap(data.fileno(), 0, access=mmap.ACCESS_READ))
        buf = files[fpath]
        if t.name and buf is not None and offset + length <= len(buf):
            raw[t.name] = (tuple(t.dims), t.data_type, buf, offset, length)
    return raw


def _external_tensors(model: onnx.ModelProto):
    """(initializer, data file location, offset, length in bytes) of each initializer kept in an
    external data file; the length from its shape and type where the model does not record it."""
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data
    for t in model.graph.initializer:
        if uses_external_data(t):
            info = ExternalDataInfo(t)
            length = info.length or numel(t.dims) * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
            yield t, info.location, info.offset or 0, length


def _exporter_copies(raw: Mapping[str, tuple]) -> dict[str, tuple[str, ...]]:
    """Constants the TorchScript exporter made ("onnx::..." names) that hold another
    initializer's values, as they are or transposed -> that initializer's name.  A weight tied
    to an embedding (a language model's output projection) is exported as the embedding table
    and a folded copy of its transpose: one parameter, whose copy's name the framework does not
    know.  `raw`: name -> (dims, ONNX data type, buffer, offset, size of the raw data).  Only
    tensors of equal (or transposed) shape and type are compared, so other weights' values are
    never read; a constant-valued copy (zeros, ones) says nothing of where it came from and is
    left alone."""
    def values(name: str, np_type: Any, shape: tuple) -> np.ndarray:  # a view: pages are read when compared
        _, _, buf, offset, _ = raw[name]
        return np.frombuffer(buf, dtype=np_type, count=numel(shape), offset=offset).reshape(shape)

    def holds(a: np.ndarray, other: str, shape: tuple, flip: bool) -> bool:  # a is other's values (transposed)
        b = values(other, a.dtype, shape)
        b = b.T if flip else b
        # the first row decides for all but copies: many same-shape weights cost a row each
        return np.array_equal(a[0], b[0]) and np.array_equal(a, b) and not np.all(a == a.flat[0])

    by_shape: dict[tuple, list[str]] = {}
    for name, (dims, dtype, *_) in raw.items():
        if not name.startswith(EXPORTER_MADE_PREFIX):
            by_shape.setdefault((dims, dtype), []).append(name)
    copies: dict[str, tuple[str, ...]] = {}
    for name, (dims, dtype, _, _, size) in raw.items():
        if not _may_copy(name, dims):
            continue
        try:
            np_type = helper.tensor_dtype_to_np_dtype(dtype)
        except (KeyError, ValueError):
            continue
        if size != numel(dims) * np.dtype(np_type).itemsize or numel(dims) < 2:
            continue
        a = values(name, np_type, dims)
        source = next((other for shape, flip in _orientations(dims) for other in by_shape.get((shape, dtype), ())
                       if raw[other][4] == size and holds(a, other, shape, flip)), None)
        if source is not None:
            copies[name] = (source,)
    return copies


def _may_copy(name: str, dims: tuple) -> bool:
    """Whether an initializer may be an exporter-made copy of another (:func:`_exporter_copies`)."""
    return name.startswith(EXPORTER_MADE_PREFIX) and len(dims) <= 2


def _orientations(dims: tuple) -> list[tuple[tuple, bool]]:
    """The shapes of the weights a copy of these dims may hold, and whether transposed."""
    return [(dims, False)] + ([(dims[::-1], True)] if len(dims) == 2 else [])


def _model_copies(model: onnx.ModelProto) -> dict[str, tuple[str, ...]]:
    """_exporter_copies of a model in memory (its initializers' raw data).  Only the raw data of
    initializers a copy's shape and type could match, and of copies some such initializer may
    match, is read: each read copies the bytes (0.55 s for BERT-base's 438 MB when every
    initializer was read)."""
    inits = model.graph.initializer
    named = {(tuple(t.dims), t.data_type) for t in inits if not t.name.startswith(EXPORTER_MADE_PREFIX)}
    shapes = set()
    for t in inits:  # a copy and the named weights it may hold (a copy that none may match is not read)
        if _may_copy(t.name, tuple(t.dims)):
            matches = {(shape, t.data_type) for shape, _ in _orientations(tuple(t.dims))} & named
            if matches:
                shapes |= matches | {(tuple(t.dims), t.data_type)}
    raw = {}
    for t in inits:
        if (tuple(t.dims), t.data_type) in shapes:
            data = t.raw_data
            if data:
                raw[t.name] = (tuple(t.dims), t.data_type, data, 0, len(data))
    return _exporter_copies(raw)


def _drop_weight_data(model: onnx.ModelProto) -> None:
    """Free the values of large initializers stored in the model file: only their shapes are
    needed, and shape inference copies the whole model (several times over, for weights)."""
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL and numel(t.dims) > _MAX_CONST_ELEMENTS:
            for f in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                      "string_data"):
                t.ClearField(f)


def _check_external(model: onnx.ModelProto, base_dir: str, where: str) -> None:
    """Each externally stored weight must lie whole inside its data file (a truncated copy
    would otherwise go unnoticed, since weights are never read)."""
    sizes: dict[str, int] = {}
    for t, location, offset, length in _external_tensors(model):
        fpath = os.path.join(base_dir, location)
        if fpath not in sizes:
            if not os.path.isfile(fpath):
                raise ValueError(f"{where}: weight {t.name!r} is stored in {location!r}, which is missing "
                                 f"(expected beside the model in {base_dir})")
            sizes[fpath] = os.path.getsize(fpath)
        if offset + length > sizes[fpath]:
            raise ValueError(f"{where}: weight {t.name!r} needs bytes up to {offset + length} of {location!r}, which "
                             f"has only {sizes[fpath]} bytes (truncated copy?)")


def _load_small_external(model: onnx.ModelProto, base_dir: str) -> None:
    """Read the small external tensors (reshape targets, axes...) that shape inference needs;
    large weights stay on disk."""
    from onnx.external_data_helper import load_external_data_for_tensor
    for t, _, _, length in list(_external_tensors(model)):
        if numel(t.dims) <= _MAX_CONST_ELEMENTS:
            # onnx reads to the end of the file when no length is recorded, which is wrong
            # when the file holds more tensors: record the tensor's own size, as
            # _check_external assumes.
            if not any(e.key == "length" for e in t.external_data):
                t.external_data.add(key="length", value=str(length))
            load_external_data_for_tensor(t, base_dir)
            t.data_location = onnx.TensorProto.DEFAULT
            del t.external_data[:]


# Operators whose outputs are not a function of their inputs (never folded).
_NONDETERMINISTIC = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                               "Multinomial", "Bernoulli", "Dropout"})
_CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
_DEFAULT_DOMAINS = ("", "ai.onnx")


def _check_supported(model: onnx.ModelProto, where: str) -> None:
    """Refuse what no shape can be computed for: custom-domain operators and control flow."""
    for i, n in enumerate(model.graph.node):
        name = n.name or f"{n.op_type}_{i}"
        if n.domain not in _DEFAULT_DOMAINS:
            raise ValueError(f"{where}: node {name!r} is operator {n.op_type!r} of the custom domain {n.domain!r}; "
                             f"only standard ONNX operators can be imported (export without custom ops, or "
                             f"replace the custom op by standard ones)")
        if n.op_type in _CONTROL_FLOW:
            raise ValueError(f"{where}: node {name!r} is control flow ({n.op_type}); its shapes depend on run-time "
                             f"values. Export the model with the branch or loop unrolled (e.g. by tracing)")


# Operators changed attributes into inputs up to opset 13 (onnx docs/Changelog.md: Slice-10,
# Pad-11, Clip-11, Resize-11 and Upsample deprecated at 10, Squeeze-13, Unsqueeze-13, Split-13,
# ReduceSum-13); an older model is converted to opset 13, the form the rest of the import reads.
# (ReduceMean & co. took their axes as an input from 18: lowering reads either form.)
_MIN_OPSET = 13


def _normalize(model: onnx.ModelProto, where: str) -> None:
    """Bring a model of any IR version (3 on) and opset (7 on) to the form the import reads:
    initializers are weights, not inputs (IR 3 required listing them as graph inputs, which
    makes onnx's shape inference treat them as run-time values: onnx docs/IR.md, "Graphs");
    an opset below _MIN_OPSET is converted by onnx.version_converter, the maintained
    conversion of each operator's older form; declared shapes with dynamic dimensions on
    outputs and intermediate values are dropped, so inference recomputes them from the inputs."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    if any(vi.name in inits for vi in g.input):
        keep = [vi for vi in g.input if vi.name not in inits]
        del g.input[:]
        g.input.extend(keep)
    model.ir_version = max(model.ir_version, 4)  # from IR 4 an initializer need not be an input
    opset = _default_opset(model)
    if opset < _MIN_OPSET and any(o.domain in _DEFAULT_DOMAINS for o in model.opset_import):
        from onnx import version_converter
        try:
            converted = version_converter.convert_version(model, _MIN_OPSET)
        except Exception as e:  # the converter's message names the operator it has no adapter for
            msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            raise ValueError(f"{where}: opset {opset} cannot be converted to opset {_MIN_OPSET} by "
                             f"onnx.version_converter ({msg}); export the model with opset >= {_MIN_OPSET}") from None
        model.CopyFrom(converted)
    _forget_dynamic_shapes(model.graph)


def _forget_dynamic_shapes(g: onnx.GraphProto) -> None:
    """Drop the declared shape of each graph output and value_info that has a dimension that is
    not a fixed size (a name, -1 or none): inference computes it from the fixed inputs, and a
    declared -1 would otherwise stay as the tensor's shape."""
    def dynamic(vi: onnx.ValueInfoProto) -> bool:
        dims = _dims(vi.type)
        return dims is not None and not all(isinstance(d, int) for d in dims)
    for vi in g.output:
        if dynamic(vi):
            vi.type.tensor_type.ClearField("shape")
    kept = [vi for vi in g.value_info if not dynamic(vi)]
    if len(kept) != len(g.value_info):
        del g.value_info[:]
        g.value_info.extend(kept)


# Operators whose output size is set by input values, not input sizes: they are folded only
# when inference already knows their (small) output shape.
_VALUE_SHAPED = frozenset({"ConstantOfShape", "Expand", "Tile", "Range", "Pad", "Resize", "Upsample", "OneHot",
                           "Reshape", "Slice", "CenterCropPad", "NonZero"})


def _default_opset(model: onnx.ModelProto) -> int:
    """The model's version of the default (ai.onnx) operator set."""
    return next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), 17)


def _infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx's shape inference, with data propagation (which folds the Shape -> ... -> Reshape
    chains of exported models) only when the model's 1-D tensors stay within a budget: it
    keeps ~150 bytes per element of them, and 2^31 elements exhaust any memory (found by
    fuzzing)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    if _vector_elements(inferred.graph) <= _MAX_VECTOR_ELEMENTS:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    return inferred


def _exporter_provenance(model: onnx.ModelProto) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...] | None]:
    """What the exporter left of the framework's parameters: constants it folded -> the names
    they were computed from (``folded_from`` metadata of value infos and initializers), and the
    parameters of torch.export's graph signature (None when the file has none).  onnx < 1.16
    has no metadata_props on graphs, values and tensors: nothing is read then."""
    folded: dict[str, tuple[str, ...]] = {}
    g = model.graph
    for item in list(g.value_info) + list(g.initializer) + list(g.input):
        for p in getattr(item, "metadata_props", ()):
            if p.key != _FOLDED_FROM_KEY or len(p.value) > _MAX_METADATA_CHARS:
                continue
            try:  # a Python list literal of names, e.g. "['fc.weight']"
                names = ast.literal_eval(p.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
                folded[item.name] = tuple(names)
    declared = None
    for p in getattr(g, "metadata_props", ()):
        if p.key == _SIGNATURE_KEY and len(p.value) <= _MAX_METADATA_CHARS:
            # one line per input: "p_fc_weight: PARAMETER target='fc.weight'"
            declared = tuple(re.findall(r"^\s*\S+: PARAMETER target='([^'\n]*)'", p.value, flags=re.M))
    return folded, declared


def _fold_constants(model: onnx.ModelProto, folded_from: dict[str, tuple[str, ...]]) -> onnx.ModelProto:
    """Constant folding with data-propagating shape inference, until nothing changes.

    onnx's own inference (data_prop=True) propagates Shape values through a few ops only;
    exporters compute shapes through ConstantOfShape/Equal/Where/Expand and friends (HF BERT's
    token-type buffer), which leaves dimensions symbolic downstream.  Every small node whose
    inputs are constants, or a Shape/Size of a tensor whose shape is now known, is evaluated by
    onnx's reference implementation and replaced by an initializer; then inference runs again.
    Weights are not touched (their values are neither needed nor loaded); small ones are, and
    each folded constant's sources are added to `folded_from` (the tensors it was computed
    from; only the data input of a relayout) so that a parameter keeps its name."""
    from onnx.reference import ReferenceEvaluator
    opset = _default_opset(model)
    weights = {t.name for t in model.graph.initializer}  # sources worth naming: the file's own initializers
    for _ in range(8):
        inferred = _infer_shapes(model)
        shapes = {vi.name: _dims(vi.type) for vi in list(inferred.graph.input) + list(inferred.graph.value_info)}
        values: dict[str, np.ndarray] = {}
        for t in model.graph.initializer:
            if t.data_location != onnx.TensorProto.EXTERNAL and numel(t.dims) <= _MAX_CONST_ELEMENTS:
                values[t.name] = numpy_helper.to_array(t)
        folded: dict[int, list[np.ndarray]] = {}
        for i, n in enumerate(model.graph.node):
            if n.op_type in _NONDETERMINISTIC or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                                     for a in n.attribute):
                continue
            outs: list[np.ndarray] | None = None
            if n.op_type in _SHAPE_OPS and n.input[0] not in values:
                dims = shapes.get(n.input[0])
                if dims is not None and all(isinstance(d, int) for d in dims):
                    a = {x.name: x.i for x in n.attribute}
                    full = np.array(dims, dtype=np.int64)
                    outs = [np.array(numel(dims), dtype=np.int64)] if n.op_type == "Size" else \
                        [full[a.get("start", 0):a["end"] if "end" in a else None]]
            elif all(not x or x in values for x in n.input):
                known = shapes.get(n.output[0]) if n.output else None
                if known and all(isinstance(d, int) for d in known):
                    if numel(known) > _MAX_CONST_ELEMENTS:
                        continue  # a large constant (a broadcast mask...): its shape is all that is needed
                elif n.op_type in _VALUE_SHAPED:
                    continue  # its size comes from input values: evaluating it could allocate anything
                try:
                    ev = ReferenceEvaluator(n, opsets={"": opset})
                    outs = [np.asarray(v) for v in ev.run(None, {x: values[x] for x in n.input if x})]
                except Exception:  # an op the reference cannot run: its shape comes from inference
                    outs = None
            if outs is None or any(o.size > _MAX_CONST_ELEMENTS for o in outs):
                continue
            for name, v in zip(n.output, outs):
                if name:
                    values[name] = v
            if n.op_type != "Constant":
                folded[i] = outs
        if not folded:
            return inferred
        nodes = [n for i, n in enumerate(model.graph.node) if i not in folded]
        for i, outs in folded.items():
            n = model.graph.node[i]
            if n.op_type != "Identity":  # an Identity output is a tensor of its own (RELAYOUT_OPS)
                ins = n.input[:1] if n.op_type in RELAYOUT_OPS else n.input
                sources = tuple(dict.fromkeys(s for x in ins if x for s in folded_from.get(x, (x,) if x in weights
                                                                                             else ())))
                for name in n.output:
                    if name and sources:
                        folded_from[name] = sources[:_MAX_SOURCES]
            for name, v in zip(n.output, outs):
                if name:
                    model.graph.initializer.append(numpy_helper.from_array(v, name))
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return onnx.shape_inference.infer_shapes(model, data_prop=True)



def _strict_node_error(g: onnx.GraphProto, n: onnx.NodeProto, opset: int) -> str | None:
    """onnx's strict shape inference on node `n` alone (its inputs as the inferred graph has
    them): the message if their shapes are incompatible (a MatMul of [.., 32] by [16, ..]),
    else None.  Non-strict inference, which the import runs, only leaves the output unknown."""
    infos = {vi.name: vi for vi in list(g.input) + list(g.value_info)}
    for t in g.initializer:
        infos.setdefault(t.name, helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    try:
        m = helper.make_model(helper.make_graph([n], "node", [infos[x] for x in n.input if x in infos], []),
                              opset_imports=[helper.make_opsetid("", opset)])
        onnx.shape_inference.infer_shapes(m, strict_mode=True)
    except onnx.shape_inference.InferenceError as e:
        return str(e).strip().splitlines()[-1].rsplit("] ", 1)[-1]  # onnx nests "[ShapeInferenceError] ..." twice
    except Exception:
        return None
    return None


def _check_shapes(g: onnx.GraphProto, tensors: dict[str, Tensor], where: str, opset: int) -> None:
    """Every node's outputs must have a static shape: name the first node that has none,
    and the first of its inputs that lost its shape (or why its inputs' shapes clash)."""
    used = {x for n in g.node for x in n.input} | {o.name for o in g.output}
    for i, n in enumerate(g.node):
        for j, o in enumerate(n.output):
            if not o or (j > 0 and o not in used):  # an unused optional output (MaxPool indices...)
                continue
            if tensors.get(o) is not None and tensors[o].shape is not None:
                continue
            lost = next((x for x in n.input if x and (x not in tensors or tensors[x].shape is None)), None)
            name = n.name or f"{n.op_type}_{i}"
            clash = None if lost is not None else _strict_node_error(g, n, opset)
            if clash is not None:
                shapes = ", ".join(f"{x} {list(tensors[x].shape)}" for x in n.input if x)
                raise ValueError(f"{where}: node {name!r} ({n.op_type}): its inputs' shapes do not fit together: "
                                 f"{clash} ({shapes})")
            if lost is not None:
                why = f"its input {lost!r} has no static shape"
            else:  # every model input is fixed by now (_fix_inputs): values, not shapes, are missing
                runtime = next((x for x in n.input[1:] if x and not (x in tensors and tensors[x].const)), None)
                why = ("its output shape depends on values known only at run time" +
                       (f" (those of {runtime!r})" if runtime else " (a data-dependent operator)") +
                       "; every model input has a fixed shape, and --input_shape fixes shapes, not values")
            raise ValueError(f"{where}: the shape of {o!r}, output of node {name!r} ({n.op_type}), cannot be "
                             f"computed: {why}. Export the model with static shapes, or give every model input "
                             f"a fixed shape with --input_shape \"name:d1,d2,...;...\"")


def _vector_elements(g: onnx.GraphProto) -> int:
    """Elements of the 1-D tensors of a graph that are not initializers (those are not propagated)."""
    inits = {t.name for t in g.initializer}
    total = 0
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.name not in inits and len(dims) == 1 and dims[0].HasField("dim_value"):
            total += max(dims[0].dim_value, 0)
    return total


def _check_nodes(g: onnx.GraphProto, where: str, opset: int) -> None:
    """Refuse what ONNX shape inference lets through (found by fuzzing): a string field holding
    invalid UTF-8, which protobuf hands out as bytes, nodes with fewer inputs or outputs than
    their operator's schema requires, attributes of another type than the schema's."""
    for i, n in enumerate(g.node):
        for s in [n.op_type, n.name, n.domain, *n.input, *n.output, *(a.name for a in n.attribute)]:
            if not isinstance(s, str):
                raise ValueError(f"{where}: not a readable ONNX model (node {i} has a name that is not UTF-8: {s!r})")
        if n.domain in ("", "ai.onnx") and onnx.defs.has(n.op_type):
            try:  # the operator as the model's opset defines it (Unsqueeze took its axes as an attribute before 13)
                schema = onnx.defs.get_schema(n.op_type, opset)
            except onnx.defs.SchemaError:  # not in this opset yet: inference reports it
                continue
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
               input_shape: str | Mapping[str, Any] | None = None, *,
               llm_kinds: Iterable[str] | None = None) -> Graph:
    """Load an ONNX model (path or ModelProto), fix its inputs and infer all shapes.

    LLM blocks (RMSNorm, RoPE, attention, SwiGLU, MoE routing, quantised matmuls) become
    CANN's fused operators of `llm_kinds` (graph/llm_patterns.py); None: those the cost model
    has, so a block whose kernel it lacks stays decomposed and modelled.

    Raises ValueError (unreadable/malformed model, bad or missing input shapes) or KeyError
    (an --input_shape name that is not a model input), each naming the model."""
    if isinstance(model_or_path, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(model_or_path)
        path, where = None, f"model {model.graph.name or '<unnamed>'}"
        copies = _model_copies(model)
    else:
        path = os.fspath(model_or_path)
        where = path
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: model file not found")
        if os.path.getsize(path) > _MAX_MODEL_BYTES:
            raise ValueError(f"{path}: {os.path.getsize(path)} bytes, more than the 2 GiB an ONNX protobuf can hold "
                             f"(larger weights belong in external data files)")
        try:
            model, copies = _read_structure(path)
        except Exception as e:  # protobuf DecodeError and friends
            raise ValueError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from None
        if not model.graph.node:
            raise ValueError(f"{path}: not a readable ONNX model (no graph nodes; truncated or not ONNX?)")
        base_dir = os.path.dirname(os.path.abspath(path))
        _check_external(model, base_dir, where)
        _load_small_external(model, base_dir)
    _drop_weight_data(model)
    if len(model.graph.node) > _MAX_NODES:
        raise ValueError(f"{where}: {len(model.graph.node)} nodes, more than the limit of {_MAX_NODES}")
    shapes = parse_input_shape(input_shape)
    _check_supported(model, where)  # first: control flow and custom domains get their own message
    _check_nodes(model.graph, where, _default_opset(model))
    folded_from, declared = _exporter_provenance(model)
    _normalize(model, where)
    _fix_inputs(model, shapes, where)
    for name, sources in copies.items():  # the exporter's own record first
        folded_from.setdefault(name, sources)
    try:
        inferred = _fold_constants(model, folded_from)
    except Exception as e:
        raise ValueError(f"{where}: ONNX shape inference failed ({e})") from None
    g = inferred.graph

    tensors: dict[str, Tensor] = {}
    const_values: dict[str, np.ndarray] = {}
    for t in g.initializer:
        tensors[t.name] = Tensor(t.name, tuple(int(d) for d in t.dims), _dtype_name(t.data_type), const=True)
        if numel(t.dims) <= _MAX_CONST_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL:
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
    _check_shapes(g, tensors, where, _default_opset(inferred))
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
    graph = Graph(g.name or (os.path.splitext(os.path.basename(path))[0] if path else "model"), path, nodes,
                  tensors, inputs, [o.name for o in g.output], const_values, folded_from, declared)
    if llm_kinds is None:
        llm_kinds = LLM_KINDS & set(supported_ops())
    return fuse_llm_patterns(graph, llm_kinds)


