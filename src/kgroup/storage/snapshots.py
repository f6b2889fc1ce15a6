"""Snapshots of a group-metadata partition: they bound replay time after a restart.

A snapshot `<offset, 20 digits>.snapshot` holds payloads that, replayed in order, rebuild
the state as of log offset `offset` (that is, after replaying records 0..offset-1). Format:

    header: b"KGSNAP01" | int64 offset | uint32 CRC32C(previous 16 bytes)
    frames: uint32 length | uint32 CRC32C(payload) | payload      (see framing.py)
    footer: b"KGSNEND1" | int64 frame count | uint32 CRC32C(previous 16 bytes)

It is written atomically (temp file, fsync, rename, fsync directory). A snapshot is valid when
the header, every frame, and the footer check out and the count matches; validation reads the
whole file before any payload is handed out, so a caller never replays half a snapshot.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Iterable, Iterator

import crc32c

from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.errors import CorruptDataError, StorageError
from kgroup.storage.framing import FrameScan, encode_frame
from kgroup.storage.segments import log

HEADER_MAGIC = b"KGSNAP01"
FOOTER_MAGIC = b"KGSNEND1"
_BODY = struct.Struct(">8sq")
_CRC = struct.Struct(">I")
EDGE_SIZE = _BODY.size + _CRC.size  # header and footer are both 20 bytes
_NAME = re.compile(r"^(\d{20})\.snapshot$")


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}.snapshot"


def _edge(magic: bytes, value: int) -> bytes:
    body = _BODY.pack(magic, value)
    return body + _CRC.pack(crc32c.crc32c(body))


def _parse_edge(data: bytes, magic: bytes, path: Path, what: str) -> int:
    if len(data) != EDGE_SIZE:
        raise CorruptDataError(f"snapshot {path}: {what} is truncated")
    got_magic, value = _BODY.unpack_from(data)
    (crc,) = _CRC.unpack_from(data, _BODY.size)
    if got_magic != magic:
        raise CorruptDataError(f"snapshot {path}: bad {what} magic {got_magic!r}")
    if crc != crc32c.crc32c(data[:_BODY.size]):
        raise CorruptDataError(f"snapshot {path}: {what} CRC mismatch")
    return value


class SnapshotStore:
    """The snapshots of one log directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        for entry in os.scandir(self.directory):
            if entry.name.endswith(".snapshot.tmp"):
                os.unlink(entry.path)

    def offsets(self) -> list[int]:
        """Offsets of the snapshot files present (valid or not), oldest first."""
        found = []
        for entry in os.scandir(self.directory):
            m = _NAME.match(entry.name)
            if m:
                found.append(int(m.group(1)))
        return sorted(found)

    def path_for(self, offset: int) -> Path:
        return self.directory / snapshot_name(offset)

    def write(self, offset: int, payloads: Iterable[bytes]) -> Path:
        """Write the snapshot for `offset` atomically; returns its path."""
        if offset < 0:
            raise StorageError(f"snapshot offset {offset} in {self.directory} is negative")
        count = 0

        def chunks() -> Iterator[bytes]:
            nonlocal count
            yield _edge(HEADER_MAGIC, offset)
            for payload in payloads:
                if not payload:
                    raise StorageError(f"snapshot in {self.directory}: empty payloads are not allowed")
                count += 1
                yield encode_frame(payload)
            yield _edge(FOOTER_MAGIC, count)

        path = self.path_for(offset)
        write_atomically(path, chunks())
        return path

    def validate(self, offset: int) -> int:
        """Check the snapshot for `offset` end to end; returns its payload count or raises
        `CorruptDataError`."""
        path = self.path_for(offset)
        fd = self._open(path)
        try:
            size = os.fstat(fd).st_size
            if size < 2 * EDGE_SIZE:
                raise CorruptDataError(f"snapshot {path}: {size} bytes is too short")
            header_offset = _parse_edge(os.pread(fd, EDGE_SIZE, 0), HEADER_MAGIC, path, "header")
            if header_offset != offset:
                raise CorruptDataError(f"snapshot {path}: header says offset {header_offset}")
            count = _parse_edge(os.pread(fd, EDGE_SIZE, size - EDGE_SIZE), FOOTER_MAGIC, path, "footer")
            scan = FrameScan(fd, EDGE_SIZE, size - EDGE_SIZE)
            for _ in scan:
                pass
            if scan.problem is not None:
                raise CorruptDataError(f"snapshot {path}: {scan.problem}")
            if scan.count != count:
                raise CorruptDataError(f"snapshot {path}: footer says {count} payloads, found {scan.count}")
            return count
        finally:
            os.close(fd)

    def payloads(self, offset: int) -> Iterator[bytes]:
        """The payloads of a snapshot already checked with `validate`."""
        path = self.path_for(offset)
        fd = self._open(path)
        try:
            size = os.fstat(fd).st_size
            scan = FrameScan(fd, EDGE_SIZE, size - EDGE_SIZE)
            yield from scan
            if scan.problem is not None:
                raise CorruptDataError(f"snapshot {path} changed while being read: {scan.problem}")
        finally:
            os.close(fd)

    def newest_valid(self, max_offset: int | None = None, min_offset: int = 0) -> int | None:
        """Offset of the newest snapshot in [min_offset, max_offset] that validates; invalid
        ones are logged (warning) and skipped. None if there is none."""
        for offset in reversed(self.offsets()):
            if offset < min_offset or (max_offset is not None and offset > max_offset):
                continue
            try:
                self.validate(offset)
            except CorruptDataError as exc:
                log.warning("ignoring invalid snapshot: %s", exc)
                continue
            return offset
        return None

    def delete(self, offset: int) -> None:
        try:
            self.path_for(offset).unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot delete snapshot {self.path_for(offset)}: {exc}") from exc

    def _open(self, path: Path) -> int:
        try:
            return os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise CorruptDataError(f"cannot open snapshot {path}: {exc}") from exc
