"""A CANN MatMulV3 ``knowledge`` record and the cost model's MatMul tiling, both ways, for the
bank files: the rules are :mod:`aoe_native.ascend.matmul_v3`'s (``tiling_from_knowledge``,
``knowledge_from_tiling``), here given the task's M, K, N and the SoC, and with the cost model
deciding whether it takes the result (an expressible record)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..ascend.matmul_v3 import knowledge_from_tiling, tiling_from_knowledge
from ..ascend.ops import complete_tiling, estimate
from ..ascend.platforms import platform

__all__ = ["knowledge_to_tiling", "tiling_to_knowledge", "model_accepts", "model_time"]


def knowledge_to_tiling(knowledge: Mapping[str, int], M: int, K: int, N: int, dtype: str,
                        soc: str) -> dict[str, int] | str:
    """Our tiling of a checked ``knowledge`` record of an M x K x N MatMul on `soc`, or a string
    saying why the model has none (a template it cannot price)."""
    p = platform(soc)
    try:
        return tiling_from_knowledge(knowledge, M, K, N, dtype, cube_cores=int(p["cube_cores"]), l0c=int(p["l0c"]))
    except ValueError as e:
        return str(e)


def tiling_to_knowledge(tiling: Mapping[str, int], inputs: Sequence[Sequence[int]], dtype: str, soc: str,
                        attrs: Mapping[str, Any], M: int, K: int, N: int) -> dict[str, int] | str:
    """The 23-field ``knowledge`` that makes MatMulV3 run `tiling`, or a string saying why it
    cannot (a static split of a custom kernel, a knob MatMulV3 has no field for).  A tiling stored
    before a knob existed is completed first, as the model reads it."""
    try:
        full = complete_tiling("MatMul", [list(s) for s in inputs], dtype, soc, dict(tiling), attrs=dict(attrs))
    except ValueError as e:
        return str(e)
    if full.get("dispatch") not in (0, 1):  # the model's two ways of dealing blocks to cores
        return f"dispatch={full.get('dispatch')} is neither a static split (0) nor MatMulV3's round-robin (1)"
    try:
        return knowledge_from_tiling(full, M, K, N, dtype)
    except ValueError as e:
        return str(e)


def model_accepts(inputs: Sequence[Sequence[int]], dtype: str, soc: str, tiling: Mapping[str, int],
                  attrs: Mapping[str, Any]) -> str | None:
    """None if the cost model accepts `tiling` for this MatMul, else its reason."""
    try:
        estimate("MatMul", [list(s) for s in inputs], dtype, soc, dict(tiling), attrs=dict(attrs))
    except (ValueError, TypeError) as e:
        return str(e)
    return None


def model_time(inputs: Sequence[Sequence[int]], dtype: str, soc: str, tiling: Mapping[str, int],
               attrs: Mapping[str, Any]) -> float:
    """The cost model's time (us) of an accepted tiling of this MatMul."""
    return estimate("MatMul", [list(s) for s in inputs], dtype, soc, dict(tiling), attrs=dict(attrs)).time_us
