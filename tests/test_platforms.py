"""The SoC table shipped with the package and user-loaded SoCs."""

import json
import math

import pytest

import aoe_native as an
from aoe_native.ascend.platforms import Platform, is_builtin

REQUIRED_SOCS = ["Ascend310P3", "Ascend910A", "Ascend910ProB", "Ascend910B1", "Ascend910B2", "Ascend910B3",
                 "Ascend910B4", "Ascend910_9392", "Ascend310B1"]


def test_every_required_soc_is_listed():
    names = an.soc_versions()
    for n in REQUIRED_SOCS:
        assert n in names


@pytest.mark.parametrize("name", REQUIRED_SOCS)
def test_every_number_has_a_source(name):
    p = an.platform(name)
    for f in an.platform_fields():  # every required field, and every optional one the entry sets
        if f["name"] != "name" and (f["required"] or f["name"] in p):
            assert p["sources"].get(f["name"]), f"{name}.{f['name']} has no source"


def test_values_from_the_reference_table():
    # docs/ascend_model.md §1 ([R] platform ini files).
    b3 = an.platform("Ascend910B3")
    assert (b3["cube_cores"], b3["vector_cores"], b3["freq_mhz"], b3["mode"]) == (20, 40, 1800, "split")
    assert (b3["l0a"], b3["l0c"], b3["l1"], b3["ub"]) == (65536, 131072, 524288, 196608)
    a = an.platform("Ascend910A")
    assert (a["cube_cores"], a["mode"], a["l0c"], a["ub"]) == (32, "coupled", 262144, 262144)
    assert an.platform("Ascend310B1")["ub"] == 253952
    assert an.platform("Ascend910B4")["l2"] == 96 * 1024 * 1024


def test_platform_returns_a_copy():
    p = an.platform("Ascend910B3")
    p["cube_cores"] = 1
    assert an.platform("Ascend910B3")["cube_cores"] == 20


def test_unknown_soc_lists_valid_names():
    with pytest.raises(ValueError, match="Ascend910B3") as e:
        an.platform("Ascend999")
    assert "Ascend999" in str(e.value)
    with pytest.raises(ValueError, match="valid soc_version"):
        an.estimate("Add", [[16], [16]], "float16", "nope", {"blockDim": 1, "tileLen": 128, "bufferNum": 1})


def test_load_user_platform_overrides_and_is_used(tmp_path):
    path = tmp_path / "my_soc.json"
    path.write_text(json.dumps({"base": "Ascend910B3", "name": "MyHalfB3", "cube_cores": 10, "vector_cores": 20}))
    assert an.load_platform(str(path)) == "MyHalfB3"
    assert "MyHalfB3" in an.soc_versions()
    assert an.platform("MyHalfB3")["cube_cores"] == 10
    shape = [[2048, 2048], [2048, 2048]]
    full = an.tune_op("MatMul", shape, soc_version="Ascend910B3")
    half = an.tune_op("MatMul", shape, soc_version="MyHalfB3")
    assert half.time_us > 1.6 * full.time_us  # half the cube cores
    assert half.breakdown["cores_used"] <= 10


def test_load_platform_bad_files(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        an.load_platform(str(p))
    p.write_text(json.dumps({"name": "X"}))
    with pytest.raises(ValueError, match="missing field"):
        an.load_platform(str(p))
    p.write_text(json.dumps({"base": "Ascend910B3", "name": "Y", "cube_cores": 0}))
    with pytest.raises(ValueError, match="cube_cores"):
        an.load_platform(str(p))
    p.write_text(json.dumps({"base": "Ascend910B3"}))
    with pytest.raises(ValueError, match="built-in"):
        an.load_platform(str(p))
    p.write_text(json.dumps({"base": "Ascend910B3", "name": "Z", "cube_dtypes": ["float64"]}))
    with pytest.raises(ValueError, match="cube_dtypes"):
        an.load_platform(str(p))


def test_small_buffers_shrink_the_default_tiling_or_say_what_does_not_fit():
    small = an.Platform.from_dict({**an.platform("Ascend910B3"), "name": "small-l0c", "l0c": 32768})
    r = an.tune_op("MatMul", [[1024, 1024], [1024, 1024]], soc_version=small, max_evals=10)
    assert r.tiling["baseM"] * r.tiling["baseN"] * 4 * r.tiling["dbL0C"] <= 32768 and math.isfinite(r.time_us)
    tiny = an.Platform.from_dict({**an.platform("Ascend910B3"), "name": "tiny-l0c", "l0c": 512})
    with pytest.raises(ValueError, match="even the smallest default tiling does not fit this platform's buffers"):
        an.tune_op("MatMul", [[1024, 1024], [1024, 1024]], soc_version=tiny, max_evals=10)


def test_a_misspelled_field_in_a_platform_file_is_named(tmp_path):
    p = tmp_path / "soc.json"
    p.write_text(json.dumps({"base": "Ascend910B3", "name": "mine", "hbm_gbs": 1}))
    with pytest.raises(ValueError, match=r"unknown field 'hbm_gbs' \(did you mean 'hbm_gbps'\?\)"):
        an.load_platform(str(p))
    assert "mine" not in an.soc_versions()


def test_loading_a_user_soc_again_replaces_its_numbers_everywhere(tmp_path):
    X = [[4096, 4096], [4096, 4096]]
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"base": "Ascend910B3", "name": "qa-reload-soc"}))
    an.load_platform(str(path))
    t = an.baseline_tiling("MatMul", X, soc_version="qa-reload-soc")
    before = an.estimate("MatMul", X, "float16", "qa-reload-soc", t).time_us
    path.write_text(json.dumps({"base": "Ascend910B3", "name": "qa-reload-soc", "hbm_gbps": 100, "cube_cores": 4}))
    an.load_platform(str(path))
    r = an.tune_op("MatMul", X, soc_version="qa-reload-soc", max_evals=20)
    assert r.breakdown["cores_used"] <= 4 and r.time_us > before  # not the cached model of the first load


@pytest.mark.parametrize("field, value, message", [
    ("mte2_eff", 5, "mte2_eff 5.0 must be at most 1"),
    ("gm_sector", 48, "gm_sector 48 must be a power of two"),
    ("same_address", 0.5, "same_address 0.5 must be at least 1"),
    ("vector_cores", 7, "vector_cores 7 must be a multiple of cube_cores 20"),
])
def test_a_platform_whose_fields_contradict_each_other_is_refused(tmp_path, field, value, message):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"base": "Ascend910B3", "name": "qa-relations", field: value}))
    with pytest.raises(ValueError, match=message):
        an.load_platform(str(path))


def test_the_core_library_has_the_same_builtin_socs_as_socs_json():
    """C++ embedders get the SoCs compiled into the library (cpp/cmake/embed_socs.py): the
    same names, the same numbers as the Python table reads from the JSON file."""
    from aoe_native._core import ascend as native
    assert sorted(native.builtin_soc_versions()) == [n for n in an.soc_versions() if is_builtin(n)]
    for name in native.builtin_soc_versions():
        assert native.builtin_platform(name) == Platform.from_dict(an.platform(name), name), name
    with pytest.raises(ValueError, match="unknown SoC 'Ascend999'; valid soc_version values: Ascend910B1"):
        native.builtin_platform("Ascend999")
