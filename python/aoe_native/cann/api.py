"""What the jobs and ``aoe-bank`` call: write a tuned MatMul into CANN's custom bank, look a task
up in CANN's built-in bank, and move records between CANN's files and our bank."""
from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..ascend.ops import baseline_tiling
from ..ascend.platforms import platform
from ..bank.store import Bank, bank_dir, make_entry
from ..graph.partition import task_key
from .bank_file import (OP_TYPE, CannBankWarning, CannEntry, CannProblem, builtin_bank_path, check_record,
                        custom_bank_path, entry_of_record, read_bank_report, write_bank)
from .keys import key_hash, pack_key
from .limits import limit_problems
from .task import task_info
from .tiling_map import model_time, tiling_to_knowledge

__all__ = ["store_tuned", "builtin_lookup", "entry_for_task", "builtin_dir", "import_files", "export_bank",
           "ImportReport", "VERBATIM_OP"]

# Our bank's op type for imported records the cost model cannot express: kept verbatim (their
# CANN record in the entry's "cann" field, an empty tiling), so they never match a task.
VERBATIM_OP = "MatMulV3"


def builtin_dir(flag: str | None, ascend_opp_path: str | None) -> str | None:
    """The built-in bank root: ``--builtin_bank`` if given, else ``$ASCEND_OPP_PATH/built-in/data/op``
    when that variable is set (the caller reads the environment), else None."""
    if flag:
        return flag
    return os.path.join(ascend_opp_path, "built-in", "data", "op") if ascend_opp_path else None


def _mnk(info: Mapping[str, Any], inputs: Sequence[Sequence[int]]) -> tuple[int, int, int]:
    (a0, a1), (b0, b1) = inputs[0], inputs[1]
    M, K = (a1, a0) if info["trans_a_flag"] else (a0, a1)
    N = b0 if info["trans_b_flag"] else b1
    return M, K, N


def entry_for_task(soc_version: str, core_num: int, op_type: str, inputs: Sequence[Sequence[int]], dtype: str,
                   attrs: Mapping[str, Any] | None, tiling: Mapping[str, int],
                   formats: Sequence[str] | None = None) -> CannEntry | str:
    """The CANN record of a tuned MatMul (key, the 23 fields, id = CANN's hash), or a string
    saying why MatMulV3 does not serve this task or tiling.  The record is not yet checked
    against the SoC's buffers (:func:`store_tuned` does)."""
    attrs = dict(attrs or {})
    info = task_info(op_type, inputs, dtype, attrs, formats)
    if isinstance(info, str):
        return info
    M, K, N = _mnk(info, inputs)
    knowledge = tiling_to_knowledge(tiling, inputs, dtype, soc_version, attrs, M, K, N)
    if isinstance(knowledge, str):
        return knowledge
    record = {"id": key_hash(info), "info_dict": info, "knowledge": knowledge, "op": OP_TYPE, "version": 0}
    return CannEntry("MatMul", [list(s) for s in inputs], dtype, attrs, soc_version, int(core_num), dict(tiling),
                     record, list(formats) if formats is not None else ["ND"] * len(inputs))


def store_tuned(root: str | os.PathLike[str] | None, soc: str, core_num: int, op_type: str,
                inputs: Sequence[Sequence[int]], dtype: str, attrs: Mapping[str, Any] | None,
                tiling: Mapping[str, int], *, formats: Sequence[str] | None = None) -> str | None:
    """Write a tuned MatMul tiling where CANN reads it: merged by key into
    ``<root>/<soc>/unified_bank/<soc>_<core_num>_AiCore_MatMulV3_runtime_kb.json`` (root: our
    bank root, None for its default).  Returns the file's path, or None when MatMulV3 does not
    serve this task or tiling (not a 2-D MatMul/Gemm of float16/bfloat16/float32, a fused
    epilogue, a knob MatMulV3 cannot set).  BankError, writing nothing, for a tiling that
    overflows the SoC's L0A/L0B/L0C/L1/BT (CANN would not check it) or a damaged bank file."""
    entry = entry_for_task(soc, core_num, op_type, inputs, dtype, attrs, tiling, formats)
    if isinstance(entry, str):
        return None
    path = custom_bank_path(os.path.dirname(bank_dir(soc, root)), soc, core_num)
    write_bank(path, [entry])
    return path


@functools.lru_cache(maxsize=16)
def _builtin_records(path: str, mtime_ns: int, size: int, soc: str, core_num: int) -> dict[bytes, CannEntry]:
    read = read_bank_report(path, soc, core_num)  # bad lines are skipped (CANN skips them too)
    for p in read.problems:  # once per version of the file (cached)
        warnings.warn(str(p), CannBankWarning, stacklevel=3)
    return {e.key: e for e in read.entries}


def builtin_lookup(builtin_dir: str | os.PathLike[str] | None, soc: str, core_num: int, op_type: str,
                   inputs: Sequence[Sequence[int]], dtype: str, attrs: Mapping[str, Any] | None,
                   formats: Sequence[str] | None = None) -> CannEntry | None:
    """The built-in bank's record for this task (what CANN runs without tuning), or None: no
    built-in dir, no file for this SoC and core count, MatMulV3 does not serve the task, or the
    key is not there.  Matched as CANN does: the packed key byte for byte (its ``tiling`` is
    None when the cost model cannot express the record)."""
    if builtin_dir is None:
        return None
    info = task_info(op_type, inputs, dtype, dict(attrs or {}), formats)
    if isinstance(info, str):
        return None
    path = builtin_bank_path(builtin_dir, soc, core_num)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _builtin_records(path, st.st_mtime_ns, st.st_size, soc, int(core_num)).get(pack_key(info))


@dataclass
class ImportReport:
    """What :func:`import_files` did: per file, the records read, stored as tilings, kept verbatim,
    and the skipped lines."""
    files: list[str] = field(default_factory=list)
    records: int = 0
    tilings: int = 0
    verbatim: list[CannEntry] = field(default_factory=list)
    kept_faster: int = 0
    problems: list[CannProblem] = field(default_factory=list)


def _times(e: CannEntry) -> tuple[float, float]:
    """(baseline, record) model times of an expressible entry."""
    base = baseline_tiling("MatMul", e.inputs, e.dtype, e.soc_version, attrs=e.attrs)
    return (model_time(e.inputs, e.dtype, e.soc_version, base, e.attrs),
            model_time(e.inputs, e.dtype, e.soc_version, e.tiling or {}, e.attrs))


def _bank_item(e: CannEntry) -> tuple[str, dict[str, Any]]:
    cann = {"soc_version": e.soc_version, "core_num": e.core_num, "record": e.record}
    if e.tiling is None:
        # readable, and unique per CANN key (CANN itself keeps one record per id)
        key = f"{task_key(VERBATIM_OP, e.inputs, e.dtype, e.formats, e.attrs)}|cores={e.core_num}|id={e.key_id}"
        return key, make_entry(VERBATIM_OP, e.inputs, e.dtype, e.formats, e.attrs, {}, 0.0, 0.0, cann=cann,
                               cann_reason=e.reason)
    before, after = _times(e)
    return task_key("MatMul", e.inputs, e.dtype, e.formats, e.attrs), \
        make_entry("MatMul", e.inputs, e.dtype, e.formats, e.attrs, e.tiling, before, after, cann=cann)


def import_files(paths: Sequence[str | os.PathLike[str]], root: str | os.PathLike[str] | None,
                 soc_version: str | None = None, core_num: int | None = None) -> ImportReport:
    """Read CANN MatMulV3 bank files into our bank under `root` (each file's SoC from its name
    unless `soc_version` is given).  A record the cost model expresses becomes a MatMul entry
    (the faster of it and the bank's entry stays); one it cannot is kept verbatim as a
    ``MatMulV3`` entry.  Both keep the CANN record, so :func:`export_bank` writes it back as
    read.  Bad lines are skipped and listed in the report."""
    report = ImportReport()
    for p in paths:
        read = read_bank_report(p, soc_version, core_num)
        report.files.append(read.path)
        report.problems += read.problems
        report.records += len(read.entries)
        if not read.entries:
            continue
        bank = Bank(bank_dir(read.soc_version, root), read.soc_version).load()
        items = [_bank_item(e) for e in read.entries]
        replace = {k: bank.entries[k] for k, v in items if v["op_type"] == VERBATIM_OP and k in bank.entries}
        outcomes = bank.store(items, replace=replace)
        for e, out in zip(read.entries, outcomes):
            if e.tiling is None:
                report.verbatim.append(e)
            elif out.stored:
                report.tilings += 1
            else:
                report.kept_faster += 1
    return report


def _export_entry(e: dict[str, Any], soc: str, core_num: int) -> CannEntry | str:
    """The CANN entry of one bank entry: its imported record, else one made from its tiling."""
    cann = e.get("cann")
    if isinstance(cann, dict):
        if cann.get("soc_version") != soc or cann.get("core_num") != core_num:
            return "for another SoC or core count"
        rec = cann.get("record")
        bad = check_record(rec, platform(soc))
        if bad:
            return "; ".join(bad)
        return entry_of_record(rec, soc, core_num)
    out = entry_for_task(soc, core_num, e["op_type"], e["inputs"], e["dtype"], e["attrs"], e["tiling"],
                         e.get("formats"))
    if isinstance(out, CannEntry):
        bad = limit_problems(out.record["knowledge"], out.record["info_dict"], platform(soc))
        if bad:
            return "; ".join(bad)
    return out


def export_bank(root: str | os.PathLike[str] | None, soc: str, output: str | os.PathLike[str] | None = None,
                core_num: int | None = None) -> tuple[str | None, int, int]:
    """Write our bank's MatMul entries for `soc` as CANN's bank file: imported records as
    read, tuned ones made from their tilings (those MatMulV3 cannot run are left out).  The
    file goes to `output` (a directory), else ``<root>/<soc>/unified_bank``, merged by key with
    what is there.  Returns (path or None if nothing to write, records written, entries left
    out)."""
    core = int(core_num or platform(soc)["cube_cores"])
    bank = Bank(bank_dir(soc, root), soc).load()
    chosen: dict[int, CannEntry] = {}
    skipped = 0
    for key, e in sorted(bank.entries.items()):
        if e["op_type"] not in ("MatMul", "MatMulV2", "Gemm", VERBATIM_OP):
            continue
        out = _export_entry(e, soc, core)
        if isinstance(out, str):
            skipped += 1
            continue
        chosen[out.key_id] = out
    if not chosen:
        return None, 0, skipped
    path = custom_bank_path(os.path.dirname(bank_dir(soc, root)), soc, core)
    if output is not None:
        path = os.path.join(os.fspath(output), os.path.basename(path))
    write_bank(path, [chosen[k] for k in sorted(chosen)])
    return path, len(chosen), skipped
