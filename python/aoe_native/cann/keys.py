"""MatMulV3's bank key: the packed 183-byte ``tuningtiling::MatMulV3InputArgs`` struct,
CANN's hash of it, and the 23 stored tiling fields.

Sources (restated, no code copied), as cited in ``cann_bank_and_default_tiling.md``:

- struct layout and field order: hicann/ops-nn @ e5c3fa93
  ``matmul/mat_mul_v3/op_host/op_tiling/matmul_v3_tuning.h`` (``#pragma pack(1)``,
  little-endian); how MatMulV3 fills it at query time: ``matmul_v3_base_tiling.cpp:977-1028``
  (reference doc A.5);
- the hash: the runtime-KB library's ``op_hash.{h,cpp}`` (``CommonHash``; reference doc
  A.4), including its tail quirk (the bytes after the last whole word are taken from the
  *start* of the buffer, and one more combine step always runs);
- ge::DataType / ge::Format numbers: hicann/metadef @ 786891c0 ``inc/external/graph/types.h``.
"""
from __future__ import annotations

import struct
from typing import Any, Mapping

__all__ = ["KEY_FIELDS", "KEY_SIZE", "KNOWLEDGE_FIELDS", "HASH_SEED", "DT_FLOAT", "DT_FLOAT16", "DT_INT8",
           "DT_BF16", "FORMAT_ND", "FORMAT_FRACTAL_NZ", "pack_key", "unpack_key", "cann_hash", "key_hash",
           "check_info_dict", "check_knowledge"]

# ge::DataType (hicann/metadef inc/external/graph/types.h).
DT_FLOAT = 0
DT_FLOAT16 = 1
DT_INT8 = 2
DT_BF16 = 27
# ge::Format (same file).
FORMAT_ND = 2
FORMAT_FRACTAL_NZ = 29

# (field, struct code) in declaration order of MatMulV3InputArgs (matmul_v3_tuning.h):
# q int64, f float, i int32 enum, ? bool, Q uint64.  Offsets: m 0, k 8, n 16, batches 24-80,
# floats 88-100, enums 104-124, bools 128-134, reserved uint64 135-175.
KEY_FIELDS: tuple[tuple[str, str], ...] = (
    ("m", "q"), ("k", "q"), ("n", "q"),
    ("batch_a1", "q"), ("batch_a2", "q"), ("batch_a3", "q"), ("batch_a4", "q"),
    ("batch_b1", "q"), ("batch_b2", "q"), ("batch_b3", "q"), ("batch_b4", "q"),
    ("l1_fused_num", "f"), ("aub_double_num", "f"), ("bub_double_num", "f"), ("fused_double_operand_num", "f"),
    ("a_dtype", "i"), ("b_dtype", "i"), ("out_dtype", "i"),
    ("a_format", "i"), ("b_format", "i"), ("out_format", "i"),
    ("trans_a_flag", "?"), ("trans_b_flag", "?"), ("bias_flag", "?"), ("reserved_bool", "?"),
    ("m_align_flag", "?"), ("k_align_flag", "?"), ("n_align_flag", "?"),
    ("reserved_params1", "Q"), ("reserved_params2", "Q"), ("reserved_params3", "Q"),
    ("reserved_params4", "Q"), ("reserved_params5", "Q"), ("reserved_params6", "Q"),
)
_KEY_STRUCT = struct.Struct("<" + "".join(code for _, code in KEY_FIELDS))
KEY_SIZE = _KEY_STRUCT.size  # 183
assert KEY_SIZE == 183

# MatMulV3TunnerTiling: 23 uint32 in declaration order (matmul_v3_tuning.h; reference doc A.6).
KNOWLEDGE_FIELDS: tuple[str, ...] = (
    "usedCoreNum", "singleCoreM", "singleCoreN", "singleCoreK", "baseM", "baseN", "baseK",
    "depthA1", "depthB1", "stepM", "stepN", "iterateOrder", "stepKa", "stepKb",
    "dbL0A", "dbL0B", "dbL0C", "l2MTileCnt", "l2NTileCnt", "l2MTileBlock", "l2NTileBlock",
    "l2IterateOrder", "tilingEnable",
)
assert len(KNOWLEDGE_FIELDS) == 23

# CommonHash's default seed (op_hash.h).
HASH_SEED = 271828
_MASK = 0xFFFFFFFF
_RANGES = {"q": (-2**63, 2**63 - 1), "i": (-2**31, 2**31 - 1), "Q": (0, 2**64 - 1)}


def _combine(h: int, w: int) -> int:
    """boost-style hash_combine of a uint32 word, in 32-bit arithmetic."""
    return h ^ ((w + 0x9E3779B9 + ((h << 6) & _MASK) + (h >> 2)) & _MASK)


def cann_hash(data: bytes, seed: int = HASH_SEED) -> int:
    """CANN's 32-bit bank-key hash of `data` (runtime-KB ``CommonHash``, reference doc A.4).

    Whole little-endian uint32 words are combined in order; then the last word read (0 if
    none) is shifted left by 8 once per leftover byte, or-ing in bytes ``len % 4 - 1`` down
    to 0 *of the start of the buffer* (CANN's quirk), and combined once more (also when
    ``len % 4 == 0``: the last word is then combined twice); finally ``h ^= len``,
    ``h ^= h >> 16``."""
    h = seed & _MASK
    words = len(data) // 4
    last = 0
    for (w,) in struct.iter_unpack("<I", data[:4 * words]):
        h = _combine(h, w)
        last = w
    for i in range(len(data) % 4, 0, -1):
        last = ((last << 8) | data[i - 1]) & _MASK
    h = _combine(h, last)
    h ^= len(data) & _MASK
    return h ^ (h >> 16)


def _check_value(name: str, code: str, v: Any) -> str | None:
    """Why `v` cannot be field `name` of the key (None: it can)."""
    if code == "?":
        return None if isinstance(v, bool) else f"{name} must be a JSON boolean, got {v!r}"
    if code == "f":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"{name} must be a JSON number, got {v!r}"
        if abs(v) > 3.4e38 or v != v:
            return f"{name}={v!r} is not a finite 32-bit float"
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        return f"{name} must be a JSON integer, got {v!r}"
    lo, hi = _RANGES[code]
    return None if lo <= v <= hi else f"{name}={v} is out of range [{lo}, {hi}]"


def _presence(what: str, obj: dict, names: list[str]) -> list[str]:
    """Missing and unknown fields of a record's object, as problems."""
    problems = []
    missing = [n for n in names if n not in obj]
    if missing:
        problems.append(f"{what} lacks {', '.join(missing)}")
    unknown = sorted(str(k) for k in obj if k not in names)
    if unknown:
        problems.append(f"{what} has unknown field(s) {', '.join(unknown)}")
    return problems


def check_info_dict(info: Any) -> list[str]:
    """The problems of an ``info_dict`` as a MatMulV3 key: not an object, missing or unknown
    fields (CANN's nlohmann ``from_json`` drops a record lacking one), wrong JSON types or
    out-of-range values.  [] when it packs."""
    if not isinstance(info, dict):
        return [f"info_dict must be an object, got {type(info).__name__}"]
    problems = _presence("info_dict", info, [n for n, _ in KEY_FIELDS])
    for name, code in KEY_FIELDS:
        if name in info:
            p = _check_value(name, code, info[name])
            if p:
                problems.append(p)
    return problems


def check_knowledge(knowledge: Any) -> list[str]:
    """The problems of a ``knowledge`` object: every one of the 23 fields must be there (CANN
    leaves a missing one uninitialised) as an unsigned 32-bit integer."""
    if not isinstance(knowledge, dict):
        return [f"knowledge must be an object, got {type(knowledge).__name__}"]
    problems = _presence("knowledge", knowledge, list(KNOWLEDGE_FIELDS))
    for n in KNOWLEDGE_FIELDS:
        v = knowledge.get(n, 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _MASK:
            problems.append(f"knowledge {n} must be an unsigned 32-bit integer, got {v!r}")
    return problems


def pack_key(info: Mapping[str, Any]) -> bytes:
    """The packed 183-byte MatMulV3InputArgs of an ``info_dict`` (ValueError naming the
    problems if it is not one)."""
    problems = check_info_dict(info)
    if problems:
        raise ValueError("; ".join(problems))
    return _KEY_STRUCT.pack(*(info[n] for n, _ in KEY_FIELDS))


def unpack_key(data: bytes) -> dict[str, Any]:
    """The ``info_dict`` of a packed key (floats as Python floats)."""
    return dict(zip((n for n, _ in KEY_FIELDS), _KEY_STRUCT.unpack(data)))


def key_hash(info: Mapping[str, Any]) -> int:
    """CANN's id of an ``info_dict``: :func:`cann_hash` of :func:`pack_key`."""
    return cann_hash(pack_key(info))
