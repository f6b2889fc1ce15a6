"""ListOffsets (api 2), v1–v8: earliest, latest, max timestamp, or by timestamp.

Version notes: v0 (several offsets per partition) is not served; v1 one offset and its
timestamp; v2 isolation level (read_committed: latest is the last stable offset, and an
offset found by timestamp at or past it is not answered); v4 current_leader_epoch in, leader_epoch out (always 0, like
Metadata); v6 flexible; v7 MAX_TIMESTAMP (-3); v8 EARLIEST_LOCAL (-4: no tiered storage,
so the log start).

Special timestamps: -2 earliest → log start offset; -1 latest → log end offset (the high
watermark); -4 earliest local → log start; -3 max timestamp → the base offset of the first
batch holding the largest timestamp in the log (Kafka answers the exact record inside that
batch; the batch base is at or before it) and that timestamp; (-1, -1) for an empty log.
Any other timestamp → `PartitionLog.offset_for_timestamp` (first batch whose max timestamp
is >= it, answered with its base offset), or offset -1 / timestamp -1 when none is.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.data_api import NOT_LEADER, DataContext, DataError, log
from kgroup.wire.kio_build import build, get, item
from kgroup.storage import PartitionLog, StorageError
from kgroup.storage.errors import NotOwnedError, TopicError
from kgroup.wire import RequestHeader, response_class

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4


def max_timestamp(plog: PartitionLog) -> int:
    """The largest batch max timestamp still in the log, -1 if none.

    Reads the per-segment maxima the log keeps in memory (PartitionLog has no public
    accessor for them yet)."""
    segments = getattr(plog, "_segments", ())
    return max((s.max_timestamp for s in segments if s.next_offset > plog.log_start_offset),
               default=-1)


def lookup(plog: PartitionLog, timestamp: int) -> tuple[int, int]:
    """(offset, timestamp) answered for `timestamp` (see the module docstring)."""
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return plog.log_start_offset, -1
    if timestamp == LATEST:
        return plog.log_end_offset, -1
    if timestamp == MAX_TIMESTAMP:
        top = max_timestamp(plog)
        if top < 0:
            return -1, -1
        found = plog.offset_for_timestamp(top)
        return found if found is not None else (-1, -1)
    found = plog.offset_for_timestamp(timestamp)
    return found if found is not None else (-1, -1)


def committed_lookup(ctx: DataContext, key: tuple[str, int], plog: PartitionLog,
                     timestamp: int) -> tuple[int, int]:
    """`lookup` for read_committed: nothing at or past the last stable offset."""
    stable = ctx.producers.of(key, plog).last_stable_offset(plog.log_end_offset)
    if timestamp == LATEST:
        return stable, -1
    offset, found = lookup(plog, timestamp)
    return (offset, found) if offset < stable else (-1, -1)


def list_offsets(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The ListOffsets response."""
    cls = response_class(2, header.api_version)
    read_committed = int(get(request, "isolation_level", 0)) == 1
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            index = int(p.partition_index)
            code = DataError.NONE
            offset = timestamp = -1
            try:
                plog = ctx.data.partition_log(topic.name, index)
                if not plog.owned:
                    raise NotOwnedError(f"{topic.name}-{index} was taken over by another node")
                if read_committed:
                    offset, timestamp = committed_lookup(ctx, (topic.name, index), plog, int(p.timestamp))
                else:
                    offset, timestamp = lookup(plog, int(p.timestamp))
            except TopicError:
                code = DataError.UNKNOWN_TOPIC_OR_PARTITION
            except NOT_LEADER:
                code = DataError.NOT_LEADER_OR_FOLLOWER
            except StorageError as exc:
                log.error("list offsets of %s-%d failed in storage: %s", topic.name, index, exc)
                code = DataError.KAFKA_STORAGE_ERROR
            parts.append(build(part_cls, partition_index=index, error_code=code,
                               timestamp=timestamp, offset=offset,
                               leader_epoch=0 if code == DataError.NONE else -1))
        topics.append(build(topic_cls, name=topic.name, partitions=tuple(parts)))
    return build(cls, throttle_time=0, topics=tuple(topics))
