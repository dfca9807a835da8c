"""The graph pipeline: the IR (:mod:`.ir`), front-ends (:mod:`.onnx`), lowering of nodes
to cost-model operators (:mod:`.lowering`) and the partition into kernels and tasks
(:mod:`.partition`)."""
from __future__ import annotations

from typing import Any


def load_graph(model: Any, input_shape: Any = None, **options: Any) -> Any:
    """:func:`aoe_native.graph.onnx.load_graph`, importing the ONNX front-end on first use:
    ``onnx`` takes about 0.1 s to import, which plain ``tune()`` users never need."""
    from .onnx import load_graph as load
    return load(model, input_shape, **options)
