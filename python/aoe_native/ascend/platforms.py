"""Ascend SoC descriptions for the cost model.

The built-in table is ``data/socs.json`` (shipped in the package); every number
there carries its source.  The fields, their types and rules are defined once, in
C++ (``aoe::ascend::Platform``'s field table, :func:`platform_fields`): this module
only reads the JSON files.  :func:`load_platform` registers a user's own SoC (for
example numbers calibrated on a real device), either complete or as overrides of a
built-in one (``"base": "Ascend910B3"``).
"""

from __future__ import annotations

import copy
import difflib
import json
import threading
from importlib import resources
from typing import Any, Union

from .._core import ascend as _native

__all__ = ["Platform", "soc_versions", "platform", "platform_fields", "load_platform", "native_platform",
           "COMPUTE_DTYPES", "check_compute_dtype", "DEFAULT_SOC"]

Platform = _native.Platform

# The SoC every API and the `aoe` command target when none is named (AOE itself has no default:
# its --soc_version is required; ours is the 910B part the published cases were measured on).
DEFAULT_SOC = "Ascend910B3"

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


def _validate(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(entry).__name__}")
    Platform.from_dict(entry, where)  # raises ValueError naming the field
    return entry


def is_builtin(name: str) -> bool:
    """Whether `name` is a shipped SoC (its numbers never change while the process runs; a user
    SoC's change when its file is loaded again)."""
    return name in _load_builtin()


def soc_versions() -> list[str]:
    """Names of the SoCs the cost model knows (built-in and loaded), sorted."""
    return sorted(_all())


def platform_fields() -> list[dict[str, Any]]:
    """The fields of a SoC description: ``name``, ``kind``, ``required``, ``default`` and ``doc``."""
    return list(_native.platform_fields())


def platform(name: str) -> dict[str, Any]:
    """The description of SoC ``name`` (a copy): core counts, frequencies, buffer
    sizes in bytes, rates in bytes/cycle/core, chip bandwidths in GB/s, and
    ``sources`` naming where each number comes from."""
    table = _all()
    if not isinstance(name, str) or name not in table:
        raise ValueError(f"unknown SoC {name!r}; valid soc_version values: {', '.join(sorted(table))}")
    return copy.deepcopy(table[name])


# Keys of a SoC description that are not Platform fields: provenance and notes.
_DESCRIPTIVE_KEYS = {"base", "sources", "arch", "aic_version", "notes"}


def load_platform(path: str) -> str:
    """Register the SoC described in the JSON file ``path`` and return its name.

    The file holds one object with the fields of :func:`platform_fields`, or
    ``"base": "<built-in name>"`` plus the fields to change.  A later load with the
    same name replaces the earlier one; built-in names cannot be replaced (pick a
    new name).
    """
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: expected a JSON object describing one SoC")
    # A misspelled field would silently keep the base's value: name it instead.
    known = {f["name"] for f in platform_fields()} | _DESCRIPTIVE_KEYS
    for key in entry:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            raise ValueError(f"{path}: unknown field {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "") +
                             "; the fields are listed by aoe_native.platform_fields()")
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


def native_platform(soc: Union[str, Platform]) -> Platform:
    """The :class:`Platform` object for a SoC name (cached), or ``soc`` itself if it is one."""
    if isinstance(soc, Platform):
        return soc
    with _lock:
        cached = _native_cache.get(soc) if isinstance(soc, str) else None
    if cached is not None:
        return cached
    p = Platform.from_dict(platform(soc), f"SoC {soc!r}")
    with _lock:
        _native_cache[soc] = p
    return p


# The kernels' compute data types the cost model knows (int32 only as an output type).
COMPUTE_DTYPES = ("float16", "bfloat16", "float32", "int8")


def check_compute_dtype(dtype: str, soc: Union[str, Platform]) -> str:
    """``dtype`` if the kernels of a model can compute in it on ``soc`` (its cube or vector
    unit takes it); else a ValueError that lists the dtypes that work there."""
    p = native_platform(soc)
    valid = [d for d in COMPUTE_DTYPES if d in p.cube_dtypes or d in p.vector_dtypes]
    if dtype not in valid:
        raise ValueError(f"dtype {dtype!r} is not supported on {p.name}; valid: {', '.join(valid)}")
    return dtype
