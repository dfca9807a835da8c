"""The tuning loop: budgets, failures, determinism, warm start, interruption."""

import math
import time

import numpy as np
import pytest

import aoe_native as an


@pytest.fixture
def space():
    return an.SearchSpace({"a": list(range(1, 17)), "b": list(range(1, 17)), "c": [0, 1, 2]}, ["a * b <= 128"])


def quadratic(cfg):
    return (cfg["a"] - 11) ** 2 + (cfg["b"] - 5) ** 2 + cfg["c"] + 1.0


@pytest.mark.parametrize("strategy", an.strategies())
def test_every_strategy_is_deterministic_and_never_repeats(space, strategy):
    a = an.tune(space, quadratic, strategy=strategy, max_evals=150, seed=7)
    b = an.tune(space, quadratic, strategy=strategy, max_evals=150, seed=7)
    assert np.array_equal(a.history_ids, b.history_ids)
    assert a.evaluations == 150 == len(set(a.history_ids.tolist()))
    assert a.best_value == min(a.history_values)
    assert quadratic(a.best_config) == a.best_value
    assert a.stop_reason == "max_evals"


@pytest.mark.parametrize("strategy", an.strategies())
def test_whole_space_finds_optimum(strategy):
    space = an.SearchSpace({"a": list(range(12)), "b": list(range(12))}, ["a != b"])
    r = an.tune(space, lambda c: (c["a"] - 3) ** 2 + (c["b"] - 8) ** 2, strategy=strategy, seed=1)
    assert r.stop_reason == "exhausted" and r.evaluations == len(space)
    assert r.best_config == {"a": 3, "b": 8}


def test_native_run_is_deterministic_and_releases_nothing_twice(space):
    obj = an.SyntheticObjective(seed=3)
    a = an.tune(space, obj, max_evals=500, seed=11)
    b = an.tune(space, obj, max_evals=500, seed=11)
    c = an.tune(space, obj, max_evals=500, seed=12)
    assert np.array_equal(a.history_ids, b.history_ids)
    assert not np.array_equal(a.history_ids, c.history_ids)
    assert len(set(a.history_ids.tolist())) == 500
    # the native objective gives the same value whether called from Python or the loop
    i = int(a.history_ids[0])
    assert obj(space, space.config(i)) == a.history_values[0]


def test_failed_evaluations_are_recorded_and_the_run_goes_on(space):
    def flaky(cfg):
        if cfg["c"] == 1:
            raise RuntimeError(f"launch failed for a={cfg['a']}")
        if cfg["c"] == 2:
            return float("nan")
        return quadratic(cfg)

    r = an.tune(space, flaky, strategy="random", max_evals=200, seed=2)
    assert r.evaluations == 200
    assert 0 < len(r.failed) < 200
    for cfg, err in r.failed:
        assert cfg["c"] in (1, 2)
        assert ("RuntimeError: launch failed for a=" in err) if cfg["c"] == 1 else ("nan" in err)
    assert np.isinf(r.history_values[[i for i, v in enumerate(r.history_values) if not np.isfinite(v)]]).all()
    assert r.best_config["c"] == 0


def test_non_numeric_return_is_a_failure(space):
    r = an.tune(space, lambda c: "fast", max_evals=3)
    assert len(r.failed) == 3 and "not a number" in r.failed[0][1]
    assert r.best_config is None and math.isinf(r.best_value)


def test_trace_is_best_so_far(space):
    r = an.tune(space, quadratic, strategy="random", max_evals=100, seed=5)
    assert np.array_equal(r.trace, np.minimum.accumulate(r.history_values))
    assert [dict(zip(space.param_names, row)) for row in r.history_configs.tolist()] == [c for c, _ in r.history]
    assert r.trace[-1] == r.best_value


def test_time_limit(space):
    def slow(cfg):
        time.sleep(0.01)
        return quadratic(cfg)

    start = time.perf_counter()
    r = an.tune(space, slow, time_limit=0.3)
    took = time.perf_counter() - start
    assert r.stop_reason == "time_limit"
    assert 5 <= r.evaluations <= 40
    assert took < 2.0


def test_batch_objective_gets_rows_and_results_match(space):
    sizes = []

    def batch(rows):
        sizes.append(len(rows))
        assert rows.dtype == np.int64 and rows.shape[1] == 3
        return (rows[:, 0] - 11) ** 2 + (rows[:, 1] - 5) ** 2 + rows[:, 2] + 1.0

    r = an.tune(space, an.BatchObjective(batch, max_batch=64), strategy="random", max_evals=300, seed=9)
    s = an.tune(space, quadratic, strategy="random", max_evals=300, seed=9)
    assert r.evaluations == 300 and max(sizes) <= 64 and max(sizes) > 1
    assert r.best_value == s.best_value


def test_batch_objective_failure_modes(space):
    r = an.tune(space, an.BatchObjective(lambda rows: [1.0]), max_evals=20, strategy="random")
    assert len(r.failed) == 20 and "returned shape" in r.failed[0][1]

    def boom(rows):
        raise ValueError("device lost")

    r = an.tune(space, an.BatchObjective(boom), max_evals=5)
    assert len(r.failed) == 5 and "ValueError: device lost" in r.failed[0][1]


def test_initial_configs_are_evaluated_first(space):
    start = [{"a": 11, "b": 5, "c": 0}, {"a": 1, "b": 1, "c": 2}]
    r = an.tune(space, quadratic, max_evals=10, initial_configs=start)
    assert [space.config(int(i)) for i in r.history_ids[:2]] == start
    assert r.best_value == 1.0
    with pytest.raises(ValueError, match="not a valid configuration"):
        an.tune(space, quadratic, initial_configs=[{"a": 16, "b": 16, "c": 0}])


def test_keyboard_interrupt_keeps_partial_result(space):
    calls = []

    def objective(cfg):
        calls.append(cfg)
        if len(calls) == 25:
            raise KeyboardInterrupt
        return quadratic(cfg)

    with pytest.raises(an.TuningInterrupted) as info:
        an.tune(space, objective, max_evals=100)
    partial = info.value.partial_result
    assert partial.evaluations == 24 and partial.stop_reason == "interrupted"
    assert partial.best_value == min(quadratic(c) for c in calls[:24])


def test_progress_can_stop_and_errors_keep_results(space):
    seen = []
    r = an.tune(space, quadratic, max_evals=100, progress=lambda n, best: seen.append((n, best)) or n < 10)
    assert r.evaluations == 10 and r.stop_reason == "stopped" and seen[-1][0] == 10

    def bad(n, best):
        raise RuntimeError("progress bar broke")

    with pytest.raises(RuntimeError, match="progress bar broke") as info:
        an.tune(space, quadratic, max_evals=100, progress=bad)
    assert info.value.partial_result.evaluations == 1


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"strategy": "magic"}, ValueError, r"unknown strategy 'magic' \(valid: .*random"),
        ({"max_evals": 0}, ValueError, "max_evals must be at least 1"),
        ({"time_limit": -1}, ValueError, "time_limit must be a positive"),
        ({"max_evals": 2.5}, TypeError, "max_evals must be an integer"),
    ],
)
def test_bad_options(space, kwargs, error, message):
    with pytest.raises(error, match=message):
        an.tune(space, quadratic, **kwargs)


def test_bad_objective_and_empty_space(space):
    with pytest.raises(TypeError, match="objective must be callable"):
        an.tune(space, 42)
    with pytest.raises(ValueError, match="no valid configuration"):
        an.tune(an.SearchSpace({"a": [1]}, ["a > 1"]), quadratic)


def test_known_results_are_learnt_and_never_evaluated_again():
    space = an.SearchSpace({"a": list(range(20)), "b": list(range(20))}, restrictions=["a + b < 30"])
    calls = []

    def f(c):
        calls.append((c["a"], c["b"]))
        return (c["a"] - 13) ** 2 + (c["b"] - 4) ** 2 + 1.0
    first = an.tune(space, f, max_evals=60, seed=1)
    calls.clear()
    second = an.tune(space, f, max_evals=60, seed=2, known=(first.history_ids, first.history_values))
    assert second.evaluations == 60 and len(calls) == 60  # the budget is for new ones only
    assert not set(first.history_ids.tolist()) & set(second.history_ids.tolist())
    everything = np.arange(len(space))
    done = an.tune(space, f, max_evals=10, known=(everything, np.ones(len(space))))
    assert done.evaluations == 0 and done.stop_reason == "exhausted"
    with pytest.raises(ValueError, match="2 configuration indices but 1 values"):
        an.tune(space, f, max_evals=5, known=([0, 1], [1.0]))
    with pytest.raises(IndexError, match="known configuration index out of range"):
        an.tune(space, f, max_evals=5, known=([len(space)], [1.0]))


def test_ctrl_c_during_a_native_objective_is_interrupted_too():
    # a native run notices Ctrl-C in its progress check: the same stop_reason as a Python objective's
    model = an.ascend.ops.op_model("MatMul", [[1024, 1024], [1024, 1024]])

    def progress(n, best):  # a native run calls it every 0.1 s at most: the forest is still searching
        raise KeyboardInterrupt

    with pytest.raises(an.TuningInterrupted) as info:
        an.tune(model.space(), model.objective(), strategy="forest", max_evals=100_000, progress=progress)
    partial = info.value.partial_result
    assert partial.stop_reason == "interrupted" and 0 < partial.evaluations < 100_000
