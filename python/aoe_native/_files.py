"""Inter-process locking and stable JSON for the files several processes share (the bank)."""
from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Iterator

try:  # POSIX advisory locks; elsewhere the lock is a no-op (a single writer is assumed)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


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
