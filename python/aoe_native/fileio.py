"""Files that survive a kill at any moment: atomic writes and stable JSON.  (Locks between
processes are ``filelock``'s.)"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a reader sees the old or the new
    file, never a partial one, whatever happens to this process (temporary file
    in the same directory, fsync, rename)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=directory)
    try:
        if hasattr(os, "fchmod"):  # mkstemp creates 0600; give the file the usual mode
            os.fchmod(fd, 0o666 & ~_UMASK)
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


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomic UTF-8 text write (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def dump_json(obj: Any) -> str:
    """Stable, diff-friendly JSON: sorted keys, one item per line."""
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def read_json(path: str | os.PathLike[str], what: str, error: type[Exception] = ValueError) -> Any:
    """A JSON file we are given; ``error("<what> <path>: ...")`` when it cannot be read or parsed."""
    where = f"{what} {os.fspath(path)}"
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise error(f"{where}: cannot read ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise error(f"{where}: invalid JSON ({e})") from None
