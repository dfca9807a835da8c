"""The graph IR every front-end produces and the partitioner consumes.

It knows nothing of ONNX or of the cost model: a graph is nodes in topological order
(operator types use ONNX's vocabulary, the lingua franca of exporters) and the static
shape of every tensor.  A new front-end (a framework's own graph, a compiler's IR) only
has to build a :class:`Graph`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Tensor", "Node", "Graph", "numel", "RELAYOUT_OPS", "EXPORTER_MADE_PREFIX"]

# Operators whose output holds their first input's values, re-laid out or converted: a folded
# Transpose of a Linear weight is that weight.  Not Identity: TorchScript writes a parameter
# whose values equal another's as Identity(other), under its own name.
RELAYOUT_OPS = frozenset({"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Cast"})
# The TorchScript exporter names a constant it computes (a folded weight transpose, an embedding
# looked up at constant positions) "onnx::<consumer op>_<n>": not a name the framework knows.
EXPORTER_MADE_PREFIX = "onnx::"


def numel(shape: Any) -> int:
    """Elements of a shape (1 for a scalar or an empty/absent shape).  Exact Python
    integers: a hostile shape must not wrap around int64 and pass a size check."""
    return math.prod(int(d) for d in shape) if shape else 1


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...] | None  # None: unknown after inference
    dtype: str                     # numpy dtype name, "" when unknown
    const: bool = False            # initializer, Constant output or folded


@dataclass
class Node:
    index: int
    name: str
    op_type: str
    inputs: list[str]   # "" for an omitted optional input
    outputs: list[str]
    attrs: dict[str, Any]


@dataclass
class Graph:
    """An imported model: nodes in topological order and every tensor's static shape."""
    name: str
    path: str | None
    nodes: list[Node]
    tensors: dict[str, Tensor]
    inputs: dict[str, tuple[int, ...]]       # graph inputs that are not initializers
    outputs: list[str]
    const_values: dict[str, np.ndarray] = field(default_factory=dict)
    # What the front-end knows of the framework's trainable parameters (gradient-split tuning
    # names its gradients with it).  folded_from: a constant the exporter or the loader folded
    # (a Linear weight's transpose, an embedding looked up at constant positions) -> the named
    # tensors it was computed from.  declared_params: the parameters' framework names when the
    # file lists them all (torch.export's graph signature), else None.
    folded_from: dict[str, tuple[str, ...]] = field(default_factory=dict)
    declared_params: tuple[str, ...] | None = None
    # A node the import fused from several (an LLM block run as one CANN kernel, graph/llm_patterns.py)
    # -> the names of the nodes it stands for.
    fused: dict[str, list[str]] = field(default_factory=dict)

    def shape(self, tensor: str) -> tuple[int, ...] | None:
        t = self.tensors.get(tensor)
        return None if t is None else t.shape

    def is_const(self, tensor: str) -> bool:
        t = self.tensors.get(tensor)
        return t is not None and t.const

    def largest_tensor(self) -> tuple[Tensor, int] | None:
        """The tensor of known shape with the most bytes, and its size (an unknown dtype
        counts one byte per element); None when no shape is known."""
        best: tuple[Tensor, int] | None = None
        for t in self.tensors.values():
            if t.shape is None:
                continue
            size = numel(t.shape) * (np.dtype(t.dtype).itemsize if t.dtype else 1)
            if best is None or size > best[1]:
                best = (t, size)
        return best
