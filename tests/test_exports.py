"""Models exported by PyTorch's two ONNX exporters (tests/data/exports, made by
tests/data/make_exports.py): every shape resolved, every compute operator modelled, the
expected tasks; and the errors for what cannot be imported."""
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
    names = {f.rsplit("_", 1)[0] for f in FILES}
    assert names == {"bert", "gpt2", "mobilenetv3", "unet"}
    assert set(FILES) == {f"{n}_{e}.onnx" for n in names for e in ("ts", "dynamo")}
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
