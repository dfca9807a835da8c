"""Partition an imported graph into the kernels a compiler would emit, and deduplicate
them into tuning tasks.

Fusion rules (greedy, in topological order, as ATC/TBE "UB fusion" does):
- a cube op (Conv, MatMul, Gemm, BatchMatMul) absorbs the element-wise ops that follow it
  (folded BatchNormalization, bias/residual Add, Relu, GELU/SiLU decompositions...) as its
  epilogue;
- consecutive element-wise ops form one vector kernel ("FusedElementwise");
- other vector ops (Softmax, LayerNorm, reductions, Transpose) are kernels of their own;
- view ops (Reshape, Flatten, ...) and constant-foldable nodes launch nothing.
An element-wise op joins a producer's kernel only if its output has the producer's size,
the merge creates no cycle between kernels, and the kernel's full-size buffers still fit
the Unified Buffer (see `max_fused_buffers`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable

import numpy as np

from .ir import Graph, Node, numel
from .lowering import NARY_OPS, VIEW_OPS, OpSpec, UnsupportedNode, map_node, unary_ops

__all__ = ["Kernel", "Task", "TaskIdentity", "Partition", "UnsupportedOp", "Coverage", "partition",
           "max_fused_buffers", "task_key", "node_work", "Atom", "Atoms", "atoms", "kernel_of", "kernel_formats",
           "make_partition", "LLM_PAIRS", "llm_pair", "kernel_dtype"]

# Ascend C double-buffers each queue (BUFFER_NUM = 2) and a transfer of >= 16 KB is needed
# for near-peak GM bandwidth (docs/ascend_model.md §2.3, [A] DoubleBuffer.md and
# 尽量一次搬运较大的数据块.md).  A fused kernel therefore keeps each full-size tensor in
# 2 x 16 KiB of UB at least; the number of such tensors is capped by UB / 32 KiB.
_BUFFER_NUM = 2
_MIN_TILE_BYTES = 16 * 1024


def max_fused_buffers(ub_bytes: int) -> int:
    """How many full-size tensors (inputs, output, one temporary) one fused kernel may hold."""
    return max(3, ub_bytes // (_BUFFER_NUM * _MIN_TILE_BYTES))


def task_key(op_type: str, inputs: Iterable[Iterable[int]], dtype: str, formats: Iterable[str],
             attrs: dict[str, Any]) -> str:
    """The identity of a tuning task and of a bank entry: op, shapes, dtypes, formats, attributes."""
    shapes = ",".join("x".join(str(int(d)) for d in s) for s in inputs)
    return (f"{op_type}({shapes})|{dtype}|{','.join(formats)}|"
            f"{json.dumps(attrs, sort_keys=True, separators=(',', ':'))}")


@dataclass
class Kernel:
    """One launched kernel: the graph nodes it covers and the operator it runs."""
    index: int
    nodes: list[str]           # node names, producer first
    onnx_types: list[str]
    op_type: str
    inputs: list[list[int]]
    attrs: dict[str, Any]
    formats: list[str]
    output_shape: list[int]
    task: int = -1             # index into Partition.tasks


@dataclass
class TaskIdentity:
    """What a tuning task is: its index in the partition, its key (:func:`task_key`) and the
    operator instance the key is made of."""
    index: int
    key: str
    op_type: str
    inputs: list[list[int]]
    dtype: str
    formats: list[str]
    attrs: dict[str, Any]


@dataclass
class Task(TaskIdentity):
    """A distinct (op, shapes, dtype, formats, attrs): tuned once, weighted by occurrences."""
    kernels: list[int] = field(default_factory=list)

    @property
    def occurrences(self) -> int:
        return len(self.kernels)


@dataclass
class UnsupportedOp:
    onnx_type: str
    count: int
    share: float       # fraction of the graph's nodes
    reason: str
    nodes: list[str]


@dataclass
class Coverage:
    """How much of a model the cost model sees: nodes, and the model's FLOPs and bytes
    (estimated per node from its shapes, :func:`node_work`) inside modelled kernels."""
    nodes: int                 # graph nodes
    modelled_nodes: int        # in a modelled kernel
    view_nodes: int            # views and folded constants: no kernel, nothing to model
    unmodelled_nodes: int
    flops: float
    modelled_flops: float
    bytes: float
    modelled_bytes: float
    top_unmodelled: list[dict[str, Any]] = field(default_factory=list)  # op_type, count, flops_share, bytes_share

    @property
    def flops_share(self) -> float:
        return self.modelled_flops / self.flops if self.flops > 0 else 1.0

    @property
    def bytes_share(self) -> float:
        return self.modelled_bytes / self.bytes if self.bytes > 0 else 1.0

    def shortfall(self, min_share: float) -> str | None:
        """Why the modelled share is too small, or None: the FLOPs and the bytes (a memory-bound
        model can hold all its FLOPs in modelled kernels and miss a sixth of its traffic), each
        below `min_share` named with the operator types that miss most of it."""
        parts = []
        for what, share, key in (("FLOPs", self.flops_share, "flops_share"), ("bytes", self.bytes_share, "bytes_share")):
            if share < min_share:
                top = sorted(self.top_unmodelled, key=lambda u: (-u[key], -u["count"], u["op_type"]))[:3]
                named = ", ".join(f"{u['op_type']} ({u['count']} nodes, {u[key] * 100:.1f}% of {what})" for u in top)
                parts.append(f"only {share * 100:.1f}% of the model's {what} is in modelled kernels. "
                             f"Top unmodelled operators: {named or 'none'}")
        return "; ".join(parts) or None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["flops_share"], d["bytes_share"] = self.flops_share, self.bytes_share
        return d


@dataclass
class Partition:
    graph_name: str
    kernels: list[Kernel]
    tasks: list[Task]
    unsupported: list[UnsupportedOp]
    n_nodes: int
    n_view_nodes: int       # views and constant-folded nodes: no kernel
    dtype: str
    coverage: Coverage | None = None


def node_work(graph: Graph, node: Node, itemsize: int = 2) -> tuple[float, float]:
    """(FLOPs, bytes) of one node from its shapes alone, for any operator: a multiply-add
    counts 2 FLOPs (MatMul, Gemm, Conv, ConvTranspose), anything else one per output element;
    bytes are its operands and results at `itemsize` bytes per element.  A coarse measure,
    but the same for modelled and unmodelled nodes, which is what a coverage share needs."""
    def tensor_numel(t: str) -> int:
        s = graph.shape(t)
        return numel(s) if s is not None else 0
    shapes = [graph.shape(t) or () for t in node.inputs if t]
    out = tensor_numel(node.outputs[0]) if node.outputs and node.outputs[0] else 0
    op = node.op_type
    if op in ("MatMul", "Gemm") and shapes and shapes[0]:
        k = shapes[0][0] if op == "Gemm" and node.attrs.get("transA", 0) else shapes[0][-1]
        flops = 2.0 * out * k
    elif op == "Conv" and len(shapes) > 1 and len(shapes[1]) > 2:
        flops = 2.0 * out * numel(shapes[1][1:])
    elif op == "ConvTranspose" and len(shapes) > 1 and len(shapes[1]) > 2:
        flops = 2.0 * numel(shapes[0]) * numel(shapes[1][1:])
    elif op in ("GroupedMatmul", "WeightQuantBatchMatmul", "QuantBatchMatmulV3") and shapes and shapes[0]:
        flops = 2.0 * out * shapes[0][-1]  # each output element is a K-long dot product
    elif op == "FusedInferAttentionScore" and len(shapes) > 1 and len(shapes[1]) >= 3:
        # Q K^T and P V: 2 multiply-adds per (query position, head, key position, head dim)
        skv = shapes[1][1] if node.attrs.get("input_layout") in ("BSND", "BSH") else shapes[1][2]
        flops = 4.0 * out * skv
    else:
        flops = float(out)
    return flops, float(itemsize) * (sum(tensor_numel(t) for t in node.inputs if t) +
                                     sum(tensor_numel(t) for t in node.outputs if t))


def _coverage(graph: Graph, kernels: list[Kernel], unsupported: list[UnsupportedOp], n_view: int,
              itemsize: int) -> Coverage:
    work = {n.name: node_work(graph, n, itemsize) for n in graph.nodes}
    modelled = {name for k in kernels for name in k.nodes}
    unmodelled = {name for u in unsupported for name in u.nodes}
    flops = sum(w[0] for name, w in work.items() if name in modelled or name in unmodelled)
    nbytes = sum(w[1] for name, w in work.items() if name in modelled or name in unmodelled)
    top = []
    for u in unsupported:
        f = sum(work[n][0] for n in u.nodes)
        b = sum(work[n][1] for n in u.nodes)
        top.append({"op_type": u.onnx_type, "count": u.count, "flops_share": f / flops if flops else 0.0,
                    "bytes_share": b / nbytes if nbytes else 0.0})
    top.sort(key=lambda d: (-d["flops_share"], -d["count"], d["op_type"]))
    return Coverage(len(graph.nodes), len(modelled), n_view, len(unmodelled), flops,
                    sum(work[n][0] for n in modelled), nbytes, sum(work[n][1] for n in modelled), top)


@dataclass
class _Group:
    id: int
    kind: str                  # "cube", "vector", "elementwise", "unsupported"
    nodes: list[str]
    onnx_types: list[str]
    spec: OpSpec | None
    ops: list[str]             # element-wise ops (epilogue or chain)
    ext_inputs: dict[str, list[int]]   # tensor -> shape, for element-wise chains
    out_numel: int
    out_shape: list[int]
    producers: set[int]        # groups whose outputs this one reads
    full_buffers: int          # full-size tensors held in UB
    chain: list[tuple[str, list[str], str]] = field(default_factory=list)  # (op, inputs, output) per element-wise node
    prologue: list[tuple[str, list[str], str]] = field(default_factory=list)  # element-wise nodes before the anchor



def kernel_formats(op_type: str, inputs: list[list[int]]) -> list[str]:
    """The tensor formats of a kernel's inputs (part of its task key)."""
    return ["NCHW" if op_type == "Conv" and len(s) == 4 else "ND" for s in inputs]


def _depends(groups: list[_Group], start: int, target: int) -> bool:
    """Does group `start` (transitively) read an output of group `target`?"""
    stack, seen = [start], set()
    while stack:
        g = stack.pop()
        if g == target:
            return True
        if g in seen:
            continue
        seen.add(g)
        stack.extend(groups[g].producers)
    return False


def _fuse_layer_norms(graph: Graph) -> tuple[Graph, dict[str, list[Node]]]:
    """Replace each decomposed LayerNorm over the last axis (ReduceMean, Sub, Pow 2 or a Mul
    by itself, ReduceMean, Add eps, Sqrt, Div, then an optional Mul by a constant scale and Add of a
    constant bias, as exporters and hand-written models emit it) by one LayerNormalization
    node, as a compiler's pattern fusion does.  Returns the rewritten graph and, per fused
    node, the original nodes it stands for."""
    consumers: dict[str, list[Node]] = {}
    for n in graph.nodes:
        for t in dict.fromkeys(n.inputs):  # a node reading a tensor twice (Mul(d, d)) is one consumer
            consumers.setdefault(t, []).append(n)

    def only(t: str, op: str, *others: str) -> Node | None:
        """The single consumer of `t`, if it is an `op` whose other operands are `others`
        ("c": any constant)."""
        users = consumers.get(t, [])
        if len(users) != 1 or users[0].op_type != op:
            return None
        rest = [x for x in users[0].inputs if x != t]
        if len(rest) != len(others) or any(
                (o == "c" and not graph.is_const(r)) or (o != "c" and r != o) for r, o in zip(rest, others)):
            return None
        return users[0]

    def last_axis_mean(n: Node) -> bool:
        x = graph.shape(n.inputs[0])
        axes = n.attrs.get("axes")
        if axes is None and len(n.inputs) > 1 and n.inputs[1] in graph.const_values:
            axes = graph.const_values[n.inputs[1]].reshape(-1).tolist()
        return bool(x) and axes is not None and [int(a) % len(x) for a in axes] == [len(x) - 1] and \
            int(n.attrs.get("keepdims", 1)) == 1

    fused: dict[str, list[Node]] = {}
    replaced: dict[int, Node | None] = {}
    for r1 in graph.nodes:
        if r1.op_type != "ReduceMean" or r1.index in replaced or not last_axis_mean(r1):
            continue
        x, u = r1.inputs[0], r1.outputs[0]
        sub = next((n for n in consumers.get(u, []) if n.op_type == "Sub" and n.inputs == [x, u]), None)
        if sub is None:
            continue
        d = sub.outputs[0]
        users = consumers.get(d, [])
        # (x - u)^2 as Pow(d, 2) or Mul(d, d)
        pow_ = next((n for n in users if (n.op_type == "Pow" and graph.const_values.get(n.inputs[1]) is not None and
                                          float(np.asarray(graph.const_values[n.inputs[1]]).reshape(-1)[0]) == 2.0)
                     or (n.op_type == "Mul" and n.inputs == [d, d])), None)
        r2 = pow_ and only(pow_.outputs[0], "ReduceMean", *r1.inputs[1:])
        add = r2 and last_axis_mean(r2) and only(r2.outputs[0], "Add", "c")
        sqrt = add and only(add.outputs[0], "Sqrt")
        div = sqrt and next((n for n in users if n.op_type == "Div" and n.inputs == [d, sqrt.outputs[0]]), None)
        if not div or len(users) != 2 or len(consumers.get(u, [])) != 1:
            continue
        nodes = [r1, sub, pow_, r2, add, sqrt, div]
        eps_t = next(t for t in add.inputs if t != r2.outputs[0])
        eps = float(np.asarray(graph.const_values.get(eps_t, 1e-5)).reshape(-1)[0])
        inputs, out = [x], div.outputs[0]
        scale = only(out, "Mul", "c")
        if scale is not None and graph.shape(scale.outputs[0]) == graph.shape(out):
            nodes.append(scale)
            inputs.append(next(t for t in scale.inputs if t != out))
            out = scale.outputs[0]
            bias = only(out, "Add", "c")
            if bias is not None and graph.shape(bias.outputs[0]) == graph.shape(out):
                nodes.append(bias)
                inputs.append(next(t for t in bias.inputs if t != out))
                out = bias.outputs[0]
        ln = Node(r1.index, r1.name, "LayerNormalization", inputs, [out], {"axis": -1, "epsilon": eps})
        fused[ln.name] = nodes
        for n in nodes:
            replaced[n.index] = ln if n is r1 else None
    if not fused:
        return graph, {}
    nodes = [replaced.get(n.index, n) for n in graph.nodes if replaced.get(n.index, n) is not None]
    return replace(graph, nodes=nodes), fused


@dataclass
class Atom:
    """A node as fusion sees it: a graph node (or a decomposed LayerNorm folded into one)
    that launches work, with its producers and consumers resolved through view nodes."""
    index: int                 # position in topological order
    node: Node
    covers: list[str]          # the original nodes it stands for
    onnx_types: list[str]
    kind: str                  # "cube", "vector", "elementwise" (OpSpec.kind) or "unsupported"
    spec: OpSpec | None
    reason: str                # why it is unsupported ("" otherwise)
    inputs: list[str]          # live (non-constant) input tensors, as the node reads them
    preds: list[int]           # atoms producing them, first-read order
    out_shape: list[int]
    succs: list[int] = field(default_factory=list)
    external: bool = False     # its output (or a view of it) leaves the graph

    @property
    def out_numel(self) -> int:
        return numel(self.out_shape)


@dataclass
class Atoms:
    """A graph broken into atoms: `graph` is the graph with decomposed LayerNorms folded."""
    original: Graph
    graph: Graph
    atoms: list[Atom]
    n_view: int                # views and constant-folded nodes: no kernel
    producer: dict[str, int]   # tensor -> atom producing it (through views)


def atoms(graph: Graph, supported_ops: Iterable[str]) -> Atoms:
    """The atoms of `graph`, in topological order.

    supported_ops: operator types the cost model accepts (aoe_native.supported_ops())."""
    supported = set(supported_ops)
    folded, fused = _fuse_layer_norms(graph)
    out: list[Atom] = []
    producer: dict[str, int] = {}
    n_view = 0
    for node in folded.nodes:
        if node.outputs and all(folded.is_const(o) for o in node.outputs if o):
            n_view += 1
            continue
        live = [t for t in node.inputs if t and not folded.is_const(t)]
        if node.op_type in VIEW_OPS:
            n_view += 1
            if live and live[0] in producer:
                for o in node.outputs:
                    producer[o] = producer[live[0]]
            continue
        preds: list[int] = []
        for t in live:
            if t in producer and producer[t] not in preds:
                preds.append(producer[t])
        covered = fused.get(node.name, [node])
        spec, reason = None, ""
        try:
            spec = map_node(folded, node)
            if spec.op_type not in supported and not (spec.kind == "elementwise" and spec.op_type == "BatchNormalization"):
                raise UnsupportedNode(f"the cost model does not support {spec.op_type}")
        except UnsupportedNode as e:
            spec, reason = None, str(e)
        out_shape = list(folded.shape(node.outputs[0]) or []) if node.outputs else []
        atom = Atom(len(out), node, [n.name for n in covered], [n.op_type for n in covered],
                    spec.kind if spec is not None else "unsupported", spec, reason, live, preds, out_shape)
        out.append(atom)
        for o in node.outputs:
            if o:
                producer[o] = atom.index
        for p in preds:
            out[p].succs.append(atom.index)
    for t in folded.outputs:
        if t in producer:
            out[producer[t]].external = True
    return Atoms(graph, folded, out, n_view, producer)


# CANN's fused kernels of two consecutive LLM operators (issue 49), candidates of subgraph tuning:
# (producer, consumer) -> fused kernel (aclnnAddRmsNorm, aclnnAddRmsNormDynamicQuant,
# aclnnDequantSwigluQuant).  RmsNorm + DynamicQuant runs as AddRmsNormDynamicQuant with a residual
# of zeros (CANN's dynamic-quant norm kernel is the Add one): it reads x twice.  RoPE is not among
# them: CANN's FusedInferAttentionScore takes no rotation for Llama-style attention (its
# query_rope/key_rope inputs are MLA's separate rotary dimensions), so RoPE stays its own kernel.
LLM_PAIRS = {("Add", "RmsNorm"): "AddRmsNorm", ("AddRmsNorm", "DynamicQuant"): "AddRmsNormDynamicQuant",
             ("RmsNorm", "DynamicQuant"): "AddRmsNormDynamicQuant", ("SwiGlu", "DynamicQuant"): "DequantSwigluQuant"}


def llm_pair(ag: Atoms, a: Atom, b: Atom) -> bool:
    """Do atoms a -> b make one of CANN's LLM_PAIRS (b reads only a's first output)?"""
    if (a.node.op_type, b.node.op_type) not in LLM_PAIRS or b.preds != [a.index] or \
            b.node.inputs[0] != a.node.outputs[0]:
        return False
    if a.node.op_type == "Add":  # a residual Add: two live operands of the norm's shape; the sum is an output
        out = ag.graph.shape(a.node.outputs[0])
        return len(a.inputs) == 2 and all(ag.graph.shape(t) == out for t in a.node.inputs)
    # the fused kernel writes y quantised: nobody else may read a's float y (or a view of it)
    views, grew = {a.node.outputs[0]}, True
    while grew:
        new = {o for n in ag.graph.nodes if n.op_type in VIEW_OPS and n.inputs and n.inputs[0] in views
               for o in n.outputs} - views
        views |= new
        grew = bool(new)
    return not any(t in views for s in a.succs if s != b.index for t in ag.atoms[s].inputs) and \
        a.node.outputs[0] not in ag.graph.outputs


def _llm_pair_kernel(ag: Atoms, a: Atom, b: Atom, supported: set[str]) -> tuple[str, list[list[int]], dict[str, Any]]:
    kind = LLM_PAIRS[(a.node.op_type, b.node.op_type)]
    if kind not in supported:
        raise ValueError(f"the cost model has no {kind}")
    g = ag.graph

    def shape(t: str) -> list[int]:
        return list(g.shape(t) or ()) if t else []
    if kind == "AddRmsNorm":
        return kind, [shape(t) for t in a.node.inputs] + [shape(b.node.inputs[1])], {}
    if kind == "AddRmsNormDynamicQuant":
        norm = a.node.inputs[:3] if a.node.op_type == "AddRmsNorm" else [a.node.inputs[0]] * 2 + a.node.inputs[1:2]
        smooth = b.node.inputs[1] if len(b.node.inputs) > 1 else ""
        return kind, [shape(t) for t in norm] + [shape(smooth)], {}
    return kind, map_node(g, a.node).inputs, {"activate_left": 1}  # DequantSwigluQuant: silu of the gate half


def kernel_of(ag: Atoms, group: list[int], supported: set[str]) -> tuple[str, list[list[int]], dict[str, Any]]:
    """The cost-model operator of the kernel fusing the atoms `group` (topological order):
    a cube or vector anchor with the element-wise atoms before it (prologue) and after it
    (epilogue), a chain of element-wise atoms, or two LLM operators CANN fuses (LLM_PAIRS)."""
    graph = ag.graph
    members = [ag.atoms[i] for i in group]
    if len(members) == 2 and llm_pair(ag, *members):
        return _llm_pair_kernel(ag, *members, supported)
    anchor = next((a for a in members if a.kind != "elementwise"), None)
    first = anchor or members[0]
    g = _Group(0, first.kind, [], [], first.spec, [], {}, numel(first.out_shape), list(first.out_shape), set(), 0)
    for a in members:
        if a is anchor:
            continue
        step = (a.node.op_type, [t for t in a.node.inputs if t], a.node.outputs[0])
        if anchor is not None and a.index < anchor.index:
            g.prologue.append(step)
        else:
            g.chain.append(step)
    if anchor is None:
        g.out_numel = numel(members[-1].out_shape)
    return _kernel_op(g, graph, supported)


def partition(graph: Graph, supported_ops: Iterable[str], dtype: str = "float16",
              ub_bytes: int = 192 * 1024) -> Partition:
    """Group `graph`'s nodes into kernels by the fixed fusion rules, and the kernels into tasks.

    supported_ops: operator types the cost model accepts (aoe_native.supported_ops());
    a node whose mapped type is not among them is reported as unsupported.
    ub_bytes: Unified Buffer size of the target SoC (caps fusion)."""
    supported = set(supported_ops)
    max_buf = max_fused_buffers(ub_bytes)
    ag = atoms(graph, supported)
    graph = ag.graph
    groups: list[_Group] = []
    group_of: dict[int, int] = {}       # atom -> group
    unsupported: dict[str, UnsupportedOp] = {}

    def owner(t: str) -> int | None:
        a = ag.producer.get(t)
        return None if a is None else group_of.get(a)

    def new_group(kind, atom: Atom, ops, ext, prods) -> int:
        gid = len(groups)
        node = atom.node
        groups.append(_Group(gid, kind, list(atom.covers), list(atom.onnx_types), atom.spec, ops, ext,
                             numel(atom.out_shape), list(atom.out_shape), set(prods),
                             1 + sum(1 for s in ext.values() if numel(s) == numel(atom.out_shape))))
        group_of[atom.index] = gid
        if kind == "elementwise":
            groups[gid].chain.append((node.op_type, [t for t in node.inputs if t], node.outputs[0]))
        return gid

    for atom in ag.atoms:
        node = atom.node
        prods = [group_of[p] for p in atom.preds]
        prods = list(dict.fromkeys(prods))
        if atom.kind == "unsupported":
            u = unsupported.setdefault(node.op_type, UnsupportedOp(node.op_type, 0, 0.0, atom.reason, []))
            u.count += 1
            u.nodes.append(node.name)
            new_group("unsupported", atom, [], {}, prods)
            continue
        out_shape = atom.out_shape
        if atom.kind != "elementwise":
            new_group(atom.kind, atom, [], {}, prods)
            continue
        # Element-wise: try to join the kernel of one of its producers.
        joined = False
        for gid in prods:
            g = groups[gid]
            if g.kind not in ("cube", "elementwise") or g.out_numel != numel(out_shape):
                continue
            others = [p for p in prods if p != gid]
            if any(_depends(groups, p, gid) for p in others):
                continue  # would create a cycle between kernels
            if g.kind == "cube" and node.op_type == "BatchNormalization" and g.ops:
                continue  # BN folds into the conv weights only directly after the conv
            ext = {t: list(graph.shape(t) or [1]) for t in node.inputs
                   if t and owner(t) != gid and t not in g.ext_inputs}
            extra = sum(1 for s in ext.values() if numel(s) == g.out_numel)
            if g.full_buffers + extra + 1 > max_buf:  # +1: one temporary for the chain
                continue
            g.nodes.append(node.name)
            g.onnx_types.append(node.op_type)
            g.ops.append(node.op_type)
            g.chain.append((node.op_type, [t for t in node.inputs if t], node.outputs[0]))
            g.ext_inputs.update(ext)
            g.full_buffers += extra
            g.producers.update(others)
            group_of[atom.index] = gid
            joined = True
            break
        if not joined:
            ext = {t: list(graph.shape(t) or [1]) for t in node.inputs if t}
            new_group("elementwise", atom, [node.op_type], ext, prods)

    unsup = sorted(unsupported.values(), key=lambda u: (-u.count, u.onnx_type))
    kernels = [(g.kind, g.nodes, g.onnx_types, None if g.kind == "unsupported" else _kernel_op(g, graph, supported),
                g.out_shape) for g in groups]
    return make_partition(ag, kernels, unsup, dtype)


# Kernels whose first input, the dtype of their task (CANN's convention), is not the model's
# activation dtype: W8A8's QuantBatchMatmulV3 reads int8 activations (DynamicQuant's output).
_INT8_INPUT_KERNELS = frozenset({"QuantBatchMatmulV3"})


def kernel_dtype(op_type: str, dtype: str) -> str:
    """The dtype of a kernel's task: its first input's."""
    return "int8" if op_type in _INT8_INPUT_KERNELS else dtype


def make_partition(ag: Atoms, groups: list[tuple[str, list[str], list[str], Any, list[int]]],
                   unsupported: list[UnsupportedOp], dtype: str) -> Partition:
    """Kernels and deduplicated tasks from groups (kind, node names, ONNX types, kernel
    operator or None for unsupported groups, output shape)."""
    kernels: list[Kernel] = []
    tasks: dict[str, Task] = {}
    for kind, nodes, onnx_types, op, out_shape in groups:
        if kind == "unsupported":
            continue
        op_type, inputs, attrs = op
        formats = kernel_formats(op_type, inputs)
        kd = kernel_dtype(op_type, dtype)
        key = task_key(op_type, inputs, kd, formats, attrs)
        k = Kernel(len(kernels), list(nodes), list(onnx_types), op_type, inputs, attrs, formats, list(out_shape))
        task = tasks.get(key)
        if task is None:
            task = tasks[key] = Task(len(tasks), key, op_type, inputs, kd, formats, attrs)
        task.kernels.append(k.index)
        k.task = task.index
        kernels.append(k)
    n_nodes = len(ag.original.nodes)
    for u in unsupported:
        u.share = u.count / n_nodes if n_nodes else 0.0
    itemsize = int(np.dtype(dtype).itemsize) if dtype != "bfloat16" else 2
    return Partition(ag.original.name, kernels, list(tasks.values()), unsupported, n_nodes, ag.n_view, dtype,
                     _coverage(ag.original, kernels, unsupported, ag.n_view, itemsize))


# Element-wise decompositions that compilers recognise as one fused op, as exporters emit them.
# Each pattern is a list of (op, operand spec) where "x" is the pattern's input, "p" the
# previous step's output, "h" the first step's output and "c" a constant; Add and Mul match
# their operands in either order.
_PATTERNS: list[tuple[str, list[tuple[str, tuple[str, ...]]]]] = [
    ("Gelu", [("Div", ("x", "c")), ("Erf", ("p",)), ("Add", ("p", "c")), ("Mul", ("x", "p")), ("Mul", ("p", "c"))]),
    ("Gelu", [("Pow", ("x", "c")), ("Mul", ("p", "c")), ("Add", ("x", "p")), ("Mul", ("p", "c")), ("Tanh", ("p",)),
              ("Add", ("p", "c")), ("Mul", ("x", "p")), ("Mul", ("p", "c"))]),
    # HF gelu_new: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
    ("Gelu", [("Mul", ("x", "c")), ("Pow", ("x", "c")), ("Mul", ("p", "c")), ("Add", ("x", "p")),
              ("Mul", ("p", "c")), ("Tanh", ("p",)), ("Add", ("p", "c")), ("Mul", ("h", "p"))]),
    ("Silu", [("Sigmoid", ("x",)), ("Mul", ("x", "p"))]),
    ("HardSwish", [("HardSigmoid", ("x",)), ("Mul", ("x", "p"))]),  # paddle2onnx's hardswish
]
_COMMUTATIVE = frozenset({"Add", "Mul"})


def _pattern_input(step, graph: Graph) -> str | None:
    """The tensor a pattern starts from: the first step's operand that is not a constant."""
    op, ins, _ = step
    if op in _COMMUTATIVE and len(ins) == 2 and graph.is_const(ins[0]):
        return ins[1]
    return ins[0] if ins else None


def _match(chain, i, steps, graph: Graph) -> bool:
    if i + len(steps) > len(chain):
        return False
    x = _pattern_input(chain[i], graph)
    prev = first = None
    for (op, ins, out), (want_op, spec) in zip(chain[i:i + len(steps)], steps):
        if op != want_op or len(ins) != len(spec):
            return False

        def fits(order) -> bool:
            return all((role != "x" or t == x) and (role != "p" or t == prev) and (role != "h" or t == first) and
                       (role != "c" or graph.is_const(t)) for t, role in zip(order, spec))
        if not (fits(ins) or (op in _COMMUTATIVE and fits(ins[::-1]))):
            return False
        prev = out
        first = out if first is None else first
    return True


def _fuse_patterns(chain, graph: Graph):
    """Replace recognised decompositions (GELU, SiLU) by the single op."""
    out, i = [], 0
    while i < len(chain):
        for name, steps in _PATTERNS:
            if _match(chain, i, steps, graph):
                out.append((name, [_pattern_input(chain[i], graph)], chain[i + len(steps) - 1][2]))
                i += len(steps)
                break
        else:
            out.append(chain[i])
            i += 1
    return out


def _shape_of(graph: Graph, t: str) -> list[int]:
    return list(graph.shape(t) or []) or [1]


# The scale of Mean: a scalar operand, which no tensor of the graph names.
_MEAN_SCALE = "\x00mean_scale"


def _expand_nary(steps):
    """N-ary element-wise steps (Sum, Mean, Max, Min of k operands) as k - 1 binary steps on
    the running value (named as the node's output, which has its size), Mean then a scale by
    1/k; one operand is an Identity."""
    out = []
    for op, ins, o in steps:
        if op not in NARY_OPS:
            out.append((op, ins, o))
            continue
        if len(ins) == 1:
            out.append(("Identity", ins, o))
            continue
        base = NARY_OPS[op]
        out.append((base, ins[:2], o))
        out += [(base, [o, t], o) for t in ins[2:]]
        if op == "Mean":
            out.append(("Mul", [o, _MEAN_SCALE], o))
    return out


def _kernel_op(g: _Group, graph: Graph, supported: set[str]) -> tuple[str, list[list[int]], dict[str, Any]]:
    chain = _fuse_patterns(_expand_nary(g.chain), graph)
    unary = unary_ops()
    if g.kind in ("cube", "vector"):
        attrs = dict(g.spec.attrs)

        def names(steps, size: int) -> list[str]:
            # An Add of a broadcast operand (bias, mask) reads no tensor of the kernel's size: BiasAdd.
            return ["BiasAdd" if op == "Add" and any(numel(graph.shape(t) or []) < size for t in ins) else op
                    for op, ins, _ in steps]
        if g.prologue:
            attrs["prologue"] = names(_fuse_patterns(_expand_nary(g.prologue), graph), numel(g.spec.inputs[0]))
        if chain:
            attrs["epilogue"] = names(chain, g.out_numel)
        return g.spec.op_type, [list(s) for s in g.spec.inputs], attrs
    # Element-wise chain: the cost model's FusedElementwise takes the first op's operands,
    # then one more operand per later binary op (the chain value is the other one).
    ops: list[str] = []
    inputs: list[list[int]] = []
    prev = None
    for op, ins, out in chain:
        if op == "BatchNormalization":  # inference BN: per-channel scale and shift
            x, scale, bias = ins[0], ins[1], ins[2]
            if prev is None:
                inputs.append(_shape_of(graph, x))
            ops += ["Mul", "Add"]
            inputs += [_shape_of(graph, scale) + [1] * (len(_shape_of(graph, x)) - 2),
                       _shape_of(graph, bias) + [1] * (len(_shape_of(graph, x)) - 2)]
        elif prev is None:
            ops.append(op)
            inputs += [_shape_of(graph, t) for t in (ins[:1] if op in unary else ins)]
        else:
            ops.append(op)
            if op not in unary:
                rest = list(ins)
                if prev in rest:
                    rest.remove(prev)
                inputs += [_shape_of(graph, t) for t in rest]
        prev = out
    if len(ops) == 1 and ops[0] in supported:
        return ops[0], inputs, {}
    return "FusedElementwise", inputs, {"ops": ops}
