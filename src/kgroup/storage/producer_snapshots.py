"""Producer-state snapshots beside a partition log (as Kafka's `<offset>.snapshot` files).

A snapshot `<offset, 20 digits>.producers` in the partition's directory holds the producer
state after every batch below `offset` (opaque bytes to storage: the broker encodes them).
It is written atomically, so a file that exists is whole; one that cannot be used (offset
past the surviving log, unreadable) is ignored and the state is rebuilt from an older one or
from the start of the log. Only the newest few are kept.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.errors import StorageError

SUFFIX = ".producers"
_NAME = re.compile(r"^(\d{20})\.producers$")
KEPT = 2


def snapshot_path(directory: Path, offset: int) -> Path:
    return Path(directory) / f"{offset:020d}{SUFFIX}"


def list_snapshots(directory: Path) -> list[tuple[int, Path]]:
    """(offset, path) of the snapshots in `directory`, oldest first."""
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    found = []
    for entry in entries:
        m = _NAME.match(entry.name)
        if m:
            found.append((int(m.group(1)), Path(entry.path)))
    return sorted(found)


def write_snapshot(directory: Path, offset: int, payload: bytes) -> Path:
    """Write the snapshot for `offset` and keep only the newest `KEPT`."""
    path = snapshot_path(directory, offset)
    write_atomically(path, [payload])
    for _, old in list_snapshots(directory)[:-KEPT]:
        old.unlink(missing_ok=True)
    return path


def read_snapshot(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StorageError(f"cannot read producer-state snapshot {path}: {exc}") from exc


def drop_snapshots_after(directory: Path, offset: int) -> None:
    """Remove snapshots for offsets past `offset` (the log they describe did not survive)."""
    for at, path in list_snapshots(directory):
        if at > offset:
            path.unlink(missing_ok=True)
