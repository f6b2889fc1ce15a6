"""The fetcher's fast record decoder agrees with record_batch.decode_records."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.client.fetcher import _runs, decode
from kgroup.client.partitioner import StickyPartitioner, partition_for_key
from kgroup.client.records import TopicPartition
from kgroup.wire.record_batch import (BATCH_HEADER_SIZE, Compression, TimestampType, build_batch,
                                      build_control_batch, decode_records, read_batch_header,
                                      set_base_offset)

record = st.tuples(st.none() | st.binary(max_size=300), st.none() | st.binary(max_size=300),
                   st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)),
                            max_size=2),
                   st.integers(0, 2**40))


@settings(max_examples=200, deadline=None)
@given(records=st.lists(record, min_size=1, max_size=20), base=st.integers(0, 1000),
       codec=st.sampled_from(list(Compression)), start_at=st.integers(0, 25))
def test_fast_decode_matches_full_decoder(records, base, codec, start_at):
    blob = build_batch(records, base_offset=base, compression=codec)
    want = [r for r in decode_records(blob) if r.offset >= base + start_at]
    got, after = decode(TopicPartition("t", 0), blob, base + start_at)
    assert after == max(base + start_at, base + len(records))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == \
        [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in want]


@settings(max_examples=60, deadline=None)
@given(count=st.sampled_from([1, 15, 16, 63, 64, 65, 200, 8191, 8192, 8300]),
       key_len=st.none() | st.integers(0, 200), value_len=st.integers(0, 300),
       spread=st.sampled_from([0, 1, 5, 40, 100, 8000]), odd=st.none() | st.integers(0, 8299),
       start_at=st.integers(0, 8400), log_append=st.booleans(), data=st.data())
def test_same_shaped_runs_decode_like_the_full_decoder(count, key_len, value_len, spread, odd,
                                                       start_at, log_append, data):
    # Producer-shaped batches: one key and value length, timestamps rising by up to `spread`
    # ms, so the varint sizes of both deltas change inside the batch; `odd` is one record of
    # another shape (a longer value) that splits the runs.
    seed = data.draw(st.integers(0, 255))
    records = []
    for i in range(count):
        n = value_len + 1 if i == odd else value_len
        key = None if key_len is None else bytes([(seed + i) % 256]) * key_len
        records.append((key, bytes([(seed * i) % 256]) * n, (), 1_000_000 + spread * i // max(count, 1)))
    ts_type = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
    blob = build_batch(records, base_offset=500, timestamp_type=ts_type)
    start = 500 + start_at
    want = [r for r in decode_records(blob) if r.offset >= start]
    got, after = decode(TopicPartition("t", 0), blob, start)
    assert after == max(start, 500 + count)
    assert [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in got] == \
        [(r.offset, r.timestamp, int(ts_type), r.key, r.value, r.headers) for r in want]


def test_a_uniform_batch_is_read_in_runs_and_a_varied_one_is_left_to_the_record_decoder():
    uniform = build_batch([(None, b"v" * 100, (), 1000 + i // 50) for i in range(5000)])
    varied = build_batch([(None, b"v" * (i % 7), (), 1000) for i in range(5000)])
    headed = build_batch([(None, b"v", [("h", b"1")], 1000) for i in range(100)])
    took = {}
    for name, blob in (("uniform", uniform), ("varied", varied), ("headed", headed)):
        out: list = []
        h = read_batch_header(blob)
        try:
            took[name] = _runs(out, blob[BATCH_HEADER_SIZE:], h, "t", 0, 0, 0)
        except ValueError:
            took[name] = None
        assert took[name] or out == []
    assert took == {"uniform": True, "varied": False, "headed": None}


def test_murmur2_partitioner_matches_kafka_python():
    from kafka.partitioner.default import murmur2

    for i in range(200):
        key = f"key-{i}".encode()
        assert partition_for_key(key, 7) == (murmur2(key) & 0x7FFFFFFF) % 7


def test_sticky_partitioner_keeps_keyless_records_together_until_a_batch_is_sent():
    p = StickyPartitioner()
    first = p.partition("t", None, 4)
    assert all(p.partition("t", None, 4) == first for _ in range(10))
    p.batch_sent("t", 4)
    assert p.partition("t", None, 4) != first


def test_read_committed_drops_aborted_transactions_and_markers_move_the_fetch_offset():
    # Offsets: 0-1 producer 7 (aborted), 2 producer 8 (committed), 3 abort marker of 7,
    # 4 commit marker of 8, 5 producer 7 again (a later, committed transaction).
    def txn(pid, base, *values):
        return build_batch([(None, v, [], 1) for v in values], base_offset=base, producer_id=pid,
                           producer_epoch=0, base_sequence=base, transactional=True)

    blob = (txn(7, 0, b"a0", b"a1") + txn(8, 2, b"c0")
            + set_base_offset(build_control_batch(7, 0, False, 0, 1), 3)
            + set_base_offset(build_control_batch(8, 0, True, 0, 1), 4) + txn(7, 5, b"c1"))
    tp = TopicPartition("t", 0)
    committed, after = decode(tp, blob, 0, [(0, 7)])
    assert [r.value for r in committed] == [b"c0", b"c1"] and after == 6
    everything, _ = decode(tp, blob, 0)
    assert [r.value for r in everything] == [b"a0", b"a1", b"c0", b"c1"]
    markers_only, after = decode(tp, set_base_offset(build_control_batch(8, 0, True, 0, 1), 4), 4, [])
    assert markers_only == [] and after == 5
