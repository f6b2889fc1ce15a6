"""The recovery point of a log: how far its segments are known fsynced and valid.

How this works (Kafka's recovery-point checkpoint, per log): the file `recovery-point` in a
log's directory names one segment (by base offset), a byte position in it and the offset of
the record that starts there. Everything before that position -- the named segment's bytes
below it and every earlier segment whole -- was fsynced when the file was written, so
opening the log (a start-up, a takeover's seal) trusts those bytes without reading them
again: only what lies after the point is scanned (CRC-checked, a torn tail cut). Partition
logs still walk the batch headers below the point (their in-memory index needs them), but
skip the CRC check there.

The rules that keep it true:
- It is written with `write_atomically`, and only after an fsync that covered what it names
  (`SegmentedLog.sync`), so it never claims more than is durable. A crash between the fsync
  and the write costs only a longer scan next time.
- A missing, unreadable or corrupt file (it carries its own CRC32C), or one that does not fit
  the segments found (unknown segment, position past the file or past a seal), is ignored
  with a warning: the log is scanned whole, as without a checkpoint.
- After an open the log writes the point it recovered to when it differs from the stored
  one: higher after a scan of a longer tail, lower after a cut (a torn tail below it, a
  segment dropped). Deleting the segment it names (retention, DeleteRecords, a restart)
  leaves a file that names an unknown segment, which covers nothing.
- Writing it is best effort: a failure is logged and the old point stays (it is still true).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import crc32c

from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.errors import StorageError

log = logging.getLogger("kgroup.storage")

RECOVERY_POINT_FILE = "recovery-point"
_MAGIC = "kgroup-recovery-point"
_VERSION = 1
# After a sync, the point is rewritten once this many bytes were made durable since the last
# one: a crash then rescans at most about this much (a few tens of ms), while the write (two
# fsyncs) stays rare next to the syncs it follows.
CHECKPOINT_INTERVAL_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RecoveryPoint:
    """Bytes [0, position) of segment `base` (and every segment before it) are durable;
    the record at `position` has offset `offset`."""

    base: int
    position: int
    offset: int

    def encode(self) -> bytes:
        body = f"{_MAGIC} {_VERSION} {self.base} {self.position} {self.offset}"
        return f"{body} {crc32c.crc32c(body.encode()):08x}\n".encode()

    @classmethod
    def decode(cls, data: bytes) -> RecoveryPoint:
        """Parse the file's bytes; raises ValueError on anything malformed."""
        text = data.decode("ascii").strip()
        body, _, crc = text.rpartition(" ")
        if int(crc, 16) != crc32c.crc32c(body.encode()):
            raise ValueError("checksum mismatch")
        magic, version, base, position, offset = body.split(" ")
        if magic != _MAGIC or int(version) != _VERSION:
            raise ValueError(f"unknown format {magic!r} version {version!r}")
        point = cls(int(base), int(position), int(offset))
        if (point.base < 0 or point.position < 0 or point.offset < point.base
                or (point.position == 0 and point.offset != point.base)):
            raise ValueError(f"impossible values {point}")
        return point


def read_recovery_point(directory: Path) -> RecoveryPoint | None:
    """The point stored in `directory`, or None (missing; unreadable or corrupt, with a
    warning: the caller then scans the whole log)."""
    path = Path(directory) / RECOVERY_POINT_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read %s (%s): scanning the whole log", path, exc)
        return None
    try:
        return RecoveryPoint.decode(data)
    except (ValueError, UnicodeDecodeError) as exc:
        log.warning("ignoring corrupt %s (%s): scanning the whole log", path, exc)
        return None


def write_recovery_point(directory: Path, point: RecoveryPoint) -> bool:
    """Replace the stored point (atomically); False (logged) if that failed."""
    try:
        write_atomically(Path(directory) / RECOVERY_POINT_FILE, [point.encode()])
        return True
    except StorageError as exc:
        log.warning("cannot write the recovery point of %s: %s", directory, exc)
        return False


def trusted_prefix(point: RecoveryPoint | None, sources: list, directory: Path) -> tuple[int, int]:
    """(index of the segment `point` names in `sources`, bytes of it trusted), or (-1, 0)
    when the point covers nothing: no point, or one that does not fit the segments (an
    unknown segment -- deleted since, or never ours --, a position past the file or past
    its seal, an offset before the segment's base), which is logged. `sources` are the
    segments being opened (`base` and `limit` attributes), oldest first."""
    if point is None:
        return -1, 0
    for i, source in enumerate(sources):
        if source.base == point.base:
            if point.position > source.limit:
                log.warning("recovery point of %s (byte %d of segment %d) lies past the %d bytes "
                            "found: scanning the whole log", directory, point.position, point.base,
                            source.limit)
                return -1, 0
            if i + 1 < len(sources) and point.offset > sources[i + 1].base:
                log.warning("recovery point of %s (offset %d) lies past the next segment's base "
                            "%d: scanning the whole log", directory, point.offset, sources[i + 1].base)
                return -1, 0
            return i, point.position
    if sources and point.base > sources[-1].base:
        log.warning("recovery point of %s names segment %d, after the last one found: scanning "
                    "the whole log", directory, point.base)
    return -1, 0
