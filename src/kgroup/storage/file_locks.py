"""flock(2) helpers: try once, or keep trying for a while (peers probe locks briefly)."""

from __future__ import annotations

import errno
import fcntl
import os
import time

from kgroup.storage.errors import StorageError

_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)


def try_lock(fd: int, what: str, shared: bool = False) -> bool:
    """Take the lock on `fd` without waiting; False if another open file holds it."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        raise StorageError(f"cannot lock {what}: {exc}") from exc


def lock_within(fd: int, what: str, timeout_s: float) -> bool:
    """Take the exclusive lock on `fd`, retrying every few ms for up to `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not try_lock(fd, what):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def open_locked(path: str, timeout_s: float = 0.0, shared: bool = False) -> tuple[int | None, str]:
    """Open (creating) `path` and lock it: (fd, "") — or (None, what the holder wrote in
    it, e.g. its pid) when another process keeps it locked past `timeout_s`."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        raise StorageError(f"cannot open lock file {path}: {exc}") from exc
    try:
        taken = lock_within(fd, path, timeout_s) if not shared else try_lock(fd, path, shared=True)
    except StorageError:
        os.close(fd)
        raise
    if taken:
        return fd, ""
    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
    os.close(fd)
    return None, holder
