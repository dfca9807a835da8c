"""Gradient timelines predicted from a model: which tensors are trainable parameters, the
backward kernels of each node, and when each gradient becomes ready when those kernels run
one after another, each tuned through the evaluator (:mod:`.evaluator`) as operator tuning
tunes its tasks, so a prediction runs on the cost model, on measurements or on Ray alike.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ascend.platforms import DEFAULT_SOC, Platform, check_compute_dtype
from ..graph import load_graph
from ..graph.ir import EXPORTER_MADE_PREFIX, RELAYOUT_OPS, Graph, Node
from ..graph.lowering import VIEW_OPS, UnsupportedNode, map_node
from ..gradients.timeline import (Gradient, GradientNameWarning, PredictedTimeline, TimelineError,
                                  describe_unmatched)
from .evaluator import CostModelEvaluator, TaskEvaluator

__all__ = ["predict_timeline", "BackwardKernel"]


@dataclass
class BackwardKernel:
    """One backward kernel, as the evaluator reads a task."""
    op_type: str
    inputs: list[list[int]]
    dtype: str
    attrs: dict[str, Any] = field(default_factory=dict)


# Which inputs of a node are trainable parameters when the file does not list them: weights and
# biases of convolutions and GEMMs, scale and shift of normalisations (not BN's running
# statistics), embedding tables (Gather's data), and rank-1 (bias) or constant operands of
# element-wise Add / Mul.
_PARAM_SLOTS = {"Conv": (1, 2), "Gemm": (1, 2), "MatMul": (1,), "BatchNormalization": (1, 2),
                "LayerNormalization": (1, 2), "Add": (0, 1), "Mul": (0, 1), "Gather": (0,),
                # the LLM kernels the import fuses (graph/llm_patterns.py): norm weights, expert weights
                "RmsNorm": (1,), "AddRmsNorm": (2,), "GroupedMatmul": (1, 2)}
# FlashAttention's backward runs five matmuls (Q K^T recomputed, dP = dO V^T, dV = P^T dO,
# dQ = dS K, dK = dS^T Q) against the forward's two: 2.5x its FLOPs (Dao 2023, FlashAttention-2,
# arXiv:2307.08691, section 3.1), fused as CANN's FlashAttentionScoreGrad is.  The cost model has
# no backward attention kernel, so it is costed as the forward kernel twice plus once on half the
# query (the same tiles and memory traffic per FLOP).

def _is_float(dtype: str) -> bool:
    return not dtype or "float" in dtype  # unknown counts as float, as for the bytes


def _tensor_bytes(graph: Graph, name: str) -> int | None:
    t = graph.tensors.get(name)
    if t is None or t.shape is None:
        return None
    return int(math.prod(t.shape)) * (np.dtype(t.dtype).itemsize if t.dtype else 4)


def _weight_root(tensor: str, producer: dict[str, Node]) -> str | None:
    """The tensor a node input holds the values of: back through RELAYOUT_OPS (an exported
    Linear is MatMul(x, Transpose(weight)): the gradient is the weight's) to a tensor no node
    produces, or an Identity of one (a parameter of its own, see RELAYOUT_OPS); None when it is
    computed."""
    while tensor in producer:
        node = producer[tensor]
        if node.op_type == "Identity" and node.inputs and node.inputs[0] not in producer:
            return tensor
        if node.op_type not in RELAYOUT_OPS or not node.inputs:
            return None
        tensor = node.inputs[0]
    return tensor


def _slot_holds_parameter(graph: Graph, node: Node, root: str) -> bool:
    """Whether ``root`` (in one of the node's _PARAM_SLOTS) looks like a parameter when the
    file does not list them."""
    t = graph.tensors.get(root)
    if t is None or t.shape is None or math.prod(t.shape) < 2 or not _is_float(t.dtype):
        return False  # unknown, a scalar hyper-parameter, or integer data
    if node.op_type in ("Add", "Mul"):
        return t.const or len(t.shape) == 1  # not a graph input such as a mask
    if node.op_type == "Gather":
        return len(t.shape) == 2  # an embedding table, not a token picked from activations
    return True


def _parameters(graph: Graph) -> tuple[dict[str, tuple[int, int]], set[str], dict[str, str]]:
    """The model's trainable parameters: name -> (bytes, index of its first consumer); the node
    inputs that hold one (their backward has a weight gradient); and name -> why, for gradients
    whose framework name the file does not hold and for framework parameters it lost.

    A file that lists its parameters (``graph.declared_params``) is taken at its word: every
    node input whose values are a declared parameter's, directly, re-laid out or folded by
    the exporter, is a use of it.  Otherwise the inputs in _PARAM_SLOTS are.  A constant the
    exporter or the loader folded from one tensor (a weight's transpose) is that tensor, under
    its name; folded from several, each parameter among them is used there.  A parameter counts
    once however many nodes use it (a tied embedding and output projection)."""
    producer = {o: n for n in graph.nodes for o in n.outputs if o}
    declared = None if graph.declared_params is None else set(graph.declared_params)
    found: dict[str, tuple[int, int]] = {}
    weight_inputs: set[str] = set()
    unmatched: dict[str, str] = {}
    lost: dict[str, str] = {}  # parameters seen only folded into a constant of unknown size

    def loader_weight(name: str) -> bool:  # a source the loader folded from, that the file holds
        t = graph.tensors.get(name)
        return (t is not None and name not in producer and t.shape is not None and math.prod(t.shape) >= 2
                and _is_float(t.dtype))

    for node in graph.nodes:
        slots = range(len(node.inputs)) if declared is not None else _PARAM_SLOTS.get(node.op_type, ())
        for slot in slots:
            x = node.inputs[slot] if slot < len(node.inputs) else ""
            root = _weight_root(x, producer) if x else None
            if root is None or (declared is None and not _slot_holds_parameter(graph, node, root)):
                continue
            sources = graph.folded_from.get(root)
            if sources is None:
                params = [root] if declared is None or root in declared else []
            elif declared is not None:
                params = [p for p in sources if p in declared]
            elif len(sources) == 1:
                params = list(sources)  # one tensor re-laid out: that tensor
            else:
                params = [p for p in sources if loader_weight(p)]
                if not params:  # an exporter's fold of tensors the file does not hold
                    params = [root]
                    unmatched[root] = (f"a constant the exporter computed from {list(sources)[:5]}: the file "
                                       "does not say which parameter it holds")
            for p in params:
                nbytes = _tensor_bytes(graph, p)
                if nbytes is None and (sources is None or len(sources) == 1):
                    nbytes = _tensor_bytes(graph, root)  # the same values as the root
                if nbytes is None:
                    lost[p] = (f"the exporter folded it into the constant {root!r}, computed from it and other "
                               "values: the file holds neither the parameter nor its size")
                    continue
                weight_inputs.add(x)
                found[p] = (nbytes, min(found[p][1], node.index) if p in found else node.index)
                if p.startswith(EXPORTER_MADE_PREFIX):
                    unmatched[p] = ("a constant the TorchScript exporter computed from parameters (a Linear "
                                    "weight's transpose, a convolution weight with its BatchNorm folded in, an "
                                    "embedding looked up at constant positions): the file does not say which")
    unmatched.update((p, why) for p, why in lost.items() if p not in found)
    for p in graph.declared_params or ():
        if p not in found and p not in unmatched:
            unmatched[p] = ("no node of the file uses it" if p in graph.tensors else
                            "the file has no tensor for it: the exporter dropped it (unused by the forward pass), "
                            "folded it into another operator's weights (a BatchNorm into its convolution, in "
                            "eval mode) or kept one of several parameters of equal values (tied weights; "
                            "onnxscript's optimizer also merges e.g. freshly initialised LayerNorm weights)")
    return found, weight_inputs, unmatched


def _backward_kernels(graph: Graph, node: Node, produced: set[str], weights: set[str]
                      ) -> list[tuple[str, list[list[int]], dict]]:
    """The backward pass of one node as cost-model operators (the rule, documented in
    docs/architecture.md / README): a convolution's data gradient is a stride-1
    convolution of dY by the transposed weights with the forward's multiply-adds, its weight
    gradient the im2col GEMM [O/g, N·Ho·Wo] x [N·Ho·Wo, C/g·kh·kw]; a GEMM Y = X·W has
    dX = dY·Wᵀ and dW = Xᵀ·dY when W is a parameter (in ``weights``); a data gradient into a graph input is skipped (nothing asks
    for it); every other node costs twice its forward kernel (it reads dY and its saved
    input and writes dX: about two passes of a memory-bound op; attention and GroupedMatmul have
    their own, :func:`_attention_backward`, :func:`_grouped_matmul_backward`), and an element-wise node
    (or one the cost model does not cover) two element-wise passes over its output; views
    cost nothing."""
    op = node.op_type
    if op in VIEW_OPS:
        return []
    needs_dx = bool(node.inputs) and node.inputs[0] in produced
    out = graph.shape(node.outputs[0]) if node.outputs else None
    two_passes = [("Mul", [list(out), list(out)], {})] * 2 if out else []
    try:
        spec = map_node(graph, node)
    except UnsupportedNode:
        return two_passes
    if spec.kind == "elementwise":
        return two_passes
    if op == "Conv":
        (n, c, _, _), (o, cg, kh, kw) = spec.inputs[0], spec.inputs[1]
        g = spec.attrs["group"]
        ho, wo = graph.shape(node.outputs[0])[2:]
        dil = spec.attrs["dilations"]
        ph, pw = dil[0] * (kh - 1), dil[1] * (kw - 1)
        ks = []
        if needs_dx:
            ks.append(("Conv", [[n, o, ho, wo], [c, o // g, kh, kw]],
                       {"strides": [1, 1], "dilations": dil, "group": g,
                        "pads": [ph // 2, pw // 2, ph - ph // 2, pw - pw // 2]}))
        m, k = n * ho * wo, cg * kh * kw
        ks.append(("MatMul", [[o, m], [m, k]], {}) if g == 1 else ("BatchMatMul", [[g, o // g, m], [g, m, k]], {}))
        return ks
    if op == "FusedInferAttentionScore":
        return _attention_backward(spec.inputs, spec.attrs)
    if op == "GroupedMatmul":
        return _grouped_matmul_backward(spec.inputs, spec.attrs, needs_dx, node.inputs[1] in weights)
    if op in ("Gemm", "MatMul") and spec.op_type in ("Gemm", "MatMul") and node.inputs[1] in weights:
        x, wt = spec.inputs[0], spec.inputs[1]
        m, k = (x[1], x[0]) if spec.attrs.get("transA") else (x[0], x[1])
        nn = wt[0] if spec.attrs.get("transB") else wt[1]
        ks = [("MatMul", [[m, nn], [nn, k]], {})] if needs_dx else []
        return ks + [("MatMul", [[k, m], [m, nn]], {})]
    return [(spec.op_type, spec.inputs, spec.attrs)] * 2


def _attention_backward(inputs: list[list[int]], attrs: dict) -> list[tuple[str, list[list[int]], dict]]:
    """FlashAttentionScoreGrad as 2.5 forward kernels (see _PARAM_SLOTS' note): the forward twice and
    once on half the query (half the key/value for a single query position, as a decode's): a causal
    query may not outnumber its keys."""
    axis = {"BSND": 1, "BSH": 1, "TND": 0}.get(attrs.get("input_layout", "BNSD"), 2)
    half = [list(s) for s in inputs]
    mask = half[3] if len(half) > 3 and half[3] else None
    if half[0][axis] > 1:
        half[0][axis] //= 2
        if mask is not None and len(mask) >= 2:
            mask[-2] = half[0][axis]
    else:
        for i in (1, 2):
            half[i][axis] = max(1, half[i][axis] // 2)
        if mask is not None:
            mask[-1] = half[1][axis]
    forward = ("FusedInferAttentionScore", inputs, attrs)
    return [forward, forward, ("FusedInferAttentionScore", half, attrs)]


def _grouped_matmul_backward(inputs: list[list[int]], attrs: dict, needs_dx: bool, weight_grad: bool
                             ) -> list[tuple[str, list[list[int]], dict]]:
    """Y_e = X_e W_e over the groups: dX_e = dY_e W_e^T is a GroupedMatmul of dY with the transposed
    weights; dW_e = X_e^T dY_e a BatchMatMul over the experts of the (even, as the forward assumes)
    group size."""
    (m, k), w = inputs[0], inputs[1]
    e = w[0]
    n = w[1] if attrs.get("transpose_weight") else w[2]
    ks = []
    if needs_dx:
        dx_attrs = {**attrs, "transpose_weight": 0 if attrs.get("transpose_weight") else 1}
        ks.append(("GroupedMatmul", [[m, n], list(w), []], dx_attrs))
    if weight_grad:
        rows = max(1, m // e)
        ks.append(("BatchMatMul", [[e, k, rows], [e, rows, n]], {}))
    return ks


def predict_timeline(model: Any, soc_version: str | Platform = DEFAULT_SOC, *, input_shape: Any = None,
                     dtype: str = "float16", max_evals: int | None = None, seed: int = 0,
                     evaluator: TaskEvaluator | None = None) -> PredictedTimeline:
    """The gradients of an ONNX model (path, ModelProto or graph IR) and when each becomes
    ready, predicted through the evaluator (by default the Ascend cost model of `soc_version`).

    Backward walks the nodes in reverse topological order; each node's backward kernels
    (:func:`_backward_kernels`) are tuned by ``evaluator.tune`` as OPAT tunes them (the cost
    model's default budget policy unless ``max_evals`` is given; a measuring evaluator needs
    ``max_evals``) and run one after another, each plus the SoC's launch overhead.  A
    parameter's gradient is ready when the backward of its first consumer (in forward order) is
    done.  ``bytes`` = elements × the parameter's own element size (float32 when unknown).  Time
    0 is the start of backward.

    Parameters (:func:`_parameters`) carry their framework names where the file holds them
    (initializer names, the dynamo exporter's graph signature and ``folded_from`` records, the
    loader's own folds, a TorchScript-made copy of another weight's values); a tied weight counts
    once.  Gradients whose framework name the file
    does not hold (TorchScript's ``onnx::MatMul_N``) and framework parameters the file lost are
    listed in the result's ``unmatched`` and in a :class:`GradientNameWarning`."""
    if evaluator is None:
        evaluator = CostModelEvaluator(soc_version)
    if max_evals is None and evaluator.remember_rounds:
        raise ValueError(f"predict_timeline with a {evaluator.name} evaluator needs max_evals (the evaluations "
                         "per backward kernel)")
    plat = evaluator.platform
    check_compute_dtype(dtype, plat)
    graph = model if isinstance(model, Graph) else load_graph(model, input_shape)
    produced = {o for n in graph.nodes for o in n.outputs if o}
    params, weights, unmatched = _parameters(graph)
    if not params:
        raise TimelineError(f"model {graph.name}: no trainable parameter found"
                            + (f": {describe_unmatched(unmatched)}" if unmatched else ""))
    if unmatched:
        warnings.warn(f"model {graph.name}: the file does not hold the framework's name or size of "
                      f"{len(unmatched)} parameter(s), so a plan cannot be applied to them by name: "
                      f"{describe_unmatched(unmatched)}", GradientNameWarning, stacklevel=2)
    by_node: dict[int, list[str]] = {}
    for p, (_, idx) in params.items():
        by_node.setdefault(idx, []).append(p)
    cache: dict[str, float] = {}
    t = 0.0
    out: list[Gradient] = []
    for node in reversed(graph.nodes):
        for op, inputs, attrs in _backward_kernels(graph, node, produced, weights):
            key = repr((op, inputs, sorted(attrs.items())))
            if key not in cache:
                try:
                    cache[key] = evaluator.tune(BackwardKernel(op, inputs, dtype, attrs), max_evals, seed).time_us
                except (ValueError, KeyError) as e:
                    raise TimelineError(f"model {graph.name}: node {node.name} ({node.op_type}): backward "
                                        f"kernel {op} {inputs}: {e}") from None
            t += cache[key] + float(plat.launch_overhead_us)
        out.extend((p, params[p][0], t) for p in by_node.get(node.index, ()))
    return PredictedTimeline(out, unmatched)
