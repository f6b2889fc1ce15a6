"""The columnar decode (fetched batches straight to Arrow, for the Spark source) yields
exactly what the consumer's per-record decode yields."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.client.fetcher import Fetcher, decode, run_extent, run_layout
from kgroup.client.record_columns import RecordColumns, _numpy_extent, decode_columns
from kgroup.client.records import TopicPartition
from kgroup.wire.errors import CorruptRecord
from kgroup.wire.record_batch import (BATCH_HEADER_SIZE, Compression, TimestampType, build_batch,
                                      build_control_batch, read_batch_header, set_base_offset)

TP = TopicPartition("t", 2)

record = st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=40),
                   st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)),
                            max_size=2),
                   st.integers(0, 2**40))


@st.composite
def producer_batch(draw):
    """Records of one shape, as a producer writes them: the columnar runs."""
    count = draw(st.integers(1, 300))
    key_len = draw(st.none() | st.integers(0, 12))
    value_len = draw(st.integers(0, 150))
    spread = draw(st.sampled_from([0, 1, 40, 100, 5000]))
    odd = draw(st.none() | st.integers(0, count - 1))   # one record of another shape
    records = []
    for i in range(count):
        key = None if key_len is None else (b"%012d" % i)[-key_len:] if key_len else b""
        value = bytes([i % 251]) * (value_len + (i == odd))
        records.append((key, value, (), 1_700_000_000_000 + spread * i // count))
    return records


@st.composite
def fetch_blob(draw):
    """(blob, its first offset, the aborted transactions a broker would name): producer
    batches, varied batches (nulls, headers), compressed or not, log-append time or not,
    and transactions of two producers ending in commit or abort markers."""
    parts, aborted = [], []
    offset = draw(st.integers(0, 10_000))
    first = offset
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["producer", "varied", "txn"]))
        codec = draw(st.sampled_from(list(Compression)))
        ts_type = draw(st.sampled_from(list(TimestampType)))
        if kind == "txn":
            pid = draw(st.sampled_from([7, 8]))
            start = offset
            for _ in range(draw(st.integers(1, 2))):
                records = draw(st.lists(record, min_size=1, max_size=5)) if draw(st.booleans()) \
                    else draw(producer_batch())
                parts.append(build_batch(records, base_offset=offset, compression=codec,
                                         producer_id=pid, producer_epoch=0, base_sequence=0,
                                         transactional=True, timestamp_type=ts_type))
                offset += len(records)
            commit = draw(st.booleans())
            parts.append(set_base_offset(build_control_batch(pid, 0, commit, 0, 5), offset))
            offset += 1
            if not commit:
                aborted.append((start, pid))
            continue
        records = draw(producer_batch()) if kind == "producer" else \
            draw(st.lists(record, min_size=1, max_size=20))
        parts.append(build_batch(records, base_offset=offset, compression=codec,
                                 timestamp_type=ts_type))
        offset += len(records)
    return b"".join(parts), first, offset, sorted(aborted)


@settings(max_examples=150, deadline=None)
@given(fetch=fetch_blob(), skip=st.integers(0, 400), committed=st.booleans(),
       cut=st.integers(0, 64))
def test_columns_hold_exactly_what_the_per_record_decode_hands_out(fetch, skip, committed, cut):
    blob, first, end, aborted = fetch
    start = min(first + skip, end)
    if cut and cut < len(blob):      # a broker may end its answer mid-batch
        blob = blob[:-cut]
    wanted_aborted = list(aborted) if committed else None
    want, want_after = decode(TP, blob, start, list(aborted) if committed else None)
    got, after = decode_columns(TP, blob, start, wanted_aborted)
    assert after == want_after
    assert got.as_records(TP) == want
    assert len(got) == len(want)
    got.keys.validate(full=True)
    got.values.validate(full=True)
    if want:   # what the fetcher's drain uses: slices, the last offset, joining
        half = len(want) // 2
        assert (got[:half] + got[half:]).as_records(TP) == want
        assert got[-1].offset == want[-1].offset
        assert got.before(want[half].offset).as_records(TP) == want[:half]


def test_the_source_arrow_batches_are_those_of_the_per_record_path():
    from kgroup.spark.schema import columns_to_arrow, records_to_arrow

    blob = b"".join(build_batch([(b"k%07d" % i, b"v" * 100, (), 1000 + i // 10)
                                 for i in range(j * 300, j * 300 + 300)], base_offset=j * 300)
                    for j in range(3))
    blob += build_batch([(None, b"x", [("h", b"1"), ("g", None)], 5)], base_offset=900)
    blob += build_batch([(b"a", None, (), 5), (None, b"", (), 7)], base_offset=901,
                        compression=Compression.GZIP,
                        timestamp_type=TimestampType.LOG_APPEND_TIME)
    for start in (0, 450, 900, 901, 903):
        records, _ = decode(TP, blob, start)
        columns, _ = decode_columns(TP, blob, start)
        want = records_to_arrow(records, TP.topic, TP.partition)
        got = columns_to_arrow(columns, TP.topic, TP.partition)
        got.validate(full=True)
        assert got.equals(want), start


def test_a_fetcher_drains_columns_as_it_drains_records():
    # Two buffered answers drained 70 records at a time: the same records, positions and
    # answers joined across the boundary, whichever way the fetcher decodes.
    blobs = [build_batch([(None, b"%d" % i, (), 1) for i in range(b, b + 100)], base_offset=b)
             for b in (0, 100)]
    drained = {}
    for name, way in (("records", decode), ("columns", decode_columns)):
        fetcher = Fetcher(None, {"isolation.level": "read_uncommitted"}, None)  # type: ignore[arg-type]
        fetcher.add([TP])
        fetcher.seek(TP, 0)
        for b, blob in zip((0, 100), blobs):
            records, after = way(TP, blob, b)
            fetcher._buffer.append([TP, fetcher.states[TP].epoch, records, 0, after])
        got = []
        while out := fetcher.drain(70):
            part = out[TP]
            got.append([r.value for r in part] if name == "records"
                       else [r.value for r in part.as_records(TP)])
            assert isinstance(part, RecordColumns) == (name == "columns")
        drained[name] = (got, fetcher.states[TP].position)
    assert drained["columns"] == drained["records"]
    assert drained["records"][1] == 200 and [len(g) for g in drained["records"][0]] == [70, 70, 60]


def _layout(payload, h, extent):
    try:
        return run_layout(payload, h, extent)
    except (IndexError, ValueError, CorruptRecord) as exc:
        return type(exc)


@settings(max_examples=150, deadline=None)
@given(records=producer_batch() | st.lists(record, min_size=1, max_size=30),
       log_append=st.booleans())
def test_numpy_finds_the_runs_the_bytes_checks_find(records, log_append):
    # The columnar path reads runs it measured with numpy; they must be the consumer's.
    ts_type = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
    blob = build_batch(records, base_offset=3, timestamp_type=ts_type)
    h = read_batch_header(blob)
    payload = blob[BATCH_HEADER_SIZE:]
    assert _layout(payload, h, _numpy_extent) == _layout(payload, h, run_extent)


def test_a_producer_batch_is_read_as_runs():
    records = [(b"%08d" % i, b"v" * 100, (), 1000 + i // 50) for i in range(140)]
    blob = build_batch(records)
    runs = run_layout(blob[BATCH_HEADER_SIZE:], read_batch_header(blob), _numpy_extent)
    assert runs is not None and sum(r.count for r in runs) == 140
