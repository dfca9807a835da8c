"""ONNX import: input shapes, shape inference, constant folding, node mapping, bad files."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from aoe_native import zoo
from aoe_native.graph.lowering import UnsupportedNode, map_node
from aoe_native.graph.onnx import load_graph, parse_input_shape


def test_parse_input_shape():
    assert parse_input_shape("input_ids:1,128;attention_mask:1,128") == {
        "input_ids": [1, 128], "attention_mask": [1, 128]}
    assert parse_input_shape("ns:x:2,3;") == {"ns:x": [2, 3]}  # names may contain ':'
    assert parse_input_shape(None) == {} and parse_input_shape({"a": [1, 2]}) == {"a": [1, 2]}
    for bad, msg in [("x", "name:d1"), ("x:1,a", "not an integer"), ("x:0,3", ">= 1"), ("x:1;x:2", "twice")]:
        with pytest.raises(ValueError, match=msg):
            parse_input_shape(bad)


def test_dynamic_batch_needs_input_shape():
    m = zoo.build("resnet50", dynamic_batch=True)
    with pytest.raises(ValueError, match=r"input 'input' has dynamic.*--input_shape"):
        load_graph(m)
    g = load_graph(m, "input:2,3,224,224")
    fc = next(n for n in g.nodes if n.name == "fc")
    assert g.shape(fc.outputs[0]) == (2, 1000)


def test_input_shape_errors_name_the_problem():
    m = zoo.build("resnet50")
    with pytest.raises(KeyError, match="'images', which is not an input"):
        load_graph(m, "images:1,3,224,224")
    with pytest.raises(ValueError, match="rank 4"):
        load_graph(m, "input:1,3,224")
    with pytest.raises(ValueError, match="dimension 1 is fixed to 3"):
        load_graph(m, "input:1,4,224,224")


def test_bad_files_give_clear_errors(tmp_path):
    good = tmp_path / "r.onnx"
    data = zoo.build("resnet50").SerializeToString()
    good.write_bytes(data)
    trunc = tmp_path / "trunc.onnx"
    trunc.write_bytes(data[: len(data) // 3])
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"this is not a protobuf \x00\xff" * 10)
    for p in (trunc, junk):
        with pytest.raises(ValueError, match=str(p.name) + ".*not a readable ONNX model"):
            load_graph(str(p))
    with pytest.raises(FileNotFoundError, match="missing.onnx"):
        load_graph(str(tmp_path / "missing.onnx"))
    assert len(load_graph(str(good)).nodes) == 175


def _exported_style_model():
    """Weights as initializers, a Constant node and a Shape->Gather->Concat->Reshape chain, as
    torch.onnx.export emits them: the shape chain folds away, only the real ops remain."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 64])
    w = numpy_helper.from_array(np.zeros((64, 32), np.float32), "w")
    b = numpy_helper.from_array(np.zeros((32,), np.float32), "b")
    idx = numpy_helper.from_array(np.array([0, 1], np.int64), "idx")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
        helper.make_node("Add", ["mm", "b"], ["y"], name="bias"),
        helper.make_node("Shape", ["y"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "idx"], ["s2"], name="gather_shape", axis=0),
        helper.make_node("Constant", [], ["minus1"], name="const",
                         value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Concat", ["s2", "minus1"], ["target"], name="concat_shape", axis=0),
        helper.make_node("Reshape", ["y", "target"], ["z"], name="reshape"),
        helper.make_node("ReduceSum", ["z", "axes"], ["r"], name="rsum", keepdims=0),
    ]
    axes = numpy_helper.from_array(np.array([2], np.int64), "axes")
    out = helper.make_tensor_value_info("r", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "exported", [x], [out], [w, b, idx, axes])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_exported_model_constant_subgraph_folds():
    g = load_graph(_exported_style_model())
    assert g.inputs == {"x": (2, 16, 64)}
    # The shape chain is folded into a constant and its nodes are gone.
    assert [n.name for n in g.nodes] == ["mm", "bias", "const", "reshape", "rsum"]
    assert g.is_const("target") and g.const_values["target"].tolist() == [2, 16, -1]
    rsum = next(n for n in g.nodes if n.name == "rsum")
    spec = map_node(g, rsum)
    assert (spec.op_type, spec.attrs) == ("ReduceSum", {"axes": [2], "keepdims": 0})
    mm = map_node(g, next(n for n in g.nodes if n.name == "mm"))
    assert (mm.op_type, mm.inputs) == ("MatMul", [[32, 64], [64, 32]])  # leading dims fold into M


def test_node_mapping_details():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 15, 15])
    wt = helper.make_tensor_value_info("w", TensorProto.FLOAT, [16, 8, 3, 3])
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 4, 8, 16])
    bm = helper.make_tensor_value_info("bm", TensorProto.FLOAT, [2, 4, 16, 8])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", strides=[2, 2], auto_pad="SAME_UPPER"),
             helper.make_node("MatMul", ["a", "bm"], ["m"], name="bmm"),
             helper.make_node("GlobalAveragePool", ["c"], ["p"], name="gap"),
             helper.make_node("MaxPool", ["c"], ["mp"], name="maxpool", kernel_shape=[2, 2]),
             helper.make_node("LpPool", ["c"], ["lp"], name="lppool", kernel_shape=[2, 2])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("m", "p", "mp", "lp")]
    g = load_graph(helper.make_model(helper.make_graph(nodes, "t", [x, wt, a, bm], outs),
                                     opset_imports=[helper.make_opsetid("", 17)]))
    by = {n.name: n for n in g.nodes}
    conv = map_node(g, by["conv"])
    assert conv.attrs == {"strides": [2, 2], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
    assert g.shape("c") == (1, 16, 8, 8)
    assert map_node(g, by["bmm"]).op_type == "BatchMatMul"
    gap = map_node(g, by["gap"])
    assert (gap.op_type, gap.attrs) == ("ReduceMean", {"axes": [2, 3], "keepdims": 1})
    mp = map_node(g, by["maxpool"])
    assert (mp.op_type, mp.inputs, mp.attrs) == ("MaxPool", [[1, 16, 8, 8]], {
        "kernel_shape": [2, 2], "strides": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": 0, "dilations": [1, 1]})
    with pytest.raises(UnsupportedNode, match="LpPool is not modelled"):
        map_node(g, by["lppool"])


def test_weights_in_external_data_are_never_read(tmp_path, monkeypatch):
    """A real export with its weights in an external file: small constants are read, the
    weights never are; a missing or truncated data file is an error naming the weight."""
    from onnx import external_data_helper
    from aoe_native.graph import onnx as front_end
    monkeypatch.setattr(front_end, "_MAX_CONST_ELEMENTS", 1024)  # the 64x32 weight counts as large
    read = []
    real = external_data_helper.load_external_data_for_tensor
    monkeypatch.setattr(external_data_helper, "load_external_data_for_tensor",
                        lambda t, d: (read.append(t.name), real(t, d)))
    onnx.save_model(_exported_style_model(), str(tmp_path / "ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="ext.data", size_threshold=0)
    g = load_graph(str(tmp_path / "ext.onnx"))
    assert g.shape("w") == (64, 32) and g.shape("r") == (2, 16)
    assert "w" not in read and "idx" in read  # the 2048 weights stay on disk; the 2 indices are read
    data = (tmp_path / "ext.data").read_bytes()
    (tmp_path / "ext.data").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"ext.onnx: weight '\w+' needs bytes up to \d+ of 'ext.data'.*truncated"):
        load_graph(str(tmp_path / "ext.onnx"))
    (tmp_path / "ext.data").unlink()
    with pytest.raises(ValueError, match="stored in 'ext.data', which is missing"):
        load_graph(str(tmp_path / "ext.onnx"))


def test_external_data_without_recorded_lengths(tmp_path):
    """An external data file's entries may omit `length` (the ONNX spec makes it optional):
    each tensor is then its own size, not the rest of the file that holds the others."""
    onnx.save_model(_exported_style_model(), str(tmp_path / "ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="ext.data", size_threshold=0)
    m = onnx.load(str(tmp_path / "ext.onnx"), load_external_data=False)
    assert sum(t.external_data[0].key == "location" for t in m.graph.initializer) >= 2  # a shared file
    for t in m.graph.initializer:
        kept = [e for e in t.external_data if e.key != "length"]
        del t.external_data[:]
        t.external_data.extend(kept)
    onnx.save(m, str(tmp_path / "nolength.onnx"))
    with_lengths, without = load_graph(str(tmp_path / "ext.onnx")), load_graph(str(tmp_path / "nolength.onnx"))
    assert without.shape("r") == with_lengths.shape("r") == (2, 16)
    assert [n.name for n in without.nodes] == [n.name for n in with_lengths.nodes]


def test_several_inputs_fixed_at_once():
    m = zoo.build("bert_base", dynamic_batch=True)
    with pytest.raises(ValueError, match="dynamic"):
        load_graph(m, "input_ids:2,128")  # the other two inputs are still dynamic
    g = load_graph(m, "input_ids:2,128;token_type_ids:2,128;attention_mask:2,128")
    assert g.shape(g.outputs[0]) == (2, 128, 768)


def test_model_file_is_read_without_its_large_embedded_weights():
    """_read_structure keeps everything but the values of large initializers (whose pages it
    never reads): the same graph, the same initializer names, dims and small values."""
    from pathlib import Path

    from aoe_native.graph.onnx import _MAX_CONST_ELEMENTS, _model_copies, _read_structure
    for path in sorted((Path(__file__).parent / "data" / "exports").glob("*.onnx")):
        full, (light, copies) = onnx.load(str(path)), _read_structure(str(path))
        # the exporter-made copies of weights, found in the file's bytes as in the loaded model
        assert copies == _model_copies(full)
        assert bool(copies) == (path.name == "gpt2_ts.onnx")  # its output projection, tied to wte.weight
        assert light.graph.node == full.graph.node and light.opset_import == full.opset_import
        assert [(t.name, list(t.dims), t.data_type) for t in light.graph.initializer] == \
            [(t.name, list(t.dims), t.data_type) for t in full.graph.initializer]
        for a, b in zip(light.graph.initializer, full.graph.initializer):
            if np.prod(b.dims) <= _MAX_CONST_ELEMENTS:
                assert a == b
            else:
                assert not a.raw_data and not a.float_data and b.raw_data
        assert light.ByteSize() < full.ByteSize()


def test_incompatible_static_shapes_are_named_not_blamed_on_runtime_values(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 32, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.zeros((16, 32), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g", [x], [y], [w])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ValueError, match=r"node 'mm' \(MatMul\): its inputs' shapes do not fit together: "
                                         r"Incompatible dimensions .*\(x \[1, 64, 32, 32\], w \[16, 32\]\)"):
        load_graph(str(path))


# ---- issue 50: older opsets and IR versions, empty and declared-dynamic dims, coverage ----------

def _old_model(nodes, inputs, outputs, opset, inits=(), ir_version=None, value_info=()):
    g = helper.make_graph(nodes, "old", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    if ir_version is not None:
        m.ir_version = ir_version
    return m


def _f(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def test_ir3_initializers_listed_as_inputs_are_weights():
    """IR 3 lists every initializer as a graph input; onnx's inference then reads no folded
    constant that is not such an input (the light models' ConstantOfShape weights)."""
    shape = numpy_helper.from_array(np.array([8, 3, 3, 3], np.int64), "w_shape")
    nodes = [helper.make_node("ConstantOfShape", ["w_shape"], ["w"], name="c0",
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    m = _old_model(nodes, [_f("x", [1, 3, 16, 16]), helper.make_tensor_value_info("w_shape", TensorProto.INT64, [4])],
                   [_f("y", None)], 9, [shape], ir_version=3)
    g = load_graph(m)
    assert g.inputs == {"x": (1, 3, 16, 16)}
    assert g.shape("y") == (1, 8, 16, 16)
    with pytest.raises(KeyError, match=r"'foo', which is not an input of the model \(inputs: x\)"):
        load_graph(m, "foo:1,3,16,16")


def _nodes_of_opset(opset):
    """One node per operator whose attributes became inputs across opsets, in the form of `opset`."""
    c = dict(name="c")
    if opset >= 13:  # the constants are initializers (_CONSTS)
        return [helper.make_node("Unsqueeze", ["x", "ax0"], ["u"], name="a"),
                helper.make_node("Slice", ["u", "st", "en", "ax"], ["s"], **c),
                helper.make_node("Pad", ["s", "pads"], ["p"], name="d"),
                helper.make_node("Clip", ["p", "lo", "hi"], ["k"], name="e"),
                helper.make_node("Split", ["k", "split"], ["k0", "k1"], name="f", axis=3),
                helper.make_node("Squeeze", ["k1", "ax0"], ["q"], name="g"),
                helper.make_node("ReduceSum", ["q", "ax2"], ["r"], name="h", keepdims=0)]
    if opset < 10:
        mid = [helper.make_node("Slice", ["u"], ["s"], starts=[0], ends=[4], axes=[3], **c)]
    else:
        mid = [helper.make_node("Slice", ["u", "st", "en", "ax"], ["s"], **c)]
    return [helper.make_node("Unsqueeze", ["x"], ["u"], name="a", axes=[0]),  # [1, 2, 3, 8]
            *mid,  # [1, 2, 3, 4]
            helper.make_node("Pad", ["s"], ["p"], name="d", pads=[0, 0, 0, 0, 0, 0, 1, 4]),  # [1, 2, 4, 8]
            helper.make_node("Clip", ["p"], ["k"], name="e", min=0.0, max=6.0),
            helper.make_node("Split", ["k"], ["k0", "k1"], name="f", axis=3, split=[2, 6]),  # [1, 2, 4, 6]
            helper.make_node("Squeeze", ["k1"], ["q"], name="g", axes=[0]),  # [2, 4, 6]
            helper.make_node("ReduceSum", ["q"], ["r"], name="h", axes=[2], keepdims=0)]  # [2, 4]


_CONSTS = {"st": [0], "en": [4], "ax": [3], "ax0": [0], "ax2": [2], "pads": [0, 0, 0, 0, 0, 0, 1, 4], "split": [2, 6]}


@pytest.mark.parametrize("opset", [7, 9, 10, 13, onnx.defs.onnx_opset_version()])
def test_operators_in_their_older_forms_import(opset):
    """Unsqueeze/Squeeze/Split/ReduceSum axes and Slice/Pad/Clip bounds were attributes before
    opsets 10-13 (onnx Changelog); such models are converted, not refused, and the newest
    opset the installed onnx knows imports as well."""
    nodes = _nodes_of_opset(opset)
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in _CONSTS.items()] if opset >= 10 else []
    if opset >= 13:
        inits += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("lo", 0.0), ("hi", 6.0))]
    m = _old_model(nodes, [_f("x", [2, 3, 8])], [_f("r", None), _f("k0", None)], opset, inits)
    g = load_graph(m)
    assert (g.shape("u"), g.shape("s"), g.shape("p"), g.shape("q"), g.shape("r")) == \
        ((1, 2, 3, 8), (1, 2, 3, 4), (1, 2, 4, 8), (2, 4, 6), (2, 4))
    import aoe_native
    from aoe_native.graph.partition import partition
    p = partition(g, aoe_native.supported_ops())
    assert not p.unsupported
    assert {k.op_type for k in p.kernels} >= {"Slice", "Pad", "Split", "ReduceSum"}


@pytest.mark.parametrize("opset", [7, 9, 10])
def test_upsample_of_old_opsets_is_a_resize(opset):
    """Upsample: scales an attribute (7), an input (9); deprecated for Resize at 10, whose
    scales input became the third (after roi) at 11."""
    if opset == 7:
        nodes, inits = [helper.make_node("Upsample", ["x"], ["y"], name="up", scales=[1.0, 1.0, 2.0, 2.0])], []
    else:
        nodes = [helper.make_node("Upsample" if opset == 9 else "Resize", ["x", "sc"], ["y"], name="up")]
        inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]
    g = load_graph(_old_model(nodes, [_f("x", [1, 4, 8, 8])], [_f("y", None)], opset, inits))
    assert g.shape("y") == (1, 4, 16, 16)
    spec = map_node(g, g.nodes[-1])
    assert (spec.op_type, spec.attrs["output_shape"], spec.attrs["mode"]) == ("Resize", [1, 4, 16, 16], "nearest")


def test_an_empty_tensor_has_a_real_size():
    """A dimension of 0 is a size: paddle2onnx's Resize takes an empty Constant as its roi."""
    nodes = [helper.make_node("Constant", [], ["roi"], name="Constant_609",
                              value=numpy_helper.from_array(np.zeros((0,), np.float32))),
             helper.make_node("Constant", [], ["scales"], name="sc",
                              value=numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32))),
             helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="resize", mode="nearest")]
    g = load_graph(_old_model(nodes, [_f("x", [1, 3, 8, 8])], [_f("y", None)], 13))
    assert g.shape("roi") == (0,) and g.shape("y") == (1, 3, 16, 16)
    assert map_node(g, g.nodes[-1]).attrs["output_shape"] == [1, 3, 16, 16]


def test_declared_dynamic_output_and_value_info_are_recomputed():
    """A declared [-1, 2] output (or a value_info with a named dim) is not the tensor's shape:
    it is recomputed from the fixed inputs."""
    w = numpy_helper.from_array(np.zeros((8, 2), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"], name="r")]
    m = _old_model(nodes, [_f("x", ["batch", 8])], [_f("y", [-1, 2])], 17, [w], value_info=[_f("h", [-1, "n"])])
    g = load_graph(m, "x:4,8")
    assert g.shape("h") == (4, 2) and g.shape("y") == (4, 2)


def test_input_shape_error_lists_real_inputs_not_weights():
    """Weights taken as graph inputs (no initializer): the message names the data input, not
    every weight, and stays short."""
    nodes, inputs, t = [], [_f("x", ["n", 4, 8, 8])], "x"
    for i in range(200):
        inputs += [_f(f"w{i}", [4, 4, 1, 1]), _f(f"b{i}", [4])]
        nodes.append(helper.make_node("Conv", [t, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}"))
        t = f"c{i}"
    m = _old_model(nodes, inputs, [_f(t, None)], 13)
    with pytest.raises(KeyError) as e:
        load_graph(m, "foo:1,4,8,8")
    msg = str(e.value)
    assert "(inputs: x)" in msg and "w17" not in msg and len(msg) < 300


def _nary_model():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Sum", ["c", "x"], ["s2"], name="sum2"),
             helper.make_node("Sum", ["s2", "x", "y"], ["s"], name="sum3"),
             helper.make_node("Max", ["s", "x", "y"], ["m"], name="max3"),
             helper.make_node("Mean", ["m", "x"], ["a"], name="mean2"),
             helper.make_node("LRN", ["a"], ["l"], name="lrn", size=5, alpha=1e-4, beta=0.75, bias=1.0),
             helper.make_node("Sum", ["l"], ["o"], name="sum1")]
    w = numpy_helper.from_array(np.zeros((8, 8, 3, 3), np.float32), "w")
    return _old_model(nodes, [_f("x", [1, 8, 16, 16]), _f("y", [1, 8, 16, 16])], [_f("o", None)], 13, [w])


def test_nary_elementwise_and_lrn_are_modelled(tmp_path):
    """Sum (n-ary add), Max/Min/Mean of any arity and LRN are modelled: ResNet-50 of onnx's
    corpus had 16 Sum nodes and 15% of its bytes outside the model."""
    import aoe_native
    from aoe_native.graph.partition import partition
    g = load_graph(_nary_model())
    p = partition(g, aoe_native.supported_ops())
    assert not p.unsupported and p.coverage.bytes_share == 1.0
    ops = {k.op_type: k for k in p.kernels}
    conv = ops["Conv"]
    assert conv.attrs["epilogue"] == ["Add", "Add", "Add", "Max", "Max", "Add", "Mul"]
    assert ops["LRN"].attrs["size"] == 5
    assert [k.op_type for k in p.kernels].count("LRN") == 1
    r = aoe_native.tune_model(_nary_model(), bank=tmp_path, evals_per_task=8, round_evals=8, parallel=1)
    assert {t.op_type for t in r.tasks} == {"Conv", "LRN", "Identity"} and all(t.time_us > 0 for t in r.tasks)


def test_coverage_warns_on_bytes_too():
    """A model whose FLOPs are all modelled but whose bytes are not is named in a warning."""
    from aoe_native import supported_ops
    from aoe_native.graph.partition import partition
    from aoe_native.jobs.setup import CoverageWarning, warn_coverage
    w = numpy_helper.from_array(np.zeros((256, 256), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Sin", ["h"], ["y"], name="sin")]
    g = load_graph(_old_model(nodes, [_f("x", [256, 256])], [_f("y", None)], 13, [w]))
    p = partition(g, supported_ops())
    assert p.coverage.flops_share > 0.99 and p.coverage.bytes_share < 0.9
    with pytest.warns(CoverageWarning, match=r"only \d+\.\d% of the model's bytes .*Sin \(1 nodes, \d+\.\d% of bytes\)"):
        warn_coverage(g, p)


def test_conv_transpose_is_the_backward_data_convolution():
    """ConvTranspose stride 2 is charged its own work (the phases of Conv2DBackpropInput), not
    a stride-1 convolution over the zero-inserted input (about 4x)."""
    from aoe_native.ascend.ops import baseline_tiling, estimate
    w = numpy_helper.from_array(np.zeros((8, 4, 4, 4), np.float32), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2], pads=[1, 1, 1, 1])
    g = load_graph(_old_model([node], [_f("x", [1, 8, 16, 16])], [_f("y", None)], 13, [w]))
    assert g.shape("y") == (1, 4, 32, 32)
    spec = map_node(g, g.nodes[0])
    assert spec.op_type == "Conv" and spec.inputs[0] == [1, 8, 16, 16] and spec.inputs[1] == [16, 8, 2, 2]
    tiling = baseline_tiling(spec.op_type, spec.inputs, "float16", "Ascend910B3", spec.attrs)
    flops = estimate(spec.op_type, spec.inputs, "float16", "Ascend910B3", tiling, spec.attrs).breakdown["flops"]
    assert flops == 2 * 8 * 4 * 4 * 4 * 16 * 16  # every input pixel times every kernel tap, no zeros


def test_shape_from_run_time_values_is_not_blamed_on_input_shapes():
    """Every input fixed, a Reshape target fed at run time: the message names that tensor and
    says --input_shape cannot help, instead of asking for fixed input shapes again."""
    nodes = [helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")]
    m = _old_model(nodes, [_f("x", [2, 8]), helper.make_tensor_value_info("target", TensorProto.INT64, [2])],
                   [_f("y", None)], 13)
    with pytest.raises(ValueError, match=r"'reshape' \(Reshape\).*those of 'target'.*fixes shapes, not values"):
        load_graph(m)
