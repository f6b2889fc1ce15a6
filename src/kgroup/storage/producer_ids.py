"""Producer ids that are never handed out twice, across restarts and across the nodes that
share a data directory.

How this works: like Kafka's ProducerIdManager, ids are reserved in blocks. The file
`<data dir>/producer-ids` holds the first id no one has reserved yet. Taking a block locks
`producer-ids.lock` (flock: exclusive between processes, released by the kernel if a holder
dies), reads the file, writes it back advanced by one block (atomically, fsynced), and only
then hands out ids from the block. A crash loses at most the rest of a block, never reuses
an id. A new file starts at the `first` id the caller gives (the broker passes a time-based
number, so ids of brokers that kept no file never come back either).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.errors import CorruptDataError, StorageError

FILE = "producer-ids"
BLOCK = 1000
# Producer ids are int64; Kafka refuses to go near the top.
LIMIT = 2**63 - 1 - BLOCK


class ProducerIdBlocks:
    """Hands out producer ids from durably reserved blocks (see the module docstring)."""

    def __init__(self, directory: Path | str, first: int, block: int = BLOCK) -> None:
        self.path = Path(directory) / FILE
        self.lock_path = Path(directory) / (FILE + ".lock")
        self.first = first
        self.block = block
        self._next = 0
        self._end = 0

    def next(self) -> int:
        """A producer id never handed out before."""
        if self._next >= self._end:
            self._next, self._end = self._reserve()
        pid = self._next
        self._next += 1
        return pid

    def _reserve(self) -> tuple[int, int]:
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open {self.lock_path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            start = self._read()
            if start > LIMIT:
                raise StorageError(f"{self.path}: producer ids are exhausted")
            write_atomically(self.path, [f"{start + self.block}\n".encode()])
            return start, start + self.block
        finally:
            os.close(fd)  # releases the flock

    def _read(self) -> int:
        try:
            text = self.path.read_text().strip()
        except FileNotFoundError:
            return self.first
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc}") from exc
        try:
            value = int(text)
        except ValueError:
            raise CorruptDataError(f"{self.path} does not hold a producer id: {text[:40]!r}") from None
        if value < 0:
            raise CorruptDataError(f"{self.path} holds a negative producer id {value}")
        return value
