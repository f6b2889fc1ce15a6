"""OffsetForLeaderEpoch (KIP-320) and DescribeTopicPartitions (KIP-966) on a real data dir at
every version served, and where a leader epoch ends over a history of several epochs (as
Kafka's leader-epoch cache answers)."""

from __future__ import annotations

import pytest

from kgroup.broker.concerns import SERVED
from kgroup.broker.data.leader_epochs_api import end_offset_for, fencing_error
from kgroup.error_codes import ErrorCode
from kgroup.wire import request_class
from kgroup.wire.kio_build import build, item
from tests.unit.broker.datactx import DataCtx, batch, run
from tests.unit.broker.test_admin_apis import call, versions

E = ErrorCode
# Epochs 1 from offset 0, 3 from 10, 6 from 25; the log ends at 40.
HISTORY = ((1, 0), (3, 10), (6, 25))


@pytest.mark.parametrize(("requested", "answer"), [
    (6, (6, 40)),          # the latest epoch ends at the log end
    (3, (3, 25)),          # an older one where the next starts
    (1, (1, 10)),
    (2, (1, 10)),          # an epoch no leader had: the newest below it, up to the next one's start
    (5, (3, 25)),
    (0, (0, 0)),           # older than every entry: the first entry's start, the epoch echoed
    (-2, (-2, 0)),
    (7, (-1, -1)),         # newer than every entry
    (-1, (-1, -1)),        # no epoch
])
def test_where_an_epoch_ends(requested, answer):
    assert end_offset_for(HISTORY, requested, 40) == answer


def test_an_empty_history_answers_nothing():
    assert end_offset_for((), 0, 40) == (-1, -1)


def test_fencing_by_the_current_leader_epoch():
    assert fencing_error(-1, 0) is None and fencing_error(0, 0) is None and fencing_error(3, 3) is None
    assert fencing_error(-2, 0) == E.FENCED_LEADER_EPOCH and fencing_error(2, 3) == E.FENCED_LEADER_EPOCH
    assert fencing_error(1, 0) == E.UNKNOWN_LEADER_EPOCH and fencing_error(4, 3) == E.UNKNOWN_LEADER_EPOCH


@pytest.mark.parametrize("version", versions(23))
def test_offset_for_leader_epoch(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        await ctx.produce(9, {"t": {0: batch(5)}})
        fields = {"replica_id": -1} if version >= 3 else {}
        r = await call(ctx.dp.offset_for_leader_epoch, 23, version, **fields, topics=[
            {"topic": "t", "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0},
                {"partition": 1, "current_leader_epoch": 0, "leader_epoch": 0},
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 4},
                {"partition": 0, "current_leader_epoch": 2, "leader_epoch": 0},
                {"partition": 3, "current_leader_epoch": -1, "leader_epoch": 0}]},
            {"topic": "nope", "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}])
        got = [(t.topic, int(p.partition), int(p.error_code), int(p.leader_epoch), int(p.end_offset))
               for t in r.topics for p in t.partitions]
        assert got == [("t", 0, 0, 0, 5), ("t", 1, 0, 0, 0), ("t", 0, 0, -1, -1),
                       ("t", 0, E.UNKNOWN_LEADER_EPOCH, -1, -1), ("t", 3, E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
                       ("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]

    run(tmp_path, scenario)


def _cursor(version: int, topic: str, partition: int):
    return build(item(request_class(75, version), "cursor"), topic_name=topic, partition_index=partition)


def _pages(r) -> tuple[list, tuple | None]:
    cursor = None if r.next_cursor is None else (r.next_cursor.topic_name, int(r.next_cursor.partition_index))
    return [(t.name, int(t.error_code), [int(p.partition_index) for p in t.partitions]) for t in r.topics], cursor


@pytest.mark.parametrize("version", versions(75))
def test_describe_topic_partitions_pages_by_limit_and_cursor(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("a", 3)
        ctx.data.create_topic("b", 2)
        describe = ctx.dp.describe_topic_partitions
        r = await call(describe, 75, version, topics=[{"name": "b"}, {"name": "a"}, {"name": "zz"}],
                       response_partition_limit=2000, cursor=None)
        assert _pages(r) == ([("a", 0, [0, 1, 2]), ("b", 0, [0, 1]), ("zz", E.UNKNOWN_TOPIC_OR_PARTITION, [])], None)
        partition = r.topics[0].partitions[0]
        assert (partition.leader_id, partition.leader_epoch, partition.replica_nodes, partition.isr_nodes,
                partition.eligible_leader_replicas, partition.last_known_elr) == (1, 0, (1,), (1,), (), ())   # node 1 by default
        r = await call(describe, 75, version, topics=[{"name": "a"}, {"name": "b"}], response_partition_limit=2,
                       cursor=None)
        assert _pages(r) == ([("a", 0, [0, 1])], ("a", 2))
        r = await call(describe, 75, version, topics=[{"name": "a"}, {"name": "b"}], response_partition_limit=2,
                       cursor=_cursor(version, "a", 2))
        assert _pages(r) == ([("a", 0, [2]), ("b", 0, [0])], ("b", 1))
        r = await call(describe, 75, version, topics=[{"name": "a"}, {"name": "b"}], response_partition_limit=3,
                       cursor=None)
        assert _pages(r) == ([("a", 0, [0, 1, 2])], ("b", 0))
        r = await call(describe, 75, version, topics=[{"name": "a"}], response_partition_limit=3,
                       cursor=_cursor(version, "b", 0))
        assert _pages(r) == ([("a", E.INVALID_REQUEST, [])], None)
        r = await call(describe, 75, version, topics=[], response_partition_limit=0, cursor=None)
        assert _pages(r)[1] is not None     # every topic, one partition a page

    run(tmp_path, scenario)


def test_both_apis_are_served_at_kafka_4_4s_versions():
    assert (SERVED[23].min_version, SERVED[23].max_version) == (2, 4)
    assert (SERVED[75].min_version, SERVED[75].max_version) == (0, 0)
    assert SERVED[35].max_version == 5


def test_fetch_and_list_offsets_fence_a_current_leader_epoch_that_is_not_the_partitions(tmp_path):
    """KIP-320: a single broker leads at epoch 0; a consumer naming epoch 1 (from the future)
    is UNKNOWN_LEADER_EPOCH, one naming -1 or 0 is answered."""
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        await ctx.produce(9, {"t": {0: batch(3)}})
        got = {}
        for epoch in (-1, 0, 1):
            r = await call(ctx.dp.list_offsets, 2, 9, replica_id=-1, isolation_level=0, topics=[
                {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": epoch, "timestamp": -1}]}])
            p = r.topics[0].partitions[0]
            got[("list", epoch)] = (int(p.error_code), int(p.offset), int(p.leader_epoch))
            r = await call(ctx.dp.fetch, 1, 12, replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20,
                           isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[],
                           rack_id="", topics=[{"topic": "t", "partitions": [
                               {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": 0,
                                "last_fetched_epoch": -1, "log_start_offset": -1,
                                "partition_max_bytes": 1 << 20}]}])
            p = r.responses[0].partitions[0]
            got[("fetch", epoch)] = (int(p.error_code), int(p.high_watermark))
        assert got == {("list", -1): (0, 3, 0), ("list", 0): (0, 3, 0),
                       ("list", 1): (E.UNKNOWN_LEADER_EPOCH, -1, -1),
                       ("fetch", -1): (0, 3), ("fetch", 0): (0, 3), ("fetch", 1): (E.UNKNOWN_LEADER_EPOCH, -1)}

    run(tmp_path, scenario)
