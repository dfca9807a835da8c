"""The buffer limits a MatMulV3 tiling must respect.  CANN does not check a bank record's
tiling (MatMulV3's ``CheckAoeTilingEnable`` only checks ``tilingEnable``; reference doc A.6):
one that overflows L0/L1/BT goes straight to the kernel, so we check before writing and
refuse such records when reading.

The rules are TCubeTiling's, as our cost model states them (``cpp/src/ascend/cube.cpp``,
``CubeModel::holds_all`` and its restriction strings, from the Ascend C TCubeTiling table);
the sizes come from the SoC table (``aoe_native.platform(soc)``: ``l0a``, ``l0b``, ``l0c``,
``l1``, ``bt`` in bytes).
"""
from __future__ import annotations

from typing import Any, Mapping

from .keys import DT_BF16, DT_FLOAT, DT_FLOAT16, DT_INT8

__all__ = ["limit_problems", "dtype_bytes"]

# Bytes per element of the key's A/B dtype (ge::DataType).
_BYTES = {DT_FLOAT: 4, DT_FLOAT16: 2, DT_BF16: 2, DT_INT8: 1}
# The L0C accumulator is fp32 (int32 for int8): 4 bytes per element (cube.cpp: baseM * baseN * 4).
_ACC_BYTES = 4
# The bias table holds fp32 bias values: baseN * 4 bytes (cube.cpp: baseN * 4 <= BT; bias also in L1).
_BIAS_BYTES = 4


def dtype_bytes(ge_dtype: int) -> int | None:
    """Bytes per element of a key dtype, None if unknown."""
    return _BYTES.get(ge_dtype)


def limit_problems(knowledge: Mapping[str, int], info: Mapping[str, Any], soc: Mapping[str, Any]) -> list[str]:
    """Why a checked ``knowledge`` does not fit the SoC's buffers for the key `info` ([] if it
    fits).  L0A: baseM*baseK*bytes*dbL0A <= l0a; L0B: baseN*baseK*bytes*dbL0B <= l0b;
    L0C: baseM*baseN*4*dbL0C <= l0c; L1: (depthA1*baseM*baseK + depthB1*baseN*baseK)*bytes
    (+ baseN*4 with bias) <= l1; BT (with bias): baseN*4 <= bt; and the sizes, depths, steps and
    buffer counts positive.  (Not checked: the 16-multiples of baseM/baseN, which CANN's own
    shipped 910B2 bank breaks in hand-edited records, e.g. baseM=60.)"""
    k = knowledge
    ds = dtype_bytes(info["a_dtype"])
    if ds is None or dtype_bytes(info["b_dtype"]) != ds:
        return [f"A/B dtypes {info['a_dtype']}/{info['b_dtype']} are not one known dtype"]
    zero = [n for n in ("usedCoreNum", "singleCoreM", "singleCoreN", "singleCoreK", "baseM", "baseN", "baseK",
                        "depthA1", "depthB1", "stepM", "stepN", "stepKa", "stepKb", "dbL0A", "dbL0B", "dbL0C")
            if k[n] <= 0]
    if zero:
        return [f"{', '.join(zero)} must be positive"]
    problems = []
    checks = [
        ("L0A", k["baseM"] * k["baseK"] * ds * k["dbL0A"], soc["l0a"], "baseM*baseK*bytes*dbL0A"),
        ("L0B", k["baseN"] * k["baseK"] * ds * k["dbL0B"], soc["l0b"], "baseN*baseK*bytes*dbL0B"),
        ("L0C", k["baseM"] * k["baseN"] * _ACC_BYTES * k["dbL0C"], soc["l0c"], "baseM*baseN*4*dbL0C"),
    ]
    l1 = (k["depthA1"] * k["baseM"] + k["depthB1"] * k["baseN"]) * k["baseK"] * ds
    if info["bias_flag"]:
        l1 += k["baseN"] * _BIAS_BYTES
        checks.append(("BT", k["baseN"] * _BIAS_BYTES, soc["bt"], "baseN*4 (bias table)"))
    checks.append(("L1", l1, soc["l1"], "(depthA1*baseM + depthB1*baseN)*baseK*bytes" +
                   (" + baseN*4" if info["bias_flag"] else "")))
    for buf, used, size, rule in checks:
        if used > size:
            problems.append(f"the tiling overflows {buf}: {rule} = {used} > {size} bytes")
    return problems
