"""CANN MatMulV3 on Atlas A2/A3: its default tiling heuristic and the map between a
knowledge-bank record (``knowledge``, the 23 fields of ``MatMulV3TunnerTiling``) and this
model's MatMul tiling.

``default_tiling`` runs the heuristic (C++, ``cpp/src/ascend/matmul_v3.cpp``, restated from
hicann/ops-nn ``matmul/mat_mul_v3/op_host/op_tiling/matmul_v3_base_tiling.cpp``); it is the
cost model's MatMul baseline on these SoCs.

The knowledge fields map one to one onto the model's knobs of the same name, except:

- ``singleCoreK``: the model has no such knob.  It is K for every template but the
  deterministic multi-core split-K (``tilingEnable`` units digit 3, or 4), where the cores
  split K into chunks of ``singleCoreK``: the model's ``splitK`` = ceil(K / singleCoreK);
  back, singleCoreK = the model's K slice, ceil(K / splitK) rounded up to the K granule.
- ``tilingEnable``: the model prices the templates 0 (base), 2 (single-core split-K; also
  5 NKM and 6 GM->L1 variants), 3 (deterministic multi-core split-K; also 4, the
  atomic-add variant), 10 (AL1 full load), 20 (BL1 full load).  The thousands digit
  (FixPipe write-out option) is not priced and is dropped; the ten-thousands digit
  (K-shift, 1) is the model's ``kReorderLoad``.  A full load combined with a split-K
  template (e.g. 12) is refused.
- ``dbL0C``: 2 only where the block fits L0C twice (shipped 910B2 records carry 2 with
  128 x 256 blocks); otherwise read as 1.
- ``dbL0A`` / ``dbL0B``: MatMulV3 ignores the record's values (``TranslateAoeTiling`` keeps
  the Ascend C API's 2); the model reads them as 2.
- ``dispatch`` (model only): 1, MatMulV3's round-robin over ``usedCoreNum`` cores, except
  for single-core split-K (2), whose cores each own one ``singleCoreM x singleCoreN``
  rectangle: dispatch 0 (the static split), with all cores and one neutral L2 tile.
- ``unitFlag`` (model only): 1, as MatMulV3's kernels run (``MM_CFG_NO_PRELOAD``).
- L2 tiles: CANN counts ``l2MTileBlock`` / ``l2NTileBlock`` in base blocks, the model in
  ``singleCoreM x singleCoreN`` tasks (the same for the base template); a block count beyond
  the axis is clamped and the tile counts recomputed; the split-K templates (3) run over one tile.
- ``singleCoreM`` / ``singleCoreN`` are rounded up to 16 (the model's granule); a whole
  axis (``singleCoreN = N`` of a BL1 full load or a multi-core split-K, ``singleCoreM = M``
  of an AL1 full load) comes back as the axis.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Union

from .._core import ascend as _native
from .platforms import Platform, native_platform

__all__ = ["KNOWLEDGE_FIELDS", "default_tiling", "tiling_from_knowledge", "knowledge_from_tiling"]

# MatMulV3TunnerTiling, in declaration order ([V3] matmul_v3_tuning.h; reference A.6).
KNOWLEDGE_FIELDS = ("usedCoreNum", "singleCoreM", "singleCoreN", "singleCoreK", "baseM", "baseN", "baseK",
                    "depthA1", "depthB1", "stepM", "stepN", "iterateOrder", "stepKa", "stepKb", "dbL0A", "dbL0B",
                    "dbL0C", "l2MTileCnt", "l2NTileCnt", "l2MTileBlock", "l2NTileBlock", "l2IterateOrder",
                    "tilingEnable")
# Fields copied as they are (knowledge name == model knob name).
_SAME = ("usedCoreNum", "baseM", "baseN", "baseK", "depthA1", "depthB1", "stepM", "stepN", "iterateOrder", "stepKa",
         "stepKb", "dbL0C", "l2MTileCnt", "l2NTileCnt", "l2MTileBlock", "l2NTileBlock", "l2IterateOrder")
_DTYPES = ("float16", "bfloat16", "float32")


def _k_granule(dtype: str) -> int:
    if dtype not in _DTYPES:
        raise ValueError(f"MatMulV3: dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    return 16  # the model's baseK granule: max(16, k0), k0 = 16 (fp16/bf16) or 8 (fp32)


def _dims(m: int, k: int, n: int) -> None:
    for name, v in (("m", m), ("k", k), ("n", n)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"MatMulV3: {name} must be a positive integer, got {v!r}")


def default_tiling(m: int, k: int, n: int, *, trans_a: bool = False, trans_b: bool = False, bias: bool = False,
                   dtype: str = "float16", b_nz: bool = False, soc_version: Union[str, Platform] = "Ascend910B2") -> dict[str, Any]:
    """CANN MatMulV3's default tiling for C[m, n] = A[m, k] B[k, n] on ``soc_version``: the 23
    knowledge fields (CANN's names) plus ``exact`` (False where CANN takes a path the
    restatement does not reproduce: the closed TBE tiling for M <= 128 with B transposed, the
    single-core split-K + AL1 full-load template) and ``note``."""
    _dims(m, k, n)
    _k_granule(dtype)
    p = native_platform(soc_version)
    return dict(_native.matmul_v3_default_tiling(
        m, k, n, bool(trans_a), bool(trans_b), bool(bias), dtype, bool(b_nz), int(p.cube_cores), int(p.l1),
        int(p.l0a), int(p.l0b), int(p.l0c), int(p.ub), int(p.l2), int(p.bt)))


def _template(code: int) -> tuple[int, int]:
    """(the model's tilingEnable, kReorderLoad) of a MatMulV3 template code."""
    if isinstance(code, bool) or not isinstance(code, int) or code < 0:
        raise ValueError(f"MatMulV3 knowledge: tilingEnable must be a non-negative integer, got {code!r}")
    units, tens, hundreds, fix, special = code % 10, code // 10 % 10, code // 100 % 10, code // 1000 % 10, code // 10000
    if hundreds or fix > 2 or special > 1 or tens > 2 or units > 6:
        raise ValueError(f"MatMulV3 knowledge: tilingEnable {code} is not a MatMulV3 template code "
                         "(units 0-6, tens 0-2, thousands 0-2, ten-thousands 0-1)")
    if tens and units > 1:
        raise ValueError(f"MatMulV3 knowledge: tilingEnable {code} (full load with split-K template {units}) "
                         "cannot be priced by the model")
    if tens:
        return 10 * tens, special
    return {0: 0, 1: 0, 2: 2, 3: 3, 4: 3, 5: 2, 6: 2}[units], special


def tiling_from_knowledge(knowledge: Mapping[str, int], m: int, k: int, n: int, dtype: str = "float16",
                          cube_cores: int = 24, l0c: int = 131072) -> dict[str, int]:
    """The model's MatMul tiling of a MatMulV3 knowledge record for M=m, K=k, N=n on a SoC
    with ``cube_cores`` cube cores (see the module docstring for the rules).  ValueError
    names a missing field or a template the model cannot price."""
    _dims(m, k, n)
    _k_granule(dtype)  # checks the dtype
    missing = [f for f in KNOWLEDGE_FIELDS if f not in knowledge]
    if missing:
        raise ValueError(f"MatMulV3 knowledge: missing field(s) {', '.join(missing)}")
    kv = {f: knowledge[f] for f in KNOWLEDGE_FIELDS}
    for f, v in kv.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"MatMulV3 knowledge: {f} must be a non-negative integer, got {v!r}")
    te, shift = _template(kv["tilingEnable"])
    t = {f: int(kv[f]) for f in _SAME}
    t.update(tilingEnable=te, kReorderLoad=shift, unitFlag=1, dbL0A=2, dbL0B=2,
             singleCoreM=16 * math.ceil(kv["singleCoreM"] / 16), singleCoreN=16 * math.ceil(kv["singleCoreN"] / 16))
    t["splitK"] = math.ceil(k / kv["singleCoreK"]) if te == 3 and kv["singleCoreK"] > 0 else 1
    # Shipped 910B2 records carry dbL0C = 2 with 128 x 256 blocks, which L0C (``l0c`` bytes of
    # fp32) cannot double-buffer: read as 1.
    if t["dbL0C"] == 2 and t["baseM"] * t["baseN"] * 4 * 2 > l0c:
        t["dbL0C"] = 1
    t["dispatch"] = 0 if te == 2 else 1
    # L2 tiles in blocks of singleCoreM x singleCoreN (CANN counts them in base blocks, the same
    # for the base template); the split-K templates run over one tile.
    mb, nb = math.ceil(m / t["singleCoreM"]), math.ceil(n / t["singleCoreN"])
    mblk, nblk = (mb, nb) if te == 3 else (min(max(t["l2MTileBlock"], 1), mb), min(max(t["l2NTileBlock"], 1), nb))
    t.update(l2MTileBlock=mblk, l2NTileBlock=nblk, l2MTileCnt=math.ceil(mb / mblk), l2NTileCnt=math.ceil(nb / nblk))
    if te == 2:  # static rectangles: all cores, one neutral L2 tile
        t.update(usedCoreNum=int(cube_cores), l2MTileCnt=1, l2NTileCnt=1, l2MTileBlock=1, l2NTileBlock=1,
                 l2IterateOrder=0)
    return t


def knowledge_from_tiling(tiling: Mapping[str, int], m: int, k: int, n: int, dtype: str = "float16") -> dict[str, int]:
    """The MatMulV3 knowledge record (23 fields, declaration order) of one of the model's MatMul
    tilings for M=m, K=k, N=n.  ValueError for a static split outside single-core split-K (an
    Ascend C custom kernel's tiling: MatMulV3 has no such kernel) or a missing knob."""
    _dims(m, k, n)
    kq = _k_granule(dtype)
    need = set(_SAME) | {"dispatch", "tilingEnable", "singleCoreM", "singleCoreN", "splitK", "kReorderLoad"}
    missing = sorted(f for f in need if f not in tiling)
    if missing:
        raise ValueError(f"MatMul tiling: missing knob(s) {', '.join(missing)} (complete it with "
                         "aoe_native.ascend.ops.complete_tiling first)")
    te = int(tiling["tilingEnable"])
    if te not in (0, 2, 3, 10, 20):
        raise ValueError(f"MatMul tiling: tilingEnable {te} is not a template the model prices (0, 2, 3, 10, 20)")
    if int(tiling["dispatch"]) == 0 and te != 2:
        raise ValueError("MatMul tiling: dispatch 0 (a static split, the Ascend C API's custom kernels) has no "
                         "MatMulV3 record; only single-core split-K (tilingEnable 2) runs static rectangles")
    out = {f: int(tiling[f]) for f in _SAME}
    split = int(tiling["splitK"])
    single_k = k if split == 1 else min(k, kq * math.ceil(math.ceil(k / split) / kq))
    if te == 2:
        single_k = int(tiling["baseK"]) * int(tiling["stepKa"])  # the chunk ([V3] CheckSingleTilingOk)
        mb = math.ceil(m / int(tiling["singleCoreM"]))
        nb = math.ceil(n / int(tiling["singleCoreN"]))
        out.update(usedCoreNum=min(mb * nb, int(tiling["usedCoreNum"])), l2MTileCnt=1, l2NTileCnt=1,
                   l2MTileBlock=mb, l2NTileBlock=nb, l2IterateOrder=0)
    # A full load's (and split-K's) whole axis is the axis itself in CANN's record.
    sm, sn = int(tiling["singleCoreM"]), int(tiling["singleCoreN"])
    sm = m if te == 10 and sm >= m else sm
    sn = n if te in (3, 20) and sn >= n else sn
    out.update(singleCoreM=sm, singleCoreN=sn,
               singleCoreK=single_k, dbL0A=2, dbL0B=2,
               tilingEnable=te + 10000 * int(tiling["kReorderLoad"]))
    return {f: out[f] for f in KNOWLEDGE_FIELDS}
