"""Measurement on the host: isolated workers survive raising, hanging and
crashing measurements; timing is a real median."""

import os
import time

import numpy as np
import pytest

import aoe_native as an
from aoe_native.runners import IsolatedObjective, MeasurementError, measure


def flaky_measurement(config):
    if config["mode"] == 1:
        raise ValueError("bad launch parameters")
    if config["mode"] == 2:
        time.sleep(30)  # hangs
    if config["mode"] == 3:
        os._exit(3)  # the process dies
    if config["mode"] == 4:
        os.kill(os.getpid(), 11)  # segfault
    return float(config["x"])


def test_isolated_objective_survives_raise_hang_and_crash():
    space = an.SearchSpace({"x": [1, 2, 3], "mode": [0, 1, 2, 3, 4]})
    with IsolatedObjective(flaky_measurement, timeout=0.5) as objective:
        start = time.perf_counter()
        result = an.tune(space, objective, strategy="exhaustive")
        took = time.perf_counter() - start
    assert result.evaluations == 15 and result.best_value == 1.0
    errors = {cfg["mode"]: err for cfg, err in result.failed}
    assert len(result.failed) == 12
    assert "ValueError: bad launch parameters" in errors[1]
    assert "timed out after 0.5 s" in errors[2]
    assert "crashed (exit code 3)" in errors[3]
    assert "crashed (killed by signal 11)" in errors[4]
    assert took < 10  # three hangs cost 0.5 s each, not 30 s


def test_isolated_objective_direct_errors():
    obj = IsolatedObjective(flaky_measurement, timeout=5)
    try:
        assert obj({"x": 7, "mode": 0}) == 7.0
        with pytest.raises(MeasurementError, match="bad launch"):
            obj({"x": 1, "mode": 1})
        assert obj({"x": 8, "mode": 0}) == 8.0  # the worker is still usable
    finally:
        obj.close()
    with pytest.raises(ValueError, match="timeout must be positive"):
        IsolatedObjective(flaky_measurement, timeout=0)


def test_tuning_a_real_host_kernel():
    # Tune the block size of a blocked matrix sum on the host CPU: tiny blocks
    # pay Python overhead per block, so they must lose to large ones.
    a = np.random.default_rng(0).random((256, 256))

    def blocked_sum(config):
        b = config["block"]
        return measure(lambda: sum(float(a[i:i + b, j:j + b].sum()) for i in range(0, 256, b)
                                   for j in range(0, 256, b)), repeats=3)

    space = an.SearchSpace({"block": [4, 8, 16, 32, 64, 128, 256]})
    result = an.tune(space, blocked_sum, strategy="exhaustive")
    times = dict(zip(space.configs()[result.history_ids][:, 0], result.history_values))
    assert result.best_config["block"] >= 32
    assert times[4] > 5 * times[256]


def test_measure_median_and_validation():
    calls = []
    assert measure(lambda: calls.append(1), repeats=5, warmup=2) >= 0
    assert len(calls) == 7
    with pytest.raises(ValueError):
        measure(lambda: None, repeats=0)


def test_isolated_objective_without_time_limit():
    import math
    with IsolatedObjective(lambda c: float(c["a"]), timeout=math.inf) as obj:
        assert obj({"a": 3}) == 3.0
    with IsolatedObjective(lambda c: 1.0, timeout=None) as obj:
        assert obj({"a": 1}) == 1.0


def test_spawn_with_an_unpicklable_measurement_fails_at_once():
    with pytest.raises(TypeError, match="with start_method 'spawn' the measurement is sent to the worker by pickle"):
        IsolatedObjective(lambda c: 1.0, start_method="spawn")
