"""tune(..., prior=...): a cheap predictor guides the search, its error is learnt, bad input is refused;
the measured job path takes the cost model as its prior by default."""
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import aoe_native as an
from aoe_native.ascend.platforms import native_platform
from aoe_native.jobs.evaluator import MeasuredEvaluator

SOC = "Ascend910B3"


@pytest.fixture
def space():
    return an.SearchSpace({"a": list(range(1, 17)), "b": list(range(1, 17)), "c": [0, 1, 2]}, ["a * b <= 128"])


def bumpy(rows: np.ndarray) -> np.ndarray:
    """A landscape with its optimum away from the centre and a few local minima."""
    a, b, c = rows[:, 0].astype(float), rows[:, 1].astype(float), rows[:, 2].astype(float)
    return 1 + (a - 11) ** 2 / 20 + (b - 3) ** 2 / 5 + c * 0.7 + 0.4 * np.sin(a * b)


def test_prior_as_array_or_callable_is_the_same_run_and_repeats_with_a_seed(space):
    truth = bumpy(space.configs())
    objective = an.TableObjective(truth)
    prior_array = truth * 1.7 + 3  # right ranking, wrong scale
    runs = [an.tune(space, objective, max_evals=30, seed=5, prior=p)
            for p in (prior_array, list(prior_array), lambda rows: bumpy(rows) * 1.7 + 3)]
    again = an.tune(space, objective, max_evals=30, seed=5, prior=prior_array)
    for r in runs[1:] + [again]:
        assert list(r.history_ids) == list(runs[0].history_ids)
    assert runs[0].prior and not an.tune(space, objective, max_evals=5, seed=5).prior


def test_a_prior_that_ranks_well_is_followed_at_once(space):
    truth = bumpy(space.configs())
    r = an.tune(space, an.TableObjective(truth), max_evals=10, seed=0, prior=np.log(truth) * 2)
    assert r.history_values[0] == truth.min()  # its best configuration is evaluated first
    blind = [an.tune(space, an.TableObjective(truth), max_evals=10, seed=s).best_value for s in range(5)]
    assert min(blind) > truth.min()  # (without it, ten evaluations do not find the optimum)


def test_a_reversed_prior_does_not_trap_the_search(space):
    """The prior says the opposite of the measurements: the fit of its slope turns, and the
    search finds the measured optimum as it does without a prior."""
    truth = bumpy(space.configs())
    found = []
    for seed in range(5):
        r = an.tune(space, an.TableObjective(truth), max_evals=120, seed=seed, prior=-truth)
        found.append(r.best_value == truth.min())
    assert all(found)


def perturbed_platform() -> an.Platform:
    """The SoC as a device the model gets wrong: one of bench/bench_prior.py's perturbations
    (seed 0): slower paths, costlier copies, blocks and launches, a 32-byte sector."""
    d = native_platform(SOC).to_dict()
    d.update(ddr_rate=27.35, l2_rate=77.87, l2_write_rate=53.01, l1_to_l0a=310.6, l1_to_l0b=236.9, l0c_to_ub=247.1,
             ub_to_ddr=53.93, hbm_gbps=1426.9, l2_gbps=5722.2, launch_overhead_us=2.059, mte2_eff=0.8709,
             gm_sector=32, mte2_copy_cycles=921.7, mte2_miss_cycles=1794.1, scalar_start_cycles=3455.3,
             scalar_block_cycles=863.2)
    return an.Platform.from_dict(d, "perturbed 910B3")


def test_a_device_that_disagrees_with_the_model_still_gets_its_own_optimum():
    # (A skinny MatMul: since MatMulV3's staggered block dealing, the perturbation leaves the
    # model's best 1024^3 tiling the device's too; here it was 5.8% off when chosen, issue 48 round 5.)
    op, inputs = "MatMul", [[100, 1000], [1000, 1000]]
    sp = an.tiling_space(op, inputs, "float16", SOC)
    model = an.estimate_batch(op, inputs, "float16", SOC, sp.configs())
    device = an.estimate_batch(op, inputs, "float16", perturbed_platform(), sp.configs())
    assert device[np.argmin(model)] > 1.05 * device.min()  # the model's best tiling is 5% off on the device
    for seed in range(3):
        r = an.tune(sp, an.TableObjective(device), max_evals=100, seed=seed, prior=model)
        assert r.best_value == pytest.approx(device.min())


def test_bad_priors_are_refused_with_what_is_wrong(space):
    obj = an.TableObjective(bumpy(space.configs()))
    n = len(space)
    with pytest.raises(ValueError, match=rf"prior has shape \({n - 1},\), expected \({n},\)"):
        an.tune(space, obj, max_evals=5, prior=np.ones(n - 1))
    bad = np.ones(n)
    bad[7] = np.nan
    with pytest.raises(ValueError, match=r"prior value nan for configuration 7 \{'a': .*\} is not finite"):
        an.tune(space, obj, max_evals=5, prior=bad)

    def raises(rows):
        raise KeyError("no such kernel")

    with pytest.raises(ValueError, match="raised KeyError: 'no such kernel'"):
        an.tune(space, obj, max_evals=5, prior=raises)
    with pytest.raises(ValueError, match=rf"returned shape \(3,\) for {n} configurations"):
        an.tune(space, obj, max_evals=5, prior=lambda rows: [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="not numbers"):
        an.tune(space, obj, max_evals=5, prior=["fast"] * n)
    with pytest.raises(ValueError, match="strategy 'genetic' does not use a prior"):
        an.tune(space, obj, "genetic", max_evals=5, prior=np.ones(n))


# ---- the measured job path ---------------------------------------------------------------

@dataclass
class Task:
    op_type: str
    inputs: list
    dtype: str = "float16"
    attrs: dict = field(default_factory=dict)
    key: str = "MatMul-64"


def measure_on_model(task: Any, tiling: dict) -> float:
    """Stands in for a device (module level: measurements run in a worker process)."""
    return an.estimate(task.op_type, task.inputs, task.dtype, SOC, tiling).time_us


def test_measured_evaluator_takes_the_model_as_its_prior_by_default():
    """Observable as the round's flag, and as fewer measurements to a good tiling: where the model is
    right, the model's best tiling is measured right after the default one."""
    task = Task("MatMul", [[1024, 1024], [1024, 1024]])
    sp = an.tiling_space(task.op_type, task.inputs, task.dtype, SOC)
    best = float(np.nanmin(an.estimate_batch(task.op_type, task.inputs, task.dtype, SOC, sp.configs())))
    with_prior = MeasuredEvaluator(SOC, measure_on_model, timeout=30)
    without = MeasuredEvaluator(SOC, measure_on_model, timeout=30, prior=False)
    a = with_prior.tune(task, max_evals=10, seed=0)
    b = without.tune(task, max_evals=10, seed=0)
    assert with_prior.prior and a.prior and not b.prior
    def evaluations_to_best(r):
        hit = np.flatnonzero(r.trace <= best * (1 + 1e-9))
        return hit[0] + 1 if len(hit) else np.inf

    assert evaluations_to_best(a) == 2 < evaluations_to_best(b)
    with pytest.raises(TypeError, match="prior must be True or False"):
        MeasuredEvaluator(SOC, measure_on_model, prior="yes")
