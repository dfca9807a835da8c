"""bench/bench_strategies.py's Kernel Tuner replay: the peer searches the space ours search."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_strategies.py"


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("kernel_tuner")  # a bench-only dependency (pip install .[bench])
    spec = importlib.util.spec_from_file_location("bench_strategies", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kernel_tuner_replays_failed_configurations_unless_asked_for_tune_cache(bench, datasets, tmp_path):
    """pnpoly's file with 30 of its configurations, 6 of them failed: brute force over the same space
    evaluates all 30 and the 6 score as failures; tune_cache's space (Kernel Tuner's own way) lacks them."""
    raw = json.loads((datasets / "pnpoly_RTX3090_kerneltuner.json").read_text())
    failed = [k for k, r in raw["cache"].items() if not isinstance(r.get("time"), (int, float))]
    ok = [k for k, r in raw["cache"].items() if isinstance(r.get("time"), (int, float))]
    path = tmp_path / "pnpoly30.json"
    path.write_text(json.dumps(dict(raw, cache={k: raw["cache"][k] for k in failed[:6] + ok[:24]})))
    keys = raw["tune_params_keys"]
    traces = {}
    for mode in ("same", "tune_cache"):
        results = bench.kt_replay(path, mode, strategy="brute_force", quiet=True, verbose=False)
        traces[mode] = bench.kt_trace(results, keys)
    assert len(traces["same"]) == 30
    assert sum(not math.isfinite(v) for v in traces["same"]) == 6
    assert len(traces["tune_cache"]) == 24 and all(math.isfinite(v) for v in traces["tune_cache"])
    with pytest.raises(ValueError, match="kt_space 'nope'"):
        bench.kt_replay(path, "nope", strategy="brute_force")


def test_curves_from_before_the_option_are_taken_as_tune_cache_runs(bench, tmp_path):
    import numpy as np

    old = tmp_path / "old.npz"
    np.savez_compressed(old, **{"kt:pso|x@25": np.zeros((2, 3)), "aoe:auto|x@25": np.ones((2, 3))},
                        first_seed=np.array(0))
    assert sorted(bench.load_curves(old)) == ["aoe:auto|x@25", "first_seed", "kt-tc:pso|x@25"]
    new = tmp_path / "new.npz"
    np.savez_compressed(new, **{"kt:pso|x@25": np.zeros((2, 3))}, first_seed=np.array(0), kt_same_space=np.array(1))
    assert "kt:pso|x@25" in bench.load_curves(new)


def test_the_verdict_gives_the_best_peers_own_10th_percentile_beside_its_mean(datasets, tmp_path, capsys):
    """auto's bar is its 10th percentile against Kernel Tuner's best mean; the verdict also reports that
    peer's own 10th percentile, so a reader sees how far the bar sits above the peer's own bad runs.
    (Peer curves come from `reused`, as `--reuse` gives them: no Kernel Tuner needed.)"""
    import numpy as np

    spec = importlib.util.spec_from_file_location("bench_strategies_verdict", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    space = bench.Space.from_cache(datasets / "pnpoly_RTX3090_kerneltuner.json").at_budget(10)
    rng = np.random.default_rng(0)
    peers = {"pso": rng.normal(0.2, 0.3, size=(10, 10)), "diff_evo": rng.normal(0.1, 0.3, size=(10, 10))}
    reused = {f"kt:{s}|{space.name}": c for s, c in peers.items()}
    _, summary = bench.score_spaces("verdict", [space], ["auto"], list(peers), 10, tmp_path, reused)
    verdict = summary["auto_vs_best_rival"][space.name]
    best = max(peers, key=lambda s: peers[s].mean())
    assert verdict["kt_best"]["same"] == [f"kt:{best}", pytest.approx(peers[best].mean(axis=1).mean())]
    assert verdict["kt_best_p10"]["same"] == pytest.approx(np.percentile(peers[best].mean(axis=1), 10))
    assert f"its own p10 {verdict['kt_best_p10']['same']:.3f}" in capsys.readouterr().out
