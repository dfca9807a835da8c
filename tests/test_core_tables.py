"""The C++ tables behind _core.ascend: the operator vocabulary (op_table) and
the Platform field schema (platform_fields), and the _core submodule layout."""

import ast
import json
import math
import pickle
from importlib import resources

import numpy as np
import pytest

from aoe_native import _core
from aoe_native._core import ascend
from aoe_native._core.ascend import Platform

SOCS = json.loads(resources.files("aoe_native").joinpath("data/socs.json").read_text(encoding="utf-8"))["socs"]
B3 = SOCS["Ascend910B3"]
FIELDS = {f["name"]: f for f in ascend.platform_fields()}
TABLE = {e["name"]: e for e in ascend.op_table()}

# ---- layout ----------------------------------------------------------------------------


def test_submodules():
    from aoe_native._core.space import SearchSpace  # importable: registered in sys.modules

    assert _core.space.SearchSpace is SearchSpace and isinstance(_core.__version__, str)
    assert not hasattr(_core, "SearchSpace") and not hasattr(_core, "ascend_op_model")  # no flat names left


def test_stubs_are_installed():
    stubs = resources.files("aoe_native").joinpath("_core")
    for name in ("__init__.pyi", "space.pyi", "ascend.pyi"):
        assert stubs.joinpath(name).is_file(), name


# ---- operator table --------------------------------------------------------------------

CUBE = {"epilogue", "out_dtype", "bias", "relu", "mix_ratio", "workspace_slots", "nonuniform_split"}
REDUCE = {"axes", "keepdims", "noop_with_empty_axes", "prologue", "epilogue"}
ALLOWED_ATTRS = {
    "MatMul": CUBE | {"transpose_a", "transpose_b"},
    "BatchMatMul": CUBE | {"transpose_a", "transpose_b"},
    "Gemm": CUBE | {"alpha", "beta", "transA", "transB"},
    "Conv": CUBE | {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
    "ReduceSum": REDUCE, "ReduceMean": REDUCE, "ReduceMax": REDUCE, "ReduceMin": REDUCE,
    "Softmax": {"axis", "prologue", "epilogue"},
    "LayerNormalization": {"axis", "epsilon", "stash_type", "prologue", "epilogue"},
    "Transpose": {"perm"},
    "MaxPool": {"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "storage_order", "prologue", "epilogue"},
    "AveragePool": {"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad", "prologue", "epilogue"},
    "LRN": {"size", "alpha", "beta", "bias", "prologue", "epilogue"},
}
# Attention (issue 49, attention.cpp).
ALLOWED_ATTRS.update({
    "FusedInferAttentionScore": {"input_layout", "num_heads", "num_key_value_heads", "causal", "actual_seq_lengths",
                                 "actual_seq_lengths_kv"},
    "SparseFlashAttention": {"input_layout", "num_heads", "num_key_value_heads", "causal"},
    "MlaProlog": {"num_heads"},
})
# The LLM matmuls (qmm49).
ALLOWED_ATTRS.update({
    "WeightQuantBatchMatmul": CUBE | {"input_dtypes", "weight_dtype", "antiquant_group_size", "transpose_x",
                                      "transpose_weight"},
    "QuantBatchMatmulV3": CUBE | {"input_dtypes", "output_dtype", "transpose_x1", "transpose_x2"},
    "GroupedMatmul": {"group_list", "group_list_type", "group_type", "transpose_weight", "split_item",
                      "input_dtypes"},
})
# LLM vector kernels (norm_quant.cpp).
ALLOWED_ATTRS.update({
    "RmsNorm": {"epsilon", "input_dtypes"}, "AddRmsNorm": {"epsilon", "input_dtypes"},
    "AddRmsNormDynamicQuant": {"epsilon", "input_dtypes", "output_dtype"},
    "GroupNorm": {"num_groups", "epsilon", "input_dtypes"},
    "GroupNormSilu": {"num_groups", "epsilon", "activate_silu", "input_dtypes"},
    "DynamicQuant": {"input_dtypes", "output_dtype"},
    "DequantSwigluQuant": {"activate_left", "input_dtypes", "output_dtype", "quant_mode"},
    "SwiGlu": {"dim"}, "ApplyRotaryPosEmb": {"input_layout", "rotary_mode"},
})
# (inputs, int attrs) that build each of them.
NORM_EXAMPLES = {
    "RmsNorm": ([[64, 128], [128]], {}), "AddRmsNorm": ([[64, 128], [64, 128], [128]], {}),
    "AddRmsNormDynamicQuant": ([[64, 128], [64, 128], [128]], {}),
    "GroupNorm": ([[2, 64, 8, 8], [64], [64]], {"num_groups": [8]}),
    "GroupNormSilu": ([[2, 64, 8, 8], [64], [64]], {"num_groups": [8]}),
    "DynamicQuant": ([[64, 128]], {}), "DequantSwigluQuant": ([[64, 256]], {}), "SwiGlu": ([[64, 256]], {}),
    "ApplyRotaryPosEmb": ([[1, 16, 8, 64], [1, 16, 2, 64], [1, 16, 1, 64], [1, 16, 1, 64]], {}),
}
MOVE = {"output_shape", "axis"}
ALLOWED_ATTRS.update({
    "Concat": MOVE, "Split": MOVE | {"split", "num_outputs"}, "Slice": MOVE | {"steps"},
    "Gather": MOVE | {"batch_dims"}, "GatherElements": MOVE, "Pad": MOVE | {"mode"}, "Expand": MOVE, "Tile": MOVE,
    "Resize": MOVE | {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                      "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"},
    "DepthToSpace": MOVE | {"blocksize", "mode"}, "SpaceToDepth": MOVE | {"blocksize"},
})
# Issue 49's optimizer and MoE routing kernels (optimizer.cpp, moe_routing.cpp): attributes and
# an example (inputs, int attrs, str attrs, dtype) of each.
ALLOWED_ATTRS.update({
    "ForeachAddcdivScalar": {"tensor_count"}, "ForeachNorm": {"tensor_count", "norm_type"},
    "ApplyAdamW": {"amsgrad", "maximize"}, "Gcd": {"iterations"}, "MoeGatingTopKSoftmax": {"k", "input_dtypes"},
    "MoeInitRouting": {"expert_num", "active_num", "expert_capacity", "drop_pad_mode",
                       "expert_tokens_count_or_cumsum_flag", "expert_tokens_before_capacity_flag", "input_dtypes"},
    "MoeReRouting": {"expert_token_num_type", "idx_type", "input_dtypes"},
    "MoeFinalizeRouting": {"drop_pad_mode", "input_dtypes"}, "MhcSinkhorn": {"iter_step"},
})
LLM_EXAMPLES = {
    "ForeachAddcdivScalar": ([[64, 128]] * 3, {}, {}, "float16"), "ForeachNorm": ([[64, 128]], {}, {}, "float16"),
    "ApplyAdamW": ([[64, 128]] * 4, {}, {}, "float16"), "Gcd": ([[64, 128]] * 2, {}, {}, "int32"),
    "MoeGatingTopKSoftmax": ([[64, 8]], {"k": [2]}, {}, "float16"),
    "MoeInitRouting": ([[64, 128], [64, 2]], {}, {}, "float16"),
    "MoeReRouting": ([[64, 128], [4, 4], [64]], {}, {}, "float16"),
    "MoeFinalizeRouting": ([[128, 64], [128], [64, 64], [], [8, 64], [64, 2], [64, 2]], {}, {}, "float16"),
    "MhcSinkhorn": ([[64, 4, 4]], {}, {}, "float32"),
}
LLM_EXAMPLES.update({"MoeInitRoutingV2": LLM_EXAMPLES["MoeInitRouting"],
                     "MoeFinalizeRoutingV2": LLM_EXAMPLES["MoeFinalizeRouting"]})
# ONNX elementwise ops the cost model has no recipe for: no entry.
UNSUPPORTED_ONNX = {"Sin", "Cos", "Tan", "Asin", "BitShift", "NonZero", "TopK", "Einsum"}


def test_op_table_covers_supported_ops_exactly():
    names = [n for e in ascend.op_table() for n in [e["name"], *e["aliases"]]]
    assert len(names) == len(set(names))
    assert sorted(names) == ascend.supported_ops()
    assert not UNSUPPORTED_ONNX & set(names)


def test_op_table_families_operands_and_attrs():
    for e in ascend.op_table():
        assert e["family"] in ("matmul", "conv", "elementwise", "rows", "transpose", "pool", "movement", "attention",
                               "optimizer", "routing", "grouped_matmul", "norm", "quant", "llm_elementwise")
        if e["family"] == "elementwise":
            assert e["attrs"] is None  # any attribute
            assert e["operands"] in ((None,) if e["name"] == "FusedElementwise" else
                                     (3,) if e["name"] == "Where" else (1, 2)), e["name"]
        else:
            assert e["operands"] is None
            assert set(e["attrs"]) == ALLOWED_ATTRS[e["name"]], e["name"]
    assert set(ALLOWED_ATTRS) == {n for n, e in TABLE.items() if e["family"] != "elementwise"}
    assert (TABLE["Add"]["operands"], TABLE["Relu"]["operands"], TABLE["Pow"]["operands"]) == (2, 1, 2)
    assert TABLE["MatMul"]["aliases"] == ["MatMulV2", "MatMulV3"] and TABLE["Softmax"]["aliases"] == ["SoftmaxV2"]


def _example(entry, name):
    """(inputs, int_attrs, str_attrs) that build a model of op `name`."""
    x = [64, 128]
    fam = entry["family"]
    if name in LLM_EXAMPLES:
        return LLM_EXAMPLES[name][:3]
    if fam == "elementwise":
        if name == "FusedElementwise":
            return [x, x], {}, {"ops": ["Add", "Relu"]}
        return [x] * (1 if name == "Square" else entry["operands"]), {}, {}
    if entry["name"] == "WeightQuantBatchMatmul":
        return [[64, 64], [64, 64], [64]], {}, {}
    if entry["name"] == "QuantBatchMatmulV3":
        return [[64, 64], [64, 64], [64]], {}, {}
    if fam == "grouped_matmul":
        return [[64, 64], [2, 64, 64]], {"group_list": [16, 64]}, {}
    if fam == "matmul":
        return ([[2, 64, 64], [2, 64, 64]] if entry["name"] == "BatchMatMul" else [[64, 64], [64, 64]]), {}, {}
    if fam == "conv":
        return [[1, 16, 32, 32], [16, 16, 3, 3]], {}, {}
    if fam == "pool":
        return [[1, 16, 32, 32]], ({"size": [5]} if name == "LRN" else {"kernel_shape": [2, 2]}), {}
    if fam == "transpose":
        return [x], {"perm": [1, 0]}, {}
    if fam == "attention":
        if entry["name"] == "MlaProlog":
            return [[1, 2, 256], [256, 64], [64, 4 * 48], [4, 32, 64], [256, 80], [64], [64]], {}, {}
        qkv = [[1, 64, 4, 64], [1, 64, 2, 64], [1, 64, 2, 64]]
        return qkv + ([[1, 64, 2, 16]] if entry["name"] == "SparseFlashAttention" else []), {}, {}
    if fam == "movement":
        return [x] + ([[64, 4]] if entry["name"].startswith("Gather") else []), \
            {"output_shape": [64, 128], **({"blocksize": [2]} if "blocksize" in (entry["attrs"] or []) else {})}, {}
    if fam in ("norm", "quant", "llm_elementwise"):
        return (*NORM_EXAMPLES[entry["name"]], {})
    return [x], ({"axes": [1]} if entry["name"].startswith("Reduce") else {"axis": [-1]}), {}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_every_alias_resolves_to_the_canonical_model(name):
    p = Platform.from_dict(B3)
    entry = TABLE[name]
    inputs, ints, strs = _example(entry, name)
    dtype = LLM_EXAMPLES[name][3] if name in LLM_EXAMPLES else ("int8" if name == "QuantBatchMatmulV3" else "float16")
    m = ascend.op_model(p, name, inputs, dtype, ints, strs)
    assert m.kind == name
    for alias in entry["aliases"]:
        a = ascend.op_model(p, alias, _example(entry, alias)[0], dtype, ints, strs)
        assert a.kind == name
        assert a.param_names == m.param_names
        assert a.estimate(a.baseline)["time_us"] == m.estimate(m.baseline)["time_us"]


# ---- platform fields ---------------------------------------------------------------------

KIND_OF_ANNOTATION = {"int": "int", "float": "float", "bool": "bool", "str": "string", "list[str]": "string_list"}
NOT_FIELDS = {"sources", "arch", "aic_version", "notes", "base"}


def test_platform_fields_list_every_platform_field():
    # The stub's annotations are written by hand: they must match the table.
    stub = ast.parse(resources.files("aoe_native").joinpath("_core/ascend.pyi").read_text(encoding="utf-8"))
    cls = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Platform")
    annotated = {n.target.id: KIND_OF_ANNOTATION[ast.unparse(n.annotation)]
                 for n in cls.body if isinstance(n, ast.AnnAssign)}
    assert annotated == {n: f["kind"] for n, f in FIELDS.items()}
    # Every model key of socs.json is a field, and every required field is in every entry.
    for entry in SOCS.values():
        assert set(entry) - NOT_FIELDS <= set(FIELDS)
        assert {n for n, f in FIELDS.items() if f["required"]} <= set(entry)
    for name, f in FIELDS.items():
        assert isinstance(getattr(Platform, name), property) and f["doc"], name
        assert (f["default"] is None) == f["required"]
    assert list(Platform.from_dict(SOCS["Ascend910B3"]).to_dict()) == list(FIELDS)
    with pytest.raises(TypeError):  # no empty Platform: it would model nothing (name '', 0 GB/s)
        Platform()
    assert FIELDS["launch_overhead_us"]["default"] == 3.0 and "assumption" in FIELDS["launch_overhead_us"]["doc"]
    assert FIELDS["hbm_bytes"]["default"] == 0 and FIELDS["l2_gbps"]["default"] == 0


@pytest.mark.parametrize("soc", sorted(SOCS))
def test_builtin_socs_round_trip(soc):
    entry = SOCS[soc]
    p = Platform.from_dict(entry, f"socs.json entry {soc!r}")
    d = p.to_dict()
    assert d == {n: entry[n] if entry.get(n) is not None else f["default"] for n, f in FIELDS.items()}
    assert repr(p) == f"<Platform {soc!r}>"
    assert Platform.from_dict(d) == p
    q = pickle.loads(pickle.dumps(p))
    assert q == p and q.to_dict() == d and q is not p
    q.cube_cores = p.cube_cores + 1
    assert q != p


def _with(**changes):
    """B3's entry with fields changed; `...` removes a field."""
    d = {k: v for k, v in B3.items() if k not in changes or changes[k] is not ...}
    d.update({k: v for k, v in changes.items() if v is not ...})
    return d


# The dtypes a SoC's cube_dtypes / vector_dtypes may list (integer ones since issue 48).
DTYPES = "['float16', 'bfloat16', 'float32', 'int8', 'uint8', 'bool', 'int16', 'int32', 'int64']"
W = "socs.json entry 'X'"


@pytest.mark.parametrize("changes, message", [
    (dict(mode=..., fixpipe=...), f"{W}: missing field(s) mode, fixpipe"),
    (dict(name=""), f"{W}: 'name' must be a non-empty string"),
    (dict(name=3), f"{W}: 'name' must be a non-empty string"),
    (dict(mode="mixed"), f"{W}: 'mode' must be 'split' or 'coupled', got 'mixed'"),
    (dict(cube_cores=0), f"{W}: 'cube_cores' must be a positive integer, got 0"),
    (dict(vector_cores=-4), f"{W}: 'vector_cores' must be a positive integer, got -4"),
    (dict(cube_cores=2.0), f"{W}: 'cube_cores' must be a positive integer, got 2.0"),
    (dict(cube_cores=True), f"{W}: 'cube_cores' must be a positive integer, got True"),
    (dict(cube_cores="8"), f"{W}: 'cube_cores' must be a positive integer, got '8'"),
    (dict(cube_cores=None), f"{W}: 'cube_cores' must be a positive integer, got None"),
    (dict(freq_mhz=0), f"{W}: 'freq_mhz' must be a positive number, got 0"),
    (dict(l1=-1.5), f"{W}: 'l1' must be a positive number, got -1.5"),
    (dict(ub=math.inf), f"{W}: 'ub' must be a positive number, got inf"),
    (dict(l0a=math.nan), f"{W}: 'l0a' must be a positive number, got nan"),
    (dict(hbm_gbps=False), f"{W}: 'hbm_gbps' must be a positive number, got False"),
    (dict(gm_align=[512]), f"{W}: 'gm_align' must be a positive number, got [512]"),
    (dict(bt=-1), f"{W}: 'bt' must be a non-negative number, got -1"),
    (dict(l2_gbps=-7000), f"{W}: 'l2_gbps' must be a non-negative number, got -7000"),
    (dict(hbm_bytes=-1), f"{W}: 'hbm_bytes' must be a non-negative number, got -1"),
    (dict(launch_overhead_us="3"), f"{W}: 'launch_overhead_us' must be a non-negative number, got '3'"),
    (dict(fixpipe=1), f"{W}: 'fixpipe' must be true or false"),
    (dict(cube_dtypes=[]), f"{W}: 'cube_dtypes' must be a non-empty list drawn from "
                           f"{DTYPES}, got []"),
    (dict(cube_dtypes=["float64"]), f"{W}: 'cube_dtypes' must be a non-empty list drawn from "
                                    f"{DTYPES}, got ['float64']"),
    (dict(vector_dtypes=("float16",)), f"{W}: 'vector_dtypes' must be a non-empty list drawn from "
                                       f"{DTYPES}, got ('float16',)"),
    (dict(vector_dtypes="float16"), f"{W}: 'vector_dtypes' must be a non-empty list drawn from "
                                    f"{DTYPES}, got 'float16'"),
])
def test_each_rule_raises_naming_the_field(changes, message):
    with pytest.raises(ValueError) as e:
        Platform.from_dict(_with(**changes), W)
    assert str(e.value) == message


def test_optional_fields_and_extra_keys():
    p = Platform.from_dict(_with(l2_gbps=None, hbm_bytes=..., notes="calibrated", base="Ascend910B3", bt=0))
    assert (p.l2_gbps, p.hbm_bytes, p.launch_overhead_us, p.bt) == (0.0, 0, 3.0, 0.0)
    assert Platform.from_dict(_with(l2_gbps=..., launch_overhead_us=0)).launch_overhead_us == 0.0
    assert Platform.from_dict(B3).hbm_bytes == B3["hbm_bytes"] == 64 * 2**30


def test_property_setters_check_values():
    p = Platform.from_dict(B3)
    p.mode = "coupled"
    p.freq_mhz = 1000  # ints are numbers
    assert (p.mode, p.freq_mhz) == ("coupled", 1000.0)
    for field, bad in [("cube_cores", 0), ("mode", "split2"), ("cube_dtypes", ["fp64"]), ("fixpipe", "yes")]:
        with pytest.raises(ValueError, match=f"Platform: '{field}' must be"):
            setattr(p, field, bad)


@pytest.mark.parametrize("kind, inputs, ints", [
    ("MatMul", [[1024, 512], [512, 2048]], {}),
    ("Conv", [[8, 64, 56, 56], [128, 64, 3, 3]], {}),
    ("Softmax", [[512, 1000]], {"axis": [-1]}),
    ("Add", [[64, 1024], [64, 1024]], {}),
])
def test_op_model_of_a_pickled_platform_gives_identical_estimates(kind, inputs, ints):
    p = Platform.from_dict(SOCS["Ascend910B2"])
    q = pickle.loads(pickle.dumps(p))
    a = ascend.op_model(p, kind, inputs, "float16", ints, {})
    b = ascend.op_model(q, kind, inputs, "float16", ints, {})
    # (The searched space: restrictions alone admit every round-robin block of MatMulV3's knobs
    # (issue 47), millions of tilings to enumerate before sampling.)
    space = a.space()
    rows = space.configs(space.sample(min(len(space), 500), seed=1))
    np.testing.assert_array_equal(a.estimate_batch(rows), b.estimate_batch(rows))
    assert a.estimate(a.baseline) == b.estimate(b.baseline)
