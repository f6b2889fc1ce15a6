"""DataPath scenarios: metadata, produce → fetch, long poll, list offsets, topic admin."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kgroup.wire.codec import request_class
from kgroup.wire.kio_build import build, item
from kgroup.wire.record_batch import decode_records, split_batches

from .datactx import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    DataCtx,
    batch,
    codes,
    run,
)

NONE, OUT_OF_RANGE, CORRUPT, UNKNOWN = 0, 1, 2, 3
INVALID_REQUEST = 42


def values(records: bytes) -> list[bytes]:
    return [r.value for b in split_batches(records) for r in decode_records(b)]


# -- metadata ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 4, 9, 12, 13])
def test_metadata_lists_all_listed_and_none(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("a", 2)
        ctx.data.create_topic("b", 1)
        every = await ctx.metadata(version, None)
        assert [t.name for t in every.topics] == ["a", "b"]
        assert [(b.node_id, b.host, b.port) for b in every.brokers] == [(1, "127.0.0.1", 9092)]
        assert every.controller_id == 1
        a = every.topics[0]
        assert [(p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
                for p in a.partitions] == [(0, 1, [1], [1]), (1, 1, [1], [1])]
        if version >= 2:
            assert every.cluster_id == "kgroup"
        if version >= 10:
            assert a.topic_id == ctx.data.topic("a").topic_id
        listed = await ctx.metadata(version, ["b"])
        assert [t.name for t in listed.topics] == ["b"]
        assert (await ctx.metadata(version, [])).topics == ()
        if version >= 13:
            assert int(every.error_code) == 0

    run(tmp_path, scenario)


def test_metadata_advertises_the_advertised_address(tmp_path):
    async def scenario(ctx: DataCtx):
        r = await ctx.metadata(12, [])
        assert [(b.node_id, b.host, b.port) for b in r.brokers] == [(7, "broker.test", 19092)]
        assert r.controller_id == 7

    run(tmp_path, scenario, node_id=7, advertised_host="broker.test", advertised_port=19092)


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_auto_creates_unknown_topic_and_answers_it_unknown_as_kafka_does(tmp_path, version):
    async def scenario(ctx: DataCtx):
        r = await ctx.metadata(version, ["fresh"])
        # Kafka 4.4 answers the request that creates the topic UNKNOWN_TOPIC_OR_PARTITION.
        assert codes(r, METADATA) == [UNKNOWN] and r.topics[0].partitions == ()
        assert "fresh" in ctx.data.topics()
        assert ctx.changes == 1
        again = await ctx.metadata(version, ["fresh"])
        assert codes(again, METADATA) == [NONE] and ctx.changes == 1
        assert len(again.topics[0].partitions) == 3

    run(tmp_path, scenario, default_partitions=3)


@pytest.mark.parametrize("version", [4, 9, 12])
def test_metadata_unknown_topic_without_auto_create(tmp_path, version):
    async def scenario(ctx: DataCtx):
        r = await ctx.metadata(version, ["nope"], auto=False)
        assert codes(r, METADATA) == [UNKNOWN]
        assert r.topics[0].partitions == ()
        assert "nope" not in ctx.data.topics()

    run(tmp_path, scenario)


def test_metadata_unknown_when_broker_disables_auto_create(tmp_path):
    async def scenario(ctx: DataCtx):
        assert codes(await ctx.metadata(1, ["nope"]), METADATA) == [UNKNOWN]
        assert codes(await ctx.metadata(9, ["nope"], auto=True), METADATA) == [UNKNOWN]

    run(tmp_path, scenario, auto_create_topics=False)


@pytest.mark.parametrize("version", [1, 9, 12])
def test_metadata_invalid_topic_name(tmp_path, version):
    async def scenario(ctx: DataCtx):
        r = await ctx.metadata(version, ["bad name!", ".."])
        assert codes(r, METADATA) == [17, 17]
        assert ctx.data.topics() == {}

    run(tmp_path, scenario)


def test_metadata_by_topic_id(tmp_path):
    async def scenario(ctx: DataCtx):
        meta = ctx.data.create_topic("a", 1)
        r = await ctx.metadata(12, [], ids=[meta.topic_id, uuid.uuid4()])
        assert codes(r, METADATA) == [NONE, 100]
        assert r.topics[0].name == "a"
        # v10 and v11 take no ids: Kafka refuses the whole request, every topic
        # INVALID_REQUEST, no brokers (tests/reference/test_wire_forward_compat.py).
        for version in (10, 11):
            r = await ctx.metadata(version, ["a"], ids=[meta.topic_id])
            assert codes(r, METADATA) == [42, 42] and [t.name for t in r.topics] == ["a", ""]
            assert r.brokers == () and r.controller_id == -1

    run(tmp_path, scenario)


# -- produce and fetch -------------------------------------------------------------------


@pytest.mark.parametrize("produce_v,fetch_v", [(3, 4), (7, 11), (9, 12), (12, 13), (12, 18)])
def test_produce_fetch_round_trip(tmp_path, produce_v, fetch_v):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        bases = []
        for i in range(3):
            r = await ctx.produce(produce_v, {"t": {0: batch(4, tag=b"r%d-" % i)}})
            assert codes(r, PRODUCE) == [NONE]
            bases.append(r.responses[0].partition_responses[0].base_offset)
        assert bases == [0, 4, 8]
        if produce_v >= 5:
            assert r.responses[0].partition_responses[0].log_start_offset == 0
        f = await ctx.fetch(fetch_v, {"t": [(0, 0), (1, 0)]})
        assert codes(f, FETCH) == [NONE, NONE]
        p0, p1 = f.responses[0].partitions
        assert p0.high_watermark == 12 and p0.last_stable_offset == 12
        assert values(p0.records) == [b"r%d-%d" % (i, j) for i in range(3) for j in range(4)]
        assert [b.header.base_offset for b in split_batches(p0.records)] == [0, 4, 8]
        assert p1.high_watermark == 0 and not p1.records
        if fetch_v >= 13:
            assert f.responses[0].topic_id == ctx.data.topic("t").topic_id
        else:
            assert f.responses[0].topic == "t"
        if fetch_v >= 7:
            assert f.session_id == 0
        # From the middle: the batch holding offset 5 comes first.
        mid = await ctx.fetch(fetch_v, {"t": [(0, 5)]})
        assert split_batches(mid.responses[0].partitions[0].records)[0].header.base_offset == 4

    run(tmp_path, scenario)


def test_produce_several_batches_in_one_partition(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        await ctx.produce(9, {"t": {0: batch(1)}})
        r = await ctx.produce(9, {"t": {0: batch(2) + batch(3)}})
        assert r.responses[0].partition_responses[0].base_offset == 1
        assert ctx.data.partition_log("t", 0).log_end_offset == 6

    run(tmp_path, scenario)


def test_corrupt_batch_fails_only_its_partition(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        bad = bytearray(batch(3))
        bad[-1] ^= 0xFF
        r = await ctx.produce(9, {"t": {0: bytes(bad), 1: batch(3)}, "missing": {0: batch(1)}})
        assert codes(r, PRODUCE) == [CORRUPT, NONE, UNKNOWN]
        assert r.responses[0].partition_responses[0].error_message
        assert ctx.data.partition_log("t", 0).log_end_offset == 0
        assert ctx.data.partition_log("t", 1).log_end_offset == 3
        # A good batch followed by a bad one: nothing of the partition is appended.
        r = await ctx.produce(9, {"t": {0: batch(2) + bytes(bad)}})
        assert codes(r, PRODUCE) == [CORRUPT]
        assert ctx.data.partition_log("t", 0).log_end_offset == 0

    run(tmp_path, scenario)


def test_produce_record_errors(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 4)
        old_magic = bytearray(batch(1))
        old_magic[16] = 1
        big = batch(1, tag=b"x" * 2000)
        r = await ctx.produce(8, {"t": {0: bytes(old_magic), 1: big, 2: None, 3: b"\x00" * 10}})
        assert codes(r, PRODUCE) == [43, 10, 87, CORRUPT]
        assert ctx.data.partition_log("t", 1).log_end_offset == 0
        # A topic's max.message.bytes wins over the broker's.
        ctx.data.create_topic("roomy", 1, {"max.message.bytes": "100000"})
        assert codes(await ctx.produce(8, {"roomy": {0: big}}), PRODUCE) == [NONE]

    run(tmp_path, scenario, max_message_bytes=1000)


def test_produce_partition_out_of_range_and_bad_acks(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        assert codes(await ctx.produce(9, {"t": {5: batch(1)}}), PRODUCE) == [UNKNOWN]
        r = await ctx.produce(9, {"t": {0: batch(1)}}, acks=2)
        assert codes(r, PRODUCE) == [21]
        assert ctx.data.partition_log("t", 0).log_end_offset == 0
        # A partition that does not exist is answered so before acks is looked at, as Kafka does.
        r = await ctx.produce(9, {"t": {0: batch(1), 5: batch(1)}, "ghost": {0: batch(1)}}, acks=2)
        assert codes(r, PRODUCE) == [21, UNKNOWN, UNKNOWN]
        assert ctx.data.partition_log("t", 0).log_end_offset == 0

    run(tmp_path, scenario)


@pytest.mark.parametrize("fsync", ["always", "never", "interval:50"])
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks(tmp_path, fsync, acks):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        r = await ctx.produce(9, {"t": {0: batch(2)}}, acks=acks)
        plog = ctx.data.partition_log("t", 0)
        assert plog.log_end_offset == 2
        if acks == 0:
            assert r is None
        else:
            assert codes(r, PRODUCE) == [NONE]
        if acks == -1 and fsync == "always":
            assert plog.durable_end >= 2

    run(tmp_path, scenario, fsync=fsync)


@pytest.mark.parametrize("version", [4, 12, 13])
def test_fetch_out_of_range_and_unknown(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        await ctx.produce(9, {"t": {0: batch(3)}})
        f = await ctx.fetch(version, {"t": [(0, 4), (7, 0)]})
        assert codes(f, FETCH) == [OUT_OF_RANGE, UNKNOWN]
        assert codes(await ctx.fetch(version, {"t": [(0, -1)]}), FETCH) == [OUT_OF_RANGE]
        f = await ctx.fetch(version, {"t": [(0, 3)]})
        assert codes(f, FETCH) == [NONE] and f.responses[0].partitions[0].records in (b"", None)
        if version >= 13:
            f = await ctx.fetch(version, {"ghost": [(0, 0)]}, by_id={"ghost": uuid.uuid4()})
            assert codes(f, FETCH) == [100]
        else:
            assert codes(await ctx.fetch(version, {"ghost": [(0, 0)]}), FETCH) == [UNKNOWN]

    run(tmp_path, scenario)


def test_fetch_answers_a_partition_asked_twice_once_and_a_topic_naming_none_not_at_all(tmp_path):
    """Kafka keys a fetch by partition (a map): duplicates answered once where first asked."""
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        f = await ctx.fetch(12, {"t": [(1, 0), (0, 0), (1, 0)], "empty": []})
        assert [t.topic for t in f.responses] == ["t"]
        assert [p.partition_index for p in f.responses[0].partitions] == [1, 0]
        # An error partition lists no aborted transactions (empty, not null).
        f = await ctx.fetch(12, {"ghost": [(0, 0)]})
        assert f.responses[0].partitions[0].aborted_transactions == ()

    run(tmp_path, scenario)


def test_fetch_sizes_follow_kip74(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        one = batch(1, tag=b"x" * 500)
        for _ in range(3):
            await ctx.produce(9, {"t": {0: one, 1: one}})
        size = len(one)
        # A limit below one batch still returns the first partition's first batch, only.
        f = await ctx.fetch(12, {"t": [(0, 0), (1, 0)]}, max_bytes=10)
        p0, p1 = f.responses[0].partitions
        assert len(p0.records) == size and not p1.records
        # partition_max_bytes bounds each partition; whole batches only.
        f = await ctx.fetch(12, {"t": [(0, 0), (1, 0)]}, partition_max_bytes=2 * size + 10)
        assert [len(p.records) for p in f.responses[0].partitions] == [2 * size, 2 * size]
        # The request limit is shared.
        f = await ctx.fetch(12, {"t": [(0, 0), (1, 0)]}, max_bytes=4 * size)
        assert [len(p.records) for p in f.responses[0].partitions] == [3 * size, size]

    run(tmp_path, scenario)


def test_long_poll_returns_when_data_arrives(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        loop = asyncio.get_running_loop()
        start = loop.time()
        waiting = asyncio.create_task(ctx.fetch(12, {"t": [(0, 0), (1, 0)]}, max_wait=10_000))
        for _ in range(100):
            await asyncio.sleep(0)
            if ctx.dp.watch.waiting:
                break
        assert ctx.dp.watch.waiting == 1 and not waiting.done()
        await ctx.produce(9, {"t": {1: batch(2)}})
        f = await asyncio.wait_for(waiting, 5)
        assert loop.time() - start < 5
        assert values(f.responses[0].partitions[1].records) == [b"v0", b"v1"]
        assert ctx.dp.watch.waiting == 0

    run(tmp_path, scenario)


def test_long_poll_waits_for_min_bytes_then_times_out(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        loop = asyncio.get_running_loop()
        start = loop.time()
        f = await ctx.fetch(12, {"t": [(0, 0)]}, max_wait=60)
        assert loop.time() - start >= 0.05
        assert not f.responses[0].partitions[0].records
        # Data below min_bytes: keeps waiting, answers with it at the deadline.
        await ctx.produce(9, {"t": {0: batch(1)}})
        start = loop.time()
        f = await ctx.fetch(12, {"t": [(0, 0)]}, max_wait=60, min_bytes=1 << 20)
        assert loop.time() - start >= 0.05
        assert values(f.responses[0].partitions[0].records) == [b"v0"]
        # Enough data: answers at once.
        start = loop.time()
        await ctx.fetch(12, {"t": [(0, 0)]}, max_wait=10_000)
        assert loop.time() - start < 5

    run(tmp_path, scenario)


def test_close_and_delete_wake_long_polls(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        ctx.data.create_topic("u", 1)
        on_t = asyncio.create_task(ctx.fetch(12, {"t": [(0, 0)]}, max_wait=10_000))
        on_u = asyncio.create_task(ctx.fetch(12, {"u": [(0, 0)]}, max_wait=10_000))
        for _ in range(100):
            await asyncio.sleep(0)
        assert ctx.dp.watch.waiting == 2
        await ctx.delete_topics(5, ["t"])
        f = await asyncio.wait_for(on_t, 5)
        assert codes(f, FETCH) == [UNKNOWN]
        assert not on_u.done()
        ctx.dp.close()
        f = await asyncio.wait_for(on_u, 5)
        assert codes(f, FETCH) == [NONE]

    run(tmp_path, scenario)


# -- list offsets ------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 4, 7, 8])
def test_list_offsets(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        await ctx.produce(9, {"t": {0: batch(3, ts=1000)}})  # offsets 0-2, ts 1000-1002
        await ctx.produce(9, {"t": {0: batch(3, ts=5000)}})  # offsets 3-5, ts 5000-5002
        await ctx.produce(9, {"t": {0: batch(2, ts=2000)}})  # offsets 6-7, ts 2000-2001
        asks = [(0, -2), (0, -1), (0, 1001), (0, 3000), (0, 9000), (1, -1), (1, 100), (9, -1)]
        if version >= 7:
            asks.append((0, -3))
        got = []
        for ask in asks:    # one partition per request: Kafka refuses a partition named twice
            r = await ctx.list_offsets(version, "t", [ask])
            got += [(int(p.error_code), p.offset, p.timestamp) for p in r.topics[0].partitions]
        # By timestamp: the first record at or after it, with its own timestamp, as Kafka.
        expected = [(0, 0, -1), (0, 8, -1), (0, 1, 1001), (0, 3, 5000), (0, -1, -1),
                    (0, 0, -1), (0, -1, -1), (UNKNOWN, -1, -1)]
        if version >= 7:
            expected.append((0, 5, 5002))
        assert got == expected
        unknown = await ctx.list_offsets(version, "ghost", [(0, -1)])
        assert codes(unknown, LIST_OFFSETS) == [UNKNOWN]
        # A partition named twice is answered once, INVALID_REQUEST, as Kafka answers it.
        twice = await ctx.list_offsets(version, "t", [(0, -1), (1, -1), (0, -2)])
        assert [(p.partition_index, int(p.error_code), p.offset) for p in twice.topics[0].partitions] == [
            (0, INVALID_REQUEST, -1), (1, 0, 0)]

    run(tmp_path, scenario)


# -- topic admin -------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 4, 5, 7])
def test_create_topics(tmp_path, version):
    async def scenario(ctx: DataCtx):
        r = await ctx.create_topics(version, [
            {"name": "a", "partitions": 3, "replication": 1,
             "configs": {"retention.ms": "1000", "min.insync.replicas": "1"}},
            {"name": "b"},
            {"name": "c", "replication": 3},
            {"name": "bad/name"},
            {"name": "d", "partitions": 0},
            {"name": "e", "configs": {"segment.bytes": "lots"}},
            {"name": "f", "assignments": [[1], [1]]},
            {"name": "g", "assignments": [[2]]},
            {"name": "h"}, {"name": "h"},
            {"name": "i", "configs": {"retention.mss": "1000"}},
            {"name": "j", "configs": {"cleanup.policy": "delete,shred"}},
            {"name": "__consumer_offsets"},
        ])
        # "h", named twice, is refused once, last (as Kafka's controller answers duplicates).
        assert codes(r, CREATE_TOPICS) == [0, 0, 38, 17, 37, 40, 0, 39, 40, 40, 42, 42]
        assert r.topics[-1].name == "h" and r.topics[-1].error_message == "Duplicate topic name."
        typo = r.topics[8].error_message
        assert "did you mean retention.ms?" in typo and "segment.bytes" in typo
        assert [r.topics[i].error_message is None for i in range(3)] == [True, True, False]
        assert ctx.data.topic("a").partitions == 3
        assert ctx.data.topic("a").configs == {"retention.ms": "1000", "min.insync.replicas": "1"}
        assert ctx.data.partition_log("a", 0).config.retention_ms == 1000
        assert ctx.data.topic("b").partitions == 2
        assert ctx.data.topic("f").partitions == 2
        assert sorted(ctx.data.topics()) == ["a", "b", "f"]
        assert ctx.changes == 1
        if version >= 5:
            a = r.topics[0]
            assert (a.num_partitions, a.replication_factor) == (3, 1)
            shown = {c.name: c.value for c in a.configs}
            assert shown["retention.ms"] == "1000" and shown["min.insync.replicas"] == "1"
            assert shown["segment.bytes"] == str(1 << 30) and "cleanup.policy" in shown
        if version >= 7:
            assert r.topics[0].topic_id == ctx.data.topic("a").topic_id
        again = await ctx.create_topics(version, [{"name": "a"}])
        assert codes(again, CREATE_TOPICS) == [36]
        dry = await ctx.create_topics(version, [{"name": "z", "partitions": 4}], validate_only=True)
        assert codes(dry, CREATE_TOPICS) == [0] and "z" not in ctx.data.topics()
        assert ctx.changes == 1

    run(tmp_path, scenario, default_partitions=2)


@pytest.mark.parametrize("version", [1, 5, 6])
def test_delete_topics(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("a", 1)
        b = ctx.data.create_topic("b", 1)
        r = await ctx.delete_topics(version, ["a", "ghost"])
        assert codes(r, DELETE_TOPICS) == [0, UNKNOWN]
        assert "a" not in ctx.data.topics() and ctx.changes == 1
        if version >= 6:
            r = await ctx.delete_topics(version, ids=[b.topic_id, uuid.uuid4()])
            assert codes(r, DELETE_TOPICS) == [0, 100]
            assert r.responses[0].name == "b"
            assert ctx.data.topics() == {}

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", [0, 1, 3])
def test_create_partitions(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        ctx.data.create_topic("u", 2)
        r = await ctx.create_partitions(version, {"t": 4, "u": 2, "ghost": 3})
        assert codes(r, CREATE_PARTITIONS) == [0, 37, UNKNOWN]
        assert r.results[1].error_message
        assert ctx.data.topic("t").partitions == 4 and ctx.changes == 1
        r = await ctx.create_partitions(version, {"u": 1})
        assert codes(r, CREATE_PARTITIONS) == [37]
        r = await ctx.create_partitions(version, {"u": 4}, assignments={"u": [[1]]})
        assert codes(r, CREATE_PARTITIONS) == [39]
        r = await ctx.create_partitions(version, {"u": 3}, assignments={"u": [[1]]}, validate_only=True)
        assert codes(r, CREATE_PARTITIONS) == [0] and ctx.data.topic("u").partitions == 2
        r = await ctx.create_partitions(version, {"u": 3}, assignments={"u": [[1]]})
        assert codes(r, CREATE_PARTITIONS) == [0] and ctx.data.topic("u").partitions == 3
        assert ctx.changes == 2
        # The new partition takes produce and fetch.
        assert codes(await ctx.produce(9, {"u": {2: batch(1)}}), PRODUCE) == [NONE]

    run(tmp_path, scenario)


def test_topic_ids_and_retention(tmp_path):
    async def scenario(ctx: DataCtx):
        meta = ctx.data.create_topic("t", 1, {"retention.ms": "1000", "segment.bytes": "200"})
        assert ctx.dp.topic_ids() == {"t": meta.topic_id}
        for i in range(4):
            await ctx.produce(9, {"t": {0: batch(2, ts=10_000 + i)}})
        ctx.dp.apply_retention(now_ms=100_000)
        plog = ctx.data.partition_log("t", 0)
        assert plog.log_start_offset == plog.log_end_offset == 8
        f = await ctx.fetch(12, {"t": [(0, 0)]})
        assert codes(f, FETCH) == [OUT_OF_RANGE]
        got = []
        for ask in ((0, -2), (0, -3)):
            r = await ctx.list_offsets(7, "t", [ask])
            got += [(p.offset, p.timestamp) for p in r.topics[0].partitions]
        assert got == [(8, -1), (-1, -1)]

    run(tmp_path, scenario)


# -- init producer id ----------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id(tmp_path, version):
    from kgroup.wire.kio_build import build
    from kgroup.wire import RequestHeader, encode_response, is_flexible, request_class

    async def scenario(ctx: DataCtx):
        header = RequestHeader(22, version, 1, "t", is_flexible(22, version))
        cls = request_class(22, version)

        async def ask(**fields):
            r = await ctx.dp.init_producer_id(header, build(cls, transaction_timeout=60_000, **fields))
            encode_response(header, r)
            return int(r.error_code), r.producer_id, r.producer_epoch

        first = await ask(transactional_id=None, producer_id=-1, producer_epoch=-1)
        second = await ask(transactional_id=None, producer_id=-1, producer_epoch=-1)
        assert first[0] == second[0] == 0 and first[2] == 0 and second[1] == first[1] + 1
        if version >= 3:
            # Kafka's rule: the id and epoch a request names never make it a bump.
            assert await ask(transactional_id=None, producer_id=first[1], producer_epoch=4) == (0, first[1] + 2, 0)
            assert await ask(transactional_id=None, producer_id=0, producer_epoch=0) == (0, first[1] + 3, 0)
            assert (await ask(transactional_id=None, producer_id=0, producer_epoch=-1))[0] == 42
            assert (await ask(transactional_id=None, producer_id=-1, producer_epoch=0))[0] == 42
        assert (await ask(transactional_id="tx", producer_id=-1, producer_epoch=-1))[0] == 53

    run(tmp_path, scenario)


def test_topic_changes_whose_deadline_has_passed_time_out_as_kafka_does(tmp_path):
    """Kafka's controller runs CreateTopics, DeleteTopics and CreatePartitions by now +
    timeout: a timeout of 0 or less has passed, every topic is REQUEST_TIMED_OUT, nothing done."""
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        for timeout in (0, -1):
            cls = request_class(CREATE_TOPICS, 7)
            r = await ctx.call(CREATE_TOPICS, 7, build(cls, timeout=timeout, validate_only=False, topics=(
                build(item(cls, "topics"), name="new", num_partitions=1, replication_factor=1, assignments=(),
                      configs=()),)))
            assert codes(r, CREATE_TOPICS) == [7] and r.topics[0].error_message is None
            cls = request_class(DELETE_TOPICS, 6)
            r = await ctx.call(DELETE_TOPICS, 6, build(cls, timeout=timeout, topics=(
                build(item(cls, "topics"), name="t", topic_id=None),)))
            assert codes(r, DELETE_TOPICS) == [7]
            cls = request_class(CREATE_PARTITIONS, 3)
            r = await ctx.call(CREATE_PARTITIONS, 3, build(cls, timeout=timeout, validate_only=False, topics=(
                build(item(cls, "topics"), name="t", count=2, assignments=None),)))
            assert codes(r, CREATE_PARTITIONS) == [7]
        assert sorted(ctx.data.topics()) == ["t"] and ctx.data.topic("t").partitions == 1

    run(tmp_path, scenario)
