"""The producer's bulk path (``Producer.send_columns``): the same partition for every row,
the same order within a partition and the same batch boundaries as ``send`` of the rows one
by one; batches that decode (kio) to exactly the rows given; one future per batch that
carries the batch's outcome. Producers here are never started: what they queue is read
from their ready list, no broker involved."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch

from kgroup.client import BatchMetadata, Producer
from kgroup.client.bulk import columns, murmur2_column
from kgroup.client.errors import KafkaClientError
from kgroup.client.partitioner import murmur2
from kgroup.client.records import TopicPartition

TOPIC = "t"
PARTITIONS = 5


def producer(**settings) -> Producer:
    p = Producer({"bootstrap.servers": "127.0.0.1:1", **settings})
    p._counts[TOPIC] = PARTITIONS
    return p


def queued(p: Producer) -> dict[int, list[list[tuple]]]:
    """Per partition, its batches in order, each the (key, value, headers) of its records."""
    for tp in list(p._open):
        p._close_batch(tp)
    out: dict[int, list[list[tuple]]] = {}
    for b in p._ready:
        if b.encoded is not None:
            batch, _ = read_batch(p._blob(b), 0)
            recs = [(r.key, r.value, tuple((h.key.decode(), h.value) for h in r.headers))
                    for r in batch.records]
        else:
            recs = [(k, v, tuple(h)) for k, v, h, _ in b.records]
        out.setdefault(b.tp.partition, []).append(recs)
    return out


def both_ways(rows: list[tuple], **settings) -> tuple[dict, dict]:
    """What send() row by row queues, and what send_columns() of the same rows queues."""
    keys, values, headers, parts = zip(*rows)

    async def go():
        one = producer(**settings)
        for k, v, h, p in rows:
            await one.send(TOPIC, v, k, partition=p, headers=h)
        bulk = producer(**settings)
        await bulk.send_columns(
            TOPIC, pa.array(values, pa.binary()), pa.array(keys, pa.binary()),
            pa.array([[{"key": hk, "value": hv} for hk, hv in h] for h in headers],
                     pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
            pa.array(parts, pa.int32()))
        return queued(one), queued(bulk)

    return asyncio.run(go())


_key = st.one_of(st.none(), st.binary(max_size=12))
_row = st.tuples(_key, st.one_of(st.none(), st.binary(max_size=60)),
                 st.lists(st.tuples(st.sampled_from(["a", "bé"]),
                                    st.one_of(st.none(), st.binary(max_size=4))), max_size=2),
                 st.one_of(st.none(), st.none(), st.integers(0, PARTITIONS - 1)))


@settings(max_examples=120, deadline=None)
@given(st.lists(_row, min_size=1, max_size=80), st.sampled_from([64, 300, 16_384]))
def test_rows_land_where_send_puts_them_in_the_same_batches(rows, batch_size):
    per_record, bulk = both_ways(rows, **{"batch.size": batch_size})
    assert bulk == per_record


def test_keyless_rows_alone_stick_to_a_partition_per_batch_as_send_does():
    rows = [(None, b"v" * (i % 30), [], None) for i in range(400)]
    per_record, bulk = both_ways(rows, **{"batch.size": 500})
    assert bulk == per_record
    assert len(bulk) == PARTITIONS          # the sticky partition moved on batch by batch


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=50))
def test_murmur2_of_a_column_is_kafkas_murmur2(keys):
    col = columns(pa.array(keys, pa.binary()))
    got = murmur2_column(col, np.arange(len(keys)))
    assert got.tolist() == [murmur2(k) & 0xFFFFFFFF for k in keys]


def test_string_sliced_and_null_columns_read_as_their_values():
    arr = pa.array(["zero", None, "", "three", "fünf", None], pa.string()).slice(1, 4)
    col = columns(arr)
    start, length = col.lengths(np.arange(4))
    got = [None if n < 0 else col.data[s:s + n].tobytes() for s, n in zip(start, length)]
    assert got == [None, b"", b"three", "fünf".encode()]
    large = columns(pa.array([b"a", None, b"bc"], pa.large_binary()))
    assert large.lengths(np.arange(3))[1].tolist() == [1, -1, 2]


def test_idempotent_batches_carry_the_producer_and_consecutive_sequences():
    async def go():
        p = producer(**{"enable.idempotence": True, "batch.size": 200})
        p.txn.producer_id, p.txn.epoch = 1234, 3
        await p.send_columns(TOPIC, pa.array([b"x" * 50] * 10), partitions=pa.array([2] * 10))
        return [read_batch(p._blob(b), 0)[0] for b in p._ready]

    batches = asyncio.run(go())
    assert [(b.producer_id, b.producer_epoch) for b in batches] == [(1234, 3)] * 3
    assert [(b.base_sequence, len(b.records)) for b in batches] == [(0, 4), (4, 4), (8, 2)]


def test_records_sent_before_go_first_on_their_partition():
    async def go():
        p = producer()
        await p.send(TOPIC, b"first", partition=1)
        await p.send_columns(TOPIC, pa.array([b"second"]), partitions=pa.array([1]))
        return [b.tp for b in p._ready], queued(p)

    tps, out = asyncio.run(go())
    assert tps == [TopicPartition(TOPIC, 1)] * 2
    assert out[1] == [[(None, b"first", ())], [(None, b"second", ())]]


def test_a_batch_future_settles_with_its_batch_and_a_failure_reaches_it():
    async def go():
        p = producer(**{"batch.size": 100})
        futures = await p.send_columns(TOPIC, pa.array([b"y" * 60] * 3),
                                       pa.array([None] * 3, pa.binary()), partitions=pa.array([0, 0, 4]))
        assert p._pending == 3
        first, second = p._ready            # partition 0's two rows fill a batch; 4's
        assert (first.count, second.count) == (2, 1)
        p._fail(second, KafkaClientError("gone"))
        assert not futures[0].done() and p._pending == 2
        with pytest.raises(KafkaClientError, match="gone"):
            futures[1].result()
        p._complete(first, 40)
        assert futures[0].result() == BatchMetadata(TOPIC, 0, 40, 2, first.timestamp)
        assert p._pending == 0 and p._idle.is_set()

    asyncio.run(go())


def test_a_partition_out_of_range_is_refused_before_anything_is_queued():
    async def go():
        p = producer()
        with pytest.raises(KafkaClientError, match="has 5 partitions; there is no partition 5"):
            await p.send_columns(TOPIC, pa.array([b"a", b"b"]), partitions=pa.array([0, 5]))
        assert not p._ready and p._pending == 0

    asyncio.run(go())
