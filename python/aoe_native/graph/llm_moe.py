"""The LLM matchers of :mod:`.llm_patterns` for mixture-of-experts routing and quantised matmuls.

MoE: an exported MoE layer has static shapes only when every expert runs on every token (one
batched MatMul over the stacked expert weights [E, H, F]) and the top-k gate scatters its
weights over the experts (ScatterElements into a zero [T, E]), which is how an exportable MoE is
written (transformers' blocks loop over experts with data-dependent token counts, which have no
static shapes).  CANN runs the sparse form instead: MoeGatingTopKSoftmax, MoeInitRouting (the
T*k expanded rows sorted by expert), one GroupedMatmul per projection over the T*k rows, SwiGlu,
MoeFinalizeRouting (the weighted sum back to T rows).  How many rows each expert gets depends on
the data; the import assumes an even split (group_list of T*k/E rows per expert, the remainder
to the first experts) and says so in the node (`_assumed`).

Quantisation: QuantizeLinear/DequantizeLinear pairs (QDQ form) around MatMul.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ir import Node, numel
from .llm_rewrite import Rewrite, only

__all__ = ["MOE_MATCHERS", "even_groups"]

_EVEN_SPLIT = "group sizes are data dependent: an even split over the experts is assumed"
_COMBINE_WALK = frozenset({"Transpose", "Unsqueeze", "Reshape", "Cast"})


def even_groups(rows: int, experts: int) -> list[int]:
    """Rows per expert when `rows` are spread evenly over `experts` (remainder to the first)."""
    if experts < 1:
        raise ValueError(f"a mixture of {experts} experts: the stacked expert weights need at least one")
    base, extra = divmod(rows, experts)
    return [base + (1 if e < extra else 0) for e in range(experts)]


def _gating(rw: Rewrite) -> None:
    """Softmax over the experts then TopK -> MoeGatingTopKSoftmax(x [T, E], k)."""
    for sm in [n for n in rw.nodes if n.op_type == "Softmax"]:
        x = rw.shape(sm.inputs[0])
        if not x or len(x) != 2 or int(sm.attrs.get("axis", -1)) % 2 != 1:
            continue
        tk = only(rw, sm.outputs[0], "TopK")
        k = rw.graph.const_values.get(tk.inputs[1]) if tk is not None else None
        if tk is None or k is None or int(tk.attrs.get("axis", -1)) % 2 != 1 or not int(tk.attrs.get("largest", 1)):
            continue
        rw.add("MoeGatingTopKSoftmax", tk, [sm.inputs[0]], list(tk.outputs),
               {"k": int(np.asarray(k).reshape(-1)[0])}, [sm, tk])


def _expert_matmul(rw: Rewrite, t: str) -> tuple[str, str] | None:
    """(input [T, H] or [E, T, H], stacked weight [E, H, F]) of a MatMul producing `t` [E, T, F]."""
    mm = rw.made_by(t, "MatMul")
    if mm is None:
        return None
    x, w = rw.shape(mm.inputs[0]), rw.shape(mm.inputs[1])
    if x is None or w is None or len(x) not in (2, 3) or len(w) != 3 or not rw.param(mm.inputs[1]) or x[-1] != w[1] \
            or w[0] < 1:
        return None
    return mm.inputs[0], mm.inputs[1]


def _experts_of(rw: Rewrite, scatter: Node) -> dict[str, Any] | None:
    """The dense expert computation weighted by the scattered gate: its nodes and tensors."""
    covers = [scatter]
    t = scatter.outputs[0]
    while (n := (rw.users(t) or [None])[0]) is not None and len(rw.users(t)) == 1 and n.op_type in _COMBINE_WALK:
        covers.append(n)
        t = n.outputs[0]
    mul = only(rw, t, "Mul")
    if mul is None:
        return None
    out = rw.other(mul, t)
    red = only(rw, mul.outputs[0], "ReduceSum")
    down = _expert_matmul(rw, out) if rw.made_by(out, "MatMul") else None
    act = rw.made_by(down[0], "SwiGlu") if down else None
    if red is None or act is None:
        return None
    axes = red.attrs.get("axes")
    if axes is None and len(red.inputs) > 1:
        axes = np.asarray(rw.graph.const_values.get(red.inputs[1], [-1])).reshape(-1).tolist()
    gate, up = _expert_matmul(rw, act.inputs[0]), _expert_matmul(rw, act.inputs[1])
    if axes != [0] or gate is None or up is None or gate[0] != up[0] or len(rw.shape(gate[0])) != 2:
        return None
    covers += [mul, red, act, rw.producer[out], rw.producer[act.inputs[0]], rw.producer[act.inputs[1]]]
    return {"tokens": gate[0], "w_gate": gate[1], "w_up": up[1], "w_down": down[1], "covers": covers,
            "sum": red}


def _experts(rw: Rewrite) -> None:
    """The dense top-k expert layer -> MoeInitRouting, GroupedMatmul (gate, up), SwiGlu,
    GroupedMatmul (down), MoeFinalizeRouting (with the Add of a shared expert or residual that
    follows as its skip input)."""
    for gating in [n for n in rw.nodes if n.op_type == "MoeGatingTopKSoftmax"]:
        idx = gating.outputs[1]
        for sc in [u for u in rw.users(idx) if u.op_type == "ScatterElements" and u.inputs[1] == idx]:
            found = _experts_of(rw, sc)
            if found is not None:
                _emit_sparse(rw, gating, sc, found)


def _emit_sparse(rw: Rewrite, gating: Node, sc: Node, f: dict[str, Any]) -> None:
    t, h = rw.shape(f["tokens"])
    k = gating.attrs["k"]
    e, _, ffn = rw.shape(f["w_gate"])
    rows = t * k
    dtype = rw.graph.tensors[f["tokens"]].dtype
    p = f["sum"].name
    x = rw.new_tensor(f"{p}/expanded_x", (rows, h), dtype)
    row_idx = rw.new_tensor(f"{p}/expanded_row_idx", (rows,), "int32")
    exp_idx = rw.new_tensor(f"{p}/expanded_expert_idx", (rows,), "int32")
    anchor = f["sum"]
    rw.add("MoeInitRouting", anchor, [f["tokens"], gating.outputs[1]], [x, row_idx, exp_idx],
           {"expert_num": e, "active_num": rows}, [])
    groups = {"group_list": even_groups(rows, e), "group_list_type": 1, "transpose_weight": 0, "_assumed": _EVEN_SPLIT}
    gate = rw.new_tensor(f"{p}/gate", (rows, ffn), dtype)
    up = rw.new_tensor(f"{p}/up", (rows, ffn), dtype)
    act = rw.new_tensor(f"{p}/act", (rows, ffn), dtype)
    down = rw.new_tensor(f"{p}/down", (rows, h), dtype)
    rw.add("GroupedMatmul", anchor, [x, f["w_gate"], ""], [gate], dict(groups), [], suffix="_gate")
    rw.add("GroupedMatmul", anchor, [x, f["w_up"], ""], [up], dict(groups), [], suffix="_up")
    rw.add("SwiGlu", anchor, [gate, up], [act], {"dim": -1}, [])
    rw.add("GroupedMatmul", anchor, [act, f["w_down"], ""], [down], dict(groups), [], suffix="_down")
    _finalize(rw, anchor, f["sum"].outputs[0], list(f["covers"]), down=down, row_idx=row_idx, scales=sc.inputs[2],
              expert_idx=gating.outputs[1], experts=e)


def _finalize(rw: Rewrite, anchor: Node, out: str, covers: list[Node], *, down: str, row_idx: str, scales: str,
              expert_idx: str, experts: int) -> None:
    """MoeFinalizeRouting writing `out` [T, H], or the Add of a [T, H] tensor (a shared expert's output,
    its skip input) that follows it.  Its bias input ([E, H], required by MoeFinalizeRouting v1) is a
    constant of zeros: the experts' down projections have none."""
    add = only(rw, out, "Add")
    if add is not None and rw.shape(rw.other(add, out)) == rw.shape(out) and not rw.const(rw.other(add, out)):
        skip, out = rw.other(add, out), add.outputs[0]
        covers.append(add)
    else:
        skip = ""
    bias = rw.new_tensor(f"{anchor.name}/zero_bias", (experts, rw.shape(down)[-1]), rw.graph.tensors[down].dtype)
    rw.graph.tensors[bias].const = True
    rw.add("MoeFinalizeRouting", anchor, [down, row_idx, skip, "", bias, scales, expert_idx], [out],
           {"drop_pad_mode": 0}, covers)


# transformers' "batched_mm" experts (transformers 5: config._experts_implementation): each of the T*k
# routed rows multiplies its expert's weight, gathered per row: MatMul(Gather(W [E, N, K], expert of
# each row), x_row[..., None]).
_ROW_WALK = frozenset({"Reshape", "Flatten", "Unsqueeze", "Squeeze"})


def _gathered_expert_matmuls(rw: Rewrite) -> None:
    """MatMul(Gather(W, row experts), Unsqueeze(x [R, K])) -> Squeeze [R, N]: one GroupedMatmul over
    the R rows with the [E, N, K] weights (transpose_weight 1)."""
    for mm in [n for n in rw.nodes if n.op_type == "MatMul"]:
        g, u = rw.made_by(mm.inputs[0], "Gather", "GatherND"), rw.made_by(mm.inputs[1], "Unsqueeze")
        sq = only(rw, mm.outputs[0], "Squeeze")
        if g is None or u is None or sq is None or int(g.attrs.get("axis", 0)) != 0 or not rw.param(g.inputs[0]):
            continue
        w, x, out = rw.shape(g.inputs[0]), rw.shape(u.inputs[0]), rw.shape(sq.outputs[0])
        if w is None or x is None or len(w) != 3 or len(x) != 2 or out != (x[0], w[1]) or x[1] != w[2] or w[0] < 1:
            continue
        rw.add("GroupedMatmul", mm, [u.inputs[0], g.inputs[0], ""], [sq.outputs[0]],
               {"group_list": even_groups(x[0], w[0]), "group_list_type": 1, "transpose_weight": 1,
                "_assumed": _EVEN_SPLIT, "_row_experts": g.inputs[1]}, [mm, g, u, sq])


def _walk(rw: Rewrite, t: str, ops: frozenset[str], covers: list[Node] | None = None) -> str:
    """`t` back through `ops` (views and repeats) to the tensor they start from."""
    while (n := rw.made_by(t, *ops)) is not None:
        if covers is not None:
            covers.append(n)
        t = n.inputs[0]
    return t


def _repeated_tokens(rw: Rewrite, rows: str, tokens_shape: tuple[int, int]) -> tuple[str, list[Node]]:
    """The [T, H] tokens that `rows` repeats k times (repeat_interleave: Unsqueeze, Expand or Tile,
    Reshape or Flatten) and the nodes doing it; ("", []) if it is not such a repeat."""
    nodes: list[Node] = []
    t = rows
    while (n := rw.made_by(t, "Reshape", "Flatten", "Unsqueeze", "Expand", "Tile")) is not None:
        nodes.append(n)
        t = n.inputs[0]
        if rw.shape(t) == tokens_shape and any(m.op_type in ("Expand", "Tile") for m in nodes):
            return t, nodes
    return "", []


def _batched_routing(rw: Rewrite) -> None:
    """Around the gathered GroupedMatmuls of one gate: the tokens repeated k times ->
    MoeInitRouting; the rows weighted by the gate, reshaped [T, k, H] and summed over k ->
    MoeFinalizeRouting."""
    init: dict[str, str] = {}  # expert index [T, k] -> the expanded row index of its MoeInitRouting
    for gmm in [n for n in rw.nodes if n.op_type == "GroupedMatmul" and "_row_experts" in n.attrs]:
        flat: list[Node] = []
        idx = _walk(rw, gmm.attrs["_row_experts"], _ROW_WALK, flat)
        gate = rw.made_by(idx, "MoeGatingTopKSoftmax")
        if gate is None or idx != gate.outputs[1]:
            continue
        (rows, h), (t, k) = rw.shape(gmm.inputs[0]), rw.shape(idx)
        tokens, repeat = _repeated_tokens(rw, gmm.inputs[0], (t, h))
        if tokens and rows == t * k and idx not in init:
            init[idx] = rw.new_tensor(f"{gmm.name}/expanded_row_idx", (rows,), "int32")
            exp = rw.new_tensor(f"{gmm.name}/expanded_expert_idx", (rows,), "int32")
            rw.add("MoeInitRouting", gmm, [tokens, idx], [gmm.inputs[0], init[idx], exp],
                   {"expert_num": rw.shape(gmm.inputs[1])[0], "active_num": rows}, repeat + flat)
            continue
        covers: list[Node] = []
        mul = only(rw, gmm.outputs[0], "Mul")
        back = mul and only(rw, mul.outputs[0], "Reshape")
        red = back and only(rw, back.outputs[0], "ReduceSum")
        if red is None or idx not in init or rw.shape(back.outputs[0])[:2] != (t, k):
            continue
        scales = _walk(rw, rw.other(mul, gmm.outputs[0]), _ROW_WALK, covers)
        if rw.shape(scales) != (t, k):
            continue
        _finalize(rw, red, red.outputs[0], covers + [mul, back, red], down=gmm.outputs[0], row_idx=init[idx],
                  scales=scales, expert_idx=idx, experts=rw.shape(gmm.inputs[1])[0])


# --------------------------------------------------------------------------- quantised matmuls
def _dequantized_weight(rw: Rewrite, t: str) -> tuple[str, str, str, int] | None:
    """(quantised weight [K, N], scale, zero point, group size) of DequantizeLinear(const) -> `t`."""
    dq = rw.made_by(t, "DequantizeLinear")
    if dq is None or not rw.param(dq.inputs[0]):
        return None
    w = rw.shape(dq.inputs[0])
    if w is None or len(w) != 2:
        return None
    zp = dq.inputs[2] if len(dq.inputs) > 2 else ""
    return dq.inputs[0], dq.inputs[1], zp, int(dq.attrs.get("block_size", 0))


def _input_dtypes(rw: Rewrite, inputs: list[str]) -> list[str]:
    """The `input_dtypes` attribute: the integer dtype of each quantised input, "" for a float one (the
    kernel's activation dtype: the file's float32 is not what the NPU runs) and for an absent one."""
    out = []
    for t in inputs:
        d = rw.graph.tensors[t].dtype if t and t in rw.graph.tensors else ""
        out.append("" if not d or "float" in d else {"uint8": "int8", "uint4": "int4"}.get(d, d))
    return out


def _check_scale(where: str, rw: Rewrite, scale: str, w: tuple[int, ...], group: int) -> None:
    s = tuple(rw.shape(scale) or ())
    k, n = w
    want = [(n,), (1,)] if group == 0 else [(-(-k // group), n)]  # per channel or tensor; per group of K
    if s not in want and not (group == 0 and numel(s) == 1):
        raise ValueError(f"node {where} (DequantizeLinear): scale {scale!r} has shape {list(s)}; a weight of "
                         f"[{k}, {n}] takes {' or '.join(str(list(x)) for x in want)}")


def _output_dtype(rw: Rewrite, t: str) -> str:
    """A quantised matmul's output: int8 when the file writes int8, else the float16 the NPU runs
    (the file's float32 is the exporter's)."""
    d = rw.graph.tensors[t].dtype if t in rw.graph.tensors else ""
    return d if d in ("int8", "bfloat16") else "float16"


def _quant_matmuls(rw: Rewrite) -> None:
    """MatMul(x, DequantizeLinear(W)) -> WeightQuantBatchMatmul (x float, W int8/int4);
    MatMul(DequantizeLinear(xq), DequantizeLinear(W)) with xq int8 -> QuantBatchMatmulV3, the
    activation's scale its pertoken_scale when it has one value per row."""
    for mm in [n for n in rw.nodes if n.op_type == "MatMul"]:
        wq = _dequantized_weight(rw, mm.inputs[1])
        if wq is None:
            continue
        w, scale, zp, group = wq
        _check_scale(rw.producer[mm.inputs[1]].name, rw, scale, rw.shape(w), group)
        wdq = rw.producer[mm.inputs[1]]
        xdq = rw.made_by(mm.inputs[0], "DequantizeLinear")
        if xdq is None:
            ins = [mm.inputs[0], w, scale, zp, "", "", ""]
            rw.add("WeightQuantBatchMatmul", mm, ins, [mm.outputs[0]],
                   {"input_dtypes": _input_dtypes(rw, ins), "antiquant_group_size": group},
                   [mm, wdq])
            continue
        xq, xscale = xdq.inputs[0], xdq.inputs[1]
        # one scale per row of x: the per-token scale; one for the tensor (ONNX's DynamicQuantizeLinear,
        # static QDQ) is folded into the dequantisation `scale` with the weight's
        m = numel(rw.shape(xq)[:-1] or (1,))
        pertoken = xscale if m > 1 and numel(rw.shape(xscale) or ()) == m else ""
        ins = [xq, w, scale, "", "", pertoken]
        rw.add("QuantBatchMatmulV3", mm, ins, [mm.outputs[0]],
               {"input_dtypes": _input_dtypes(rw, ins), "output_dtype": _output_dtype(rw, mm.outputs[0]),
                "transpose_x1": 0, "transpose_x2": 0},
               [mm, wdq, xdq])


def _dynamic_quants(rw: Rewrite) -> None:
    """DynamicQuantizeLinear whose zero point nobody reads -> DynamicQuant(x) (int8 y, scale).  ONNX's
    operator scales the whole tensor (one abs-max), CANN's each row (per token): the same pass over
    x, a reduction per row instead of one."""
    for n in [n for n in rw.nodes if n.op_type == "DynamicQuantizeLinear"]:
        if len(n.outputs) > 2 and n.outputs[2] and rw.users(n.outputs[2]):
            continue
        x = rw.shape(n.inputs[0])
        if x is not None and not 2 <= len(x) <= 8:  # aclnnDynamicQuant takes 2-8 dimensions (aclnn_dynamic_quant.cpp)
            continue
        rw.add("DynamicQuant", n, [n.inputs[0], ""], list(n.outputs[:2]), {"output_dtype": "int8"}, [n])


MOE_MATCHERS = (
    (frozenset({"MoeGatingTopKSoftmax"}), _gating),
    (frozenset({"MoeInitRouting", "GroupedMatmul", "SwiGlu", "MoeFinalizeRouting"}), _experts),
    (frozenset({"GroupedMatmul"}), _gathered_expert_matmuls),
    (frozenset({"MoeInitRouting", "GroupedMatmul", "MoeFinalizeRouting"}), _batched_routing),
    (frozenset({"WeightQuantBatchMatmul", "QuantBatchMatmulV3"}), _quant_matmuls),
    (frozenset({"DynamicQuant"}), _dynamic_quants),
)
