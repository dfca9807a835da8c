"""The rewriting machinery the LLM pattern matchers share (:mod:`.llm_patterns`, :mod:`.llm_moe`):
the graph's producers and consumers, fused nodes added in place of the nodes they stand for,
and the sweep of nodes nobody reads any more."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .ir import Graph, Node, Tensor

__all__ = ["LLM_KINDS", "Rewrite", "only", "topological"]

# The kinds this module emits (CANN operator names).
LLM_KINDS = frozenset({"RmsNorm", "AddRmsNorm", "ApplyRotaryPosEmb", "FusedInferAttentionScore", "SwiGlu",
                       "MoeGatingTopKSoftmax", "MoeInitRouting", "GroupedMatmul", "MoeFinalizeRouting",
                       "WeightQuantBatchMatmul", "QuantBatchMatmulV3", "DynamicQuant"})


class Rewrite:
    """The graph being rewritten: consumer and producer maps, the fused nodes added so far."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes = list(graph.nodes)
        self.fused: dict[str, list[str]] = {}   # fused node name -> names of the nodes it stands for
        self.covered: set[int] = set()          # ids of nodes a fused node stands for: swept when unread
        self.refresh()

    def refresh(self) -> None:
        self.producer: dict[str, Node] = {o: n for n in self.nodes for o in n.outputs if o}
        self.consumers: dict[str, list[Node]] = {}
        for n in self.nodes:
            for t in dict.fromkeys(n.inputs):
                if t:
                    self.consumers.setdefault(t, []).append(n)

    # ---- reading the graph
    def shape(self, t: str) -> tuple[int, ...] | None:
        return self.graph.shape(t) if t else None

    def const(self, t: str) -> bool:
        return bool(t) and self.graph.is_const(t)

    def param(self, t: str) -> bool:
        """Is `t` a parameter: a constant, or a graph input nothing computes (structure-only
        models such as the zoo's take their weights as inputs)?"""
        return self.const(t) or (bool(t) and t in self.graph.inputs and t not in self.producer)

    def scalar(self, t: str) -> float | None:
        """The value of a constant with one element, else None."""
        v = self.graph.const_values.get(t)
        if v is None or np.asarray(v).size != 1:
            return None
        return float(np.asarray(v).reshape(-1)[0])

    def made_by(self, t: str, *ops: str) -> Node | None:
        n = self.producer.get(t)
        return n if n is not None and n.op_type in ops else None

    def users(self, t: str) -> list[Node]:
        return self.consumers.get(t, [])

    def source(self, t: str) -> str:
        """`t` with same-dtype Casts and Identities undone (the TorchScript exporter's casts
        around RMSNorm are Casts to the dtype the tensor already has)."""
        while (n := self.made_by(t, "Cast", "Identity")) is not None and self.same_dtype(n):
            t = n.inputs[0]
        return t

    def same_dtype(self, n: Node) -> bool:
        """Is `n` (a Cast) to the dtype its input already has?"""
        a, b = self.graph.tensors.get(n.inputs[0]), self.graph.tensors.get(n.outputs[0])
        return a is not None and b is not None and a.dtype == b.dtype and a.dtype != ""

    def other(self, n: Node, t: str) -> str:
        """The other operand of a binary node that reads `t`."""
        return n.inputs[1] if n.inputs[0] == t else n.inputs[0]

    # ---- changing it
    def new_tensor(self, name: str, shape: Iterable[int], dtype: str) -> str:
        if name in self.graph.tensors:
            raise ValueError(f"internal: tensor {name!r} exists")
        self.graph.tensors[name] = Tensor(name, tuple(int(d) for d in shape), dtype)
        return name

    def add(self, kind: str, anchor: Node, inputs: list[str], outputs: list[str], attrs: dict[str, Any],
            covers: Iterable[Node], suffix: str = "") -> Node:
        """Add a fused node of `kind` producing `outputs`; the nodes of `covers` that produced them
        are removed now, the others when nothing reads them any more (`sweep`)."""
        name = f"{anchor.name}/{kind}{suffix}"
        node = Node(anchor.index, name, kind, inputs, outputs, attrs)
        covers = list(covers)
        out = set(outputs)
        self._put(node, [n for n in covers if out & set(n.outputs)])
        if covers:  # a node added beside others (MoE's intermediate kernels, a cache Concat) stands for none
            self.fused[name] = [n.name for n in covers]
        self.covered.update(id(n) for n in covers)
        return node

    def _put(self, node: Node, gone: list[Node]) -> None:
        """Add `node`, remove `gone`; the maps are updated in place (a full refresh per fused node
        is quadratic in the graph)."""
        for n in gone:
            for o in n.outputs:
                if self.producer.get(o) is n:
                    del self.producer[o]
            for t in dict.fromkeys(n.inputs):
                if t in self.consumers:
                    self.consumers[t] = [u for u in self.consumers[t] if u is not n]
        if gone:
            ids = {id(n) for n in gone}
            self.nodes = [n for n in self.nodes if id(n) not in ids]
        self.nodes.append(node)
        self.producer.update((o, node) for o in node.outputs if o)
        for t in dict.fromkeys(node.inputs):
            if t:
                self.consumers.setdefault(t, []).append(node)

    def view(self, anchor: Node, x: str, shape: tuple[int, ...], name: str, replacing: Node | None = None) -> str:
        """A Reshape of `x` to `shape` (a view: it launches nothing): a new tensor `name`, or the
        output of the node it is `replacing`."""
        target = self.new_tensor(f"{name}/shape", (len(shape),), "int64")
        self.graph.tensors[target].const = True
        self.graph.const_values[target] = np.asarray(shape, np.int64)
        if replacing is None:
            out = self.new_tensor(name, shape, self.graph.tensors[x].dtype)
            self.graph.tensors[out].const = self.const(x)
        else:
            out = replacing.outputs[0]
        self._put(Node(anchor.index, name, "Reshape", [x, target], [out], {}), [replacing] if replacing else [])
        return out

    def sweep(self) -> None:
        """Drop nodes whose outputs are read by no node and are no graph output, then put the
        nodes back in topological order (stable: the original order where it is one)."""
        keep = set(self.graph.outputs)
        while True:
            dead = [n for n in self.nodes if id(n) in self.covered and n.outputs
                    and not any(o and (o in keep or self.consumers.get(o)) for o in n.outputs)]
            if not dead:
                break
            ids = {id(n) for n in dead}
            self.nodes = [n for n in self.nodes if id(n) not in ids]
            self.refresh()
        self.nodes = topological(self.nodes, self.producer)


def topological(nodes: list[Node], producer: dict[str, Node]) -> list[Node]:
    """Stable topological order: the nodes by (original index, position), each after the producers
    of its inputs (a fused node sits at its anchor's index, which may precede an input's producer)."""
    pos = {id(n): (n.index, i) for i, n in enumerate(nodes)}
    done: set[int] = set()
    entered: set[int] = set()  # expanded once: a cycle (a malformed file) cannot loop forever
    out: list[Node] = []
    for first in sorted(nodes, key=lambda n: pos[id(n)]):
        stack = [(first, False)]  # depth-first, without recursion: graphs have thousands of nodes
        while stack:
            m, ready = stack.pop()
            if id(m) in done:
                continue
            if ready:
                done.add(id(m))
                out.append(m)
                continue
            if id(m) in entered:
                continue
            entered.add(id(m))
            stack.append((m, True))
            stack.extend((p, False) for t in reversed(m.inputs)
                         if (p := producer.get(t)) is not None and id(p) not in done and p is not m)
    return out


def only(rw: Rewrite, t: str, op: str) -> Node | None:
    """The single reader of `t`, if it is an `op` node."""
    users = rw.users(t)
    return users[0] if len(users) == 1 and users[0].op_type == op else None


