"""CANN's runtime knowledge-bank files for MatMulV3: where they live, reading them (every bad
line reported with its file and line number, and skipped) and writing them (validated first,
merged by key under a lock, atomically, mode 0640).

Format (reference doc A.3; runtime-KB ``op_runtime_bank.cpp`` Record::Serialize/Deserialize):
JSON Lines, one record per line, ``{"id", "info_dict", "knowledge", "op", "version"}``; an
empty file or ``{}`` is an empty bank.  CANN recomputes the id from ``info_dict`` when it loads
(a hit also needs the packed key to match byte for byte) and keeps one record per id.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..ascend.platforms import platform
from ..bank.store import BankError, _bank_lock
from ..fileio import atomic_write_text, json_depth
from .keys import KEY_FIELDS, KNOWLEDGE_FIELDS, check_info_dict, check_knowledge, key_hash, pack_key
from .limits import limit_problems
from .task import task_of_info
from .tiling_map import knowledge_to_tiling, model_accepts

__all__ = ["OP_TYPE", "FILE_MODE", "CannEntry", "CannProblem", "CannBankWarning", "BankRead", "bank_file_name",
           "parse_bank_file_name", "custom_bank_path", "builtin_bank_path", "read_bank", "read_bank_report",
           "write_bank", "record_line", "check_record"]

OP_TYPE = "MatMulV3"
# CANN creates its bank files 0640 (runtime-KB file_utils.{h,cpp}, reference doc A.2).
FILE_MODE = 0o640
# Limits on a file we did not write: 140 records are 134 KB; a line nests 2 levels.
MAX_FILE_BYTES = 256 * 2**20
MAX_LINE_DEPTH = 4
_NAME = re.compile(r"^(?P<soc>[A-Za-z0-9][A-Za-z0-9_.-]*?)_(?P<core>[0-9]+)_AiCore_(?P<op>[A-Za-z0-9]+)"
                   r"_runtime_kb\.json$")
_DTYPE_NAMES = {0: "float32", 1: "float16", 2: "int8", 27: "bfloat16"}
_FORMAT_NAMES = {2: "ND", 29: "FRACTAL_NZ"}


class CannBankWarning(UserWarning):
    """A line of a CANN bank file that was skipped (its message names the file and line)."""


@dataclass(frozen=True)
class CannProblem:
    """A skipped line: file, 1-based line number, why."""
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class CannEntry:
    """One MatMulV3 bank record as a task of ours.

    op, inputs, dtype, attrs, formats: the MatMul task whose key the record is (ONNX convention;
    an unaligned dimension is the rounded size minus 1; bf16 shares the float16 key); for a key
    no task of ours builds, a best-effort description from the key.  tiling: the record in our
    parameter names, None when the cost model cannot express it (``reason`` says why).  record:
    the record as read (or as it will be written)."""
    op: str
    inputs: list[list[int]]
    dtype: str
    attrs: dict[str, Any]
    soc_version: str
    core_num: int
    tiling: dict[str, int] | None
    record: dict[str, Any]
    formats: list[str] = field(default_factory=list)
    reason: str | None = None
    line: int | None = None

    @property
    def key(self) -> bytes:
        """The packed 183-byte key."""
        return pack_key(self.record["info_dict"])

    @property
    def key_id(self) -> int:
        """CANN's hash of the key (what CANN keys the record by; the stored id may differ)."""
        return key_hash(self.record["info_dict"])


@dataclass
class BankRead:
    """What :func:`read_bank_report` found in one file."""
    path: str
    soc_version: str
    core_num: int
    entries: list[CannEntry]
    problems: list[CannProblem]


def bank_file_name(soc_version: str, core_num: int, op: str = OP_TYPE) -> str:
    """``<soc>_<core_num>_AiCore_<op>_runtime_kb.json`` (runtime-KB GetBankFileName, A.2)."""
    name = f"{soc_version}_{int(core_num)}_AiCore_{op}_runtime_kb.json"
    if not _NAME.match(name) or os.sep in soc_version:
        raise ValueError(f"invalid SoC {soc_version!r} or core count {core_num!r} for a bank file name")
    return name


def parse_bank_file_name(path: str | os.PathLike[str]) -> tuple[str, int, str] | None:
    """(soc_version, core_num, op) of a bank file name, None if it is not one."""
    m = _NAME.match(os.path.basename(os.fspath(path)))
    return (m["soc"], int(m["core"]), m["op"]) if m else None


def custom_bank_path(root: str | os.PathLike[str], soc_version: str, core_num: int) -> str:
    """The custom bank file CANN reads with ``TUNE_BANK_PATH=root``:
    ``<root>/<soc>/unified_bank/<soc>_<core>_AiCore_MatMulV3_runtime_kb.json`` (A.2)."""
    return os.path.join(os.path.expanduser(os.fspath(root)), soc_version, "unified_bank",
                        bank_file_name(soc_version, core_num))


def builtin_bank_path(builtin_dir: str | os.PathLike[str], soc_version: str, core_num: int) -> str:
    """The built-in bank file under ``<opp>/built-in/data/op`` (`builtin_dir`):
    ``<builtin_dir>/<soc>/unified_bank/<file>`` (ops-nn cmake/runtimeKB.cmake, A.2)."""
    return custom_bank_path(builtin_dir, soc_version, core_num)


def check_record(obj: Any, soc: dict[str, Any] | None) -> list[str]:
    """Why `obj` is not a usable MatMulV3 record ([] if it is): the record's keys and types,
    the key's fields, the 23 tiling fields, and (with `soc`, the SoC's table) the buffer limits."""
    if not isinstance(obj, dict):
        return [f"a record must be a JSON object, got {type(obj).__name__}"]
    missing = [k for k in ("id", "op", "version", "info_dict", "knowledge") if k not in obj]
    if missing:
        return [f"record lacks {', '.join(missing)}"]
    problems = []
    if obj["op"] != OP_TYPE:
        problems.append(f"op {obj['op']!r} is not {OP_TYPE} (the only key layout this reader knows)")
    for k in ("id", "version"):
        if isinstance(obj[k], bool) or not isinstance(obj[k], int) or not 0 <= obj[k] <= 0xFFFFFFFF:
            problems.append(f"{k} must be an unsigned 32-bit integer, got {obj[k]!r}")
    problems += check_info_dict(obj["info_dict"]) + check_knowledge(obj["knowledge"])
    if not problems and soc is not None:
        problems += limit_problems(obj["knowledge"], obj["info_dict"], soc)
    return problems


def _describe(info: dict[str, Any]) -> tuple[str, list[list[int]], str, dict[str, Any], list[str]]:
    """(op, inputs, dtype, attrs, formats) of a key no task of ours builds: its own numbers."""
    m, k, n = info["m"], info["k"], info["n"]
    inputs = [[k, m] if info["trans_a_flag"] else [m, k], [n, k] if info["trans_b_flag"] else [k, n]]
    if info["bias_flag"]:
        inputs.append([n])
    attrs = {a: 1 for a, f in (("transpose_a", "trans_a_flag"), ("transpose_b", "trans_b_flag")) if info[f]}
    formats = [_FORMAT_NAMES.get(info[f], f"ge_format_{info[f]}") for f in ("a_format", "b_format")]
    return "MatMul", inputs, _DTYPE_NAMES.get(info["a_dtype"], f"ge_dtype_{info['a_dtype']}"), attrs, formats


def entry_of_record(record: dict[str, Any], soc_version: str, core_num: int, line: int | None = None) -> CannEntry:
    """The :class:`CannEntry` of a checked record: its task, and its tiling if the cost model
    expresses it (else ``tiling=None`` and the reason)."""
    info = record["info_dict"]
    task = task_of_info(info)
    if isinstance(task, str):
        op, inputs, dtype, attrs, formats = _describe(info)
        return CannEntry(op, inputs, dtype, attrs, soc_version, core_num, None, record, formats, task, line)
    inputs, dtype, attrs = task
    (m, k), (_, n) = (inputs[0][::-1] if attrs.get("transpose_a") else inputs[0]), \
        (inputs[1][::-1] if attrs.get("transpose_b") else inputs[1])
    tiling = knowledge_to_tiling(record["knowledge"], m, k, n, dtype, soc_version)
    reason = tiling if isinstance(tiling, str) else model_accepts(inputs, dtype, soc_version, tiling, attrs)
    return CannEntry("MatMul", inputs, dtype, attrs, soc_version, core_num, None if reason else tiling, record,
                     ["ND"] * len(inputs), reason and f"the cost model does not take it: {reason}", line)


def _file_identity(path: str, soc_version: str | None, core_num: int | None) -> tuple[str, int]:
    parsed = parse_bank_file_name(path)
    if parsed is not None and parsed[2] != OP_TYPE:
        raise BankError(f"{path}: a bank of {parsed[2]}, not {OP_TYPE}")
    soc = soc_version or (parsed[0] if parsed else None)
    core = core_num or (parsed[1] if parsed else None)
    if soc is None or core is None:
        raise BankError(f"{path}: not named <soc>_<cores>_AiCore_{OP_TYPE}_runtime_kb.json; give the SoC and "
                        "the core count")
    try:
        platform(soc)
    except ValueError as e:
        raise BankError(f"{path}: {e} (its buffer sizes are needed to check the tilings)") from None
    return soc, int(core)


def _read_lines(path: str) -> list[bytes]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise BankError(f"{path}: cannot read ({e.strerror or e})") from None
    if len(data) > MAX_FILE_BYTES:
        raise BankError(f"{path}: larger than the limit of {MAX_FILE_BYTES} bytes")
    return data.split(b"\n")


def _parse_line(raw: bytes) -> Any:
    """The JSON value of one line (ValueError with the reason)."""
    if json_depth(raw) > MAX_LINE_DEPTH:
        raise ValueError(f"nested deeper than {MAX_LINE_DEPTH} levels")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None


def read_bank_report(path: str | os.PathLike[str], soc_version: str | None = None,
                     core_num: int | None = None) -> BankRead:
    """Read a MatMulV3 bank file: every good record as a :class:`CannEntry`, every bad line as a
    :class:`CannProblem` (not JSON, not a record, a missing or mistyped field, a tiling that
    overflows the SoC's buffers, a key seen on an earlier line).  The SoC and core count come
    from the file name unless given.  BankError if the file cannot be read at all."""
    path = os.fspath(path)
    soc, core = _file_identity(path, soc_version, core_num)
    table = platform(soc)
    entries: list[CannEntry] = []
    problems: list[CannProblem] = []
    seen: dict[int, int] = {}
    for number, raw in enumerate(_read_lines(path), 1):
        if not raw.strip():
            continue
        try:
            obj = _parse_line(raw)
        except ValueError as e:
            problems.append(CannProblem(path, number, str(e)))
            continue
        if obj == {}:  # CANN's empty bank
            continue
        bad = check_record(obj, table)
        if bad:
            problems.append(CannProblem(path, number, "; ".join(bad)))
            continue
        h = key_hash(obj["info_dict"])
        if h in seen:
            problems.append(CannProblem(path, number, f"the key of line {seen[h]} again (CANN keeps one of them)"))
            continue
        seen[h] = number
        entries.append(entry_of_record(obj, soc, core, number))
    return BankRead(path, soc, core, entries, problems)


def read_bank(path: str | os.PathLike[str], soc_version: str | None = None,
              core_num: int | None = None) -> list[CannEntry]:
    """The records of a MatMulV3 bank file (built-in or custom) as :class:`CannEntry`, in file
    order; each skipped line is reported as a :class:`CannBankWarning` naming the file and line
    (:func:`read_bank_report` returns them instead)."""
    read = read_bank_report(path, soc_version, core_num)
    for p in read.problems:
        warnings.warn(str(p), CannBankWarning, stacklevel=2)
    return read.entries


def record_line(record: dict[str, Any]) -> str:
    """One record as CANN writes it: compact JSON, ``info_dict`` keys sorted (nlohmann's order),
    ``knowledge`` in declaration order; ``id`` as the record has it."""
    info = record["info_dict"]
    out = {"id": record["id"], "info_dict": {k: info[k] for k in sorted(n for n, _ in KEY_FIELDS)},
           "knowledge": {k: record["knowledge"][k] for k in KNOWLEDGE_FIELDS},
           "op": record["op"], "version": record["version"]}
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)


def _sort_key(record: dict[str, Any]) -> tuple[int, bytes]:
    info = record["info_dict"]
    return key_hash(info), pack_key(info)


def _remove_stale_temps(directory: str, name: str) -> None:
    """Temporary files of this bank file left by a writer killed mid-write (seen under the lock)."""
    for n in os.listdir(directory):
        if n.startswith(".tmp-") and n.endswith("-" + name):
            try:
                os.unlink(os.path.join(directory, n))
            except OSError:
                pass


def write_bank(path: str | os.PathLike[str], entries: Iterable[CannEntry]) -> int:
    """Merge `entries` into the MatMulV3 bank file `path` (created with its directories) and
    return the number of records it now holds (0 for no entries: nothing is done).

    Every entry is checked first (record fields and types, the SoC's buffer limits; its SoC
    and core count must be the file name's): one bad entry raises BankError listing them all and
    nothing is written.  Under the directory's lock the file is re-read (a file with a bad line
    raises BankError and is left untouched), a new record replaces the one with its key (CANN's
    hash of the packed key), and the file is replaced atomically, mode 0640, sorted by key."""
    path = os.fspath(path)
    entries = list(entries)
    name = os.path.basename(path)
    parsed = parse_bank_file_name(path)
    problems = []
    for i, e in enumerate(entries):
        if parsed is not None and (e.soc_version, e.core_num, OP_TYPE) != parsed:
            problems.append(f"entry {i}: for {e.soc_version} with {e.core_num} cores, the file is for "
                            f"{parsed[0]} with {parsed[1]}")
            continue
        try:
            table = platform(e.soc_version)
        except ValueError as err:
            problems.append(f"entry {i}: {err}")
            continue
        problems += [f"entry {i}: {p}" for p in check_record(e.record, table)]
    if problems:
        raise BankError(f"{path}: nothing written, invalid record(s): " + "; ".join(problems))
    if not entries:
        return 0
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise BankError(f"{directory}: cannot create the bank directory ({e.strerror or e})") from None
    with _bank_lock(directory):
        _remove_stale_temps(directory, name)
        merged: dict[int, dict[str, Any]] = {}
        if os.path.exists(path):
            old = read_bank_report(path, entries[0].soc_version, entries[0].core_num)
            if old.problems:
                raise BankError(f"{path}: left untouched, it has bad lines ({'; '.join(map(str, old.problems))})")
            merged = {e.key_id: e.record for e in old.entries}
        for e in entries:
            merged[e.key_id] = e.record
        records = sorted(merged.values(), key=_sort_key)
        atomic_write_text(path, "".join(record_line(r) + "\n" for r in records), mode=FILE_MODE)
    return len(records)
