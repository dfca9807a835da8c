"""GDAT with PyTorch: a measured timeline, and a plan applied to REAL DDP (gloo, 2 processes)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from aoe_native import Cluster, tune_gradients
from aoe_native.gradients.timeline import TimelineError

torch = pytest.importorskip("torch")
from aoe_native import torch_ddp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_plan_applied_to_real_ddp_gives_the_planned_buckets_and_ddp_gradients(tmp_path):
    out, port = str(tmp_path / "r.json"), str(_free_port())
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "ddp_worker.py"), str(r), port, out],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in (0, 1)]
    logs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(logs)
    r = json.load(open(out))
    plan = r["plan"]
    assert 1 < len(plan) < sum(len(b) for b in plan)  # a real split, with merged buckets
    # DDP rebuilds its buckets in the observed ready order after the first iteration
    for seen in r["ddp_buckets"][1:]:
        assert [sorted(b) for b in seen] == [sorted(b) for b in plan]
    for launched in r["hook_buckets"]:
        assert launched == plan
    assert r["ddp_diff"] < 1e-5 and r["hook_diff"] < 1e-5


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def test_measure_timeline_records_every_parameter_in_ready_order():
    m = _mlp()
    x = torch.randn(8, 16)
    tl = torch_ddp.measure_timeline(m, lambda: m(x).sum(), steps=3)
    names = [n for n, _, _ in tl]
    assert sorted(names) == sorted(n for n, _ in m.named_parameters())
    assert names.index("2.weight") < names.index("0.weight")  # the last layer's gradient first
    assert dict((n, b) for n, b, _ in tl)["0.weight"] == 16 * 32 * 4
    assert all(a[2] <= b[2] for a, b in zip(tl, tl[1:])) and all(m.weight.grad is None for m in (m[0], m[2]))
    tune_gradients(tl, Cluster(ranks=2))  # a valid timeline


def test_measure_timeline_names_parameters_without_gradient():
    m = _mlp()
    x = torch.randn(8, 16)
    with pytest.raises(TimelineError, match=r"\['2.weight', '2.bias'\] got no gradient"):
        torch_ddp.measure_timeline(m, lambda: m[1](m[0](x)).sum(), steps=1)


def test_apply_plan_rejects_a_model_that_does_not_match():
    m = _mlp()
    grads = [(n, p.numel() * 4, float(i)) for i, (n, p) in enumerate(reversed(list(m.named_parameters())))]
    plan = tune_gradients(grads[:-1], Cluster(ranks=2))
    with pytest.raises(ValueError, match=r"not in the plan \['0.weight'\]"):
        torch_ddp.apply_plan(m, plan, method="hooks")
    plan = tune_gradients([(n, b * 2 if n == "2.bias" else b, r) for n, b, r in grads], Cluster(ranks=2))
    with pytest.raises(ValueError, match="parameter 2.bias: 16 bytes in the model, 32 in the plan"):
        torch_ddp.apply_plan(m, plan, method="hooks")


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"aoe_native.torch_ddp needs PyTorch.*aoe-native\[torch\]"):
        torch_ddp.measure_timeline(object(), lambda: None)


def test_apply_plan_rejects_buckets_that_do_not_cover_the_gradients_once():
    import dataclasses
    m = _mlp()
    grads = [(n, p.numel() * 4, float(i)) for i, (n, p) in enumerate(reversed(list(m.named_parameters())))]
    plan = tune_gradients(grads, Cluster(ranks=2), max_buckets=2)
    first = plan.buckets[0]
    for buckets, message in ((plan.buckets[:-1], "leave out"),
                             ([first, first] + plan.buckets[1:], "in buckets 0 and 1")):
        edited = dataclasses.replace(plan, buckets=buckets)
        for method in ("hooks", "ddp"):
            with pytest.raises(ValueError, match=message):
                torch_ddp.apply_plan(m, edited, method=method)


def test_hooks_refuse_accumulation_and_recover_from_an_unused_parameter(tmp_path):
    """One process group of one rank: a second backward before finish() is an error (its
    gradients would be overwritten), and a step with an unused parameter names it and
    leaves the next step working."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        m = _mlp()
        grads = [(n, p.numel() * 4, float(i)) for i, (n, p) in enumerate(reversed(list(m.named_parameters())))]
        wrapped = torch_ddp.apply_plan(m, tune_gradients(grads, Cluster(ranks=2)), method="hooks")
        x = torch.randn(8, 16)
        wrapped(x).sum().backward()
        with pytest.raises(RuntimeError, match="ready again before finish"):
            wrapped(x).sum().backward()
        wrapped._reset()
        m.zero_grad(set_to_none=True)
        with pytest.raises(RuntimeError, match=r"no gradient for \['2.bias', '2.weight'\]"):
            m[1](m[0](x)).sum().backward()  # the last layer unused
            wrapped.finish()
        m.zero_grad(set_to_none=True)
        wrapped(x).sum().backward()
        wrapped.finish()  # a normal step works again
        assert all(p.grad is not None for p in m.parameters())
    finally:
        dist.destroy_process_group()


def test_a_parameter_frozen_after_planning_is_named_as_frozen():
    m = _mlp()
    grads = [(n, p.numel() * 4, float(i)) for i, (n, p) in enumerate(reversed(list(m.named_parameters())))]
    plan = tune_gradients(grads, Cluster(ranks=2))
    m[0].weight.requires_grad_(False)
    with pytest.raises(ValueError, match=r"frozen since the plan was made \(requires_grad=False\) \['0.weight'\]"):
        torch_ddp.apply_plan(m, plan, method="hooks")


class _TinyLM(torch.nn.Module):
    """Embedding -> Linear -> LayerNorm -> output projection tied to the embedding."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(100, 16)
        self.fc = torch.nn.Linear(16, 16)
        self.ln = torch.nn.LayerNorm(16)
        self.head = torch.nn.Linear(16, 100, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x):
        return self.head(self.ln(self.fc(self.emb(x))))


def _exported(tmp_path, m, **kwargs):
    import warnings
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (torch.randint(0, 100, (2, 8)),), str(path), **kwargs)
    return str(path)


def test_plan_from_a_dynamo_export_applies_to_the_module(tmp_path):
    """The dynamo exporter folds fc.weight's transpose into 'val_N' and keeps one name of the
    tied embedding: the timeline has every parameter under its framework name, once."""
    from aoe_native.gradients.timeline import GradientNameWarning
    from aoe_native.jobs.backward import predict_timeline

    m = _TinyLM()
    with pytest.warns(GradientNameWarning, match=r"\['emb\.weight'\]: the file has no tensor for it"):
        tl = predict_timeline(_exported(tmp_path, m, dynamo=True))
    assert sorted(n for n, _, _ in tl) == ["fc.bias", "fc.weight", "head.weight", "ln.bias", "ln.weight"]
    assert dict((n, b) for n, b, _ in tl)["head.weight"] == 100 * 16 * 4
    wrapped = torch_ddp.apply_plan(m, tune_gradients(tl, Cluster(ranks=2)), method="hooks")  # head.weight is emb.weight
    wrapped.remove()


def test_plan_from_a_torchscript_export_names_what_it_cannot_match(tmp_path):
    from aoe_native.gradients.timeline import GradientNameWarning
    from aoe_native.jobs.backward import predict_timeline

    m = _TinyLM()
    with pytest.warns(GradientNameWarning):
        tl = predict_timeline(_exported(tmp_path, m, dynamo=False))
    made = sorted(n for n, _, _ in tl if n.startswith("onnx::MatMul_"))
    # fc.weight's transpose has a made-up name; the tied head's transpose holds emb.weight's values: it is emb.weight
    assert len(made) == 1 and [n for n, _, _ in tl].count("emb.weight") == 1
    assert sum(b for _, b, _ in tl) == sum(p.numel() * 4 for p in m.parameters())  # (the tied one once)
    # the same export with its weights in an external data file (as a model past 2 GiB is written)
    import onnx
    external = tmp_path / "external" / "m.onnx"
    external.parent.mkdir()
    onnx.save_model(onnx.load(_exported(tmp_path, m, dynamo=False)), str(external), save_as_external_data=True,
                    location="m.data", size_threshold=0)
    with pytest.warns(GradientNameWarning):
        assert sorted(predict_timeline(str(external))) == sorted(tl)
    with pytest.raises(ValueError, match=r"not in the model \['onnx::MatMul_\d+'\], not in the "
                                         r"plan \['fc.weight'\]; the plan's timeline could not name them: "
                                         r"\['onnx::MatMul_\d+'\]: a constant the "
                                         r"TorchScript exporter computed .*measure_timeline\(module, loss_fn\)"):
        torch_ddp.apply_plan(m, tune_gradients(tl, Cluster(ranks=2)), method="hooks")
    # exported as the advice says, every parameter keeps its name (the tied head reads emb.weight)
    tl = predict_timeline(_exported(tmp_path, m, dynamo=False, do_constant_folding=False,
                                    training=torch.onnx.TrainingMode.TRAINING))
    assert sorted(n for n, _, _ in tl) == sorted(n for n, _ in m.named_parameters()) and not tl.unmatched
    torch_ddp.apply_plan(m, tune_gradients(tl, Cluster(ranks=2)), method="hooks").remove()


def test_apply_plan_refuses_two_names_of_one_tied_parameter():
    m = _TinyLM()
    grads = [("head.weight", 6400, 1.0), ("emb.weight", 6400, 2.0)] + \
        [(n, p.numel() * 4, 0.5) for n, p in m.named_parameters() if not n.startswith("emb")]
    grads.sort(key=lambda g: g[2])
    with pytest.raises(ValueError, match="head.weight and emb.weight are one tied parameter"):
        torch_ddp.apply_plan(m, tune_gradients(grads, Cluster(ranks=2)), method="hooks")
