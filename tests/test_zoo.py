"""The model zoo: real layer shapes, valid ONNX, command line."""
import subprocess
import sys

import onnx
import pytest

from aoe_native import zoo
from aoe_native.graph.onnx import load_graph


def _count(model, op):
    return sum(1 for n in model.graph.node if n.op_type == op)


def _out_shape(model):
    t = model.graph.output[0].type.tensor_type
    return [d.dim_value for d in t.shape.dim]


@pytest.mark.parametrize("name,convs,matmuls,softmax,out", [
    ("resnet50", 53, 0, 0, [1, 1000]),
    ("bert_base", 0, 12 * 8, 12, [1, 128, 768]),      # q, k, v, out, ffn1, ffn2, scores, context
    ("gpt2_small", 0, 12 * 6 + 1, 12, [1, 128, 50257]),  # c_attn, c_proj, fc, proj, scores, context + lm_head
    ("yolov5s", 60, 0, 0, [1, 25200, 85]),  # 57 Conv+SiLU + 3 Detect convs
])
def test_zoo_models_have_the_published_structure(name, convs, matmuls, softmax, out):
    m = zoo.build(name)
    onnx.checker.check_model(m)
    assert _count(m, "Conv") == convs
    assert _count(m, "MatMul") == matmuls
    assert _count(m, "Softmax") == softmax
    assert _out_shape(m) == out
    g = load_graph(m)
    # every tensor produced by a node has a static shape after inference
    missing = [o for n in g.nodes for o in n.outputs if g.shape(o) is None]
    assert missing == []


def test_resnet50_layer_shapes_are_real():
    g = load_graph(zoo.build("resnet50"))
    conv = {n.name: n for n in g.nodes if n.op_type == "Conv"}
    assert g.shape(conv["conv1"].outputs[0]) == (1, 64, 112, 112)
    assert g.shape(conv["layer4.2.conv3"].outputs[0]) == (1, 2048, 7, 7)
    assert g.shape(conv["layer2.0.conv2"].inputs[1]) == (128, 128, 3, 3)


def test_batch_and_dynamic_batch():
    m = zoo.build("bert_base", batch=4)
    assert _out_shape(m) == [4, 128, 768]
    dyn = zoo.build("resnet50", dynamic_batch=True)
    assert dyn.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    with pytest.raises(KeyError, match="unknown zoo model"):
        zoo.build("alexnet")
    with pytest.raises(ValueError, match="batch"):
        zoo.build("resnet50", batch=0)


def test_zoo_command_line_writes_a_loadable_model(tmp_path):
    path = tmp_path / "sub" / "r.onnx"
    subprocess.run([sys.executable, "-m", "aoe_native.zoo", "yolov5s", "-o", str(path)], check=True,
                   capture_output=True)
    m = onnx.load(str(path))
    assert _out_shape(m) == [1, 25200, 85]


# --------------------------------------------------------------------------- LLM decoders
def _llm(name):
    from aoe_native.graph.llm_patterns import LLM_KINDS
    return load_graph(zoo.build(name), llm_kinds=LLM_KINDS)


@pytest.mark.parametrize("name,matmuls,attention,norms,out", [
    ("llama", 32 * 7 + 1, 32, 65, [1, 2048, 128256]),         # q, k, v, o, gate, up, down + lm_head
    ("llama_decode", 32 * 7 + 1, 32, 65, [1, 1, 128256]),
    ("qwen_moe", 24 * 12 + 1, 24, 49, [1, 2048, 151936]),     # + router, 3 expert, 3 shared, shared gate
])
def test_llm_zoo_structure(name, matmuls, attention, norms, out):
    m = zoo.build(name)
    onnx.checker.check_model(m)
    assert _count(m, "MatMul") == matmuls and _count(m, "Attention") == attention
    assert _count(m, "RMSNormalization") == norms and _out_shape(m) == out


def test_llama_layers_are_cann_kernels():
    """Llama-3-8B's shapes: attention 32 query heads on 8 KV heads of 128, FFN 14336; prefill of 2048
    tokens (causal), decode of 1 token on a 2048-token cache plus itself."""
    for name, shapes, causal in (("llama", [(1, 2048, 32, 128), (1, 2048, 8, 128), (1, 2048, 8, 128)], 1),
                                 ("llama_decode", [(1, 32, 1, 128), (1, 8, 2049, 128), (1, 8, 2049, 128)], 0)):
        g = _llm(name)
        atts = [n for n in g.nodes if n.op_type == "FusedInferAttentionScore"]
        assert len(atts) == 32
        sq = shapes[0][1] if causal else 1
        for a in atts:  # prefill reads the projections BSND; decode the BNSD cache
            assert [g.shape(t) for t in a.inputs[:3]] == shapes
            assert a.attrs["causal"] == causal and a.attrs["num_key_value_heads"] == 8
        kinds = [n.op_type for n in g.nodes]
        assert kinds.count("SwiGlu") == 32 and kinds.count("AddRmsNorm") == 64 and kinds.count("RmsNorm") == 1
        assert not {"Attention", "RMSNormalization", "Sigmoid", "Neg", "Softmax"} & set(kinds)
        swiglu = next(n for n in g.nodes if n.op_type == "SwiGlu")
        assert [g.shape(t) for t in swiglu.inputs] == [(1, sq, 14336)] * 2


def test_qwen_moe_routes_tokens_to_grouped_matmuls():
    from aoe_native.graph.llm_moe import even_groups
    g = _llm("qwen_moe")
    kinds = [n.op_type for n in g.nodes]
    assert kinds.count("MoeGatingTopKSoftmax") == kinds.count("MoeFinalizeRouting") == 24
    assert kinds.count("GroupedMatmul") == 3 * 24 and "TopK" not in kinds and "ScatterElements" not in kinds
    gmm = next(n for n in g.nodes if n.op_type == "GroupedMatmul")
    assert g.shape(gmm.inputs[0]) == (2048 * 4, 2048) and g.shape(gmm.inputs[1]) == (60, 2048, 1408)
    assert gmm.attrs["group_list"] == even_groups(2048 * 4, 60) and sum(gmm.attrs["group_list"]) == 8192
    fin = next(n for n in g.nodes if n.op_type == "MoeFinalizeRouting")
    assert g.shape(fin.inputs[2]) == (2048, 2048)  # the gated shared expert is the skip input


@pytest.mark.parametrize("name", ["llama", "llama_decode", "qwen_moe"])
def test_llm_zoo_is_fully_modelled(name):
    import aoe_native
    from aoe_native.graph.partition import partition
    p = partition(load_graph(zoo.build(name)), aoe_native.supported_ops())
    assert p.unsupported == [], [(u.onnx_type, u.reason) for u in p.unsupported]
