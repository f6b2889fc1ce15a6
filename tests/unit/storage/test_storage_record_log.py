"""RecordLog and the group-metadata log: framing, rolling, recovery, snapshots, hashing."""

from __future__ import annotations

import logging
import os
import struct
import threading
from pathlib import Path

import pytest

from kgroup.storage.config import FsyncPolicy
from kgroup.storage.errors import (
    CorruptDataError,
    LogClosedError,
    OffsetOutOfRangeError,
    StorageConfigError,
    StorageError,
)
from kgroup.storage.group_hash import java_string_hashcode, partition_for_group
from kgroup.storage.metadata_log import GroupMetadataLog, MetadataPartition
from kgroup.storage.record_log import RecordLog
from kgroup.storage.recovery_point import RECOVERY_POINT_FILE


def payload(i: int) -> bytes:
    return b"record-%d" % i


def records(log: RecordLog, start: int = 0) -> list[tuple[int, bytes]]:
    return list(log.read_from(start))


def last_segment(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


# -- append / read / roll / reopen -------------------------------------------------------

def test_append_returns_consecutive_offsets_and_reads_back(tmp_path: Path) -> None:
    log = RecordLog(tmp_path)
    assert [log.append(payload(i)) for i in range(5)] == [0, 1, 2, 3, 4]
    assert log.log_end_offset == 5
    assert records(log) == [(i, payload(i)) for i in range(5)]
    assert records(log, 3) == [(3, payload(3)), (4, payload(4))]
    assert records(log, 5) == []


def test_read_outside_the_log_raises(tmp_path: Path) -> None:
    log = RecordLog(tmp_path)
    log.append(b"x")
    with pytest.raises(OffsetOutOfRangeError, match=str(tmp_path)):
        log.read_from(2)


def test_empty_payload_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        RecordLog(tmp_path).append(b"")


def test_segments_roll_by_size_and_are_named_by_base_offset(tmp_path: Path) -> None:
    log = RecordLog(tmp_path, segment_bytes=100)
    for i in range(30):
        log.append(b"x" * 20)  # 28-byte frames: 3 per segment
    log.close()
    names = sorted(p.name for p in tmp_path.glob("*.log"))
    assert names[:3] == ["00000000000000000000.log", "00000000000000000003.log",
                         "00000000000000000006.log"]
    assert len(names) == 10
    assert all(p.stat().st_size <= 100 for p in tmp_path.glob("*.log"))


def test_reopen_reads_everything_and_continues(tmp_path: Path) -> None:
    log = RecordLog(tmp_path, segment_bytes=128)
    for i in range(50):
        log.append(payload(i))
    log.sync()
    log.close()
    log = RecordLog(tmp_path, segment_bytes=128)
    assert log.log_end_offset == 50
    assert records(log) == [(i, payload(i)) for i in range(50)]
    assert log.append(b"next") == 50
    assert records(log, 49) == [(49, payload(49)), (50, b"next")]


def test_use_after_close_raises(tmp_path: Path) -> None:
    log = RecordLog(tmp_path)
    log.close()
    with pytest.raises(LogClosedError):
        log.append(b"x")


# -- durability bookkeeping ---------------------------------------------------------------

def test_sync_returns_the_durable_end(tmp_path: Path) -> None:
    log = RecordLog(tmp_path, segment_bytes=64)
    assert log.durable_end == 0
    for i in range(10):
        log.append(payload(i))
    assert log.durable_end == 0
    assert log.sync() == 10
    assert log.durable_end == 10


def test_sync_in_a_thread_while_appending(tmp_path: Path) -> None:
    log = RecordLog(tmp_path, segment_bytes=4096)
    stop = threading.Event()
    seen: list[int] = []

    def syncer() -> None:
        while not stop.is_set():
            seen.append(log.sync())

    t = threading.Thread(target=syncer)
    t.start()
    for i in range(5000):
        log.append(payload(i))
    stop.set()
    t.join()
    assert seen == sorted(seen)
    assert log.sync() == 5000
    log.close()
    assert records(RecordLog(tmp_path)) == [(i, payload(i)) for i in range(5000)]


def test_flush_makes_appends_visible_to_another_reader(tmp_path: Path) -> None:
    log = RecordLog(tmp_path)
    log.append(b"abc")
    assert last_segment(tmp_path).stat().st_size == 0
    log.flush()
    assert last_segment(tmp_path).stat().st_size == 8 + 3


# -- recovery -----------------------------------------------------------------------------

def _write_synced(directory: Path, n: int, segment_bytes: int = 1 << 20) -> None:
    log = RecordLog(directory, segment_bytes)
    for i in range(n):
        log.append(payload(i))
    log.sync()
    log.close()
    # As if the process died before it stored a recovery point: the tests below damage
    # bytes the next open must scan (below a recovery point they are trusted, as in Kafka;
    # test_storage_recovery_point.py covers that).
    (directory / RECOVERY_POINT_FILE).unlink(missing_ok=True)


@pytest.mark.parametrize("garbage", [
    b"\x00\x00",                                # torn header
    struct.pack(">II", 100, 0) + b"short",      # length past EOF
    b"\x00" * 64,                               # zero-filled blocks
])
def test_torn_tail_is_cut_on_open(tmp_path: Path, garbage: bytes, caplog) -> None:
    _write_synced(tmp_path, 10)
    seg = last_segment(tmp_path)
    good = seg.stat().st_size
    with open(seg, "ab") as f:
        f.write(garbage)
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = RecordLog(tmp_path)
    assert f"cut {len(garbage)} bytes" in caplog.text
    assert seg.stat().st_size == good
    assert log.log_end_offset == 10
    assert log.append(b"after") == 10
    log.sync()
    log.close()
    assert records(RecordLog(tmp_path))[-2:] == [(9, payload(9)), (10, b"after")]


def test_crc_corruption_in_last_frame_is_cut(tmp_path: Path, caplog) -> None:
    _write_synced(tmp_path, 10)
    seg = last_segment(tmp_path)
    size = seg.stat().st_size
    with open(seg, "r+b") as f:
        f.seek(size - 1)
        last = f.read(1)
        f.seek(size - 1)
        f.write(bytes([last[0] ^ 0xFF]))
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = RecordLog(tmp_path)
    assert "CRC mismatch" in caplog.text
    assert log.log_end_offset == 9
    assert records(log) == [(i, payload(i)) for i in range(9)]


def test_damage_inside_an_older_segment_raises_on_open(tmp_path: Path) -> None:
    _write_synced(tmp_path, 20, segment_bytes=64)
    first = sorted(tmp_path.glob("*.log"))[0]
    with open(first, "r+b") as f:
        f.seek(9)
        f.write(b"!")
    with pytest.raises(CorruptDataError, match=first.name):
        RecordLog(tmp_path, segment_bytes=64)


@pytest.mark.parametrize("damage", ["truncate", "zeros"])
def test_torn_older_segment_is_cut_and_later_segments_dropped(tmp_path: Path, damage: str,
                                                              caplog) -> None:
    # A machine crash before the roll was fsynced: the older segment lost its tail while
    # the newer segment's directory entry survived.
    _write_synced(tmp_path, 20, segment_bytes=64)
    segs = sorted(tmp_path.glob("*.log"))
    second = segs[1]
    size = second.stat().st_size
    if damage == "truncate":
        os.truncate(second, size - 5)
    else:
        with open(second, "r+b") as f:
            f.seek(size - 20)
            f.write(b"\0" * 20)
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = RecordLog(tmp_path, segment_bytes=64)
    assert "removing" in caplog.text
    assert sorted(tmp_path.glob("*.log")) == segs[:2]
    end = log.log_end_offset
    assert end < 20
    assert records(log) == [(i, payload(i)) for i in range(end)]
    assert log.append(b"more") == end
    log.sync()
    log.close()
    assert records(RecordLog(tmp_path, segment_bytes=64))[-1] == (end, b"more")


# -- snapshots ----------------------------------------------------------------------------

def test_snapshot_then_tail_replay(tmp_path: Path) -> None:
    part = MetadataPartition(tmp_path, 0, segment_bytes=64)
    for i in range(10):
        part.append(payload(i))
    part.write_snapshot(6, [b"state-a", b"state-b"])
    for i in range(10, 12):
        part.append(payload(i))
    part.sync()
    part.close()
    part = MetadataPartition(tmp_path, 0, segment_bytes=64)
    replay = part.load()
    assert replay.snapshot_offset == 6
    assert list(replay.snapshot) == [b"state-a", b"state-b"]
    assert list(replay.tail) == [(i, payload(i)) for i in range(6, 12)]


def test_without_snapshot_load_replays_the_whole_log(tmp_path: Path) -> None:
    part = MetadataPartition(tmp_path, 0)
    part.append(b"a")
    replay = part.load()
    assert (replay.snapshot_offset, list(replay.snapshot), list(replay.tail)) == (0, [], [(0, b"a")])


def test_snapshot_deletes_segments_below_the_oldest_kept_snapshot(tmp_path: Path) -> None:
    part = MetadataPartition(tmp_path, 0, segment_bytes=64, snapshots_retained=2)
    for i in range(30):
        part.append(payload(i))
    part.write_snapshot(10, [b"s10"])
    part.write_snapshot(20, [b"s20"])
    assert part.log_start_offset <= 10
    part.write_snapshot(25, [b"s25"])
    assert sorted(p.name for p in tmp_path.glob("*.snapshot")) == [
        "00000000000000000020.snapshot", "00000000000000000025.snapshot"]
    assert 10 < part.log_start_offset <= 20


def test_corrupt_newest_snapshot_falls_back_to_older_one(tmp_path: Path, caplog) -> None:
    part = MetadataPartition(tmp_path, 0, segment_bytes=64)
    for i in range(30):
        part.append(payload(i))
    part.write_snapshot(10, [b"s10"])
    part.write_snapshot(20, [b"s20-a", b"s20-b"])
    part.close()
    newest = tmp_path / "00000000000000000020.snapshot"
    data = bytearray(newest.read_bytes())
    data[30] ^= 0x01
    newest.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        replay = MetadataPartition(tmp_path, 0, segment_bytes=64).load()
    assert "ignoring invalid snapshot" in caplog.text and newest.name in caplog.text
    assert replay.snapshot_offset == 10
    assert list(replay.snapshot) == [b"s10"]
    assert list(replay.tail) == [(i, payload(i)) for i in range(10, 30)]


def test_corrupt_only_snapshot_falls_back_to_full_log(tmp_path: Path) -> None:
    part = MetadataPartition(tmp_path, 0)
    for i in range(5):
        part.append(payload(i))
    part.write_snapshot(3, [b"s"])
    part.close()
    snap = tmp_path / "00000000000000000003.snapshot"
    snap.write_bytes(snap.read_bytes()[:-3])
    replay = MetadataPartition(tmp_path, 0).load()
    assert replay.snapshot_offset == 0
    assert list(replay.tail) == [(i, payload(i)) for i in range(5)]


def test_lost_records_without_snapshot_raise(tmp_path: Path) -> None:
    part = MetadataPartition(tmp_path, 0, segment_bytes=64, snapshots_retained=1)
    for i in range(30):
        part.append(payload(i))
    part.write_snapshot(20, [b"s"])
    part.close()
    (tmp_path / "00000000000000000020.snapshot").write_bytes(b"garbage")
    with pytest.raises(CorruptDataError, match="no valid snapshot"):
        MetadataPartition(tmp_path, 0, segment_bytes=64).load()


def test_snapshot_newer_than_the_log_continues_from_it(tmp_path: Path) -> None:
    part = MetadataPartition(tmp_path, 0)
    for i in range(10):
        part.append(payload(i))
    part.write_snapshot(10, [b"s"])
    part.close()
    seg = last_segment(tmp_path)
    os.truncate(seg, 0)  # the log lost its tail, the snapshot survived
    part = MetadataPartition(tmp_path, 0)
    assert part.log_end_offset == 10
    assert part.append(b"x") == 10
    replay = part.load()
    assert replay.snapshot_offset == 10 and list(replay.tail) == [(10, b"x")]


# -- group -> partition -------------------------------------------------------------------

def _java_hash_by_hand(units: list[int]) -> int:
    h = 0
    for u in units:
        h = (h * 31 + u) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


@pytest.mark.parametrize("text, expected", [
    ("", 0),
    ("a", 97),
    ("ab", 97 * 31 + 98),                       # 3105
    ("hello", 99162322),                        # well-known Java value
    ("my-group", _java_hash_by_hand([ord(c) for c in "my-group"])),
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16: Java hashes both code units.
    ("g\U0001F600", _java_hash_by_hand([0x67, 0xD83D, 0xDE00])),
    ("é", 0xE9),
])
def test_java_string_hashcode(text: str, expected: int) -> None:
    assert java_string_hashcode(text) == expected


def test_java_hash_wraps_to_negative_and_partition_uses_mask() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE in Java.
    assert java_string_hashcode("polygenelubricants") == -(1 << 31)
    assert partition_for_group("polygenelubricants", 50) == 0
    h = java_string_hashcode("console-consumer-12345")
    assert partition_for_group("console-consumer-12345", 50) == (h & 0x7FFFFFFF) % 50
    assert java_string_hashcode("g\U0001F600") == (0x67 * 31 + 0xD83D) * 31 + 0xDE00


def test_group_metadata_log_routes_groups_and_syncs_dirty_partitions(tmp_path: Path) -> None:
    gml = GroupMetadataLog(tmp_path, num_partitions=5)
    part = gml.for_group("g1")
    assert part.partition == partition_for_group("g1", 5)
    part.append(b"commit")
    assert gml.sync() == {part.partition: 1}
    assert gml.sync() == {}
    gml.close()
    with pytest.raises(StorageConfigError, match="5 partitions"):
        GroupMetadataLog(tmp_path, num_partitions=7)


def test_fsync_policy_parse() -> None:
    assert FsyncPolicy.parse("always").sync_before_answer
    assert FsyncPolicy.parse("interval:250") == FsyncPolicy("interval", 250)
    assert str(FsyncPolicy.parse("never")) == "never"
    with pytest.raises(StorageConfigError):
        FsyncPolicy.parse("sometimes")
