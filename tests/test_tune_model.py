"""Whole-model tuning (OPAT): counts, bank reuse, REPEAT_TUNE, result files, errors, kill -9."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import aoe_native
from aoe_native import zoo
from aoe_native.bank.store import Bank
from aoe_native.cli import parallel_from_env, read_tune_ops_file

from opat_models import mlp

SOC = "Ascend910B3"
FAST = dict(evals_per_task=24, round_evals=12, parallel=1)  # small budgets: the behaviour, not the quality


def _check_counts(r, all_reached=True):
    s = r.repo_summary
    # (a task the time limit or Ctrl-C came before is "not reached" and not counted, as AOE counts)
    counted = [t for t in r.tasks if t.update_mode not in ("skipped", "failed", "not reached")]
    assert s["total_num"] == len(counted)
    if all_reached:
        assert len(counted) == len(r.tasks)
    assert s["total_num"] == s["repo_hit_num"] + s["repo_add_num"] + s["repo_unsatisfied_num"]
    assert s["repo_hit_num"] == s["repo_reserved_num"] + s["repo_update_num"]
    assert r.improvement >= 0 and r.tuned_ms <= r.baseline_ms
    for t in r.tasks:
        assert t.time_us <= t.baseline_us * (1 + 1e-9)
    n = len(r.kernels)
    assert r.baseline_ms == pytest.approx((sum(k.baseline_us for k in r.kernels) + n * r.launch_overhead_us) / 1e3)
    assert r.tuned_ms == pytest.approx((sum(k.time_us for k in r.kernels) + n * r.launch_overhead_us) / 1e3)
    assert sum(t.occurrences for t in r.tasks) == n


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_zoo_models_tune_with_consistent_counts(name, tmp_path):
    r = aoe_native.tune_model(zoo.build(name), soc_version=SOC, bank=tmp_path, **FAST)
    _check_counts(r)
    assert [t.error for t in r.tasks if t.error] == []  # the cost model accepts every kernel
    assert r.repo_summary["repo_hit_num"] == 0
    stored = Bank(tmp_path / SOC, SOC).load().entries
    assert set(stored) == {t.key for t in r.tasks if t.update_mode == "add"}
    assert r.improvement > 0  # the default tilings are never all optimal


def test_rerun_hits_the_bank_and_repeat_tune_retunes(tmp_path, monkeypatch):
    model = mlp()
    kw = dict(soc_version=SOC, bank=tmp_path, input_shape="x:1,64,256", **FAST)
    first = aoe_native.tune_model(model, **kw)
    stored = first.repo_summary["repo_add_num"]
    assert stored >= 1
    second = aoe_native.tune_model(model, **kw)
    _check_counts(second)
    assert second.repo_summary["repo_hit_num"] == stored
    assert second.repo_summary["repo_reserved_num"] == stored
    assert second.repo_summary["repo_add_num"] == 0
    assert not any(t.tuned for t in second.tasks if t.bank_hit)
    assert second.tuned_ms == pytest.approx(first.tuned_ms)
    third = aoe_native.tune_model(model, repeat_tune=True, **kw)
    _check_counts(third)
    assert third.repo_summary["repo_hit_num"] == stored
    assert all(t.tuned and t.evaluations > 0 for t in third.tasks if t.bank_hit)
    assert third.tuned_ms <= second.tuned_ms * (1 + 1e-9)


def test_same_seed_same_result(tmp_path):
    a = aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path / "a", input_shape="x:1,64,256", seed=3, **FAST)
    b = aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path / "b", input_shape="x:1,64,256", seed=3, **FAST)
    assert [t.tiling for t in a.tasks] == [t.tiling for t in b.tasks]
    assert a.tuned_ms == b.tuned_ms


def test_warm_start_from_nearest_shapes(tmp_path):
    kw = dict(soc_version=SOC, bank=tmp_path, **FAST)
    first = aoe_native.tune_model(mlp(), input_shape="x:1,64,256", **kw)
    banked = {t.op_type for t in first.tasks if t.update_mode == "add"}
    assert banked
    r = aoe_native.tune_model(mlp(tokens=96), input_shape="x:1,96,256", **kw)  # new shapes, same ops
    assert r.repo_summary["repo_hit_num"] == 0
    assert {t.op_type for t in r.tasks if t.warm_started} == banked


def test_tune_ops_filter_and_result_files(tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("# only the first layer and the softmax\nfc0\nSoftmax\n")
    r = aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path / "bank", input_shape="x:1,64,256",
                              tune_ops=read_tune_ops_file(str(ops)), output=tmp_path / "out", result_dir=tmp_path, **FAST)
    modes = {t.node_names[0]: t.update_mode for t in r.tasks}
    assert modes["ln"] == "skipped"  # fc0 and fc1 are one task (identical shapes)
    # a skipped task still runs with the bank's tiling when the bank has a faster one
    aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path / "bank", input_shape="x:1,64,256", **FAST)
    again = aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path / "bank", input_shape="x:1,64,256",
                                  tune_ops=read_tune_ops_file(str(ops)), **FAST)
    ln = next(t for t in again.tasks if t.node_names[0] == "ln")
    assert ln.update_mode == "skipped" and ln.bank_hit and ln.time_us < ln.baseline_us
    assert modes["fc0"] != "skipped" and modes["softmax"] != "skipped"
    assert r.repo_summary["total_num"] == 2
    doc = json.loads(open(r.result_file).read())
    assert os.path.basename(r.result_file).startswith("aoe_result_opat_")
    assert r.result_file.endswith(f"_{os.getpid()}.json")
    assert set(doc[0]["basic"]) == {"tuning_name", "tuning_time(s)"}
    opat = doc[1]["OPAT"]
    assert set(opat) == {"model_baseline_performance(ms)", "model_result_performance(ms)",
                         "model_performance_improvement", "opat_tuning_result", "repo_modified_operators",
                         "repo_summary", "model_coverage", "aoe_native_basis"}  # AOE's fields, and ours added
    assert opat["repo_summary"] == r.repo_summary
    # what the times and the "before" are (issue 47): the cost model's estimates, CANN's defaults
    assert opat["aoe_native_basis"]["times"] == "cost model estimate"
    assert sum(opat["aoe_native_basis"]["baselines"].values()) == len(r.tasks)
    cov = opat["model_coverage"]  # the 1-D MaxPool is the one unmodelled node
    assert (cov["nodes"], cov["unmodelled_nodes"], cov["top_unmodelled"][0]["op_type"]) == (r.n_nodes, 1, "MaxPool")
    assert 0.99 < cov["flops_share"] < 1.0 and cov["modelled_nodes"] + cov["unmodelled_nodes"] == r.n_nodes
    for m in opat["repo_modified_operators"]:
        perf = m["tune_performance"]["Schedule"]
        assert perf["update_mode"] in ("add", "update") and perf["performance_improvement"].endswith("%")
    plan = json.loads(open(r.plan_file).read())
    assert len(plan["kernels"]) == len(r.kernels) and plan["kernels"][0]["tiling"]
    html = open(r.report_file).read()
    assert html.count("<svg") >= 3 and "MaxPool" in html and "Performance improved by" in html
    assert "on the modelled part of the model" in html and "share of FLOPs" in html


def test_bad_models_and_inputs_write_nothing_to_the_bank(tmp_path):
    bank = tmp_path / "bank"
    data = mlp().SerializeToString()
    (tmp_path / "trunc.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="trunc.onnx"):
        aoe_native.tune_model(str(tmp_path / "trunc.onnx"), soc_version=SOC, bank=bank, **FAST)
    with pytest.raises(KeyError, match="'images'"):
        aoe_native.tune_model(mlp(), soc_version=SOC, bank=bank, input_shape="images:1,3", **FAST)
    with pytest.raises(ValueError, match="dynamic"):
        aoe_native.tune_model(mlp(), soc_version=SOC, bank=bank, **FAST)
    with pytest.raises(ValueError, match="soc_version"):
        aoe_native.tune_model(mlp(), soc_version="Ascend999", bank=bank, **FAST)
    with pytest.raises(ValueError, match="tune_subgraphs"):
        aoe_native.tune_model(mlp(), soc_version=SOC, job_type=1, bank=bank)
    assert not bank.exists()


def test_damaged_bank_stops_the_run_and_is_kept(tmp_path):
    d = tmp_path / SOC
    d.mkdir()
    (d / "MatMul.json").write_text("{broken")
    with pytest.raises(aoe_native.BankError, match="MatMul.json"):
        aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path, input_shape="x:1,64,256", **FAST)
    assert (d / "MatMul.json").read_text() == "{broken"


def test_kill_9_mid_run_then_rerun_reuses_finished_tasks(tmp_path):
    model = tmp_path / "yolo.onnx"
    zoo.save("yolov5s", str(model))  # 38 tasks: the run lasts well beyond its first stored entry
    bank = tmp_path / "bank"
    cmd = [sys.executable, "-m", "aoe_native.cli", "-f", "5", "-j", "2", "-m", str(model), "--bank", str(bank),
           "--parallel", "2", "--progress_bar", "off"]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not [f for f in (bank / SOC).glob("*.json") if not f.name.startswith(".")]:
        time.sleep(0.005)
    os.killpg(p.pid, signal.SIGKILL)  # the aoe process and its workers
    p.wait()
    assert not list(tmp_path.glob("aoe_result_opat_*.json")), "the run finished before the kill"
    kept = Bank(bank / SOC, SOC).load().entries  # loads after the kill
    assert kept, "the run was killed before any task finished"
    r = aoe_native.tune_model(str(model), soc_version=SOC, bank=bank, **FAST)
    _check_counts(r)
    assert r.repo_summary["repo_hit_num"] == len(kept)
    assert {t.key for t in r.tasks if t.bank_hit} == set(kept)


def test_four_concurrent_aoe_processes_share_one_bank(tmp_path):
    bank = tmp_path / "bank"
    paths = []
    for i, tokens in enumerate((32, 48, 64, 64)):  # two runs race on the same keys
        m = mlp(tokens=tokens)
        p = tmp_path / f"m{i}.onnx"
        p.write_bytes(m.SerializeToString())
        paths.append((p, tokens))
    procs = [subprocess.Popen([sys.executable, "-m", "aoe_native.cli", "-f", "5", "-j", "2", "-m", str(p),
                               "--input_shape", f"x:1,{tokens},256", "--bank", str(bank), "--parallel", "1",
                               "--progress_bar", "off"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for p, tokens in paths]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    b = Bank(bank / SOC, SOC).load()
    expected = set()
    for p, tokens in paths:
        r = aoe_native.tune_model(str(p), soc_version=SOC, bank=bank, input_shape=f"x:1,{tokens},256", **FAST)
        assert r.repo_summary["repo_add_num"] == 0  # everything the four runs stored is there
        expected |= {t.key for t in r.tasks if t.bank_hit}
    assert expected == set(b.entries)
    for e in b.entries.values():  # every entry is a valid tiling for the cost model
        est = aoe_native.estimate(e["op_type"], e["inputs"], e["dtype"], SOC, e["tiling"], attrs=e["attrs"] or None)
        assert est.time_us == pytest.approx(e["time_after_us"], rel=1e-6)


def test_parallel_workers_and_te_parallel_compiler(tmp_path):
    assert parallel_from_env(None, {"TE_PARALLEL_COMPILER": "3"}) == 3
    assert parallel_from_env(2, {"TE_PARALLEL_COMPILER": "3"}) == 2  # the flag wins
    with pytest.raises(ValueError, match="TE_PARALLEL_COMPILER"):
        parallel_from_env(None, {"TE_PARALLEL_COMPILER": "many"})
    kw = dict(soc_version=SOC, evals_per_task=24, round_evals=12, seed=5)
    two = aoe_native.tune_model(zoo.build("resnet50"), bank=tmp_path / "p2", parallel=2, **kw)
    _check_counts(two)
    assert two.parallel == 2 and two.repo_summary["repo_add_num"] > 0
    again = aoe_native.tune_model(zoo.build("resnet50"), bank=tmp_path / "p2b", parallel=2, **kw)
    assert [t.tiling for t in two.tasks] == [t.tiling for t in again.tasks]  # rounds are synchronous


def test_tuning_time_limit_is_respected(tmp_path):
    t = time.monotonic()
    r = aoe_native.tune_model(zoo.build("bert_base"), soc_version=SOC, bank=tmp_path, parallel=1,
                              evals_per_task=100000, round_evals=2000, tuning_time_limit=1.0)
    assert time.monotonic() - t < 4.0
    _check_counts(r, all_reached=False)
    # on a loaded machine the limit can come before the light tasks start: they keep the default
    assert any(t.update_mode != "not reached" for t in r.tasks)
    for t in r.tasks:
        if t.update_mode == "not reached":
            assert t.time_us == t.baseline_us and t.evaluations == 0


def test_scheduler_gives_rounds_to_where_the_model_time_is(tmp_path):
    from aoe_native.graph.partition import Task
    from aoe_native.jobs.scheduler import TaskState

    def state(occ, best, roofline, evals, gain):
        t = Task(0, "k", "MatMul", [[8, 8], [8, 8]], "float16", ["ND", "ND"], {}, kernels=list(range(occ)))
        return TaskState(t, [], None, None, best_us=best, roofline_us=roofline, evaluations=evals, rounds=1,
                      last_gain=gain, last_evals=100)
    assert state(6, 10.0, 5.0, 100, 1.0).priority() > state(1, 10.0, 5.0, 100, 1.0).priority()  # occurrences
    assert state(1, 10.0, 5.0, 100, 3.0).priority() > state(1, 10.0, 5.0, 100, 0.0).priority()  # recent gain
    assert state(1, 10.0, 2.0, 100, 0.0).priority() > state(1, 10.0, 9.0, 100, 0.0).priority()  # gap to bound
    done = state(9, 10.0, 1.0, 100, 5.0)
    done.done = True
    assert done.priority() == 0.0
    # a run with a tight budget spends its extra rounds on heavy tasks, within the budget
    r = aoe_native.tune_model(zoo.build("resnet50"), soc_version=SOC, bank=tmp_path, parallel=1,
                              evals_per_task=60, round_evals=50)
    assert sum(t.evaluations for t in r.tasks) <= 60 * len(r.tasks) + 50
    extra = [t for t in r.tasks if t.evaluations > 50]
    light = [t for t in r.tasks if t.evaluations <= 50]
    weight = {t.index: t.occurrences * t.baseline_us for t in r.tasks}
    assert extra and sum(weight[t.index] for t in extra) / len(extra) > sum(weight[t.index] for t in light) / len(light)


def test_neighbour_tilings_are_mapped_into_the_new_space():
    from aoe_native.jobs.evaluator import nearest_valid_tilings
    a = {"op_type": "MatMul", "inputs": [[128, 768], [768, 768]], "dtype": "float16", "attrs": {}}
    b = {"op_type": "MatMul", "inputs": [[96, 768], [768, 768]], "dtype": "float16", "attrs": {}}
    best_a = aoe_native.tune_op(a["op_type"], a["inputs"], max_evals=2000).tiling
    space = aoe_native.tiling_space(b["op_type"], b["inputs"])
    mapped = nearest_valid_tilings(space, [best_a, {"unrelated": 1}])
    assert len(mapped) == 1
    assert space.index(mapped[0]) is not None  # a valid tiling of the new shape
    valid_b = space.config(0)
    assert nearest_valid_tilings(space, [valid_b]) == [valid_b]  # valid ones stay as they are


def test_a_bank_entry_no_better_than_the_default_is_retuned_and_replaced(tmp_path):
    # An entry tuned for another model version (or device) can be no better than the default tiling under
    # the current evaluator: it is not served, the task is tuned from it, and the new result replaces it
    # even though the old entry claims a faster time.
    first = aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path, input_shape="x:1,64,256", **FAST)
    path = sorted((tmp_path / SOC).glob("*.json"))[0]
    doc = json.loads(path.read_text())
    key = next(iter(doc["entries"]))
    t = next(t for t in first.tasks if t.key == key)
    doc["entries"][key].update(tiling=t.baseline_tiling, time_after_us=1e-3)
    path.write_text(json.dumps(doc))
    r = aoe_native.tune_model(mlp(), soc_version=SOC, bank=tmp_path, input_shape="x:1,64,256", **FAST)
    task = next(t for t in r.tasks if t.key == key)
    assert not task.bank_hit and task.evaluations > 0 and task.update_mode == "add"
    assert json.loads(path.read_text())["entries"][key]["tiling"] != t.baseline_tiling


def test_evals_per_task_bounds_every_round(tmp_path):
    """The budget holds from the first round: a measurement on a device is expensive, and
    evals_per_task=3 must not become 25,000 measurements."""
    m = tmp_path / "m.onnx"
    m.write_bytes(mlp().SerializeToString())
    for ept in (1, 7):
        r = aoe_native.tune_model(str(m), input_shape="x:1,64,256", bank=tmp_path / f"b{ept}", parallel=1,
                                  evals_per_task=ept)
        tuned = [t for t in r.tasks if t.tuned]
        assert tuned and sum(t.evaluations for t in tuned) <= ept * len(tuned)


def test_a_model_with_no_kernel_warns_instead_of_reporting_100_percent(tmp_path):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "ident", [x], [y])
    path = tmp_path / "ident.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.warns(aoe_native.CoverageWarning, match="no kernel to tune"):
        r = aoe_native.tune_model(str(path), bank=tmp_path / "bank", parallel=1)
    assert r.tasks == [] and r.tuned_ms == 0


def test_repeat_tune_update_reaches_the_bank_even_when_the_entry_claims_a_faster_time(tmp_path):
    """REPEAT_TUNE judges a bank entry by its time re-estimated now, and so does the bank when it
    stores: an entry whose recorded time is lower (an older cost model) is still replaced."""
    kw = dict(soc_version=SOC, bank=tmp_path, input_shape="x:1,64,256", parallel=1)
    first = aoe_native.tune_model(mlp(), evals_per_task=6, round_evals=6, **kw)  # a poor tiling
    key = next(t.key for t in first.tasks if t.update_mode == "add")
    path = next(p for p in (tmp_path / SOC).glob("*.json") if key in json.loads(p.read_text())["entries"])
    doc = json.loads(path.read_text())
    old = doc["entries"][key]
    old["time_after_us"] = 1e-3  # claims to be faster than anything
    path.write_text(json.dumps(doc))
    r = aoe_native.tune_model(mlp(), evals_per_task=400, round_evals=200, repeat_tune=True, **kw)
    task = next(t for t in r.tasks if t.key == key)
    assert task.update_mode == "update"
    now = json.loads(path.read_text())["entries"][key]
    assert now["tiling"] == task.tiling and now["time_after_us"] == pytest.approx(task.time_us)
    assert task.time_us < next(t for t in first.tasks if t.key == key).time_us


def test_an_interrupted_run_marks_tasks_never_started_as_not_reached(tmp_path):
    calls = []

    def stop_once(ev):  # Ctrl-C after the first finished round
        if ev.get("stage") == "tuning" and ev["tasks_started"] >= 1 and not calls:
            calls.append(1)
            raise KeyboardInterrupt
    r = aoe_native.tune_model(zoo.build("resnet50"), soc_version=SOC, bank=tmp_path, progress=stop_once, **FAST)
    assert r.interrupted
    never = [t for t in r.tasks if t.update_mode == "not reached"]
    assert never and all(t.evaluations == 0 and t.time_us == t.baseline_us for t in never)
    s = r.repo_summary
    assert s["total_num"] == len(r.tasks) - len(never)  # AOE's summary counts the tasks the run got to
    assert Bank(tmp_path / SOC, SOC).load().entries.keys().isdisjoint(t.key for t in never)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1.0, "3"])
def test_a_launch_overhead_that_is_not_a_finite_time_is_refused_before_tuning(tmp_path, value):
    for job in (aoe_native.tune_model, aoe_native.tune_subgraphs):
        with pytest.raises(ValueError, match="launch_overhead_us must be a finite number"):
            job(mlp(), soc_version=SOC, input_shape="x:1,64,256", bank=tmp_path, launch_overhead_us=value)
    assert not (tmp_path / SOC).exists()


def test_a_bank_that_cannot_be_written_fails_before_tuning(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    t = time.monotonic()
    with pytest.raises(ValueError, match="knowledge bank directory"):
        aoe_native.tune_model(zoo.build("resnet50"), soc_version=SOC, bank=not_a_dir, parallel=1)
    assert time.monotonic() - t < 10  # no tuning happened (a cold resnet50 run takes longer)


def test_the_report_of_an_interrupted_run_says_so(tmp_path):
    calls = []

    def stop_once(ev):
        if ev.get("stage") == "tuning" and ev["tasks_started"] >= 1 and not calls:
            calls.append(1)
            raise KeyboardInterrupt
    r = aoe_native.tune_model(zoo.build("resnet50"), soc_version=SOC, bank=tmp_path / "bank", progress=stop_once,
                              output=tmp_path / "out", **FAST)
    never = sum(t.update_mode == "not reached" for t in r.tasks)
    html = open(r.report_file).read()
    assert "Tuning was interrupted" in html and f"{never} of {len(r.tasks)} tasks were not reached" in html
