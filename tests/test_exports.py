"""Models exported by PyTorch's two ONNX exporters (tests/data/exports, made by
tests/data/make_exports.py): every shape resolved, every compute operator modelled, the
expected tasks; and the errors for what cannot be imported."""
from collections import Counter
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from aoe_native.ascend.ops import supported_ops
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import partition

EXPORTS = Path(__file__).parent / "data" / "exports"
FILES = sorted(p.name for p in EXPORTS.glob("*.onnx"))


def test_every_model_exported_by_both_exporters():
    torch_files = [f for f in FILES if not f.endswith("_paddle.onnx")]
    names = {f.rsplit("_", 1)[0] for f in torch_files}
    assert names == {"bert", "gpt2", "mobilenetv3", "unet"}
    assert set(torch_files) == {f"{n}_{e}.onnx" for n in names for e in ("ts", "dynamo")}
    assert set(FILES) - set(torch_files) == {"lcnet_paddle.onnx"}  # tests/data/make_paddle_export.py
    assert sum((EXPORTS / f).stat().st_size for f in FILES) < 8e6


@pytest.mark.parametrize("name", FILES)
def test_every_shape_resolved(name):
    g = load_graph(str(EXPORTS / name))
    unknown = [n.name for n in g.nodes for o in n.outputs if o and g.shape(o) is None]
    assert unknown == []


def test_bert_token_type_chain_folds():
    """HF BERT's token-type buffer (ConstantOfShape -> Equal -> Where -> Expand) used to leave
    the batch dimension symbolic for everything downstream."""
    raw = onnx.load(str(EXPORTS / "bert_ts.onnx"))
    assert {"ConstantOfShape", "Where", "Expand"} <= {n.op_type for n in raw.graph.node}
    g = load_graph(str(EXPORTS / "bert_ts.onnx"))
    assert not {"ConstantOfShape", "Expand"} & {n.op_type for n in g.nodes}
    assert all(g.shape(n.outputs[0])[0] == 1 for n in g.nodes if n.op_type == "MatMul")


def _model(nodes, inputs, outputs, opset=17, domains=()):
    g = helper.make_graph(nodes, "bad", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                             [helper.make_opsetid(d, 1) for d in domains])


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_custom_domain_and_control_flow_are_errors():
    custom = _model([helper.make_node("FastGelu", ["x"], ["y"], name="gelu0", domain="com.microsoft")],
                    [_vi("x", [2, 8])], [_vi("y", [2, 8])], domains=["com.microsoft"])
    with pytest.raises(ValueError, match=r"node 'gelu0' is operator 'FastGelu' of the custom domain 'com.microsoft'"):
        load_graph(custom)
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [_vi("t", [2, 8])])
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    branch = _model([helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=then)],
                    [_vi("x", [2, 8]), cond], [_vi("y", [2, 8])])
    with pytest.raises(ValueError, match=r"node 'branch' is control flow \(If\)"):
        load_graph(branch)


def test_data_dependent_shape_names_node_and_input():
    x = _vi("x", [4, 8])
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
             helper.make_node("Transpose", ["nz"], ["t"], name="after")]
    m = _model(nodes, [x], [helper.make_tensor_value_info("t", TensorProto.INT64, None)])
    with pytest.raises(ValueError, match=r"output of node 'nonzero' \(NonZero\).*run time.*--input_shape"):
        load_graph(m)


def _partition(name):
    return partition(load_graph(str(EXPORTS / name)), supported_ops())


@pytest.mark.parametrize("name", FILES)
def test_every_compute_operator_modelled(name):
    p = _partition(name)
    assert p.unsupported == []
    covered = [n for k in p.kernels for n in k.nodes]
    assert len(covered) == len(set(covered)) and len(covered) + p.n_view_nodes == p.n_nodes


@pytest.mark.parametrize("exporter", ["ts", "dynamo"])
def test_bert_tasks(exporter):
    """hidden 64, 4 heads, FFN 128, sequence 16: every distinct MatMul shape is a task, attention
    is two batched matmuls around one softmax, GELU (erf) fuses into the up projection."""
    p = _partition(f"bert_{exporter}.onnx")
    mm = {(t.op_type, tuple(map(tuple, t.inputs))) for t in p.tasks if t.op_type in ("MatMul", "BatchMatMul", "Gemm")}
    assert mm == {("MatMul", ((16, 64), (64, 64))), ("MatMul", ((16, 64), (64, 128))),
                  ("MatMul", ((16, 128), (128, 64))), ("BatchMatMul", ((1, 4, 16, 16), (1, 4, 16, 16))),
                  ("Gemm", ((1, 64), (64, 64), (64,)))}
    kinds = sorted(k.op_type for k in p.kernels if k.op_type in ("BatchMatMul", "Softmax", "LayerNormalization"))
    assert kinds == ["BatchMatMul"] * 4 + ["LayerNormalization"] * 5 + ["Softmax"] * 2
    assert sum(k.attrs.get("epilogue") == ["BiasAdd", "Gelu"] for k in p.kernels) == 2
    assert [k.op_type for k in p.kernels if "Gather" in k.onnx_types] == ["Gather", "Gather"]  # word, token type


@pytest.mark.parametrize("exporter", ["ts", "dynamo"])
def test_gpt2_patterns(exporter):
    """Decomposed LayerNorm -> one LayerNormalization kernel (with its scale and bias); tanh
    GELU -> Gelu epilogue; causal mask (Where) in the scores' epilogue; qkv Split a kernel."""
    p = _partition(f"gpt2_{exporter}.onnx")
    ln = [k for k in p.kernels if k.op_type == "LayerNormalization"]
    assert len(ln) == 5 and all(len(k.nodes) == 9 and k.inputs == [[1, 16, 64], [64], [64]] for k in ln)
    assert sum(k.attrs.get("epilogue") == ["BiasAdd", "Gelu"] for k in p.kernels) == 2
    scores = [k for k in p.kernels if k.attrs.get("epilogue") == ["Div", "Where"]]
    assert len(scores) == 2 and all(k.op_type == "BatchMatMul" for k in scores)
    assert sum(k.op_type == "Split" for k in p.kernels) == 2


@pytest.mark.parametrize("exporter", ["ts", "dynamo"])
def test_cnn_tasks(exporter):
    mb = _partition(f"mobilenetv3_{exporter}.onnx")
    epi = {tuple(k.attrs.get("epilogue", [])) for k in mb.kernels if k.op_type == "Conv"}
    assert {("HardSwish",), ("HardSigmoid",), ("Relu",)} <= epi
    unet = _partition(f"unet_{exporter}.onnx")
    by = {k.op_type: k for k in unet.kernels}
    assert by["Resize"].attrs["mode"] in ("nearest", "linear") and by["Concat"].attrs["axis"] == 1
    # ConvTranspose 2x2 stride 2 of [1, 64, 8, 8]: the backward-data convolution, one 1x1 phase per
    # output pixel of each 2x2 block (4 x 32 channels) over the 8x8 input, no zeros inserted.
    up = next(k for k in unet.kernels if "ConvTranspose" in k.onnx_types)
    assert (up.op_type, up.inputs[0], up.inputs[1], up.attrs["pads"]) == ("Conv", [1, 64, 8, 8], [128, 64, 1, 1],
                                                                          [0, 0, 0, 0])
    assert up.output_shape == [1, 32, 16, 16]


def test_bad_input_writes_nothing_to_the_bank(tmp_path):
    """Each import error names the node or input, and the job stops before the bank exists."""
    from aoe_native import tune_model, zoo
    custom = _model([helper.make_node("FastGelu", ["x"], ["y"], name="gelu0", domain="com.microsoft")],
                    [_vi("x", [2, 8])], [_vi("y", [2, 8])], domains=["com.microsoft"])
    loop_body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"])], "body",
                                  [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                   helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                                  [helper.make_tensor_value_info("c_out", TensorProto.BOOL, [])])
    loop = _model([helper.make_node("Loop", ["", "cond"], [], name="loop0", body=loop_body),
                   helper.make_node("Relu", ["x"], ["y"], name="relu")],
                  [_vi("x", [2, 8]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])], [_vi("y", [2, 8])])
    ext = tmp_path / "ext"
    ext.mkdir()
    onnx.save_model(onnx.load(str(EXPORTS / "mobilenetv3_ts.onnx")), str(ext / "m.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="m.data", size_threshold=0)
    data = (ext / "m.data").read_bytes()
    (ext / "m.data").write_bytes(data[:-100])
    cases = [(custom, "node 'gelu0' is operator 'FastGelu' of the custom domain"),
             (loop, r"node 'loop0' is control flow \(Loop\)"),
             (zoo.build("resnet50", dynamic_batch=True), r"input 'input' has dynamic.*--input_shape"),
             (str(ext / "m.onnx"), r"weight '.+' needs bytes up to \d+ of 'm.data'")]
    for model, msg in cases:
        with pytest.raises(ValueError, match=msg):
            tune_model(model, bank=tmp_path / "bank", parallel=1)
    assert not (tmp_path / "bank").exists()


def test_paddle2onnx_export():
    """PaddlePaddle's exporter writes Hardswish as HardSigmoid * x and keeps BatchNormalization:
    both fuse into the convolution's epilogue; the classifier is a MatMul + bias and a Softmax."""
    p = _partition("lcnet_paddle.onnx")
    epi = Counter(tuple(k.attrs.get("epilogue", [])) for k in p.kernels if k.op_type == "Conv")
    assert epi[("BatchNormalization", "HardSwish")] == 9
    assert {("Add", "Relu"), ("Add", "HardSigmoid")} <= set(epi)  # squeeze-excite convolutions
    assert Counter(k.op_type for k in p.kernels if k.op_type != "Conv") == {"ReduceMean": 3, "Mul": 2, "MatMul": 1,
                                                                             "Softmax": 1}
