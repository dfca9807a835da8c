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
