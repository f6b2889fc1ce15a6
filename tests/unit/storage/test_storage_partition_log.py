"""PartitionLog: offsets assigned to record batches, reads, recovery, retention."""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from batch_builder import base_offset_of, crc_is_valid, make_batch, split_batches

from kgroup.storage.config import LogConfig
from kgroup.storage.errors import CorruptDataError, InvalidBatchError, OffsetOutOfRangeError
from kgroup.storage.partition_log import SLICE_MIN_BYTES, PartitionLog
from kgroup.storage.records_slice import RecordsSlice

HOUR = 3_600_000


def values(n: int, tag: str = "v") -> list[bytes]:
    return [f"{tag}{i}".encode() for i in range(n)]


def test_base_offsets_are_assigned_and_crc_stays_valid(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path)
    sizes = [3, 1, 5]
    bases = [log.append(make_batch(values(n), base_offset=12345)) for n in sizes]
    assert bases == [0, 3, 4]
    assert log.log_end_offset == 9 and log.log_start_offset == 0
    batches = split_batches(log.read(0, 1 << 20))
    assert [base_offset_of(b) for b in batches] == [0, 3, 4]
    assert all(crc_is_valid(b) for b in batches)


def test_read_from_the_middle_returns_the_containing_batch(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path)
    for _ in range(4):
        log.append(make_batch(values(10)))
    batches = split_batches(log.read(25, 1 << 20))
    assert [base_offset_of(b) for b in batches] == [20, 30]
    assert log.read(40, 100) == b""
    with pytest.raises(OffsetOutOfRangeError, match=str(tmp_path)):
        log.read(41, 100)


def test_max_bytes_cuts_at_batch_boundaries_but_returns_at_least_one(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path)
    big = make_batch([b"x" * 1000])
    small = make_batch([b"y"])
    log.append(big)
    log.append(small)
    log.append(small)
    assert split_batches(log.read(0, 10)) == [big]  # KIP-74: one whole batch though > max
    two = split_batches(log.read(0, len(big) + len(small) + 5))
    assert [base_offset_of(b) for b in two] == [0, 1]
    everything = log.read(0, 1 << 20)
    assert len(split_batches(everything)) == 3


def test_sparse_index_finds_batches_after_many_appends(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, LogConfig(index_interval_bytes=256))
    for i in range(200):
        log.append(make_batch(values(3, tag=f"b{i}-")))
    for offset in (0, 1, 299, 300, 451, 599):
        first = split_batches(log.read(offset, 1))[0]
        assert base_offset_of(first) == offset - offset % 3
    log.close()
    log = PartitionLog(tmp_path, LogConfig(index_interval_bytes=256))
    assert base_offset_of(log.read(451, 1)) == 450


def test_invalid_batches_are_refused(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path)
    good = make_batch([b"a"])
    with pytest.raises(InvalidBatchError, match="shorter"):
        log.append(good[:30])
    with pytest.raises(InvalidBatchError, match="magic"):
        log.append(good[:16] + b"\x01" + good[17:])
    with pytest.raises(InvalidBatchError, match="batchLength"):
        log.append(good + b"extra")
    assert log.log_end_offset == 0


def test_segments_roll_and_reopen_rebuilds_everything(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=300)
    log = PartitionLog(tmp_path, cfg)
    batch = make_batch(values(2))
    for _ in range(20):
        log.append(batch)
    log.sync()
    log.close()
    names = sorted(p.name for p in tmp_path.glob("*.log"))
    assert len(names) > 3 and names[1] != names[0]
    log = PartitionLog(tmp_path, cfg)
    assert log.log_end_offset == 40
    offsets = []
    pos = 0
    while pos < 40:
        got = split_batches(log.read(pos, 1 << 20))
        offsets += [base_offset_of(b) for b in got]
        pos = offsets[-1] + 2
    assert offsets == list(range(0, 40, 2))
    assert log.append(batch) == 40


def test_torn_batch_tail_is_cut_on_open(tmp_path: Path, caplog) -> None:
    log = PartitionLog(tmp_path)
    log.append(make_batch(values(2)))
    log.append(make_batch(values(3)))
    log.close()
    seg = sorted(tmp_path.glob("*.log"))[-1]
    whole = seg.stat().st_size
    partial = make_batch(values(4))[:-7]
    with open(seg, "ab") as f:
        f.write(partial)
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = PartitionLog(tmp_path)
    assert f"cut {len(partial)} bytes" in caplog.text
    assert seg.stat().st_size == whole
    assert log.log_end_offset == 5
    assert log.append(make_batch(values(1))) == 5


def test_crc_corruption_in_the_active_segment_is_cut(tmp_path: Path, caplog) -> None:
    log = PartitionLog(tmp_path)
    log.append(make_batch(values(2)))
    log.append(make_batch(values(2)))
    log.close()
    seg = sorted(tmp_path.glob("*.log"))[-1]
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0xFF
    seg.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        log = PartitionLog(tmp_path)
    assert "CRC mismatch" in caplog.text
    assert log.log_end_offset == 2


def test_torn_older_segment_is_cut_and_later_segments_dropped(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=300)
    log = PartitionLog(tmp_path, cfg)
    batch = make_batch(values(2))
    for _ in range(12):
        log.append(batch)
    log.close()
    segs = sorted(tmp_path.glob("*.log"))
    os.truncate(segs[1], segs[1].stat().st_size - 3)
    log = PartitionLog(tmp_path, cfg)
    assert sorted(tmp_path.glob("*.log")) == segs[:2]
    end = log.log_end_offset
    assert end < 24 and end % 2 == 0
    assert log.append(batch) == end


def test_damage_inside_an_older_segment_raises(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=300)
    log = PartitionLog(tmp_path, cfg)
    for _ in range(12):
        log.append(make_batch(values(2)))
    log.close()
    first = sorted(tmp_path.glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[16] = 7  # magic of the first batch
    first.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match=first.name):
        PartitionLog(tmp_path, cfg)


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=200))
    for i in range(6):
        log.append(make_batch(values(2), base_timestamp=1000 * (i + 1), timestamp_step=10))
    # batch i has maxTimestamp 1000*(i+1)+10, base offset 2i
    assert log.offset_for_timestamp(0) == (0, 1010)
    assert log.offset_for_timestamp(1010) == (0, 1010)
    assert log.offset_for_timestamp(1011) == (2, 2010)
    assert log.offset_for_timestamp(5500) == (10, 6010)
    assert log.offset_for_timestamp(6011) is None


def test_retention_by_size_deletes_oldest_segments_and_moves_log_start(tmp_path: Path) -> None:
    batch = make_batch(values(1))
    cfg = LogConfig(segment_bytes=len(batch) * 2, retention_bytes=len(batch) * 5)
    log = PartitionLog(tmp_path, cfg)
    for _ in range(10):
        log.append(batch)  # 5 segments of 2 batches
    assert len(log.segment_base_offsets()) == 5
    # Kafka's rule: drop the oldest segment while the rest still holds retention_bytes.
    assert log.apply_retention(now_ms=0) == 2
    assert log.segment_base_offsets() == [4, 6, 8]
    assert log.log_start_offset == 4
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    assert base_offset_of(log.read(4, 1)) == 4
    assert log.size_bytes - 2 * len(batch) < cfg.retention_bytes <= log.size_bytes


def test_retention_by_time_uses_the_given_clock(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=150, retention_ms=HOUR)
    log = PartitionLog(tmp_path, cfg)
    for i in range(4):
        log.append(make_batch([b"x" * 40], base_timestamp=i * HOUR))
    bases = log.segment_base_offsets()
    assert bases == [0, 1, 2, 3]
    assert log.apply_retention(now_ms=2 * HOUR) == 1      # batch 0 is older than 1 h
    assert log.log_start_offset == 1
    assert log.apply_retention(now_ms=2 * HOUR) == 0
    assert log.apply_retention(now_ms=3 * HOUR + 1) == 2  # never the active one...
    assert log.segment_base_offsets() == [3]
    assert log.apply_retention(now_ms=10 * HOUR) == 1     # ...unless all of it expired
    assert log.log_start_offset == log.log_end_offset == 4
    assert log.read(4, 100) == b""
    assert log.append(make_batch([b"new"])) == 4
    log.close()
    log = PartitionLog(tmp_path, cfg)
    assert (log.log_start_offset, log.log_end_offset) == (4, 5)


def test_delete_records_before_persists_the_log_start(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=150))
    for _ in range(6):
        log.append(make_batch([b"x" * 40]))
    assert log.delete_records_before(3) == 3
    assert log.segment_base_offsets()[0] == 3
    log.close()
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=150))
    assert log.log_start_offset == 3
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(99)


def test_delete_removes_the_directory(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog(d)
    log.append(make_batch([b"a"]))
    log.delete()
    assert not d.exists()


def test_header_fields_match_the_v2_layout() -> None:
    batch = make_batch(values(3), base_timestamp=500, timestamp_step=7)
    assert struct.unpack_from(">i", batch, 23)[0] == 2          # lastOffsetDelta
    assert struct.unpack_from(">q", batch, 35)[0] == 514        # maxTimestamp
    assert struct.unpack_from(">i", batch, 57)[0] == 3          # recordCount
    assert batch[16] == 2 and crc_is_valid(batch)


def test_read_up_to_an_offset_stops_before_the_batch_that_starts_there(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path)
    for _ in range(4):
        log.append(make_batch(values(10)))
    assert [base_offset_of(b) for b in split_batches(log.read(0, 1 << 20, upto=20))] == [0, 10]
    assert [base_offset_of(b) for b in split_batches(log.read(15, 1 << 20, upto=30))] == [10, 20]
    assert log.read(20, 1 << 20, upto=20) == b"" and log.read(0, 1 << 20, upto=0) == b""


def test_scan_batches_walks_every_batch_from_an_offset_across_segments(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=400))
    for i in range(12):
        log.append(make_batch(values(1 + i % 3)))
    starts = [struct.unpack_from(">q", prefix)[0] for prefix in log.scan_batches(0, prefix=64)]
    assert len(log._segments) > 1 and starts == sorted(starts) and len(starts) == 12
    assert all(len(p) == 64 for p in log.scan_batches(0, prefix=64))
    middle = starts[5] + 1            # inside the sixth batch when it holds more than one record
    later = [struct.unpack_from(">q", p)[0] for p in log.scan_batches(middle, prefix=64)]
    assert later[0] <= middle and later == [s for s in starts if s >= later[0]]


def _read_by_walking(log: PartitionLog, offset: int, max_bytes: int, upto: int | None) -> bytes:
    """The reference answer: everything in range read into memory, batches walked there."""
    if (upto is not None and offset >= upto) or offset == log.log_end_offset:
        return b""
    log.flush()
    whole = b"".join(os.pread(s.fd, s.size, 0) for s in log._segments)  # one segment here
    pos = 0
    while True:
        base, length = struct.unpack_from(">qi", whole, pos)
        last = base + struct.unpack_from(">i", whole, pos + 23)[0]
        if last >= offset:
            break
        pos += 12 + length
    first = 12 + struct.unpack_from(">i", whole, pos + 8)[0]
    data = whole[pos:pos + max(max_bytes, first)]
    q = first
    while q + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, q)
        if q + 12 + length > len(data) or (upto is not None and base >= upto):
            break
        q += 12 + length
    return data[:q]


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(1, 40), min_size=1, max_size=25), big=st.booleans(),
       interval=st.sampled_from([0, 100, 500, 4096]),
       asks=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from([0, 100, 6000, 70_000, 400_000]), st.integers(0, 10**6)),
                           max_size=12))
def test_reads_and_slices_answer_the_whole_batches_a_walk_finds(tmp_path_factory, counts, big, interval,
                                                              asks) -> None:
    log = PartitionLog(tmp_path_factory.mktemp("p"), LogConfig(index_interval_bytes=interval))
    ends = [0]
    for n in counts:
        log.append(make_batch([v * (800 if big else 1) for v in values(n)]))
        ends.append(log.log_end_offset)
    try:
        for at, max_bytes, cut in asks:
            offset = at % (log.log_end_offset + 1)
            upto = None if cut % 3 == 0 else ends[cut % len(ends)]
            expected = _read_by_walking(log, offset, max_bytes, upto)
            assert log.read(offset, max_bytes, upto) == expected
            got = log.read_slice(offset, max_bytes, upto)
            if isinstance(got, RecordsSlice):
                assert len(expected) >= SLICE_MIN_BYTES and got.read() == expected
                last = split_batches(expected)[-1]
                assert got.end_offset == base_offset_of(last) + struct.unpack_from(">i", last, 23)[0] + 1
                got.close()
            else:
                assert got == expected
    finally:
        log.close()


def test_a_large_read_is_a_slice_of_the_segment_file_that_outlives_the_log(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path)
    for _ in range(4):
        log.append(make_batch([b"x" * 40_000]))
    expected = log.read(0, 1 << 20)
    got = log.read_slice(0, 1 << 20)
    assert isinstance(got, RecordsSlice) and len(got) == len(expected) == log.size_bytes
    assert got.end_offset == 4
    log.delete()                           # retention or a hand-over closes the log's descriptors
    assert got.read() == expected
    got.close()


def test_appends_reach_the_file_whole_when_the_kernel_takes_them_in_short_writes(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    real = os.pwritev

    def short(fd, buffers, position):                   # at most 5,000 bytes per call
        data = b"".join(bytes(b) for b in buffers)[:5_000]
        return real(fd, [data], position)

    monkeypatch.setattr(os, "pwritev", short)
    log = PartitionLog(tmp_path)
    batches = [make_batch([b"y" * size]) for size in (10, 9_000, 20, 30_000, 5)]
    for b in batches:
        log.append(b)                                   # large ones by reference, small ones copied
    log.flush()
    assert [bytes(b[8:]) for b in split_batches(log.read(0, 1 << 20))] == [bytes(b[8:]) for b in batches]
    assert [base_offset_of(b) for b in split_batches(log.read(0, 1 << 20))] == [0, 1, 2, 3, 4]
    log.close()
