"""aoe_native.tune_torch: a PyTorch module exported in memory and tuned as an ONNX model."""
import subprocess
import sys

import pytest

import aoe_native
from aoe_native.graph.torch_export import export_module

torch = pytest.importorskip("torch")
FAST = dict(parallel=1, evals_per_task=200, round_evals=200)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)

    def forward(self, x):
        y = torch.nn.functional.hardswish(self.conv(x))
        return torch.cat([self.up(y), torch.nn.functional.interpolate(x, scale_factor=2.0)[:, :1]], 1)


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_tune_torch_runs_the_same_job(tmp_path, exporter):
    x = torch.randn(1, 3, 16, 16)
    r = aoe_native.tune_torch(Block(), (x,), soc_version="Ascend910B3", exporter=exporter, bank=tmp_path / "bank",
                              result_dir=tmp_path, **FAST)
    assert r.model_name == "Block" and r.unsupported == [] and r.coverage["flops_share"] == 1.0
    ops = {t.op_type for t in r.tasks}
    assert {"Conv", "Concat", "Resize"} <= ops and r.result_file and (tmp_path / "bank" / "Ascend910B3").is_dir()
    if exporter == "dynamo":  # the job is tune_model's: the exported ONNX model gives the same tasks
        again = aoe_native.tune_model(export_module(Block(), x, exporter), bank=tmp_path / "bank2", **FAST)
        assert [t.key for t in again.tasks] == [t.key for t in r.tasks]


def test_options_are_checked(tmp_path):
    with pytest.raises(ValueError, match="exporter must be one of dynamo, torchscript"):
        aoe_native.tune_torch(Block(), torch.randn(1, 3, 8, 8), exporter="fx", bank=tmp_path)
    with pytest.raises(TypeError, match="input_shape"):
        aoe_native.tune_torch(Block(), torch.randn(1, 3, 8, 8), input_shape="x:1,3,8,8", bank=tmp_path)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        aoe_native.tune_torch(lambda x: x, torch.randn(1, 3, 8, 8), bank=tmp_path)
    assert not (tmp_path / "Ascend910B3").exists()


def test_package_imports_without_torch():
    code = "import sys; sys.modules['torch'] = None; import aoe_native; print(aoe_native.tune_torch.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "tune_torch"


def test_without_torch_the_error_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(ImportError, match=r"aoe-native\[torch\]"):
        aoe_native.tune_torch(object(), (), bank=tmp_path)


def test_tracing_that_depends_on_input_values_is_an_error(tmp_path):
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)

        def forward(self, x):
            return self.fc(x) if x.sum() > 0 else x

    with pytest.raises(ValueError, match="tracing depends on values of the example inputs.*use exporter='dynamo'"):
        aoe_native.tune_torch(Branchy(), torch.randn(4, 16), exporter="torchscript", bank=tmp_path)


def test_example_inputs_the_module_cannot_run_are_named(tmp_path):
    with pytest.raises(ValueError, match="Linear: the module fails on the example inputs .*dtype"):
        aoe_native.tune_torch(torch.nn.Linear(8, 8), torch.ones(2, 8, dtype=torch.int64), exporter="torchscript",
                              bank=tmp_path)
