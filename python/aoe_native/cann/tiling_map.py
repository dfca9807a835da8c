"""PROVISIONAL mapping between a CANN MatMulV3 ``knowledge`` record and our MatMul tiling dict.

INTEGRATOR: this module stands in for ``aoe_native/ascend/matmul_v3.py``, which the cost-model
engineer is adding with the same mapping; when it lands, make :func:`knowledge_to_tiling` and
:func:`tiling_to_knowledge` call (or be replaced by) that module's functions, and delete this one.

The names agreed for issue 47: CANN knowledge -> our tiling is field for field by the same name
for the 23 fields, except ``singleCoreK`` (= K in the base templates; the split-K templates set it
smaller, which ``tilingEnable`` says), plus ``dispatch = 1`` (MatMulV3's round-robin of
singleCoreM x singleCoreN blocks).  ``dbL0A``/``dbL0B`` are kept although CANN's
``TranslateAoeTiling`` ignores them (reference doc A.6).  Whether the result is a tiling of ours
is decided by the cost model (:func:`model_accepts`), so records become expressible by
themselves once the model gains the knobs (dispatch, usedCoreNum, l2*, tilingEnable).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..ascend.ops import estimate
from .keys import KNOWLEDGE_FIELDS

__all__ = ["knowledge_to_tiling", "tiling_to_knowledge", "model_accepts", "model_time", "DISPATCH_ROUND_ROBIN"]

DISPATCH_ROUND_ROBIN = 1  # our `dispatch` knob: 0 static per-core split, 1 MatMulV3's round-robin
# Knobs of our model CANN's record does not carry, with the value MatMulV3 runs them at.
# splitK: MatMulV3's split-K are separate kernel templates (tilingEnable), not our atomic-add split;
# unitFlag, kReorderLoad: Matmul-API switches the record cannot set (0 = off, the model's defaults).
_NOT_IN_RECORD = {"splitK": 1, "unitFlag": 0, "kReorderLoad": 0}
# The high-level API's pre-fill keeps dbL0A = dbL0B = 2 (reference doc B.6), and
# TranslateAoeTiling does not overwrite them (A.6): a tiling tuned with 1 would run as another.
_PREFILL_DB_L0 = 2


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def knowledge_to_tiling(knowledge: Mapping[str, int]) -> dict[str, int]:
    """Our tiling of a checked CANN ``knowledge`` record: the 23 fields by name minus
    ``singleCoreK``, plus ``dispatch = 1``."""
    t = {n: int(knowledge[n]) for n in KNOWLEDGE_FIELDS if n != "singleCoreK"}
    t["dispatch"] = DISPATCH_ROUND_ROBIN
    return t


def tiling_to_knowledge(tiling: Mapping[str, int], M: int, K: int, N: int,
                        core_num: int) -> dict[str, int] | str:
    """The 23-field ``knowledge`` that makes MatMulV3 run `tiling` on an M x K x N MatMul with
    `core_num` cube cores, or a string saying why MatMulV3 cannot run it.

    A tiling with ``dispatch = 1`` (or the knobs usedCoreNum, l2*, tilingEnable) maps field for
    field.  One without ``dispatch`` (the model before that knob: a static split where each core
    computes one singleCoreM x singleCoreN block) is MatMulV3's round-robin over the same blocks
    with ``usedCoreNum`` = the block count (at most the cores, as the model requires), a single
    L2 tile covering all blocks (``l2MTileCnt = l2NTileCnt = 1``, reference doc B.2 step 7) and
    the base template (``tilingEnable = 0``)."""
    for name, value in _NOT_IN_RECORD.items():
        if int(tiling.get(name, value)) != value:
            return f"{name}={tiling[name]} has no MatMulV3 equivalent (MatMulV3 runs {name}={value})"
    for name in ("dbL0A", "dbL0B"):
        if int(tiling.get(name, _PREFILL_DB_L0)) != _PREFILL_DB_L0:
            return f"{name}={tiling[name]}: MatMulV3 ignores the record's {name} and runs 2"
    dispatch = int(tiling.get("dispatch", 0))
    missing = [n for n in KNOWLEDGE_FIELDS if n not in ("singleCoreK", "usedCoreNum", "l2MTileCnt", "l2NTileCnt",
                                                        "l2MTileBlock", "l2NTileBlock", "l2IterateOrder",
                                                        "tilingEnable") and n not in tiling]
    if missing:
        return f"the tiling lacks {', '.join(missing)}"
    k = {n: int(tiling[n]) for n in KNOWLEDGE_FIELDS if n in tiling}
    k["singleCoreK"] = K
    m_blocks, n_blocks = _cdiv(M, k["singleCoreM"]), _cdiv(N, k["singleCoreN"])
    if dispatch == DISPATCH_ROUND_ROBIN:
        missing = [n for n in KNOWLEDGE_FIELDS if n not in k]
        if missing:
            return f"a dispatch=1 tiling lacks {', '.join(missing)}"
    elif dispatch == 0:
        if m_blocks * n_blocks > core_num:
            return f"a static split of {m_blocks * n_blocks} blocks needs more than {core_num} cores"
        k.update(usedCoreNum=m_blocks * n_blocks, l2MTileCnt=1, l2NTileCnt=1, l2MTileBlock=m_blocks,
                 l2NTileBlock=n_blocks, l2IterateOrder=0, tilingEnable=0)
    else:
        return f"dispatch={dispatch} is not a MatMulV3 dispatch"
    return {n: k[n] for n in KNOWLEDGE_FIELDS}


def model_accepts(inputs: Sequence[Sequence[int]], dtype: str, soc: str, tiling: Mapping[str, int],
                  attrs: Mapping[str, Any]) -> str | None:
    """None if the cost model accepts `tiling` for this MatMul, else its reason (the public
    :func:`aoe_native.estimate` raising ValueError or TypeError: an unknown knob, a tiling
    outside the model's restrictions...)."""
    try:
        estimate("MatMul", [list(s) for s in inputs], dtype, soc, dict(tiling), attrs=dict(attrs))
    except (ValueError, TypeError) as e:
        return str(e)
    return None


def model_time(inputs: Sequence[Sequence[int]], dtype: str, soc: str, tiling: Mapping[str, int],
               attrs: Mapping[str, Any]) -> float:
    """The cost model's time (us) of an accepted tiling of this MatMul."""
    return estimate("MatMul", [list(s) for s in inputs], dtype, soc, dict(tiling), attrs=dict(attrs)).time_us
