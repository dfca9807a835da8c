"""Recognise the LLM blocks that CANN runs as fused kernels in an imported graph.

PyTorch's ONNX exporters (dynamo and TorchScript) write a transformer decoder as dozens of small
ONNX nodes: RMSNorm as Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul, rotary embeddings as
Slice/Neg/Concat/Mul/Add, attention as MatMul/scale/mask/Softmax/MatMul with repeated KV heads.
On Ascend these run as CANN's fused operators (RmsNorm, AddRmsNorm, ApplyRotaryPosEmb,
FusedInferAttentionScore, SwiGlu, the MoE routing kernels, GroupedMatmul, the quantised
matmuls), so the import rewrites each recognised block into one node of that kind, with the
inputs and attributes of docs/onnx_import.md ("LLM patterns"; the operator contract of issue 49).
Anything not recognised stays as it was.

Each matcher works on a :class:`_Rewrite`: it adds fused nodes and names the node each replaces;
nodes whose outputs nobody reads any more are then dropped, so a tensor still used outside a
block (a residual stream, a shared mask) keeps its producer.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable, NamedTuple

import numpy as np

from .ir import Graph, Node, numel
from .llm_moe import MOE_MATCHERS
from .llm_rewrite import LLM_KINDS, Rewrite as _Rewrite, only

__all__ = ["LLM_KINDS", "fuse_llm_patterns"]

# Nodes that only re-lay out or repeat a key/value (GQA's Unsqueeze/Expand/Reshape, Tile,
# repeat_interleave) or scale it by a constant; walked back from attention's MatMuls.
_KV_WALK = frozenset({"Reshape", "Unsqueeze", "Squeeze", "Expand", "Tile", "Flatten", "Cast", "Identity"})
# Nodes between the Softmax and the MatMul with V: torch's NaN guard of fully masked rows
# (IsNaN -> Where), casts, dropout in inference mode.
_PROB_WALK = frozenset({"Where", "Cast", "Dropout", "Identity"})
# Nodes that build rotate_half(x) or the interleaved rotation out of x.
_ROTATE_OPS = frozenset({"Slice", "Neg", "Concat", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Cast"})


def _last_axis_mean(rw: _Rewrite, n: Node) -> bool:
    x = rw.shape(n.inputs[0])
    axes = n.attrs.get("axes")
    if axes is None and len(n.inputs) > 1 and n.inputs[1] in rw.graph.const_values:
        axes = np.asarray(rw.graph.const_values[n.inputs[1]]).reshape(-1).tolist()
    return bool(x) and axes is not None and [int(a) % len(x) for a in axes] == [len(x) - 1] and \
        int(n.attrs.get("keepdims", 1)) == 1


# --------------------------------------------------------------------------- RMSNorm
def _rms_norms(rw: _Rewrite) -> None:
    """x * 1/sqrt(mean(x^2) + eps) [* gamma] -> RmsNorm(x, gamma).  The reciprocal square root
    is Sqrt then Reciprocal (dynamo), Div(1, Sqrt) (TorchScript) or x / Sqrt; the square is
    Pow(x, 2) or Mul(x, x).  gamma is a parameter of the normalised size ([H]); without one, a
    constant of ones (CANN's kernel always scales)."""
    for r in [n for n in rw.nodes if n.op_type == "ReduceMean"]:
        if not _last_axis_mean(rw, r):
            continue
        sq = rw.made_by(r.inputs[0], "Pow", "Mul")
        if sq is None:
            continue
        x = rw.source(sq.inputs[0])
        if _centred(rw, x):  # x - mean(x): the second half of a LayerNorm
            continue
        if (sq.op_type == "Pow" and rw.scalar(sq.inputs[1]) != 2.0) or \
                (sq.op_type == "Mul" and rw.source(sq.inputs[1]) != x):
            continue
        add = only(rw, r.outputs[0], "Add")
        if add is None or not rw.const(rw.other(add, r.outputs[0])):
            continue
        sqrt = only(rw, add.outputs[0], "Sqrt")
        if sqrt is None:
            continue
        covers = [sq, r, add, sqrt]
        norm = _apply_rsqrt(rw, x, sqrt.outputs[0], covers)
        if norm is None:
            continue
        out = norm.outputs[0]
        while (c := only(rw, out, "Cast")) is not None and rw.same_dtype(c):
            covers.append(c)
            out = c.outputs[0]
        gamma = ""
        scale = only(rw, out, "Mul")
        h = rw.shape(x)[-1] if rw.shape(x) else None
        if scale is not None and rw.param(rw.other(scale, out)) and rw.shape(rw.other(scale, out)) == (h,):
            gamma = rw.other(scale, out)
            covers.append(scale)
            out = scale.outputs[0]
        if not gamma and h is not None:  # CANN's RmsNorm always scales: a weight of ones
            gamma = rw.new_tensor(f"{r.name}/unit_gamma", (h,), rw.graph.tensors[x].dtype)
            rw.graph.tensors[gamma].const = True
        rw.add("RmsNorm", r, [x, gamma], [out], {}, covers)


def _centred(rw: _Rewrite, x: str) -> bool:
    """Is `x` y - ReduceMean(y)?"""
    sub = rw.made_by(x, "Sub")
    mean = sub and rw.made_by(sub.inputs[1], "ReduceMean")
    return bool(mean) and rw.source(mean.inputs[0]) == rw.source(sub.inputs[0])


def _apply_rsqrt(rw: _Rewrite, x: str, s: str, covers: list[Node]) -> Node | None:
    """The node computing x / s (Div(x, s), or Mul(x, Reciprocal(s)), Mul(x, Div(1, s)))."""
    for u in rw.users(s):
        if u.op_type == "Div" and u.inputs[1] == s and rw.source(u.inputs[0]) == x:
            covers.append(u)
            return u
    inv = only(rw, s, "Reciprocal")
    if inv is None:
        inv = only(rw, s, "Div")
        if inv is None or inv.inputs[1] != s or rw.scalar(inv.inputs[0]) != 1.0:
            return None
    mul = only(rw, inv.outputs[0], "Mul")
    if mul is None or rw.source(rw.other(mul, inv.outputs[0])) != x:
        return None
    covers += [inv, mul]
    return mul


def _onnx_rms_norms(rw: _Rewrite) -> None:
    """ONNX RMSNormalization (opset 23) over the last axis -> RmsNorm(x, scale)."""
    for n in [n for n in rw.nodes if n.op_type == "RMSNormalization"]:
        x = rw.shape(n.inputs[0])
        if x and int(n.attrs.get("axis", -1)) % len(x) == len(x) - 1:
            rw.add("RmsNorm", n, [n.inputs[0], n.inputs[1]], [n.outputs[0]], {}, [n])


def _add_rms_norms(rw: _Rewrite) -> None:
    """A residual Add of two same-shape tensors feeding an RmsNorm -> AddRmsNorm(x1, x2, gamma)
    with outputs (y, x1 + x2): CANN's AddRmsNorm writes the sum for the residual stream too."""
    for norm in [n for n in rw.nodes if n.op_type == "RmsNorm"]:
        add = rw.made_by(norm.inputs[0], "Add")
        if add is None or len(add.inputs) != 2 or any(rw.const(t) for t in add.inputs):
            continue
        shape = rw.shape(add.outputs[0])
        if rw.shape(add.inputs[0]) != shape or rw.shape(add.inputs[1]) != shape:
            continue
        rw.add("AddRmsNorm", add, [add.inputs[0], add.inputs[1], norm.inputs[1]],
               [norm.outputs[0], add.outputs[0]], {}, [add, norm])


# --------------------------------------------------------------------------- RoPE
def _rotation_of(rw: _Rewrite, r: str) -> tuple[str, str, list[Node]] | None:
    """If `r` is rotate_half(x) or the interleaved rotation of x (built of Slice, Neg, Concat
    and views of x only, with a Neg), return (x, mode, nodes)."""
    nodes: list[Node] = []
    leaves: set[str] = set()
    stack, seen = [r], set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        n = rw.made_by(t, *_ROTATE_OPS)
        if n is None:
            leaves.add(t)
            continue
        nodes.append(n)
        data = n.inputs if n.op_type == "Concat" else n.inputs[:1]
        stack.extend(d for d in data if d and not rw.const(d))
    if len(leaves) != 1 or not any(n.op_type == "Neg" for n in nodes) or \
            not any(n.op_type == "Slice" for n in nodes):
        return None
    x = leaves.pop()
    steps = [rw.graph.const_values.get(n.inputs[4]) for n in nodes if n.op_type == "Slice" and len(n.inputs) > 4]
    mode = "interleave" if any(s is not None and np.any(np.abs(np.asarray(s)) == 2) for s in steps) else "half"
    return x, mode, nodes


class _Rotation(NamedTuple):
    """One rotary embedding x * cos + rotate(x) * sin: its tensors and the nodes it stands for."""
    x: str
    cos: str
    sin: str
    mode: str                # "half" or "interleave"
    out: str
    nodes: list[Node]
    add: Node                # the final Add (the fused node's anchor)


def _rope_one(rw: _Rewrite, add: Node) -> _Rotation | None:
    muls = [rw.made_by(t, "Mul") for t in add.inputs]
    if len(add.inputs) != 2 or any(m is None for m in muls):
        return None
    for m_cos, m_sin in (muls, muls[::-1]):
        for rot in m_sin.inputs:
            found = _rotation_of(rw, rot)
            if found is None or found[0] not in m_cos.inputs:
                continue
            x, mode, nodes = found
            return _Rotation(x, rw.other(m_cos, x), rw.other(m_sin, rot), mode, add.outputs[0],
                             [m_cos, m_sin, add, *nodes], add)
    return None


def _pair_rotations(rw: _Rewrite, found: list[_Rotation]) -> list[tuple[_Rotation, _Rotation | None]]:
    """Query and key rotations: those sharing cos and sin, in graph order; the rest by the shapes of
    cos and sin (TorchScript recomputes them per use); a rotation left over has no partner."""
    pairs: list[tuple[_Rotation, _Rotation | None]] = []
    rest = found
    for key in (lambda r: (r.cos, r.sin), lambda r: (rw.shape(r.cos), rw.shape(r.sin))):
        pending: dict[Any, _Rotation] = {}
        for r in rest:
            k = key(r)
            if k in pending:
                pairs.append((pending.pop(k), r))
            else:
                pending[k] = r
        rest = list(pending.values())
    return pairs + [(r, None) for r in rest]


def _ropes(rw: _Rewrite) -> None:
    """Rotary embeddings of a query and a key -> ApplyRotaryPosEmb(query, key, cos, sin).  Layout
    BNSD when cos/sin broadcast over axis 1 (HF's unsqueeze_dim=1), else BSND."""
    found = [r for a in list(rw.nodes) if a.op_type == "Add" and (r := _rope_one(rw, a)) is not None]
    for q, k in _pair_rotations(rw, found):
        if k is None:  # CANN's kernel rotates a query and a key: a lone rotation stays element-wise
            continue
        xs, cs = rw.shape(q.x) or (), rw.shape(q.cos) or ()
        layout = "BSND" if len(cs) == 4 and len(xs) == 4 and cs[2] == 1 and xs[2] != 1 else "BNSD"
        rw.add("ApplyRotaryPosEmb", q.add, [q.x, k.x, q.cos, q.sin], [q.out, k.out],
               {"input_layout": layout, "rotary_mode": q.mode}, q.nodes + k.nodes)


# --------------------------------------------------------------------------- attention
def _walk_back(rw: _Rewrite, t: str, ops: frozenset[str], covers: list[Node], scale_ok: bool = True,
               kt: bool = False) -> list[str]:
    """Tensors from `t` backwards through `ops` (and Mul/Div by a constant scalar, and, for the
    transposed key, a Transpose of the last two axes): [t, ..., earliest]."""
    chain = [t]
    while True:
        n = rw.producer.get(t)
        if n is None:
            return chain
        if n.op_type in ops:
            t = n.inputs[0]
        elif scale_ok and n.op_type in ("Mul", "Div") and rw.scalar(n.inputs[1]) is not None:
            t = n.inputs[0]
        elif scale_ok and n.op_type == "Mul" and rw.scalar(n.inputs[0]) is not None:
            t = n.inputs[1]
        elif kt and n.op_type == "Transpose" and _swaps_last_two(n.attrs.get("perm")):
            t = n.inputs[0]
        else:
            return chain
        covers.append(n)
        chain.append(t)


def _swaps_last_two(perm: Any) -> bool:
    if not perm:
        return False
    p = [int(v) for v in perm]
    r = len(p)
    return r >= 2 and p[:-2] == list(range(r - 2)) and p[-2:] == [r - 1, r - 2]


def _kv_tensor(rw: _Rewrite, chain: list[str], b: int, d: int, s: int, axis_s: int) -> str | None:
    """The earliest tensor of a walk that is a [B, Nkv, S, D] key/value (axis_s: 2; a key
    already transposed to [B, Nkv, D, S] is not one)."""
    for t in reversed(chain):
        sh = rw.shape(t)
        if sh is not None and len(sh) == 4 and sh[0] == b and sh[3] == d and sh[axis_s] == s:
            return t
    return None


def _attention_one(rw: _Rewrite, sm: Node) -> None:
    """Softmax(scale * Q K^T + mask) V with the key/value repeated for GQA -> one
    FusedInferAttentionScore(query, key, value, atten_mask), BNSD."""
    x = rw.shape(sm.inputs[0])
    if not x or len(x) != 4 or int(sm.attrs.get("axis", -1)) % 4 != 3:
        return
    covers: list[Node] = [sm]
    mask = ""
    t = sm.inputs[0]
    while (n := rw.producer.get(t)) is not None and n.op_type != "MatMul":
        if n.op_type == "Add" and len(n.inputs) == 2:
            big = [i for i in n.inputs if rw.shape(i) == rw.shape(n.outputs[0]) and _reaches_matmul(rw, i)]
            if not big:
                return
            if mask:
                return
            t, mask = big[0], rw.other(n, big[0])
        elif n.op_type == "Where":  # masked_fill: Where(mask, fill, scores) or Where(mask, scores, fill)
            data = [i for i in n.inputs[1:] if rw.shape(i) == rw.shape(n.outputs[0]) and _reaches_matmul(rw, i)]
            if mask or len(data) != 1:
                return
            t, mask = data[0], n.inputs[0]
        elif n.op_type in ("Mul", "Div", "Cast") and (n.op_type == "Cast" or rw.scalar(n.inputs[1]) is not None):
            t = n.inputs[0]
        else:
            return
        covers.append(n)
    qk = rw.producer.get(t)
    if qk is None:
        return
    covers.append(qk)
    p = sm.outputs[0]
    while (pv := _only_or_guard(rw, p)) is not None and pv.op_type != "MatMul":
        covers += [pv] + [u for u in rw.users(p) if u.op_type == "IsNaN"]
        p = pv.outputs[0]
    if pv is None or pv.inputs[0] != p:
        return
    covers.append(pv)
    q = _walk_back(rw, qk.inputs[0], frozenset({"Cast", "Identity"}), covers)[-1]
    qs = rw.shape(q)
    if qs is None or len(qs) != 4:
        return
    q, out = _unfold_query_groups(rw, q, pv, covers)
    b, n_heads, sq, d = rw.shape(q)
    skv = x[3]
    k_chain = _walk_back(rw, qk.inputs[1], _KV_WALK, covers, kt=True)
    # the key is read before its transpose (K^T is [.., D, S]; with S == D only the walk tells)
    swapped = [i for i, t in enumerate(k_chain[:-1]) if rw.producer[t].op_type == "Transpose"]
    k = _kv_tensor(rw, k_chain[swapped[0] + 1:], b, d, skv, 2) if swapped else None
    v = _kv_tensor(rw, _walk_back(rw, pv.inputs[1], _KV_WALK, covers), b, d, skv, 2)
    if k is None or v is None:
        return
    causal = _causal(rw, mask, sq)
    attrs = {"input_layout": "BNSD", "num_heads": n_heads, "num_key_value_heads": rw.shape(k)[1], "causal": causal}
    _check_attention(pv.name, rw.shape, q, k, v, attrs)
    rw.add("FusedInferAttentionScore", pv, [q, k, v, mask], [out], attrs, covers)


def _unfold_query_groups(rw: _Rewrite, q: str, pv: Node, covers: list[Node]) -> tuple[str, str]:
    """(query, output) of the attention.  For GQA decode, torch's SDPA folds the query heads of
    each KV head into the sequence axis ([B, N, 1, D] -> [B, Nkv, N/Nkv, D]) instead of repeating
    the key/value, and unfolds the output after: the kernel sees the N heads."""
    out = pv.outputs[0]
    fold = rw.made_by(q, "Reshape")
    src = rw.shape(fold.inputs[0]) if fold is not None else None
    qs = rw.shape(q)
    if src is None or len(src) != 4 or src[1] <= qs[1] or numel(src) != numel(qs) or src[3] != qs[3]:
        return q, out
    unfold = only(rw, out, "Reshape")
    if unfold is None or rw.shape(unfold.outputs[0]) != src:
        return q, out
    covers += [fold, unfold]
    return fold.inputs[0], unfold.outputs[0]


def _causal(rw: _Rewrite, mask: str, sq: int) -> int:
    """A mask with one row per query (more than one) is a decoder's causal mask; one row is padding."""
    shape = rw.shape(mask) or ()
    return int(bool(mask) and sq > 1 and len(shape) >= 2 and shape[-2] == sq)


def _reaches_matmul(rw: _Rewrite, t: str) -> bool:
    """Is `t` the scores (a MatMul through scaling and casts), not the mask?"""
    for _ in range(8):
        n = rw.producer.get(t)
        if n is None:
            return False
        if n.op_type == "MatMul":
            return True
        if n.op_type not in ("Mul", "Div", "Cast", "Add", "Where"):
            return False
        t = n.inputs[2] if n.op_type == "Where" else n.inputs[0]
    return False


def _only_or_guard(rw: _Rewrite, p: str) -> Node | None:
    """The node after the probabilities on the way to the MatMul with V: the MatMul itself, or
    torch's NaN guard Where(IsNaN(p), 0, p) (its IsNaN is covered too), a Cast or a Dropout."""
    users = rw.users(p)
    isnan = [u for u in users if u.op_type == "IsNaN"]
    rest = [u for u in users if u.op_type != "IsNaN"]
    if len(rest) != 1 or len(isnan) > 1:
        return None
    n = rest[0]
    if n.op_type == "Where" and isnan and n.inputs[0] == isnan[0].outputs[0] and n.inputs[2] == p:
        return n
    return n if n.op_type in _PROB_WALK - {"Where"} or n.op_type == "MatMul" else None


def _check_attention(where: str, shape: Callable[[str], Any], q: str, k: str, v: str, attrs: dict[str, Any]) -> None:
    """Bad attention at import: head counts that do not divide, key/value that disagree, a KV
    cache shorter than a causal query.  Raises ValueError naming the node and the input."""
    n, nkv = attrs["num_heads"], attrs["num_key_value_heads"]
    if nkv < 1 or n % nkv:
        raise ValueError(f"node {where} (attention): key {k!r} has {nkv} heads, which does not divide the query's "
                         f"{n} (num_key_value_heads)")
    ks, vs = shape(k), shape(v)
    if ks is not None and vs is not None and len(ks) == len(vs) == 4 and ks[:3] != vs[:3]:
        raise ValueError(f"node {where} (attention): value {v!r} of shape {list(vs)} does not match key {k!r} of "
                         f"shape {list(ks)} (heads and sequence)")
    qs = shape(q)
    if attrs.get("causal") and qs is not None and ks is not None:
        sq, skv = (qs[2], ks[2]) if attrs["input_layout"] == "BNSD" else (qs[1], ks[1])
        if skv < sq:
            raise ValueError(f"node {where} (attention): key {k!r} holds {skv} positions (KV cache and new tokens), "
                             f"fewer than the query's {sq}: a causal query cannot attend beyond its cache")


def _attentions(rw: _Rewrite) -> None:
    for sm in [n for n in rw.nodes if n.op_type == "Softmax"]:
        if any(sm is n for n in rw.nodes):
            _attention_one(rw, sm)


def _onnx_attentions(rw: _Rewrite) -> None:
    """ONNX Attention (opset 23): Q, K, V in [B, N, S, D] or [B, S, N*D] (with q_num_heads and
    kv_num_heads), optional mask and past_key/past_value (concatenated with K/V along the
    sequence, as the operator's definition says) -> FusedInferAttentionScore."""
    for n in [n for n in rw.nodes if n.op_type == "Attention"]:
        ins = n.inputs + [""] * (6 - len(n.inputs))
        q, k, v, mask, past_k, past_v = ins[:6]
        qs, ks = rw.shape(q), rw.shape(k)
        if qs is None or ks is None:
            continue
        covers: list[Node] = [n]
        if len(qs) == 4:  # the dynamo exporter repeats GQA's KV heads before the operator
            b, s, d = qs[0], ks[2], qs[3]
            k = _kv_tensor(rw, _walk_back(rw, k, _KV_WALK, covers, scale_ok=False), b, d, s, 2) or k
            v = _kv_tensor(rw, _walk_back(rw, v, _KV_WALK, covers, scale_ok=False), b, d, s, 2) or v
            layout, heads, kv_heads = "BNSD", qs[1], rw.shape(k)[1]
        else:
            layout = "BSH"
            heads, kv_heads = int(n.attrs.get("q_num_heads", 0)), int(n.attrs.get("kv_num_heads", 0))
            if heads < 1 or kv_heads < 1:
                raise ValueError(f"node {n.name} (Attention): 3-D query {q!r} needs q_num_heads and kv_num_heads")
        for name, past, new in (("key", past_k, k), ("value", past_v, v)):
            if past:
                ps = rw.shape(past)
                axis = 2 if layout == "BNSD" else 1
                shape = [*ps[:axis], ps[axis] + rw.shape(new)[axis], *ps[axis + 1:]]
                out = rw.new_tensor(f"{n.name}/present_{name}", shape, rw.graph.tensors[new].dtype)
                rw.add("Concat", n, [past, new], [out], {"axis": axis}, [], suffix=f"_{name}_cache")
                k, v = (out, v) if name == "key" else (k, out)
        sq = qs[2] if layout == "BNSD" else qs[1]
        attrs = {"input_layout": layout, "num_heads": heads, "num_key_value_heads": kv_heads,
                 "causal": int(bool(n.attrs.get("is_causal", 0))) or _causal(rw, mask, sq)}
        _check_attention(n.name, rw.shape, q, k, v, attrs)
        rw.add("FusedInferAttentionScore", n, [q, k, v, mask], [n.outputs[0]], attrs, covers)


_TO_BNSD = [0, 2, 1, 3]


def _bsnd_layouts(rw: _Rewrite) -> None:
    """Exporters lay attention out BNSD with a Transpose of each projection ([B, S, N, D] ->
    [B, N, S, D]) and one back after it; CANN's RoPE and attention kernels read BSND, so the
    transposes go: RoPE and attention become BSND on the projections' own layout.  Only where every
    tensor of the block comes through such a transpose and nothing else reads the rotated query and
    key (a decode's key also goes to the cache, kept in the model's BNSD layout)."""
    for fia in [n for n in rw.nodes if n.op_type == "FusedInferAttentionScore"]:
        q, k, v, mask = fia.inputs
        rope = rw.producer.get(q)
        out, same = fia.outputs[0], []  # TorchScript reshapes the output to its own shape first
        while (r := only(rw, out, "Reshape")) is not None and rw.shape(r.outputs[0]) == rw.shape(out):
            same.append(r)
            out = r.outputs[0]
        tout = only(rw, out, "Transpose")
        if fia.attrs["input_layout"] != "BNSD" or rope is None or rope.op_type != "ApplyRotaryPosEmb" or \
                rope.outputs != [q, k] or tout is None or tout.attrs.get("perm") != _TO_BNSD or \
                rw.users(q) != [fia] or rw.users(k) != [fia]:
            continue
        trans = [rw.made_by(t, "Transpose") for t in (rope.inputs[0], rope.inputs[1], v)]
        if any(t is None or t.attrs.get("perm") != _TO_BNSD for t in trans) or \
                any(len(rw.shape(t) or ()) != 4 or rw.shape(t)[1] != 1 for t in rope.inputs[2:]):
            continue  # cos/sin broadcast over the heads ([B, 1, S, D]): their BSND form is a view
        xq, xk, xv = (t.inputs[0] for t in trans)
        cos, sin = (rw.view(rope, t, tuple(rw.shape(t)[i] for i in _TO_BNSD), f"{rope.name}/{t}_bsnd")
                    for t in rope.inputs[2:])
        qr = rw.new_tensor(f"{rope.name}/query_bsnd", rw.shape(xq), rw.graph.tensors[q].dtype)
        kr = rw.new_tensor(f"{rope.name}/key_bsnd", rw.shape(xk), rw.graph.tensors[k].dtype)
        rw.add("ApplyRotaryPosEmb", rope, [xq, xk, cos, sin], [qr, kr], {**rope.attrs, "input_layout": "BSND"},
               [rope, *trans[:2]], suffix="_bsnd")
        rw.add("FusedInferAttentionScore", fia, [qr, kr, xv, mask], [tout.outputs[0]],
               {**fia.attrs, "input_layout": "BSND"}, [fia, *same, tout, trans[2]], suffix="_bsnd")


# --------------------------------------------------------------------------- SwiGLU
def _silu_of(rw: _Rewrite, t: str) -> tuple[str, list[Node]] | None:
    """If `t` is silu(g) = g * sigmoid(g), return (g, nodes)."""
    m = rw.made_by(t, "Mul")
    if m is None or len(m.inputs) != 2:
        return None
    for g in m.inputs:
        s = rw.made_by(rw.other(m, g), "Sigmoid")
        if s is not None and s.inputs[0] == g:
            return g, [m, s]
    return None


def _swiglus(rw: _Rewrite) -> None:
    """silu(gate) * up (same shapes) -> SwiGlu(gate, up); the kernel reads [..., 2F]."""
    for mul in [n for n in rw.nodes if n.op_type == "Mul"]:
        if not any(mul is n for n in rw.nodes) or len(mul.inputs) != 2:
            continue
        for a in mul.inputs:
            found = _silu_of(rw, a)
            up = rw.other(mul, a)
            if found is None or rw.const(up) or rw.shape(up) != rw.shape(found[0]) or up == found[0]:
                continue
            halves = _halves_of(rw, found[0], up)
            ins, split = ([halves[0]], halves[1]) if halves else ([found[0], up], [])
            rw.add("SwiGlu", mul, ins, [mul.outputs[0]], {"dim": -1}, [mul, *found[1], *split])
            break


def _halves_of(rw: _Rewrite, gate: str, up: str) -> tuple[str, list[Node]] | None:
    """(x, nodes) when gate and up are the first and second half of one tensor x along its last
    axis (a merged gate_up projection, split by Split or two Slices): SwiGlu reads x itself."""
    pg, pu = rw.producer.get(gate), rw.producer.get(up)
    if pg is None or pu is None or pg.inputs[0] != pu.inputs[0]:
        return None
    x = pg.inputs[0]
    xs = rw.shape(x)
    if not xs or xs[-1] != 2 * (rw.shape(gate) or (0,))[-1]:
        return None
    if pg is pu and pg.op_type == "Split" and pg.outputs[:2] == [gate, up] and len(pg.outputs) == 2 and \
            int(pg.attrs.get("axis", 0)) % len(xs) == len(xs) - 1:
        return x, [pg]
    if pg.op_type == pu.op_type == "Slice":
        starts = [rw.graph.const_values.get(n.inputs[1]) for n in (pg, pu)]
        axes = [rw.graph.const_values.get(n.inputs[3]) if len(n.inputs) > 3 else None for n in (pg, pu)]
        if all(a is not None and int(np.asarray(a).reshape(-1)[0]) % len(xs) == len(xs) - 1 for a in axes) and \
                all(v is not None for v in starts) and \
                [int(np.asarray(v).reshape(-1)[0]) for v in starts] == [0, xs[-1] // 2]:
            return x, [pg, pu]
    return None


# --------------------------------------------------------------------------- entry point
def _drop_noop_casts(rw: _Rewrite) -> None:
    """Casts to the dtype a tensor already has (TorchScript writes them around each RMSNorm, as
    HF's `.to(torch.float32)` of a float32 tensor) launch nothing: their readers read the input."""
    renamed: dict[str, str] = {}
    outputs = set(rw.graph.outputs)
    for n in rw.nodes:
        if n.op_type == "Cast" and rw.same_dtype(n) and n.outputs[0] not in outputs:
            renamed[n.outputs[0]] = renamed.get(n.inputs[0], n.inputs[0])
    if renamed:
        rw.nodes = [replace(n, inputs=[renamed.get(t, t) for t in n.inputs]) for n in rw.nodes
                    if not (n.op_type == "Cast" and n.outputs[0] in renamed)]
        rw.refresh()


def _unit_transposes_as_views(rw: _Rewrite) -> None:
    """A Transpose that moves only axes of size 1 (a decode's [B, 1, N, D] -> [B, N, 1, D]) keeps
    the element order: a view, as a compiler emits it (no kernel)."""
    for n in [n for n in rw.nodes if n.op_type == "Transpose"]:
        x = rw.shape(n.inputs[0])
        perm = n.attrs.get("perm")
        if not x or not perm or n.outputs[0] in rw.graph.outputs:
            continue
        moved = [int(p) for p in perm if x[int(p)] != 1]
        if moved == sorted(moved):
            rw.view(n, n.inputs[0], rw.shape(n.outputs[0]), f"{n.name}/as_view", replacing=n)


_MATCHERS: tuple[tuple[frozenset[str], Callable[[_Rewrite], None]], ...] = (
    (frozenset({"RmsNorm"}), _onnx_rms_norms),
    (frozenset({"RmsNorm"}), _rms_norms),
    (frozenset({"AddRmsNorm"}), _add_rms_norms),
    (frozenset({"ApplyRotaryPosEmb"}), _ropes),
    (frozenset({"FusedInferAttentionScore"}), _onnx_attentions),
    (frozenset({"FusedInferAttentionScore"}), _attentions),
    (frozenset({"FusedInferAttentionScore", "ApplyRotaryPosEmb"}), _bsnd_layouts),
    (frozenset({"SwiGlu"}), _swiglus),
    (frozenset({"FusedInferAttentionScore"}), _unit_transposes_as_views),
)


def fuse_llm_patterns(graph: Graph, kinds: Iterable[str] = LLM_KINDS) -> Graph:
    """Rewrite the LLM blocks of `graph` into CANN's fused operators of `kinds` (the others are
    left decomposed: the import passes only the kinds the cost model has).  Returns a new
    graph; `graph.fused` maps each fused node to the names of the nodes it stands for."""
    kinds = frozenset(kinds) & LLM_KINDS
    if not kinds:
        return graph
    g = replace(graph, tensors=dict(graph.tensors))
    rw = _Rewrite(g)
    _drop_noop_casts(rw)
    for needs, matcher in _MATCHERS + MOE_MATCHERS:
        if needs <= kinds:
            matcher(rw)
            rw.sweep()
    if not rw.fused:
        return graph  # nothing recognised: the graph as imported, no-op casts and all
    nodes = [replace(n, index=i) for i, n in enumerate(rw.nodes)]
    return replace(g, nodes=nodes, fused={**graph.fused, **rw.fused})
