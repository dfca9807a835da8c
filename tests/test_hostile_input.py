"""Hostile and malformed input ends in a clear error naming the limit, never in a crash
(issue 16).  Inputs that once crashed run in a subprocess, so a regression fails the test
instead of killing the suite."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

import aoe_native as aoe
from aoe_native import BankError, SearchSpace
from aoe_native.ascend.platforms import native_platform
from aoe_native.bank.store import MAX_DEPTH, Bank
from aoe_native.fileio import json_depth
from aoe_native.graph.onnx import load_graph
from opat_models import mlp, run_aoe

SOC = "Ascend910B3"


def _in_subprocess(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("text", [
    '"not " * 200000 + "a==1"',
    '"-" * 1000000 + "1 == a"',
    '"(" * 100000 + "a==1" + ")" * 100000',
])
def test_issue_restrictions_that_overflowed_the_stack(text):
    r = _in_subprocess(f"""
        from aoe_native import SearchSpace
        try:
            SearchSpace({{"a": [1, 2]}}, [{text}])
        except ValueError as e:
            print(e)
        """)
    assert r.returncode == 0, r.stderr
    assert "longer than the limit of 10000 characters" in r.stdout


@pytest.mark.parametrize("text,pos", [
    ("(" * 201 + "a==1" + ")" * 201, 200),
    ("not " * 201 + "a==1", 800),
    ("- " * 201 + "1 == a", 400),
    ("a" + " ** a" * 201 + " > 0", 1002),
])
def test_nesting_limit_names_the_limit_and_position(text, pos):
    with pytest.raises(ValueError, match=f"nesting deeper than 200 levels.* at position {pos}"):
        SearchSpace({"a": [1, 2]}, [text])
    ok = text.replace("(", "", 1).replace(")", "", 1) if text.startswith("(") else None
    if ok is not None:  # 200 levels are fine
        assert len(SearchSpace({"a": [1, 2]}, [ok])) == 1


def test_long_flat_restriction_within_the_limit_evaluates():
    text = " + ".join(["a"] * 2400) + " > 2400"  # a left-deep chain of 2400 nodes, 9,604 characters
    assert len(text) <= 10000
    assert [c["a"] for c in SearchSpace({"a": [1, 2]}, [text])] == [2]


def test_error_about_a_long_restriction_shows_an_excerpt():
    with pytest.raises(ValueError) as e:
        SearchSpace({"a": [1]}, ["a + " * 1000 + "b"])
    msg = str(e.value)
    assert "restriction of 4001 characters: unknown name 'b'" in msg and len(msg) < 400


@pytest.mark.parametrize("restriction,values,valid", [
    ("a * 9223372036854775807 > 0", [1, 2], [1]),          # 2 * (2^63 - 1) overflows: false, not wrapped
    ("-a < 0", [-9223372036854775808, 1], [1]),             # -(-2^63) overflows
    ("a // -1 > 0", [-9223372036854775808, -1], [-1]),
    ("2 ** a > 0", [62, 63, 64], [62]),
    ("a ** 1 == a", [3037000500, 5], [3037000500, 5]),      # squaring the base past the last bit is not needed
])
def test_arithmetic_leaving_int64_makes_the_restriction_false(restriction, values, valid):
    assert [c["a"] for c in SearchSpace({"a": values}, [restriction])] == valid


def test_parameter_values_beyond_int64_are_refused():
    with pytest.raises(ValueError, match="parameter 'a'.* beyond the 64-bit range"):
        SearchSpace({"a": [2**70]})
    s = SearchSpace({"a": [1]})
    assert s.index({"a": 2**70}) is None and {"a": 2**70} not in s


# ---- the cost model ------------------------------------------------------------------------------

def test_issue_matmul_beyond_device_memory():
    big = [[2**40, 2**40], [2**40, 2**40]]
    with pytest.raises(ValueError, match=r"MatMul input 0 \[1099511627776, 1099511627776\] \(float16\) needs "
                                         r".* GiB, more than the 64 GiB of device memory of Ascend910B3"):
        aoe.estimate("MatMul", big, "float16", SOC, [16] * 15)
    with pytest.raises(ValueError, match="MatMul output .* more than the 64 GiB"):
        aoe.tune_op("MatMul", [[2**20, 1], [1, 2**20]])


@pytest.mark.parametrize("op,inputs,attrs,match", [
    ("Add", [[2**62, 4], [4]], None, "needs .* GiB"),
    ("Add", [[1] * 33], None, "more than 32 dimensions"),
    ("Add", [[2**64], [1]], None, "beyond the 64-bit range"),
    ("Conv", [[1, 8, 32, 32], [8, 8, 3, 3]], {"dilations": [2**31 - 1, 1]}, "larger than the padded input"),
    ("Conv", [[1, 8, 32, 32], [8, 8, 3, 3]], {"strides": [2**40, 1]}, "outside the 32-bit range"),
    ("MaxPool", [[1, 1, 64, 64]], {"kernel_shape": [2**31 - 1, 2**31 - 1], "pads": [2**31 - 1] * 4},
     "more than the limit of 65536"),
    ("MaxPool", [[1, 1, 8, 8]], {"kernel_shape": [1, 1], "pads": [2**31 - 1] * 4}, "needs .* GiB"),
    ("Softmax", [[8, 8]], {"axis": 2**70}, "beyond the 64-bit range"),
])
def test_operator_limits_are_clear_errors(op, inputs, attrs, match):
    with pytest.raises(ValueError, match=match):
        aoe.tiling_space(op, inputs, attrs=attrs)


def test_tiling_values_are_range_checked():
    base = aoe.baseline_tiling("MatMul", [[64, 64], [64, 64]])
    for value, match in [(2**62, "singleCoreM <= 2147483647"), (2**70, "beyond the 64-bit range")]:
        with pytest.raises(ValueError, match=match):
            aoe.estimate("MatMul", [[64, 64], [64, 64]], "float16", SOC, {**base, "singleCoreM": value})
    with pytest.raises(ValueError, match="iterateOrder >= 0"):
        aoe.estimate("MatMul", [[64, 64], [64, 64]], "float16", SOC, {**base, "iterateOrder": -1})


def test_platform_numbers_are_bounded():
    p = native_platform(SOC)
    d = p.to_dict()
    with pytest.raises(ValueError, match="'cube_cores' must be at most 65536"):
        type(p).from_dict({**d, "cube_cores": 2**40})
    with pytest.raises(ValueError, match="'ub' must be at most 2\\^53"):
        type(p).from_dict({**d, "ub": 1e300})


# ---- ONNX ---------------------------------------------------------------------------------------

def _big_matmul_model(path):
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["Y"])], "big",
                          [vi("A", TensorProto.FLOAT16, [2**40, 2**40]), vi("B", TensorProto.FLOAT16, [2**40, 2**40])],
                          [vi("Y", TensorProto.FLOAT16, None)])
    import onnx
    onnx.save(helper.make_model(g), str(path))


def test_issue_aoe_on_a_model_beyond_device_memory(tmp_path):
    _big_matmul_model(tmp_path / "big.onnx")
    r = run_aoe(["--framework=5", "--model=big.onnx", "--job_type=2", f"--soc_version={SOC}",
                 f"--bank={tmp_path / 'bank'}"], cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "tensor 'A' [1099511627776, 1099511627776] (float16) needs" in r.stderr
    assert "more than the 64 GiB of device memory of Ascend910B3" in r.stderr
    assert "Traceback" not in r.stderr


def test_input_shape_beyond_int64(tmp_path):
    _big_matmul_model(tmp_path / "big.onnx")
    with pytest.raises(ValueError, match="dimension 99999999999999999999 is beyond the 64-bit range"):
        load_graph(str(tmp_path / "big.onnx"), "A:99999999999999999999,1")


# ---- the bank --------------------------------------------------------------------------------------

def test_json_depth_ignores_brackets_in_strings():
    assert json_depth(b'{"a": [[1], {"b": "[[[[{{"}], "c": "\\"[["}') == 3
    assert json_depth(b"[" * 5 + b"]" * 5) == 5 and json_depth(b"7") == 0


def test_issue_bank_nested_200000_deep(tmp_path):
    d = tmp_path / SOC
    d.mkdir()
    (d / "MatMul.json").write_text("[" * 200000 + "]" * 200000)
    with pytest.raises(BankError, match=f"MatMul.json: corrupt bank file \\(nested 200000 levels deep, more than "
                                        f"the limit of {MAX_DEPTH}\\)"):
        Bank(d, SOC).load()
    import onnx
    onnx.save(mlp(), str(tmp_path / "mlp.onnx"))
    r = run_aoe(["--framework=5", "--model=mlp.onnx", "--job_type=2", f"--soc_version={SOC}",
                 "--input_shape=x:1,64,256", f"--bank={tmp_path}"], cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "MatMul.json: corrupt bank file (nested 200000 levels deep" in r.stderr


def test_bank_file_size_limit(tmp_path, monkeypatch):
    from aoe_native.bank import store
    monkeypatch.setattr(store, "MAX_FILE_BYTES", 100)
    (tmp_path / "MatMul.json").write_text(" " * 101)
    with pytest.raises(BankError, match="corrupt bank file \\(larger than the limit of 100 bytes\\)"):
        Bank(tmp_path, SOC).load()


@pytest.mark.parametrize("change,match", [
    ({"inputs": 5}, "malformed inputs"),
    ({"inputs": [[10**400]]}, "malformed inputs"),
    ({"op_type": 7}, "malformed op_type"),
    ({"op_type": "LayerNormalizati" + "[" * 300}, "op_type of 316 characters"),  # fuzzer: merge failed on its file name
    ({"tiling": {"baseM": 2**64}}, "beyond the 64-bit range"),
    ({"attrs": []}, "malformed formats or attrs"),
])
def test_bank_entries_of_the_wrong_shape_are_named(tmp_path, change, match):
    import json
    src = os.path.join(os.path.dirname(__file__), "data", "bank_v1", SOC, "MatMul.json")
    with open(src) as f:
        doc = json.load(f)
    key = next(iter(doc["entries"]))
    doc["entries"][key].update(change)
    (tmp_path / "MatMul.json").write_text(json.dumps(doc))
    with pytest.raises(BankError, match=match):
        Bank(tmp_path, SOC).load()


def test_bank_huge_integer_literal(tmp_path):
    (tmp_path / "MatMul.json").write_text('{"schema": ' + "9" * 5000 + "}")
    with pytest.raises(BankError, match="corrupt bank file"):
        Bank(tmp_path, SOC).load()


# ---- found by fuzzing (tests/fuzz/) -----------------------------------------------------------------

@pytest.mark.parametrize("inputs", [[[289, 309, 49], []], [[], [4, 4]]])
def test_fuzz_matmul_with_a_scalar_operand(inputs):
    r = _in_subprocess(f"""
        import aoe_native as aoe
        try:
            aoe.baseline_tiling("MatMul", {inputs!r})
        except ValueError as e:
            print(e)
        """)
    assert r.returncode == 0, r.stderr  # was a segfault: the shape was indexed out of range
    assert "A and B must have at least one dimension" in r.stdout


def test_fuzz_onnx_name_that_is_not_utf8(tmp_path):
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [vi("x", TensorProto.FLOAT, [4])],
                          [vi("y", TensorProto.FLOAT, None)])
    data = helper.make_model(g).SerializeToString().replace(b"Relu", b"R\xfclu")
    (tmp_path / "m.onnx").write_bytes(data)
    with pytest.raises(ValueError, match="not a readable ONNX model .*not UTF-8"):
        load_graph(str(tmp_path / "m.onnx"))


def test_fuzz_onnx_tensor_attribute_of_undefined_type(tmp_path):
    vi = helper.make_tensor_value_info
    bad = TensorProto(name="v", dims=[1], data_type=TensorProto.UNDEFINED)
    g = helper.make_graph([helper.make_node("Constant", [], ["c"], name="const", value=bad),
                           helper.make_node("Relu", ["x"], ["y"])], "g", [vi("x", TensorProto.FLOAT, [4])],
                          [vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(ValueError, match="node const \\(Constant\\): attribute 'value' is not a readable tensor"):
        load_graph(helper.make_model(g))


def test_fuzz_onnx_long_vectors_do_not_exhaust_memory(tmp_path):
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Add", ["b", "b"], ["o"])], "g", [vi("b", TensorProto.FLOAT, [2**31])],
                          [vi("o", TensorProto.FLOAT, None)])
    import onnx
    onnx.save(helper.make_model(g), str(tmp_path / "m.onnx"))
    r = _in_subprocess(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # ONNX's data propagation wanted ~300 GB
        from aoe_native.graph.onnx import load_graph
        print(load_graph({str(tmp_path / "m.onnx")!r}).shape("o"))
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(2147483648,)"


def test_fuzz_onnx_node_without_outputs():
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Add", ["x", "x"], [], name="add")], "g",
                          [vi("x", TensorProto.FLOAT, [4])], [vi("x", TensorProto.FLOAT, [4])])
    with pytest.raises(ValueError, match="node add \\(Add\\) has 2 inputs and 0 outputs; Add needs at least 2 and 1"):
        load_graph(helper.make_model(g))


def test_fuzz_onnx_attribute_of_the_wrong_type():
    vi = helper.make_tensor_value_info
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", strides=[1, 1])
    conv.attribute[0].type = 0  # UNDEFINED: ONNX shape inference let it through, lowering read None
    g = helper.make_graph([conv], "g", [vi("x", TensorProto.FLOAT, [1, 8, 8, 8]),
                                        vi("w", TensorProto.FLOAT, [8, 8, 3, 3])], [vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(ValueError, match="node conv \\(Conv\\) attribute 'strides' is of type UNDEFINED"):
        load_graph(helper.make_model(g))


@pytest.mark.parametrize("kw,exc,match", [
    ({"seed": -1}, ValueError, "seed must be in \\[0, 2\\*\\*64\\)"),
    ({"seed": 2**70}, ValueError, "seed must be in"),
    ({"seed": 1.5}, TypeError, "seed must be an integer"),
    ({"max_evals": 2**70}, ValueError, "max_evals must be below 2\\*\\*63"),
])
def test_tuning_budgets_are_range_checked(kw, exc, match):
    with pytest.raises(exc, match=match):
        aoe.tune(SearchSpace({"a": [1, 2]}), lambda c: c["a"], **kw)


def test_other_json_inputs_are_depth_checked(tmp_path):
    from aoe_native import replay
    from aoe_native.cli import read_tune_ops_file
    deep = tmp_path / "deep.json"
    deep.write_text('{"tune_params_keys": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(ValueError, match="deep.json: nested 100001 levels deep, more than the limit of 32"):
        replay.load(str(deep))
    with pytest.raises(ValueError, match="nested deeper than 8 levels"):
        read_tune_ops_file(str(deep))


@pytest.mark.parametrize("op,inputs", [("MatMul", [[64, 64], [64, 64]]), ("Add", [[64, 64], [64, 64]])])
def test_native_estimate_of_a_zero_tiling(op, inputs):
    r = _in_subprocess(f"""
        import numpy as np
        from aoe_native.ascend.ops import op_model
        m = op_model({op!r}, {inputs!r})
        zeros = [0] * len(m.param_names)
        print(np.isnan(m.estimate_batch(np.array([zeros]), False)[0]))
        try:
            m.estimate(zeros)
        except ValueError as e:
            print(e)
        """)
    assert r.returncode == 0, r.stderr  # was SIGFPE: a division by a zero tile size
    assert r.stdout.startswith("True\n") and "tiling violates the restriction" in r.stdout


def test_a_timeline_with_a_gigantic_gradient_is_a_clear_error(tmp_path):
    """Found by the gdat fuzz target: bytes beyond int64 ended in OverflowError."""
    from aoe_native.gradients.timeline import TimelineError, load_timeline
    p = tmp_path / "t.json"
    p.write_text('{"gradients": [{"name": "w", "bytes": 24573333333333333333333333333333336, "ready_us": 0}]}')
    with pytest.raises(TimelineError, match=r"gradient 0 \('w'\): bytes must be an integer in 1\.\.2\^50"):
        load_timeline(p)


def test_integer_arrays_refuse_fractions_and_strings():
    space = SearchSpace({"a": [1, 2, 3], "b": [1, 2]})
    # whole floats are integers; 1.5 is not quietly 1, and strings are not numbers
    assert space.indices([[2.0, 1.0]]).tolist() == [2]
    assert space.configs(np.array([1.0])).tolist() == [[1, 2]]
    with pytest.raises(ValueError, match=r"indices rows: 1\.5 is not an integer"):
        space.indices(np.array([[1.5, 1]]))
    with pytest.raises(TypeError, match="indices rows: expected integers, got an array of <U1"):
        space.indices(np.array([["1", "1"]]))
    with pytest.raises(ValueError, match=r"configs ids: 0\.5 is not an integer"):
        space.configs([0.5])
    with pytest.raises(ValueError, match=r"from_configs rows: 2\.5 is not an integer"):
        SearchSpace.from_configs(["a"], [[2.5]])


def test_objectives_returning_strings_or_none_fail_those_configurations_only():
    space = SearchSpace({"a": [1, 2, 3], "b": [1, 2]})
    r = aoe.tune(space, lambda c: "1.5", max_evals=2)
    assert r.best_config is None and len(r.failed) == 2
    assert all("a string, not a number" in why for _, why in r.failed)

    def batch(rows):  # an object array: the first row None, the others numbers
        return np.array([None] + [float(x) for x in rows[1:, 0]], dtype=object)

    r = aoe.tune(space, aoe.BatchObjective(batch, max_batch=6), strategy="exhaustive")
    assert len(r.failed) == 1 and "returned None, not a number" in r.failed[0][1]
    assert r.best_value == 1.0 and r.evaluations == 6
    r = aoe.tune(space, aoe.BatchObjective(lambda rows: np.array(["1"] * len(rows)), max_batch=6),
                 strategy="exhaustive")
    assert len(r.failed) == 6 and "returned strings" in r.failed[0][1]


def test_a_space_too_large_for_memory_is_refused_with_its_size():
    with pytest.raises(ValueError, match=r"1000000000000 valid configurations, more than the \d+ that fit in 4 GiB"):
        SearchSpace({f"p{i}": list(range(100)) for i in range(6)})


def test_ctrl_c_stops_a_long_space_enumeration():
    # 40^7 points, none valid: minutes of enumeration; a SIGINT (from outside: the build holds
    # the GIL) ends it within a second
    code = textwrap.dedent("""
        import time
        import aoe_native as aoe
        print("building", flush=True)
        t = time.perf_counter()
        try:
            aoe.SearchSpace({f"p{i}": list(range(40)) for i in range(7)}, ["p0 + p1 + p2 + p3 + p4 + p5 + p6 < 0"])
        except KeyboardInterrupt:
            print("interrupted after", round(time.perf_counter() - t, 1), flush=True)
    """)
    # (SIGINT restored in the child: a test run started in the background inherits it ignored)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline() == "building\n"
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out.startswith("interrupted after"), out
    assert float(out.split()[-1]) < 10


@pytest.mark.parametrize("text,match", [
    ("a ,b", r"unexpected ',' \(function calls and tuples are not supported\) at position 2"),
    ("a \x00 == 1", r"unexpected character '\\x00' at position 2\n  a \\x00 == 1\n    \^"),
    ("a \u2264 1", r"unexpected character '\u2264' \(restrictions are ASCII: <=, >=, !=, digits 0-9\)"),
])
def test_restriction_errors_show_the_character_as_written(text, match):
    with pytest.raises(ValueError, match=match):
        SearchSpace({"a": [1, 2]}, [text])


def test_the_native_cost_objective_checks_tilings_of_a_users_space():
    model = aoe.ascend.ops.op_model("MatMul", [[64, 64], [64, 64]])
    tiling = dict(zip(model.param_names, model.baseline))
    ok = SearchSpace({k: [v] for k, v in tiling.items()})
    assert aoe.tune(ok, model.objective(), max_evals=1).best_value == pytest.approx(
        aoe.tune(ok, model.objective(check_tilings=False), max_evals=1).best_value)
    bad = SearchSpace({k: [v] for k, v in {**tiling, "singleCoreM": 4096, "baseM": 4096}.items()})
    r = aoe.tune(bad, model.objective(), max_evals=1)
    assert r.best_config is None and "MatMul tiling violates" in r.failed[0][1]
    with pytest.raises(ValueError, match=r"the space has 1 parameters, the MatMul model's tilings 26 \(dispatch, tilingEnable, singleCoreM"):
        aoe.tune(SearchSpace({"a": [1]}), model.objective(), max_evals=1)


@pytest.mark.parametrize("ints,strs,match", [
    ({"pads": [1, 1, 1, 1]}, {"auto_pad": ["SAME_UPPER"]}, "auto_pad 'SAME_UPPER' and explicit pads"),
    ({"kernel_shape": [5, 5]}, {}, r"kernel_shape \[5, 5\] does not match W \[8, 3, 3, 3\]"),
    ({"group": []}, {}, "attribute 'group' has no value"),
    ({"auto_pad": [1]}, {}, r"attribute 'auto_pad' takes strings \(str_attrs\)"),
    ({}, {"strides": ["1", "1"]}, r"attribute 'strides' takes integers \(int_attrs\)"),
    ({}, {"auto_pad": ["SAME"]}, "auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER"),
])
def test_the_native_conv_checks_its_attributes(ints, strs, match):
    # C++ embedders reach make_op_model without the Python façade's checks
    with pytest.raises(ValueError, match=match):
        aoe._core.ascend.op_model(native_platform(SOC), "Conv", [[1, 3, 15, 15], [8, 3, 3, 3]], "float16", ints, strs)


def test_conv_auto_pad_is_the_native_rule_in_both_front_ends():
    x, w = [1, 3, 15, 15], [8, 3, 4, 4]
    assert aoe.ascend.ops.auto_pads("SAME_UPPER", x, w, [2, 2], [1, 1]) == [1, 1, 2, 2]
    assert aoe.ascend.ops.auto_pads("SAME_LOWER", x, w, [2, 2], [1, 1]) == [2, 2, 1, 1]
    native = aoe._core.ascend.op_model(native_platform(SOC), "Conv", [x, w], "float16", {"strides": [2, 2]},
                                       {"auto_pad": ["SAME_LOWER"]})
    explicit = aoe._core.ascend.op_model(native_platform(SOC), "Conv", [x, w], "float16",
                                         {"strides": [2, 2], "pads": [2, 2, 1, 1]}, {})
    assert native.estimate(native.baseline) == explicit.estimate(explicit.baseline)


@pytest.mark.parametrize("field,value,match", [
    ("gm_align", 48, "gm_align 48.0 must be a whole power of two"),
    ("cube_dtypes", ["float16", "float16"], "cube_dtypes lists 'float16' twice"),
    ("standalone_vector_cores", 2, "need a standalone_ddr_rate above 0"),
])
def test_platform_fields_that_contradict_each_other(field, value, match):
    p = native_platform(SOC)
    with pytest.raises(ValueError, match=match):
        type(p).from_dict({**p.to_dict(), field: value})
