"""The restriction parser: Python integer semantics, clear errors, no code execution."""

import itertools

import pytest

from aoe_native import SearchSpace


def holds(expr: str, **values: int) -> bool:
    space = SearchSpace({k: [v] for k, v in values.items()} or {"_": [0]}, [expr])
    return len(space) == 1


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("2 + 3 * 4 == 14", True),
        ("(2 + 3) * 4 == 20", True),
        ("2 ** 3 ** 2 == 512", True),  # right-associative
        ("-2 ** 2 == -4", True),  # unary minus binds looser than **
        ("7 / 2 == 3", True),  # integer division
        ("-7 / 2 == -4", True),  # floor, as Python's //
        ("-7 // 2 == -4", True),
        ("-7 % 3 == 2", True),  # sign of the divisor, as Python
        ("7 % -3 == -2", True),
        ("1 < 2 < 3", True),
        ("1 < 3 < 2", False),
        ("3 > 2 == 2", True),
        ("not 1 == 2", True),
        ("not 0 and 0", False),  # not binds tighter than and
        ("1 or 0 and 0", True),  # and binds tighter than or
        ("True and not False", True),
        ("10 - 2 - 3 == 5", True),  # left-associative
        ("100 / 10 / 5 == 2", True),
        ("1_000 == 1000", True),
    ],
)
def test_semantics(expr, expected):
    assert holds(expr) is expected


def test_chained_comparison_with_parameters():
    space = SearchSpace({"a": [1, 2, 4, 8, 16], "b": [1, 2, 4, 8, 16, 32, 64]}, ["32 <= a*b <= 64"])
    expected = [(a, b) for a in [1, 2, 4, 8, 16] for b in [1, 2, 4, 8, 16, 32, 64] if 32 <= a * b <= 64]
    assert [tuple(r) for r in space.configs()] == expected


def test_division_by_zero_makes_restriction_false():
    space = SearchSpace({"a": [0, 1, 2], "b": [4]}, ["b % a == 0"])
    assert [tuple(r) for r in space.configs()] == [(1, 4), (2, 4)]


def test_restrictions_match_python_on_all_operator_combinations():
    # Cross-check against Python itself (our test, not our parser, uses eval).
    values = [-7, -3, -1, 0, 1, 2, 5, 12]
    exprs = ["a // b + a % b * 3 > 0", "a * b - a < b < a + 4", "not a or b >= 2 and a != b", "(a - b) ** 2 % 5 == 1"]
    for expr in exprs:
        space = SearchSpace({"a": values, "b": values}, [expr])
        got = {tuple(r) for r in space.configs()}
        want = set()
        for a, b in itertools.product(values, values):
            try:
                if eval(expr, {}, {"a": a, "b": b}):
                    want.add((a, b))
            except ZeroDivisionError:
                pass
        assert got == want, expr


@pytest.mark.parametrize(
    "expr, position, fragment",
    [
        ("a +* 2", 3, "unexpected '*'"),
        ("a < ", 4, "unexpected end"),
        ("(a < 2", 6, "expected ')'"),
        ("a = 2", 2, "did you mean '=='"),
        ("a && b", 2, "use 'and'"),
        ("a < 2.5", 5, "integer literals"),
        ("foo < 2", 0, "unknown name 'foo'"),
        ("a b", 2, "after a complete expression"),
        ("", 0, "empty"),
    ],
)
def test_syntax_errors_show_position(expr, position, fragment):
    with pytest.raises(ValueError) as info:
        SearchSpace({"a": [1, 2], "b": [1]}, [expr])
    message = str(info.value)
    assert fragment in message
    assert f"position {position}" in message
    caret_line = message.splitlines()[-1]
    assert caret_line.index("^") - 2 == position  # caret under the offending character


@pytest.mark.parametrize(
    "attack",
    [
        "__import__('os').system('touch /tmp/aoe_pwned')",
        "open('/etc/passwd')",
        "a.__class__",
        "[x for x in ()]",
        "lambda: 1",
        "exec('1')",
    ],
)
def test_code_is_never_run(attack, tmp_path):
    with pytest.raises(ValueError):
        SearchSpace({"a": [1]}, [attack])


def test_unknown_name_lists_parameters():
    with pytest.raises(ValueError, match=r"unknown name 'c' \(parameters: a, b\)"):
        SearchSpace({"a": [1], "b": [2]}, ["a + c > 0"])


def test_restrictions_must_be_strings():
    with pytest.raises(TypeError, match="restrictions must be strings"):
        SearchSpace({"a": [1]}, [lambda p: True])
    # a single string is one restriction, not a list of characters
    assert len(SearchSpace({"a": [1, 2, 3]}, "a >= 2")) == 2


def _expressions():
    from hypothesis import strategies as st

    leaves = st.one_of(st.integers(-20, 20).map(str), st.sampled_from(["a", "b", "c"]))

    def extend(children):
        binary = st.tuples(children, st.sampled_from(["+", "-", "*", "//", "%", "<", "<=", "==", "!=", ">", ">=",
                                                      "and", "or"]), children)
        return st.one_of(
            binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            children.map(lambda e: f"(not {e})"),
            children.map(lambda e: f"(-{e})"),
            st.tuples(children, children, children).map(lambda t: f"({t[0]} < {t[1]} <= {t[2]})"),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def test_random_expressions_agree_with_python():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=400, deadline=None)
    @given(_expressions(), st.tuples(st.integers(-9, 9), st.integers(-9, 9), st.integers(-9, 9)))
    def check(expr, values):
        env = dict(zip("abc", values))
        try:
            want = bool(eval(expr, {}, env))  # the reference; the code under test never evals
        except ZeroDivisionError:
            want = False
        space = SearchSpace({k: [v] for k, v in env.items()}, [expr])
        assert (len(space) == 1) is want, expr

    check()
