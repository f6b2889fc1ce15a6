"""The fetcher's fast record decoder agrees with record_batch.decode_records."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.client.fetcher import decode
from kgroup.client.partitioner import StickyPartitioner, partition_for_key
from kgroup.client.records import TopicPartition
from kgroup.wire.record_batch import Compression, build_batch, build_control_batch, decode_records, set_base_offset

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
