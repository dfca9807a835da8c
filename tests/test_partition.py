"""Partitioning into kernels and tasks: fusion rules, deduplication, UB budget, no cycles."""
from collections import Counter

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import aoe_native
from aoe_native import zoo
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import max_fused_buffers, partition

SUPPORTED = set(aoe_native.supported_ops())


def _kernel_graph_is_acyclic(graph, part):
    owner = {}
    for k in part.kernels:
        for name in k.nodes:
            owner[name] = k.index
    producer = {o: n.name for n in graph.nodes for o in n.outputs}
    edges = {k.index: set() for k in part.kernels}
    by_name = {n.name: n for n in graph.nodes}

    def kernel_sources(tensor, seen=()):
        """Kernels feeding `tensor`, looking through view/unsupported nodes."""
        node = producer.get(tensor)
        if node is None or node in seen:
            return set()
        if node in owner:
            return {owner[node]}
        return set().union(*[kernel_sources(t, seen + (node,)) for t in by_name[node].inputs if t] or [set()])

    for n in graph.nodes:
        if n.name in owner:
            for t in n.inputs:
                for src in kernel_sources(t):
                    if src != owner[n.name]:
                        edges[owner[n.name]].add(src)
    state = {}

    def visit(k):
        if state.get(k) == 1:
            return False
        if state.get(k) == 2:
            return True
        state[k] = 1
        ok = all(visit(s) for s in edges[k])
        state[k] = 2
        return ok
    return all(visit(k) for k in edges)


def test_resnet50_fuses_conv_bn_add_relu_and_dedups():
    g = load_graph(zoo.build("resnet50"))
    p = partition(g, SUPPORTED)
    epi = Counter(tuple(k.attrs.get("epilogue", [])) for k in p.kernels if k.op_type == "Conv")
    assert epi == {("BatchNormalization", "Relu"): 33, ("BatchNormalization", "Add", "Relu"): 16,
                   ("BatchNormalization",): 4}
    assert sum(t.occurrences for t in p.tasks) == len(p.kernels) == 56
    assert len({t.key for t in p.tasks}) == len(p.tasks) < len(p.kernels)
    assert p.unsupported == []  # every node of ResNet-50 is modelled (MaxPool as a vector kernel)
    assert [k.op_type for k in p.kernels].count("MaxPool") == 1
    # identical bottlenecks share tasks: layer3 has six blocks, five of them identical
    l3 = [k for k in p.kernels if k.nodes[0].startswith("layer3.") and k.nodes[0].endswith("conv2")]
    assert len({k.task for k in l3[1:]}) == 1
    assert _kernel_graph_is_acyclic(g, p)


@pytest.mark.parametrize("name", ["bert_base", "gpt2_small", "yolov5s"])
def test_transformer_and_yolo_partitions(name):
    g = load_graph(zoo.build(name))
    p = partition(g, SUPPORTED)
    assert _kernel_graph_is_acyclic(g, p)
    covered = [n for k in p.kernels for n in k.nodes]
    assert len(covered) == len(set(covered))  # each node in at most one kernel
    assert len(covered) + p.n_view_nodes + sum(u.count for u in p.unsupported) == p.n_nodes
    if name == "bert_base":
        # the exported erf-GELU decomposition is recognised; bias and mask adds read no full tensor
        gelu = [k for k in p.kernels if k.attrs.get("epilogue") == ["BiasAdd", "Gelu"]]
        assert len(gelu) == 12 and gelu[0].inputs == [[128, 768], [768, 3072]]
        scores = [k for k in p.kernels if k.nodes[0].endswith("attention.scores")]
        assert scores[0].attrs["epilogue"] == ["Div", "BiasAdd"]
        assert len([t for t in p.tasks if t.op_type == "Softmax"]) == 1
        emb = next(k for k in p.kernels if k.nodes[0] == "emb.add_pos")
        assert (emb.op_type, emb.attrs, emb.inputs) == ("FusedElementwise", {"ops": ["Add", "Add"]},
                                                        [[1, 128, 768]] * 3)
    if name == "gpt2_small":
        assert sum(k.attrs.get("epilogue") == ["BiasAdd", "Gelu"] for k in p.kernels) == 12  # tanh form
    if name == "yolov5s":
        assert p.unsupported == []  # Concat and Resize are data-movement kernels
        moves = Counter(k.op_type for k in p.kernels if k.op_type in ("Concat", "Resize"))
        assert moves == {"Concat": 14, "Resize": 2}
        assert next(k for k in p.kernels if k.op_type == "Resize").attrs == {
            "output_shape": [1, 256, 40, 40], "mode": "nearest"}
        epi = Counter(tuple(k.attrs.get("epilogue", [])) for k in p.kernels if k.op_type == "Conv")
        assert epi == {("Silu",): 50, ("Silu", "Add"): 7, (): 3}


def test_unsupported_by_cost_model_is_reported_not_fatal():
    g = load_graph(zoo.build("bert_base"))
    p = partition(g, SUPPORTED - {"Softmax", "LayerNormalization"})
    got = {u.onnx_type: u.count for u in p.unsupported}
    assert got["Softmax"] == 12 and got["LayerNormalization"] == 25
    assert "does not support Softmax" in next(u.reason for u in p.unsupported if u.onnx_type == "Softmax")


def _chain_model(n_adds, standalone_bn=False):
    """x -> Relu -> Add(e0) -> Add(e1) ... : each Add brings one more full-size input."""
    shape = [1, 64, 32, 32]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    nodes = [helper.make_node("Relu", ["x"], ["t0"], name="relu")]
    for i in range(n_adds):
        inputs.append(helper.make_tensor_value_info(f"e{i}", TensorProto.FLOAT, shape))
        nodes.append(helper.make_node("Add", [f"t{i}", f"e{i}"], [f"t{i + 1}"], name=f"add{i}"))
    inits = []
    last = f"t{n_adds}"
    if standalone_bn:
        for s in ("sc", "bi", "me", "va"):
            inits.append(numpy_helper.from_array(np.ones(64, np.float32), s))
        nodes.append(helper.make_node("Transpose", [last], ["tr"], name="tr", perm=[0, 1, 3, 2]))
        nodes.append(helper.make_node("BatchNormalization", ["tr", "sc", "bi", "me", "va"], ["bn"], name="bn"))
        last = "bn"
    out = helper.make_tensor_value_info(last, TensorProto.FLOAT, None)
    return load_graph(helper.make_model(helper.make_graph(nodes, "chain", inputs, [out], inits),
                                        opset_imports=[helper.make_opsetid("", 17)]))


def test_elementwise_chain_fuses_within_the_ub_budget():
    g = _chain_model(8)
    big = partition(g, SUPPORTED, ub_bytes=1 << 20)
    assert [k.op_type for k in big.kernels] == ["FusedElementwise"]
    assert big.kernels[0].attrs["ops"] == ["Relu"] + ["Add"] * 8
    # operands in the order the chain consumes them: Relu's input, then one per Add
    assert big.kernels[0].inputs == [[1, 64, 32, 32]] * 9
    small = partition(g, SUPPORTED, ub_bytes=192 * 1024)
    assert max_fused_buffers(192 * 1024) == 6
    assert len(small.kernels) > 1
    assert sum(len(k.nodes) for k in small.kernels) == 9


def test_standalone_batchnorm_is_a_scale_and_shift():
    p = partition(_chain_model(1, standalone_bn=True), SUPPORTED, ub_bytes=1 << 20)
    bn = p.kernels[-1]
    assert bn.nodes == ["bn"] and bn.op_type == "FusedElementwise" and bn.attrs == {"ops": ["Mul", "Add"]}
    assert bn.inputs == [[1, 64, 32, 32], [64, 1, 1], [64, 1, 1]]
    est = aoe_native.estimate(bn.op_type, bn.inputs, "float16", "Ascend910B3",
                              aoe_native.baseline_tiling(bn.op_type, bn.inputs, "float16", "Ascend910B3", bn.attrs),
                              attrs=bn.attrs)
    assert est.time_us > 0  # the cost model accepts the operands as given


def _decomposed_ln(axes, square="Pow"):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16, 32])
    consts = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
              (("two", 2.0), ("eps", 1e-5), ("w", np.ones(32)), ("b", np.zeros(32)))]
    sq = (helper.make_node("Pow", ["d", "two"], ["p"], name="pow") if square == "Pow" else
          helper.make_node("Mul", ["d", "d"], ["p"], name="pow"))
    nodes = [helper.make_node("ReduceMean", ["x"], ["u"], name="mean", axes=axes),
             helper.make_node("Sub", ["x", "u"], ["d"], name="sub"), sq,
             helper.make_node("ReduceMean", ["p"], ["v"], name="var", axes=axes),
             helper.make_node("Add", ["v", "eps"], ["ve"], name="add_eps"),
             helper.make_node("Sqrt", ["ve"], ["s"], name="sqrt"),
             helper.make_node("Div", ["d", "s"], ["n"], name="div"),
             helper.make_node("Mul", ["n", "w"], ["y0"], name="scale"),
             helper.make_node("Add", ["y0", "b"], ["y"], name="bias")]
    g = helper.make_graph(nodes, "ln", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], consts)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_decomposed_layer_norm_becomes_one_kernel():
    for square in ("Pow", "Mul"):
        p = partition(load_graph(_decomposed_ln([-1], square)), SUPPORTED)
        assert [(k.op_type, k.inputs, len(k.nodes)) for k in p.kernels] == [
            ("LayerNormalization", [[4, 16, 32], [32], [32]], 9)]
        assert p.kernels[0].attrs == {"axis": 2, "epsilon": pytest.approx(1e-5)}
    # over another axis it is not a LayerNorm: reductions and element-wise kernels remain
    p = partition(load_graph(_decomposed_ln([1])), SUPPORTED)
    assert "LayerNormalization" not in {k.op_type for k in p.kernels} and len(p.kernels) > 2
