"""Epoch directories: each ownership epoch of a log writes only in its own directory, and a
new owner seals what the previous ones wrote.

How this works: a log directory (a topic partition, a group-metadata partition) holds one
directory per ownership epoch, `u<slot>-e<epoch>/` (written `e<F>/` below), with that
epoch's segments, snapshots and `log-start-offset`. The owner of epoch F never writes into
another epoch's directory, and nobody but the owner of F writes into `e<F>/`. The unit's
slot is in the name because a topic deleted and created again gets the same directory
name but a new slot (and epochs from 1 again): what an old incarnation left is never read.

Taking over at epoch F (after publishing F in the epoch table, so a previous owner that is
still running fails its fence check from now on): `prepare` picks the newest complete
directory `e<X>` (X < F; or, for data written before epochs existed, the files directly in
the log directory), opens every segment and snapshot in it (an open descriptor keeps a file
even if a previous owner that has not noticed yet deletes it), and measures each segment's
size *now*. That size is the seal: whatever a previous owner appends later lies beyond it
and is never read; a segment it creates later is never listed. The log then scans the
sources up to their seals -- only after the source's recovery point (recovery_point.py),
read before the sizes are measured; one past a seal is ignored -- (stopping at a torn tail
without cutting: those files may not be ours to write) and `commit` builds `e<F>.tmp/` from
hard links to the valid segments (a copy from the open descriptor if the name is already
gone), the snapshots the sealed log covers, `log-start-offset`, `seal.json` (each inherited
segment's valid length) and the recovery point of what the log just fsynced, fsyncs it,
renames it to `e<F>/` and removes the older directories. The new owner then starts a new
active segment in `e<F>/`.

Why a zombie cannot lose an acknowledged write: it acknowledges only after a post-write
fence check that still saw its epoch, i.e. before F was published, i.e. before the sizes
were measured, so every acknowledged byte is inside the seal.

Resuming epoch F (this node won F earlier and every process that could have written it is
gone): `e<F>/` exists, so its own segments are opened read-write (crash recovery may cut a
torn tail, as in a single broker) and the inherited ones by their sealed lengths.

A brand-new log (nothing to inherit) just gets an empty `e<F>/`; its parents are fsynced by
the log's first sync, before anything written in it is reported durable.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kgroup.storage import leader_epochs
from kgroup.storage.atomic_files import fsync_directory
from kgroup.storage.errors import CorruptDataError, StorageError
from kgroup.storage.recovery_point import RECOVERY_POINT_FILE, RecoveryPoint, read_recovery_point
from kgroup.storage.segments import log

SEAL_FILE = "seal.json"
LOG_START_FILE = "log-start-offset"
_EPOCH_DIR = re.compile(r"^u(\d+)-e(\d+)$")
_EPOCH_TMP = re.compile(r"^u(\d+)-e(\d+)\.tmp$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT = re.compile(r"^(\d{20})\.snapshot$")
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def epoch_dir_name(slot: int, epoch: int) -> str:
    return f"u{slot}-e{epoch}"


@dataclass(slots=True)
class SourceSegment:
    """A segment a log opens from a plan: `fd` is already open; `limit` bytes count."""

    base: int
    name: str
    path: Path
    fd: int
    own: bool          # written by this node's epoch: may be cut on recovery and appended to
    limit: int


@dataclass(slots=True)
class SourceSnapshot:
    offset: int
    name: str
    path: Path
    fd: int


@dataclass(slots=True)
class EpochPlan:
    """How to open one log at one epoch (see the module docstring)."""

    directory: Path                  # the log directory
    slot: int
    epoch: int
    target: Path                     # e<epoch>/ (exists once committed or resumed)
    resumed: bool
    segments: list[SourceSegment] = field(default_factory=list)
    snapshots: list[SourceSnapshot] = field(default_factory=list)
    log_start: int | None = None
    new: bool = False                # nothing to inherit: e<epoch>/ was just created
    # The source's recovery point (recovery_point.py), read before the sizes were measured.
    recovery_point: RecoveryPoint | None = None
    # The source's leader-epoch history (leader_epochs.py), carried into e<epoch>/.
    leader_epochs: list[tuple[int, int]] = field(default_factory=list)

    @property
    def parents_to_sync(self) -> list[Path]:
        """Directories whose entries a brand-new log must fsync before its first durable
        write counts (the log directory, and its parent that may have just gained it)."""
        return [self.directory, self.directory.parent] if self.new else []

    def commit(self, valid: list[tuple[SourceSegment, int]], snapshot_limit: int | None,
               log_start: int | None, recovery_point: bytes | None = None) -> None:
        """Build e<epoch>/ from the valid (segment, length) pairs, the snapshots at offsets
        up to `snapshot_limit`, `log_start` and the encoded `recovery_point` (what the log
        fsynced of those lengths); no-op when resumed or new."""
        if self.resumed or self.new:
            return
        tmp = self.directory / f"{epoch_dir_name(self.slot, self.epoch)}.tmp"
        try:
            if tmp.exists():
                shutil.rmtree(tmp)  # our own earlier attempt at this epoch
            tmp.mkdir()
            sealed = {}
            for seg, length in valid:
                if length <= 0:
                    continue
                _link_or_copy(seg.path, seg.fd, tmp / seg.name, length)
                sealed[seg.name] = length
            for snap in self.snapshots:
                if snapshot_limit is not None and snap.offset <= snapshot_limit:
                    _link_or_copy(snap.path, snap.fd, tmp / snap.name, None)
            if log_start is not None:
                _write_synced(tmp / LOG_START_FILE, f"{log_start}\n".encode())
            if recovery_point is not None:
                _write_synced(tmp / RECOVERY_POINT_FILE, recovery_point)
            if self.leader_epochs:
                _write_synced(tmp / leader_epochs.LEADER_EPOCHS_FILE, leader_epochs.encode(self.leader_epochs))
            _write_synced(tmp / SEAL_FILE, json.dumps(
                {"version": 1, "epoch": self.epoch, "sealed": sealed}).encode())
            fsync_directory(tmp)
            os.rename(tmp, self.target)
            fsync_directory(self.directory)
        except OSError as exc:
            raise StorageError(f"cannot seal {self.directory} for epoch {self.epoch}: {exc}") from exc
        for seg, _ in valid:
            seg.path = self.target / seg.name
        log.info("sealed %s at epoch %d: %d segment(s) inherited", self.directory, self.epoch, len(sealed))

    def close_snapshots(self) -> None:
        for snap in self.snapshots:
            os.close(snap.fd)
        self.snapshots = []

def remove_older(directory: Path, slot: int, epoch: int) -> None:
    """Remove what epochs before `epoch` of `slot` left in a log directory (after it was
    opened at `epoch`): their directories, those of older units of the same name, and
    files from before epochs existed. Best effort: a previous owner still running may be
    creating files there; what is left goes next time."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        m = _EPOCH_DIR.match(entry.name) or _EPOCH_TMP.match(entry.name)
        if m and entry.is_dir(follow_symlinks=False):
            s, e = int(m.group(1)), int(m.group(2))
            if s < slot or (s == slot and e < epoch):
                shutil.rmtree(entry.path, ignore_errors=True)
        elif (_SEGMENT.match(entry.name) or _SNAPSHOT.match(entry.name)
              or entry.name in (LOG_START_FILE, f"{LOG_START_FILE}.tmp",
                                RECOVERY_POINT_FILE, f"{RECOVERY_POINT_FILE}.tmp")
              or entry.name.endswith(".snapshot.tmp")):
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def prepare(directory: Path, slot: int, epoch: int) -> EpochPlan:
    """The plan to open the log in `directory` at `epoch` of unit `slot` (which the
    caller won)."""
    directory = Path(directory)
    target = directory / epoch_dir_name(slot, epoch)
    if target.is_dir():
        return _resume(directory, slot, epoch, target)
    source = _newest_complete(directory, slot, below=epoch)
    if source is None:
        has_legacy = directory.is_dir() and any(
            _SEGMENT.match(n) or _SNAPSHOT.match(n) for n in os.listdir(directory))
        if not has_legacy:
            try:
                target.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot create {target}: {exc}") from exc
            return EpochPlan(directory, slot, epoch, target, resumed=False, new=True)
        source = directory
    for _ in range(10):
        plan = _from_source(directory, slot, epoch, target, source)
        if plan is not None:
            return plan
    raise StorageError(f"{source}: files kept disappearing while sealing it for epoch {epoch}")


def _newest_complete(directory: Path, slot: int, below: int) -> Path | None:
    best = -1
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot list {directory}: {exc}") from exc
    for name in names:
        m = _EPOCH_DIR.match(name)
        if m and int(m.group(1)) == slot and best < int(m.group(2)) < below:
            best = int(m.group(2))
    return directory / epoch_dir_name(slot, best) if best >= 0 else None


def _read_seal(directory: Path) -> dict[str, int]:
    path = directory / SEAL_FILE
    try:
        doc = json.loads(path.read_text())
        return {str(k): int(v) for k, v in doc["sealed"].items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptDataError(f"cannot read {path}: {exc}") from exc


def _read_log_start(directory: Path) -> int | None:
    path = directory / LOG_START_FILE
    try:
        return int(path.read_text().strip())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CorruptDataError(f"cannot read log start offset from {path}: {exc}") from exc


def _resume(directory: Path, slot: int, epoch: int, target: Path) -> EpochPlan:
    sealed = _read_seal(target)
    plan = EpochPlan(directory, slot, epoch, target, resumed=True,
                     recovery_point=read_recovery_point(target))
    for name in sorted(os.listdir(target)):
        m = _SEGMENT.match(name)
        if not m:
            continue
        path = target / name
        own = name not in sealed
        try:
            fd = os.open(path, (os.O_RDWR if own else os.O_RDONLY) | _O_CLOEXEC)
        except OSError as exc:
            plan_close(plan)
            raise StorageError(f"cannot open segment {path}: {exc}") from exc
        size = os.fstat(fd).st_size
        plan.segments.append(SourceSegment(int(m.group(1)), name, path, fd, own,
                                           size if own else min(size, sealed[name])))
    return plan


def _from_source(directory: Path, slot: int, epoch: int, target: Path, source: Path) -> EpochPlan | None:
    """Open everything in `source` and measure it; None if a file vanished between the
    listing and its open (a previous owner pruning): the caller lists again."""
    sealed = _read_seal(source) if source != directory else {}
    # The recovery point is read before any size is measured: a previous owner still
    # running may write a later one, which would not fit the seal (and be ignored).
    plan = EpochPlan(directory, slot, epoch, target, resumed=False, log_start=_read_log_start(source),
                     recovery_point=read_recovery_point(source),
                     leader_epochs=leader_epochs.read(source) if source != directory else [])
    try:
        names = sorted(os.listdir(source))
    except OSError as exc:
        raise StorageError(f"cannot list {source}: {exc}") from exc
    for name in names:
        seg, snap = _SEGMENT.match(name), _SNAPSHOT.match(name)
        if not (seg or snap):
            continue
        path = source / name
        try:
            fd = os.open(path, os.O_RDONLY | _O_CLOEXEC)
        except FileNotFoundError:
            plan_close(plan)
            return None
        except OSError as exc:
            plan_close(plan)
            raise StorageError(f"cannot open {path}: {exc}") from exc
        if seg:
            size = os.fstat(fd).st_size  # the seal: measured after the new epoch is published
            limit = min(size, sealed[name]) if name in sealed else size
            plan.segments.append(SourceSegment(int(seg.group(1)), name, path, fd, False, limit))
        else:
            plan.snapshots.append(SourceSnapshot(int(snap.group(1)), name, path, fd))
    return plan


def plan_close(plan: EpochPlan) -> None:
    """Close every descriptor a plan holds (on failure, or for sources a log dropped)."""
    for seg in plan.segments:
        try:
            os.close(seg.fd)
        except OSError:
            pass
    plan.segments = []
    plan.close_snapshots()


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _link_or_copy(src: Path, fd: int, dst: Path, length: int | None) -> None:
    """Hard-link `src` as `dst`; if the name is gone (deleted by a previous owner after we
    opened it), copy `length` bytes (all if None) from the open descriptor instead."""
    try:
        os.link(src, dst)
        return
    except FileNotFoundError:
        pass
    end = os.fstat(fd).st_size if length is None else length
    with open(dst, "wb") as out:
        pos = 0
        while pos < end:
            chunk = os.pread(fd, min(1 << 20, end - pos), pos)
            if not chunk:
                break
            out.write(chunk)
            pos += len(chunk)
        out.flush()
        os.fsync(out.fileno())
