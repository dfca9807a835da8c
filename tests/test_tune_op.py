"""tune_op: finds the optimum of the tiling space, fast, deterministically,
and reports against the baseline."""

import time

import numpy as np
import pytest

import aoe_native as an
from aoe_native.ascend.ops import CHEAP_STRATEGY, MODEL_BUDGET_LIMIT, TUNE_OP_POLICY

B3 = "Ascend910B3"


def exhaustive_optimum(op, inputs, attrs=None, soc=B3):
    space = an.tiling_space(op, inputs, soc_version=soc, attrs=attrs)
    t = an.estimate_batch(op, inputs, "float16", soc, space.configs(), attrs=attrs)
    return float(t.min()), len(space)


@pytest.mark.parametrize("op,inputs,attrs", [
    ("MatMul", [[4096, 4096], [4096, 4096]], None),
    ("MatMul", [[1000, 3000], [3000, 500]], {"transpose_b": 0}),
    ("BatchMatMul", [[12, 384, 64], [12, 64, 384]], None),
    ("Conv", [[16, 64, 56, 56], [128, 64, 3, 3]], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("Softmax", [[4096, 1024]], None),
    ("Add", [[32, 1024, 1024], [1024]], None),
])
def test_default_tune_op_reaches_the_exhaustive_optimum(op, inputs, attrs):
    opt, size = exhaustive_optimum(op, inputs, attrs)
    r = an.tune_op(op, inputs, attrs=attrs)
    assert r.space_size == size
    assert r.time_us <= opt * 1.005
    assert r.time_us == pytest.approx(an.estimate(op, inputs, "float16", B3, r.tiling, attrs=attrs).time_us)


def test_tune_op_4096_cube_is_fast():
    shape = [[4096, 4096], [4096, 4096]]
    an.tune_op("MatMul", [[64, 64], [64, 64]])  # import / first-call costs
    t0 = time.perf_counter()
    r = an.tune_op("MatMul", shape)
    elapsed = time.perf_counter() - t0
    # Generous for a loaded CI machine; bench/bench_cost_model.py reports the real figure.
    assert elapsed < 2.0
    assert r.evaluations >= 1


def test_result_fields_and_baseline():
    r = an.tune_op("MatMul", [[2048, 2048], [2048, 2048]])
    assert r.op_type == "MatMul" and r.inputs == [[2048, 2048], [2048, 2048]] and r.dtype == "float16"
    assert r.soc_version == B3
    assert set(r.tiling) == set(r.baseline_tiling) == set(an.tiling_space("MatMul", r.inputs).param_names)
    assert r.baseline_tiling == an.baseline_tiling("MatMul", r.inputs)
    assert r.baseline_us == pytest.approx(an.estimate("MatMul", r.inputs, "float16", B3, r.baseline_tiling).time_us)
    assert r.improvement >= 0  # AOE's definition, one for the whole package
    assert r.improvement == pytest.approx(r.baseline_us / r.time_us - 1) == an.improvement(r.baseline_us, r.time_us)
    assert r.roofline_us <= r.time_us
    assert r.breakdown["time_us"] == pytest.approx(r.time_us)
    assert isinstance(r.trace, np.ndarray) and len(r.trace) == r.evaluations
    assert np.all(np.diff(r.trace) <= 0) and r.trace[-1] == pytest.approx(r.time_us)


def test_budgeted_search_is_deterministic_and_close():
    shape = [[4096, 4096], [4096, 4096]]
    opt, _ = exhaustive_optimum("MatMul", shape)
    a = an.tune_op("MatMul", shape, max_evals=20000, seed=3)
    b = an.tune_op("MatMul", shape, max_evals=20000, seed=3)
    assert a.tiling == b.tiling and a.time_us == b.time_us and a.evaluations == b.evaluations <= 20000
    assert a.time_us <= opt * 1.02
    assert a.time_us <= a.baseline_us


def test_auto_picks_the_model_for_small_budgets_and_a_cheap_strategy_for_large_ones():
    # 40k tilings of MatMulV3's neighbourhood (issue 47; before it, [[128, 4096], [4096, 1024]]'s
    # 196k static splits, where seeds 0-4 came 4.2%, 2.2%, 0, 0, 1.6% from the optimum; its new
    # 125k-tiling space has a split-K valley that 3 of 5 seeds miss by 15% at 300 evaluations)
    shape = [[512, 4096], [4096, 2048]]
    opt, _ = exhaustive_optimum("MatMul", shape)
    small = [an.tune_op("MatMul", shape, max_evals=300, seed=seed) for seed in range(5)]
    assert all(r.strategy == "auto" and r.evaluations == 300 for r in small)
    # the surrogate-guided search gets close on 0.75% of the space (measured, seeds 0-4: all 0)
    assert np.median([r.time_us for r in small]) <= opt * 1.02
    large = an.tune_op("MatMul", shape, max_evals=MODEL_BUDGET_LIMIT + 1, seed=0)
    assert large.strategy == CHEAP_STRATEGY
    timed = an.tune_op("MatMul", shape, time_limit=0.2, seed=0)
    assert timed.strategy == CHEAP_STRATEGY
    assert an.tune_op("MatMul", shape).strategy == "exhaustive"
    # the policy is named; "auto" means the tuner's default everywhere, whatever the budget
    assert an.tune_op("MatMul", shape, max_evals=300, strategy=TUNE_OP_POLICY).strategy == "auto"
    assert an.tune_op("MatMul", shape, max_evals=MODEL_BUDGET_LIMIT + 1, strategy="auto").strategy == "auto"


def test_initial_tilings_are_evaluated_first_mapped_into_the_space_or_skipped():
    from aoe_native.ascend.ops import nearest_valid_tilings
    shape = [[4096, 4096], [4096, 4096]]
    found = an.tune_op("MatMul", shape)
    space = an.tiling_space("MatMul", shape)
    # another parameterisation says nothing here (skipped); an invalid tiling of this one is
    # moved to its nearest valid tiling (one knob away here)
    junk = {**found.tiling, "baseM": 4096}
    [moved] = nearest_valid_tilings(space, [junk])
    assert sum(moved[k] != junk[k] for k in junk) == 1
    starts = nearest_valid_tilings(space, [an.baseline_tiling("MatMul", shape), moved, found.tiling])
    r = an.tune_op("MatMul", shape, max_evals=len(starts), initial_tilings=[{"baseM": 1}, junk, found.tiling])
    assert [int(i) for i in r.history_ids] == [space.index(t) for t in starts]  # in order, each once
    assert r.time_us <= found.time_us
    with pytest.raises(TypeError, match="initial_tilings must be a list of tiling dicts"):
        an.tune_op("MatMul", shape, max_evals=2, initial_tilings=[found.tiling, "not a tiling"])


def test_vector_reduction_uses_split_when_rows_are_few():
    r = an.tune_op("ReduceSum", [[1 << 24]])
    assert r.tiling["splitR"] == 1 and r.tiling["blockDim"] > 1
    assert r.improvement > 1.0  # the baseline keeps the single row on one core


def test_strategy_names_pass_through():
    r = an.tune_op("Relu", [[1 << 20]], strategy="random", max_evals=10, seed=1)
    assert r.evaluations <= 10 and r.strategy == "random"
    with pytest.raises(ValueError, match="unknown strategy"):
        an.tune_op("Relu", [[1 << 20]], strategy="nope", max_evals=10)


def test_few_long_rows_split_across_cores():
    # 8 rows of 256K elements: whole rows would use 8 of 40 vector cores.
    r = an.tune_op("Softmax", [[8, 1 << 18]])
    assert r.tiling["splitR"] == 1 and r.breakdown["cores_used"] > 8
    assert r.time_us < 0.5 * r.baseline_us


def test_random_operators_on_every_soc_are_valid_and_bounded():
    # Any shape on any SoC: a non-empty space, a valid baseline, and
    # roofline <= tuned <= baseline.
    rnd = __import__("random").Random(7)
    dims = [1, 3, 16, 17, 64, 100, 255, 512, 1000, 2048]
    socs = an.soc_versions()
    for _ in range(150):
        soc = rnd.choice(socs)
        p = an.platform(soc)
        kind = rnd.choice(["mm", "conv", "ew", "red", "sm", "tr"])
        if kind == "mm":
            k = rnd.choice(dims)
            op, ins, at = "BatchMatMul", [[rnd.choice([1, 3]), rnd.choice(dims), k], [1, k, rnd.choice(dims)]], None
        elif kind == "conv":
            c = rnd.choice([3, 16, 64])
            g = rnd.choice([1, c])
            kh = rnd.choice([1, 3, 7])
            op, ins = "Conv", [[rnd.choice([1, 8]), c, 28, 28], [rnd.choice([16, 64]) if g == 1 else c, c // g, kh, kh]]
            at = {"group": g, "strides": [rnd.choice([1, 2])] * 2, "pads": [kh // 2] * 4}
        elif kind == "ew":
            op, ins, at = "Mul", [[rnd.choice(dims), rnd.choice(dims)], [1]], None
        elif kind == "red":
            shape = [rnd.choice(dims) for _ in range(3)]
            op, ins, at = "ReduceSum", [shape], {"axes": [rnd.randrange(3)]}
        elif kind == "sm":
            op, ins, at = "Softmax", [[rnd.choice(dims), rnd.choice(dims)]], None
        else:
            op, ins, at = "Transpose", [[rnd.choice(dims), rnd.choice(dims), 8]], {"perm": [1, 0, 2]}
        # (Softmax of int16/int32/int64, which vector_dtypes list since issue 48, is refused.)
        dtype = rnd.choice(p["cube_dtypes"] if kind in ("mm", "conv") else
                           [d for d in p["vector_dtypes"] if kind != "sm" or d not in ("int16", "int32", "int64")])
        r = an.tune_op(op, ins, dtype=dtype, soc_version=soc, attrs=at)
        assert r.space_size > 0
        assert r.roofline_us * 0.999 <= r.time_us <= r.baseline_us, (op, ins, at, dtype, soc)


def test_wrong_argument_types_get_clear_errors():
    with pytest.raises(TypeError, match="max_evals must be an integer, got '10'"):
        an.tune_op("MatMul", [[64, 64], [64, 64]], max_evals="10")
    with pytest.raises(TypeError, match="max_evals must be an integer, got inf"):
        an.tune_op("MatMul", [[64, 64], [64, 64]], max_evals=float("inf"))
    with pytest.raises(TypeError, match="strategy must be a strategy name"):
        an.tune(an.SearchSpace({"a": [1, 2]}), lambda c: 1.0, strategy=None)
    model = an.ascend.ops.op_model("Relu", [[64, 64]])
    assert model.estimate(tiling=list(model.baseline))["time_us"] > 0  # the stub's keyword works


def test_tune_op_starts_from_the_default_tiling_even_where_the_space_prunes_it():
    """The cube's default tiling has unitFlag 0, which the searched space never keeps: the run
    starts from its nearest tiling in the space (one or two switches away), not blind."""
    from aoe_native.ascend.ops import nearest_valid_tilings
    X = [[2048, 2048], [2048, 2048]]
    space, default = an.tiling_space("MatMul", X), an.baseline_tiling("MatMul", X)
    assert space.index(default) is None
    [start] = nearest_valid_tilings(space, [default])
    assert sum(start[k] != default[k] for k in default) <= 2
    r = an.tune_op("MatMul", X, max_evals=30, strategy="auto")
    assert int(r.history_ids[0]) == space.index(start)
    with pytest.raises(TypeError, match="initial_tilings must be a list of tiling dicts"):
        an.tune_op("MatMul", X, max_evals=5, initial_tilings="abc")


def test_switch_knobs_out_of_range_are_refused_by_estimate():
    X = [[1024, 1024], [1024, 1024]]
    t = {**an.baseline_tiling("MatMul", X), "baseM": 64, "baseN": 64}
    for change in ({"dbL0A": 8, "dbL0B": 8}, {"dbL0C": 4}, {"iterateOrder": 7}):
        with pytest.raises(ValueError, match="violates"):
            an.estimate("MatMul", X, "float16", "Ascend910B3", {**t, **change})


def test_auto_pad_with_explicit_pads_is_an_error():
    with pytest.raises(ValueError, match="auto_pad 'VALID' and explicit pads"):
        an.tune_op("Conv", [[1, 64, 56, 56], [64, 64, 3, 3]], attrs={"pads": [1, 1, 1, 1], "auto_pad": "VALID"},
                           max_evals=5)


@pytest.mark.parametrize("op, shape", [("Softmax", [[7, 512]]), ("LayerNormalization", [[15, 256], [256], [256]])])
def test_row_kernels_with_fewer_rows_than_cores_may_take_one_core_per_row(op, shape):
    rows = shape[0][0]
    r = an.tune_op(op, shape)
    one_per_row = {**r.tiling, "blockDim": rows, "splitR": 0}
    assert r.time_us <= an.estimate(op, shape, "float16", "Ascend910B3", one_per_row).time_us
    assert rows in an.tiling_space(op, shape).param_values[0]


def test_choose_strategy_refuses_a_budget_that_is_not_a_positive_count():
    from aoe_native.ascend.ops import choose_strategy
    with pytest.raises(ValueError, match="at least 1"):
        choose_strategy(100, 0, None)
    with pytest.raises(TypeError, match="must be an integer"):
        choose_strategy(100, "3", None)
    assert choose_strategy(100, 5, None) == ("auto", 5)
