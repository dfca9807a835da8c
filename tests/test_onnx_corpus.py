"""Real models this repository has never been tuned on: the light models shipped inside the onnx
wheel (onnx/backend/test/data/light: IR 3, opset 9, Caffe2 exports whose weights are
ConstantOfShape nodes) and the repository's own exports (tests/data/exports: TorchScript,
dynamo and Paddle).  Each imports, is modelled (>= 99% of its nodes, FLOPs and bytes in modelled
kernels) and tunes with a small budget as operators (job type 2) and as subgraphs then
operators (job type 1,2).  No copy of a model is kept in the repository."""
import os
import warnings
from pathlib import Path

import onnx
import pytest

import aoe_native
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import partition

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
EXPORTS = Path(__file__).parent / "data" / "exports"
MODELS = sorted(LIGHT.glob("*.onnx")) + sorted(EXPORTS.glob("*.onnx"))
FAST = dict(soc_version="Ascend910B3", parallel=1, seed=0)  # small budgets: that it runs, not how well


def test_the_corpus_is_there():
    """The walk below must not pass by finding nothing: onnx ships 9 light models."""
    assert len(list(LIGHT.glob("*.onnx"))) >= 9 and len(list(EXPORTS.glob("*.onnx"))) >= 9


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_imports_is_modelled_and_tunes(path, tmp_path):
    g = load_graph(path)
    assert all(all(d > 0 for d in s) for s in g.inputs.values())
    cov = partition(g, aoe_native.supported_ops()).coverage
    kernel_nodes = cov.nodes - cov.view_nodes  # views and folded constants launch nothing
    assert cov.modelled_nodes >= 0.99 * kernel_nodes, cov.top_unmodelled
    assert cov.flops_share >= 0.99 and cov.bytes_share >= 0.99, cov.top_unmodelled
    with warnings.catch_warnings():
        warnings.simplefilter("error", aoe_native.CoverageWarning)
        ops = aoe_native.tune_model(str(path), bank=tmp_path / "opat", evals_per_task=6, round_evals=6, **FAST)
        sub = aoe_native.tune_subgraphs(str(path), bank=tmp_path / "sgat", evals_per_kernel=2, then_tune_ops=True,
                                        evals_per_task=4, round_evals=4, **FAST)
    assert ops.tasks and all(t.time_us > 0 and t.baseline_us > 0 for t in ops.tasks)
    assert not ops.interrupted and not sub.interrupted
    assert sub.partition is not None and sub.partition.kernels
    assert sub.opat is not None and sub.opat.tasks and all(t.time_us > 0 for t in sub.opat.tasks)
    assert os.listdir(tmp_path / "opat") and os.listdir(tmp_path / "sgat")
