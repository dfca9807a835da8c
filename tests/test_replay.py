"""Replay of Kernel Tuner cache files, and writing our runs as cache files."""

import json

import numpy as np
import pytest

import aoe_native as an

FILES = {
    "gemm_clblast-xgemm_RTX3090_kerneltuner.json": (17956, 0, 5.658),
    "convolution_A100_kerneltuner.json": (4362, 161, 0.5536),
    "pnpoly_RTX3090_kerneltuner.json": (4092, 318, 8.714),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_replay_shared_files(datasets, name):
    size, failed, best = FILES[name]
    rep = an.replay.load(datasets / name)
    assert len(rep.space) == size and rep.failed == failed
    assert rep.optimum == pytest.approx(best, rel=1e-3)
    raw = json.loads((datasets / name).read_text())
    # exactly the recorded configurations, each with its recorded value
    keys = raw["tune_params_keys"]
    for key, rec in list(raw["cache"].items())[::97]:
        i = rep.space.index({k: rec[k] for k in keys})
        assert i is not None
        if isinstance(rec["time"], str):
            assert np.isnan(rep.values[i])
        else:
            assert rep.objective(rep.space, rep.space.config(i)) == rec["time"]
    # an exhaustive run finds the recorded optimum and counts the failed records
    r = an.tune(rep.space, rep.objective, strategy="exhaustive")
    assert r.best_value == rep.optimum and len(r.failed) == failed
    assert r.best_config == rep.optimum_config
    if failed:
        assert r.failed[0][1] in ("CompilationFailedConfig", "RuntimeFailedConfig")


def test_gemm_space_matches_documented_restrictions(datasets):
    rep = an.replay.load(datasets / "gemm_clblast-xgemm_RTX3090_kerneltuner.json")
    params = {n: v for n, v in zip(rep.space.param_names, rep.space.param_values)}
    restricted = an.SearchSpace(params, [
        "KWG%KWI==0", "MWG%(MDIMC*VWM)==0", "NWG%(NDIMC*VWN)==0", "MWG%(MDIMA*VWM)==0", "NWG%(NDIMB*VWN)==0",
        "KWG%((MDIMC*NDIMC)/MDIMA)==0", "KWG%((MDIMC*NDIMC)/NDIMB)==0"])
    assert np.array_equal(restricted.configs(), rep.space.configs())


def write_cache(path, records, keys=("x", "y")):
    cache = {",".join(str(r[k]) for k in keys): r for r in records}
    path.write_text(json.dumps({"device_name": "dev", "kernel_name": "k", "problem_size": [1],
                                "tune_params_keys": list(keys), "tune_params": {}, "objective": "time",
                                "cache": cache}))


def test_non_integer_parameters_are_coded_and_round_trip(tmp_path):
    # Kernel Tuner spaces may have float, string or boolean values.
    records = [{"x": x, "y": y, "z": z, "time": t} for x, y, z, t in [
        (0.5, "half", True, 3.0), (0.25, "half", False, 2.0), (1.0, "float", True, 1.0), (0.5, "float", False, 4.0),
        (2, "float", True, "RuntimeFailedConfig")]]
    write_cache(tmp_path / "c.json", records, keys=("x", "y", "z"))
    rep = an.replay.load(tmp_path / "c.json")
    assert rep.labels == {"x": [0.25, 0.5, 1.0, 2], "y": ["float", "half"], "z": [False, True]}
    assert rep.space.param_values == [[0, 1, 2, 3], [0, 1], [0, 1]]
    assert rep.decode(rep.optimum_config) == {"x": 1.0, "y": "float", "z": True}
    assert rep.optimum == 1.0 and rep.failed == 1
    res = an.tune(rep.space, rep.objective, strategy="auto", seed=0)
    assert res.best_value == 1.0
    out = tmp_path / "run.json"
    res.save_cache(out, labels=rep.labels)
    again = an.replay.load(out)
    assert again.labels == rep.labels and again.optimum == 1.0
    assert json.loads(out.read_text())["tune_params"]["y"] == ["float", "half"]


def test_round_trip_through_cache_file(tmp_path):
    space = an.SearchSpace({"x": [1, 2, 3, 4], "y": [0, 1]})

    def f(c):
        if c["x"] == 3:
            raise RuntimeError("bad")
        return c["x"] * 1.5 + c["y"]

    result = an.tune(space, f, strategy="exhaustive")
    out = tmp_path / "run.json"
    result.save_cache(out, kernel_name="mine", device_name="Ascend910B3", problem_size=[4096])
    data = json.loads(out.read_text())
    assert data["kernel_name"] == "mine" and data["tune_params_keys"] == ["x", "y"]
    assert data["tune_params"] == {"x": [1, 2, 3, 4], "y": [0, 1]}
    assert data["cache"]["3,1"]["time"] == "RuntimeFailedConfig"
    assert data["cache"]["2,1"]["time"] == 4.0
    rep = an.replay.load(out)
    assert rep.optimum == 1.5 and rep.failed == 2 and len(rep.space) == 8
    assert list(tmp_path.iterdir()) == [out]  # no temporary files left behind


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ('{"cache": {}}', "not a Kernel Tuner cache file"),
        ('{"tune_params_keys": ["x"], "cache": {}}', "holds no records"),
        ('{"tune_params_keys": ["x"], "cache": {"a": 3}}', "record 'a' is not an object"),
        ('{"tune_params_keys": ["x", "y"], "cache": {"1": {"x": 1, "time": 1}}}', "no value for parameter 'y'"),
    ],
)
def test_bad_cache_files(tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        an.replay.load(p)
    assert str(p) in str(info.value)


# The budgets of bench/bench_strategies.py (Willemsen et al.'s methodology) for
# these files are 1176, 1444 and 210 evaluations; a quarter of that is a
# small budget for 4k-18k configurations.
@pytest.mark.parametrize("name, budget", [("convolution_A100_kerneltuner.json", 294),
                                          ("gemm_clblast-xgemm_RTX3090_kerneltuner.json", 361),
                                          ("pnpoly_RTX3090_kerneltuner.json", 52)])
def test_auto_gets_near_the_recorded_optimum_on_a_small_budget(datasets, name, budget):
    rep = an.replay.load(datasets / name)
    gap = {s: np.median([an.tune(rep.space, rep.objective, strategy=s, max_evals=budget, seed=seed).best_value
                         / rep.optimum - 1 for seed in range(10)]) for s in ("auto", "random")}
    assert gap["auto"] < 0.01, gap  # measured: 0.0 (the optimum) on each file
    assert gap["random"] > 0.02, gap


def _tiny_cache(tmp_path, records, **top):
    doc = {"device_name": "x", "kernel_name": "k", "problem_size": [], "tune_params_keys": ["a"],
           "tune_params": {}, "objective": "time", "cache": records}
    doc.update(top)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    return path


def test_schema_problems_are_named_with_the_path(tmp_path):
    from aoe_native import replay
    rec = lambda a, t: {"a": a, "time": t}
    p = _tiny_cache(tmp_path, {"1": rec(2.0, 1.0), "2": rec(2, 2.0), "3": rec(1.5, 3.0)})
    r = replay.load(p)  # 2.0 and 2 are two recorded values; 1.5 makes the column coded
    assert len(r.values) == 3 and r.optimum == 1.0
    p = _tiny_cache(tmp_path, {"1": rec(2**70, 1.0), "2": rec(1, 2.0)})
    assert replay.load(p).optimum == 1.0  # beyond int64: coded, not an overflow
    for top, message in (({"tune_params_keys": 5}, "tune_params_keys must be a list of distinct parameter names"),
                         ({"tune_params_keys": "a"}, "tune_params_keys must be a list"),
                         ({"objective": "GFLOPS"}, "no record has the objective field 'GFLOPS'")):
        p = _tiny_cache(tmp_path, {"1": rec(1, 1.0)}, **top)
        with pytest.raises(ValueError, match=message):
            replay.load(p)
    p = _tiny_cache(tmp_path, {"1": rec(1, 1.0), "2": rec(1, 2.0)})
    with pytest.raises(ValueError, match=r"c\.json: .*repeats"):
        replay.load(p)


def test_a_rate_objective_must_say_which_way_is_better(tmp_path):
    from aoe_native import replay
    recs = {"1": {"a": 1, "time": 2.0, "GFLOP/s": 100.0}, "2": {"a": 2, "time": 1.0, "GFLOP/s": 200.0}}
    p = _tiny_cache(tmp_path, recs)
    with pytest.raises(ValueError, match="looks like a rate"):
        replay.load(p, objective="GFLOP/s")
    r = replay.load(p, objective="GFLOP/s", higher_is_better=True)
    assert r.optimum_config == {"a": 2} and r.optimum == -200.0
