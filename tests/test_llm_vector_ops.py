"""The LLM vector kernels (cpp/src/ascend/norm_quant.cpp): RmsNorm, AddRmsNorm, AddRmsNormDynamicQuant,
GroupNorm(Silu), DynamicQuant, DequantSwigluQuant, SwiGlu, ApplyRotaryPosEmb; their record translations
and their accuracy on the held-out half of CANN's measured kernels."""
import math
import statistics
from collections import defaultdict

import pytest

import aoe_native as an
from aoe_native.ascend import ops, records

SOCS = ("Ascend910B2", "Ascend950PR")

# op -> (inputs with T tokens, dtype, attrs); T is scaled by the tests.
def cases(t: int = 1024) -> dict[str, tuple[list, str, dict]]:
    h = 4096
    return {
        "RmsNorm": ([[t, h], [h]], "bfloat16", {}),
        "AddRmsNorm": ([[t, h], [t, h], [h]], "bfloat16", {}),
        "AddRmsNormDynamicQuant": ([[t, h], [t, h], [h], [h]], "bfloat16", {}),
        "GroupNorm": ([[t // 64, 320, 32, 32], [320], [320]], "float16", {"num_groups": 32}),
        "GroupNormSilu": ([[t // 64, 320, 32, 32], [320], [320]], "float16", {"num_groups": 32}),
        "DynamicQuant": ([[t, h], [h]], "float16", {"output_dtype": "int8"}),
        "DequantSwigluQuant": ([[t, 2 * h], [1, 2 * h], [t], [1, h]], "int32",
                               {"input_dtypes": ["int32", "float32", "float32", "float32"]}),
        "SwiGlu": ([[t, 2 * h]], "bfloat16", {"dim": -1}),
        "ApplyRotaryPosEmb": ([[1, t, 32, 128], [1, t, 8, 128], [1, t, 1, 128], [1, t, 1, 128]], "bfloat16",
                              {"input_layout": "BSND", "rotary_mode": "half"}),
    }


def est(op, inputs, dtype, soc, attrs):
    return an.estimate(op, inputs, dtype, soc, an.baseline_tiling(op, inputs, dtype, soc, attrs), attrs)


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("op", sorted(cases()))
def test_each_op_estimates_and_more_tokens_cost_more(op, soc):
    small, big = cases(1024)[op], cases(4096)[op]
    a, b = est(op, *small[:2], soc, small[2]), est(op, *big[:2], soc, big[2])
    assert 0 < a.time_us < b.time_us
    # 4x the tokens of a memory-bound kernel: between 2x and 5x the time (start costs stay).
    assert 2 * a.time_us < b.time_us < 5 * a.time_us
    assert b.breakdown["gm_read_bytes"] > 3.5 * a.breakdown["gm_read_bytes"]


@pytest.mark.parametrize("op", sorted(cases()))
def test_tiling_space_holds_the_approximate_cann_default(op):
    inputs, dtype, attrs = cases()[op]
    space = an.tiling_space(op, inputs, dtype, "Ascend910B2", attrs)
    base = an.baseline_tiling(op, inputs, dtype, "Ascend910B2", attrs)
    assert len(space) > 1 and set(base) == set(space.param_names)
    for name, values in zip(space.param_names, space.param_values):
        assert base[name] in values, name
    assert ops.baseline_kind(op, inputs, dtype, "Ascend910B2", attrs) == "approximate CANN default"
    # Tuning searches the space and never ends worse than the default.
    r = an.tune_op(op, inputs, dtype, "Ascend910B2", attrs=attrs, max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9) and r.baseline_us == est(op, inputs, dtype, "Ascend910B2", attrs).time_us


def test_rms_norm_tiling_follows_cann():
    # ceil(rows / cores) rows per core on every core; MODE_NORMAL (a row up to the 12288-element UB
    # factor) one row a pass through single-buffered queues, a row wider than that split
    # (rms_norm_tiling.cpp, rms_norm.h).
    base = an.baseline_tiling("RmsNorm", [[4096, 4096], [4096]], "bfloat16", "Ascend910B2")
    assert base == {"blockDim": 48, "tileLen": 4096, "bufferNum": 1}
    wide = an.baseline_tiling("RmsNorm", [[64, 16384], [16384]], "bfloat16", "Ascend910B2")
    assert wide["tileLen"] < 16384
    # AddRmsNorm's 910B tiling has modes of its own: it keeps the UB-factor pass.
    add = an.baseline_tiling("AddRmsNorm", [[4096, 4096], [4096, 4096], [4096]], "bfloat16", "Ascend910B2")
    assert 4096 < add["tileLen"] <= 12288 and add["bufferNum"] == 2


def test_rms_norm_on_910b_loads_computes_and_stores_a_row_in_turn():
    # Single-buffered: the time per row is the load plus the vector work (the store beside the next
    # load), so a core's rows cost more than the slower of the two and the search's double
    # buffering (bufferNum 2) beats CANN's default.
    inputs = [[4096, 4096], [4096]]
    base = an.baseline_tiling("RmsNorm", inputs, "bfloat16", "Ascend910B2")
    b = an.estimate("RmsNorm", inputs, "bfloat16", "Ascend910B2", base).breakdown
    assert b["time_us"] > b["head_us"] + max(b["mte2_us"], b["vector_us"]) + 0.5 * min(b["mte2_us"], b["vector_us"])
    db = an.estimate("RmsNorm", inputs, "bfloat16", "Ascend910B2", {**base, "bufferNum": 2}).time_us
    assert db < b["time_us"]


def test_rms_norm_split_d_loads_gamma_a_slice_per_64_rows():
    # 910B's SPLIT_D kernel (rms_norm_split_d.h) keeps no whole gamma in UB: it loads gamma's slice
    # (CopyInGamma) once per slice for each group of 64 rows, so UB takes CANN's slice whatever the
    # row's length (rms_norm_tiling.cpp: 65536 fp16 in ceil(65536 / 12288) = 6 slices of 10928) ...
    def base(x, dt):
        return an.baseline_tiling("RmsNorm", [x, [x[-1]]], dt, "Ascend910B2")

    assert base([48, 65536], "float16")["tileLen"] == 10928
    # ... a float32 x and gamma of 256 KB, more than UB, included (10240 a pass: 7 slices),
    assert base([48, 65536], "float32")["tileLen"] == 9376  # 7 slices: ceil(65536 / (7 x 16)) x 16
    assert an.estimate("RmsNorm", [[48, 65536], [65536]], "float32", "Ascend910B2", base([48, 65536], "float32")).time_us > 0

    # ... and a core reads gamma again for every 64 of its rows, beside x twice (two sweeps).
    def gm_read(rows, h=16384):
        x = [rows, h]
        return an.estimate("RmsNorm", [x, [h]], "float16", "Ascend910B2", base(x, "float16")).breakdown["gm_read_bytes"]

    for per_core in (64, 128, 130):
        rows = 48 * per_core
        assert gm_read(rows) == pytest.approx(2 * rows * 16384 * 2 + 48 * -(-per_core // 64) * 16384 * 2)
    r = an.tune_op("RmsNorm", [[4096, 24576], [24576]], "bfloat16", "Ascend910B2", max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)


def _cann_rms_norm_910b(rows, h, ds, mixed):
    """(blockDim, UB pass) of ops-nn rms_norm_tiling.cpp on 910B (Tiling4RmsNorm, CalMixDtypeTiling),
    the pass of MODE_NORMAL and SINGLE_ROW being one row, as the kernels take them."""
    ub, cores = 196608 - 1024, 48
    bd = -(-rows // -(-rows // cores))
    if mixed:
        n = -(-h // 16) * 16
        if n <= 2000:
            return bd, ub // (16 * n + 288) * n
        return bd, n if 14 * n + 512 < ub else (ub - 2560) // 16 // 16 * 16
    n = -(-h // (32 // ds)) * (32 // ds)
    factor = 10240 if ds == 4 else 12288
    if n <= 2000:
        return bd, ub // (16 * n + 260) * n
    if n <= factor:
        return bd, n
    piece = -(-h // (-(-h // factor) * 16)) * 16
    while h % piece and h % piece < 16:
        piece -= 16
    return bd, piece


def test_rms_norm_910b_default_tiling_is_canns_on_a_grid():
    # Mode (MERGE_N, NORMAL, SINGLE_ROW, SPLIT_D), its UB pass and the core split, with and without a
    # float32 gamma, from one row to thousands and H from 64 to 100000 (gamma past UB included).
    for dt, ds in (("float16", 2), ("bfloat16", 2), ("float32", 4)):
        for mixed in (False, True) if ds == 2 else (False,):
            attrs = {"input_dtypes": [dt, "float32"]} if mixed else {}
            for rows in (1, 50, 4097):
                for h in (64, 2000, 2001, 10241, 12288, 12289, 13000, 13700, 24577, 65536, 100000):
                    t = an.baseline_tiling("RmsNorm", [[rows, h], [h]], dt, "Ascend910B2", attrs)
                    bd, tile = _cann_rms_norm_910b(rows, h, ds, mixed)
                    assert (t["blockDim"], t["tileLen"], t["bufferNum"]) == (bd, tile, 1), (dt, mixed, rows, h)


def test_rms_norm_910b_normalises_over_all_of_gammas_dimensions():
    # A gamma of several dimensions is x's last ones: the row is all of them (rms_norm_tiling.cpp
    # Tiling4RmsNorm: numCol = gamma's size, numRow = x's leading dimensions), which sets the mode,
    # the core split and the UB pass as for the same rows under a 1-D gamma.
    for dt, ds in (("float16", 2), ("bfloat16", 2), ("float32", 4)):
        for mixed in (False, True) if ds == 2 else (False,):
            attrs = {"input_dtypes": [dt, "float32"]} if mixed else {}
            for lead in ([1], [47], [48], [49], [4, 1025]):
                for gamma in ([2, 8], [2, 50], [4, 250], [3, 4096], [2, 12289], [8, 8192]):
                    rows, h = math.prod(lead), math.prod(gamma)
                    x = lead + gamma
                    t = an.baseline_tiling("RmsNorm", [x, gamma], dt, "Ascend910B2", attrs)
                    bd, tile = _cann_rms_norm_910b(rows, h, ds, mixed)
                    assert (t["blockDim"], t["tileLen"], t["bufferNum"]) == (bd, tile, 1), (dt, mixed, x, gamma)
                    # (4-D x: no isPerformance path, which takes a 1-D gamma only, for either)
                    flat = an.estimate("RmsNorm", [[rows, 1, 1, h], [h]], dt, "Ascend910B2", t, attrs).time_us
                    assert an.estimate("RmsNorm", [x, gamma], dt, "Ascend910B2", t, attrs).time_us == pytest.approx(flat)


def test_add_rms_norm_split_d_reads_back_its_sum_and_loads_gamma_in_slices():
    # AddRmsNorm's 910B SPLIT_D (add_rms_norm_tiling.cpp: H over 12288 16-bit / 10240 fp32 elements):
    # slices of ceil(H / (ceil(H / cutD) x block)) blocks, cutD 12096 / 9696; ceil(rows / cores) rows
    # a core; single-buffered queues (add_rms_norm_base.h BUFFER_NUM 1).
    def base(x, dt):
        return an.baseline_tiling("AddRmsNorm", [x, x, [x[-1]]], dt, "Ascend910B2")

    assert base([1024, 32768], "bfloat16") == {"blockDim": 47, "tileLen": 10928, "bufferNum": 1}
    assert base([48, 65536], "float32")["tileLen"] == 9368  # 7 slices; gamma no longer held whole in UB
    assert base([1024, 12288], "bfloat16")["bufferNum"] == 2  # not split: the UB-factor pass

    # add_rms_norm_split_d.h: sweep 1 reads x1 and x2 and stores x = x1 + x2, sweep 2 reads x back
    # (not x1 and x2 again); gamma comes a slice per 64-row group.
    def gm_read(rows, h=16384):
        x = [rows, h]
        return an.estimate("AddRmsNorm", [x, x, [h]], "float32", "Ascend910B2", base(x, "float32")).breakdown[
            "gm_read_bytes"]

    for per_core in (64, 130):
        rows = 48 * per_core
        assert gm_read(rows) == pytest.approx(3 * rows * 16384 * 4 + 48 * -(-per_core // 64) * 16384 * 4)
    r = an.tune_op("AddRmsNorm", [[1024, 16384], [1024, 16384], [16384]], "bfloat16", "Ascend910B2", max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)


def test_rms_norm_merge_n_performance_path_pays_a_barrier_per_column_block():
    # 910B's MERGE_N kernel takes isPerformance for 16-bit 2-D x of at most 512 rows (3-D: 512 x 8):
    # x * rstd and * gamma as one Mul per 64-column block, each behind a PipeBarrier
    # (rms_norm_tiling.cpp, rms_norm_merge_n.h mulRepeat).  The same rows as [1, 512, H] (second
    # dimension over 8) take the BroadCast path; fp32 and the 950 generation have no such path.
    def vec(shape, dtype="float16", soc="Ascend910B2"):
        inputs = [shape, [shape[-1]]]
        return an.estimate("RmsNorm", inputs, dtype, soc, an.baseline_tiling("RmsNorm", inputs, dtype, soc)).breakdown[
            "vector_us"]

    assert vec([512, 1024]) > 1.3 * vec([1, 512, 1024])
    assert vec([512, 1024], "bfloat16") > 1.3 * vec([1, 512, 1024], "bfloat16")
    # More 64-column blocks, more dependent calls: the gap grows with H.
    assert vec([512, 2000]) - vec([1, 512, 2000]) > vec([512, 512]) - vec([1, 512, 512]) > 0
    assert vec([512, 1024], "float32") == pytest.approx(vec([1, 512, 1024], "float32"))
    assert vec([513, 1024]) == pytest.approx(vec([1, 513, 1024]))
    assert vec([512, 1024], soc="Ascend950PR") == pytest.approx(vec([1, 512, 1024], soc="Ascend950PR"))


def test_rms_norm_merge_n_pass_reduces_its_rows_a_column_block_at_a_time():
    # 910B MERGE_N: each pass's ReduceSumMultiN adds its rows one 64-column block at a time, an Add
    # call and a PipeBarrier per block, then the pass's rstd chain (reduce_common.h, rms_norm_merge_n.h):
    # one more pass over the same rows costs more the more blocks a row has.
    def extra_pass_us(h):
        inputs = [[48 * 6, h], [h]]
        base = an.baseline_tiling("RmsNorm", inputs, "float32", "Ascend910B2")

        def vec(rows_a_pass):
            tiling = {**base, "tileLen": rows_a_pass * h}
            return an.estimate("RmsNorm", inputs, "float32", "Ascend910B2", tiling).breakdown["vector_us"]

        return vec(3) - vec(6)

    assert extra_pass_us(1984) > 2.5 * extra_pass_us(128) > 0


def test_add_rms_norm_dynamic_quant_slice_d_goes_through_its_workspace():
    # 910B: a bf16 row of 14336 fits neither NORMAL nor SINGLE_ROW: SLICE_D's three passes move x1 + x2
    # and the normalised row through a per-core fp32 workspace (cut_d_kernel.h): 22 bytes an element
    # in (3 x 2 + 8 + 8) against 4 for a whole row's x1 and x2.
    def read_per_elem(h):
        x = [96, h]
        b = est("AddRmsNormDynamicQuant", [x, x, [h]], "bfloat16", "Ascend910B2", {}).breakdown
        return b["gm_read_bytes"] / (96 * h)
    assert 21 < read_per_elem(14336) < 24  # (+ gamma, read once a core)
    assert read_per_elem(8192) < 6


def test_add_rms_norm_dynamic_quant_slice_d_loads_gamma_and_smooth_scales_per_row():
    # cut_d_kernel.h loads gamma's and the smooth scales' slices for every row (CopyInGamma, CopyInSmooth,
    # through inRowsQue): none is held whole in UB, so two smooth scales of 32768 bf16 fit (they did not,
    # held), and every row reads them: 2 ds + 8 + 8 q workspace bytes an element and ds (1 + q) for them.
    h = 32768
    for q in (0, 2):
        x = [96, h]
        b = est("AddRmsNormDynamicQuant", [x, x, [h]] + [[h]] * q, "bfloat16", "Ascend910B2", {}).breakdown
        assert b["gm_read_bytes"] == pytest.approx(96 * h * (2 * 2 + 8 + 8 * max(1, q) + 2 * (1 + q)))


def test_dynamic_quant_fills_ub_before_taking_cores():
    # dynamic_quant_tiling.cpp: the multi-row template takes one core per full UB pass (64 rows of
    # 1024 fp16, 15 a pass: 4 cores); SetSpecialTilingForDs passes 16384 / H rows and spreads the
    # passes (128 rows of 4096: 32 passes, 32 cores); enough rows use every core.
    def base(x):
        return an.baseline_tiling("DynamicQuant", [x], "float16", "Ascend910B2", {"output_dtype": "int8"})
    assert base([64, 1024])["blockDim"] == 4
    assert base([128, 4096])["blockDim"] == 32
    assert base([8192, 8192])["blockDim"] == 48
    # The special template's cores take whole passes (6 rows of 4096: 4 + 2); tuning still never loses.
    r = an.tune_op("DynamicQuant", [[6, 4096]], "float16", "Ascend910B2", attrs={"output_dtype": "int8"},
                   max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)
    r = an.tune_op("DynamicQuant", [[64, 1024]], "float16", "Ascend910B2", attrs={"output_dtype": "int8"},
                   max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)


def test_dynamic_quant_910b_one_row_template_pays_its_row_chain():
    # dynamic_quant_db.h (910B, H not a multiple of 8): per row a chain of barriered vector calls and
    # an in-place Max over the row's repeats; float16 without smooth scales takes the abs-max on x
    # itself (128 a repeat), bfloat16 on its fp32 cast (64 a repeat), so bf16 pays the longer chain.
    def est(x, dtype, smooth=False):
        ins = [x, [x[-1]]] if smooth else [x]
        t = an.baseline_tiling("DynamicQuant", ins, dtype, "Ascend910B2", {"output_dtype": "int8"})
        return an.estimate("DynamicQuant", ins, dtype, "Ascend910B2", t, {"output_dtype": "int8"}).time_us
    assert est([480, 4001], "float16") < 0.9 * est([480, 4001], "bfloat16")
    # The chain grows with the row: 4x the row at equal rows, more than 1.5x the time (head included).
    assert est([480, 4001], "bfloat16") > 1.5 * est([480, 1001], "bfloat16")
    r = an.tune_op("DynamicQuant", [[480, 4001]], "bfloat16", "Ascend910B2", attrs={"output_dtype": "int8"},
                   max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)


def test_add_rms_norm_dynamic_quant_910b_passes_at_most_16_rows():
    # add_rms_norm_dynamic_quant_tiling.cpp (arch22) has no MERGE_N: NORMAL passes at most 16 rows.
    h = 128
    base = an.baseline_tiling("AddRmsNormDynamicQuant", [[4096, h], [4096, h], [h]], "bfloat16", "Ascend910B2")
    assert 1 <= base["tileLen"] // h <= 16


def test_dequant_swiglu_quant_950_passes_whole_rows():
    # dequant_swiglu_quant_tiling_arch35.cpp: H <= 5120 takes ubFactorDimx whole rows a UB pass (43 rows
    # of 256 here; 27 as far as the model's double-buffered UB holds them; the generic tile held 16).
    h = 256
    base = an.baseline_tiling("DequantSwigluQuant", [[16384, 2 * h], [1, 2 * h], [16384]], "int32",
                              "Ascend950PR", {"quant_mode": "dynamic"})
    assert 20 <= base["tileLen"] // h <= 43


def test_dequant_swiglu_quant_910b_takes_cann_base_tiling():
    # dequant_swiglu_quant_tiling_base.cpp (910B): UB / 25 bytes = 7840 outputs a pass for dynamic 16-bit x,
    # whole rows of H = 2048 (3 of them); int32 x one row a pass; small problems (H < 1536, < 128 rows)
    # on 12 cores; the kernel's queues are single-buffered (dequant_swiglu_quant_dynamic_base.hpp).
    def base(inputs, dtype):
        return an.baseline_tiling("DequantSwigluQuant", inputs, dtype, "Ascend910B2", {})
    assert base([[4096, 4096], [], [], [2048]], "bfloat16") == {"blockDim": 48, "tileLen": 3 * 2048, "bufferNum": 1}
    assert base([[4096, 4096], [4096], [4096]], "int32") == {"blockDim": 48, "tileLen": 2048, "bufferNum": 1}
    assert base([[64, 512]], "bfloat16")["blockDim"] == 12
    # int32 rows of at most 1536 outputs with an activation scale take the ping-pong performance template.
    assert base([[16384, 512], [512], [16384]], "int32") == {"blockDim": 48, "tileLen": 256, "bufferNum": 2}


def test_dequant_swiglu_quant_910b_splits_long_rows_as_cann():
    # dequant_swiglu_quant_tiling_base.cpp (910B): int32 rows over UB / 45 bytes (4352 outputs) go in pieces of
    # 4352 (dynamic; static: UB / 49 bytes, 3968), the scales in slices beside each piece, no whole copy in UB.
    # The dynamic kernel (dynamic_base.hpp CanNotFullLocaOneRow) loads the slices for every row and piece and
    # sweeps a row twice (its abs-max, then the quantisation); the static one (static_base.hpp processCompute)
    # takes the pieces outermost, loads their slices once a core and reads x once.
    rows, h = 4096, 8192
    inputs = [[rows, 2 * h], [2 * h], [rows], [h]]
    dyn, sta = ({"quant_mode": m} for m in ("dynamic", "static"))
    assert an.baseline_tiling("DequantSwigluQuant", inputs, "int32", "Ascend910B2", dyn)["tileLen"] == 4352
    assert an.baseline_tiling("DequantSwigluQuant", inputs, "int32", "Ascend910B2", sta)["tileLen"] == 3968
    x_bytes, scale_bytes = rows * 2 * h * 4, 3 * h * 4
    read = lambda attrs: est("DequantSwigluQuant", inputs, "int32", "Ascend910B2", attrs).breakdown["gm_read_bytes"]
    assert read(sta) < 1.1 * x_bytes
    assert read(dyn) > 2 * x_bytes + rows * scale_bytes


def test_dequant_swiglu_quant_910b_performance_template_overlaps_its_loads():
    # The same int32 [16384, 512] without an activation scale runs the serial template (tiling key 30006,
    # not 30013): less vector work, yet slower, since no load overlaps the vector work.
    t = lambda inputs: est("DequantSwigluQuant", inputs, "int32", "Ascend910B2", {})
    with_scale, without = t([[16384, 512], [512], [16384]]), t([[16384, 512], [512]])
    assert with_scale.breakdown["vector_us"] > without.breakdown["vector_us"]
    assert with_scale.time_us < without.time_us


def test_dequant_swiglu_quant_910b_copies_unaligned_halves_a_block_at_a_time():
    # dequant_swiglu_quant_dynamic_base.hpp CopyIn (910B): each half of a row comes in by DataCopyPad from where
    # the row puts it; halves of H = 4097 are not whole 32-byte blocks, so MTE2 moves them a block a request
    # (ascend_measured_cases.md 5.8: unaligned rows to UB at 2.5 cycles a block on A2).  One more output a row
    # then costs 910B far more than its bytes; the 950 generation's MTE pads unaligned rows itself.
    def t(h, dtype, soc):
        scales = [[2 * h], [255], [h]] if dtype == "int32" else []
        return est("DequantSwigluQuant", [[255, 2 * h], *scales], dtype, soc, {}).time_us
    rise = {}
    for dtype in ("bfloat16", "int32"):
        rise[dtype] = t(4097, dtype, "Ascend910B2") / t(4096, dtype, "Ascend910B2")
        assert rise[dtype] > 1.12
        assert t(4097, dtype, "Ascend950PR") < 1.05 * t(4096, dtype, "Ascend950PR")
    # int32 x also brings its weight and quant scales in rows of H floats (CopyInWeightAndBias, CopyInQuantScale:
    # DataCopyPad of H x 4 bytes), once a core, a block at a time as well.
    assert rise["int32"] > 1.05 * rise["bfloat16"]


def test_dequant_swiglu_quant_910b_cores_read_the_scales_at_the_same_addresses():
    # dequant_swiglu_quant_dynamic_base.hpp CanFullLocaOneRow (910B): every core's first copies are the quant
    # scale row and the two weight-scale halves, the same GM rows for all the cores, read at the same moment;
    # GM serialises concurrent reads of one 512-byte window (ascend_measured_cases.md 5.8, same-address case:
    # all cores to UB in 539.42 us against 328.88 us staggered).  One row a core: two cores take longer to
    # load than one, though each moves the same bytes.
    def mte2(rows):
        h = 2048
        inputs = [[rows, 2 * h], [1, 2 * h], [rows], [1, h]]
        return est("DequantSwigluQuant", inputs, "int32", "Ascend910B2", {}).breakdown["mte2_us"]
    assert mte2(2) > 1.2 * mte2(1)


def test_dequant_swiglu_quant_910b_waits_for_each_rows_activation_scale():
    # dequant_swiglu_quant_dynamic_base.hpp getActivateScaleValue (910B serial template, rows over 1536
    # outputs): each row's activation scale is read by the scalar unit once the row's loads are in
    # (SetFlag / WaitFlag MTE2_S, GetValue) before the row's first Cast: a wait a row, whatever its length.
    # So what the scale adds to a row grows far less than the row: its two Muls double with H, the wait not.
    def t(h, act):
        rows = 960  # 20 rows a core
        inputs = [[rows, 2 * h], [1, 2 * h]] + ([[rows]] if act else [])
        return est("DequantSwigluQuant", inputs, "int32", "Ascend910B2", {}).time_us
    added = {h: t(h, True) - t(h, False) for h in (2176, 4352)}
    assert added[4352] < 1.45 * added[2176]


def test_dynamic_quant_910b_multi_row_templates_are_single_buffered():
    # dynamic_quant_tiling.cpp (910B): H in {4096, 5120, 10240} and 4..384 rows take the special template,
    # 16384 / H rows a pass; other rows of 128..16320 elements (multiples of 8) the multi-row one,
    # 16320 / H rows a pass.  Both keep one UB buffer (dynamic_quant_single_row.h, dynamic_quant_multi_row.h).
    def base(shape):
        return an.baseline_tiling("DynamicQuant", [shape], "float16", "Ascend910B2", {})
    assert base([128, 4096]) == {"blockDim": 32, "tileLen": 4 * 4096, "bufferNum": 1}
    assert base([4096, 4096]) == {"blockDim": 48, "tileLen": 3 * 4096, "bufferNum": 1}
    # Their row maxima stay in the vector unit, no per-row wait for the scalar unit: the same bytes in 8x
    # the rows of 1/8 the length take about the same time.
    t = lambda shape: est("DynamicQuant", [shape], "float16", "Ascend910B2", {}).time_us
    assert t([32768, 1024]) < 1.2 * t([4096, 8192])
    # The special template too (dynamic_quant_single_row.h: Brcb, Copy, Mul; no GetValue): 4 rows of 4096
    # a core (one pass: no store beside a next load) cost about what 2 rows of 8192 (multi-row, two passes) do.
    assert t([192, 4096]) < 1.25 * t([96, 8192])
    # int8 and int4 leave through the same three casts (fp32 -> int16 -> half -> int8 / int4:
    # ComputeQuantization, QuantizeAndWriteOut): int4 only writes half the bytes.
    v = lambda od: est("DynamicQuant", [[4096, 1024]], "float16", "Ascend910B2", {"output_dtype": od}).breakdown
    assert v("int4")["vector_us"] == pytest.approx(v("int8")["vector_us"])
    assert v("int4")["gm_write_bytes"] < v("int8")["gm_write_bytes"]


def test_swiglu_unaligned_halves_cost_more_on_910b_only():
    # Halves of 50 fp32 (200 bytes, not 32-byte aligned; the calibration file's [2, 3, 17, 512, 100])
    # go the DataCopyPad path: one GM write burst per output row on 910B; the 950 generation pads
    # unaligned bursts itself.  So 910B2's store time (MTE3) over 950PR's grows from aligned halves
    # (64 fp32).  (Store time, not the kernel's: both are HBM-bound, at different HBM rates.)
    def chips(x):
        t = [est("SwiGlu", [x], "float32", soc, {"dim": -1}).breakdown["mte3_us"] for soc in ("Ascend910B2", "Ascend950PR")]
        return t[0] / t[1]
    assert chips([52224, 100]) > 1.3 * chips([52224, 128])


def test_swiglu_910b_moves_each_unaligned_row_as_bursts_of_its_own():
    # swi_glu_tiling.cpp / glu_tiling_kernel.hpp (910B): halves that are not whole 32-byte blocks go through
    # DataCopyPad with blockCount = the pass's rows, so every row is three transfers (two halves in, one out),
    # each paying a copy's start, the halves read a 32-byte block at a time (ascend_measured_cases.md 5.8).  Rows of 50 fp32 (200 bytes) then cost far more than rows of 56 fp32
    # (224 bytes, aligned: one strided copy a pass), though they move fewer bytes; the 950 generation's MTE
    # pads unaligned bursts itself, so there the two cost about the same.
    def t(x, soc):
        return est("SwiGlu", [x], "float32", soc, {"dim": -1}).time_us
    assert t([52224, 100], "Ascend910B2") > 2.4 * t([52224, 112], "Ascend910B2")
    assert t([52224, 100], "Ascend950PR") < 1.1 * t([52224, 112], "Ascend950PR")


def _cann_swiglu_910b(shape: list, dim: int, dtype: str, ub: int, cores: int) -> dict:
    """CANN's SwiGlu tiling on 910B, transcribed from hicann/ops-nn@e5c3fa9 activation/swi_glu/op_host/
    swi_glu_tiling.cpp (GluSingleTilingCalculator::CalcTiling): x as rows x 2 cols around `dim`, base blocks
    of base_rows x base_cols outputs chosen for the most cores, then the fewest blocks, the largest block;
    double-buffered unless single buffers take a core's two blocks in one."""
    d = dim % len(shape)
    rows, cols = math.prod(shape[:d]), math.prod(shape[d:]) // 2
    ds = 4 if dtype == "float32" else 2
    blk, line = 32 // ds, 512 // ds
    aligned = cols % blk == 0
    one_row = lambda bc: (2 * cols - bc > 65535 * blk) if aligned else ((2 * cols - bc) * ds > 65535)

    def calc(buffers: int):
        max_tile = ub // (buffers * 3 * ds + (4 if ds == 4 else 8)) // blk * blk
        bc = min(cols, max_tile, 65535 if aligned else 65535 // ds)
        if line < bc < cols:
            bc = bc // line * line
        best = None

        def save(br, c):
            nonlocal best
            tiles = -(-rows // br) * -(-cols // c)
            key = (min(tiles, cores), -tiles, br * c, (rows // br) * (cols // c))
            if best is None or key > best[0]:
                best = (key, br, c, tiles)
        cap = min(rows, 4095)
        if one_row(bc):
            save(1, bc)
        else:
            while True:
                br = min(max_tile // (-(-bc // blk) * blk), cap)
                if br < 1 or (br > 1 and one_row(bc)):
                    break
                if not (br > 1 and one_row(cols % bc)):
                    save(br, bc)
                if bc <= line or br >= cap:
                    break
                bc = bc - line if bc % line == 0 else bc // line * line
        (used, _, _, _), br, bc, tiles = best
        return {"cores": used, "per_core": -(-tiles // used), "br": br, "bc": bc, "buffers": buffers}

    t = calc(2)
    if t["per_core"] == 2:
        one = calc(1)
        if one["per_core"] == 1 and one["cores"] >= t["cores"]:
            t = one
    return {"blockDim": t["cores"], "tileLen": t["br"] * (-(-t["bc"] // blk) * blk), "bufferNum": t["buffers"],
            "rows": rows, "cols": cols, "br": t["br"], "bc": t["bc"], "per_core": t["per_core"]}


def _cann_swiglu_910b_busiest(t: dict, ds: int) -> int:
    """The padded elements of the busiest core's blocks as hicann/ops-nn@e5c3fa9 activation/swi_glu/op_kernel/
    glu_tiling_kernel.hpp deals them: block i (row-major over row x column blocks) to core i mod blockDim
    (SWIGLU_SINGLE_PROCESS), the last row / column of blocks holding the tails, UB rows padded to 32 bytes
    when the halves are not (CaclOneTileParam, CaclTileCopyParams: *CalLen)."""
    rows, cols, br, bc, blk = t["rows"], t["cols"], t["br"], t["bc"], 32 // ds
    pad = (lambda c: c) if cols % blk == 0 else (lambda c: -(-c // blk) * blk)
    col_tiles = -(-cols // bc)
    core = [0] * t["blockDim"]
    for i in range(-(-rows // br) * col_tiles):
        r, c = divmod(i, col_tiles)
        core[i % t["blockDim"]] += min(br, rows - r * br) * pad(min(bc, cols - c * bc))
    return max(core)


def test_swiglu_910b_default_follows_cann_tiling():
    # 910B's SwiGlu default is CANN's own tiling: the base block's size (the UB pass), its core count (few
    # rows: as many blocks as the cuts give, at most every core) and its buffers, on aligned and unaligned
    # halves, one row or many, the dim attribute before the last axis, each dtype.
    plat = ops.native_platform("Ascend910B2")
    ub, cores = int(plat.ub), int(plat.vector_cores)
    grid = [([r, c2], -1) for r in (1, 7, 64, 300, 8192) for c2 in (2048, 8194, 30000)]
    grid += [([8192, 16384], 0), ([1538, 1537], 0), ([2, 3, 17, 512, 100], -1), ([4, 64, 1024], 1), ([48, 32768], -1)]
    for dtype in ("float16", "bfloat16", "float32"):
        for shape, dim in grid:
            want = {k: v for k, v in _cann_swiglu_910b(shape, dim, dtype, ub, cores).items()
                    if k in ("blockDim", "tileLen", "bufferNum")}
            base = an.baseline_tiling("SwiGlu", [shape], dtype, "Ascend910B2", {"dim": dim})
            assert base == want, (shape, dim, dtype)
            used = est("SwiGlu", [shape], dtype, "Ascend910B2", {"dim": dim}).breakdown["cores_used"]
            assert used == want["blockDim"], (shape, dim, dtype)


def test_swiglu_910b_busiest_core_takes_its_blocks_as_dealt():
    # glu_tiling_kernel.hpp (910B) deals the base blocks round-robin, and the tail row / column blocks are
    # smaller: with few blocks a core the kernel lasts as long as the core with the most elements, not the
    # blocks' mean (e.g. [7, 3000] fp32: 6 x 1152 outputs on core 0, 1 x 348 on core 3).  The model's GM
    # bytes are the busiest core's times the cores (vector.cpp evaluate), so they give its elements.  Grid:
    # rows x 2H, H aligned and not, one to many blocks a core (the old blocks' mean: 105 of 180 off by > 1%).
    plat = ops.native_platform("Ascend910B2")
    ub, cores = int(plat.ub), int(plat.vector_cores)
    off = []
    for dtype in ("float16", "float32"):
        ds = 4 if dtype == "float32" else 2
        for rows in (1, 3, 7, 24, 47, 100, 300, 2049, 8192):
            for h in (50, 100, 500, 1000, 1500, 4096, 5000, 11008, 30000, 70000):
                t = _cann_swiglu_910b([rows, 2 * h], -1, dtype, ub, cores)
                blk, bc = 32 // ds, t["bc"]
                padded = h if h % blk == 0 else (h // bc) * -(-bc // blk) * blk + -(-(h % bc) // blk) * blk
                b = est("SwiGlu", [[rows, 2 * h]], dtype, "Ascend910B2", {"dim": -1}).breakdown
                got = b["gm_read_bytes"] / b["cores_used"] / (2 * ds * h / padded)
                want = _cann_swiglu_910b_busiest(t, ds)
                if abs(got / want - 1) > 0.01:
                    off.append((rows, h, dtype, got, want))
    assert not off, off


def test_outputs_and_dtypes_set_the_bytes():
    t, h = 2048, 4096
    w = lambda op, inputs, dtype, attrs=None: est(op, inputs, dtype, "Ascend910B2", attrs or {}).breakdown[
        "gm_write_bytes"]
    # AddRmsNorm writes y and x1 + x2; RmsNorm y only.
    assert w("AddRmsNorm", [[t, h]] * 2 + [[h]], "float16") > 1.9 * w("RmsNorm", [[t, h], [h]], "float16")
    # int8 output: a byte per element (and a float32 scale per row); int4 half of that.
    i8 = w("DynamicQuant", [[t, h]], "float16", {"output_dtype": "int8"})
    i4 = w("DynamicQuant", [[t, h]], "float16", {"output_dtype": "int4"})
    assert t * h <= i8 < 1.1 * t * h and 0.45 * i8 < i4 < 0.55 * i8
    # DequantSwigluQuant reads int32 [T, 2H] (8 bytes per output) and writes int8 [T, H].
    b = est("DequantSwigluQuant", [[t, 2 * h], [2 * h], [t]], "int32", "Ascend910B2", {}).breakdown
    assert b["gm_read_bytes"] >= 8 * t * h and b["gm_write_bytes"] < 1.1 * t * h
    # Static quantisation: no row abs-max, no scale output.
    st = est("DequantSwigluQuant", [[t, 2 * h], [2 * h], [t], [h]], "int32", "Ascend910B2", {"quant_mode": "static"})
    dy = est("DequantSwigluQuant", [[t, 2 * h], [2 * h], [t], [h]], "int32", "Ascend910B2", {})
    assert st.breakdown["gm_write_bytes"] < dy.breakdown["gm_write_bytes"]
    assert st.breakdown["vector_us"] < dy.breakdown["vector_us"]
    # SwiGlu reads [.., 2H], writes [.., H].
    s = est("SwiGlu", [[t, 2 * h]], "float16", "Ascend910B2", {}).breakdown
    assert s["gm_read_bytes"] >= 2 * s["gm_write_bytes"] * 0.95


@pytest.mark.parametrize("op, inputs, dtype, attrs, message", [
    ("RmsNorm", [[8, 4096], [4000]], "float16", {}, r"RmsNorm: gamma \[4000\] does not match the hidden size"),
    ("AddRmsNorm", [[8, 4096], [8, 2048], [4096]], "float16", {}, r"AddRmsNorm: x2 \[8, 2048\] must have x1's shape"),
    ("AddRmsNormDynamicQuant", [[8, 4096], [8, 4096], [4096], [2048]], "float16", {},
     r"AddRmsNormDynamicQuant: smooth_scale1 \[2048\] does not match"),
    ("RmsNorm", [[8, 4096], [4096]], "int8", {}, r"RmsNorm: x is int8"),
    ("GroupNorm", [[2, 30, 8, 8], [30], [30]], "float16", {"num_groups": 4}, r"GroupNorm: x \[2, 30, 8, 8\] has 30 "
     r"channels, not a multiple of num_groups 4"),
    ("GroupNorm", [[2, 32, 8, 8], [16], [32]], "float16", {"num_groups": 4}, r"GroupNorm: gamma \[16\] does not match"),
    ("GroupNorm", [[2, 32, 8, 8], [32], [32]], "float16", {}, r"GroupNorm: attribute num_groups"),
    ("DynamicQuant", [[8, 4096], [1024]], "float16", {}, r"DynamicQuant: smooth_scales \[1024\] does not match"),
    ("DynamicQuant", [[8, 4095]], "float16", {"output_dtype": "int4"}, r"DynamicQuant: int4 output .* 4095 is odd"),
    ("DynamicQuant", [[8, 4096]], "float16", {"output_dtype": "uint8"}, r"DynamicQuant: output_dtype 'uint8'"),
    ("DynamicQuant", [[4096]], "float16", {}, r"DynamicQuant: x \[4096\] has 1 dimensions; CANN's aclnnDynamicQuant "
     r"takes 2 to 8"),
    ("SwiGlu", [[8, 4095]], "float16", {"dim": -1}, r"SwiGlu: x \[8, 4095\] is split in two along dim -1, whose "
     r"extent 4095 is odd"),
    ("SwiGlu", [[8, 4096]], "float16", {"dim": 2}, r"SwiGlu: dim 2 is out of range"),
    ("DequantSwigluQuant", [[8, 4095], [4095]], "int32", {}, r"DequantSwigluQuant: x \[8, 4095\] .* 4095 is odd"),
    ("DequantSwigluQuant", [[8, 4096], [4096], [7]], "int32", {},
     r"DequantSwigluQuant: activation_scale \[7\] must have one value per row"),
    ("DequantSwigluQuant", [[8, 4096], [2048]], "int32", {}, r"DequantSwigluQuant: weight_scale \[2048\] does not match"),
    ("DequantSwigluQuant", [[8, 4096], [4096], [], [1, 4096]], "int32", {},
     r"DequantSwigluQuant: quant_scale \[1, 4096\] does not match half"),
    ("DequantSwigluQuant", [[8, 4096]], "int32", {}, r"DequantSwigluQuant: x is int32 .* needs weight_scale"),
    ("DequantSwigluQuant", [[8, 4096], [4096]], "float16", {"quant_mode": "per_block"},
     r"DequantSwigluQuant: quant_mode 'per_block'"),
    ("ApplyRotaryPosEmb", [[1, 16, 32, 128], [1, 16, 5, 128], [1, 16, 1, 128], [1, 16, 1, 128]], "float16", {},
     r"ApplyRotaryPosEmb: key has 5 heads, which does not divide the query's 32"),
    ("ApplyRotaryPosEmb", [[1, 16, 32, 128], [1, 16, 8, 128], [1, 16, 1, 64], [1, 16, 1, 128]], "float16", {},
     r"ApplyRotaryPosEmb: cos \[1, 16, 1, 64\] does not broadcast to query"),
    ("ApplyRotaryPosEmb", [[1, 16, 32, 128], [1, 16, 8, 128], [1, 16, 1, 128], [2, 16, 1, 128]], "float16", {},
     r"ApplyRotaryPosEmb: sin \[2, 16, 1, 128\] does not broadcast"),
    ("ApplyRotaryPosEmb", [[1, 16, 32, 128], [1, 8, 8, 128], [1, 16, 1, 128], [1, 16, 1, 128]], "float16", {},
     r"ApplyRotaryPosEmb: key \[1, 8, 8, 128\] must share query"),
    ("ApplyRotaryPosEmb", [[1, 16, 32, 128], [1, 16, 8, 128], [1, 16, 1, 128], [1, 16, 1, 128]], "float16",
     {"rotary_mode": "quarter"}, r"ApplyRotaryPosEmb: rotary_mode 'quarter'"),
])
def test_bad_input_names_the_operator_and_the_input(op, inputs, dtype, attrs, message):
    with pytest.raises(ValueError, match=message):
        an.baseline_tiling(op, inputs, dtype, "Ascend910B2", attrs)


def test_rope_layouts_and_modes():
    q, k = [2, 512, 32, 128], [2, 512, 8, 128]
    bsnd = est("ApplyRotaryPosEmb", [q, k, [1, 512, 1, 128], [1, 512, 1, 128]], "float16", "Ascend910B2", {})
    bnsd_in = [[2, 32, 512, 128], [2, 8, 512, 128], [1, 1, 512, 128], [1, 1, 512, 128]]
    bnsd = est("ApplyRotaryPosEmb", bnsd_in, "float16", "Ascend910B2", {"input_layout": "BNSD"})
    inter = est("ApplyRotaryPosEmb", [q, k, [1, 512, 1, 128], [1, 512, 1, 128]], "float16", "Ascend910B2",
                {"rotary_mode": "interleave"})
    # BSND shares a token's cos/sin between its heads; BNSD reads them again for every head.
    assert bnsd.breakdown["gm_read_bytes"] > bsnd.breakdown["gm_read_bytes"]
    assert inter.breakdown["vector_us"] > bsnd.breakdown["vector_us"]


# ---- records ---------------------------------------------------------------------------------

def _record(op, inputs, dtype, attrs, soc="Ascend910B2", case=4):
    return {"id": f"T{case}", "op": op, "family": "x", "soc": soc, "inputs": inputs, "dtype": dtype, "attrs": attrs,
            "time_us": 10.0, "single_kernel": True, "source_where": f"x case {case}"}


INLINE = [
    _record("RmsNorm", [[16, 256, 4096], [4096]], ["float16"] * 2, {"epsilon": 1e-6}),
    _record("AddRmsNormDynamicQuant", [[2048, 4096], [2048, 4096], [4096]], ["float16"] * 3, {"epsilon": "1e-06"}),
    _record("GroupNorm", [[2, 64, 67, 71], [64], [64]], ["float16"] * 3, {"num_groups": 8, "epsilon": "1e-7"}),
    _record("DynamicQuant", [[2, 511, 2049]], ["bfloat16"], {}, soc="Ascend950PR"),
    _record("SwiGlu", [[8192, 16384]], ["float16"], {"dim": 0}),
    _record("DequantSwigluQuant", [[4096, 4096], None, None, [1, 2048]], ["bfloat16", None, None, "float32"],
            {"activate_left": False}),
    _record("DequantSwigluQuant", [[255, 8194], [1, 8194], [255], [1, 4097]], ["int32"] + ["float32"] * 3,
            {"activate_left": False}),
    _record("ApplyRotaryPosEmb", [[15, 16, 511, 128], [15, 16, 511, 128], [511, 64], [511, 64]], ["float16"] * 4,
            {"layout": 1, "rotaryMode": "half"}),
    _record("ApplyRotaryPosEmb", [[7, 2047, 7, 128], [7, 2047, 7, 128], [2047, 64], [2047, 64]], ["float32"] * 4,
            {"layout": 0, "rotaryMode": "interleaved"}),
]


@pytest.mark.parametrize("rec", INLINE, ids=[r["op"] for r in INLINE])
def test_records_translate_to_the_cann_kernel(rec):
    op, inputs, dtype, attrs = records.translate_record(rec)
    assert op == ("GroupNormSilu" if rec["op"] == "GroupNorm" else rec["op"])  # the benchmark runs GroupNormSilu
    assert an.predict_record(rec).time_us > 0
    if rec["op"] == "ApplyRotaryPosEmb":  # the reference's concatenated, broadcast cos/sin
        q = rec["inputs"][0]
        assert inputs[2] == inputs[3] == ([q[0], q[1], 1, q[3]] if rec["attrs"]["layout"] == 0
                                          else [q[0], 1, q[2], q[3]])
    if None in rec["inputs"]:
        assert [] in inputs and attrs["input_dtypes"][1] == ""


def test_a_group_norm_record_runs_without_the_silu():
    # aclnnGroupNorm calls GroupNormSilu with activate_silu false (aclnn_group_norm.cpp).
    rec = next(r for r in INLINE if r["op"] == "GroupNorm")
    op, _, _, attrs = records.translate_record(rec)
    assert (op, attrs["num_groups"], attrs["activate_silu"]) == ("GroupNormSilu", 8, 0)


def _gn(x, groups, dtype="float16", soc="Ascend910B2"):
    c = x[1]
    return est("GroupNormSilu", [x, [c], [c]], dtype, soc, {"num_groups": groups, "activate_silu": 0}).breakdown


def test_group_norm_on_910b_takes_whole_groups_a_core():
    # CANN's 910B tiling: ceil(N G / cores) groups a core, so 16 groups take 16 of the 48 cores.
    assert _gn([16, 257, 32, 31], 1)["cores_used"] == 16
    assert _gn([5, 48, 33, 65], 6, "bfloat16")["cores_used"] == 30
    # A channel under one 32-byte block (H W = 2 x 2 fp16) runs on one core: far slower than the
    # same bytes with blocks of H W (64 cores' worth of groups).
    tiny, wide = _gn([64, 64, 2, 2], 8), _gn([64, 4, 8, 8], 4)
    assert tiny["cores_used"] == 1 and wide["cores_used"] > 1
    assert tiny["time_us"] > 5 * wide["time_us"]


def test_group_norm_on_910b_reads_x_twice_unless_a_small_group_stays_in_ub():
    x_bytes = lambda x: 2 * x[0] * x[1] * x[2] * x[3]
    big = [2, 64, 67, 71]  # H W 4757: not the small-shape template, a second read per channel
    assert _gn(big, 8)["gm_read_bytes"] >= 2 * x_bytes(big)
    small = [8, 64, 8, 8]  # groups of 8 x 64 = 512 elements: one read
    assert _gn(small, 8)["gm_read_bytes"] < 1.2 * x_bytes(small)


def test_group_norm_on_910b_pays_a_copy_round_trip_per_channel():
    # Outside the small-shape template CANN's kernel loads, normalises and stores one channel at a
    # time (group_norm_silu_b16.h): the same bytes in 16 short channels a core take far longer than
    # in 2 long ones, and the default tile is one channel.
    short, long = _gn([1, 512, 17, 3], 32), _gn([1, 64, 17, 24], 32)
    assert short["cores_used"] == long["cores_used"] == 32
    assert short["time_us"] > 1.5 * long["time_us"]
    x, a = [[1, 512, 17, 3], [512], [512]], {"num_groups": 32}
    assert an.baseline_tiling("GroupNorm", x, "float16", "Ascend910B2", a)["tileLen"] < 8192


def test_an_unknown_rope_layout_is_named():
    bad = {**INLINE[-1], "attrs": {"layout": 3, "rotaryMode": "half"}}
    with pytest.raises(an.UnmodelledOperator, match="ApplyRotaryPosEmb.*layout 3"):
        an.predict_record(bad)


OPS = {"RmsNorm", "AddRmsNormDynamicQuant", "GroupNorm", "DynamicQuant", "SwiGlu", "DequantSwigluQuant",
       "ApplyRotaryPosEmb"}



def test_every_record_of_these_ops_is_predicted(measured):
    mine = [r for r in measured if r["op"] in OPS]
    assert len(mine) >= 100
    for r in mine:
        assert an.predict_record(r).time_us > 0


def test_held_out_accuracy_stays_above_the_measured_floor(measured):
    # Held-out half (case id % 4 == 2), single-kernel records; the constants were chosen on the
    # other half.  Floors a little under what docs/llm_operators.md reports (the 52 single-kernel
    # records: median 0.90, 83% within 2x, per operator medians 0.77 to 1.55; ApplyRotaryPosEmb's
    # records time helper kernels too).
    ratios = defaultdict(list)
    for r in measured:
        if r["op"] in OPS - {"ApplyRotaryPosEmb"} and r["single_kernel"] is True and not records.fit_half(r):
            ratios[r["op"]].append(an.predict_record(r).time_us / r["time_us"])
    allr = [q for qs in ratios.values() for q in qs]
    assert len(allr) >= 45
    assert 0.7 <= statistics.median(allr) <= 1.3
    assert sum(0.5 <= q <= 2 for q in allr) / len(allr) >= 0.8
    for op, qs in ratios.items():
        assert 0.65 <= statistics.median(qs) <= 1.7, op


def test_op_table_lists_them_by_family():
    fam = {e["name"]: e["family"] for e in an.op_table()}
    assert {fam[o] for o in ("RmsNorm", "AddRmsNorm", "AddRmsNormDynamicQuant", "GroupNorm", "GroupNormSilu")} == {"norm"}
    assert fam["DynamicQuant"] == fam["DequantSwigluQuant"] == "quant"
    assert fam["SwiGlu"] == fam["ApplyRotaryPosEmb"] == "llm_elementwise"
    # GroupNormSilu is GroupNorm with the SiLU on the output tile: more vector work, the same bytes.
    inputs, dtype, attrs = cases()["GroupNorm"]
    gn, gns = (est(op, inputs, dtype, "Ascend910B2", attrs).breakdown for op in ("GroupNorm", "GroupNormSilu"))
    assert gns["vector_us"] > gn["vector_us"] and gns["gm_read_bytes"] == gn["gm_read_bytes"]


def test_dynamic_quant_910b_large_rows_and_single_buffer_templates():
    # dynamic_quant_tiling.cpp SetTilingData (910B): a row UB - 1 KB cannot hold at 11 bytes an aligned
    # element (17 with smooth scales) takes TILING_KEY 6 (dynamic_quant_large_shape_opt.h): pieces of
    # (UB - 1 KB) / 19 / 128 x 128 = 10240 elements, double-buffered, x read in an abs-max pass and again
    # in the quant pass, the smooth scales loaded with every piece in both passes.
    def run(shape, smooth=False):
        ins = [shape, [shape[-1]]] if smooth else [shape]
        t = an.baseline_tiling("DynamicQuant", ins, "bfloat16", "Ascend910B2", {"output_dtype": "int8"})
        b = an.estimate("DynamicQuant", ins, "bfloat16", "Ascend910B2", t, {"output_dtype": "int8"}).breakdown
        return t, b["gm_read_bytes"] / (shape[0] * shape[1])
    t, read = run([96, 20000])
    assert (t["tileLen"], t["bufferNum"]) == (10240, 2) and 3.9 < read < 4.3
    t, read = run([96, 14000], smooth=True)
    assert t["tileLen"] == 10240 and 7.9 < read < 8.5
    # 13 bytes an element over UB - 1 KB (useDb false), the row still held: TILING_KEY 0/1 (dynamic_quant.h),
    # one row a pass, single-buffered queues.
    t, read = run([96, 17001])
    assert (t["tileLen"], t["bufferNum"]) == (17008, 1) and read < 2.2
    # A multi-row row of 15000 (a multiple of 8, at most 16320) is held whole, 16 bytes-aligned in UB: one read.
    t, read = run([96, 15000])
    assert t["tileLen"] == 15008 and read < 2.2
    r = an.tune_op("DynamicQuant", [[96, 20000]], "bfloat16", "Ascend910B2", attrs={"output_dtype": "int8"},
                   max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)


def _cann_dynamic_quant_910b(rows: int, h: int, smooth: bool, int4: bool, cores: int, ub: int) -> tuple:
    """CANN's 910B DynamicQuant tiling, transcribed from hicann/ops-nn quant/dynamic_quant/op_host/
    dynamic_quant_tiling.cpp (SetSpecialTilingForDs, CheckMultiRowPreconditions,
    CalculateMultiRowCoreDistribution, RunFusionKernelTiling, CalculateMaxUbSizePerRow, SetTilingData):
    (template, blockDim, rows of the busiest core, UB rows a pass on it or the piece of a split row,
    bufferNum of x's queue (op_kernel: dynamic_quant_single_row.h / _multi_row.h one buffer, _db.h and
    _large_shape_opt.h two, dynamic_quant.h one), the UB row stride)."""
    cdiv = lambda a, b: -(-a // b)
    if not int4 and h in (4096, 5120, 10240) and 4 <= rows <= 384:  # TILING_KEY 100
        per = min(16384 // h, rows)
        core = cdiv(cdiv(rows, per), cdiv(cdiv(rows, per), cores))
        # rowPerHeadCore: whole passes, ceil(passes / coreNum) of them; the last core the rest.
        return "special", core, min(rows, cdiv(cdiv(rows, per), core) * per), per, 1, h
    max_ub_len = min((ub - 1024 - 3392) // (15 if smooth else 11) // 64 * 64, 255 * 64)
    if 128 <= h <= max_ub_len and h % 8 == 0:  # TILING_KEY 10: fill UB, then one core per full pass
        per = min(max_ub_len // h, rows)
        loops = rows // per
        core = max(1, min(cores, loops))
        # perCoreLoop passes each, the extra rows one more on the headCoreNum cores: ceil(rows / core).
        return "multi_row", core, cdiv(rows, core), min(per, cdiv(rows, core)), 1, h
    core = max(1, min(cores, rows))
    busy, hpad, avail = cdiv(rows, core), cdiv(h, 16) * 16, ub - 1024
    fit = avail // ((17 if smooth else 11) * hpad)
    if fit == 0:  # TILING_KEY 6: the row in pieces of innerLoopEle
        return "large", core, busy, avail // 19 // 128 * 128, 2, hpad
    if (19 if smooth else 13) * hpad < avail:  # TILING_KEY 2/3
        return "db", core, busy, min(255, fit, busy), 2, hpad
    return "one_row", core, busy, 1, 1, hpad  # TILING_KEY 0/1


@pytest.mark.parametrize("soc", ["Ascend910B2", "Ascend910B4"])
def test_dynamic_quant_910b_follows_cann_tiling_on_a_grid(soc):
    # Template, core count, UB pass and buffering of the model's default tiling against CANN's rule
    # (_cann_dynamic_quant_910b) over short/long, aligned/unaligned rows, few/many rows, 2-D..5-D x,
    # both dtypes, with and without smooth scales, int8 and int4.  A multi-row H of 8 mod 16 packs its
    # rows back to back (136: 120 a pass, not 113).  The special template's cores take whole passes:
    # 5 or 6 rows of 4096 are 4 + 1 or 4 + 2 rows on two cores, not 3 + 2 or 3 + 3.
    p = an.platform(soc)
    misses = []
    for h in (64, 136, 1021, 4096, 5120, 8192, 15000, 17001, 20000):
        for lead in ([1], [5], [2, 3], [384], [5000], [7, 13], [3, 7, 11, 13]):
            for dtype, smooth, int4 in [("float16", False, False), ("bfloat16", True, False), ("float16", True, True)]:
                if int4 and h % 2:
                    continue
                x = lead + [h]
                rows = math.prod(lead)
                ins = [x, [h]] if smooth else [x]
                attrs = {"output_dtype": "int4" if int4 else "int8"}
                t = an.baseline_tiling("DynamicQuant", ins, dtype, soc, attrs)
                kind, core, busy, per, buf, stride = _cann_dynamic_quant_910b(rows, h, smooth, int4,
                                                                              p["vector_cores"], p["ub"])
                got_busy = busy
                if kind != "large":  # the busiest core's rows, from its reads: its x rows and the smooth scales once
                    b = an.estimate("DynamicQuant", ins, dtype, soc, t, attrs).breakdown
                    got_busy = round((b["gm_read_bytes"] / b["cores_used"] - 2 * h * smooth) / (2 * stride))
                got = min(t["tileLen"] // stride, got_busy) if kind != "large" else t["tileLen"]
                if (t["blockDim"], got_busy, got, t["bufferNum"]) != (core, busy, per, buf):
                    misses.append((x, dtype, smooth, int4, kind, (core, busy, per, buf),
                                   (t["blockDim"], got_busy, got, t["bufferNum"])))
    assert not misses, misses


def _cann_group_norm_910b(n, c, g, hw, ds, cores=48):
    """CANN's 910B GroupNormSilu tiling (hicann/ops-nn norm/group_norm_silu/op_host/group_norm_silu_tiling.cpp
    SetBlockTiling, SetTiling, SetTilingWithSmallHW): blockDim, and the elements the normalising pass copies at
    a time (op_kernel group_norm_silu_small_b16.h ComputeSilu: groupD channels of a group; _b16.h, _g16.h: one
    channel in pieces of processSize 8192; _hw1_b16.h: a group of D in pieces of 8192, ProcessYWithEqualC with
    a channel a group: a sample's C in pieces of 8192)."""
    cdiv = lambda a, b: -(-a // b)
    d, groups, blk = c // g, n * g, 32 // ds
    per_core = cdiv(groups, cores)
    block_dim = cdiv(groups, per_core)
    if hw < blk and (hw != 1 or d < blk):
        block_dim = 1
    if hw == 1 and g == c:  # split by N
        block_dim = 1 if c % blk else cdiv(n, cdiv(n, cores))
    small = hw >= blk and hw % (8 if ds == 4 else 16) == 0 and hw <= 4096 and c + per_core <= (4000 if ds == 4
                                                                                                 else 2700)
    if small:
        piece = min(d, 8192 // hw) * hw
    else:
        piece = min(c if g == c else d, 8192) if hw == 1 else min(hw, 8192)
    return block_dim, cdiv(piece, blk) * blk  # UB rows are 32-byte aligned


@pytest.mark.parametrize("x,groups,dtype", [
    ([2, 64, 67, 71], 8, "float16"),     # high-performance template, a channel of 4757 a copy
    ([1, 32, 128, 128], 8, "float32"),   # channels of 16384 in two 8192 pieces
    ([4, 64, 7, 7], 8, "float16"),       # channels of 49, one a copy
    ([8, 64, 8, 8], 8, "float16"),       # small template: a group of 512 in one copy
    ([1, 320, 32, 32], 32, "float16"),   # small template: groupD = 8 channels of 1024 a copy
    ([1, 2000, 16, 16], 8, "bfloat16"),  # small template: 32 channels a copy
    ([1, 3000, 16, 16], 8, "float16"),   # C + groups a core over 2700: the basic template, a channel a copy
    ([2, 64, 2, 2], 8, "float16"),       # H W under a block: one core, a channel a copy
    ([1, 320, 1], 8, "float16"),         # H W = 1: the cores split the groups, not the samples
    ([3, 256, 1], 16, "float32"),
])
def test_group_norm_on_910b_follows_cann_tiling(x, groups, dtype):
    c, hw, ds = x[1], x[2] * (x[3] if len(x) > 3 else 1), 4 if dtype == "float32" else 2
    t = an.baseline_tiling("GroupNormSilu", [x, [c], [c]], dtype, "Ascend910B2", {"num_groups": groups})
    assert (t["blockDim"], t["tileLen"]) == _cann_group_norm_910b(x[0], c, groups, hw, ds)


def test_group_norm_on_910b_follows_cann_tiling_on_a_grid():
    # blockDim and the normalising pass's copy of the model's default tiling against CANN's rule
    # (_cann_group_norm_910b) over samples, channels, groups (1, a channel each, C over the 2700 / 4000
    # limits), H W (1, under a block, 16-aligned or not, over 4096 and 8192) and the three dtypes.  Until
    # round 14: a channel a group with H W = 1 copied 8192 elements, not a sample's C; C = 20000 (the basic
    # and H W = 1 templates, which keep a block or a group's D of gamma and beta in UB, not all C) had its
    # tile cut to what UB left beside C gammas and betas; a small-shape group under the search's smallest
    # tile (16 fp16 elements) was packed with the next (65 + 30 + 15 of 1980 off).
    misses, n_cases = [], 0
    for n in (1, 2, 3, 16, 50):
        for c, g in ((32, 1), (32, 32), (64, 8), (320, 32), (48, 6), (2000, 8), (3000, 8), (4096, 32), (20000, 4),
                     (96, 3), (257, 1)):
            for sp in ((1,), (3,), (8,), (16,), (7, 7), (8, 8), (33, 65), (64, 64), (67, 71), (100, 100), (1, 8193),
                       (8200,)):
                for dtype in ("float16", "bfloat16", "float32"):
                    x, hw, ds = [n, c, *sp], math.prod(sp), 4 if dtype == "float32" else 2
                    t = an.baseline_tiling("GroupNormSilu", [x, [c], [c]], dtype, "Ascend910B2", {"num_groups": g})
                    want, got = _cann_group_norm_910b(n, c, g, hw, ds), (t["blockDim"], t["tileLen"])
                    n_cases += 1
                    if got != want:
                        misses.append((x, g, dtype, want, got))
    assert n_cases == 1980 and not misses, misses


def test_group_norm_on_910b_h_w_1_reloads_gamma_and_beta_a_group():
    # group_norm_silu_hw1_b16.h ComputeGroupNormSilu: with H W = 1 each group's D gammas and betas are copied
    # beside its x (CopyInGammaBeta16) and the group is normalised as vectors (Adds -mean, Muls rstd, Mul gamma,
    # Add beta, the 16-bit gamma and beta cast up): x twice, gamma and beta once a group, not once a core.
    x = [64, 512, 1]
    b = _gn(x, 8)
    assert b["gm_read_bytes"] >= 4 * 2 * 64 * 512
    # The small and high-performance templates square and reduce a group of one 8192-element chunk without
    # adding it into the fp32 accumulators (_b16.h AccumulateXandX2OneLoop: Cast, Mul, two ReduceSums); a
    # longer group adds every chunk in (AccumulateXandX2MultipleLoop: Cast, Add, Mul, Add): groups of 8 x 1023
    # and 8 x 1025 elements (the high-performance template) differ by more than their size.
    one, two = _gn([48, 64, 31, 33], 8)["vector_us"], _gn([48, 64, 25, 41], 8)["vector_us"]
    assert two > 1.1 * one


def _cann_add_rms_norm_dynamic_quant_910b(rows: int, h: int, cores: int, ub: int) -> tuple:
    """CANN's 910B AddRmsNormDynamicQuant tiling, transcribed from hicann/ops-nn norm/add_rms_norm_dynamic_quant/
    op_host/arch22/add_rms_norm_dynamic_quant_tiling.cpp (DoBlockTiling, CheckUbNormalTiling,
    CheckUbSingleRowTiling, CheckUbSliceDTiling; 2 bytes an element whatever x is, rows padded to 32 elements):
    (template, blockDim, rows a pass on a head core, bufferNum (op_kernel: BUFFER_NUM 1))."""
    cdiv = lambda a, b: -(-a // b)
    core = cdiv(rows, cdiv(rows, cores))
    per_core, ha = cdiv(rows, core), cdiv(h, 32) * 32
    row_step = (ub - 3 * ha * 2 - 768) // (16 * ha + 8)
    if row_step >= 1:
        return "normal", core, min(16, row_step, per_core), 1
    if 16 * ha + 2 * 128 * 4 <= ub:
        return "single_row", core, 1, 1
    return "slice_d", core, 1, 1


def test_add_rms_norm_dynamic_quant_910b_follows_cann_tiling_on_a_grid():
    # Template, core count, whole rows a UB pass and bufferNum of the model's default tiling against CANN's
    # rule over few/many rows, short/long, aligned/unaligned rows, both dtypes, 0/1/2 smooth scales.  UB
    # holds CANN's rows with two smooth scales (8200: one row, not split).  (The model double-buffered
    # NORMAL where UB held a pass twice, with fewer rows a pass, until round 9.)
    # SLICE_D: the row split, one row a pass (its piece is the model's double-buffered 8192, not 8864).
    p = an.platform("Ascend910B2")
    misses = []
    for rows in (1, 47, 48, 49, 97, 4096, 100000):
        for h in (16, 100, 1000, 4093, 5120, 8200, 10000, 12288, 20000, 65536):
            for dtype, q in (("float16", 0), ("bfloat16", 1), ("float16", 2)):
                x = [rows, h]
                t = an.baseline_tiling("AddRmsNormDynamicQuant", [x, x, [h]] + [[h]] * q, dtype, "Ascend910B2")
                kind, core, per, buf = _cann_add_rms_norm_dynamic_quant_910b(rows, h, p["vector_cores"], p["ub"])
                hal = -(-h // 16) * 16
                got = (t["blockDim"], min(t["tileLen"] // hal, -(-rows // t["blockDim"])))
                if kind == "slice_d":
                    ok = got == (core, 0) and t["tileLen"] < h
                else:
                    # NORMAL and SINGLE_ROW: CANN's rows a pass, single-buffered (the quantisation borrows
                    # inRowsQue as scratch: normal_kernel.h doQuant1withFlag), wherever UB would hold two.
                    ok = got == (core, per) and t["bufferNum"] == buf
                if not ok:
                    misses.append((x, dtype, q, kind, (core, per, buf), got + (t["bufferNum"],)))
    assert not misses, misses
    r = an.tune_op("AddRmsNormDynamicQuant", [[2048, 4096], [2048, 4096], [4096]], "bfloat16", "Ascend910B2",
                   max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)


def test_add_rms_norm_dynamic_quant_910b_core_count():
    # add_rms_norm_dynamic_quant_tiling.cpp (arch22) DoBlockTiling: ceil(rows / cores) rows a core on
    # ceil(rows / that) cores: 50 rows take 25 cores of 2 rows, 97 rows 33 of 3, not 48.
    base = lambda x: an.baseline_tiling("AddRmsNormDynamicQuant", [x, x, [x[1]]], "bfloat16", "Ascend910B2")
    assert [base(x)["blockDim"] for x in ([50, 4096], [97, 20000], [4096, 4096])] == [25, 33, 48]


def test_group_norm_on_910b_has_one_channel_in_flight():
    # group_norm_silu_b16.h (910B, not the small-shape template): each channel's gamma and beta are read
    # into scalar registers (GetValue) before its load is issued (_g16.h: an explicit V_S wait), so
    # one channel is in flight: a channel costs a GM round trip whatever its size.  2.2x the data in
    # the same 8 channels a core (16 cores) takes about the same time; twice the channels, near twice.
    t = lambda x: _gn(x, 8)["time_us"]
    short, long = t([2, 64, 33, 65]), t([2, 64, 67, 71])
    assert long < 1.1 * short
    assert t([2, 128, 33, 65]) > 1.6 * short


def test_rms_norm_910b_core_count_and_float32_gamma_modes():
    # rms_norm_tiling.cpp (910B): blockFactor = ceil(rows / cores) rows a core on ceil(rows / blockFactor)
    # cores: 50 rows take 25 cores of 2 rows, not 48.
    base = lambda x, dt="float16", attrs=None: an.baseline_tiling("RmsNorm", [x, [x[-1]]], dt, "Ascend910B2",
                                                                attrs or {})
    assert base([50, 4096])["blockDim"] == 25
    assert base([100, 1000], "float32")["blockDim"] == 34
    # A float32 gamma with 16-bit x (CalMixDtypeTiling): a row of 13000 takes MODE_SINGLE_ROW, one whole row
    # a pass (14 bytes an element fit UB), where the 16-bit gamma's tiling splits it (SPLIT_D, over 12288).
    mixed = {"input_dtypes": ["bfloat16", "float32"]}
    assert base([1000, 13000], "bfloat16", mixed)["tileLen"] == 13008
    assert base([1000, 13000], "bfloat16")["tileLen"] < 13000
    # MERGE_N's rows a pass: (UB - 1 KB) / (16 x aligned H + 288) with the float32 gamma, + 260 without.
    assert base([4096, 128], "bfloat16", mixed)["tileLen"] == 195584 // (16 * 128 + 288) * 128
    assert base([4096, 128], "bfloat16")["tileLen"] == 195584 // (16 * 128 + 260) * 128
    r = an.tune_op("RmsNorm", [[50, 4096], [4096]], "float16", "Ascend910B2", max_evals=64)
    assert r.time_us <= r.baseline_us * (1 + 1e-9)
