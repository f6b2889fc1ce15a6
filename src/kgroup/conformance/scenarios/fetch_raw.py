"""Fetch sessions (KIP-227), asked with exact request sequences: a session opened by a full
fetch, incremental fetches that list only what changed, forgotten partitions, session
errors, closing, and the order a session reads its partitions in."""

from __future__ import annotations

from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.target import Target


def _partition(index: int, offset: int, current_leader_epoch: int = -1) -> dict[str, Any]:
    return {"partition": index, "current_leader_epoch": current_leader_epoch, "fetch_offset": offset,
            "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}


def _fetch(topic: Any, partitions: list[tuple[int, int]], session_id: int, epoch: int, *, version: int = 12,
           forgotten: list[int] = (), max_bytes: int = 1 << 20, isolation_level: int = 0,
           current_leader_epoch: int = -1) -> Any:
    """A Fetch of `topic` (a name, or a topic id from v13) for [(partition, offset)]."""
    key = "topic_id" if version >= 13 else "topic"
    return request("Fetch", version, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
                   isolation_level=isolation_level, session_id=session_id, session_epoch=epoch,
                   topics=[{key: topic, "partitions": [_partition(p, o, current_leader_epoch) for p, o in partitions]}]
                   if partitions else [],
                   forgotten_topics_data=[{key: topic, "partitions": list(forgotten)}] if forgotten else [],
                   rack_id="")


class Session:
    """One client's fetches: each answer goes in the transcript as its error, its session id
    and its partitions in order (records decoded)."""

    def __init__(self, t: Target, raw: Any) -> None:
        self.t, self.raw = t, raw

    async def fetch(self, label: str, req: Any) -> int:
        r = await self.raw.call(req)
        self.t.add(f"{label} (Fetch v{int(req.__version__)})", {
            "error_code": r.error_code, "session_id": int(r.session_id),
            "partitions": [{"partition": int(p.partition_index), "error_code": p.error_code,
                            "high_watermark": int(p.high_watermark), "log_start_offset": int(p.log_start_offset),
                            "records": observe.records_of(p.records)}
                           for topic in r.responses for p in topic.partitions]})
        return int(r.session_id)


@scenario("data", "fetch sessions: full, incremental, forgotten, errors, closing (KIP-227)",
          rule="a full fetch (epoch 0) opens a session; an incremental one (its id, the next epoch) answers only "
               "partitions with records, an error or a new high watermark or log start offset, reading the "
               "session's partitions at their last asked offsets; forgotten partitions leave it and a session "
               "left empty is closed (a sessionless answer); the same epoch twice is INVALID_FETCH_SESSION_EPOCH, "
               "an unknown id FETCH_SESSION_ID_NOT_FOUND (both with session id 0); epoch 0 naming a session "
               "closes it and opens another, epoch -1 closes it")
async def fetch_sessions(t: Target) -> None:
    raw = await t.raw()
    topic = t.names.topic()
    await observe.create_topic(raw, topic, 3)
    await observe.produce(raw, topic, 0, [b"a", b"b"])
    await observe.produce(raw, topic, 1, [b"c"])
    s = Session(t, raw)
    sid = await s.fetch("full fetch of three partitions", _fetch(topic, [(0, 0), (1, 0), (2, 0)], 0, 0))
    await s.fetch("incremental, listing nothing: the same offsets again", _fetch(topic, [], sid, 1))
    await s.fetch("incremental, moving partitions 0 and 1 on: nothing new", _fetch(topic, [(0, 2), (1, 1)], sid, 2))
    await observe.produce(raw, topic, 2, [b"d"])
    await s.fetch("incremental after records on partition 2", _fetch(topic, [], sid, 3))
    await s.fetch("the same epoch again", _fetch(topic, [], sid, 3))
    await s.fetch("incremental: forget partition 2, add partition 5 (none)", _fetch(topic, [(5, 0)], sid, 4,
                                                                                  forgotten=[2]))
    await s.fetch("incremental: the error is answered again", _fetch(topic, [], sid, 5))
    await s.fetch("incremental forgetting every partition", _fetch(topic, [], sid, 6, forgotten=[0, 1, 5]))
    await s.fetch("the session is gone", _fetch(topic, [], sid, 7))
    await s.fetch("an id never opened", _fetch(topic, [], 12345, 1))

    sid = await s.fetch("full fetch, max_bytes 1", _fetch(topic, [(0, 0), (1, 0)], 0, 0, max_bytes=1))
    await s.fetch("incremental, max_bytes 1: partition 0 first", _fetch(topic, [], sid, 1, max_bytes=1))
    await s.fetch("incremental, max_bytes 1: then partition 1", _fetch(topic, [], sid, 2, max_bytes=1))
    new = await s.fetch("full fetch naming the session: closes it, opens another",
                        _fetch(topic, [(0, 0)], sid, 0))
    await s.fetch("the closed session", _fetch(topic, [], sid, 3))
    await s.fetch("epoch -1 closes the new one: a sessionless answer", _fetch(topic, [(1, 0)], new, -1))
    await s.fetch("the new one is closed", _fetch(topic, [], new, 1))

    topic_id = await observe.topic_id(raw, topic)
    by_id = await s.fetch("full fetch v13, by topic id", _fetch(topic_id, [(0, 0)], 0, 0, version=13))
    await s.fetch("v12 continuing a v13 session", _fetch(topic, [], by_id, 1))
    await s.fetch("an isolation level Kafka cannot read", _fetch(topic_id, [], by_id, 1, version=13,
                                                                 isolation_level=2))
    await s.fetch("the epoch moved on all the same", _fetch(topic_id, [], by_id, 2, version=13))
