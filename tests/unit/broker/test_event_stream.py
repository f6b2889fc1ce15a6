"""The broker's group event writer (broker/observe/event_stream.py) behind a real shard over a real
data dir: what it appends, what it does not look at, that it waits for the group change to
be durable, and that a failure stays inside."""

from __future__ import annotations

import asyncio
import json
import threading

from kgroup.broker.durability import Durability
from kgroup.broker.observe.event_stream import GroupEventStream, ensure_topic
from kgroup.broker.internal_topics import GROUP_EVENTS_TOPIC
from kgroup.broker.groups.shard import Shard
from kgroup.core.config import GroupConfig
from kgroup.core.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeavingMember,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from kgroup.core.state import counter_member_ids
from kgroup.storage import DataDir, FsyncPolicy
from kgroup.wire.record_batch import decode_records, split_batches


def join_request(group: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, member_id=member_id, protocol_type="consumer",
                            protocols=(("range", b""),), session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                            group_instance_id=None, client_id="c", client_host="/127.0.0.1", api_version=3)


def written(data: DataDir) -> list[tuple[bytes, dict]]:
    blob = data.partition_log(GROUP_EVENTS_TOPIC, 0).read(0, 1 << 20)
    return [(r.key, json.loads(r.value)) for b in split_batches(blob) for r in decode_records(b)]


async def shard_with_events(data: DataDir, durability: Durability, partition=None) -> tuple[Shard, GroupEventStream]:
    shard = Shard(0, data.metadata_log.partition(0), GroupConfig(initial_rebalance_delay_ms=0), durability,
                  counter_member_ids())
    if partition is not None:
        shard.partition = partition
    stream = GroupEventStream(data, durability)
    shard.events = stream
    shard.load()
    return shard, stream


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_group_change_is_appended_as_keyed_json_records_and_quiet_calls_are_not_looked_at(tmp_path):
    async def go():
        data = DataDir(tmp_path / "d", metadata_partitions=1)
        ensure_topic(data)
        ensure_topic(data)                                # idempotent
        durability = Durability(FsyncPolicy.parse("never"))
        durability.start()
        shard, stream = await shard_with_events(data, durability)
        parked = asyncio.ensure_future(shard.call(shard.coordinator.join_group, join_request("g")))
        await asyncio.sleep(0.05)                         # the initial delay (0) ends on a timer
        joined = await parked
        await settle()
        out = written(data)
        assert [k for k, _ in out] == [b"g"] * len(out)
        assert [v["kind"] for _, v in out] == ["member_joined", "rebalance_started", "group_state"]
        assert out[0][1]["member"] == joined.member_id and out[2][1]["generation"] == 1
        await shard.call(shard.coordinator.sync_group, SyncGroupRequest(
            "g", 1, joined.member_id, assignments=((joined.member_id, b""),)))
        await settle()
        assert written(data)[-1][1]["kind"] == "rebalance_completed"
        # A heartbeat and a commit change no group: nothing more, and not even looked at.
        looked = []
        stream._observe = lambda *a: looked.append(a)     # type: ignore[method-assign]
        await shard.call(shard.coordinator.heartbeat, HeartbeatRequest("g", 1, joined.member_id))
        await shard.call(shard.coordinator.commit_offsets, OffsetCommitRequest(
            "g", 1, joined.member_id, (OffsetCommitPartition("t", 0, 5),)))
        assert looked == [] and len(written(data)) == 4
        shard.close()
        await durability.close()
        data.close()

    asyncio.run(go())


class SlowGroupLog:
    """A shard's group-metadata partition whose fsync waits until the test lets it."""

    def __init__(self, real) -> None:
        self.real = real
        self.gate = threading.Event()
        self.durable = 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    @property
    def durable_end(self) -> int:
        return self.durable

    def sync(self) -> int:
        assert self.gate.wait(10)
        self.durable = self.real.sync()
        return self.durable


def test_under_fsync_always_events_wait_for_the_group_change_to_be_durable(tmp_path):
    async def go():
        data = DataDir(tmp_path / "d", metadata_partitions=1)
        ensure_topic(data)
        durability = Durability(FsyncPolicy.parse("always"))
        durability.start()
        slow = SlowGroupLog(data.metadata_log.partition(0))
        shard, stream = await shard_with_events(data, durability, slow)
        parked = asyncio.ensure_future(shard.call(shard.coordinator.join_group, join_request("g")))
        await asyncio.sleep(0.05)
        joined = await parked                             # a join writes no record: no wait
        await settle()
        assert len(written(data)) == 3
        # Leaving empties the group: a record, so its events wait for the fsync.
        leave = asyncio.ensure_future(shard.call(shard.coordinator.leave_group,
                                                 LeaveGroupRequest("g", (LeavingMember(joined.member_id),))))
        await asyncio.sleep(0.05)
        assert not leave.done() and len(written(data)) == 3
        slow.gate.set()
        await leave
        for _ in range(200):
            if stream.written == 6:
                break
            await asyncio.sleep(0.01)
        assert [v["kind"] for _, v in written(data)][3:] == ["member_left", "rebalance_started", "group_state"]
        shard.close()
        await durability.close()
        data.close()

    asyncio.run(go())


def test_a_failing_write_is_counted_and_never_reaches_the_request(tmp_path):
    async def go():
        data = DataDir(tmp_path / "d", metadata_partitions=1)     # no events topic: writes fail
        durability = Durability(FsyncPolicy.parse("never"))
        durability.start()
        shard, stream = await shard_with_events(data, durability)
        parked = asyncio.ensure_future(shard.call(shard.coordinator.join_group, join_request("g")))
        await asyncio.sleep(0.05)
        joined = await parked
        await settle()
        assert joined.error.name == "NONE" and joined.generation_id == 1
        assert stream.failures >= 1 and stream.written == 0
        shard.close()
        await durability.close()
        data.close()

    asyncio.run(go())
