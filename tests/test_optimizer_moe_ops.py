"""Issue 49's optimizer and MoE routing kernels (cpp/src/ascend/optimizer.cpp, moe_routing.cpp):
ForeachAddcdivScalar, ForeachNorm, ApplyAdamW, Gcd, MoeGatingTopKSoftmax, MoeInitRouting,
MoeReRouting, MoeFinalizeRouting and MhcSinkhorn."""
import itertools
import math
import statistics

import pytest

import aoe_native as an
from aoe_native.ascend import records

SOC = "Ascend910B2"

# (op_type, inputs, dtype, attrs) of a small and of a larger instance of each operator.
SQ, SQ2 = [1024, 1024], [2048, 2048]
CASES = {
    "ForeachAddcdivScalar": (([SQ] * 3, "float16", {"tensor_count": 1}),
                             ([SQ, SQ2] * 3, "float16", {"tensor_count": 2})),
    "ForeachNorm": (([SQ, SQ], "float32", {"tensor_count": 2, "norm_type": 2}),
                    ([SQ2, SQ2], "float32", {"tensor_count": 2, "norm_type": 2})),
    "ApplyAdamW": (([SQ] * 4, "bfloat16", {}), ([SQ2] * 4, "bfloat16", {})),
    "Gcd": (([SQ, SQ], "int32", {}), ([SQ2, SQ2], "int32", {})),
    "MoeGatingTopKSoftmax": (([[512, 64]], "float16", {"k": 8}), ([[8192, 64]], "float16", {"k": 8})),
    "MoeInitRouting": (([[512, 4096], [512, 8]], "bfloat16", {"expert_num": 64}),
                       ([[4096, 4096], [4096, 8]], "bfloat16", {"expert_num": 64})),
    "MoeReRouting": (([[1024, 512], [8, 8], [1024]], "float16", {}),
                     ([[16384, 512], [8, 8], [16384]], "float16", {})),
    "MoeFinalizeRouting": (([[2048, 512], [2048], [512, 512], [], [16, 512], [512, 4], [512, 4]], "float16", {}),
                           ([[8192, 512], [8192], [2048, 512], [], [16, 512], [2048, 4], [2048, 4]], "float16", {})),
    "MhcSinkhorn": (([[64, 4, 4]], "float32", {"iter_step": 20}), ([[8192, 4, 4]], "float32", {"iter_step": 20})),
}


def _time(op, inputs, dtype, attrs, soc=SOC):
    tiling = an.baseline_tiling(op, inputs, dtype, soc, attrs)
    return an.estimate(op, inputs, dtype, soc, tiling, attrs).time_us


@pytest.mark.parametrize("op", sorted(CASES))
def test_more_data_costs_more(op):
    (small, large) = CASES[op]
    t_small, t_large = _time(op, *small), _time(op, *large)
    assert 0 < t_small < t_large


@pytest.mark.parametrize("op", sorted(CASES))
def test_tiling_space_holds_the_baseline(op):
    inputs, dtype, attrs = CASES[op][1]
    space = an.tiling_space(op, inputs, dtype, SOC, attrs)
    base = an.baseline_tiling(op, inputs, dtype, SOC, attrs)
    assert len(space.configs()) > 1
    assert space.index([base[n] for n in space.param_names]) is not None
    assert an.ascend.ops.baseline_kind(op, inputs, dtype, SOC, attrs) == "approximate CANN default"
    # Tuning can only help: the best tiling of the space is no slower than the baseline.
    best = an.tune_op(op, inputs, dtype, SOC, attrs=attrs, max_evals=64)
    assert best.time_us <= _time(op, inputs, dtype, attrs) * (1 + 1e-9)


def test_more_experts_and_more_topk_cost_more():
    assert _time("MoeGatingTopKSoftmax", [[4096, 64]], "float16", {"k": 8}) > \
        _time("MoeGatingTopKSoftmax", [[4096, 64]], "float16", {"k": 1})
    k1 = [[2048, 512], [2048], [2048, 512], [], [16, 512], [2048, 1], [2048, 1]]
    k4 = [[8192, 512], [8192], [2048, 512], [], [16, 512], [2048, 4], [2048, 4]]
    assert _time("MoeFinalizeRouting", k4, "float16", {}) > _time("MoeFinalizeRouting", k1, "float16", {})


def test_gating_kernel_reduces_tiles_of_rows_on_both_chips():
    # CANN's MoeGatingTopKSoftmax reduces a UB tile of rows per call on 910B and 950 alike: no
    # scalar wait per row and reduction (910B's TBE Softmax has one), so 910B2's time stays near
    # 950PR's for the same case (with a wait per row it was 5x).
    case = ([[512, 64]], "bfloat16", {"k": 8})
    ratio = _time("MoeGatingTopKSoftmax", *case) / _time("MoeGatingTopKSoftmax", *case, soc="Ascend950PR")
    assert 0.7 < ratio < 2


def _gating_time(soc, row_cycles, tokens, experts, topk):
    plat = an.Platform.from_dict({**an.ascend.platforms.native_platform(soc).to_dict(),
                                  "vec_row_cycles": row_cycles}, "test")
    attrs = {"k": topk}
    tiling = an.baseline_tiling("MoeGatingTopKSoftmax", [[tokens, experts]], "bfloat16", plat, attrs)
    return an.estimate("MoeGatingTopKSoftmax", [[tokens, experts]], "bfloat16", plat, tiling, attrs).time_us


def test_gating_on_910b_waits_as_an_ascend_c_kernel_not_as_tbe_softmax():
    # CANN's 910B perf kernel (ops-transformer moe_gating_top_k_softmax_perf.h computeRowIdxForSmallBatch)
    # writes each of a UB loop's first 8 rows' source_row_idx with ArithProgression, whose scalar
    # SetValue calls wait for the vector pipe (V -> S) first: an Ascend C kernel's scalar wait
    # (kVecScalarWait), not the per-reduce-call wait fitted on 910B's TBE Softmax (vec_row_cycles).
    for tokens, experts, topk in [(48, 64, 8), (512, 64, 8), (8192, 64, 16)]:
        assert _gating_time("Ascend910B2", 1000.0, tokens, experts, topk) == \
            _gating_time("Ascend910B2", 0.0, tokens, experts, topk)
    # 950PR's kernel model has no such wait at all.
    assert _gating_time("Ascend950PR", 1000.0, 512, 64, 8) == _gating_time("Ascend950PR", 0.0, 512, 64, 8)


def test_gating_on_910b_launches_cann_block_num():
    # CANN's tiling (moe_gating_top_k_softmax_tiling_perf.cpp DoOpTiling) gives a core ceil(T / 48) rows
    # and launches ceil(T / that) cores: 100 tokens take 34 cores of 3 rows (the last 1), not 48.
    tiling = an.baseline_tiling("MoeGatingTopKSoftmax", [[100, 64]], "bfloat16", SOC, {"k": 8})
    assert tiling["blockDim"] == 34
    assert an.baseline_tiling("MoeGatingTopKSoftmax", [[100, 64]], "bfloat16", "Ascend950PR", {"k": 8})["blockDim"] == 64


def _cann_gating_tiling(tokens, experts, topk, dtype, cores=48, ub=196608):
    """CANN's 910B template choice and tiling (ops-transformer moe_gating_top_k_softmax @ c29bc10,
    op_host/*_tiling_perf.cpp and *_tiling_e_k_full_load.cpp IsCapable / DoOpTiling / calcMaxRowInUb /
    isBufferSizeEnough; asc-devkit GetSoftMaxMaxTmpSize and GetTopKMaxMinTmpSize220 for the API
    temporaries): (template, blockNum, rows of a UB loop, UB loops of a full core, bufferNum)."""
    former = -(-tokens // cores)
    col_align = -(-experts // 32) * 32
    align32 = lambda b: -(-b // 32) * 32

    def perf_bytes(rows):  # row_idx out, 96 B, finished x 2, six [rows, colAlign] fp32 buffers
        return align32(topk * 4) * rows + 96 + 2 * 32 * rows + 6 * rows * col_align * 4

    def ek_bytes(rows):  # index row, x, source_row, max(SoftMax tmp, TopK tmp), y + expert_idx, finished
        size = 2 if dtype == "float16" else 4  # bf16 computed in fp32
        tmp = max(rows * (32 // size + col_align + 64) * 4, 16 * col_align)
        return col_align * 4 + rows * col_align * (size + 4) + tmp + rows * (align32(topk * size) + align32(topk * 4) + 32)

    if (experts <= 1024 and experts % 8 == 0 and topk <= 8) or experts < 8:
        name, buffers, fits = "perf", 2, lambda r: perf_bytes(r) <= ub
    else:  # e_k_full_load (one row fits UB for every grid shape): double-buffered when a row fits half
        buffers = 2 if ek_bytes(1) <= ub // 2 else 1
        name, fits = "e_k_full_load", lambda r: ek_bytes(r) <= ub // buffers
    outer = 1
    while not fits(-(-former // outer)):
        outer += 1
    rows = -(-former // outer)
    return name, -(-tokens // former), rows, -(-former // rows), buffers


def test_gating_on_910b_takes_cann_template_and_rows_per_ub_loop():
    # 910B's baseline follows CANN's template choice (perf for experts % 8 == 0 with k <= 8, else
    # e_k_full_load), its core split, UB loop count and queue depth over tokens x experts x k x dtype,
    # with and without finished (the sample's tile of a core's share / 16 gave 22 loops where the perf
    # template takes 2 for 8192 x 64, and 19 where e_k_full_load takes 3 for 8192 x 100 fp16).
    for dtype in ("float16", "bfloat16", "float32"):
        align = 32 // (4 if dtype == "float32" else 2)
        for tokens in (1, 49, 100, 512, 8192, 65536):
            for experts in (8, 60, 64, 100, 256, 257, 512):
                for topk in (k for k in (1, 8, 9, 16) if k <= experts):
                    name, block_num, rows, loops, buffers = _cann_gating_tiling(tokens, experts, topk, dtype)
                    for inputs in ([[tokens, experts]], [[tokens, experts], [tokens]]):
                        t = an.baseline_tiling("MoeGatingTopKSoftmax", inputs, dtype, SOC, {"k": topk})
                        former = -(-tokens // t["blockDim"])
                        model_rows = t["tileLen"] // (-(-experts // align) * align)
                        case = (name, tokens, experts, topk, dtype, len(inputs), t)
                        assert t["blockDim"] == block_num, case
                        assert -(-former // model_rows) == loops, case
                        assert t["bufferNum"] == buffers, case


def test_gating_e_k_full_load_sorts_each_row():
    # e_k_full_load's TopK API sorts row by row (asc-devkit topk_v220_impl.h TopKCompute): its time
    # grows with the rows of a core and, through the merge passes, with the experts; k moves it little
    # (only the last 2-way merges and the gathers see k), unlike the perf template's.
    t = lambda tokens, experts, topk: _time("MoeGatingTopKSoftmax", [[tokens, experts]], "float16", {"k": topk})
    assert t(8192, 257, 16) > 1.3 * t(8192, 100, 16)
    assert t(8192, 100, 16) > 1.5 * t(2048, 100, 16)
    assert t(8192, 100, 16) < 1.1 * t(8192, 100, 9)


def test_foreach_norm_on_910b_loads_and_reduces_a_tile_in_turn():
    # CANN's 910B ForeachNorm (ops-nn foreach/foreach_norm/op_kernel/foreach_norm.h) reads each
    # tile's sum back to the scalar unit before it issues the next tile's load: no overlap
    # (bufferNum 1) at its own UB tile, (UB - 4496 - 16384) / 2 bytes for fp32
    # (foreach_reduce_tiling_func.cpp DivideUbMemory).  Many tiles a core pay for it; 950PR's
    # regbase kernel and 910B's infinity norm (a LpNormV2 kernel) keep the overlapped pipeline.
    x, attrs = [[255, 8193]] * 4, {"tensor_count": 4, "norm_type": 1}
    base = an.baseline_tiling("ForeachNorm", x, "float32", SOC, attrs)
    assert base["bufferNum"] == 1 and base["tileLen"] == (196608 - 4496 - 16384) // 2 // 32 * 32 // 4
    serial = an.estimate("ForeachNorm", x, "float32", SOC, base, attrs).time_us
    overlapped = an.estimate("ForeachNorm", x, "float32", SOC, {**base, "tileLen": 16384, "bufferNum": 2},
                             attrs).time_us
    # (1.06x with the 910B2 constants of issue 48 round 5's refit: the overlap hides the smaller
    # of load and reduce, so the margin moves with the fitted vector costs.)
    assert serial > 1.03 * overlapped
    assert an.baseline_tiling("ForeachNorm", x, "float32", "Ascend950PR", attrs)["bufferNum"] == 2
    inf = {"tensor_count": 4, "norm_type": 0}
    assert an.baseline_tiling("ForeachNorm", x, "float32", SOC, inf)["bufferNum"] == 2


def test_foreach_addcdiv_on_910b_loads_computes_and_stores_a_tile_in_turn():
    # CANN's 910B ForeachAddcdivScalar (ops-nn foreach_utils/op_kernel/
    # foreach_one_scalar_quaternary_implict_output.h Compute) waits V->MTE3 before a tile's store and
    # MTE3->MTE2 after it, so the next tile's loads wait for the store: the pipeline of bufferNum 1,
    # at its own tile (foreach_tiling_class.h DivideUbMemory1): (UB - 3056) / 8 bytes for fp32,
    # 9x (UB - 3056) / 10 / 8 (64-byte rounded) bytes for 16-bit data.  950PR's kernel overlaps.
    x, attrs = [[2048, 4096]] * 3, {"tensor_count": 1}
    base = an.baseline_tiling("ForeachAddcdivScalar", x, "float32", SOC, attrs)
    assert base["bufferNum"] == 1 and base["tileLen"] == (196608 - 3056) // 8 // 32 * 32 // 4
    half = an.baseline_tiling("ForeachAddcdivScalar", x, "bfloat16", SOC, attrs)
    assert half["bufferNum"] == 1 and half["tileLen"] == 9 * ((196608 - 3056) // 10 // 8 // 64 * 64) // 2
    serial = an.estimate("ForeachAddcdivScalar", x, "bfloat16", SOC, half, attrs)
    overlapped = an.estimate("ForeachAddcdivScalar", x, "bfloat16", SOC, {**half, "bufferNum": 2}, attrs)
    b = serial.breakdown
    # In turn: the core's time is its loads', vector work's and stores' sum, which overlap would hide.
    assert serial.time_us > overlapped.time_us + 0.5 * min(b["vector_us"], b["mte2_us"])
    assert an.baseline_tiling("ForeachAddcdivScalar", x, "float32", "Ascend950PR", attrs)["bufferNum"] == 2
    # Cores: min(cores, 32-byte blocks) (GetNeedCoreNum): 100 fp32 elements take 13 cores, not 48.
    tiny = an.baseline_tiling("ForeachAddcdivScalar", [[100]] * 3, "float32", SOC, attrs)
    assert tiny["blockDim"] == 13


def _cann_foreach_split(counts, ds, reduce, cores=48):
    """CANN's 910B split of a tensor list (hicann/ops-nn @ e5c3fa93, foreach_utils/op_host/
    foreach_tiling_class.h GetNeedCoreNum + AssignDataToEachCore; ForeachNorm's
    foreach_reduce_tiling_func.cpp, each tensor rounded up to 32-byte blocks, walked tensor by
    tensor as its AssignDataToEachCore does).  Returns needCoreNum and each core's parts."""
    epb = 32 // ds
    blocks = sum(-(-n // epb) for n in counts) if reduce else -(-sum(counts) // epb)
    need = min(cores, max(1, blocks))
    per, rem = blocks // need * epb, blocks % need
    parts, core, data, cursor, i = [[] for _ in range(need)], 0, 0, 0, 0
    while i < len(counts):
        share = per + epb if core < rem else per
        real = counts[i] - cursor
        span = -(-real // epb) * epb if reduce else real
        if core == need - 1 or data + span < share:  # the rest of tensor i stays on this core
            parts[core].append(real)
            data, cursor, i = data + span, 0, i + 1
            continue
        take = real if reduce and data + real < share else share - data
        parts[core].append(take)
        cursor, data, core = cursor + take, 0, core + 1
        if cursor >= counts[i]:
            cursor, i = 0, i + 1
    return need, [p for p in parts if p]


@pytest.mark.parametrize("op", ["ForeachAddcdivScalar", "ForeachNorm"])
def test_foreach_on_910b_follows_canns_tensor_list_split(op):
    # CANN's 910B foreach kernels give each core an even share of the list's 32-byte blocks across
    # tensor boundaries and loop over the core's part of each tensor on its own (kernel_foreach_unary.h
    # Process / SingleTensorProcess, foreach_norm.h Process): a core's tiles are the sum over its parts
    # of ceil(part / maxDataCount), and each part after the first waits a load and a store.  The model
    # takes CANN's cores and UB tile, and prices the same total elements higher where CANN's busiest
    # core loops more (the old model: one even share, the same time for any list).
    reduce = op == "ForeachNorm"
    for dtype, ds in (("float32", 4), ("bfloat16", 2)):
        ub = (196608 - 4496 - 16384) // (10 if ds == 2 else 1) // 2 if reduce else \
            (196608 - 3056) // (10 if ds == 2 else 1) // 8
        rnd = 64 if (ds == 2 and (not reduce or dtype == "bfloat16")) else 32
        tile = (9 * (ub // rnd * rnd) if ds == 2 else ub // rnd * rnd) // ds
        total = 48 * 2000  # few tiles a core: its loop, not HBM, bounds the time
        rows = []
        for count in (1, 3, 16, 50, 200):
            counts = [total // count] * count
            need, parts = _cann_foreach_split(counts, ds, reduce)
            inputs = [[n] for n in counts] * (1 if reduce else 3)
            attrs = {"tensor_count": count, **({"norm_type": 2} if reduce else {})}
            base = an.baseline_tiling(op, inputs, dtype, SOC, attrs)
            assert (base["blockDim"], base["tileLen"]) == (need, tile), (op, dtype, count)
            loops = max(sum(-(-x // tile) for x in p) for p in parts)
            most = max(len(p) for p in parts)
            rows.append((loops, most, an.estimate(op, inputs, dtype, SOC, base, attrs).time_us, count))
        for a, b in itertools.combinations(sorted(rows), 2):
            if b[0] > a[0] and b[1] > a[1]:
                assert b[2] > a[2], (op, dtype, a, b)
    # Tiny lists: the norm's cores count each tensor's own blocks (3 x 5 fp32 elements: 3 cores).
    if reduce:
        assert an.baseline_tiling(op, [[5]] * 3, "float32", SOC, {"tensor_count": 3})["blockDim"] == 3


def test_apply_adam_w_on_910b_takes_the_tbe_elementwise_cores():
    # 910B's ApplyAdamW is CANN's TBE kernel; its block tiling (canndev op_tiling/elewise_v3.cc
    # CalcMultiCore, DoBlockTiling): one core below 2 x 48 32-byte blocks, else ceil(n / 48) rounded
    # up to 128 elements a core (1600 bf16 elements: 13 cores; 10000: 40), not min(48, n).
    for dtype, ds in (("float32", 4), ("bfloat16", 2)):
        for n in (100, 1000, 1600, 5000, 10000, 99999, 1000003):
            share = -(-(-(-n // 48)) // 128) * 128
            want = 1 if n < 32 // ds * 48 * 2 else -(-n // share)
            for amsgrad in (0, 1):
                t = an.baseline_tiling("ApplyAdamW", [[n]] * (4 + amsgrad), dtype, SOC, {"amsgrad": amsgrad})
                assert t["blockDim"] == want, (dtype, n, amsgrad)


def test_apply_adam_w_on_910b_follows_the_tbe_compute_and_elewise_tiling():
    # CANN 8.1.RC1 tbe/impl/dynamic/apply_adam_w.py under the elewise schedule: 7 coexisting UB nodes
    # (8 with amsgrad's max_grad_norm), of fp32 (bf16 cast up; fp16 computed in fp16, 2-byte nodes),
    # passes double-buffered once a core's block outgrows them (elewise_v3.cc DoUbTiling).
    from test_measured_ops import _tbe_elewise_tiling
    mismatches = 0
    for dtype in ("float16", "bfloat16", "float32"):
        for n in (700, 1600, 10000, 99999, 1000003, 255 * 8193, 1 << 24):
            for amsgrad in (0, 1):
                t = an.baseline_tiling("ApplyAdamW", [[n]] * (4 + amsgrad), dtype, SOC, {"amsgrad": amsgrad})
                want = _tbe_elewise_tiling("ApplyAdamW", n, dtype, nodes=7 + amsgrad, node=2 if dtype == "float16" else 4)
                mismatches += (t["blockDim"], t["tileLen"], t["bufferNum"]) != want
    assert mismatches == 0
    # maximize flips vmuls(grad, 1)'s constant: the same instructions.
    x = [[1000003]] * 4
    for dtype in ("float16", "float32"):
        plain = an.estimate("ApplyAdamW", x, dtype, SOC, an.baseline_tiling("ApplyAdamW", x, dtype, SOC), {})
        flip = an.estimate("ApplyAdamW", x, dtype, SOC, an.baseline_tiling("ApplyAdamW", x, dtype, SOC),
                           {"maximize": 1})
        assert flip.breakdown["vector_us"] == pytest.approx(plain.breakdown["vector_us"])


def test_foreach_addcdiv_on_910b_casts_16_bit_tiles_in_pieces():
    # CANN's 910B kernel computes a 16-bit tile in fp32 pieces of (UB - 3056) / 10 / 8 / 4 elements
    # (592; foreach_addcdiv_scalar.cpp AddcDivScalarAdapter), six vector calls a piece each behind a
    # PipeBarrier: the calls' start is paid per piece, so a large tile costs the vector unit per
    # element what a small one does (calls charged per tile made a 1024-element tile 1.5x dearer).
    x, attrs = [[2048, 4096]] * 3, {"tensor_count": 1}
    base = an.baseline_tiling("ForeachAddcdivScalar", x, "bfloat16", SOC, attrs)

    def vector_us(tile):
        t = {**base, "tileLen": tile}
        return an.estimate("ForeachAddcdivScalar", x, "bfloat16", SOC, t, attrs).breakdown["vector_us"]

    assert vector_us(1024) < 1.05 * vector_us(8192)


def _finalize(topk, soc=SOC, tokens=2048, h=512):
    inputs = [[tokens * topk, h], [tokens * topk], [tokens, h], [], [16, h], [tokens, topk], [tokens, topk]]
    return _time("MoeFinalizeRouting", inputs, "float16", {}, soc=soc)


def test_finalize_routing_on_910b_gathers_two_rows_at_a_time():
    # CANN's 910B kernel (ops-transformer moe_finalize_routing_v2_fp_db_all_bias.h Compute) has two
    # gathered rows in flight (ping and pong, PARALLEL_NUM 2) and waits on them together; an odd
    # k's last row waits alone.  k = 2 waits as long a token as k = 1 (it moves more bytes only),
    # k = 3 as long as k = 4.  The 950 generation's model keeps a wait per gathered row.
    t1, t2, t3 = _finalize(1), _finalize(2), _finalize(3)
    assert t2 < 1.2 * t1
    assert t3 > 1.5 * t2
    assert _finalize(2, "Ascend950PR") > 1.3 * _finalize(1, "Ascend950PR")


def _finalize_dt(dtype, tokens, h, topk=8):
    inputs = [[tokens * topk, h], [tokens * topk], [tokens, h], [tokens, h], [16, h], [tokens, topk], [tokens, topk]]
    attrs = {"input_dtypes": [dtype, "int32", dtype, dtype, dtype, dtype, "int32"]}
    tiling = an.baseline_tiling("MoeFinalizeRouting", inputs, dtype, SOC, attrs)
    return tiling, an.estimate("MoeFinalizeRouting", inputs, dtype, SOC, tiling, attrs).time_us


def test_finalize_routing_on_910b_follows_cann_template_choice():
    # CANN's 910B tiling (ops-transformer moe_finalize_routing_v2_tiling_membase.cpp) gives a core
    # ceil(150 / 48) = 4 tokens on ceil(150 / 4) = 38 cores, and takes the first template whose UB
    # budget holds a token.  At H = 7168, fp16 loads 2 tokens a loop (LoadBiasAndCalcTiling), while
    # bf16 (buffers 3x, cast to fp32) fits neither that nor LoadHK: CutH, one token a loop in 2 slices
    # of H, each loop waiting for its CopyIn and each slice for its own gathers, the row indices read
    # from GM in scalar code (the *_all_bias kernels copy them to UB).  At H = 512 both load a core's
    # tokens at once and differ only by the casts.
    t16, fp16 = _finalize_dt("float16", 150, 7168)
    _, bf16 = _finalize_dt("bfloat16", 150, 7168)
    assert t16["blockDim"] == 38
    assert bf16 > 1.25 * fp16
    _, small16 = _finalize_dt("float16", 150, 512)
    _, small_bf16 = _finalize_dt("bfloat16", 150, 512)
    assert small_bf16 < 1.1 * small16


def _cann_finalize_910b(T, H, k, dtype, skip1, skip2, bias, drop_pad=0, cores=48, ub=196608 - 1024):
    """CANN's 910B MoeFinalizeRoutingV2 tiling (ops-transformer moe_finalize_routing_v2 @ c29bc10,
    op_host/moe_finalize_routing_v2_tiling_membase.cpp CalcTilingData), scales of the data's dtype,
    k <= 256: (usedCoreNum, template, H slices a token)."""
    ds, b, s2 = (4 if dtype == "float32" else 2), int(bias), int(skip2)
    core = math.ceil(T / cores)
    used = min(math.ceil(T / core), cores)
    h = math.ceil(H * ds / 32) * 32 // ds
    k_bytes = math.ceil(k * 4 / 32) * 32 + math.ceil(k * ds / 32) * 32
    big = 3 if dtype == "bfloat16" else 1
    if H == 5120 and dtype == "float32" and skip1 and bias and k % 2 == 0 and drop_pad == 0:  # OptimizedCutH
        nh = math.ceil(H * ds / 2 / 512) * 512 // ds
        if (ub - 5 * nh * ds - math.ceil(core / 8) * 8 * k * 4) // (2 * (2 + s2) * nh * ds + 2 * k_bytes) > 0:
            return used, "network", math.ceil(H / nh)
    fixed = (b + 1) * h * ds * 2 * 3 if big == 3 else (b + 1) * h * ds * 2 + h * ds  # LoadBiasAndCalcTiling
    row = (big * h * (1 + s2) + h) * ds
    if (ub - fixed - math.ceil(core / 8) * 8 * k * 4) // (row + k_bytes) > 0:
        return used, "all_bias", 1
    row += 0 if big == 3 else h * ds  # LoadHKAndCalcTiling
    if (ub - (b + 1) * h * ds * 2 * big) // (row + k_bytes) > 0:
        return used, "load_hk", 1
    unroll = 4 if k == 4 else 2  # CutH
    parts = 3 + 3 * s2 + 1 + (b + 1) * unroll * 3 if big == 3 else 3 + s2 + (b + 1) * unroll
    return used, "cut_h", math.ceil(H / ((ub - k_bytes) // parts // 32 * 32 // ds))


def _finalize_case(T, H, k, dtype, skip1=True, skip2=True, bias=True, drop_pad=0):
    x = [16, math.ceil(T * k / 16), H] if drop_pad else [T * k, H]
    inputs = [x, [T * k], [T, H] if skip1 else [], [T, H] if skip2 else [], [16, H] if bias else [], [T, k], [T, k]]
    attrs = {"drop_pad_mode": drop_pad}
    tiling = an.baseline_tiling("MoeFinalizeRouting", inputs, dtype, SOC, attrs)
    return tiling, an.estimate("MoeFinalizeRouting", inputs, dtype, SOC, tiling, attrs).time_us


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_finalize_routing_on_910b_follows_cann_tiling_on_a_grid(dtype):
    # MoeFinalizeRoutingV2 takes the bias (and skip1, skip2) as optional inputs: without a bias CANN's
    # UB budget holds no bias rows (biasIsNeedBuffer 0, the *_WITHOUT_BIAS keys).  Every case is
    # launched on CANN's usedCoreNum cores.
    for T, H, k, skips, bias in itertools.product([1, 49, 150, 4096], [128, 511, 5120, 7168, 16384], [1, 2, 3, 8],
                                                  [(True, True), (True, False), (False, False)], [True, False]):
        tiling, t = _finalize_case(T, H, k, dtype, *skips, bias=bias)
        used, _, _ = _cann_finalize_910b(T, H, k, dtype, *skips, bias)
        assert tiling["blockDim"] == used and t > 0, (T, H, k, skips, bias)
    # Where the bias alone moves CANN to a slower template (bf16 H = 7168: CutH with it, a core's rows
    # in UB without it), dropping it saves more than its rows' vector work.
    if dtype == "bfloat16":
        assert _cann_finalize_910b(150, 7168, 8, dtype, True, True, True)[1] == "cut_h"
        assert _cann_finalize_910b(150, 7168, 8, dtype, True, True, False)[1] == "all_bias"
        assert _finalize_case(150, 7168, 8, dtype)[1] > 1.25 * _finalize_case(150, 7168, 8, dtype, bias=False)[1]
    # fp32 H = 5120 with skip1, bias and an even k takes the network template (OptimizedCutH): two H
    # slices, each gathering the token's k rows again; drop_pad_mode 1 (or an odd k) keeps all_bias.
    if dtype == "float32":
        for k, network in [(2, True), (3, False)]:
            assert (_cann_finalize_910b(150, 5120, k, dtype, True, False, True)[1] == "network") == network
            ratio = _finalize_case(150, 5120, k, dtype, skip2=False)[1] / \
                _finalize_case(150, 5120, k, dtype, skip2=False, drop_pad=1)[1]
            assert ratio > 1.1 if network else ratio == pytest.approx(1, abs=0.02), k


def _re_routing(inputs, soc=SOC):
    tiling = an.baseline_tiling("MoeReRouting", inputs, "float16", soc, {})
    est = an.estimate("MoeReRouting", inputs, "float16", soc, tiling, {})
    return tiling, est


def test_re_routing_on_910b_runs_a_core_per_rank():
    # CANN's 910B tiling (ops-transformer moe_re_routing_membase_tiling.cpp) launches one core per
    # rank: the same tokens over 2 ranks take 2 cores, each copying half of them, well over
    # 3x the time of 8 ranks on 8 cores; the 950 generation's tiling spreads them over its cores.
    tokens = [4096, 512]
    t8, e8 = _re_routing([tokens, [8, 8], [4096]])
    t2, e2 = _re_routing([tokens, [2, 32], [4096]])
    assert (t8["blockDim"], t2["blockDim"]) == (8, 2)
    assert e8.breakdown["cores_used"] == 8 and e2.breakdown["cores_used"] == 2
    assert e2.time_us > 3 * e8.time_us
    t950, _ = _re_routing([tokens, [2, 32], [4096]], soc="Ascend950PR")
    assert t950["blockDim"] > 2
    # The search may split a rank's blocks over more cores (as the 950 tiling does): faster.
    best = an.tune_op("MoeReRouting", [tokens, [2, 32], [4096]], "float16", SOC, attrs={}, max_evals=64)
    assert best.time_us < 0.5 * e2.time_us


def test_re_routing_small_blocks_wait_on_their_copies():
    # A core copies each (rank, expert) block in and out on its own: 1 KB blocks are bound by the
    # copies' round trip, so the same 1024 x 32 tokens in 8 experts a rank cost more than in one;
    # 64 KB blocks are bound by the transfer, so splitting them into more experts costs ~nothing.
    _, small8 = _re_routing([[1024, 32], [8, 8], [1024]])
    _, small1 = _re_routing([[1024, 32], [8, 1], [1024]])
    assert small8.time_us > 1.5 * small1.time_us
    _, big8 = _re_routing([[4096, 512], [8, 8], [4096]])
    _, big4 = _re_routing([[4096, 512], [8, 4], [4096]])
    assert big8.time_us == pytest.approx(big4.time_us, rel=0.1)


def _cann_re_routing_910b(A, H, R, E, dtype, cores=48, ub=196608):
    """CANN's 910B MoeReRouting tiling and loop count (ops-transformer moe_re_routing @ c29bc10,
    op_host/moe_re_routing_membase_tiling.cpp DoOpTiling; op_kernel/moe_re_routing.h Process), for
    counts spread evenly over the (rank, expert) blocks: (blockDim, ubFactor, loops of a busiest core)."""
    row_bytes = H * (1 if dtype == "int8" else 2)
    ub_factor = (ub - 12288) // 2 // (row_bytes + 4 + 4)  # the scale's 4 bytes counted even when absent
    block_dim = math.ceil(R / math.ceil(R / cores))
    block = math.ceil(A / (R * E))
    return block_dim, ub_factor, math.ceil(R / block_dim) * E * math.ceil(block / ub_factor)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8"])
@pytest.mark.parametrize("scales", [True, False])
def test_re_routing_on_910b_follows_cann_tiling_on_a_grid(dtype, scales):
    # blockDim (whole ranks a core: 50 ranks on 25 cores, 288 on 48) and the rows a UB pass moves.
    for (R, E), H in itertools.product([(4, 8), (8, 8), (50, 2), (100, 4), (288, 1)], [32, 511, 512, 7168, 16384]):
        A = 16384
        inputs = [[A, H], [R, E], [A] if scales else []]
        t = an.baseline_tiling("MoeReRouting", inputs, dtype, SOC, {})
        block_dim, ub_factor, _ = _cann_re_routing_910b(A, H, R, E, dtype)
        block = math.ceil(A / (R * E))
        assert t["blockDim"] == block_dim, (R, E, H)
        assert min(block, t["tileLen"] // H) == min(block, ub_factor), (R, E, H)
    # Each (rank, expert) block has its own copy loop, however small: 1-row blocks of 64 B, 4 a core,
    # take 4 round trips where one block of 4 rows takes one.
    def mte2(R, E):
        inputs = [[R * E, 32], [R, E], [R * E] if scales else []]
        t = an.baseline_tiling("MoeReRouting", inputs, dtype, SOC, {})
        block_dim, _, loops = _cann_re_routing_910b(R * E, 32, R, E, dtype)
        assert loops == math.ceil(R / block_dim) * E  # a loop a block
        return an.estimate("MoeReRouting", inputs, dtype, SOC, t, {}).breakdown["mte2_us"]
    assert mte2(8, 4) > 3 * mte2(8, 1)
    # Whole ranks a core: 49 ranks on 25 cores leave 2 ranks, 50 blocks, on the busiest (not 49 x 25 / 25).
    assert mte2(49, 25) == pytest.approx(2 * mte2(25, 25), rel=0.005)


def test_re_routing_first_copy_waits_on_a_gm_read_of_the_counts(measured):
    # CANN's 910B kernel (ops-transformer moe_re_routing.h Process) reads expert_token_num_per_rank
    # from GM in scalar code (the rank's prefix sum and tokenNums) before its first DataCopyPad can
    # issue: one GM load latency (GE's first-copy start, 15.89 x 4 + 882.09 cycles for 4 cores at
    # 910B2's 1800 MHz) passes before the copies, beside the kernel head.
    _, e = _re_routing([[64, 128], [4, 4], [64]])
    latency_us = (15.89 * 4 + 882.09) / 1800
    assert e.time_us - e.breakdown["head_us"] - latency_us >= e.breakdown["mte2_us"]
    # The fit half's 910B2 records (3-13 us kernels) come within the issue's ±25% of their measured
    # times.  (Within 10% until round 9's refit raised the launch cost fitted on the calibrated
    # families, vec_launch_cycles 525 -> 1301 cycles, which the smallest, 3.3 us, follows: 1.20x.)
    fit = [r for r in measured if r["op"] == "MoeReRouting" and r["soc"] == SOC and records.fit_half(r)
           and r.get("single_kernel") is True]
    assert len(fit) >= 3
    for r in fit:
        assert 0.8 <= records.predict_record(r).time_us / r["time_us"] <= 1.25, r["id"]


def test_gcd_record_with_equal_or_zero_data_runs_one_step():
    # The benchmark's case note states the data; equal operands or zeros end Stein's loop at once.
    rec = {"id": "X1", "op": "Gcd", "soc": "Ascend950PR", "inputs": [SQ, SQ], "dtype": ["int32", "int32"],
           "attrs": {}, "notes": "case note: S-int32-1M-相同值gcd=n"}
    assert records.translate_record(rec)[3] == {"iterations": 1}
    random = dict(rec, notes="case note: M-int32-4M-对齐")
    assert "iterations" not in records.translate_record(random)[3]
    assert records.predict_record(rec).time_us < records.predict_record(random).time_us


def test_gcd_takes_integers_and_its_iterations():
    base = _time("Gcd", [SQ, SQ], "int32", {})
    assert _time("Gcd", [SQ, SQ], "int32", {"iterations": 60}) > base
    assert _time("Gcd", [SQ, SQ], "int64", {}) > base  # int32 pairs
    with pytest.raises(ValueError, match="Gcd: dtype float16"):
        _time("Gcd", [SQ, SQ], "float16", {})


@pytest.mark.parametrize("op, inputs, attrs, match", [
    ("ForeachAddcdivScalar", [SQ] * 5, {"tensor_count": 2}, r"ForeachAddcdivScalar: 5 input tensors .*x1, x2, x3"),
    ("ForeachAddcdivScalar", [SQ, SQ, SQ2], {"tensor_count": 1}, r"ForeachAddcdivScalar: x3\[0\] has shape \[2048"),
    ("ForeachNorm", [SQ], {"norm_type": 7}, r"ForeachNorm: norm_type"),
    ("ApplyAdamW", [SQ, SQ, SQ2, SQ], {}, r"ApplyAdamW: v has shape \[2048, 2048\], var \[1024, 1024\]"),
    ("MoeGatingTopKSoftmax", [[64, 8]], {"k": 9}, r"MoeGatingTopKSoftmax: k = 9 .*experts of x \[64, 8\]"),
    ("MoeInitRouting", [[64, 128], [32, 2]], {}, r"MoeInitRouting: expert_idx \[32, 2\] has 32 tokens, x"),
    ("MoeInitRouting", [[64, 128], [64, 8]], {"expert_num": 4}, r"MoeInitRouting: expert_idx \[64, 8\] picks k = 8"),
    ("MoeFinalizeRouting", [[512, 64], [100], [64, 64], [], [8, 64], [64, 4], [64, 4]], {},
     r"MoeFinalizeRouting: expanded_row_idx \[100\] must have tokens x k = 256"),
    ("MoeFinalizeRouting", [[256, 64], [256], [64, 64], [], [8, 64], [64, 2], [64, 4]], {},
     r"MoeFinalizeRouting: scales \[64, 2\] must have expert_idx's shape \[64, 4\]"),
    ("MoeFinalizeRouting", [[256, 64], [256], [], [64, 64], [], [64, 4], [64, 4]], {},
     r"MoeFinalizeRouting: skip2 \[64, 64\] is given without skip1"),
    ("MoeFinalizeRouting", [[256, 64], [256], [64, 64], [], [8, 64], [64, 4], []], {},
     r"MoeFinalizeRouting: bias \[8, 64\] needs expert_idx"),
    ("MoeReRouting", [[1024, 64], [8, 8], [1000]], {}, r"MoeReRouting: per_token_scales \[1000\]"),
    ("MoeReRouting", [[64, 16385], [4, 4], [64]], {}, r"MoeReRouting: tokens \[64, 16385\] has rows of 16385"),
    ("MhcSinkhorn", [[64, 4, 5]], {}, r"MhcSinkhorn: x \[64, 4, 5\] must end in a square matrix"),
])
def test_bad_input_names_the_operator_and_input(op, inputs, attrs, match):
    dtype = "float16" if op != "MhcSinkhorn" else "float32"
    with pytest.raises(ValueError, match=match):
        _time(op, inputs, dtype, attrs)


# ---- the calibration file's records --------------------------------------------------------

ADDCDIV = {"id": "M0101", "op": "ForeachAddcdivScalar", "family": "elementwise", "soc": "Ascend910B2",
           "inputs": [[[2048, 2048]] * 3, [[2048, 2048]] * 3, [[2048, 2048]] * 3], "dtype": ["float16"],
           "attrs": {"scalar": 1.0}, "time_us": 89.62, "single_kernel": True, "source_where": "x case 2"}
FINALIZE = {"id": "M0322", "op": "MoeFinalizeRouting", "family": "data_movement_pool_misc", "soc": "Ascend910B2",
            "inputs": [[512, 1024], [512], [512, 1024], [512, 1024], [8, 1024], None, [512, 1]],
            "dtype": ["float16", "int32", "float16", "float16", "float16", "float16", "int32"],
            "attrs": {"drop_pad_mode": 0}, "time_us": 16.44, "single_kernel": True, "source_where": "x case 6"}


@pytest.mark.parametrize("rec", [ADDCDIV, FINALIZE], ids=["foreach-lists", "finalize-absent-input"])
def test_predict_record_reads_lists_and_absent_inputs(rec):
    est = records.predict_record(rec)
    assert math.isfinite(est.time_us) and est.time_us > 0
    assert 1 / 4 < est.time_us / rec["time_us"] < 4


def test_foreach_record_with_lists_of_different_lengths_is_refused():
    bad = {**ADDCDIV, "inputs": [[[2048, 2048]] * 3, [[2048, 2048]] * 2, [[2048, 2048]] * 3]}
    with pytest.raises(ValueError, match=r"M0101: ForeachAddcdivScalar's tensor lists have different lengths"):
        records.predict_record(bad)


OPS = ("ForeachAddcdivScalar", "ForeachNorm", "ApplyAdamW", "Gcd", "MhcSinkhorn", "MoeGatingTopKSoftmax",
       "MoeReRouting", "MoeFinalizeRouting")
# Held-out floors (share of single-kernel held-out records within 2x, both SoCs), measured
# with the fitted constants (docs/llm_operators.md has the table: 100% for every operator but Gcd,
# 5 of 7); Gcd's iteration count is assumed, not fitted (one step where the case note says zeros or
# equal values).  MoeGatingTopKSoftmax (2 of 3) lost one 910B2 record below 0.5x in issue 48 round 5's
# refit: 910B2's chip-wide launch cost fell from 1544 to 525 cycles (the elementwise records no
# longer needed it once L2 write-back was a mechanism), and this short kernel's fixed cost follows
# it.  MoeFinalizeRouting is back at 9 of 9 since round 6 modelled CANN's 910B kernel (two gathered
# rows in flight, an odd k's last row alone; its template and UB loops).
FLOOR_2X = {"ForeachAddcdivScalar": 0.95, "ForeachNorm": 0.95, "ApplyAdamW": 0.95, "MoeReRouting": 0.95,
            "MoeFinalizeRouting": 0.95, "MoeGatingTopKSoftmax": 0.65, "MhcSinkhorn": 1.0, "Gcd": 0.7}


@pytest.fixture(scope="module")
def held_out(measured):
    out = {}
    for r in measured:
        if r["op"] in OPS:
            ratio = records.predict_record(r).time_us / r["time_us"]  # every record translates
            if not records.fit_half(r) and r.get("single_kernel") is True:
                out.setdefault(r["op"], []).append(ratio)
    return out


@pytest.mark.parametrize("op", OPS)
def test_held_out_accuracy_floor(held_out, op):
    ratios = held_out[op]
    within = sum(0.5 <= x <= 2 for x in ratios) / len(ratios)
    assert within >= FLOOR_2X[op], (op, sorted(round(x, 2) for x in ratios))
    if op != "Gcd":
        assert 0.5 <= statistics.median(ratios) <= 2, op
