"""The broker's group event writer (broker/event_stream.py) over a real data dir: what it
appends, that it waits for the group change to be durable, and that a failure stays inside."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

from kgroup.broker.durability import Durability
from kgroup.broker.event_stream import GroupEventStream, ensure_topic
from kgroup.broker.internal_topics import GROUP_EVENTS_TOPIC
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinator
from kgroup.core.messages import JoinGroupRequest
from kgroup.storage import DataDir, FsyncPolicy
from kgroup.wire.record_batch import decode_records, split_batches


class GroupLog:
    """Stands in for a shard's group-metadata partition: fsync reaches the end when let."""

    def __init__(self) -> None:
        self.log_end_offset = 0
        self.durable_end = 0
        self.gate = threading.Event()

    def flush(self) -> None:
        pass

    def sync(self) -> int:
        assert self.gate.wait(10)
        self.durable_end = self.log_end_offset
        return self.durable_end


def join(coordinator: GroupCoordinator, group: str, now: int) -> tuple[JoinGroupRequest, tuple]:
    req = JoinGroupRequest(group_id=group, member_id="", protocol_type="consumer",
                           protocols=(("range", b""),), session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                           group_instance_id=None, client_id="c", client_host="/127.0.0.1", api_version=3)
    return req, coordinator.join_group(req, object(), now).records


def written(data: DataDir) -> list[tuple[bytes, dict, int]]:
    blob = data.partition_log(GROUP_EVENTS_TOPIC, 0).read(0, 1 << 20)
    return [(r.key, json.loads(r.value), r.timestamp) for b in split_batches(blob) for r in decode_records(b)]


def test_events_are_appended_as_keyed_json_records_to_the_internal_topic(tmp_path):
    data = DataDir(tmp_path / "d", metadata_partitions=1)
    ensure_topic(data)
    ensure_topic(data)                                   # idempotent
    stream = GroupEventStream(data, Durability(FsyncPolicy.parse("never")))
    coordinator = GroupCoordinator(GroupConfig())
    shard = SimpleNamespace(coordinator=coordinator, partition=GroupLog())
    req, records = join(coordinator, "g", 1_234)
    stream.after_call(shard, coordinator.join_group, req, records, 1_234)
    out = written(data)
    assert [(k, v["kind"], t) for k, v, t in out] == [(b"g", "member_joined", 1_234),
                                                      (b"g", "rebalance_started", 1_234)]
    assert stream.written == 2 and stream.failures == 0
    # A call that cannot change a group is not looked at.
    stream.after_call(shard, coordinator.fetch_offsets, req, (), 1_300)
    assert len(written(data)) == 2
    data.close()


def test_under_fsync_always_events_wait_for_the_group_change_to_be_durable(tmp_path):
    async def go():
        data = DataDir(tmp_path / "d", metadata_partitions=1)
        ensure_topic(data)
        durability = Durability(FsyncPolicy.parse("always"))
        durability.start()
        stream = GroupEventStream(data, durability)
        coordinator = GroupCoordinator(GroupConfig())
        group_log = GroupLog()
        shard = SimpleNamespace(coordinator=coordinator, partition=group_log)
        group_log.log_end_offset = 3                     # records of this change, not yet fsynced
        req, records = join(coordinator, "g", 10)
        stream.after_call(shard, coordinator.join_group, req, records, 10)
        req, records = join(coordinator, "g", 11)        # behind it, in order
        stream.after_call(shard, coordinator.join_group, req, records, 11)
        await asyncio.sleep(0.05)
        assert written(data) == []
        group_log.gate.set()
        for _ in range(200):
            if stream.written == 3:
                break
            await asyncio.sleep(0.01)
        kinds = [(v["kind"], t) for _, v, t in written(data)]
        assert kinds == [("member_joined", 10), ("rebalance_started", 10), ("member_joined", 11)]
        await durability.close()
        data.close()

    asyncio.run(go())


def test_a_failing_write_is_counted_and_never_raised(tmp_path):
    data = DataDir(tmp_path / "d", metadata_partitions=1)     # no events topic: appends fail
    stream = GroupEventStream(data, Durability(FsyncPolicy.parse("never")))
    coordinator = GroupCoordinator(GroupConfig())
    shard = SimpleNamespace(coordinator=coordinator, partition=GroupLog())
    req, records = join(coordinator, "g", 5)
    stream.after_call(shard, coordinator.join_group, req, records, 5)
    assert stream.failures == 1 and stream.written == 0
    assert "g" in coordinator.groups                          # the group change itself stands
    data.close()
