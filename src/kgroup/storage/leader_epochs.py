"""A partition's leader-epoch history: the `leader-epochs` file of its epoch directory.

How this works: a partition's leader epoch is its ownership epoch less one
(`leader_epoch_of`): the first owner of a fresh data dir wins ownership epoch 1, so a single
broker leads every partition at leader epoch 0 for ever (it resumes its own epoch after a
restart), as a single Kafka broker does; each takeover in a cluster (ownership.py, a new
epoch won) raises it by one, and every node reads it from the epoch table.

The history is Kafka's leader-epoch cache (LeaderEpochFileCache): (epoch, start offset)
entries, oldest first, the start offset being the first offset written at that epoch. A
partition that never changed owner has none on disk; it reads as (0, log start). When a
node opens a partition at ownership epoch F > 1 it `assign`s (F-1, the log end at takeover)
and writes the file atomically into `e<F>/` before anything is appended at the new epoch
(so a kill -9 leaves either no entry and nothing written at F, or the entry); the sealing
of `e<F>/` (epoch_dirs.py) carries the previous owner's file over, so the history is kept
across takeovers.

File format (text, one entry a line): `version 1`, then `<epoch> <start offset>` lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kgroup.storage.atomic_files import write_atomically
from kgroup.storage.errors import CorruptDataError

LEADER_EPOCHS_FILE = "leader-epochs"
_VERSION_LINE = "version 1"

Entry = tuple[int, int]   # (leader epoch, start offset)


def leader_epoch_of(ownership_epoch: int) -> int:
    """The leader epoch a partition owned at `ownership_epoch` is led at (0 if unowned)."""
    return max(ownership_epoch - 1, 0)


def read(directory: Path) -> list[Entry]:
    """The entries stored in `directory` (none if it has no file)."""
    path = Path(directory) / LEADER_EPOCHS_FILE
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CorruptDataError(f"cannot read {path}: {exc}") from exc
    if not lines or lines[0].strip() != _VERSION_LINE:
        raise CorruptDataError(f"{path}: not a leader-epochs file (first line {lines[:1]!r})")
    entries = []
    try:
        for line in lines[1:]:
            if line.strip():
                epoch, start = line.split()
                entries.append((int(epoch), int(start)))
    except ValueError as exc:
        raise CorruptDataError(f"{path}: bad entry: {exc}") from exc
    return entries


def encode(entries: Sequence[Entry]) -> bytes:
    return ("\n".join([_VERSION_LINE] + [f"{e} {s}" for e, s in entries]) + "\n").encode()


def write(directory: Path, entries: Sequence[Entry]) -> None:
    """Replace the file in `directory` with `entries` (durably, atomically)."""
    write_atomically(Path(directory) / LEADER_EPOCHS_FILE, [encode(entries)])


def assign(entries: Sequence[Entry], epoch: int, start: int) -> list[Entry]:
    """The history after `epoch` begins at offset `start`: as Kafka's cache does, entries
    at that epoch or later, or starting at or after `start`, are replaced by the new one
    (a takeover with nothing written since the last one leaves only the newest epoch)."""
    if entries and entries[-1] == (epoch, start):
        return list(entries)
    return [(e, s) for e, s in entries if e < epoch and s < start] + [(epoch, start)]


def effective(entries: Sequence[Entry], log_start: int) -> list[Entry]:
    """The history as answered over a log starting at `log_start`: (0, log start) when
    nothing is stored; entries starting before the log start are cut to the last of them,
    moved to the log start (Kafka's truncateFromStart)."""
    if not entries:
        return [(0, log_start)]
    below = [e for e in entries if e[1] <= log_start]
    above = [e for e in entries if e[1] > log_start]
    if not below:
        return list(entries)
    return [(below[-1][0], log_start)] + above
