"""Files that survive a kill at any moment and are shared between processes:
atomic writes, inter-process locks, stable JSON."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Any, Iterator

try:  # POSIX advisory locks; elsewhere the lock is a no-op (a single writer is assumed)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


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


@contextlib.contextmanager
def locked(lock_path: str) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path` (created if missing). The kernel
    releases it when the holder dies, so a killed process never leaves the bank locked."""
    os.makedirs(os.path.dirname(os.path.abspath(lock_path)), exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
