"""Build small models with PyTorch and export them with both of its ONNX exporters.

The ONNX files next to this script are what the tests read; this script is what made them
(``python tests/data/make_exports.py`` with the ``test`` extra installed: torch, onnxscript).
Each model reproduces the structure real exports have (HF BERT's token-type buffer, GPT-2's
causal mask and qkv split, MobileNetV3's hard activations and squeeze-excite blocks, a UNet's
Resize/Concat/ConvTranspose), at a size that keeps all files together a few MB.

Files: exports/<model>_<exporter>.onnx with exporter "ts" (TorchScript, dynamo=False) or
"dynamo" (torch.export, dynamo=True).  exports/lcnet_paddle.onnx comes from another framework's
exporter (PaddlePaddle's paddle2onnx): tests/data/make_paddle_export.py.
"""
from __future__ import annotations

import math
import os
import sys
import warnings

import torch
from torch import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exports")

# Sizes shared with the tests (tests/test_exports.py).
BERT = dict(vocab=256, hidden=64, heads=4, layers=2, ffn=128, seq=16, batch=1)
GPT = dict(vocab=256, hidden=64, heads=4, layers=2, seq=16, batch=1)
IMAGE = 64


# --------------------------------------------------------------------------- BERT-like
class BertEmbeddings(nn.Module):
    def __init__(self, vocab, hidden, max_pos=64, type_vocab=2):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(type_vocab, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)
        # As HF BERT: a zero buffer sliced and expanded to the batch when no token types are given.
        self.register_buffer("token_type_ids", torch.zeros((1, max_pos), dtype=torch.long), persistent=False)

    def forward(self, input_ids):
        batch, seq = input_ids.size()
        position_ids = self.position_ids[:, :seq]
        token_type_ids = self.token_type_ids[:, :seq].expand(batch, seq)
        x = self.word(input_ids) + self.token_type(token_type_ids) + self.position(position_ids)
        return self.norm(x)


class SelfAttention(nn.Module):
    """MatMul -> scale -> mask add -> Softmax -> MatMul, written out as HF models do."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.q, self.k, self.v = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.d).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        b, h, s, d = ctx.shape
        return self.o(ctx.permute(0, 2, 1, 3).reshape(b, s, h * d))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(hidden, heads)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up, self.down = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.act = nn.GELU()  # erf form
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.down(self.act(self.up(x))))


class BertLike(nn.Module):
    def __init__(self, vocab, hidden, heads, layers, ffn, max_pos=64, **_):
        super().__init__()
        self.emb = BertEmbeddings(vocab, hidden, max_pos)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        x = self.emb(input_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pool(x[:, 0]))


# --------------------------------------------------------------------------- GPT-2-like
class LayerNormDecomposed(nn.Module):
    """LayerNorm written out (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div), as older exports
    and hand-written models give it."""

    def __init__(self, hidden, eps=1e-5):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(hidden)), nn.Parameter(torch.zeros(hidden)), eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        return self.weight * ((x - u) / torch.sqrt(s + self.eps)) + self.bias


def gelu_tanh(x):  # GPT-2's gelu_new
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GptBlock(nn.Module):
    def __init__(self, hidden, heads, max_pos=64):
        super().__init__()
        self.heads, self.d, self.hidden = heads, hidden // heads, hidden
        self.ln1, self.ln2 = LayerNormDecomposed(hidden), LayerNormDecomposed(hidden)
        self.c_attn, self.c_proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc, self.proj = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
        self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool))[None, None],
                             persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(self.hidden, dim=2)
        q, k, v = (t.view(b, s, self.heads, self.d).transpose(1, 2) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        causal = self.bias[:, :, :s, :s]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        a = torch.matmul(torch.softmax(w, dim=-1), v).transpose(1, 2).reshape(b, s, self.hidden)
        x = x + self.c_proj(a)
        return x + self.proj(gelu_tanh(self.fc(self.ln2(x))))


class GptLike(nn.Module):
    def __init__(self, vocab, hidden, heads, layers, **_):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(64, hidden)
        self.blocks = nn.ModuleList(GptBlock(hidden, heads) for _ in range(layers))
        self.ln_f = LayerNormDecomposed(hidden)

    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        x = self.wte(input_ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())


# --------------------------------------------------------------------------- MobileNetV3-like
class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1, self.fc2 = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        return x * nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, mid, cout, k, stride, se, act):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act())
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False), nn.BatchNorm2d(mid),
                                act())
        self.se = SqueezeExcite(mid) if se else nn.Identity()
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class MobileNetV3Like(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(
            InvertedResidual(16, 16, 16, 3, 2, True, nn.ReLU),
            InvertedResidual(16, 64, 24, 3, 2, False, nn.ReLU),
            InvertedResidual(24, 72, 24, 3, 1, False, nn.ReLU),
            InvertedResidual(24, 96, 40, 5, 2, True, nn.Hardswish),
            InvertedResidual(40, 120, 40, 5, 1, True, nn.Hardswish),
        )
        self.head = nn.Sequential(nn.Conv2d(40, 128, 1, bias=False), nn.BatchNorm2d(128), nn.Hardswish())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(128, 256), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(256, classes))

    def forward(self, x):
        x = self.pool(self.head(self.blocks(self.stem(x))))
        return self.classifier(torch.flatten(x, 1))


# --------------------------------------------------------------------------- UNet-like
def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.SiLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.SiLU())


class UNetLike(nn.Module):
    """Encoder-decoder: one level up by ConvTranspose, one by nearest Resize and one by
    bilinear Resize, each concatenated with the skip connection; a YOLO-style head."""

    def __init__(self, c=8, classes=3):
        super().__init__()
        self.e1, self.e2, self.e3, self.mid = conv_block(3, c), conv_block(c, 2 * c), conv_block(2 * c, 4 * c), \
            conv_block(4 * c, 8 * c)
        self.pool = nn.MaxPool2d(2)
        self.up3 = nn.ConvTranspose2d(8 * c, 4 * c, 2, stride=2)
        self.d3 = conv_block(8 * c, 4 * c)
        self.d2 = conv_block(4 * c + 2 * c, 2 * c)
        self.d1 = conv_block(2 * c + c, c)
        self.out = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(self.pool(e1))
        e3 = self.e3(self.pool(e2))
        m = self.mid(self.pool(e3))
        d3 = self.d3(torch.cat([self.up3(m), e3], 1))
        d2 = self.d2(torch.cat([nn.functional.interpolate(d3, scale_factor=2.0, mode="nearest"), e2], 1))
        d1 = self.d1(torch.cat([nn.functional.interpolate(d2, scale_factor=2.0, mode="bilinear",
                                                          align_corners=False), e1], 1))
        return torch.sigmoid(self.out(d1))


# --------------------------------------------------------------------------- export
def models():
    """(name, module, example inputs, input names) of every exported model."""
    torch.manual_seed(0)
    ids = torch.randint(0, BERT["vocab"], (BERT["batch"], BERT["seq"]))
    mask = torch.ones(BERT["batch"], BERT["seq"], dtype=torch.long)
    gpt_ids = torch.randint(0, GPT["vocab"], (GPT["batch"], GPT["seq"]))
    img = torch.randn(1, 3, IMAGE, IMAGE)
    return [
        ("bert", BertLike(**BERT).eval(), (ids, mask), ["input_ids", "attention_mask"]),
        ("gpt2", GptLike(**GPT).eval(), (gpt_ids,), ["input_ids"]),
        ("mobilenetv3", MobileNetV3Like().eval(), (img,), ["input"]),
        ("unet", UNetLike().eval(), (img,), ["input"]),
    ]


def export(module, args, path, input_names, dynamo: bool) -> None:
    """Export with static input shapes, weights inside the file."""
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if dynamo:
            torch.onnx.export(module, args, path, input_names=input_names, dynamo=True, external_data=False,
                              verbose=False)
        else:
            torch.onnx.export(module, args, path, input_names=input_names, dynamo=False, opset_version=17)


def main(argv: list[str]) -> int:
    os.makedirs(HERE, exist_ok=True)
    for name, module, args, input_names in models():
        for exporter in ("ts", "dynamo"):
            path = os.path.join(HERE, f"{name}_{exporter}.onnx")
            export(module, args, path, input_names, exporter == "dynamo")
            print(f"{path}: {os.path.getsize(path) / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
