"""CANN MatMulV3's default tiling (the MatMul baseline on A2/A3 SoCs): the restated
heuristic against CANN's own unit-test goldens, its use as the cost model's baseline,
and the map between MatMulV3 knowledge records and the model's tilings."""

import json
import math
from pathlib import Path

import pytest

import aoe_native as an
from aoe_native.ascend import matmul_v3, ops

B2 = "Ascend910B2"  # 24 cube cores, as the goldens' compile info
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "cann"
GOLDENS = SHARED / "matmul_v3_default_tiling_goldens_910b.json"
BANK = SHARED / "Ascend910B2_24_AiCore_MatMulV3_runtime_kb.json"
FIELDS = ("usedCoreNum", "singleCoreM", "singleCoreN", "singleCoreK", "baseM", "baseN", "baseK", "depthA1", "depthB1",
          "stepM", "stepN", "stepKa", "stepKb")
DTYPES = {"FLOAT16": "float16", "BF16": "bfloat16", "FLOAT": "float32"}

# Corrections of the golden file's inputs, from the unit test's source
# (hicann/ops-nn @ e5c3fa93 matmul/mat_mul_v3/tests/ut/op_host/test_matmul_v3_tiling.cpp):
# its `bias` flag is rough (../shared/reference/cann/README.md).
BIAS = {"MatMulV3_bias_test": True}  # has_bias = true (line 1728 of the UT)
# Cases the restatement does not reproduce, and why.
NOT_MODELLED = {
    # M <= 128 with B transposed: CANN replaces the tiling with the closed TBE cache tiling (DoIncreTiling).
    "MatMulV3_incre_test01": "closed TBE incre tiling",
    # opImplMode 0x4 (enable_force_grp_acc_for_fp32): a mode the model does not take.
    "MatMulV3_basic_force_grp_acc_for_fp32": "force-group-accumulate fp32 mode",
    # fp32 NKM single-core split-K: its core count comes from code not restated (20 cores, singleCoreM 200).
    "MatMulV3_basic_testNKM": "NKM split-K core split",
}


def _case(c):
    g = c["golden"]
    return dict(m=g["M"], k=g["Ka"], n=g["N"], trans_a=c["trans_a"], trans_b=c["trans_b"],
                bias=BIAS.get(c["name"], c["bias"]), dtype=DTYPES[c["dtype"]], b_nz=c["formats"][2] == "FRACTAL_NZ")


def _diff(c):
    t = matmul_v3.default_tiling(**_case(c), soc_version=B2)
    return [f"{f} {t[f]} != {c['golden'][f]}" for f in FIELDS if t[f] != c["golden"][f]]


@pytest.fixture(scope="module")
def goldens():
    if not GOLDENS.exists():
        pytest.skip("../shared/reference/cann is not present")
    # A2's cases: A in ND (the 310P ones are NZ x NZ and have 8 cores).
    return [c for c in json.loads(GOLDENS.read_text()) if c["formats"][0] == "ND"]


def test_goldens_base_and_full_load_cases_are_reproduced(goldens):
    # Base and full-load templates: each task runs the whole K (split-K templates cut it).
    base = [c for c in goldens if c["golden"]["singleCoreK"] == c["golden"]["Ka"]]
    half = [c for c in base if c["dtype"] != "FLOAT"]
    assert len(base) >= 25 and len(half) >= 20
    wrong = {c["name"]: _diff(c) for c in base if _diff(c)}
    assert set(wrong) <= set(NOT_MODELLED), wrong
    assert 1 - len(wrong) / len(base) >= 0.9
    assert sum(c["name"] not in wrong for c in half) / len(half) >= 0.9


def test_goldens_all_cases(goldens):
    """All 46 A2 cases with A in ND (38 fp16/bf16), split-K templates included: only the
    paths listed in NOT_MODELLED differ."""
    wrong = {c["name"]: _diff(c) for c in goldens if _diff(c)}
    assert set(wrong) <= set(NOT_MODELLED), wrong
    half = [c for c in goldens if c["dtype"] != "FLOAT"]
    assert len(half) == 38
    assert sum(not _diff(c) for c in half) >= 37
    # The unmodelled paths are flagged, so outputs can say the baseline is approximate.
    assert not matmul_v3.default_tiling(32, 1408, 11264, trans_b=True)["exact"]


# B.4 of ../shared/reference/cann_bank_and_default_tiling.md (24-core 910B2, fp16, ND) and a
# few goldens inline, so something runs without ../shared:
# (M, K, N, trans_b) -> baseM, baseN, baseK, depthA1, depthB1, stepKa, stepKb, singleCoreM, tilingEnable
INLINE = [
    ((249, 512, 311, False), (32, 128, 64, 64, 16, 32, 8, 32, 0)),           # UT test00: small-shape path
    ((8192, 8192, 8192, True), (128, 256, 64, 16, 8, 8, 4, 128, 0)),         # UT test01: K a power of 2, no halving
    ((4096, 4096, 4096, False), (128, 256, 64, 16, 8, 8, 4, 128, 0)),
    ((1024, 1024, 1024, False), (96, 256, 64, 16, 8, 8, 4, 96, 0)),          # load-balanced baseM
    ((256, 2048, 1000, True), (128, 96, 128, 8, 8, 4, 4, 128, 0)),
    ((25088, 1152, 128, False), (128, 128, 128, 8, 8, 4, 4, 128, 0)),
    ((1568, 4608, 512, False), (80, 256, 64, 16, 8, 8, 4, 80, 0)),
    ((100352, 64, 256, False), (128, 256, 64, 2, 1, 1, 1, 256, 20)),         # BL1 full load: singleCoreM = 2 baseM
    ((8192, 3072, 1536, False), (128, 256, 64, 8, 8, 4, 4, 128, 0)),         # UT tilingOptimization: stepK 8 -> 4
    ((121926, 64, 64, True), (128, 64, 64, 2, 1, 1, 1, 256, 20)),            # UT longseq_test1
    ((1024, 30720, 1024, False), (128, 128, 128, 9, 6, 3, 3, 384, 3)),       # UT test13: multi-core split-K
]


@pytest.mark.parametrize("shape,want", INLINE)
def test_worked_examples(shape, want):
    m, k, n, tb = shape
    t = matmul_v3.default_tiling(m, k, n, trans_b=tb, soc_version=B2)
    got = tuple(t[f] for f in ("baseM", "baseN", "baseK", "depthA1", "depthB1", "stepKa", "stepKb", "singleCoreM",
                               "tilingEnable"))
    assert got == want
    assert t["usedCoreNum"] == 24 and t["exact"]


def test_the_matmul_baseline_is_matmulv3_and_runs_round_robin():
    shape = [[4096, 4096], [4096, 4096]]
    t = ops.baseline_tiling("MatMul", shape, "float16", B2)
    assert ops.baseline_kind("MatMul", shape, "float16", B2) == ops.BASELINE_EXACT
    assert {k: t[k] for k in ("dispatch", "usedCoreNum", "singleCoreM", "singleCoreN", "baseM", "baseN", "baseK",
                              "depthA1", "depthB1", "stepKa", "stepKb", "unitFlag")} == dict(
        dispatch=1, usedCoreNum=24, singleCoreM=128, singleCoreN=256, baseM=128, baseN=256, baseK=64, depthA1=16,
        depthB1=8, stepKa=8, stepKb=4, unitFlag=1)
    # 512 blocks dealt over 24 cores: 22 waves (issue 47).
    assert an.estimate("MatMul", shape, "float16", B2, t).breakdown["waves"] == 22
    # The static split cannot express it: one rectangle per core.
    with pytest.raises(ValueError, match="dispatch == 1 or"):
        an.estimate("MatMul", shape, "float16", B2, {**t, "dispatch": 0, "l2MTileBlock": 1, "l2NTileBlock": 1})
    r = an.tune_op("MatMul", shape, soc_version=B2)
    assert r.baseline_kind == ops.BASELINE_EXACT and r.baseline_tiling == t
    assert r.tiling["dispatch"] == 1  # AOE tunes MatMulV3's kernel, not a custom one
    assert 0 < r.improvement < 0.5
    # Conv on 910B is a closed TBE op: its baseline is a stand-in, and says so.
    conv = ("Conv", [[1, 64, 56, 56], [64, 64, 3, 3]], "float16", B2)
    assert ops.baseline_kind(*conv, attrs={"pads": [1, 1, 1, 1]}) == ops.BASELINE_APPROXIMATE
    assert an.tune_op(*conv, attrs={"pads": [1, 1, 1, 1]}, max_evals=50).baseline_kind == ops.BASELINE_APPROXIMATE


def test_baseline_of_the_small_golden_shape():
    """Issue 47's example: M=249, K=512, N=311 is 32x128x64, depth 64/16, stepK 32/8 in CANN."""
    t = ops.baseline_tiling("MatMul", [[249, 512], [512, 311]], "float16", B2)
    assert (t["baseM"], t["baseN"], t["baseK"], t["depthA1"], t["depthB1"], t["stepKa"], t["stepKb"]) == (
        32, 128, 64, 64, 16, 32, 8)


def _knowledge(m, k, n, **kw):
    d = matmul_v3.default_tiling(m, k, n, soc_version=B2, **kw)
    return {f: d[f] for f in matmul_v3.KNOWLEDGE_FIELDS}


@pytest.mark.parametrize("m,k,n", [(4096, 4096, 4096), (249, 512, 311), (1024, 30720, 1024), (100352, 64, 256),
                                   (16, 4096, 4096)])
def test_knowledge_maps_onto_the_baseline_and_back(m, k, n):
    kn = _knowledge(m, k, n)
    t = matmul_v3.tiling_from_knowledge(kn, m, k, n, cube_cores=24)
    base = ops.baseline_tiling("MatMul", [[m, k], [k, n]], "float16", B2)
    assert t == base
    back = matmul_v3.knowledge_from_tiling(t, m, k, n)
    assert list(back) == list(matmul_v3.KNOWLEDGE_FIELDS)
    # (Multi-core split-K: the model's K slice and one L2 tile stand for CANN's chunk and tiles.)
    split_k = kn["tilingEnable"] % 10 == 3
    same = {f for f in matmul_v3.KNOWLEDGE_FIELDS if not (split_k and (f == "singleCoreK" or f.startswith("l2")))}
    assert {f: back[f] for f in same} == {f: kn[f] for f in same}


def test_knowledge_templates_and_errors():
    kn = _knowledge(4096, 4096, 4096)
    shifted = matmul_v3.tiling_from_knowledge({**kn, "tilingEnable": 10000}, 4096, 4096, 4096)
    assert shifted["kReorderLoad"] == 1 and shifted["tilingEnable"] == 0
    assert matmul_v3.knowledge_from_tiling(shifted, 4096, 4096, 4096)["tilingEnable"] == 10000
    assert matmul_v3.tiling_from_knowledge({**kn, "tilingEnable": 6}, 4096, 4096, 4096)["dispatch"] == 0
    with pytest.raises(ValueError, match="tilingEnable 12 .*cannot be priced"):
        matmul_v3.tiling_from_knowledge({**kn, "tilingEnable": 12}, 4096, 4096, 4096)
    with pytest.raises(ValueError, match="not a MatMulV3 template code"):
        matmul_v3.tiling_from_knowledge({**kn, "tilingEnable": 7}, 4096, 4096, 4096)
    with pytest.raises(ValueError, match="missing field.*baseK"):
        matmul_v3.tiling_from_knowledge({f: v for f, v in kn.items() if f != "baseK"}, 4096, 4096, 4096)
    static = ops.complete_tiling("MatMul", [[4096, 4096], [4096, 4096]], "float16", B2,
                                 {**{k: v for k, v in ops.baseline_tiling("MatMul", [[64, 64], [64, 64]]).items()
                                     if k not in ("dispatch", "tilingEnable")}})
    with pytest.raises(ValueError, match="dispatch 0 .*has no MatMulV3 record"):
        matmul_v3.knowledge_from_tiling({**static, "dispatch": 0, "tilingEnable": 0}, 4096, 4096, 4096)
    with pytest.raises(ValueError, match="dtype must be one of"):
        matmul_v3.default_tiling(64, 64, 64, dtype="int8")
    with pytest.raises(ValueError, match="M, K, N must be"):
        an._core.ascend.matmul_v3_default_tiling(0, 64, 64)
    # A template the model does not price is refused by its restrictions, naming them.
    t = ops.baseline_tiling("MatMul", [[4096, 4096], [4096, 4096]], "float16", B2)
    with pytest.raises(ValueError, match="tilingEnable == 0 or tilingEnable == 2"):
        an.estimate("MatMul", [[4096, 4096], [4096, 4096]], "float16", B2, {**t, "tilingEnable": 4})


def test_shipped_bank_records_read_as_model_tilings():
    """The fp16 records of the bank CANN ships for 910B2 map onto tilings the model estimates
    (those whose templates it prices), and their tuned times beat or approach the default."""
    if not BANK.exists():
        pytest.skip("../shared/reference/cann is not present")
    read = 0
    for line in BANK.read_text().splitlines():
        rec = json.loads(line) if line.strip() else {}
        info, kn = rec.get("info_dict"), rec.get("knowledge")
        if not info or info["a_dtype"] != 1 or info["a_format"] != 2 or info["b_format"] != 2 or info["bias_flag"]:
            continue
        m, k, n = info["m"], info["k"], info["n"]
        try:
            t = matmul_v3.tiling_from_knowledge(kn, m, k, n, cube_cores=24)
        except ValueError as e:
            assert "cannot be priced" in str(e)
            continue
        a = [k, m] if info["trans_a_flag"] else [m, k]
        b = [n, k] if info["trans_b_flag"] else [k, n]
        attrs = {"transpose_a": int(info["trans_a_flag"]), "transpose_b": int(info["trans_b_flag"])}
        est = an.estimate("MatMul", [a, b], "float16", B2, t, attrs=attrs)
        assert math.isfinite(est.time_us) and est.time_us > 0
        read += 1
    assert read >= 30


def test_staggered_dealing_leaves_no_shared_block_in_a_wave():
    """C220 MatMulV3's base template with l2IterateOrder 0 deals the i-th block of an L2 tile to
    row i % mCnt, column (i + i / lcm(mCnt, nCnt)) % nCnt (ops-nn mat_mul_base_block.h
    UpdateBasicIndex): with 24 or more blocks along both axes the 24 cores of a wave read 24
    different A rows and B columns, so kReorderLoad (which staggers cores that share a block)
    changes nothing; with fewer rows (8 here) three cores share each A row and it does."""
    def both(inputs):
        base = dict(ops.baseline_tiling("MatMul", inputs, "float16", B2))
        staggered = dict(base, kReorderLoad=1)
        return base, [ops.estimate("MatMul", inputs, "float16", B2, t).time_us for t in (base, staggered)]

    base, (plain, reordered) = both([[3072, 2048], [2048, 6144]])
    assert (base["dispatch"], base["tilingEnable"], base["l2IterateOrder"]) == (1, 0, 0)
    assert (base["l2MTileBlock"], base["l2NTileBlock"]) == (24, 24)
    assert plain == pytest.approx(reordered, rel=1e-12)
    base, (plain, reordered) = both([[1024, 2048], [2048, 6144]])
    assert base["l2MTileBlock"] == 8
    assert reordered < plain
