"""The seams a tuning job is built from: evaluators (cost model, real measurements), the
scheduler, the bank policy and the outputs.  A new tuning mode is one file in jobs/; the
short job below is such a file, written against the same seams."""
import json
import os

import pytest

import aoe_native as an
from aoe_native.bank.policy import beats_bank, repo_summary, update_mode
from aoe_native.bank.store import Bank, bank_dir, make_entry
from aoe_native.graph.onnx import load_graph
from aoe_native.graph.partition import partition
from aoe_native.jobs.evaluator import CostModelEvaluator, MeasuredEvaluator, nearest_valid_tilings
from aoe_native.jobs.scheduler import TaskState, WorkerPool, schedule
from aoe_native.outputs.aoe_files import write_result_file
from opat_models import mlp

SOC = "Ascend910B3"


def largest_tasks_job(model, evaluator, bank_root, result_dir, top=2, budget=200):
    """A toy mode: tune only the `top` heaviest tasks, keep winners, write a result file."""
    graph = load_graph(model, "x:1,64,256")
    part = partition(graph, an.supported_ops(), ub_bytes=int(evaluator.platform.ub))
    bank = Bank(bank_dir(evaluator.platform.name, bank_root), evaluator.platform.name).load()
    states = []
    for task in part.tasks:
        st = TaskState(task, [])
        st.baseline_tiling, st.baseline_us = evaluator.baseline(task)
        states.append(st)
    heavy = sorted(states, key=lambda s: -s.task.occurrences * s.baseline_us)[:top]

    def keep(st):
        if beats_bank(st.best_us, st.baseline_us, None):
            t = st.task
            bank.store([(t.key, make_entry(t.op_type, t.inputs, t.dtype, t.formats, t.attrs, st.best_tiling,
                                           st.baseline_us, st.best_us))])

    schedule(heavy, evaluator, WorkerPool(1), seed=0, budget=budget * top, round_evals=budget, deadline=None,
             on_result=keep, notify=lambda running: None)
    modes = [(update_mode(False, True, beats_bank(s.best_us, s.baseline_us, None)), False) for s in heavy]
    path = write_result_file(result_dir, "demo", graph.name, 0.0, {"repo_summary": repo_summary(modes)})
    return heavy, bank, path


def test_a_new_mode_is_one_file_on_the_shared_seams(tmp_path):
    heavy, bank, path = largest_tasks_job(mlp(), CostModelEvaluator(SOC), tmp_path / "bank", tmp_path)
    assert all(st.evaluations > 0 and st.best_us <= st.baseline_us for st in heavy)
    assert set(bank.entries) == {st.task.key for st in heavy if st.best_us < st.baseline_us}
    doc = json.loads(open(path).read())
    assert os.path.basename(path).startswith("aoe_result_demo_") and doc[1]["DEMO"]["repo_summary"]["total_num"] == 2


def test_evaluators_are_sent_to_workers_with_their_platform(tmp_path):
    import pickle
    ev = CostModelEvaluator(an.Platform.from_dict(an.platform("Ascend910B4"), "B4"))
    back = pickle.loads(pickle.dumps(ev))
    assert back.platform == ev.platform and back.platform.name == "Ascend910B4"
    r = an.tune_model(mlp(), input_shape="x:1,64,256", bank=tmp_path, parallel=2, evaluator=back,
                      evals_per_task=50, round_evals=25)
    assert r.soc_version == "Ascend910B4" and os.path.basename(r.bank_directory) == "Ascend910B4"


def test_policy_names_what_happened():
    assert beats_bank(1.0, 2.0, None) and not beats_bank(2.0, 2.0, None) and not beats_bank(1.0, 2.0, 0.5)
    assert not beats_bank(None, 2.0, None)
    assert [update_mode(h, t, s) for h, t, s in [(True, True, True), (True, False, False), (False, True, True),
                                                 (False, True, False)]] == ["update", "reserved", "add", "unsatisfied"]
    s = repo_summary([("add", False), ("reserved", True), ("update", True)])
    assert s == {"repo_add_num": 1, "repo_hit_num": 2, "repo_reserved_num": 1, "repo_unsatisfied_num": 0,
                 "repo_update_num": 1, "total_num": 3}


# ---- real measurements through the same job --------------------------------------------
def measure_on_model(task, tiling):
    """Stands in for a device: the cost model's time, but a few tilings misbehave."""
    if tiling != an.baseline_tiling(task.op_type, task.inputs, task.dtype, SOC, attrs=task.attrs or None):
        if sum(tiling.values()) % 13 == 0:
            raise RuntimeError("kernel failed to compile")
        if sum(tiling.values()) % 17 == 0:
            os._exit(3)  # the measurement process dies
    return an.estimate(task.op_type, task.inputs, task.dtype, SOC, tiling, attrs=task.attrs or None).time_us


def test_opat_runs_on_measurements_and_survives_failing_ones(tmp_path):
    ev = MeasuredEvaluator(SOC, measure_on_model, timeout=20)
    r = an.tune_model(mlp(), input_shape="x:1,64,256", bank=tmp_path, parallel=1, evaluator=ev,
                      evals_per_task=40, round_evals=20, seed=1)
    assert r.evaluator == "measured" and r.improvement > 0
    assert all(t.evaluations > 0 for t in r.tasks)
    bank = Bank(bank_dir(SOC, tmp_path), SOC).load()
    assert bank.entries
    for e in bank.entries.values():  # what was stored is what was measured
        est = an.estimate(e["op_type"], e["inputs"], e["dtype"], SOC, e["tiling"], attrs=e["attrs"] or None)
        assert est.time_us == pytest.approx(e["time_after_us"])


def test_measured_evaluator_rejects_a_non_callable():
    with pytest.raises(TypeError, match="callable"):
        MeasuredEvaluator(SOC, "not a function")


def test_any_front_end_feeds_the_job_through_the_graph_ir(tmp_path):
    graph = load_graph(mlp(), "x:1,64,256")  # a Graph, as any front-end would build it
    r = an.tune_model(graph, bank=tmp_path, parallel=1, evals_per_task=50, round_evals=25)
    again = an.tune_model(mlp(), input_shape="x:1,64,256", bank=tmp_path / "b", parallel=1, evals_per_task=50,
                          round_evals=25)
    assert [t.key for t in r.tasks] == [t.key for t in again.tasks] and r.tuned_ms == again.tuned_ms


def test_sgat_runs_on_measurements_and_survives_failing_ones(tmp_path):
    ev = MeasuredEvaluator(SOC, measure_on_model, timeout=20)
    r = an.tune_subgraphs(mlp(), input_shape="x:1,64,256", bank=tmp_path, parallel=1, evaluator=ev,
                          evals_per_kernel=12, seed=1)
    assert r.evaluator == "measured" and r.tuned_ms <= r.baseline_ms and r.evaluations > 0
    for k in r.kernels:  # every kernel's time is a measurement of its tiling
        est = an.estimate(k.op_type, k.inputs, "float16", SOC, k.tiling, attrs=k.attrs or None).time_us
        assert est == pytest.approx(k.time_us)


def logging_measure(task, tiling):
    """The cost model's time, each call logged to $AOE_TEST_MEASURE_LOG (measurements run in
    worker processes, which inherit the environment)."""
    with open(os.environ["AOE_TEST_MEASURE_LOG"], "a") as f:
        f.write(json.dumps([task.key, sorted(tiling.items())]) + "\n")
    return an.estimate(task.op_type, task.inputs, task.dtype, SOC, tiling, attrs=task.attrs or None).time_us


def test_measured_rounds_continue_the_search_and_never_measure_a_tiling_twice(tmp_path, monkeypatch):
    """Rounds of 20 measurements: each round learns what the earlier ones measured, so a device
    never times a tiling twice (nor the default tiling, which the job times first to rank the
    tasks), and small spaces are covered exactly."""
    log = tmp_path / "measured.jsonl"
    monkeypatch.setenv("AOE_TEST_MEASURE_LOG", str(log))
    ev = MeasuredEvaluator(SOC, logging_measure, timeout=20)
    r = an.tune_model(mlp(), input_shape="x:1,64,256", bank=tmp_path / "bank", parallel=1, evaluator=ev,
                      evals_per_task=150, round_evals=20, seed=1)
    lines = [tuple(map(json.dumps, json.loads(x))) for x in log.read_text().splitlines()]
    assert len(lines) == len(set(lines))
    assert max(len([x for x in lines if x[0] == json.dumps(t.key)]) for t in r.tasks) > 20  # several rounds ran
    assert all(t.evaluations <= t.space_size for t in r.tasks)


def test_measured_search_starts_at_the_default_tilings_nearest_searched_tiling(tmp_path, monkeypatch):
    """A cube default outside the pruned space (unitFlag 0) is timed apart; the search then
    starts one step from it, as tune_op does, not from wherever the strategy begins."""
    log = tmp_path / "measured.jsonl"
    monkeypatch.setenv("AOE_TEST_MEASURE_LOG", str(log))
    ev = MeasuredEvaluator(SOC, logging_measure, timeout=20)
    r = an.tune_model(mlp(), input_shape="x:1,64,256", bank=tmp_path / "bank", parallel=1, evaluator=ev,
                      evals_per_task=2, round_evals=2, seed=1)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    cube = [t for t in r.tasks if t.op_type in ("MatMul", "Gemm")]
    assert cube
    for t in cube:
        timed = [dict(tiling) for key, tiling in lines if key == t.key]
        base = an.baseline_tiling(t.op_type, t.inputs, t.dtype, SOC, attrs=t.attrs or None)
        space = an.tiling_space(t.op_type, t.inputs, t.dtype, SOC, attrs=t.attrs or None)
        if an.ascend.ops.baseline_kind(t.op_type, t.inputs, t.dtype, SOC, attrs=t.attrs or None) == "CANN MatMulV3 default":
            # MatMulV3's default is a tiling of its own searched neighbourhood (issue 47): timed first, in the space
            assert space.index(base) is not None and timed[0] == base
        else:
            assert space.index(base) is None and timed[0] == base
            assert timed[1] == nearest_valid_tilings(space, [base])[0]


def failing_measure(task, tiling):
    raise RuntimeError("no device attached")


def test_a_job_where_every_measurement_fails_is_an_error_not_a_0_percent_result(tmp_path):
    ev = MeasuredEvaluator(SOC, failing_measure, timeout=20)
    with pytest.raises(RuntimeError, match="no task could be evaluated .*no device attached"):
        an.tune_model(mlp(), input_shape="x:1,64,256", bank=tmp_path, parallel=1, evaluator=ev, evals_per_task=5)


def test_ray_evaluator_without_ray_says_which_extra(monkeypatch):
    import importlib.util
    from aoe_native.jobs.evaluator import RayEvaluator
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ImportError, match=r"aoe-native\[ray\]"):
        RayEvaluator(SOC, measure_on_model)
