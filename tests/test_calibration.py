"""aoe_native.calibrate: fitting the cost model's constants to measured records."""
import json
import math
import warnings
from pathlib import Path

import pytest

import aoe_native as an
from aoe_native.ascend import calibration
from aoe_native.ascend.platforms import native_platform

pytest.importorskip("scipy")

B3 = calibration.uncalibrated("Ascend910B3")  # the hand fits, the lacking terms off
CASE1 = dict(op="MatMul", inputs=[[4096, 4096], [4096, 5120]], dtype="float16", attrs={"out_dtype": "float32"})


def tiling(sm, sn, bm, bn, bk, step_k=1, single_l1=False, db_c=1):
    depth = step_k if single_l1 else 2 * step_k
    return dict(singleCoreM=sm, singleCoreN=sn, baseM=bm, baseN=bn, baseK=bk, stepM=1, stepN=1, stepKa=step_k,
                stepKb=step_k, depthA1=depth, depthB1=depth, dbL0A=2, dbL0B=2, dbL0C=db_c, iterateOrder=0)


# Tilings whose times depend on different constants: L2-hit re-reads (mte2_eff), 128-byte
# bursts (gm_sector), single-buffered L1 with many small copies (mte2_copy_cycles).
TILINGS = [
    tiling(1024, 1024, 64, 64, 256, db_c=2),
    tiling(2048, 2560, 64, 64, 256, db_c=2),
    tiling(1024, 1024, 128, 256, 64),
    tiling(1024, 1024, 128, 256, 64, step_k=4),
    tiling(1024, 1024, 128, 256, 64, single_l1=True),
    tiling(1024, 1024, 32, 32, 64, single_l1=True, db_c=2),
    tiling(1024, 1024, 64, 64, 32, db_c=2),
]


# Small kernels, where start costs and per-copy latencies show (§1 cases 11 and 5).
SMALL = [(dict(CASE1, inputs=[[16, 1024], [1024, 16]], attrs=None), tiling(16, 16, 16, 16, 64)),
         (dict(CASE1, inputs=[[128, 64], [64, 30720]], attrs=None), tiling(128, 1536, 128, 256, 64))]


def synthetic_records(params):
    """Records 'measured' on the model itself with the constants `params`."""
    d = B3.to_dict()
    d.update(params)
    plat = an.Platform.from_dict(d)
    recs = []
    for i, (op, t) in enumerate(SMALL + [(CASE1, t) for t in TILINGS]):
        e = an.estimate(op["op"], op["inputs"], op["dtype"], plat, t, attrs=op["attrs"])
        recs.append(dict(op, name=f"synthetic {i}", tiling=t, time_us=e.time_us,
                         pipes={"mte2_us": e.breakdown["mte2_us"]}))
    return recs


def test_recovers_the_constants_the_records_were_made_with():
    truth = {"mte2_eff": 0.65, "gm_sector": 128, "mte2_copy_cycles": 600.0}
    recs = synthetic_records(truth)
    res = an.calibrate(B3, recs[::2], held_out=recs[1::2], fit=["mte2_eff", "gm_sector", "mte2_copy_cycles"])
    assert res.params["gm_sector"] == 128
    assert res.params["mte2_eff"] == pytest.approx(0.65, rel=0.01)
    assert res.params["mte2_copy_cycles"] == pytest.approx(600, rel=0.05)
    assert res.platform.mte2_eff == pytest.approx(res.params["mte2_eff"])
    assert res.start == {"mte2_eff": 0.84, "gm_sector": 256.0, "mte2_copy_cycles": 210.0}
    # The default constants miss these records; the fitted ones reproduce them, held-out included.
    assert max(abs(r.ratio_before - 1) for r in res.rows) > 0.1
    assert res.fit_error < 0.005 and res.held_out_error < 0.01


def test_recovers_the_latency_and_scalar_terms():
    """The terms the model lacked (0 by default): HBM latency per round of copies, the scalar start."""
    truth = {"mte2_miss_cycles": 1500.0, "scalar_start_cycles": 3000.0}
    recs = synthetic_records(truth)
    res = an.calibrate(B3, recs[::2], held_out=recs[1::2])
    assert set(res.params) == set(calibration.FITTED)
    assert res.start["mte2_miss_cycles"] == res.start["scalar_start_cycles"] == 0
    assert res.params["mte2_miss_cycles"] == pytest.approx(1500, rel=0.05)
    assert res.params["scalar_start_cycles"] == pytest.approx(3000, rel=0.05)
    assert res.params["mte2_eff"] == pytest.approx(0.84, rel=0.01) and res.params["gm_sector"] == 256
    assert res.held_out_error < 0.01 < max(abs(r.ratio_before - 1) for r in res.held_out_rows)


def test_fits_a_subset_of_the_constants():
    recs = synthetic_records({"mte2_eff": 0.7})
    res = an.calibrate(B3, recs, fit=["mte2_eff"])
    assert list(res.params) == ["mte2_eff"] and res.params["mte2_eff"] == pytest.approx(0.7, rel=0.01)
    assert res.platform.gm_sector == 256 and math.isnan(res.held_out_error)
    with pytest.raises(ValueError, match="cannot fit freq_mhz"):
        an.calibrate(B3, recs, fit=["freq_mhz"])


def test_fewer_measurements_than_constants_warn_and_an_exact_record_moves_nothing():
    """One op time cannot pin four constants: many settings fit it exactly (one such record
    moved mte2_eff 0.89 -> 0.58 and the scalar start 3,523 -> 50,070 cycles), so the user is
    told.  A record the model already reproduces changes nothing, float noise included."""
    rec = synthetic_records({})[0]
    one = dict(rec, time_us=rec["time_us"] * 1.2)
    one.pop("pipes")
    with pytest.warns(an.CalibrationWarning, match="1 measured quantity for 4 constants"):
        an.calibrate(B3, [one])
    exact = dict(rec)
    exact.pop("pipes")
    with pytest.warns(an.CalibrationWarning):
        res = an.calibrate(B3, [exact])
    assert res.params == res.start
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as many quantities as constants: no warning
        an.calibrate(B3, [one], fit=["mte2_eff"])


def test_published_cases_held_out_error_and_table():
    fit, held = calibration.published_cases()
    cases = {r["case"] for r in fit}, {r["case"] for r in fit + held}
    assert 2 * len(cases[0]) <= len(cases[1])  # fitted on at most half of the cases
    assert not {r["name"] for r in fit} & {r["name"] for r in held}
    # A fitted case's held-out record is the effect of a knob without a constant (case 11's K split).
    assert {r["name"] for r in held if r["case"] in cases[0]} == {"11-after"}
    assert all(r["source"] and r["note"] for r in fit + held)
    res = an.calibrate(calibration.uncalibrated("Ascend910B1"), fit, held_out=held)
    held_rows = res.held_out_rows
    assert {r.name for r in held_rows} == {r["name"] for r in held}
    n_quantities = sum(("time_us" in r) + len(r.get("pipes", {})) for r in held)
    assert len(held_rows) == n_quantities
    assert res.held_out_error == pytest.approx(sum(abs(r.model / r.published - 1) for r in held_rows) / len(held_rows))
    table = res.table()
    assert "held-out" in table and "1a-before" in table and "params: mte2_eff 0.84 ->" in table
    # The fitted constants reproduce the fitted cases better than the defaults do, and
    # they are what socs.json ships for the A2 parts.
    assert res.fit_error < _before(res.fitted_rows)
    shipped = an.platform("Ascend910B1")
    for k, v in res.params.items():
        assert v == pytest.approx(shipped.get(k, getattr(res.platform, k)), rel=0.01), k


def _before(rows):
    return sum(abs(r.ratio_before - 1) for r in rows) / len(rows)


def test_saved_platform_round_trips_through_load_platform(tmp_path):
    recs = synthetic_records({"mte2_eff": 0.7, "mte2_copy_cycles": 400.0})
    res = an.calibrate(B3, recs, fit=["mte2_eff", "mte2_copy_cycles"])
    path = tmp_path / "calibrated.json"
    name = res.save(str(path), name="Ascend910B3-test-cal")
    assert an.load_platform(str(path)) == name == "Ascend910B3-test-cal"
    loaded = native_platform(name)
    expect = res.platform.to_dict()
    expect["name"] = name
    assert loaded.to_dict() == expect
    assert "fitted on" in json.loads(path.read_text())["sources"]["mte2_eff"]
    r = recs[2]
    assert an.estimate(r["op"], r["inputs"], r["dtype"], name, r["tiling"], attrs=r["attrs"]).time_us == \
        pytest.approx(r["time_us"], rel=0.02)


def test_field_defaults_are_the_hand_fitted_model_and_a2_ships_the_fit():
    p = an.Platform.from_dict({k: v for k, v in an.platform("Ascend910B3").items() if k not in calibration.FITTABLE})
    assert p == calibration.uncalibrated("Ascend910B3")
    assert (p.mte2_eff, p.gm_sector, p.mte2_copy_cycles) == (0.84, 256, 210.0)
    assert p.mte2_miss_cycles == p.scalar_start_cycles == p.scalar_block_cycles == 0
    assert native_platform("Ascend910A") == calibration.uncalibrated("Ascend910A")  # no measured case: not fitted
    a2 = an.platform("Ascend910B1")
    assert a2["mte2_miss_cycles"] > 0 and a2["sources"]["mte2_miss_cycles"].startswith("[F]")
    d = p.to_dict()
    with pytest.raises(ValueError, match="'mte2_eff' must be a positive number"):
        an.Platform.from_dict({**d, "mte2_eff": 0})
    with pytest.raises(ValueError, match="'gm_sector' must be a positive integer"):
        an.Platform.from_dict({**d, "gm_sector": -256})


@pytest.mark.parametrize("change, message", [
    ({"op": "MatMool"}, "unknown op 'MatMool'"),
    ({"tiling": tiling(1024, 1024, 256, 256, 256)}, "impossible"),  # L0A overflow
    ({"tiling": {"singleCoreM": 1024}}, "missing singleCoreN"),
    ({"time_us": 0}, "time_us must be a positive number"),
    ({"time_us": -3.0}, "time_us must be a positive number"),
    ({"pipes": {"mte2_us": float("nan")}}, "pipe mte2_us must be a positive number"),
    ({"pipes": {"scalar_us": 1.0}}, "unknown pipe 'scalar_us'"),
    ({"time_us": None, "pipes": {}}, "no measured time"),
    ({"colour": "red"}, "unknown key"),
    ({"soc_version": "Ascend999"}, "unknown SoC 'Ascend999'"),
])
def test_bad_records_name_the_record(change, message):
    good = synthetic_records({})
    bad = {**good[1], **change, "name": "the bad one"}
    with pytest.raises(ValueError, match=message) as e:
        an.calibrate(B3, [good[0], bad])
    assert "measurement 1 (the bad one)" in str(e.value)
    with pytest.raises(ValueError, match="held-out measurement 0 \\(the bad one\\)"):
        an.calibrate(B3, good[:1], held_out=[bad])


def test_contradictions_name_the_published_pairs_no_model_fits_together():
    fit, held = calibration.published_cases()
    found = calibration.contradictions(fit + held, tolerance=0.2)
    # Cases 8 and 9 take over 3x as long as cases 5 and 10 with at most 1.23x their work
    # per core in every pipe, copy and block count, and fewer GM bytes over the chip.
    assert {(c.slow, c.fast) for c in found} == {(s, f) for s in ("8-before", "9-before", "9-after")
                                                 for f in ("5-before", "10-after")}
    for c in found:
        assert 1.0 <= c.work_ratio <= 1.25 and c.time_ratio > 3.0
    # A record does not contradict itself at a time within the tolerance's reach, and
    # does at a time beyond it; records of another operator kind are not compared.
    five = next(r for r in fit if r["name"] == "5-before")
    near = dict(five, name="near", time_us=five["time_us"] * 1.45)
    far = dict(five, name="far", time_us=five["time_us"] * 1.55)
    assert calibration.contradictions([five, near]) == []
    assert [(c.slow, c.fast) for c in calibration.contradictions([five, far])] == [("far", "5-before")]
    add = {"op": "Add", "inputs": [[4096], [4096]], "dtype": "float16", "tiling": None, "time_us": 100.0}
    assert calibration.contradictions([five, add]) == []


def test_fit_given_as_a_string_is_a_type_error():
    with pytest.raises(TypeError, match=r"fit must be a list of constant names, got the string 'mte2_eff'"):
        an.calibrate(B3, synthetic_records({"mte2_eff": 0.65}), fit="mte2_eff")


@pytest.mark.parametrize("tolerance", [1, 1.5, -0.1, float("nan"), "0.2"])
def test_contradictions_refuses_a_tolerance_outside_0_1(tolerance):
    from aoe_native.ascend.calibration import contradictions
    with pytest.raises(ValueError, match="tolerance must be a relative error in"):
        contradictions([], tolerance=tolerance)


# ---- CANN's measured kernels (calibrate_measured) ----------------------------------------------

def _sigmoid(rid, case, shape, dtype, t):
    return {"id": rid, "op": "Sigmoid", "family": "elementwise", "soc": "Ascend910B2", "inputs": [shape],
            "dtype": [dtype], "attrs": {}, "time_us": t, "single_kernel": True,
            "source_where": f"tasks/metadata/910b2.json -> level1/sigmoid case {case}"}


# cann_bench_calibration.json M0017-M0023 (Sigmoid on 910B2): cases 4 and 8 fit, 2 and 6 held out.
SIGMOIDS = [_sigmoid("M0017", 2, [2048, 2048], "float32", 18.14), _sigmoid("M0019", 4, [8192, 8192], "float16", 142.2),
            _sigmoid("M0021", 6, [1023, 1023], "bfloat16", 5.38), _sigmoid("M0023", 8, [1537, 769], "float32", 6.6)]


def test_calibrate_measured_fits_on_the_case_id_half_and_reports_the_other():
    cals = calibration.calibrate_measured(SIGMOIDS, fit=["vec_cost_scale"],
                                          candidates={"Ascend910B2": ["Ascend910B2"]})
    cal = cals["Ascend910B2"]
    assert sorted(r.name for r in cal.fitted_rows) == ["M0019", "M0023"]
    assert sorted(r.name for r in cal.held_out_rows) == ["M0017", "M0021"]
    lo, hi = calibration.BOUNDS["vec_cost_scale"]
    assert lo <= cal.params["vec_cost_scale"] <= hi
    assert sum(math.log(r.ratio) ** 2 for r in cal.fitted_rows) <= \
        sum(math.log(r.ratio_before) ** 2 for r in cal.fitted_rows) * (1 + 1e-9)
    again = calibration.calibrate_measured(SIGMOIDS, fit=["vec_cost_scale"],
                                           candidates={"Ascend910B2": ["Ascend910B2"]})["Ascend910B2"]
    assert again.params == cal.params  # deterministic


def test_calibrate_measured_takes_another_split_for_an_inner_check():
    # bench_measured.py --inner: fit on part of the fit half, predict the rest (held out too)
    cal = calibration.calibrate_measured(SIGMOIDS, fit=["vec_cost_scale"], candidates={"Ascend910B2": ["Ascend910B2"]},
                                         fit_half=lambda r: r["id"] in ("M0017", "M0023"))["Ascend910B2"]
    assert sorted(r.name for r in cal.fitted_rows) == ["M0017", "M0023"]
    assert sorted(r.name for r in cal.held_out_rows) == ["M0019", "M0021"]


def test_fitted_vector_constants_stay_physical():
    for soc in ("Ascend910B2", "Ascend950PR"):
        p = native_platform(soc)
        for k in calibration.VECTOR_FITTED:
            lo, hi = calibration.BOUNDS[k]
            assert lo <= getattr(p, k) <= hi, (soc, k, getattr(p, k))
            assert an.platform(soc)["sources"][k].startswith("[F]"), (soc, k)
        # The per-operator factors are shipped with their source, within their bounds.
        assert p.vec_op_costs and an.platform(soc)["sources"]["vec_op_costs"].startswith("[F]")
        for e in p.vec_op_costs:
            lo, hi = calibration.OP_COST_BOUNDS
            assert lo <= float(e.split("=")[1]) <= hi, (soc, e)
    with pytest.raises(ValueError, match="vec_rate_share 1.5 must be at most 1"):
        an.Platform.from_dict({**native_platform("Ascend910B2").to_dict(), "vec_rate_share": 1.5}, "test")


def test_calibrate_measured_on_a_sample_of_the_file(measured):
    recs = measured
    sample = [r for r in recs if r["op"] in ("Sigmoid", "Maximum") and r["soc"] == "Ascend950PR"][:12]
    cal = calibration.calibrate_measured(sample, candidates={"Ascend950PR": ["Ascend950PR"]})["Ascend950PR"]
    assert cal.fitted_rows and cal.held_out_rows
    # The objective (squared log ratios) does not rise from the shipped constants, its start.
    cost = sum(math.log(r.ratio) ** 2 for r in cal.fitted_rows)
    assert cost <= sum(math.log(r.ratio_before) ** 2 for r in cal.fitted_rows) * (1 + 1e-9)
    for k, v in cal.params.items():
        assert calibration.bounds_of(k)[0] <= v <= calibration.bounds_of(k)[1]
    # Each operator kind of the fitted records has its factor.
    assert {calibration.op_cost_name("Sigmoid"), calibration.op_cost_name("Max")} <= set(cal.params)


def _with_costs(soc, costs):
    return an.Platform.from_dict({**native_platform(soc).to_dict(), "vec_op_costs": costs}, "test")


def test_vec_op_costs_scale_one_operator_and_dtype():
    def t(op, dtype, costs):
        plat = _with_costs("Ascend910B2", costs)
        tiling = an.baseline_tiling(op, [[2048, 2048]], dtype, plat)
        return an.estimate(op, [[2048, 2048]], dtype, plat, tiling).time_us

    none = t("Mish", "float32", [])
    assert t("Mish", "float32", ["Mish=3"]) > 1.5 * none  # Mish is compute-bound: its factor shows
    assert t("Mish", "float32", ["Mish:float16=3"]) == none  # another dtype's factor does not apply
    assert t("Mish", "float32", ["Mish=3", "Mish:float32=0.5"]) == pytest.approx(t("Mish", "float32", ["Mish=1.5"]))
    assert t("Sigmoid", "float32", ["Mish=3"]) == t("Sigmoid", "float32", [])


@pytest.mark.parametrize("entry", ["Mish", "Mish=", "Mish=0", "Mish=-1", "=2", "Mish=2x", "Mish=nan"])
def test_a_bad_vec_op_costs_entry_is_refused_by_name(entry):
    with pytest.raises(ValueError, match=f"vec_op_costs entry '{entry}' must be"):
        _with_costs("Ascend910B2", [entry])


@pytest.mark.parametrize("shape, perm, same_shape, same_perm", [
    ([3, 7, 13, 4001], [0, 3, 1, 2], [3, 91, 4001], [0, 2, 1]),  # axes 1, 2 stay adjacent: one axis
    ([1, 64, 1, 128], [2, 0, 3, 1], [64, 128], [1, 0]),          # axes of 1 hold no data
])
def test_a_transpose_is_modelled_on_its_merged_axes(shape, perm, same_shape, same_perm):
    def t(s, p):
        tiling = an.baseline_tiling("Transpose", [s], "float32", "Ascend950PR", {"perm": p})
        return an.estimate("Transpose", [s], "float32", "Ascend950PR", tiling, {"perm": p}).time_us

    assert t(shape, perm) == pytest.approx(t(same_shape, same_perm))


def _record(rid, op, inputs, dtypes, attrs, soc="Ascend950PR"):
    return {"id": rid, "op": op, "inputs": inputs, "dtype": dtypes, "attrs": attrs, "soc": soc, "time_us": 10.0,
            "single_kernel": True, "source_where": "test case 2"}


@pytest.mark.parametrize("record", [
    _record("T16", "Transpose", [[2, 9, 256, 256]], ["int16"], {"perm": [0, 2, 3, 1]}),
    _record("T64", "Transpose", [[3, 7, 11, 13, 1013]], ["int64"], {"perm": [4, 3, 2, 1, 0]}, "Ascend910B2"),
    _record("M32", "Maximum", [[8192, 8192], [8192, 8192]], ["int32", "int32"], {}),
    _record("M8", "Maximum", [[8192, 16384], [8192, 16384]], ["int8", "int8"], {}, "Ascend910B2"),
    _record("S32", "StridedSlice", [[363, 367, 373]], ["int32"], {"begin": [0, 0, 0], "end": [100, 100, 100],
                                                                  "strides": [1, 1, 1]}),
])
def test_integer_records_are_modelled(record):
    from aoe_native.ascend import records

    est = records.predict_record(record)
    assert 0 < est.time_us < 10_000
    # An int64 element is two int32 lanes: more work than int32 of the same shape.
    if record["dtype"][0] == "int64":
        as32 = records.predict_record({**record, "dtype": ["int32"]})
        assert est.time_us > as32.time_us


def test_write_fitted_ships_the_constants_with_their_source(tmp_path):
    socs = tmp_path / "socs.json"
    socs.write_text((Path(an.__file__).parent / "data" / "socs.json").read_text(encoding="utf-8"), encoding="utf-8")
    cal = calibration.calibrate_measured(SIGMOIDS, fit=["vec_cost_scale"], candidates={"Ascend910B2": ["Ascend910B2"]},
                                         per_op="kind")
    assert calibration.write_fitted(cal, str(socs)) == ["Ascend910B2"]
    entry = json.loads(socs.read_text(encoding="utf-8"))["socs"]["Ascend910B2"]
    c = cal["Ascend910B2"]
    assert entry["vec_cost_scale"] == round(c.params["vec_cost_scale"], 4)
    assert "case id % 4 == 0" in entry["sources"]["vec_cost_scale"]
    sig = c.params[calibration.op_cost_name("Sigmoid")]
    if abs(sig - 1) > 5e-4:
        assert entry["vec_op_costs"] == [f"Sigmoid={sig:.4g}"] and entry["sources"]["vec_op_costs"].startswith("[F]")
    # The written entry is a platform the model reads.
    an.Platform.from_dict({k: v for k, v in entry.items() if k not in ("sources", "notes")}, "written entry")


def _softmax_time(soc_fields, shape, axis):
    plat = an.Platform.from_dict({**native_platform("Ascend950PR").to_dict(), **soc_fields}, "test")
    attrs = {"axis": axis}
    tiling = an.baseline_tiling("Softmax", [shape], "float16", plat, attrs)
    return an.estimate("Softmax", [shape], "float16", plat, tiling, attrs).time_us


def test_vec_row_cycles_charge_each_row_of_a_row_wise_kernel():
    # 8192 rows of 1024 on 64 cores: 128 rows each, two reductions per row.
    base = _softmax_time({"vec_row_cycles": 0.0}, [8192, 1024], -1)
    more = _softmax_time({"vec_row_cycles": 1000.0}, [8192, 1024], -1)
    assert more > base + 0.9 * 128 * 2 * 1000 / 1650  # at least (nearly) the waits of the critical core
    # A reduction over the first axis has no per-row reduce: the field does not apply.
    assert _softmax_time({"vec_row_cycles": 1000.0}, [8192, 1024], 0) == _softmax_time({}, [8192, 1024], 0)


def test_vec_reread_l2_speeds_up_rows_swept_more_than_once():
    # Softmax over dim 0 of [8192, 8192]: the column blocks do not fit a tile and are swept 3 times.
    slow = _softmax_time({"vec_reread_l2": 0.0}, [8192, 8192], 0)
    fast = _softmax_time({"vec_reread_l2": 1.0}, [8192, 8192], 0)
    assert fast < 0.9 * slow
    # A row that fits one tile is read once: nothing to speed up.
    assert _softmax_time({"vec_reread_l2": 1.0}, [8192, 1024], -1) == _softmax_time({"vec_reread_l2": 0.0}, [8192, 1024], -1)


def test_calibrate_measured_fits_the_optimizer_kernels_factors_per_soc_after_the_chip(measured):
    recs = measured
    sig = [r for r in recs if r["op"] == "Sigmoid" and r["soc"] == "Ascend910B2"]
    adam = [r for r in recs if r["op"] == "ApplyAdamW" and r["soc"] == "Ascend910B2"]
    cand = {"Ascend910B2": ["Ascend910B2"]}
    fit = ["vec_cost_scale"]
    alone = calibration.calibrate_measured(sig, fit=fit, candidates=cand)["Ascend910B2"]
    both = calibration.calibrate_measured(sig + adam, fit=fit, candidates=cand)["Ascend910B2"]
    # The chip-wide constants are the generic kernels' alone; ApplyAdamW gets its own factor.
    assert both.params["vec_cost_scale"] == alone.params["vec_cost_scale"]
    k = calibration.op_cost_name("ApplyAdamW")
    assert k in both.params and k not in alone.params
    lo, hi = calibration.OP_COST_BOUNDS
    assert lo <= both.params[k] <= hi and any(e.startswith("ApplyAdamW=") for e in both.platform.vec_op_costs)
    rows = [r for r in both.fitted_rows if r.name in {x["id"] for x in adam}]
    assert rows and sum(math.log(r.ratio) ** 2 for r in rows) < sum(math.log(r.ratio_before) ** 2 for r in rows)
