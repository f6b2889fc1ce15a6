"""A small JSON document in the data dir that several processes change: the nodes of a
cluster sharing the data dir, and offline tools (`kgroup users add --data-dir`).

How this works: every change is a read-modify-write under an exclusive flock on a lock file
beside the document (`<name>.lock`, held for milliseconds), and the document is replaced
atomically (temp file, fsync, rename, fsync of the directory), so a reader sees the old
document or the new one and a crash loses nothing acknowledged. A process that keeps a
decoded copy notices changes made by others by polling the file's identity (inode, size,
mtime): `changed()` is one stat(2). No process holds the lock while it waits for anything
else, so a stopped process (SIGSTOP) can stall others for at most its own few milliseconds
of work — and a process that cannot take the lock within `lock_timeout_s` gets a
StorageError naming the file instead of waiting for ever.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.errors import CorruptDataError, StorageError

_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)


class SharedJsonFile:
    """One JSON object in a file, changed under a lock and replaced atomically."""

    def __init__(self, path: Path, *, mode: int = 0o644, lock_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.mode = mode
        self.lock_timeout_s = lock_timeout_s
        self._seen: tuple[int, int, int] | None = None

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def changed(self) -> bool:
        """Whether the file differs from what this object last read or wrote."""
        return self._stat() != self._seen

    def read(self) -> dict[str, Any]:
        """The document ({} while the file does not exist); CorruptDataError if unreadable."""
        self._seen = self._stat()
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc}") from exc
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise CorruptDataError(f"{self.path} is not valid JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise CorruptDataError(f"{self.path} does not hold a JSON object")
        return doc

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open lock file {lock_path}: {exc}") from exc
        try:
            deadline = time.monotonic() + self.lock_timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in _BUSY:
                        raise StorageError(f"cannot lock {lock_path}: {exc}") from exc
                if time.monotonic() >= deadline:
                    raise StorageError(f"{lock_path} stayed locked for {self.lock_timeout_s:g}s "
                                       "(another process is stuck changing it)")
                time.sleep(0.002)
            yield
        finally:
            os.close(fd)  # releases the flock

    @contextmanager
    def changing(self) -> Iterator[dict[str, Any]]:
        """Under the lock: the current document to change in place; written back (only if
        it changed) when the block ends without an error."""
        with self._locked():
            doc = self.read()
            before = json.dumps(doc, sort_keys=True)
            yield doc
            text = json.dumps(doc, sort_keys=True, indent=1)
            if json.dumps(doc, sort_keys=True) != before:
                write_atomically(self.path, [text.encode()], mode=self.mode)
            self._seen = self._stat()
