"""SearchSpace construction, lookup and neighbourhoods, checked against brute force."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aoe_native import SearchSpace

OPS = ["+", "-", "*", "//", "%"]
CMPS = ["<", "<=", ">", ">=", "==", "!="]


@st.composite
def random_space(draw):
    n = draw(st.integers(1, 4))
    names = [f"p{i}" for i in range(n)]
    params = {name: draw(st.lists(st.integers(-6, 40), min_size=1, max_size=5, unique=True)) for name in names}
    restrictions = []
    for _ in range(draw(st.integers(0, 3))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        op, cmp = draw(st.sampled_from(OPS)), draw(st.sampled_from(CMPS))
        k = draw(st.integers(-5, 60))
        restrictions.append(f"{a} {op} {b} {cmp} {k}")
    return params, restrictions


def brute_force(params, restrictions):
    names = list(params)
    rows = []
    for combo in itertools.product(*params.values()):
        env = dict(zip(names, combo))
        ok = True
        for r in restrictions:
            try:
                ok = ok and bool(eval(r, {}, env))  # the reference, not the code under test
            except ZeroDivisionError:
                ok = False
        if ok:
            rows.append(combo)
    return rows


@settings(max_examples=300, deadline=None)
@given(random_space())
def test_enumeration_matches_brute_force(case):
    params, restrictions = case
    space = SearchSpace(params, restrictions)
    expected = brute_force(params, restrictions)
    assert len(space) == len(expected)
    assert {tuple(r) for r in space.configs()} == set(expected)
    for row in expected:
        assert dict(zip(params, row)) in space
    assert space.cartesian_size == np.prod([len(v) for v in params.values()])


@settings(max_examples=100, deadline=None)
@given(random_space())
def test_neighbours_are_valid_and_complete(case):
    params, restrictions = case
    space = SearchSpace(params, restrictions)
    configs = [tuple(r) for r in space.configs()]
    index = {c: i for i, c in enumerate(configs)}
    values = list(params.values())
    for i, c in enumerate(configs[:20]):
        hamming = set(space.neighbours(i, "hamming"))
        adjacent = set(space.neighbours(i, "adjacent"))
        repaired = space.neighbours(i, "repaired")
        want_h, want_a, want_r = set(), set(), set()
        for p, vals in enumerate(values):
            k = vals.index(c[p])
            for j, v in enumerate(vals):
                other = c[:p] + (v,) + c[p + 1:]
                if j != k and other in index:
                    want_h.add(index[other])
                    if abs(j - k) == 1:
                        want_a.add(index[other])
                elif j != k:  # invalid alone: mended by changing one other parameter
                    for q, qvals in enumerate(values):
                        for w in qvals:
                            two = other[:q] + (w,) + other[q + 1:]
                            if q != p and w != c[q] and two in index:
                                want_r.add(index[two])
        assert hamming == want_h
        assert adjacent == want_a
        assert len(repaired) == len(set(repaired)) and set(repaired) == want_r


def test_repaired_neighbours_change_two_parameters_that_a_restriction_locks_together():
    # a step must divide a depth at least twice its size: neither changes alone
    space = SearchSpace({"step": [1, 2, 4], "depth": [2, 4, 8]}, ["depth % step == 0", "depth >= 2 * step"])
    start = space.index({"step": 1, "depth": 2})
    assert [space[i] for i in space.neighbours(start, "hamming")] == [{"step": 1, "depth": 4}, {"step": 1, "depth": 8}]
    assert [space[i] for i in space.neighbours(start, "repaired")] == [{"step": 2, "depth": 4}, {"step": 2, "depth": 8},
                                                                      {"step": 4, "depth": 8}]
    with pytest.raises(ValueError, match="valid: hamming, adjacent, repaired"):
        space.neighbours(start, "pairs")


def test_python_api():
    space = SearchSpace({"x": [1, 2, 4], "y": [10, 20]}, ["x * y <= 40"])
    assert space.param_names == ["x", "y"]
    assert space.param_values == [[1, 2, 4], [10, 20]]
    assert space.restrictions == ["x * y <= 40"]
    configs = space.configs()
    assert configs.dtype == np.int64 and configs.shape == (5, 2)
    assert np.array_equal(space.configs([4, -5, 1]), configs[[4, 0, 1]])
    assert space.configs(np.zeros(0, dtype=np.int64)).shape == (0, 2)
    with pytest.raises(IndexError):
        space.configs([5])
    assert list(space) == [dict(zip(["x", "y"], r)) for r in configs.tolist()]
    assert space.config(-1) == {"x": 4, "y": 10} == space[4]
    assert space.index({"x": 2, "y": 20}) == 3
    assert space.index([4, 20]) is None
    assert [4, 10] in space and (4, 20) not in space
    assert {"x": 1} not in space and {"x": 1, "y": 10, "z": 0} not in space
    assert list(space.indices(np.array([[1, 10], [4, 20], [3, 10]]))) == [0, -1, -1]
    assert space.violated({"x": 4, "y": 20}) == "x * y <= 40"
    assert space.violated({"x": 3, "y": 3}) is None  # restrictions hold; values need not be listed
    with pytest.raises(IndexError):
        space.config(5)


def test_sample_is_uniform_distinct_and_seeded():
    space = SearchSpace({"a": list(range(10)), "b": list(range(10))}, ["a + b < 10"])
    s = space.sample(len(space), seed=4)
    assert sorted(s.tolist()) == list(range(len(space)))
    assert np.array_equal(space.sample(10, seed=4), space.sample(10, seed=4))
    assert not np.array_equal(space.sample(10, seed=4), space.sample(10, seed=5))
    counts = np.bincount(np.concatenate([space.sample(1, seed=k) for k in range(5500)]), minlength=len(space))
    assert counts.min() > 50 and counts.max() < 170  # 55 configs, expected 100 each
    with pytest.raises(ValueError, match="cannot sample"):
        space.sample(len(space) + 1)


@pytest.mark.parametrize(
    "params, message",
    [
        ({}, "at least one parameter"),
        ({"a": []}, "has no values"),
        ({"a": [1, 1]}, "lists the value 1 twice"),
        ({"a": [1.5]}, "is not an integer"),
        ({"a": "123"}, "expected a list of integers"),
        ({"and": [1]}, "not a valid identifier"),
        ({"1x": [1]}, "not a valid identifier"),
    ],
)
def test_bad_parameters(params, message):
    with pytest.raises((ValueError, TypeError), match=message):
        SearchSpace(params)


def test_empty_space_and_constant_restrictions():
    assert len(SearchSpace({"a": [1, 2]}, ["1 == 2"])) == 0
    assert len(SearchSpace({"a": [1, 2]}, ["1 < 2"])) == 2


def test_numpy_values_and_large_space():
    space = SearchSpace({"a": np.arange(1, 300), "b": np.arange(1, 300)}, ["a * b % 97 == 0"])
    assert len(space) == sum(1 for a in range(1, 300) for b in range(1, 300) if a * b % 97 == 0)


def test_from_configs_keeps_exactly_the_rows():
    rows = np.array([[4, 1], [1, 2], [2, 2]])
    space = SearchSpace.from_configs(["u", "v"], rows)
    assert {tuple(r) for r in space.configs()} == {(4, 1), (1, 2), (2, 2)}
    assert space.param_values == [[1, 2, 4], [1, 2]]
    assert [1, 1] not in space
    with pytest.raises(ValueError, match="repeats configuration"):
        SearchSpace.from_configs(["u"], np.array([[1], [1]]))
