"""Files that survive a kill at any moment: atomic writes and stable JSON.  (Locks between
processes are ``filelock``'s.)"""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any

import numpy as np


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically: a reader sees the old or the new
    file, never a partial one, whatever happens to this process (temporary file
    in the same directory, fsync, rename).  mode: the file's permission bits
    (default 0666 less the umask), set before the rename."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=directory)
    try:
        if hasattr(os, "fchmod"):  # mkstemp creates 0600; give the file the usual mode
            os.fchmod(fd, (0o666 & ~_UMASK) if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def atomic_write_text(path: str | os.PathLike[str], text: str, mode: int | None = None) -> None:
    """Atomic UTF-8 text write (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def dump_json(obj: Any) -> str:
    """Stable, diff-friendly JSON: sorted keys, one item per line."""
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


# A JSON string, escapes included (the unrolled form: linear time, no backtracking).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def json_depth(data: bytes) -> int:
    """How deeply JSON text nests arrays and objects (brackets inside strings do not count).

    Python's json module recurses once per level and has no depth limit of its own, so
    files we did not write are measured with this before they are parsed."""
    b = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    opens = (b == ord("[")) | (b == ord("{"))
    where = np.flatnonzero(opens | (b == ord("]")) | (b == ord("}")))
    if where.size == 0:
        return 0
    return int(np.cumsum(np.where(opens[where], 1, -1), dtype=np.int64).max(initial=0))


def read_json(path: str | os.PathLike[str], max_bytes: int, max_depth: int) -> Any:
    """Parse a UTF-8 JSON file that may be hostile: ValueError naming the limit when it is
    larger than ``max_bytes`` or nests deeper than ``max_depth``, checked before parsing.
    Other failures are OSError or ValueError (UnicodeDecodeError, json.JSONDecodeError,
    Python's limit on the digits of an integer)."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)  # a file still growing cannot slip past the limit
    if len(data) > max_bytes:
        raise ValueError(f"larger than the limit of {max_bytes} bytes")
    depth = json_depth(data)
    if depth > max_depth:
        raise ValueError(f"nested {depth} levels deep, more than the limit of {max_depth}")
    return json.loads(data.decode("utf-8"))


def read_given_json(path: str | os.PathLike[str], what: str, error: type[Exception] = ValueError,
                    max_bytes: int = 64 << 20, max_depth: int = 64) -> Any:
    """A JSON file a user gives us (a cluster, a timeline): :func:`read_json` with its
    limits, every failure as ``error("<what> <path>: ...")``."""
    where = f"{what} {os.fspath(path)}"
    try:
        return read_json(path, max_bytes, max_depth)
    except OSError as e:
        raise error(f"{where}: cannot read ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise error(f"{where}: invalid JSON ({e})") from None
    except ValueError as e:  # size or nesting limit, not UTF-8
        raise error(f"{where}: {e}") from None
