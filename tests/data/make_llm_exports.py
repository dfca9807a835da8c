"""Build small LLM decoders and export them with both of PyTorch's ONNX exporters.

The ONNX files in llm/ are what tests/test_llm_import.py reads; this script is what made them
(``python tests/data/make_llm_exports.py`` with torch 2.13, onnxscript and transformers 5.23.0
installed; nothing is downloaded: each model is built from a config with random weights).

- llama, qwen2: transformers' LlamaForCausalLM and Qwen2ForCausalLM (2 layers, hidden 64, 4 query
  heads and 2 key/value heads, so attention repeats KV heads as GQA does), default attention
  implementation (sdpa), prefill of 8 tokens and decode of 1 token on an 8-token KV cache passed
  as inputs (past_key_values concatenated with the new key/value inside the model).
- qwen2moe: transformers' Qwen2MoeForCausalLM (4 experts, top-2, a gated shared expert) with its
  "batched_mm" experts implementation: each of the T*k routed rows multiplies its expert's gathered
  weight.  Its default ("eager") loops over experts with data-dependent token counts (nonzero,
  index_add) and does not export.
- moe: a small decoder whose MLP is a top-k routed mixture of experts with a shared expert
  (Qwen2-MoE's structure), written for the export in the other static form: every expert runs as
  one batched matmul over stacked weights and the top-k gate scatters its weights over the experts.

Files: llm/<model>_<phase>_<exporter>.onnx, phase "prefill" or "decode", exporter "ts"
(TorchScript, dynamo=False, opset 17), "dynamo" (torch.export, dynamo=True, its default opset 20) or,
for llama, "dynamo23" (opset 23: ONNX's RMSNormalization and Attention operators).
"""
from __future__ import annotations

import os
import sys
import warnings

import torch
from torch import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llm")

# Sizes shared with the tests (tests/test_llm_import.py).
DENSE = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64)
MOE = dict(vocab=128, hidden=64, heads=4, kv_heads=2, layers=2, experts=4, top_k=2, expert_ffn=32, shared_ffn=64)
QWEN2_MOE = dict(DENSE, moe_intermediate_size=32, shared_expert_intermediate_size=64, num_experts=4,
                 num_experts_per_tok=2)
SEQ, CACHE = 8, 8


class Prefill(nn.Module):
    """input_ids and attention_mask in, logits out (no cache)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class Decode(nn.Module):
    """One new token on a KV cache given as inputs (past_key_<i>, past_value_<i>, [B, Nkv, S, D]);
    the updated caches are outputs, as an ONNX decode graph for an inference runtime has them."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, *past):
        from transformers import DynamicCache
        cache = DynamicCache(config=self.model.config)
        for i in range(len(past) // 2):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        kv = out.past_key_values
        return (out.logits,) + tuple(t for i in range(len(past) // 2) for t in (kv.layers[i].keys, kv.layers[i].values))


def qwen2_moe():
    """transformers' Qwen2MoeForCausalLM with its "batched_mm" experts (each routed row multiplies its
    expert's gathered weight: static shapes; the default "eager" loop over experts does not export)."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    cfg = Qwen2MoeConfig(**QWEN2_MOE)
    cfg._experts_implementation = "batched_mm"
    return Qwen2MoeForCausalLM(cfg).eval()


def dense(kind: str):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    if kind == "llama":
        return LlamaForCausalLM(LlamaConfig(**DENSE)).eval()
    return Qwen2ForCausalLM(Qwen2Config(**DENSE)).eval()


# --------------------------------------------------------------------------- MoE decoder
def rms_norm(x, weight, eps=1e-6):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class MoeBlock(nn.Module):
    """Top-k softmax routing over E experts with SwiGLU experts and a shared expert (Qwen2-MoE)."""

    def __init__(self, hidden, experts, top_k, ffn, shared_ffn):
        super().__init__()
        self.top_k, self.experts = top_k, experts
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.w_gate = nn.Parameter(torch.randn(experts, hidden, ffn) * 0.05)
        self.w_up = nn.Parameter(torch.randn(experts, hidden, ffn) * 0.05)
        self.w_down = nn.Parameter(torch.randn(experts, ffn, hidden) * 0.05)
        self.shared_gate = nn.Linear(hidden, shared_ffn, bias=False)
        self.shared_up = nn.Linear(hidden, shared_ffn, bias=False)
        self.shared_down = nn.Linear(shared_ffn, hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        t = x.reshape(b * s, h)
        probs = torch.softmax(self.gate(t), dim=-1)
        weights, idx = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        # [T, E] routing weight of each expert (0 where not selected)
        combine = torch.zeros(b * s, self.experts, dtype=x.dtype).scatter(1, idx, weights)
        hidden = nn.functional.silu(torch.matmul(t, self.w_gate)) * torch.matmul(t, self.w_up)  # [E, T, F]
        out = torch.matmul(hidden, self.w_down)  # [E, T, H]
        routed = (out * combine.t().unsqueeze(-1)).sum(0)
        shared = self.shared_down(nn.functional.silu(self.shared_gate(t)) * self.shared_up(t))
        return (routed + shared).reshape(b, s, h)


class MoeLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, self.heads, self.kv = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
        self.d = h // self.heads
        self.norm1, self.norm2 = nn.Parameter(torch.ones(h)), nn.Parameter(torch.ones(h))
        self.q = nn.Linear(h, h, bias=False)
        self.k = nn.Linear(h, self.kv * self.d, bias=False)
        self.v = nn.Linear(h, self.kv * self.d, bias=False)
        self.o = nn.Linear(h, h, bias=False)
        self.moe = MoeBlock(h, cfg["experts"], cfg["top_k"], cfg["expert_ffn"], cfg["shared_ffn"])

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        y = rms_norm(x, self.norm1)
        q = self.q(y).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv, self.d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.heads // self.kv, dim=1)
        v = v.repeat_interleave(self.heads // self.kv, dim=1)
        att = torch.softmax(q @ k.transpose(-1, -2) / self.d ** 0.5 + mask, dim=-1) @ v
        x = x + self.o(att.transpose(1, 2).reshape(b, s, -1))
        return x + self.moe(rms_norm(x, self.norm2))


class MoeDecoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.layers = nn.ModuleList(MoeLayer(cfg) for _ in range(cfg["layers"]))
        self.norm = nn.Parameter(torch.ones(cfg["hidden"]))
        self.head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)
        d = cfg["hidden"] // cfg["heads"]
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        freqs = torch.outer(torch.arange(64).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        mask = torch.full((s, s), float("-inf")).triu(1)
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x, self.cos[:, :, :s], self.sin[:, :, :s], mask)
        return self.head(rms_norm(x, self.norm))


def models():
    torch.manual_seed(0)
    ids = torch.randint(0, 128, (1, SEQ))
    d = DENSE["hidden_size"] // DENSE["num_attention_heads"]
    past = tuple(torch.randn(1, DENSE["num_key_value_heads"], CACHE, d) for _ in range(2 * DENSE["num_hidden_layers"]))
    past_names = [f"past_{kv}_{i}" for i in range(DENSE["num_hidden_layers"]) for kv in ("key", "value")]
    out = []
    for kind in ("llama", "qwen2"):
        m = dense(kind)
        out.append((f"{kind}_prefill", Prefill(m), (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"]))
        out.append((f"{kind}_decode", Decode(m), (ids[:, :1], torch.ones(1, CACHE + 1, dtype=torch.long)) + past,
                    ["input_ids", "attention_mask"] + past_names))
    out.append(("moe_prefill", MoeDecoder(MOE).eval(), (ids,), ["input_ids"]))
    out.append(("qwen2moe_prefill", Prefill(qwen2_moe()), (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"]))
    return out


def export(module, args, path, input_names, exporter: str) -> None:
    """Export with static input shapes, weights inside the file.  "dynamo23": the dynamo exporter at
    opset 23, where it writes ONNX's RMSNormalization and Attention operators."""
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter.startswith("dynamo"):
            opset = {"opset_version": 23} if exporter == "dynamo23" else {}
            torch.onnx.export(module, args, path, input_names=input_names, dynamo=True, external_data=False,
                              verbose=False, **opset)
        else:
            torch.onnx.export(module, args, path, input_names=input_names, dynamo=False, opset_version=17)


def main(argv: list[str]) -> int:
    os.makedirs(HERE, exist_ok=True)
    for name, module, args, input_names in models():
        for exporter in ("ts", "dynamo") + (("dynamo23",) if name.startswith("llama") else ()):
            path = os.path.join(HERE, f"{name}_{exporter}.onnx")
            export(module, args, path, input_names, exporter)
            print(f"{path}: {os.path.getsize(path) / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
