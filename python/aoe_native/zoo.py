"""Model zoo: structure-only ONNX graphs with the real layer shapes of common networks.

The graphs carry no trained weights: every weight is a graph input with its
full static shape (so a ResNet-50 file is a few hundred KB), while the small
constants shape inference needs (reshape targets, position ids) are real
initializers.  They import, partition and tune exactly like exported models.

Command line::

    python -m aoe_native.zoo resnet50 -o resnet50.onnx [--batch 1] [--dynamic-batch]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization needs opset >= 17

__all__ = ["MODELS", "build", "save", "main"]


class _GraphBuilder:
    """Accumulates nodes, inputs and initializers and names tensors uniquely."""

    def __init__(self, name: str):
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count: dict[str, int] = {}

    def _unique(self, prefix: str) -> str:
        n = self._count.get(prefix, 0)
        self._count[prefix] = n + 1
        return f"{prefix}_{n}" if n else prefix

    def input(self, name: str, shape, elem=TensorProto.FLOAT) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def weight(self, prefix: str, shape) -> str:
        """A weight without data: a graph input with a static shape."""
        return self.input(self._unique(prefix), shape)

    def const(self, prefix: str, values, dtype=np.float32) -> str:
        name = self._unique(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str | None = None, n_out: int = 1, **attrs):
        node_name = self._unique(name or op_type.lower())
        outs = [f"{node_name}_out{i}" if n_out > 1 else f"{node_name}_out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=node_name, **attrs))
        return outs if n_out > 1 else outs[0]

    def output(self, tensor: str) -> None:
        self.outputs.append(helper.make_empty_tensor_value_info(tensor))

    def model(self, opset: int = OPSET) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="aoe_native.zoo")
        model.ir_version = 8 if opset < 21 else 10  # opset 21+ needs IR 10 (onnx docs/Versioning.md)
        # Output types come from shape inference so the builders need not repeat them.
        inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
        for out in model.graph.output:
            out.CopyFrom(inferred[out.name])
        onnx.checker.check_model(model)
        return model


def _batch_dim(batch: int, dynamic: bool):
    return "batch" if dynamic else batch


# --------------------------------------------------------------------------- ResNet-50
def resnet50(batch: int = 1, dynamic_batch: bool = False, image: int = 224) -> onnx.ModelProto:
    """ResNet-50 v1.5 (torchvision layout: stride on the 3x3 conv), BatchNorm not folded."""
    g = _GraphBuilder("resnet50")
    x = g.input("input", [_batch_dim(batch, dynamic_batch), 3, image, image])

    def conv_bn(x, cin, cout, k, stride, name, relu=True):
        w = g.weight(f"{name}.weight", [cout, cin, k, k])
        p = k // 2
        y = g.op("Conv", [x, w], name=name, kernel_shape=[k, k], strides=[stride, stride],
                 pads=[p, p, p, p], dilations=[1, 1], group=1)
        bn = [g.weight(f"{name}.bn.{s}", [cout]) for s in ("scale", "bias", "mean", "var")]
        y = g.op("BatchNormalization", [y, *bn], name=f"{name}.bn", epsilon=1e-5)
        return g.op("Relu", [y], name=f"{name}.relu") if relu else y

    y = conv_bn(x, 3, 64, 7, 2, "conv1")
    y = g.op("MaxPool", [y], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]):
        for b in range(blocks):
            s = stride if b == 0 else 1
            name = f"layer{stage + 1}.{b}"
            out = conv_bn(y, cin, width, 1, 1, f"{name}.conv1")
            out = conv_bn(out, width, width, 3, s, f"{name}.conv2")
            out = conv_bn(out, width, width * 4, 1, 1, f"{name}.conv3", relu=False)
            short = conv_bn(y, cin, width * 4, 1, s, f"{name}.downsample", relu=False) if b == 0 else y
            y = g.op("Relu", [g.op("Add", [out, short], name=f"{name}.add")], name=f"{name}.relu")
            cin = width * 4
    y = g.op("GlobalAveragePool", [y], name="avgpool")
    y = g.op("Flatten", [y], name="flatten", axis=1)
    y = g.op("Gemm", [y, g.weight("fc.weight", [1000, 2048]), g.weight("fc.bias", [1000])],
             name="fc", transB=1)
    g.output(y)
    return g.model()


# --------------------------------------------------------------------------- transformers
def _attention(g: _GraphBuilder, x: str, batch, seq: int, hidden: int, heads: int, name: str,
               mask: str, fused_qkv: bool) -> str:
    """Multi-head self-attention as exporters emit it (MatMul + bias Add, Reshape/Transpose)."""
    dh = hidden // heads

    def linear(t, cin, cout, lname):
        y = g.op("MatMul", [t, g.weight(f"{lname}.weight", [cin, cout])], name=lname)
        return g.op("Add", [y, g.weight(f"{lname}.bias", [cout])], name=f"{lname}.bias_add")

    heads_shape = g.const("heads_shape", [0, seq, heads, dh], np.int64)
    if fused_qkv:
        qkv = linear(x, hidden, 3 * hidden, f"{name}.c_attn")
        split = g.const("split_sizes", [hidden] * 3, np.int64)
        q, k, v = g.op("Split", [qkv, split], name=f"{name}.split", n_out=3, axis=2)
    else:
        q, k, v = (linear(x, hidden, hidden, f"{name}.{p}") for p in ("query", "key", "value"))
    q = g.op("Transpose", [g.op("Reshape", [q, heads_shape], name=f"{name}.q_reshape")],
             name=f"{name}.q_transpose", perm=[0, 2, 1, 3])
    k = g.op("Transpose", [g.op("Reshape", [k, heads_shape], name=f"{name}.k_reshape")],
             name=f"{name}.k_transpose", perm=[0, 2, 3, 1])
    v = g.op("Transpose", [g.op("Reshape", [v, heads_shape], name=f"{name}.v_reshape")],
             name=f"{name}.v_transpose", perm=[0, 2, 1, 3])
    s = g.op("MatMul", [q, k], name=f"{name}.scores")
    s = g.op("Div", [s, g.const("sqrt_dh", math.sqrt(dh))], name=f"{name}.scale")
    s = g.op("Add", [s, mask], name=f"{name}.mask_add")
    p = g.op("Softmax", [s], name=f"{name}.softmax", axis=-1)
    c = g.op("MatMul", [p, v], name=f"{name}.context")
    c = g.op("Transpose", [c], name=f"{name}.ctx_transpose", perm=[0, 2, 1, 3])
    c = g.op("Reshape", [c, g.const("hidden_shape", [0, seq, hidden], np.int64)], name=f"{name}.ctx_reshape")
    return linear(c, hidden, hidden, f"{name}.c_proj" if fused_qkv else f"{name}.output.dense")


def _layer_norm(g: _GraphBuilder, x: str, hidden: int, name: str) -> str:
    return g.op("LayerNormalization", [x, g.weight(f"{name}.weight", [hidden]), g.weight(f"{name}.bias", [hidden])],
                name=name, axis=-1, epsilon=1e-5)


def _gelu_erf(g: _GraphBuilder, x: str, name: str) -> str:
    """GELU as exporters emit it before opset 20: 0.5 * x * (1 + erf(x / sqrt(2)))."""
    t = g.op("Div", [x, g.const("sqrt2", math.sqrt(2.0))], name=f"{name}.div")
    t = g.op("Erf", [t], name=f"{name}.erf")
    t = g.op("Add", [t, g.const("one", 1.0)], name=f"{name}.add")
    t = g.op("Mul", [x, t], name=f"{name}.mul")
    return g.op("Mul", [t, g.const("half", 0.5)], name=f"{name}.mul_half")


def _gelu_tanh(g: _GraphBuilder, x: str, name: str) -> str:
    """GPT-2's GELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    t = g.op("Pow", [x, g.const("three", 3.0)], name=f"{name}.pow")
    t = g.op("Mul", [t, g.const("c0", 0.044715)], name=f"{name}.mul_c")
    t = g.op("Add", [x, t], name=f"{name}.add_x")
    t = g.op("Mul", [t, g.const("c1", math.sqrt(2.0 / math.pi))], name=f"{name}.mul_s")
    t = g.op("Tanh", [t], name=f"{name}.tanh")
    t = g.op("Add", [t, g.const("one", 1.0)], name=f"{name}.add_one")
    t = g.op("Mul", [x, t], name=f"{name}.mul_x")
    return g.op("Mul", [t, g.const("half", 0.5)], name=f"{name}.mul_half")


def bert_base(batch: int = 1, dynamic_batch: bool = False, seq: int = 128) -> onnx.ModelProto:
    """BERT-base uncased (12 layers, hidden 768, 12 heads, FFN 3072), sequence length 128."""
    hidden, heads, ffn, layers, vocab = 768, 12, 3072, 12, 30522
    g = _GraphBuilder("bert_base")
    b = _batch_dim(batch, dynamic_batch)
    ids = g.input("input_ids", [b, seq], TensorProto.INT64)
    types = g.input("token_type_ids", [b, seq], TensorProto.INT64)
    am = g.input("attention_mask", [b, seq], TensorProto.INT64)
    pos = g.const("position_ids", np.arange(seq).reshape(1, seq), np.int64)
    e = g.op("Gather", [g.weight("word_embeddings", [vocab, hidden]), ids], name="emb.word", axis=0)
    e = g.op("Add", [e, g.op("Gather", [g.weight("position_embeddings", [512, hidden]), pos],
                               name="emb.position", axis=0)], name="emb.add_pos")
    e = g.op("Add", [e, g.op("Gather", [g.weight("token_type_embeddings", [2, hidden]), types],
                               name="emb.token_type", axis=0)], name="emb.add_type")
    x = _layer_norm(g, e, hidden, "emb.layernorm")
    # Extended attention mask: (1 - mask) * -10000, shaped [batch, 1, 1, seq].
    m = g.op("Unsqueeze", [am, g.const("mask_axes", [1, 2], np.int64)], name="mask.unsqueeze")
    m = g.op("Cast", [m], name="mask.cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const("one", 1.0), m], name="mask.sub")
    mask = g.op("Mul", [m, g.const("neg_big", -10000.0)], name="mask.mul")
    for i in range(layers):
        name = f"layer{i}"
        a = _attention(g, x, b, seq, hidden, heads, f"{name}.attention", mask, fused_qkv=False)
        x = _layer_norm(g, g.op("Add", [a, x], name=f"{name}.attention.residual"), hidden,
                        f"{name}.attention.layernorm")
        h = g.op("MatMul", [x, g.weight(f"{name}.intermediate.weight", [hidden, ffn])], name=f"{name}.intermediate")
        h = g.op("Add", [h, g.weight(f"{name}.intermediate.bias", [ffn])], name=f"{name}.intermediate.bias_add")
        h = _gelu_erf(g, h, f"{name}.gelu")
        h = g.op("MatMul", [h, g.weight(f"{name}.output.weight", [ffn, hidden])], name=f"{name}.output")
        h = g.op("Add", [h, g.weight(f"{name}.output.bias", [hidden])], name=f"{name}.output.bias_add")
        x = _layer_norm(g, g.op("Add", [h, x], name=f"{name}.output.residual"), hidden, f"{name}.output.layernorm")
    g.output(x)
    first = g.op("Gather", [x, g.const("cls_index", 0, np.int64)], name="pooler.select", axis=1)
    p = g.op("Gemm", [first, g.weight("pooler.weight", [hidden, hidden]), g.weight("pooler.bias", [hidden])],
             name="pooler.dense", transB=1)
    g.output(g.op("Tanh", [p], name="pooler.tanh"))
    return g.model()


def gpt2_small(batch: int = 1, dynamic_batch: bool = False, seq: int = 128) -> onnx.ModelProto:
    """GPT-2 small (12 layers, hidden 768, 12 heads, FFN 3072, vocab 50257), sequence 128.

    The causal mask is a constant additive [1, 1, seq, seq] tensor (0 / -10000)."""
    hidden, heads, ffn, layers, vocab = 768, 12, 3072, 12, 50257
    g = _GraphBuilder("gpt2_small")
    b = _batch_dim(batch, dynamic_batch)
    ids = g.input("input_ids", [b, seq], TensorProto.INT64)
    pos = g.const("position_ids", np.arange(seq).reshape(1, seq), np.int64)
    x = g.op("Gather", [g.weight("wte", [vocab, hidden]), ids], name="wte", axis=0)
    x = g.op("Add", [x, g.op("Gather", [g.weight("wpe", [1024, hidden]), pos], name="wpe", axis=0)], name="emb.add")
    causal = np.triu(np.full((seq, seq), -10000.0, np.float32), k=1).reshape(1, 1, seq, seq)
    mask = g.const("causal_mask", causal)
    for i in range(layers):
        name = f"h{i}"
        a = _attention(g, _layer_norm(g, x, hidden, f"{name}.ln_1"), b, seq, hidden, heads, f"{name}.attn",
                       mask, fused_qkv=True)
        x = g.op("Add", [x, a], name=f"{name}.attn.residual")
        h = _layer_norm(g, x, hidden, f"{name}.ln_2")
        h = g.op("MatMul", [h, g.weight(f"{name}.mlp.c_fc.weight", [hidden, ffn])], name=f"{name}.mlp.c_fc")
        h = g.op("Add", [h, g.weight(f"{name}.mlp.c_fc.bias", [ffn])], name=f"{name}.mlp.c_fc.bias_add")
        h = _gelu_tanh(g, h, f"{name}.mlp.gelu")
        h = g.op("MatMul", [h, g.weight(f"{name}.mlp.c_proj.weight", [ffn, hidden])], name=f"{name}.mlp.c_proj")
        h = g.op("Add", [h, g.weight(f"{name}.mlp.c_proj.bias", [hidden])], name=f"{name}.mlp.c_proj.bias_add")
        x = g.op("Add", [x, h], name=f"{name}.mlp.residual")
    x = _layer_norm(g, x, hidden, "ln_f")
    g.output(g.op("MatMul", [x, g.weight("lm_head.weight", [hidden, vocab])], name="lm_head"))
    return g.model()


# --------------------------------------------------------------------------- YOLOv5s
def yolov5s(batch: int = 1, dynamic_batch: bool = False, image: int = 640) -> onnx.ModelProto:
    """YOLOv5s v6 (depth 0.33, width 0.50), 80 classes, as exported after Conv+BN fusion
    (Conv with bias, SiLU = Sigmoid + Mul).  The Detect head ends at the sigmoid outputs
    reshaped to [batch, anchors*cells, 85]; grid decoding is left out."""
    g = _GraphBuilder("yolov5s")
    x = g.input("images", [_batch_dim(batch, dynamic_batch), 3, image, image])

    def conv(t, cin, cout, k, s, name):
        p = k // 2 if k != 6 else 2
        y = g.op("Conv", [t, g.weight(f"{name}.weight", [cout, cin, k, k]), g.weight(f"{name}.bias", [cout])],
                 name=name, kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p], dilations=[1, 1], group=1)
        return g.op("Mul", [y, g.op("Sigmoid", [y], name=f"{name}.sigmoid")], name=f"{name}.silu")

    def c3(t, cin, cout, n, shortcut, name):
        c_ = cout // 2
        a = conv(t, cin, c_, 1, 1, f"{name}.cv1")
        for i in range(n):
            h = conv(conv(a, c_, c_, 1, 1, f"{name}.m{i}.cv1"), c_, c_, 3, 1, f"{name}.m{i}.cv2")
            a = g.op("Add", [a, h], name=f"{name}.m{i}.add") if shortcut else h
        bb = conv(t, cin, c_, 1, 1, f"{name}.cv2")
        return conv(g.op("Concat", [a, bb], name=f"{name}.concat", axis=1), 2 * c_, cout, 1, 1, f"{name}.cv3")

    def sppf(t, cin, cout, name):
        c_ = cin // 2
        a = conv(t, cin, c_, 1, 1, f"{name}.cv1")
        pools = [a]
        for i in range(3):
            pools.append(g.op("MaxPool", [pools[-1]], name=f"{name}.pool{i}", kernel_shape=[5, 5],
                              strides=[1, 1], pads=[2, 2, 2, 2]))
        return conv(g.op("Concat", pools, name=f"{name}.concat", axis=1), 4 * c_, cout, 1, 1, f"{name}.cv2")

    def upsample(t, name):
        scales = g.const("up_scales", [1.0, 1.0, 2.0, 2.0])
        return g.op("Resize", [t, "", scales], name=name, mode="nearest")

    l0 = conv(x, 3, 32, 6, 2, "model.0")
    l1 = conv(l0, 32, 64, 3, 2, "model.1")
    l2 = c3(l1, 64, 64, 1, True, "model.2")
    l3 = conv(l2, 64, 128, 3, 2, "model.3")
    l4 = c3(l3, 128, 128, 2, True, "model.4")
    l5 = conv(l4, 128, 256, 3, 2, "model.5")
    l6 = c3(l5, 256, 256, 3, True, "model.6")
    l7 = conv(l6, 256, 512, 3, 2, "model.7")
    l8 = c3(l7, 512, 512, 1, True, "model.8")
    l9 = sppf(l8, 512, 512, "model.9")
    l10 = conv(l9, 512, 256, 1, 1, "model.10")
    l13 = c3(g.op("Concat", [upsample(l10, "model.11"), l6], name="model.12", axis=1), 512, 256, 1, False, "model.13")
    l14 = conv(l13, 256, 128, 1, 1, "model.14")
    l17 = c3(g.op("Concat", [upsample(l14, "model.15"), l4], name="model.16", axis=1), 256, 128, 1, False, "model.17")
    l18 = conv(l17, 128, 128, 3, 2, "model.18")
    l20 = c3(g.op("Concat", [l18, l14], name="model.19", axis=1), 256, 256, 1, False, "model.20")
    l21 = conv(l20, 256, 256, 3, 2, "model.21")
    l23 = c3(g.op("Concat", [l21, l10], name="model.22", axis=1), 512, 512, 1, False, "model.23")
    outs = []
    for i, (t, ch, stride) in enumerate([(l17, 128, 8), (l20, 256, 16), (l23, 512, 32)]):
        cells = (image // stride) ** 2
        name = f"model.24.m{i}"
        y = g.op("Conv", [t, g.weight(f"{name}.weight", [255, ch, 1, 1]), g.weight(f"{name}.bias", [255])],
                 name=name, kernel_shape=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
        y = g.op("Reshape", [y, g.const("det_shape", [0, 3, 85, image // stride, image // stride], np.int64)],
                 name=f"{name}.reshape")
        y = g.op("Transpose", [y], name=f"{name}.transpose", perm=[0, 1, 3, 4, 2])
        y = g.op("Sigmoid", [y], name=f"{name}.sigmoid")
        outs.append(g.op("Reshape", [y, g.const("flat_shape", [0, 3 * cells, 85], np.int64)], name=f"{name}.flatten"))
    g.output(g.op("Concat", outs, name="model.24.concat", axis=1))
    return g.model()


# --------------------------------------------------------------------------- LLM decoders
# The LLM decoders use opset 23 for its RMSNormalization and Attention operators (one node each, as
# CANN runs RmsNorm and FusedInferAttentionScore); RoPE and SwiGLU have no ONNX operator and are
# written as exporters emit them (rotate-half Slice/Neg/Concat, Sigmoid/Mul), the MoE experts as
# the batched form of an exportable MoE (graph/llm_moe.py).  The import turns each into the CANN
# kernel (graph/llm_patterns.py).
LLM_OPSET = 23


def _rms_norm(g: _GraphBuilder, x: str, hidden: int, name: str) -> str:
    return g.op("RMSNormalization", [x, g.weight(f"{name}.weight", [hidden])], name=name, axis=-1, epsilon=1e-5)


def _rotate(g: _GraphBuilder, x: str, cos: str, sin: str, dh: int, name: str) -> str:
    """x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2])."""
    c = lambda n, v: g.const(n, [v], np.int64)  # noqa: E731
    lo = g.op("Slice", [x, c("zero", 0), c("half_dim", dh // 2), c("last_axis", -1)], name=f"{name}.lo")
    hi = g.op("Slice", [x, c("half_dim", dh // 2), c("head_dim", dh), c("last_axis", -1)], name=f"{name}.hi")
    rot = g.op("Concat", [g.op("Neg", [hi], name=f"{name}.neg"), lo], name=f"{name}.cat", axis=-1)
    return g.op("Add", [g.op("Mul", [x, cos], name=f"{name}.mul_cos"), g.op("Mul", [rot, sin], name=f"{name}.mul_sin")],
                name=f"{name}.add")


def _swiglu_mlp(g: _GraphBuilder, x: str, hidden: int, ffn: int, name: str) -> str:
    gate = g.op("MatMul", [x, g.weight(f"{name}.gate_proj", [hidden, ffn])], name=f"{name}.gate_proj")
    up = g.op("MatMul", [x, g.weight(f"{name}.up_proj", [hidden, ffn])], name=f"{name}.up_proj")
    silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], name=f"{name}.sigmoid")], name=f"{name}.silu")
    h = g.op("Mul", [silu, up], name=f"{name}.mul")
    return g.op("MatMul", [h, g.weight(f"{name}.down_proj", [ffn, hidden])], name=f"{name}.down_proj")


def _llm_attention(g: _GraphBuilder, x: str, rope: tuple[str, str], cfg: dict, *, b, seq: int, past: int,
                   name: str, presents: list[str]) -> str:
    """Q/K/V projections (with bias for Qwen), RoPE, one ONNX Attention (GQA through kv_num_heads'
    shapes; decode: past_key/past_value inputs of `past` positions), output projection."""
    hidden, heads, kv, dh = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]

    def proj(p, n):
        y = g.op("MatMul", [x, g.weight(f"{name}.{p}_proj", [hidden, n * dh])], name=f"{name}.{p}_proj")
        if cfg.get("qkv_bias"):
            y = g.op("Add", [y, g.weight(f"{name}.{p}_proj.bias", [n * dh])], name=f"{name}.{p}_proj.bias_add")
        y = g.op("Reshape", [y, g.const(f"{p}_heads", [0, seq, n, dh], np.int64)], name=f"{name}.{p}_reshape")
        return g.op("Transpose", [y], name=f"{name}.{p}_transpose", perm=[0, 2, 1, 3])

    q, k, v = proj("q", heads), proj("k", kv), proj("v", kv)
    q, k = _rotate(g, q, *rope, dh, f"{name}.rope_q"), _rotate(g, k, *rope, dh, f"{name}.rope_k")
    ins = [q, k, v]
    if past:
        ins += ["", g.input(f"{name}.past_key", [b, kv, past, dh]), g.input(f"{name}.past_value", [b, kv, past, dh])]
    outs = g.op("Attention", ins, name=f"{name}.attention", n_out=3 if past else 1, is_causal=int(seq > 1))
    y = outs[0] if past else outs
    if past:  # the updated caches are outputs after the logits (_decoder)
        presents.extend(outs[1:])
    y = g.op("Transpose", [y], name=f"{name}.o_transpose", perm=[0, 2, 1, 3])
    y = g.op("Reshape", [y, g.const("hidden_shape", [0, seq, heads * dh], np.int64)], name=f"{name}.o_reshape")
    return g.op("MatMul", [y, g.weight(f"{name}.o_proj", [heads * dh, hidden])], name=f"{name}.o_proj")


def _moe_mlp(g: _GraphBuilder, x: str, cfg: dict, tokens: int, name: str) -> str:
    """Top-k softmax routing over E experts (batched over stacked expert weights [E, H, F]) and a
    shared expert behind a sigmoid gate (Qwen2-MoE's Qwen2MoeSparseMoeBlock)."""
    hidden, e, k, ffn = cfg["hidden"], cfg["experts"], cfg["top_k"], cfg["expert_ffn"]
    t = g.op("Reshape", [x, g.const("token_shape", [tokens, hidden], np.int64)], name=f"{name}.tokens")
    logits = g.op("MatMul", [t, g.weight(f"{name}.gate", [hidden, e])], name=f"{name}.gate")
    probs = g.op("Softmax", [logits], name=f"{name}.softmax", axis=-1)
    w, idx = g.op("TopK", [probs, g.const("top_k", [k], np.int64)], name=f"{name}.topk", n_out=2, axis=-1)
    zeros = g.op("ConstantOfShape", [g.const("route_shape", [tokens, e], np.int64)], name=f"{name}.zeros",
                 value=numpy_helper.from_array(np.zeros(1, np.float32)))
    combine = g.op("ScatterElements", [zeros, idx, w], name=f"{name}.scatter", axis=1)
    combine = g.op("Unsqueeze", [g.op("Transpose", [combine], name=f"{name}.combine_t", perm=[1, 0]),
                                 g.const("last", [-1], np.int64)], name=f"{name}.combine")
    gate = g.op("MatMul", [t, g.weight(f"{name}.experts.gate_proj", [e, hidden, ffn])], name=f"{name}.experts.gate")
    up = g.op("MatMul", [t, g.weight(f"{name}.experts.up_proj", [e, hidden, ffn])], name=f"{name}.experts.up")
    h = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate], name=f"{name}.experts.sigmoid")],
                          name=f"{name}.experts.silu"), up], name=f"{name}.experts.mul")
    out = g.op("MatMul", [h, g.weight(f"{name}.experts.down_proj", [e, ffn, hidden])], name=f"{name}.experts.down")
    weighted = g.op("Mul", [out, combine], name=f"{name}.weighted")
    routed = g.op("ReduceSum", [weighted, g.const("expert_axis", [0], np.int64)], name=f"{name}.sum", keepdims=0)
    shared = _swiglu_mlp(g, t, hidden, cfg["shared_ffn"], f"{name}.shared_expert")
    sg = g.op("Sigmoid", [g.op("MatMul", [t, g.weight(f"{name}.shared_expert_gate", [hidden, 1])],
                               name=f"{name}.shared_gate")], name=f"{name}.shared_gate_sigmoid")
    y = g.op("Add", [routed, g.op("Mul", [shared, sg], name=f"{name}.shared_gated")], name=f"{name}.add_shared")
    return g.op("Reshape", [y, g.const("hidden_shape_3d", [1, tokens, hidden], np.int64)], name=f"{name}.out")


def _decoder(cfg: dict, name: str, batch: int, dynamic_batch: bool, seq: int, past: int) -> onnx.ModelProto:
    """A Llama-style decoder: embeddings, `layers` x (RMSNorm, attention, residual, RMSNorm, MLP,
    residual), final RMSNorm, LM head.  cos/sin are inputs [1, 1, seq, head_dim] (the positions'
    rotary tables, computed outside the layers as HF does)."""
    g = _GraphBuilder(name)
    b = _batch_dim(batch, dynamic_batch)
    hidden, dh = cfg["hidden"], cfg["head_dim"]
    ids = g.input("input_ids", [b, seq], TensorProto.INT64)
    rope = (g.input("cos", [1, 1, seq, dh]), g.input("sin", [1, 1, seq, dh]))
    x = g.op("Gather", [g.weight("embed_tokens", [cfg["vocab"], hidden]), ids], name="embed_tokens", axis=0)
    presents: list[str] = []
    for i in range(cfg["layers"]):
        lname = f"layers.{i}"
        a = _llm_attention(g, _rms_norm(g, x, hidden, f"{lname}.input_layernorm"), rope, cfg, b=b, seq=seq, past=past,
                           name=f"{lname}.self_attn", presents=presents)
        x = g.op("Add", [x, a], name=f"{lname}.attn_residual")
        h = _rms_norm(g, x, hidden, f"{lname}.post_attention_layernorm")
        if "experts" in cfg:
            if batch != 1 or dynamic_batch:
                raise ValueError(f"zoo model {name}: the MoE layer is built for batch 1 (got {batch})")
            h = _moe_mlp(g, h, cfg, seq, f"{lname}.mlp")
        else:
            h = _swiglu_mlp(g, h, hidden, cfg["ffn"], f"{lname}.mlp")
        x = g.op("Add", [x, h], name=f"{lname}.mlp_residual")
    x = _rms_norm(g, x, hidden, "norm")
    g.output(g.op("MatMul", [x, g.weight("lm_head", [hidden, cfg["vocab"]])], name="lm_head"))
    for t in presents:
        g.output(t)
    return g.model(LLM_OPSET)


# Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json: hidden_size 4096, num_attention_heads 32,
# num_key_value_heads 8, intermediate_size 14336, num_hidden_layers 32, vocab_size 128256).
LLAMA3_8B = dict(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, layers=32, vocab=128256)
# Qwen1.5-MoE-A2.7B (Qwen/Qwen1.5-MoE-A2.7B config.json: hidden_size 2048, 16 heads, 16 KV heads,
# num_experts 60, num_experts_per_tok 4, moe_intermediate_size 1408, shared_expert_intermediate_size
# 5632, 24 layers, vocab 151936, qkv bias).
QWEN_MOE = dict(hidden=2048, heads=16, kv_heads=16, head_dim=128, experts=60, top_k=4, expert_ffn=1408,
                shared_ffn=5632, layers=24, vocab=151936, qkv_bias=True)
LLM_SEQ = 2048  # prefill tokens; the decode variant's KV cache holds as many


def llama(batch: int = 1, dynamic_batch: bool = False, seq: int = LLM_SEQ) -> onnx.ModelProto:
    """Llama-3-8B-like decoder (32 layers, GQA 32/8 heads), prefill of `seq` tokens."""
    return _decoder(LLAMA3_8B, "llama", batch, dynamic_batch, seq, past=0)


def llama_decode(batch: int = 1, dynamic_batch: bool = False, cache: int = LLM_SEQ) -> onnx.ModelProto:
    """Llama-3-8B-like decoder, decode: one new token on a KV cache of `cache` tokens."""
    return _decoder(LLAMA3_8B, "llama_decode", batch, dynamic_batch, 1, past=cache)


def qwen_moe(batch: int = 1, dynamic_batch: bool = False, seq: int = LLM_SEQ) -> onnx.ModelProto:
    """Qwen1.5-MoE-A2.7B-like decoder (24 layers): 60 routed experts (top-4) and a shared expert,
    prefill of `seq` tokens."""
    return _decoder(QWEN_MOE, "qwen_moe", batch, dynamic_batch, seq, past=0)


MODELS: dict[str, Callable[..., onnx.ModelProto]] = {
    "resnet50": resnet50,
    "bert_base": bert_base,
    "gpt2_small": gpt2_small,
    "yolov5s": yolov5s,
    "llama": llama,
    "llama_decode": llama_decode,
    "qwen_moe": qwen_moe,
}


def build(name: str, batch: int = 1, dynamic_batch: bool = False) -> onnx.ModelProto:
    """Build zoo model `name` (one of MODELS) with the given batch size.

    With dynamic_batch=True the batch dimension is the symbol "batch", which
    must then be fixed with an input shape when the model is imported."""
    if name not in MODELS:
        raise KeyError(f"unknown zoo model {name!r}; available: {', '.join(sorted(MODELS))}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    return MODELS[name](batch=batch, dynamic_batch=dynamic_batch)


def save(name: str, path: str, batch: int = 1, dynamic_batch: bool = False) -> str:
    """Build zoo model `name` and write it to `path` (atomically). Returns the path."""
    from .fileio import atomic_write_bytes
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write_bytes(path, build(name, batch, dynamic_batch).SerializeToString())
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m aoe_native.zoo", description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("-o", "--output", help="output .onnx path (default: <model>.onnx)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dynamic-batch", action="store_true", help="make the batch dimension symbolic")
    args = ap.parse_args(argv)
    path = save(args.model, args.output or f"{args.model}.onnx", args.batch, args.dynamic_batch)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
