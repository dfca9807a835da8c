"""Distributed measurement on a local Ray: results in proposal order whatever the number of
workers, failure isolation per configuration, and the tuning job's evaluator seam."""
import math
import os
import time

import pytest

ray = pytest.importorskip("ray")

import aoe_native as an  # noqa: E402
from aoe_native.runners import RayObjective  # noqa: E402
from opat_models import mlp  # noqa: E402

SOC = "Ascend910B3"


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    # the workers import this test module's functions by name
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address="127.0.0.1", runtime_env={"env_vars": {"PYTHONPATH": os.path.dirname(__file__)}})
    yield
    ray.shutdown()


def space():
    return an.SearchSpace({"a": list(range(1, 13)), "b": list(range(1, 13)), "c": [1, 2, 4, 8]},
                          ["a * c <= 48", "a + b != 13"])


def smooth(config):
    return (config["a"] - 7) ** 2 + 0.5 * (config["b"] - 3) ** 2 + 3.0 / config["c"] + 0.1 * config["a"] * config["b"]


def misbehaving(config):
    if config["a"] == 2:
        raise RuntimeError("kernel failed to compile")
    if config["a"] == 3 and config["b"] == 1:
        os._exit(7)  # the measurement process dies
    if config["a"] == 4 and config["b"] == 1:
        time.sleep(60)  # hangs past the timeout
    return smooth(config)


def test_same_seed_same_run_on_one_or_two_workers():
    sp = space()
    runs = []
    for workers in (1, 2):
        with RayObjective(smooth, sp.param_names, workers=workers, batch=4) as obj:
            runs.append(an.tune(sp, obj, strategy="forest", strategy_options={"batch": obj.max_batch},
                                max_evals=40, seed=3))
    assert list(runs[0].history_ids) == list(runs[1].history_ids)
    assert list(runs[0].history_values) == list(runs[1].history_values)
    assert runs[0].best_value == min(smooth(c) for c, _ in runs[0].history)


def test_a_crash_a_hang_and_an_error_fail_only_their_configurations():
    sp = space()
    bad = [{"a": 2, "b": 5, "c": 1}, {"a": 3, "b": 1, "c": 1}, {"a": 4, "b": 1, "c": 2}]
    good = [{"a": 7, "b": 3, "c": 4}, {"a": 6, "b": 2, "c": 8}]
    with RayObjective(misbehaving, sp.param_names, workers=2, timeout=3, batch=5) as obj:
        r = an.tune(sp, obj, strategy="random", max_evals=5, initial_configs=bad + good, seed=0)
        assert r.evaluations == 5
        values = dict(zip(map(int, r.history_ids), r.history_values))
        for cfg in bad:
            assert math.isinf(values[sp.index(cfg)])
        assert r.best_config == good[0] and r.best_value == smooth(good[0])
        reasons = sorted(obj.errors.values())
        assert any("kernel failed to compile" in e for e in reasons)
        assert any("crashed" in e for e in reasons) and any("timed out" in e for e in reasons)
        assert sorted(r.errors.values()) == reasons  # the run's failures carry the workers' reasons
        # the workers are still there for the next batch
        again = an.tune(sp, obj, strategy="random", max_evals=4, initial_configs=good, seed=1)
        assert again.best_value == smooth(good[0])


def test_a_function_the_workers_cannot_load_is_a_clear_error():
    def local(config):  # pickled by value: loads fine
        return 1.0
    with RayObjective(local, ["a"], workers=1) as obj:
        assert obj.fn(__import__("numpy").array([[1]])).values == [1.0]

    class Unpicklable:
        def __reduce__(self):
            raise TypeError("cannot be sent")

        def __call__(self, config):
            return 1.0
    with pytest.raises((RuntimeError, TypeError), match="cannot be sent|could not start"):
        RayObjective(Unpicklable(), ["a"], workers=1)


def measure_task(task, tiling):
    return an.estimate(task.op_type, task.inputs, task.dtype, SOC, tiling, attrs=task.attrs or None).time_us


def test_opat_job_measures_on_ray(tmp_path):
    ev = an.RayEvaluator(SOC, measure_task, workers=2, batch=4, timeout=30)
    try:
        r = an.tune_model(mlp(), input_shape="x:1,64,256", bank=tmp_path, parallel=1, evaluator=ev,
                          evals_per_task=24, round_evals=12, seed=2)
    finally:
        ev.close()
    assert r.evaluator == "measured on Ray" and r.improvement > 0
    assert all(t.evaluations > 0 for t in r.tasks)


def test_workers_the_cluster_cannot_place_are_an_error_not_a_hang():
    with pytest.raises(ValueError, match=r"need more than the Ray cluster has \(NPU: 0\)"):
        RayObjective(smooth, ["a", "b", "c"], resources={"NPU": 1})
    with pytest.raises(ValueError, match="need more than the Ray cluster has"):
        RayObjective(smooth, ["a", "b", "c"], workers=64)


def test_an_autoscaling_cluster_is_waited_for_not_refused():
    """On a cluster that grows on demand the resources appear once workers wait for them:
    `autoscale` does not refuse what the cluster lacks now, and gives the workers
    start_timeout to be placed (this local cluster never grows, so the wait ends in an error
    that names the resources)."""
    with pytest.raises(RuntimeError, match=r"worker\(s\) of \{'NPU': 1.*did not start within 2 s"):
        RayObjective(smooth, ["a", "b", "c"], workers=1, resources={"NPU": 1}, autoscale=True, start_timeout=2)
    with pytest.raises(ValueError, match="with autoscale, give workers="):
        RayObjective(smooth, ["a", "b", "c"], resources={"NPU": 1}, autoscale=True)
    # the cluster's own resources still start at once
    with RayObjective(smooth, ["a", "b", "c"], workers=1, autoscale=True, batch=2) as obj:
        assert len(obj.workers) == 1
