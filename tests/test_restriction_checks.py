"""The fast restriction checks agree with the restriction interpreter, row by row.

estimate_batch checks each row natively (the cube model's holds_all) or with the restrictions'
bytecode; the restriction strings stay the description of the space, and their tree interpreter
(``how="reference"``) is the oracle here.
"""

import zlib

import numpy as np
import pytest

from aoe_native._core.space import eval_restriction
from aoe_native.ascend import ops

INT32_MAX = 2**31 - 1

# (op, inputs, dtype, soc, attrs): shapes, dtypes and SoCs with and without a bias table (910B3,
# 310B1: 1 KB; 310P3, 910A: none), transposes, batches, convolutions and vector ops.
CASES = [
    ("MatMul", [[4096, 4096], [4096, 4096]], "float16", "Ascend910B3", None),
    ("MatMul", [[1, 4096], [4096, 4096]], "float16", "Ascend910B3", None),
    ("MatMul", [[64, 8192], [8192, 128]], "float16", "Ascend910B3", None),  # K split searched (splitK up to 16)
    ("MatMul", [[512, 768], [768, 3072], [3072]], "float16", "Ascend910B3", None),  # bias table
    ("MatMul", [[777, 1000], [1000, 333]], "int8", "Ascend910B3", None),
    ("MatMul", [[2048, 512], [512, 1024]], "float32", "Ascend910_9392", {"bias": [1]}),
    ("MatMul", [[4096, 300], [100, 4096]], "bfloat16", "Ascend910B3", {"transpose_a": [1], "transpose_b": [1]}),
    ("MatMul", [[1024, 1024], [1024, 1024]], "float16", "Ascend310P3", {"bias": [1]}),  # no bias table
    ("MatMul", [[256, 512], [512, 256]], "float16", "Ascend310B1", {"bias": [1]}),
    ("BatchMatMul", [[16, 12, 512, 64], [16, 12, 64, 512]], "float16", "Ascend910B3", None),
    ("Gemm", [[1000, 2048], [2048, 1000], [1000]], "float16", "Ascend910A", None),
    ("Conv", [[32, 64, 56, 56], [64, 64, 3, 3], [64]], "float16", "Ascend910B3", {"pads": [1, 1, 1, 1]}),
    ("Conv", [[8, 256, 56, 56], [512, 256, 1, 1]], "int8", "Ascend310P3", {"strides": [2, 2]}),
    ("Conv", [[4, 96, 28, 28], [96, 1, 3, 3]], "float16", "Ascend910B3", {"group": [96], "pads": [1, 1, 1, 1]}),
    ("Add", [[64, 1024, 1024], [64, 1024, 1024]], "float16", "Ascend910B3", None),
    ("Exp", [[1000003]], "float32", "Ascend310P3", None),
    ("Softmax", [[32, 16, 512, 512]], "float16", "Ascend910B3", None),
    ("ReduceSum", [[1 << 20, 7]], "float16", "Ascend310P3", {"axes": [0]}),
    ("LayerNormalization", [[32, 512, 1024], [1024], [1024]], "bfloat16", "Ascend910B3", None),
    ("Transpose", [[8, 64, 128, 32]], "float16", "Ascend910B3", {"perm": [0, 2, 1, 3]}),
    ("MaxPool", [[32, 64, 112, 112]], "float16", "Ascend310P3", {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ("Concat", [[32, 64, 56, 56], [32, 64, 56, 56]], "float16", "Ascend910B3",
     {"axis": [1], "output_shape": [32, 128, 56, 56]}),
]


def random_tilings(model, n: int, rng: np.random.Generator) -> np.ndarray:
    """Rows drawn mostly from each parameter's value list, the rest from values near them, out of the
    lists (0, off by one, doubled) and out of range (negative, beyond int32).  Half of the rows are
    valid tilings with one to three values redrawn so: rows on both sides of each restriction."""
    cols = []
    for values in model.param_values:
        v = np.asarray(values, dtype=np.int64)
        pick = rng.choice(v, n)
        odd = np.concatenate([v + 1, v - 1, v * 2, v // 2, v * 3, [0, 1, 2, 3, 16, 48, 1000, INT32_MAX]])
        out = rng.choice(odd, n)
        wild = rng.choice(np.array([-1, -(2**40), INT32_MAX + 1, 2**62, rng.integers(0, INT32_MAX)]), n)
        u = rng.random(n)
        cols.append(np.where(u < 0.85, pick, np.where(u < 0.99, out, wild)))
    drawn = np.stack(cols, axis=1).astype(np.int64)
    valid = model.space().configs()
    rows = valid[rng.integers(0, len(valid), n)]
    for k in range(3):
        col = rng.integers(0, rows.shape[1], n)
        redraw = (np.arange(n) < n // 2) & ((k == 0) | (rng.random(n) < 0.4))
        rows[redraw, col[redraw]] = drawn[redraw, col[redraw]]
    rows[n // 2:] = drawn[n // 2:]
    return rows


@pytest.mark.parametrize("op, inputs, dtype, soc, attrs", CASES, ids=[f"{c[0]}-{c[2]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_fast_checks_agree_with_the_interpreter(op, inputs, dtype, soc, attrs):
    model = ops.op_model(op, inputs, dtype, soc, attrs)
    rng = np.random.default_rng(zlib.crc32(f"{op}{inputs}{dtype}{soc}".encode()))
    rows = np.concatenate([random_tilings(model, 6000, rng), model.space().configs()[:2000],
                           np.asarray([model.baseline], dtype=np.int64)])
    reference = model.violations(rows, how="reference")
    assert model.violations(rows, how="compiled") == reference
    assert model.violations(rows, how="fast") == reference
    valid = np.array([not v for v in reference])
    # Both verdicts occur often, and invalid rows name one of the restrictions or a range bound.
    assert 0.02 < valid.mean() < 0.98, valid.mean()
    names = set(model.restrictions)
    for v in set(reference) - {""}:
        assert v in names or v.split()[0] in model.param_names, v
    assert len(set(reference) & names) >= min(3, len(names))
    # estimate_batch: NaN exactly for the invalid rows, the same times whichever check runs.
    times = model.estimate_batch(rows)
    np.testing.assert_array_equal(np.isnan(times), ~valid)
    np.testing.assert_array_equal(times, model.estimate_batch(rows, True, "reference"))
    # The unchecked path only guards the ranges; it agrees on every row the checks accept.
    unchecked = model.estimate_batch(rows, False)
    np.testing.assert_array_equal(unchecked[valid], times[valid])


def test_bias_table_restriction_is_checked():
    model = ops.op_model("MatMul", [[512, 768], [768, 3072], [3072]], "float16", "Ascend910B3")
    assert "baseN * 4 <= 1024" in model.restrictions
    row = dict(zip(model.param_names, model.baseline))
    row.update(baseN=512, baseM=16, baseK=16, dbL0C=1)
    assert model.violation(list(row.values())) == "baseN * 4 <= 1024"
    no_table = ops.op_model("MatMul", [[512, 768], [768, 3072], [3072]], "float16", "Ascend310P3")
    assert not any(r.startswith("baseN * 4") for r in no_table.restrictions)


def test_check_mode_is_validated():
    model = ops.op_model("MatMul", [[64, 64], [64, 64]])
    with pytest.raises(ValueError, match="'fast', 'compiled' or 'reference'"):
        model.estimate_batch(np.asarray([model.baseline]), True, "interpreted")


# ---- the bytecode against the tree interpreter on arbitrary restrictions -------------------------

EXPRS = [
    "a * b - c < a + 4 <= b * b",
    "(a + 1) // (b - 2) + a % c * 3 > -5",
    "not a or b >= 2 and a != c",
    "a ** 2 % 5 == 1 or b ** c > 100",
    "2 ** c > a",
    "-a // 4 == -(a // 4) or a % -3 == a % 3",
    "a % 8 == 0 and b // 16 >= c // 1 and c % 1 == 0",
    "1 < 2 < a < 5 != b",
    "3 > 2 > a or 0 < b",
    "a * 4611686018427387904 > 0 or b > 0",    # overflow in the left operand: undefined
    "b > 0 or a * 4611686018427387904 > 0",    # overflow only when b <= 0
    "1 // 0 == 0 and a > 0",                    # constant undefined step
    "a > 100 and 1 // 0 == 0",                  # undefined only when reached
    "0 and 1 // 0",
    "a and b or c",
    "(a or b) + (b and c) * 2",
    "True and not False or a",
    "a - 9223372036854775807 - 2 < 0",
    "-(-9223372036854775807 - 1) > a",
    "a // -1 + b % -1 == -a",
    "(a + b + c) // 7 * 7 == a + b + c - (a + b + c) % 7",
    "a // 0 > 0 or b > 0",
    "a < b < c < a + b + c",
    "c ** -1 == 0 or c > 0",
    "(a if_not_a_name)",
]


@pytest.mark.parametrize("text", EXPRS[:-1])
def test_bytecode_matches_the_tree_interpreter(text):
    names = ["a", "b", "c"]
    rng = np.random.default_rng(len(text))
    small = np.array([-(2**63), -(2**62), -17, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 8, 16, 63, 64, 100, 2**31, 2**62,
                      2**63 - 1], dtype=np.int64)
    grid = np.array(np.meshgrid(small, small, small[[1, 2, 4, 5, 6, 7, 8, 9, 10, 13, 16, 20]])).reshape(3, -1).T
    rows = np.concatenate([grid, rng.integers(-1000, 1000, size=(3000, 3))]).astype(np.int64)
    v, u = eval_restriction(text, names, rows)
    rv, ru = eval_restriction(text, names, rows, reference=True)
    np.testing.assert_array_equal(u, ru)
    np.testing.assert_array_equal(v, rv)


def test_bytecode_keeps_the_parser_errors():
    with pytest.raises(ValueError, match="position"):
        eval_restriction(EXPRS[-1], ["a"], np.zeros((1, 1), dtype=np.int64))


def _random_expression(rng: np.random.Generator, depth: int) -> str:
    leaves = ["a", "b", "c", "0", "1", "2", "3", "16", "-1", "9223372036854775807", "True"]
    ops = ["+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!=", "and", "or"]
    kind = int(rng.integers(0, 6)) if depth > 0 else 5
    sub = lambda: _random_expression(rng, depth - 1)  # noqa: E731
    if kind == 0:
        return f"(not {sub()})"
    if kind == 1:
        return f"(-{sub()})"
    if kind == 2:
        return f"({sub()} < {sub()} <= {sub()})"
    if kind in (3, 4):
        return f"({sub()} {ops[int(rng.integers(0, len(ops)))]} {sub()})"
    return leaves[int(rng.integers(0, len(leaves)))]


def test_bytecode_matches_the_tree_interpreter_on_random_expressions():
    rng = np.random.default_rng(7)
    values = np.array([-(2**63), -5, -2, -1, 0, 1, 2, 3, 7, 16, 64, 2**32, 2**63 - 1], dtype=np.int64)
    rows = values[rng.integers(0, len(values), size=(40, 3))]
    for _ in range(1500):
        text = _random_expression(rng, 5)
        got, want = eval_restriction(text, ["a", "b", "c"], rows), eval_restriction(text, ["a", "b", "c"], rows, True)
        assert np.array_equal(got[1], want[1]) and np.array_equal(got[0], want[0]), text
