"""The knowledge bank: tuned tilings kept between runs, one directory per SoC.

Location: ``<root>/<soc_version>/``.  The root is an explicit argument
(``tune_model(bank=ROOT)``), else :data:`DEFAULT_ROOT` (``~/.cache/aoe_native/bank``).
The ``aoe`` command resolves ``--bank``, ``$TUNE_BANK_PATH`` (as AOE) and
``$XDG_CACHE_HOME`` into the root (see :mod:`aoe_native.cli`).  AOE's own default,
~/Ascend/latest/data/aoe/custom/op/<soc>, belongs to the CANN toolkit's tree, so we do
not write there.

Layout: one JSON file per operator type (``MatMul.json``, ``Conv.json``...), each
``{"schema": "aoe_native.opat_bank", "schema_version": 1, "soc_version": ..., "op_type": ...,
"entries": {key: entry}}`` written with sorted keys and one entry per line, so banks diff
and merge well in git.  The key is op type + shapes + dtype + formats + attributes
(:func:`aoe_native.graph.partition.task_key`).  An entry records the tiling, the time with the
default (baseline) tiling and with the tuned one, the tool version and the date.

Concurrency: every write takes an exclusive lock on ``<dir>/.lock`` (``filelock``: an
OS lock the kernel releases when the holder dies), re-reads the file,
merges (the faster entry of a key wins) and replaces the file atomically, so parallel tasks
and concurrent ``aoe`` processes lose nothing, and a kill at any moment leaves the previous
or the new file.  A file that is not valid bank JSON raises :class:`BankError` naming it and
is never overwritten.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import math
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from filelock import FileLock, Timeout

from ..fileio import atomic_write_text, read_json
from ..tuning import improvement

__all__ = ["SCHEMA", "SCHEMA_VERSION", "DEFAULT_ROOT", "BankError", "Bank", "bank_dir", "make_entry",
           "merge_banks", "root_socs"]

DEFAULT_ROOT = os.path.join("~", ".cache", "aoe_native", "bank")

SCHEMA = "aoe_native.opat_bank"
SCHEMA_VERSION = 1
_ENTRY_FIELDS = ("op_type", "inputs", "dtype", "formats", "attrs", "tiling", "time_before_us", "time_after_us",
                 "tool_version", "date")
_LOCK_NAME = ".lock"
# An op_type names its bank file (<op_type>.json, written via a ".tmp-XXXXXXXX-" sibling): longer
# names would pass the 255-byte file-name limit of common filesystems.  Operator types are short.
MAX_OP_TYPE_CHARS = 128
# A writer holds the lock for one file's read-merge-write; waiting longer than this means
# another process is stuck, or locks do not work on this filesystem.
LOCK_NOTICE_S = 5.0
LOCK_TIMEOUT_S = 600.0
_log = logging.getLogger(__name__)


@contextlib.contextmanager
def _bank_lock(directory: str):
    """The bank directory's write lock; says so on stderr (logging) if another writer keeps it
    waiting, and gives up with a BankError after LOCK_TIMEOUT_S."""
    path = os.path.join(directory, _LOCK_NAME)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=LOCK_NOTICE_S)
    except Timeout:
        _log.warning("waiting for the knowledge bank's lock %s: another process is writing to the bank", path)
        try:
            lock.acquire(timeout=LOCK_TIMEOUT_S - LOCK_NOTICE_S)
        except Timeout:
            raise BankError(f"{path}: the knowledge bank's lock was held for {LOCK_TIMEOUT_S:.0f} s; "
                            "another process is stuck while writing, or this filesystem does not "
                            "support file locks") from None
    try:
        yield
    finally:
        lock.release()
# Limits on a bank file, checked before it is parsed (a bank may come from elsewhere:
# aoe-bank merge): an entry is ~0.5 KB, so 256 MiB is ~500,000 entries of one op type; our
# files nest 6 levels (attribute lists included).
MAX_FILE_BYTES = 256 * 2**20
MAX_DEPTH = 32
_INT64_MAX = 2**63 - 1


class BankError(ValueError):
    """A bank file or directory that cannot be used; the message names it."""


def _tool_version() -> str:
    try:
        from .._core import __version__
        return str(__version__)
    except Exception:  # pragma: no cover - package imported without its extension
        return "unknown"


def bank_dir(soc_version: str, root: str | os.PathLike | None = None) -> str:
    """The bank directory of `soc_version` under `root` (default :data:`DEFAULT_ROOT`)."""
    if not soc_version or os.sep in soc_version or soc_version.startswith("."):
        raise ValueError(f"invalid soc_version {soc_version!r}")
    return os.path.join(os.path.expanduser(os.fspath(root) if root is not None else DEFAULT_ROOT), soc_version)


def make_entry(op_type: str, inputs: list[list[int]], dtype: str, formats: list[str], attrs: dict[str, Any],
               tiling: dict[str, int], time_before_us: float, time_after_us: float, **extra: Any) -> dict[str, Any]:
    """A bank entry with the current tool version and date (UTC, ISO 8601)."""
    e = {"op_type": op_type, "inputs": [list(map(int, s)) for s in inputs], "dtype": dtype,
         "formats": list(formats), "attrs": attrs, "tiling": {k: int(v) for k, v in tiling.items()},
         "time_before_us": float(time_before_us), "time_after_us": float(time_after_us),
         "tool_version": _tool_version(),
         "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()}
    e.update(extra)
    return e


def _is_int64(v: Any, lo: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= _INT64_MAX


def _check_entry(path: str, key: str, e: Any) -> None:
    if not isinstance(e, dict):
        raise BankError(f"{path}: entry {key!r} is not an object")
    missing = [f for f in _ENTRY_FIELDS if f not in e]
    if missing:
        raise BankError(f"{path}: entry {key!r} lacks {', '.join(missing)}")
    if not isinstance(e["tiling"], dict) or not all(isinstance(v, int) for v in e["tiling"].values()):
        raise BankError(f"{path}: entry {key!r} has a malformed tiling")
    if not all(_is_int64(v, -_INT64_MAX) for v in e["tiling"].values()):
        raise BankError(f"{path}: entry {key!r} has a tiling value beyond the 64-bit range")
    if not isinstance(e["op_type"], str) or not e["op_type"] or not isinstance(e["dtype"], str):
        raise BankError(f"{path}: entry {key!r} has a malformed op_type or dtype")
    if len(e["op_type"]) > MAX_OP_TYPE_CHARS:
        raise BankError(f"{path}: entry {key!r} has an op_type of {len(e['op_type'])} characters "
                        f"(at most {MAX_OP_TYPE_CHARS}: it names the bank file)")
    if not isinstance(e["inputs"], list) or not all(
            isinstance(s, list) and all(_is_int64(d, 0) for d in s) for s in e["inputs"]):
        raise BankError(f"{path}: entry {key!r} has malformed inputs (lists of non-negative 64-bit integers)")
    if not isinstance(e["formats"], list) or not isinstance(e["attrs"], dict):
        raise BankError(f"{path}: entry {key!r} has malformed formats or attrs")
    for f in ("time_before_us", "time_after_us"):
        if not isinstance(e[f], (int, float)) or not math.isfinite(e[f]) or e[f] < 0:
            raise BankError(f"{path}: entry {key!r} has an invalid {f}")


def _read_file(path: str, soc_version: str | None) -> dict[str, Any]:
    """Parse and validate one bank file; BankError (naming it) if it is not ours or is damaged."""
    try:
        doc = read_json(path, MAX_FILE_BYTES, MAX_DEPTH)
    except (OSError, ValueError) as e:  # ValueError: JSON, UTF-8, size and depth limits
        raise BankError(f"{path}: corrupt bank file ({e}); left untouched") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise BankError(f"{path}: not an aoe_native bank file (no \"schema\": \"{SCHEMA}\"); left untouched")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise BankError(f"{path}: bank schema version {doc.get('schema_version')!r} is not supported "
                        f"(this tool reads version {SCHEMA_VERSION})")
    if soc_version is not None and doc.get("soc_version") != soc_version:
        raise BankError(f"{path}: bank for SoC {doc.get('soc_version')!r}, expected {soc_version!r}")
    entries = doc.get("entries")
    if not isinstance(entries, dict):
        raise BankError(f"{path}: \"entries\" is not an object")
    for key, e in entries.items():
        _check_entry(path, key, e)
    return doc


def _dump_bank(doc: dict[str, Any]) -> str:
    """Bank file text: sorted keys, one entry per line (so a git diff shows one line per
    changed key), compact within the entry."""
    lines = ["{", ' "entries": {']
    items = sorted(doc["entries"].items())
    for i, (key, e) in enumerate(items):
        lines.append(f"  {json.dumps(key, ensure_ascii=False)}: "
                     f"{json.dumps(e, sort_keys=True, ensure_ascii=False, separators=(', ', ': '))}"
                     + ("," if i + 1 < len(items) else ""))
    lines.append(" },")
    rest = sorted((k, v) for k, v in doc.items() if k != "entries")
    for i, (k, v) in enumerate(rest):
        lines.append(f" {json.dumps(k)}: {json.dumps(v, sort_keys=True, ensure_ascii=False)}"
                     + ("," if i + 1 < len(rest) else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _file_name(op_type: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in op_type)
    return f"{safe}.json"


@dataclass
class StoreOutcome:
    key: str
    stored: bool          # False: the bank already held an entry at least as fast
    entry: dict[str, Any]  # the entry now in the bank for this key


class Bank:
    """One SoC's bank directory. `entries` is a snapshot taken by :meth:`load`;
    :meth:`store` merges into the files under the lock and refreshes the snapshot."""

    def __init__(self, directory: str | os.PathLike, soc_version: str | None = None):
        self.directory = os.fspath(directory)
        self.soc_version = soc_version
        self.entries: dict[str, dict[str, Any]] = {}

    @classmethod
    def open(cls, soc_version: str, bank: str | os.PathLike | None = None) -> "Bank":
        b = cls(bank_dir(soc_version, bank), soc_version)
        b.load()
        return b

    def files(self) -> list[str]:
        if not os.path.isdir(self.directory):
            if os.path.exists(self.directory):
                raise BankError(f"{self.directory}: bank path exists and is not a directory")
            return []
        return sorted(os.path.join(self.directory, n) for n in os.listdir(self.directory)
                      if n.endswith(".json") and not n.startswith("."))

    def load(self) -> "Bank":
        entries: dict[str, dict[str, Any]] = {}
        for path in self.files():
            doc = _read_file(path, self.soc_version)
            if self.soc_version is None:
                self.soc_version = doc.get("soc_version")
            entries.update(doc["entries"])
        self.entries = entries
        return self

    def check_writable(self) -> None:
        """Create the bank directory if needed and check that results can be stored there:
        a BankError naming it, before tuning rather than after."""
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as e:
            raise BankError(f"{self.directory}: cannot create the knowledge bank directory: "
                            f"{e.strerror or e}") from None
        if not os.path.isdir(self.directory):
            raise BankError(f"{self.directory}: knowledge bank path exists and is not a directory")
        try:  # a trial file, not os.access: that says yes to root on a read-only mount's permissions
            fd, probe = tempfile.mkstemp(prefix=".probe-", dir=self.directory)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            raise BankError(f"{self.directory}: the knowledge bank is not writable ({e.strerror or e}); tuned "
                            "results could not be stored: give a writable bank") from None

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def nearest(self, op_type: str, inputs: list[list[int]], dtype: str, attrs: dict[str, Any],
                k: int = 4, exclude: str | None = None) -> list[dict[str, Any]]:
        """Up to `k` entries of the same op type, dtype and input ranks, nearest in shape
        (sum of |log ratio| over all dimensions; a different attribute set counts 1)."""
        ranks = [len(s) for s in inputs]
        scored = []
        for key, e in self.entries.items():
            if key == exclude or e["op_type"] != op_type or e["dtype"] != dtype or \
                    [len(s) for s in e["inputs"]] != ranks:
                continue
            d = sum(abs(math.log(max(a, 1) / max(b, 1))) for s, t in zip(inputs, e["inputs"]) for a, b in zip(s, t))
            d += 0.0 if e["attrs"] == attrs else 1.0
            scored.append((d, key, e))
        scored.sort(key=lambda x: (x[0], x[1]))
        return [e for _, _, e in scored[:k]]

    def store(self, entries: Iterable[tuple[str, dict[str, Any]]],
              replace: Mapping[str, dict[str, Any]] | None = None) -> list[StoreOutcome]:
        """Merge (key, entry) pairs into the bank files; the faster entry of a key wins by the
        times recorded in the entries.

        replace: {key: the entry as the caller read it from this bank} for keys the caller judged
        by its own measure (a stale entry, or one re-estimated as slower than the new result
        under the current cost model): that entry is overwritten, unless another writer changed
        it in the meantime, when the recorded times decide again.  Each op-type file is re-read
        under the lock, so concurrent writers lose nothing."""
        replace = dict(replace or {})
        by_file: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for key, e in entries:
            if self.soc_version is None:
                raise BankError(f"{self.directory}: cannot store into a bank whose SoC is unknown")
            _check_entry("<new entry>", key, e)
            by_file.setdefault(_file_name(e["op_type"]), []).append((key, e))
        outcomes: list[StoreOutcome] = []
        if not by_file:
            return outcomes
        self.check_writable()
        with _bank_lock(self.directory):
            # Bank files are only written under this lock, so a temp file seen now was left
            # by a writer killed mid-write: remove it.
            for n in os.listdir(self.directory):
                if n.startswith(".tmp-"):
                    try:
                        os.unlink(os.path.join(self.directory, n))
                    except OSError:
                        pass
            for name, items in sorted(by_file.items()):
                path = os.path.join(self.directory, name)
                if os.path.exists(path):
                    doc = _read_file(path, self.soc_version)  # raises on a damaged file: never overwrite it
                else:
                    doc = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "soc_version": self.soc_version,
                           "op_type": items[0][1]["op_type"], "entries": {}}
                changed = False
                for key, e in items:
                    old = doc["entries"].get(key)
                    if old is None or (key in replace and replace[key] == old) or \
                            e["time_after_us"] < old["time_after_us"]:
                        doc["entries"][key] = e
                        changed = True
                        outcomes.append(StoreOutcome(key, True, e))
                    else:
                        outcomes.append(StoreOutcome(key, False, old))
                if changed:
                    atomic_write_text(path, _dump_bank(doc))
                self.entries.update(doc["entries"])
        return outcomes

    def stats(self) -> dict[str, Any]:
        """Entry count and mean improvement per op type."""
        per: dict[str, list[float]] = {}
        for e in self.entries.values():
            per.setdefault(e["op_type"], []).append(improvement(e["time_before_us"], e["time_after_us"]))
        return {"directory": self.directory, "soc_version": self.soc_version, "entries": len(self.entries),
                "op_types": {op: {"entries": len(v), "mean_improvement": sum(v) / len(v)}
                             for op, v in sorted(per.items())}}


def root_socs(directory: str | os.PathLike) -> list[str]:
    """The SoCs whose banks `directory` holds as a bank root (no bank files of its own, SoC
    subdirectories that have some); [] for anything else."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory) or Bank(directory).files():
        return []
    subdirs = (os.path.join(directory, d) for d in os.listdir(directory))
    return sorted(os.path.basename(d) for d in subdirs if os.path.isdir(d) and Bank(d).files())


def _check_not_root(directory: str) -> None:
    socs = root_socs(directory)
    if socs:  # its files would be ignored, or merged where no run reads them
        raise BankError(f"{directory} is a bank root (banks of {', '.join(socs)}), not one SoC's bank; "
                        f"give {os.path.join(directory, socs[0])}")


def merge_banks(sources: list[str | os.PathLike], destination: str | os.PathLike) -> dict[str, int]:
    """Merge bank directories into `destination` (created if missing), keeping the faster
    entry of each key. All banks must be for the same SoC. Returns counts."""
    if not sources:
        raise ValueError("merge needs at least one source bank")
    banks = []
    for src in sources:
        src = os.fspath(src)
        if not os.path.isdir(src):
            raise BankError(f"{src}: not a bank directory")
        _check_not_root(src)
        b = Bank(src).load()
        if b.soc_version is None:
            raise BankError(f"{src}: empty bank (no entries to merge)")
        banks.append(b)
    socs = {b.soc_version for b in banks}
    _check_not_root(os.fspath(destination))
    dst = Bank(destination).load()
    if dst.soc_version is not None:
        socs.add(dst.soc_version)
    if len(socs) > 1:
        detail = ", ".join(f"{b.directory}: {b.soc_version}" for b in banks)
        if dst.soc_version is not None:
            detail += f", {dst.directory}: {dst.soc_version}"
        raise BankError(f"cannot merge banks of different SoCs ({detail}); only banks of one SoC merge")
    dst.soc_version = socs.pop()
    items = [(k, e) for b in banks for k, e in sorted(b.entries.items())]
    before = len(dst.entries)
    outcomes = dst.store(items)
    return {"sources": len(banks), "source_entries": len(items), "stored": sum(o.stored for o in outcomes),
            "new_keys": len(dst.entries) - before, "entries": len(dst.entries)}
