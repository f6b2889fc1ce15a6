"""Durable file operations: fsync a directory, replace a file atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from kgroup.storage.errors import StorageError


def fsync_directory(path: Path) -> None:
    """fsync a directory so that entries created, renamed or removed in it are durable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise StorageError(f"cannot open directory {path} to fsync it: {exc}") from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        raise StorageError(f"fsync of directory {path} failed: {exc}") from exc
    finally:
        os.close(fd)


def write_atomically(path: Path, chunks: Iterable[bytes], mode: int = 0o644) -> int:
    """Replace `path` with the concatenation of `chunks`: write a temp file in the same
    directory, fsync it, rename it over `path`, fsync the directory. A crash leaves either
    the old file or the new one (plus perhaps a stray `*.tmp`). The new file gets
    permissions `mode` (less the umask). Returns the bytes written."""
    tmp = path.with_name(path.name + ".tmp")
    written = 0
    try:
        tmp.unlink(missing_ok=True)  # a stray one may have other permissions
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
        with open(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
                written += len(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise StorageError(f"cannot write {path} atomically: {exc}") from exc
    fsync_directory(path.parent)
    return written
