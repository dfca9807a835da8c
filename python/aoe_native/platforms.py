"""Ascend SoC descriptions for the cost model.

The built-in table is ``data/socs.json`` (shipped in the package); every number
there carries its source.  :func:`load_platform` registers a user's own SoC
(for example numbers calibrated on a real device), either complete or as
overrides of a built-in one (``"base": "Ascend910B3"``).
"""

from __future__ import annotations

import copy
import json
import math
import threading
from importlib import resources
from typing import Any

__all__ = ["soc_versions", "platform", "load_platform"]

# Fields the cost model reads, with their types.
_INT_FIELDS = ("cube_cores", "vector_cores")
_NUM_FIELDS = ("freq_mhz", "vec_freq_mhz", "l0a", "l0b", "l0c", "l1", "ub", "l2", "bt", "ddr_rate", "l2_rate",
               "l2_write_rate", "l1_to_l0a", "l1_to_l0b", "l0c_to_ub", "ub_to_ddr", "hbm_gbps", "gm_align")
_OPTIONAL_NUM = ("l2_gbps",)  # None: derived from cores x l2_rate x freq
_DTYPES = ("float16", "bfloat16", "float32", "int8")
REQUIRED = ("name", "mode", *_INT_FIELDS, *_NUM_FIELDS, "fixpipe", "cube_dtypes", "vector_dtypes")

_lock = threading.Lock()
_builtin: dict[str, dict[str, Any]] | None = None
_user: dict[str, dict[str, Any]] = {}
_native_cache: dict[str, Any] = {}


def _load_builtin() -> dict[str, dict[str, Any]]:
    global _builtin
    with _lock:
        if _builtin is None:
            text = resources.files("aoe_native").joinpath("data/socs.json").read_text(encoding="utf-8")
            doc = json.loads(text)
            _builtin = {name: _validate(entry, f"socs.json entry {name!r}") for name, entry in doc["socs"].items()}
        return _builtin


def _all() -> dict[str, dict[str, Any]]:
    table = dict(_load_builtin())
    table.update(_user)
    return table


def soc_versions() -> list[str]:
    """Names of the SoCs the cost model knows (built-in and loaded), sorted."""
    return sorted(_all())


def platform(name: str) -> dict[str, Any]:
    """The description of SoC ``name`` (a copy): core counts, frequencies, buffer
    sizes in bytes, rates in bytes/cycle/core, chip bandwidths in GB/s, and
    ``sources`` naming where each number comes from."""
    table = _all()
    if not isinstance(name, str) or name not in table:
        raise ValueError(f"unknown SoC {name!r}; valid soc_version values: {', '.join(sorted(table))}")
    return copy.deepcopy(table[name])


def _validate(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(entry).__name__}")
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")
    if not isinstance(entry["name"], str) or not entry["name"]:
        raise ValueError(f"{where}: 'name' must be a non-empty string")
    if entry["mode"] not in ("split", "coupled"):
        raise ValueError(f"{where}: 'mode' must be 'split' or 'coupled', got {entry['mode']!r}")
    for k in _INT_FIELDS:
        v = entry[k]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{where}: {k!r} must be a positive integer, got {v!r}")
    for k in _NUM_FIELDS + _OPTIONAL_NUM:
        v = entry.get(k)
        if v is None and k in _OPTIONAL_NUM:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (v == 0 and k != "bt"):
            raise ValueError(f"{where}: {k!r} must be a positive number, got {v!r}")
    if not isinstance(entry["fixpipe"], bool):
        raise ValueError(f"{where}: 'fixpipe' must be true or false")
    for k in ("cube_dtypes", "vector_dtypes"):
        v = entry[k]
        if not isinstance(v, list) or not v or any(d not in _DTYPES for d in v):
            raise ValueError(f"{where}: {k!r} must be a non-empty list drawn from {list(_DTYPES)}, got {v!r}")
    return entry


def load_platform(path: str) -> str:
    """Register the SoC described in the JSON file ``path`` and return its name.

    The file holds one object with the fields of :func:`platform` (see
    ``REQUIRED``), or ``"base": "<built-in name>"`` plus the fields to change.
    A later load with the same name replaces the earlier one; built-in names
    cannot be replaced (pick a new name).
    """
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: expected a JSON object describing one SoC")
    if "base" in entry:
        base = platform(entry["base"])
        base.pop("sources", None)
        base.update({k: v for k, v in entry.items() if k != "base"})
        base.setdefault("sources", {})
        entry = base
    entry = _validate(entry, path)
    name = entry["name"]
    if name in _load_builtin():
        raise ValueError(f"{path}: {name!r} is a built-in SoC; give the user SoC a different name")
    with _lock:
        _user[name] = entry
        _native_cache.pop(name, None)
    return name


def native_platform(name: str) -> Any:
    """The ``_core.AscendPlatform`` for ``name`` (cached)."""
    with _lock:
        cached = _native_cache.get(name)
    if cached is not None:
        return cached
    from . import _core

    d = platform(name)
    p = _core.AscendPlatform()
    p.name = d["name"]
    p.split = d["mode"] == "split"
    for k in _INT_FIELDS + _NUM_FIELDS:
        setattr(p, k, d[k])
    p.l2_gbps = float(d.get("l2_gbps") or 0.0)
    p.fixpipe = d["fixpipe"]
    p.cube_dtypes = list(d["cube_dtypes"])
    p.vector_dtypes = list(d["vector_dtypes"])
    with _lock:
        _native_cache[name] = p
    return p
