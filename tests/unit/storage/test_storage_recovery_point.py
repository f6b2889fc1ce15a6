"""The recovery point (recovery_point.py): an open scans only what was written after it;
it never claims more than was fsynced; a corrupt, missing or unfitting one means a full
scan; a truncation below it moves it down; a takeover carries it into the new epoch."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from batch_builder import make_batch

from kgroup.storage import segments
from kgroup.storage.framing import encode_frame
from kgroup.storage.partition_log import PartitionLog
from kgroup.storage.record_log import RecordLog
from kgroup.storage.recovery_point import (
    RECOVERY_POINT_FILE,
    RecoveryPoint,
    read_recovery_point,
)


def payload(i: int) -> bytes:
    return b"record-%06d" % i


def records(log: RecordLog) -> list[tuple[int, bytes]]:
    return list(log.read_from(log.log_start_offset))


def synced_log(path: Path, n: int, segment_bytes: int = 1 << 20) -> RecordLog:
    log = RecordLog(path, segment_bytes)
    for i in range(n):
        log.append(payload(i))
    log.sync()
    return log


def flip_byte(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


@pytest.fixture
def every_sync_checkpoints(monkeypatch):
    """Store the point after every sync (not only every few MB)."""
    monkeypatch.setattr(segments, "CHECKPOINT_INTERVAL_BYTES", 1)


def test_a_clean_close_stores_the_end_and_the_next_open_scans_nothing(tmp_path: Path) -> None:
    log = synced_log(tmp_path, 100)
    seg = log._segments[-1]
    log.close()
    assert read_recovery_point(tmp_path) == RecoveryPoint(0, seg.size, 100)
    # Damage below the point is not looked at (it is trusted, as Kafka trusts its recovery
    # point): proof that the open did not scan those bytes.
    flip_byte(seg.path, seg.size - 1)
    log = RecordLog(tmp_path)
    assert log.log_end_offset == 100
    log.close()
    # Without the point the same open scans everything and finds it.
    (tmp_path / RECOVERY_POINT_FILE).unlink()
    log = RecordLog(tmp_path)
    assert log.log_end_offset == 99


def test_a_torn_tail_after_the_point_is_cut_and_the_point_moves_to_the_new_end(tmp_path: Path,
                                                                               caplog) -> None:
    log = synced_log(tmp_path, 10)
    log.close()
    point = read_recovery_point(tmp_path)
    path = log._segments[-1].path
    with open(path, "ab") as f:                     # written after the point, then kill -9:
        for i in range(10, 15):                     # five whole frames and a torn one
            f.write(encode_frame(payload(i)))
        f.write(b"\x00\x00\x00\x40torn")
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = RecordLog(tmp_path)
    assert "cut 8 bytes" in caplog.text
    assert log.log_end_offset == 15
    assert records(log) == [(i, payload(i)) for i in range(15)]
    moved = read_recovery_point(tmp_path)
    assert moved.position > point.position and moved.offset == 15
    assert moved.position == path.stat().st_size
    assert log.append(b"after") == 15


@pytest.mark.parametrize("content", [
    b"",
    b"garbage\n",
    b"kgroup-recovery-point 1 0 999999 10 00000000\n",     # wrong checksum
    RecoveryPoint(0, 40, 2).encode()[:-5] + b"zzzz\n",
    RecoveryPoint(0, 0, 5).encode(),                        # records before byte 0
])
def test_a_corrupt_point_means_a_full_scan(tmp_path: Path, caplog, content: bytes) -> None:
    log = synced_log(tmp_path, 20)
    size = log._segments[-1].size
    log.close()
    (tmp_path / RECOVERY_POINT_FILE).write_bytes(content)
    flip_byte(tmp_path / segments.segment_name(0), size - 1)   # found only by a full scan
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = RecordLog(tmp_path)
    assert "recovery-point" in caplog.text and "whole log" in caplog.text
    assert log.log_end_offset == 19
    # ... and the point is stored again, for what was just recovered.
    assert read_recovery_point(tmp_path) == RecoveryPoint(0, log._segments[-1].size, 19)


@pytest.mark.parametrize("point", [
    RecoveryPoint(0, 10 ** 6, 20),        # past the end of the file
    RecoveryPoint(7777, 0, 7777),         # a segment that is not there (deleted since)
])
def test_a_point_that_does_not_fit_the_files_means_a_full_scan(tmp_path: Path, point) -> None:
    log = synced_log(tmp_path, 20)
    size = log._segments[-1].size
    log.close()
    (tmp_path / RECOVERY_POINT_FILE).write_bytes(point.encode())
    flip_byte(tmp_path / segments.segment_name(0), size - 1)
    log = RecordLog(tmp_path)
    assert log.log_end_offset == 19


def test_the_point_never_claims_more_than_what_was_fsynced(tmp_path: Path,
                                                           every_sync_checkpoints) -> None:
    log = RecordLog(tmp_path)
    for i in range(50):
        log.append(payload(i))
        if i % 7 == 0:
            durable = log.sync()
            point = read_recovery_point(tmp_path)
            assert point.offset == durable
            assert point.position == sum(s.size for s in log._segments)
    log.append(b"buffered")
    log.flush()                      # in the kernel, not fsynced: not claimed
    assert read_recovery_point(tmp_path).offset <= log.durable_end < log.log_end_offset


def test_the_point_is_stored_only_every_few_megabytes_of_syncs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(segments, "CHECKPOINT_INTERVAL_BYTES", 1000)
    log = RecordLog(tmp_path)
    log.append(payload(0))
    log.sync()
    first = read_recovery_point(tmp_path)
    assert first == RecoveryPoint(0, 8 + 13, 1)     # none stored yet: the first sync stores one
    for i in range(1, 10):
        log.append(payload(i))
        log.sync()
    assert read_recovery_point(tmp_path) == first   # 189 bytes since: not yet
    for i in range(10, 100):
        log.append(payload(i))
        log.sync()
    assert read_recovery_point(tmp_path).offset >= 50


def test_a_crash_between_the_fsync_and_the_point_costs_only_a_longer_scan(tmp_path: Path, monkeypatch,
                                                                          every_sync_checkpoints) -> None:
    log = synced_log(tmp_path, 10)
    old = read_recovery_point(tmp_path)
    assert old.offset == 10

    def crash_before_the_write(directory, point):   # the fsync happened, the write did not
        return False

    monkeypatch.setattr(segments, "write_recovery_point", crash_before_the_write)
    for i in range(10, 30):
        log.append(payload(i))
    assert log.sync() == 30
    assert read_recovery_point(tmp_path) == old
    monkeypatch.undo()
    # kill -9 now: nothing flushed is lost; the reopen scans from the old point.
    reopened = RecordLog(tmp_path)
    assert records(reopened) == [(i, payload(i)) for i in range(30)]
    assert read_recovery_point(tmp_path).offset == 30
    log.close()


def test_a_truncation_below_the_point_moves_it_down(tmp_path: Path, caplog) -> None:
    # Segments of 64 bytes: a point in the third segment; the second segment then loses its
    # tail (what a machine crash that lost the roll's fsync leaves, had the point lied).
    log = synced_log(tmp_path, 30, segment_bytes=64)
    log.close()
    point = read_recovery_point(tmp_path)
    segs = sorted(tmp_path.glob("*.log"))
    assert point.base == int(segs[-1].stem) and len(segs) > 3
    # The named segment shrinks below the point: the point no longer fits, a full scan
    # runs, and the point is stored again at what survived.
    os.truncate(segs[-1], point.position - 3)
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = RecordLog(tmp_path, segment_bytes=64)
    assert "past the" in caplog.text
    moved = read_recovery_point(tmp_path)
    assert (moved.base, moved.offset) < (point.base, point.offset) or moved.position < point.position
    assert moved.offset == log.log_end_offset == 29
    assert records(log) == [(i, payload(i)) for i in range(29)]


def test_retention_deleting_the_named_segment_leaves_a_point_covering_nothing(tmp_path: Path) -> None:
    log = synced_log(tmp_path, 30, segment_bytes=64)
    log.close()
    (tmp_path / RECOVERY_POINT_FILE).write_bytes(RecoveryPoint(0, 21, 1).encode())
    log = RecordLog(tmp_path, segment_bytes=64)       # the point moves up to the end
    assert read_recovery_point(tmp_path).offset == 30
    log.restart_at(100)                                # drops every segment, the named one too
    log.append(b"x")
    log.flush()                                        # kill -9 before any sync
    reopened = RecordLog(tmp_path, segment_bytes=64)   # the point names a deleted segment
    assert records(reopened) == [(100, b"x")]
    assert read_recovery_point(tmp_path) == RecoveryPoint(100, 9, 101)
    log.close()


# -- partition logs ------------------------------------------------------------------------

def test_partition_log_checks_batch_crcs_only_after_the_point(tmp_path: Path, caplog) -> None:
    log = PartitionLog(tmp_path)
    for i in range(5):
        log.append(make_batch([b"v%d" % i] * 3))
    log.sync()
    log.close()
    point = read_recovery_point(tmp_path)
    assert point.offset == 15
    seg = tmp_path / segments.segment_name(0)
    flip_byte(seg, point.position - 1)                 # below the point: not re-checked
    with open(seg, "ab") as f:
        f.write(make_batch([b"late"] * 2)[:-4])        # a torn batch after it: cut
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = PartitionLog(tmp_path)
    assert "cut" in caplog.text and "CRC" not in caplog.text
    assert log.log_end_offset == 15
    assert read_recovery_point(tmp_path) == point
    log.close()
    (tmp_path / RECOVERY_POINT_FILE).unlink()          # without it: the full check finds it
    log = PartitionLog(tmp_path)
    assert log.log_end_offset == 12
    log.close()


# -- takeover (the seal) -------------------------------------------------------------------

def test_a_takeover_scans_only_after_the_point_and_gives_the_new_epoch_its_own(tmp_path: Path,
                                                                              monkeypatch) -> None:
    from kgroup.storage import record_log
    from test_storage_takeover import node, owned_with, records as unit_records, take

    a, b = node(tmp_path, 0), node(tmp_path, 1)
    part = owned_with(a, 0, *(payload(i) for i in range(100)))   # synced: the point is stored
    part.log.close()                                             # (a clean close writes it)
    epoch_dir = part.log.directory
    point = read_recovery_point(epoch_dir)
    assert point.offset == 100
    segment = part.log._segments[-1]
    # Then the previous owner wrote more without an fsync, and a torn frame (kill -9).
    with open(segment.path, "ab") as f:
        f.write(encode_frame(payload(100)) + b"\x00\x00\x00\x40torn")
    scanned = []

    class Recording(record_log.FrameScan):
        def __init__(self, fd, start, end, *args):
            scanned.append((start, end))
            super().__init__(fd, start, end, *args)

    monkeypatch.setattr(record_log, "FrameScan", Recording)
    take(b, 0)
    assert scanned == [(point.position, point.position + len(encode_frame(payload(100))) + 8)]
    new = b.metadata_log.partition(0)
    assert unit_records(new) == [payload(i) for i in range(101)]
    new_dir = new.log.directory
    assert new_dir != epoch_dir
    # The new epoch's directory has a point at the valid end of the inherited segment
    # (the torn frame is not inherited), fsynced with the seal.
    assert read_recovery_point(new_dir) == RecoveryPoint(0, point.position + len(encode_frame(payload(100))), 101)
    a.close()
    b.close()


def test_a_slower_sync_never_moves_the_point_back(tmp_path: Path, every_sync_checkpoints) -> None:
    log = synced_log(tmp_path, 10)
    later = read_recovery_point(tmp_path)
    log._store_recovery_point(RecoveryPoint(0, 21, 1))    # what an earlier sync had captured
    assert read_recovery_point(tmp_path) == later
    log.close()


# -- crashes -------------------------------------------------------------------------------

def test_torn_tails_model_with_a_point_stored_after_every_sync(tmp_path_factory) -> None:
    """The crash model of test_storage_crash.py (random appends, syncs, crashes that keep
    only the fsynced bytes), with the point rewritten at every sync: nothing synced is lost,
    what is read back is a prefix of what was appended."""
    import test_storage_crash as crash_model

    saved = segments.CHECKPOINT_INTERVAL_BYTES
    segments.CHECKPOINT_INTERVAL_BYTES = 1
    try:
        crash_model.test_synced_records_survive_torn_tails(tmp_path_factory)
    finally:
        segments.CHECKPOINT_INTERVAL_BYTES = saved


def test_acknowledged_records_survive_kill_9_with_recovery_points(tmp_path: Path) -> None:
    """A real kill -9 of a process that appends while a thread syncs (points stored at each
    segment roll): the reopen starts from the stored point and loses nothing acknowledged."""
    import signal
    import subprocess
    import sys

    from test_storage_crash import CHILD

    src = Path(__file__).resolve().parents[3] / "src"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(src)}, text=True)
    durable = 0
    try:
        for line in child.stdout:
            durable = max(durable, int(line))
            if durable >= 20_000:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert durable >= 20_000
    point = read_recovery_point(tmp_path)
    assert point is not None and point.base > 0       # stored at a roll, not the first segment
    from kgroup.storage.metadata_log import MetadataPartition

    part = MetadataPartition(tmp_path, 0, segment_bytes=64 * 1024)
    got = list(part.load().tail)
    assert point.offset <= len(got) and len(got) >= durable
    assert got[:durable] == [(i, b"record-%d" % i) for i in range(durable)]
    assert read_recovery_point(tmp_path).offset == len(got)   # moved to what was recovered
    part.close()
