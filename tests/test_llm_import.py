"""The import recognises LLM blocks as CANN's fused kernels (graph/llm_patterns.py, graph/llm_moe.py).

Recognition tests pass llm_kinds=LLM_KINDS explicitly; the others estimate, partition and tune
the imported graphs with the cost model's LLM operators.  The exports are tests/data/llm/, made by
tests/data/make_llm_exports.py.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import aoe_native
from aoe_native.graph.llm_moe import even_groups
from aoe_native.graph.llm_patterns import LLM_KINDS
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import partition

LLM = Path(__file__).parent / "data" / "llm"
DENSE = sorted(p.name for p in LLM.glob("*.onnx") if "moe" not in p.name)
ALL = sorted(p.name for p in LLM.glob("*.onnx"))
LAYERS, HEADS, KV_HEADS, HEAD_DIM, SEQ, CACHE, FFN = 2, 4, 2, 16, 8, 8, 96
MOE_TOKENS, MOE_EXPERTS, MOE_TOP_K = 8, 4, 2


def _graph(name: str):
    return load_graph(LLM / name, llm_kinds=LLM_KINDS)


def _kinds(graph) -> Counter:
    return Counter(n.op_type for n in graph.nodes if not all(graph.is_const(o) for o in n.outputs if o))


def test_every_export_is_there():
    stems = {p.rsplit("_", 1)[0] for p in ALL}
    assert stems == {"llama_prefill", "llama_decode", "qwen2_prefill", "qwen2_decode", "moe_prefill", "qwen2moe_prefill"}
    assert all(f"{s}_{e}.onnx" in ALL for s in stems for e in ("ts", "dynamo"))


@pytest.mark.parametrize("name", ALL)
def test_each_layer_is_cann_kernels(name):
    """Per layer: one attention kernel, RoPE of query and key in one kernel, its norms RmsNorm
    (the first) or AddRmsNorm (after a residual Add), its MLP one SwiGlu (two for MoE: the
    routed and the shared expert); none of the decomposed pieces left."""
    g = _graph(name)
    k = _kinds(g)
    assert k["FusedInferAttentionScore"] == LAYERS
    assert k["ApplyRotaryPosEmb"] == LAYERS
    assert k["RmsNorm"] == 1 and k["AddRmsNorm"] == 2 * LAYERS  # embeddings' norm; the rest follow an Add
    assert k["SwiGlu"] == (2 * LAYERS if "moe" in name else LAYERS)
    for gone in ("Softmax", "IsNaN", "Pow", "Sqrt", "Reciprocal", "Neg", "TopK", "ScatterElements", "Split", "Slice"):
        assert k[gone] == 0, (gone, k)
    assert k["Sigmoid"] == (LAYERS if name.startswith("qwen2moe") else 0)  # Qwen2-MoE's shared-expert gate
    # prefill: the exporters' BNSD transposes go, RoPE and attention read the projections' BSND;
    # decode keeps BNSD (the rotated key also goes to the cache, which the model keeps BNSD), and
    # its transposes of one token move only axes of size 1: views
    layout = "BNSD" if "decode" in name else "BSND"
    heads = 1 if layout == "BNSD" else 2
    assert k["Transpose"] == 0
    for rope in (n for n in g.nodes if n.op_type == "ApplyRotaryPosEmb"):
        q, key, cos, sin = (g.shape(t) for t in rope.inputs)
        assert q[heads] == HEADS and key[heads] == KV_HEADS and cos == sin and cos[-1] == HEAD_DIM
        assert cos[heads] == 1 and cos[3 - heads] == q[3 - heads]  # one row per position
        assert rope.attrs == {"input_layout": layout, "rotary_mode": "half"}


@pytest.mark.parametrize("name", ALL)
def test_attention_inputs_and_attrs(name):
    """Query, key and value before GQA's repeat (2 KV heads for 4 query heads), BSND in prefill;
    decode reads the cache concatenated with the new token (9 positions) for a query of 1, BNSD."""
    g = _graph(name)
    decode = "decode" in name
    for att in (n for n in g.nodes if n.op_type == "FusedInferAttentionScore"):
        q, k, v = (g.shape(t) for t in att.inputs[:3])
        sq, skv = (1, CACHE + 1) if decode else (SEQ, SEQ)
        if decode:
            assert q == (1, HEADS, sq, HEAD_DIM) and k == v == (1, KV_HEADS, skv, HEAD_DIM)
        else:
            assert q == (1, sq, HEADS, HEAD_DIM) and k == v == (1, skv, KV_HEADS, HEAD_DIM)
        assert att.attrs == {"input_layout": "BNSD" if decode else "BSND", "num_heads": HEADS,
                             "num_key_value_heads": KV_HEADS, "causal": int(not decode)}
        assert att.inputs[3] and g.shape(att.inputs[3])[-1] == skv  # the mask is kept as the kernel's input
        if decode:  # the key is the KV cache input concatenated with the new key
            cat = next(n for n in g.nodes if att.inputs[1] in n.outputs)
            assert cat.op_type == "Concat" and [g.shape(t)[2] for t in cat.inputs] == [CACHE, 1]


@pytest.mark.parametrize("exporter", ["ts", "dynamo"])
def test_moe_routing(exporter):
    """Softmax + TopK -> MoeGatingTopKSoftmax; the experts -> MoeInitRouting, GroupedMatmul for gate,
    up and down over the T*k routed rows (even split assumed), SwiGlu, and MoeFinalizeRouting whose
    skip input is the shared expert's output."""
    g = _graph(f"moe_prefill_{exporter}.onnx")
    k = _kinds(g)
    assert k["MoeGatingTopKSoftmax"] == k["MoeInitRouting"] == k["MoeFinalizeRouting"] == LAYERS
    assert k["GroupedMatmul"] == 3 * LAYERS
    rows = MOE_TOKENS * MOE_TOP_K
    for gmm in (n for n in g.nodes if n.op_type == "GroupedMatmul"):
        x, w = g.shape(gmm.inputs[0]), g.shape(gmm.inputs[1])
        assert x[0] == rows and w[0] == MOE_EXPERTS and x[1] == w[1]
        assert gmm.attrs["group_list"] == [rows // MOE_EXPERTS] * MOE_EXPERTS and gmm.attrs["group_list_type"] == 1
        assert "even split" in gmm.attrs["_assumed"]
    for gate in (n for n in g.nodes if n.op_type == "MoeGatingTopKSoftmax"):
        assert g.shape(gate.inputs[0]) == (MOE_TOKENS, MOE_EXPERTS) and gate.attrs == {"k": MOE_TOP_K}
    for fin in (n for n in g.nodes if n.op_type == "MoeFinalizeRouting"):
        shapes = [g.shape(t) if t else None for t in fin.inputs]
        assert shapes[0] == (rows, 64) and shapes[1] == (rows,) and shapes[2] == (MOE_TOKENS, 64)
        assert shapes[5] == shapes[6] == (MOE_TOKENS, MOE_TOP_K)
        assert shapes[4] == (MOE_EXPERTS, 64) and g.is_const(fin.inputs[4])  # v1's bias: zeros
        skip = g.nodes[[n.name for n in g.nodes].index(next(n.name for n in g.nodes if fin.inputs[2] in n.outputs))]
        assert "shared" in str(skip.inputs) or skip.op_type in ("Gemm", "MatMul")


@pytest.mark.parametrize("exporter", ["ts", "dynamo"])
def test_transformers_qwen2_moe(exporter):
    """transformers' Qwen2-MoE (batched_mm experts: each routed row times its expert's gathered
    weight): the repeat of the tokens -> MoeInitRouting, the gathered matmuls -> GroupedMatmul over
    the [E, N, K] weights (transpose_weight), the merged gate_up halves -> one SwiGlu, the weighted
    sum over k -> MoeFinalizeRouting with the gated shared expert as its skip input."""
    g = _graph(f"qwen2moe_prefill_{exporter}.onnx")
    k = _kinds(g)
    assert k["MoeGatingTopKSoftmax"] == k["MoeInitRouting"] == k["MoeFinalizeRouting"] == LAYERS
    assert k["GroupedMatmul"] == 2 * LAYERS
    assert not any(n.op_type in ("Gather", "GatherND") and len(g.shape(n.inputs[0])) == 3 for n in g.nodes)
    rows = SEQ * MOE_TOP_K
    gate_up, down = [n for n in g.nodes if n.op_type == "GroupedMatmul"][:2]
    assert [g.shape(t) for t in gate_up.inputs[:2]] == [(rows, 64), (MOE_EXPERTS, 64, 64)]  # [E, 2F, H]
    assert [g.shape(t) for t in down.inputs[:2]] == [(rows, 32), (MOE_EXPERTS, 64, 32)]
    assert gate_up.attrs["transpose_weight"] == 1 and sum(gate_up.attrs["group_list"]) == rows
    act = next(n for n in g.nodes if n.op_type == "SwiGlu" and down.inputs[0] in n.outputs)
    assert act.inputs == [gate_up.outputs[0]]  # the [R, 2F] projection itself
    init = next(n for n in g.nodes if n.op_type == "MoeInitRouting")
    assert init.outputs[0] == gate_up.inputs[0] and g.shape(init.inputs[0]) == (SEQ, 64)
    fin = next(n for n in g.nodes if n.op_type == "MoeFinalizeRouting")
    assert fin.inputs[0] == down.outputs[0] and fin.inputs[1] == init.outputs[1]
    assert g.shape(fin.inputs[2]) == (SEQ, 64) and g.shape(fin.inputs[5]) == (SEQ, MOE_TOP_K)


def test_even_groups():
    assert even_groups(16, 4) == [4, 4, 4, 4]
    assert even_groups(10, 4) == [3, 3, 2, 2] and sum(even_groups(10, 4)) == 10


def test_recognition_keeps_other_models_as_they_were():
    """A model with no LLM block imports as before (the CNN exports), and GPT-2's LayerNorm is
    not mistaken for an RMSNorm of the centred input."""
    data = Path(__file__).parent / "data" / "exports"
    for name in ("unet_ts.onnx", "mobilenetv3_dynamo.onnx", "gpt2_dynamo.onnx"):
        plain, fused = load_graph(data / name, llm_kinds=()), load_graph(data / name, llm_kinds=LLM_KINDS)
        assert [n.op_type for n in fused.nodes] == [n.op_type for n in plain.nodes]


def test_default_import_emits_only_kernels_the_cost_model_has():
    supported = set(aoe_native.supported_ops())
    g = load_graph(LLM / "llama_prefill_dynamo.onnx")
    assert {n.op_type for n in g.nodes} & LLM_KINDS <= supported


def test_fused_nodes_name_what_they_stand_for():
    g = _graph("llama_prefill_ts.onnx")
    norm = next(n for n in g.nodes if n.op_type == "RmsNorm")
    covered = g.fused[norm.name]
    assert any("ReduceMean" in c for c in covered) and any("Sqrt" in c for c in covered)


@pytest.mark.parametrize("name", ALL)
def test_exports_have_no_unmodelled_nodes(name):
    """With the LLM operators in the cost model, the default import models every node."""
    g = load_graph(LLM / name)
    p = partition(g, aoe_native.supported_ops())
    assert p.unsupported == [], [(u.onnx_type, u.reason) for u in p.unsupported]
    assert {"FusedInferAttentionScore", "SwiGlu"} <= {k.op_type for k in p.kernels}


# --------------------------------------------------------------------------- hand-built graphs
def _model(nodes, inputs, outputs, inits=(), opset=23):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _f(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _causal_attention(sq: int, skv: int) -> onnx.ModelProto:
    mask = np.triu(np.full((sq, skv), -1e4, np.float32), 1)
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="k_t"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             helper.make_node("Add", ["s", "mask"], ["sm"], name="mask_add"),
             helper.make_node("Softmax", ["sm"], ["p"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    return _model(nodes, [_f("q", [1, 4, sq, 16]), _f("k", [1, 4, skv, 16]), _f("v", [1, 4, skv, 16])],
                  [_f("y", [1, 4, sq, 16])], [numpy_helper.from_array(mask, "mask")])


def test_decomposed_attention_hand_built():
    g = load_graph(_causal_attention(8, 8), llm_kinds=LLM_KINDS)
    (att,) = [n for n in g.nodes if n.op_type != "Transpose"]
    assert att.op_type == "FusedInferAttentionScore" and att.inputs == ["q", "k", "v", "mask"]
    assert att.attrs["causal"] == 1 and att.attrs["num_heads"] == att.attrs["num_key_value_heads"] == 4


def test_kv_cache_shorter_than_query_is_an_error():
    with pytest.raises(ValueError, match=r"node pv .*key 'k' holds 4 positions.*query's 8"):
        load_graph(_causal_attention(8, 4), llm_kinds=LLM_KINDS)


def test_onnx_attention_op_with_cache():
    """ONNX Attention (opset 23) with past_key/past_value: the cache update is a Concat and the
    kernel reads the whole cache."""
    nodes = [helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "present_k", "present_v"],
                              name="attn", is_causal=1)]
    m = _model(nodes, [_f("q", [1, 8, 1, 16]), _f("k", [1, 2, 1, 16]), _f("v", [1, 2, 1, 16]),
                       _f("pk", [1, 2, 31, 16]), _f("pv", [1, 2, 31, 16])], [_f("y", [1, 8, 1, 16])])
    g = load_graph(m, llm_kinds=LLM_KINDS)
    att = next(n for n in g.nodes if n.op_type == "FusedInferAttentionScore")
    assert g.shape(att.inputs[1]) == g.shape(att.inputs[2]) == (1, 2, 32, 16)
    assert att.attrs == {"input_layout": "BNSD", "num_heads": 8, "num_key_value_heads": 2, "causal": 1}
    assert sorted(n.op_type for n in g.nodes) == ["Concat", "Concat", "FusedInferAttentionScore"]


def test_inconsistent_head_counts_are_an_error():
    nodes = [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", q_num_heads=4, kv_num_heads=3)]
    m = _model(nodes, [_f("q", [1, 8, 64]), _f("k", [1, 8, 48]), _f("v", [1, 8, 48])], [_f("y", [1, 8, 64])])
    with pytest.raises(ValueError, match=r"node attn.*key 'k' has 3 heads, which does not divide the query's 4"):
        load_graph(m, llm_kinds=LLM_KINDS)


def test_onnx_rms_normalization_op():
    nodes = [helper.make_node("RMSNormalization", ["x", "g"], ["y"], axis=-1, name="norm")]
    m = _model(nodes, [_f("x", [2, 8, 64])], [_f("y", [2, 8, 64])],
               [numpy_helper.from_array(np.ones(64, np.float32), "g")])
    (n,) = load_graph(m, llm_kinds=LLM_KINDS).nodes
    assert n.op_type == "RmsNorm" and n.inputs == ["x", "g"]


def _interleaved_rope(with_key: bool = True) -> onnx.ModelProto:
    """y = x * cos + rot(x) * sin for a query q [1, 8, 4, 16] and a key k [1, 8, 2, 16] (BSND), rot
    pairing (x0, x1) -> (-x1, x0): GPT-J/Llama-1 style."""
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    nodes = []
    for x, heads in (("q", 4), ("k", 2))[:2 if with_key else 1]:
        nodes += [helper.make_node("Slice", [x, "s0", "end", "ax", "st"], [f"{x}_even"], name=f"{x}_even"),
                  helper.make_node("Slice", [x, "s1", "end", "ax", "st"], [f"{x}_odd"], name=f"{x}_odd"),
                  helper.make_node("Neg", [f"{x}_odd"], [f"{x}_nodd"], name=f"{x}_neg"),
                  helper.make_node("Unsqueeze", [f"{x}_nodd", "last"], [f"{x}_a"], name=f"{x}_ua"),
                  helper.make_node("Unsqueeze", [f"{x}_even", "last"], [f"{x}_b"], name=f"{x}_ub"),
                  helper.make_node("Concat", [f"{x}_a", f"{x}_b"], [f"{x}_ab"], axis=-1, name=f"{x}_stack"),
                  helper.make_node("Reshape", [f"{x}_ab", f"shape_{x}"], [f"{x}_rot"], name=f"{x}_flat"),
                  helper.make_node("Mul", [x, "cos"], [f"{x}_c"], name=f"{x}_mc"),
                  helper.make_node("Mul", [f"{x}_rot", "sin"], [f"{x}_s"], name=f"{x}_ms"),
                  helper.make_node("Add", [f"{x}_c", f"{x}_s"], [f"{x}_y"], name=f"{x}_rope")]
    inits = [c("s0", [0]), c("s1", [1]), c("end", [16]), c("ax", [3]), c("st", [2]), c("last", [-1]),
             c("shape_q", [1, 8, 4, 16]), c("shape_k", [1, 8, 2, 16]),
             numpy_helper.from_array(np.ones((1, 8, 1, 16), np.float32), "cos"),
             numpy_helper.from_array(np.ones((1, 8, 1, 16), np.float32), "sin")]
    ins = [_f("q", [1, 8, 4, 16]), _f("k", [1, 8, 2, 16])][:2 if with_key else 1]
    outs = [_f("q_y", [1, 8, 4, 16]), _f("k_y", [1, 8, 2, 16])][:2 if with_key else 1]
    return _model(nodes, ins, outs, inits)


def test_interleaved_rope_bsnd():
    g = load_graph(_interleaved_rope(), llm_kinds=LLM_KINDS)
    (n,) = [n for n in g.nodes if not all(g.is_const(o) for o in n.outputs)]
    assert n.op_type == "ApplyRotaryPosEmb" and n.inputs == ["q", "k", "cos", "sin"] and n.outputs == ["q_y", "k_y"]
    assert n.attrs == {"input_layout": "BSND", "rotary_mode": "interleave"}
    # CANN's kernel rotates a query and a key: a lone rotation stays element-wise
    alone = load_graph(_interleaved_rope(with_key=False), llm_kinds=LLM_KINDS)
    assert "ApplyRotaryPosEmb" not in {n.op_type for n in alone.nodes}


def _qdq_matmul(dynamic: bool, scale_shape=(32,), block: int = 0) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((256, 32), np.int8), "w")
    s = numpy_helper.from_array(np.ones(scale_shape, np.float32), "w_scale")
    dq_w = helper.make_node("DequantizeLinear", ["w", "w_scale"], ["w_f"], name="dq_w", axis=1 if not block else 0,
                            **({"block_size": block} if block else {}))
    if not dynamic:
        nodes = [dq_w, helper.make_node("MatMul", ["x", "w_f"], ["y"], name="mm")]
    else:
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
                 helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["x_f"], name="dq_x"), dq_w,
                 helper.make_node("MatMul", ["x_f", "w_f"], ["y"], name="mm")]
    return _model(nodes, [_f("x", [16, 256])], [_f("y", [16, 32])], [w, s], opset=21)


def test_weight_quant_matmul():
    (n,) = load_graph(_qdq_matmul(False), llm_kinds=LLM_KINDS).nodes
    assert n.op_type == "WeightQuantBatchMatmul" and n.inputs[:3] == ["x", "w", "w_scale"]
    # the float inputs take the kernel's activation dtype (""), the weight is int8; absent ones ""
    assert n.attrs["antiquant_group_size"] == 0 and n.attrs["input_dtypes"] == ["", "int8", "", "", "", "", ""]
    (n,) = load_graph(_qdq_matmul(False, (8, 32), block=32), llm_kinds=LLM_KINDS).nodes
    assert n.attrs["antiquant_group_size"] == 32


def test_dynamic_quant_matmul():
    g = load_graph(_qdq_matmul(True), llm_kinds=LLM_KINDS)
    assert [n.op_type for n in g.nodes] == ["DynamicQuant", "QuantBatchMatmulV3"]
    mm = g.nodes[1]
    # ONNX's dynamic quantisation has one scale for the tensor: folded into `scale`, no per-token scale
    assert mm.inputs == ["xq", "w", "w_scale", "", "", ""] and mm.attrs["output_dtype"] == "float16"
    assert mm.attrs["input_dtypes"] == ["int8", "int8", "", "", "", ""]  # DynamicQuantizeLinear's uint8 is CANN's int8


def test_dynamic_quantize_linear_becomes_dynamic_quant_for_2_to_8_dims():
    # aclnnDynamicQuant takes x of 2 to 8 dimensions (aclnn_dynamic_quant.cpp CheckShape): a 1-D x stays ONNX's node.
    def kinds(shape):
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql")]
        m = _model(nodes, [_f("x", shape)], [_f("xq", shape, TensorProto.UINT8), _f("xs", [])], opset=21)
        return [n.op_type for n in load_graph(m, llm_kinds=LLM_KINDS).nodes]
    assert kinds([16, 256]) == ["DynamicQuant"]
    assert kinds([256]) == ["DynamicQuantizeLinear"]


def test_quant_scale_of_the_wrong_shape_is_an_error():
    with pytest.raises(ValueError, match=r"node dq_w \(DequantizeLinear\): scale 'w_scale' has shape \[3, 32\]"):
        load_graph(_qdq_matmul(False, (3, 32), block=32), llm_kinds=LLM_KINDS)


# --------------------------------------------------------------------------- SGAT and GDAT
def _norm_quant_matmul(also_read: bool) -> onnx.ModelProto:
    """RMSNorm -> DynamicQuantizeLinear -> int8 matmul; with also_read, a float MatMul reads the
    norm's output too (then CANN cannot fuse the quantisation into the norm)."""
    w = numpy_helper.from_array(np.ones((256, 32), np.int8), "w")
    nodes = [helper.make_node("RMSNormalization", ["x", "g"], ["y"], axis=-1, name="norm"),
             helper.make_node("DynamicQuantizeLinear", ["y"], ["yq", "ys", "yz"], name="dql"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y_f"], name="dq_y"),
             helper.make_node("DequantizeLinear", ["w", "w_scale"], ["w_f"], name="dq_w", axis=1),
             helper.make_node("MatMul", ["y_f", "w_f"], ["out"], name="mm")]
    outs = [_f("out", [16, 32])]
    inits = [w, numpy_helper.from_array(np.ones(32, np.float32), "w_scale"),
             numpy_helper.from_array(np.ones(256, np.float32), "g")]
    if also_read:
        inits.append(numpy_helper.from_array(np.ones((256, 300), np.float32), "w2"))
        nodes.append(helper.make_node("MatMul", ["y", "w2"], ["out2"], name="mm2"))
        outs.append(_f("out2", [16, 300]))
    return _model(nodes, [_f("x", [16, 256])], outs, inits)


def _atoms(graph):
    from aoe_native.graph.partition import atoms
    every = set(aoe_native.supported_ops()) | LLM_KINDS | {"AddRmsNormDynamicQuant", "DequantSwigluQuant"}
    return atoms(graph, every), every


def test_sgat_fuses_rms_norm_and_dynamic_quant():
    from aoe_native.graph.fusion import fusion_space
    from aoe_native.graph.partition import kernel_of
    ag, every = _atoms(load_graph(_norm_quant_matmul(False), llm_kinds=LLM_KINDS))
    assert [a.node.op_type for a in ag.atoms] == ["RmsNorm", "DynamicQuant", "QuantBatchMatmulV3"]
    assert (0, 1) in fusion_space(ag).groups
    assert kernel_of(ag, [0, 1], every) == ("AddRmsNormDynamicQuant", [[16, 256], [16, 256], [256], []], {})
    ag, _ = _atoms(load_graph(_norm_quant_matmul(True), llm_kinds=LLM_KINDS))
    assert [g for g in fusion_space(ag).groups if len(g) > 1] == []  # y is read as float too


def test_sgat_offers_add_rms_norm_when_the_import_left_them_apart():
    from aoe_native.graph.fusion import fusion_space
    from aoe_native.graph.partition import kernel_of
    g = load_graph(LLM / "llama_prefill_dynamo.onnx", llm_kinds=LLM_KINDS - {"AddRmsNorm"})
    ag, every = _atoms(g)
    pairs = [grp for grp in fusion_space(ag).groups if len(grp) == 2
             and [ag.atoms[i].node.op_type for i in grp] == ["Add", "RmsNorm"]]
    assert len(pairs) == 2 * LAYERS
    assert kernel_of(ag, list(pairs[0]), every) == ("AddRmsNorm", [[1, SEQ, 64]] * 2 + [[64]], {})


def test_backward_kernels_of_llm_operators():
    """Attention's backward: 2.5 forward kernels (FlashAttention-2's five matmuls to two); a grouped
    matmul's: dX a GroupedMatmul with the transposed weights, dW a BatchMatMul per expert; the norm
    and expert weights are parameters."""
    from aoe_native.jobs.backward import _backward_kernels, _parameters
    g = _graph("moe_prefill_dynamo.onnx")
    produced = {o for n in g.nodes for o in n.outputs if o}
    params, weights, _ = _parameters(g)
    att = next(n for n in g.nodes if n.op_type == "FusedInferAttentionScore")
    ks = _backward_kernels(g, att, produced, weights)
    assert [k[0] for k in ks] == ["FusedInferAttentionScore"] * 3
    assert ks[0][1][:2] == [[1, SEQ, HEADS, HEAD_DIM], [1, SEQ, KV_HEADS, HEAD_DIM]]  # the forward, BSND
    half = ks[2][1]  # half the queries (a causal query may not outnumber its keys), the mask's rows too
    assert half[0] == [1, SEQ // 2, HEADS, HEAD_DIM] and half[1] == ks[0][1][1] and half[3][-2:] == [SEQ // 2, SEQ]
    gmm = next(n for n in g.nodes if n.op_type == "GroupedMatmul")
    assert gmm.inputs[1] in weights and any("w_gate" in p for p in params)
    rows = MOE_TOKENS * MOE_TOP_K
    (dx, dx_in, dx_attrs), (dw, dw_in, _) = _backward_kernels(g, gmm, produced, weights)
    assert (dx, dx_in[0], dx_attrs["transpose_weight"]) == ("GroupedMatmul", [rows, 32], 1)
    per_expert = rows // MOE_EXPERTS
    assert (dw, dw_in) == ("BatchMatMul", [[MOE_EXPERTS, 64, per_expert], [MOE_EXPERTS, per_expert, 32]])
    norm = next(n for n in g.nodes if n.op_type == "AddRmsNorm")
    assert norm.inputs[2] in weights


def test_gdat_predicts_an_llm_training_step():
    from aoe_native.jobs.backward import predict_timeline
    tl = predict_timeline(load_graph(LLM / "llama_prefill_dynamo.onnx"), max_evals=4)
    times = [ready for _, _, ready in tl]
    assert times == sorted(times) and times[-1] > 0
    assert any("layernorm" in name for name, _, _ in tl)  # RmsNorm's weight is a gradient


def test_sgat_tunes_a_quantised_norm(tmp_path):
    from aoe_native.jobs.sgat import tune_subgraphs
    r = tune_subgraphs(load_graph(_norm_quant_matmul(False)), evals_per_kernel=30, parallel=1, bank=tmp_path)
    assert r.tuned_ms <= r.baseline_ms * (1 + 1e-9)
    assert r.candidate_kernels > r.baseline_kernels  # the fused norm + quantisation was a candidate


def test_coverage_counts_attention_and_expert_flops():
    """node_work (coverage shares) counts a fused attention's two matmuls and a GroupedMatmul's
    dot products, not one FLOP per output element."""
    from aoe_native.graph.partition import node_work
    g = _graph("moe_prefill_dynamo.onnx")
    att = next(n for n in g.nodes if n.op_type == "FusedInferAttentionScore")
    assert node_work(g, att)[0] == 4.0 * SEQ * HEADS * HEAD_DIM * SEQ
    gmm = next(n for n in g.nodes if n.op_type == "GroupedMatmul")
    assert node_work(g, gmm)[0] == 2.0 * MOE_TOKENS * MOE_TOP_K * 32 * 64


def test_rms_norm_without_weight_hand_built():
    """x / sqrt(mean(x^2) + eps) with no weight (Div form): RmsNorm with a constant weight of ones,
    as CANN's kernel always scales."""
    two, eps, axes = (numpy_helper.from_array(np.array(v, t), n) for v, t, n in
                      ((2.0, np.float32, "two"), (1e-6, np.float32, "eps"), ([-1], np.int64, "axes")))
    nodes = [helper.make_node("Pow", ["x", "two"], ["sq"], name="pow"),
             helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], name="mean", keepdims=1),
             helper.make_node("Add", ["ms", "eps"], ["mse"], name="add_eps"),
             helper.make_node("Sqrt", ["mse"], ["rms"], name="sqrt"),
             helper.make_node("Div", ["x", "rms"], ["y"], name="div")]
    g = load_graph(_model(nodes, [_f("x", [4, 32])], [_f("y", [4, 32])], [two, eps, axes], opset=18),
                   llm_kinds=LLM_KINDS)
    (n,) = [n for n in g.nodes if not all(g.is_const(o) for o in n.outputs)]
    assert n.op_type == "RmsNorm" and n.inputs[0] == "x" and g.shape(n.inputs[1]) == (32,) and g.is_const(n.inputs[1])
    assert sorted(g.fused[n.name]) == ["add_eps", "div", "mean", "pow", "sqrt"]


def test_topological_order_ends_on_a_cyclic_graph():
    # A malformed file can make two nodes read each other's outputs (the onnx fuzz target found one
    # that hung the import here); the order must still end, with every node once.
    from aoe_native.graph.ir import Node
    from aoe_native.graph.llm_rewrite import topological

    a = Node(0, "a", "Relu", ["y"], ["x"], {})
    b = Node(1, "b", "Relu", ["x"], ["y"], {})
    c = Node(2, "c", "Relu", ["y"], ["z"], {})
    order = topological([a, b, c], {"x": a, "y": b, "z": c})
    assert sorted(n.name for n in order) == ["a", "b", "c"]
    assert order.index(b) < order.index(c)
